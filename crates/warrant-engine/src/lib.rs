//! Runs a turn: the pure decisions of warrant-core, the facts of warrant-store and the
//! answers of warrant-model's checks, in the order `ARCHITECTURE.md` gives. The engine owns the IO
//! the core refuses: it reads the contract's files, seeds the records, serves stored facts to the
//! decision, and commits what it decided in one transaction.
//!
//! Every engine is made by [`EngineBuilder`] (from [`Engine::builder`]); a turn is
//! [`Engine::turn`]. The modules by job: `builder` (configuration: the contract, the store, the
//! model), `setup` (an engine over its store: migrated and seeded), `turn` (the turn loop),
//! `facts` (stored facts served to the core), `commit` (a decision as one commit), `record` (the
//! typed replay record), `replay`, `check` (a store checked whole, its turns replayed), `outcome` (effect outcomes), `writes` (the records written by the system of record), `guards` (the ladder), `outbound`
//! and `outbox` (the outbound gate and the outbox), `dispatch` (delivery), `model` (the checks
//! through warrant-model), `trace` (what a turn's model tasks took, for its trace).
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

mod builder;
mod check;
mod cleared;
mod commit;
pub mod data;
pub mod dispatch;
mod facts;
mod files;
mod guards;
mod model;
mod outbound;
pub mod outbox;
mod outcome;
mod record;
mod replay;
mod setup;
mod trace;
mod turn;
mod writes;

use warrant_core::records;
use warrant_core::{Contract, ContractError};
use warrant_store::{AnyStore, DueJob, EventRow, OutboxRow, OutboxState, Store, StoreError, StoredTurn};

pub use builder::{
    BuildError, ENV_CALLS, ENV_CASSETTE, ENV_DEADLINE_MS, ENV_TOKENS, EngineBuilder, EngineSetup, ModelPlan,
    ModelSource, StoreUrl,
};
pub use check::StoreCheck;
pub use cleared::{OutboundRecord, OutboundRun};
pub use files::{FolderFiles, load_contract};
pub use guards::{GuardError, GuardStatus, PromptStatus};
pub use model::{ModelSetup, active_prompt, prompt_subject};
pub use outbound::{OutboundResult, OutboxSender, Submitted, replay_outbound, run_due};
pub use outcome::{
    EffectOutcome, EffectView, MAX_RESULT, OutcomeFinding, OutcomeReply, OutcomeRow, RowRevision, outcome_rows,
};
pub use record::{REPLAY_VERSION, ReplayRecord};
pub use replay::{ReplayChange, ReplayFinding, ReplayReport};
pub use trace::TaskRun;
pub use turn::{Deciding, DeferredTurn, TurnResult};
pub use warrant_core::id::canonical;
pub use writes::RecordWritten;

/// What can stop the engine (as opposed to a verdict, which is a value).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The contract does not load.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// A file cannot be read.
    #[error("cannot read `{path}`: {message}")]
    File {
        /// The file.
        path: String,
        /// Why it cannot be read.
        message: String,
    },
    /// A data file does not fit its table.
    #[error("{0}")]
    Data(#[from] records::DataError),
    /// A data file does not fit its table, at this place in the file.
    #[error("{path}:{line}:{column}: {message}")]
    DataAt {
        /// The data file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
        /// What does not fit.
        message: String,
    },
    /// The store failed; nothing was committed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Commits kept conflicting; nothing was committed.
    #[error("the turn could not be committed after {0} attempts")]
    Contention(usize),
    /// A records write or read names a table the contract does not declare.
    #[error("the contract declares no records table `{0}`")]
    UnknownTable(String),
    /// A row given to a records write does not fit its table; it names the table, the key and,
    /// where one is at fault, the field. Nothing was written.
    #[error("{0}")]
    InvalidRow(Box<records::DataError>),
    /// A line of a records import cannot be read; nothing was written.
    #[error("table `{table}`, import line {line}: {message}")]
    InvalidImport {
        /// The records table.
        table: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A records write's precondition does not hold (`stale_revision`); nothing was written.
    #[error(transparent)]
    Conflict(warrant_store::RecordConflict),
    /// A long operation stopped before its end because its caller asked it to (a signal).
    #[error("stopped before the end, as asked")]
    Stopped,
    /// A stored value does not read back.
    #[error("stored {what} is corrupt: {message}")]
    Corrupt {
        /// What was stored (`replay record of turn `t1``, `effect `e``).
        what: String,
        /// What does not read: the field, the version.
        message: String,
    },
}

/// The engine over one store. Made only by [`Engine::builder`]. It hands out no store: every
/// write goes through a decision, and callers read through the few methods below.
pub struct Engine<S: Store> {
    /// Shared by every engine of one setup: loaded once, never copied per engine.
    contract: std::sync::Arc<Contract>,
    folder: std::path::PathBuf,
    store: S,
    model: Option<ModelSetup>,
    /// The model tasks of the last turn, for its trace ([`Engine::turn_tasks`]).
    tasks: Vec<TaskRun>,
}

impl<S: Store> std::fmt::Debug for Engine<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("contract", &self.contract.origin()).finish()
    }
}

