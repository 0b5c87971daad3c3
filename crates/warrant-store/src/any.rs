//! One store type for both backends, so that whoever opens a store from a URL (the engine's
//! builder, and through it the command line and a server's engine pool) holds one kind of store
//! whichever backend the URL names; and the one forwarding of every trait method, to either
//! backend of an [`AnyStore`] and through a `Box`.

use serde_json::Value;

use crate::{
    AuditResult, AuditRow, AuditedFinding, BackupReport, Commit, CommitOutcome, Demotion, DueJob, EffectCensus,
    EffectRow, Enqueued, EventRow, ExportCounts, ExportError, ExportSink, Failure, FailureRecorded, FindingRow,
    Imported, Integrity, InteractionRow, Jobs, LadderStore, Lease, Ledger, Maintenance, NewJob, Outbox, OutboxMessage,
    OutboxRow, OutboxState, OutcomeReport, OutcomeResult, PgStore, Precondition, PromotionRow, PromptPromotionRow,
    PromptRegistry, PromptRow, ReadAhead, Record, RecordDifference, RecordError, Records, RetryPolicy, RowEventRow,
    SchemaState, SharedRecord, SqliteStore, StoreError, StoredTurn, TurnAhead,
};

/// A SQLite or a PostgreSQL store. The PostgreSQL one is boxed: its statement cache makes it
/// much larger than a SQLite connection.
#[derive(Debug)]
pub enum AnyStore {
    /// The embedded store.
    Sqlite(SqliteStore),
    /// The store for more than one process or machine.
    Postgres(Box<PgStore>),
}

impl AnyStore {
    /// Copies the store into a new file at `to` while it goes on committing
    /// ([`SqliteStore::backup_to`]). A PostgreSQL store is refused: the server's own `pg_dump`
    /// copies a schema consistently while it is written to, and `warrant store check` checks
    /// what it restores.
    pub fn backup_to(&self, to: &std::path::Path) -> Result<BackupReport, StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.backup_to(to),
            AnyStore::Postgres(store) => Err(StoreError::BackupByPgDump { schema: store.named_schema().to_owned() }),
        }
    }

    /// Closes the store, saying what failed ([`SqliteStore::close`], [`PgStore::close`]);
    /// dropping it does the same and cannot say.
    pub fn close(self) -> Result<(), StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.close(),
            AnyStore::Postgres(store) => store.close(),
        }
    }
}

/// Implements a store trait for [`AnyStore`] (each method on the backend it holds) and for
/// `Box<S>` (each method on the boxed store), from the trait's method signatures: the one place
/// where a method is forwarded.
macro_rules! forward {
    ($trait:ident { $(fn $name:ident(&mut self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty;)* }) => {
        impl $trait for AnyStore {
            $(
                fn $name(&mut self $(, $arg: $ty)*) -> $ret {
                    match self {
                        AnyStore::Sqlite(store) => store.$name($($arg),*),
                        AnyStore::Postgres(store) => store.$name($($arg),*),
                    }
                }
            )*
        }

        impl<S: $trait + ?Sized> $trait for Box<S> {
            $(
                fn $name(&mut self $(, $arg: $ty)*) -> $ret {
                    (**self).$name($($arg),*)
                }
            )*
        }
    };
}

forward!(Ledger {
    fn migrate(&mut self) -> Result<(), StoreError>;
    fn seed_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<usize, StoreError>;
    fn seeded_from(&mut self, table: &str) -> Result<Option<String>, StoreError>;
    fn mark_seeded(&mut self, table: &str, mark: &str) -> Result<(), StoreError>;
    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError>;
    fn shared_record(&mut self, table: &str, key: &str) -> Result<Option<SharedRecord>, StoreError>;
    fn begin_reads(&mut self) -> Result<(), StoreError>;
    fn end_reads(&mut self) -> Result<(), StoreError>;
    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError>;
    fn turn_ahead(&mut self, conversation: &str, turn: &str, ahead: ReadAhead<'_>) -> Result<TurnAhead, StoreError>;
    fn interaction(&mut self, id: &str) -> Result<Option<InteractionRow>, StoreError>;
    fn effect(&mut self, id: &str) -> Result<Option<EffectRow>, StoreError>;
    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError>;
    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError>;
    fn pending_effect(&mut self, table: &str, key: &str) -> Result<Option<String>, StoreError>;
    fn turn_effects(&mut self, conversation: &str, turn: &str) -> Result<Vec<EffectRow>, StoreError>;
    fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, StoreError>;
    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError>;
    fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, StoreError>;
    fn row_events(&mut self, table: &str, key: &str) -> Result<Vec<RowEventRow>, StoreError>;
});

forward!(Records {
    fn put_record(
        &mut self,
        table: &str,
        key: &str,
        value: &Value,
        precondition: Precondition,
    ) -> Result<i64, RecordError>;
    fn delete_record(&mut self, table: &str, key: &str, revision: i64) -> Result<(), RecordError>;
    fn import_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<Imported, StoreError>;
    fn table_records(&mut self, table: &str) -> Result<Vec<Record>, StoreError>;
    fn differing_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<Vec<RecordDifference>, StoreError>;
});

forward!(LadderStore {
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError>;
    fn add_samples(&mut self, samples: &[FindingRow]) -> Result<usize, StoreError>;
    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError>;
    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError>;
    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError>;
    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError>;
});

forward!(PromptRegistry {
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError>;
    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError>;
    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError>;
    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError>;
});

forward!(Outbox {
    fn enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError>;
    fn take_outbox(&mut self, lease: &Lease, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;
    fn mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError>;
    fn mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError>;
    fn outbox(&mut self, state: Option<OutboxState>, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;
});

forward!(Maintenance {
    fn schema(&mut self) -> Result<SchemaState, StoreError>;
    fn integrity(&mut self) -> Result<Integrity, StoreError>;
    fn effect_census(&mut self) -> Result<EffectCensus, StoreError>;
    fn export(&mut self, sink: &mut ExportSink<'_>) -> Result<ExportCounts, ExportError>;
});

forward!(Jobs {
    fn schedule_job(&mut self, job: &NewJob) -> Result<bool, StoreError>;
    fn take_due_jobs(&mut self, lease: &Lease, limit: usize) -> Result<Vec<DueJob>, StoreError>;
    fn complete_job(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError>;
    fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, StoreError>;
});
