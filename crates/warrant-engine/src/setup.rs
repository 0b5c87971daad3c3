//! An engine's configuration over its store: migrated, its records seeded from the contract's
//! data files, its model given the store's active prompt versions and the contract's task
//! limits. Only [`EngineSetup`](crate::EngineSetup) calls these: every engine is made by the
//! builder.

use std::path::Path;
use std::sync::Arc;

use warrant_core::Contract;
use warrant_store::{RecordDifference, Store};

use crate::data;
use crate::model::{self, ModelSetup};
use crate::{Engine, EngineError};

impl<S: Store> Engine<S> {
    /// An engine for `contract` (loaded from `folder`) over `store`, migrated and seeded.
    pub(crate) fn new(contract: Arc<Contract>, folder: &Path, store: S) -> Result<Engine<S>, EngineError> {
        let mut engine = Engine::attached(contract, folder, store);
        engine.store.migrate()?;
        engine.seed()?;
        Ok(engine)
    }

    /// An engine over a store that another engine of the same contract has migrated and
    /// seeded (another connection to it): nothing is migrated, seeded or read.
    pub(crate) fn attached(contract: Arc<Contract>, folder: &Path, store: S) -> Engine<S> {
        Engine { contract, folder: folder.to_owned(), store, model: None, tasks: Vec::new() }
    }

    /// Runs the turn's semantic checks through `model`, with the prompt versions the store's
    /// registry has made active. Without a model, every check fails (`check_unfinished`), so
    /// every act that needs one is asked instead.
    pub(crate) fn with_model(mut self, mut model: ModelSetup) -> Result<Engine<S>, EngineError> {
        model::load_active_prompts(&mut self.store, &mut model)?;
        for (task, limits) in warrant_model::tasks::task_limits_from_contract(self.contract.model()) {
            model.task_limits.entry(task).or_insert(limits);
        }
        self.model = Some(model);
        Ok(self)
    }

    /// Inserts every row of the records tables' data files that the store lacks, row by row;
    /// rows already there are kept as they are (a row the file has otherwise is reported by
    /// [`Engine::data_differences`], and loaded by an import), so seeding again never undoes a
    /// committed change. A table whose mark ([`data::seed_marks`]) the store recorded when it
    /// last seeded it is skipped, and when every table is, no data file is read.
    pub fn seed(&mut self) -> Result<usize, EngineError> {
        let marks = data::seed_marks(&self.contract, &self.folder)?;
        let mut stale: Vec<(String, String)> = Vec::new();
        for (table, mark) in marks {
            if self.store.seeded_from(&table)?.as_deref() != Some(mark.as_str()) {
                stale.push((table, mark));
            }
        }
        if stale.is_empty() {
            return Ok(0);
        }
        let mut inserted = 0;
        for table in data::read_tables(&self.contract, &self.folder)? {
            let Some((_, mark)) = stale.iter().find(|(name, _)| *name == table.name) else { continue };
            if !table.rows.is_empty() {
                inserted += self.store.seed_records(&table.name, &table.rows)?;
            }
            self.store.mark_seeded(&table.name, mark)?;
        }
        Ok(inserted)
    }

    /// Every row of the data files that the store does not hold as the file has it, table by
    /// table (tables without one left out): a row changed or deleted by the system of record,
    /// or a file changed since it was seeded. Writes nothing.
    pub fn data_differences(&mut self) -> Result<Vec<(String, Vec<RecordDifference>)>, EngineError> {
        let mut found = Vec::new();
        for table in data::read_tables(&self.contract, &self.folder)? {
            let differing = self.store.differing_records(&table.name, &table.rows)?;
            if !differing.is_empty() {
                found.push((table.name, differing));
            }
        }
        Ok(found)
    }
}