impl Engine<AnyStore> {
    /// The one way engines are made: see [`EngineBuilder`].
    pub fn builder() -> EngineBuilder {
        EngineBuilder::new()
    }

    /// Closes the engine's store, saying what failed ([`AnyStore::close`]): on SQLite, the last
    /// store of the process on a file leaves the file whole, its log copied into it, so that
    /// the file alone holds every committed turn. Dropping the engine does the same and cannot
    /// say what failed. Whoever holds an engine to the end of a process (the Python `Gate`'s
    /// `close`, a server's pool) calls this, or drops it.
    pub fn close(self) -> Result<(), EngineError> {
        Ok(self.store.close()?)
    }
}

impl<S: Store> Engine<S> {
    /// The contract.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// The model tasks the last turn ran (its checks and the outbound gate's questions), each
    /// with when it began, how long it took and what it concluded: what a trace of the turn
    /// shows. Empty for a turn answered from the store or refused whole; replaced by each turn.
    pub fn turn_tasks(&self) -> &[TaskRun] {
        &self.tasks
    }

    /// Stored turns after sequence number `after`, oldest first, at most `limit`.
    pub fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, EngineError> {
        Ok(self.store.turns(after, limit)?)
    }

    /// The stored turn `turn` of `conversation`, if it was decided: a caller that makes a
    /// request again (the MCP gateway after a restart) takes its clock from the recorded one.
    pub fn stored_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, EngineError> {
        Ok(self.store.turn(conversation, turn)?)
    }

    /// Stored turns before sequence number `before` (or the newest), newest first, at most
    /// `limit`: the review page's list.
    pub fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, EngineError> {
        Ok(self.store.recent_turns(before, limit)?)
    }

    /// The committed events of `conversation` (of every conversation with `None`), in commit
    /// order.
    pub fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, EngineError> {
        Ok(self.store.events(conversation)?)
    }

    /// Outbox messages (in `state`, or all), in the order they were stored, at most `limit`.
    pub fn outbox(&mut self, state: Option<OutboxState>, limit: usize) -> Result<Vec<OutboxRow>, EngineError> {
        Ok(self.store.outbox(state, limit)?)
    }

    /// The due job `id`.
    pub fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, EngineError> {
        Ok(self.store.due_job(id)?)
    }

    /// Delivers one batch of the outbox's due messages through `dispatcher`.
    pub fn dispatch_once(
        &mut self,
        dispatcher: &dispatch::Dispatcher,
    ) -> Result<dispatch::Dispatched, dispatch::DispatchError> {
        dispatcher.dispatch_once(&mut self.store)
    }

    /// Delivers what is due now through `dispatcher`, round after round, each message at most
    /// once.
    pub fn drain(
        &mut self,
        dispatcher: &dispatch::Dispatcher,
    ) -> Result<dispatch::Dispatched, dispatch::DispatchError> {
        dispatcher.drain(&mut self.store)
    }

    /// Re-decides every stored turn from its recorded inputs and facts, and reports every
    /// verdict that changed.
    pub fn replay(&mut self) -> Result<ReplayReport, EngineError> {
        replay::replay(&self.contract, &mut self.store)
    }
}
