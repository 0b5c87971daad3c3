//! An engine's configuration over its store: migrated, its records seeded from the contract's
//! data files, its model given the store's active prompt versions and the contract's task
//! limits. Only [`EngineSetup`](crate::EngineSetup) calls these: every engine is made by the
//! builder.

use std::path::Path;

use serde_json::Value;

use warrant_core::Contract;
use warrant_core::records::{self, TableSource};
use warrant_store::Store;

use crate::model::{self, ModelSetup};
use crate::{Engine, EngineError};

impl<S: Store> Engine<S> {
    /// An engine for `contract` (loaded from `folder`) over `store`, migrated and seeded.
    pub(crate) fn new(contract: Contract, folder: &Path, store: S) -> Result<Engine<S>, EngineError> {
        let mut engine = Engine { contract, folder: folder.to_owned(), store, model: None };
        engine.store.migrate()?;
        engine.seed()?;
        Ok(engine)
    }

    /// Runs the turn's semantic checks through `model`, with the prompt versions the store's
    /// registry has made active. Without a model, every check fails (`check_unfinished`), so
    /// every act that needs one is asked instead.
    pub(crate) fn with_model(mut self, mut model: ModelSetup) -> Result<Engine<S>, EngineError> {
        model::load_active_prompts(&mut self.store, &mut model)?;
        for (task, limits) in warrant_model::budget::task_limits_from_contract(self.contract.model()) {
            model.task_limits.entry(task).or_insert(limits);
        }
        self.model = Some(model);
        Ok(self)
    }

    /// Loads every records table's data into the store; rows already there are kept as they
    /// are, so seeding again never undoes a committed change.
    pub fn seed(&mut self) -> Result<usize, EngineError> {
        let currency = self.contract.currency();
        let mut loaded: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        let mut inserted = 0;
        for table in self.contract.tables() {
            let rows = match &table.source {
                TableSource::File(file) => {
                    let path = self.folder.join(file);
                    let file_error = |message: String| EngineError::File { path: path.display().to_string(), message };
                    let text = std::fs::read_to_string(&path).map_err(|e| file_error(e.to_string()))?;
                    let data: Value = serde_json::from_str(&text).map_err(|e| file_error(e.to_string()))?;
                    records::rows_from_file(table, data, currency)?
                }
                TableSource::Nested { table: parent, path, parent_field } => {
                    let parent_rows =
                        loaded.iter().find(|(name, _)| name == parent).map(|(_, rows)| rows.as_slice()).unwrap_or(&[]);
                    records::rows_from_parent(table, parent_rows, path, parent_field, currency)?
                }
            };
            if let Some((first, _)) = rows.first()
                && self.store.record(&table.name, first)?.is_none()
            {
                inserted += self.store.seed_records(&table.name, &rows)?;
            }
            loaded.push((table.name.clone(), rows));
        }
        Ok(inserted)
    }
}
