//! One store type for both backends, so that whoever opens a store from a URL (the engine's
//! builder, and through it the command line and a server's engine pool) holds one kind of store
//! whichever backend the URL names.

use serde_json::Value;

use crate::{
    AuditResult, AuditRow, AuditedFinding, Commit, CommitOutcome, Demotion, DueJob, EffectRow, Enqueued, EventRow,
    Failure, FailureRecorded, FindingRow, InteractionRow, Lease, NewJob, OutboxMessage, OutboxRow, OutboxState,
    OutcomeReport, OutcomeResult, PgStore, PromotionRow, PromptPromotionRow, PromptRow, Record, RetryPolicy,
    SqliteStore, Store, StoreError, StoredTurn,
};

/// A SQLite or a PostgreSQL store. The PostgreSQL one is boxed: its statement cache makes it
/// much larger than a SQLite connection.
#[derive(Debug)]
pub enum AnyStore {
    Sqlite(SqliteStore),
    Postgres(Box<PgStore>),
}

macro_rules! both {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnyStore::Sqlite($s) => $e,
            AnyStore::Postgres($s) => $e,
        }
    };
}

impl Store for AnyStore {
    fn migrate(&mut self) -> Result<(), StoreError> {
        both!(self, s => s.migrate())
    }
    fn seed_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<usize, StoreError> {
        both!(self, s => s.seed_records(table, rows))
    }
    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError> {
        both!(self, s => s.record(table, key))
    }
    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        both!(self, s => s.turn(conversation, turn))
    }
    fn interaction(&mut self, id: &str) -> Result<Option<InteractionRow>, StoreError> {
        both!(self, s => s.interaction(id))
    }
    fn effect(&mut self, id: &str) -> Result<Option<EffectRow>, StoreError> {
        both!(self, s => s.effect(id))
    }
    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        both!(self, s => s.commit(commit))
    }
    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError> {
        both!(self, s => s.report_outcome(report))
    }
    fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        both!(self, s => s.turns(after, limit))
    }
    fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, StoreError> {
        both!(self, s => s.events(conversation))
    }
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError> {
        both!(self, s => s.findings(guard))
    }
    fn add_samples(&mut self, samples: &[FindingRow]) -> Result<usize, StoreError> {
        both!(self, s => s.add_samples(samples))
    }
    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError> {
        both!(self, s => s.audit(audit))
    }
    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        both!(self, s => s.promote(promotion))
    }
    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError> {
        both!(self, s => s.promotion(subject))
    }
    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        both!(self, s => s.demote(subject, demotion))
    }
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError> {
        both!(self, s => s.put_prompt(prompt))
    }
    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError> {
        both!(self, s => s.prompt(task, version))
    }
    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError> {
        both!(self, s => s.record_promotion(promotion))
    }
    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError> {
        both!(self, s => s.promotions(task))
    }
    fn enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError> {
        both!(self, s => s.enqueue(message, now))
    }
    fn take_outbox(&mut self, lease: &Lease, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        both!(self, s => s.take_outbox(lease, limit))
    }
    fn mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError> {
        both!(self, s => s.mark_sent(ids, now))
    }
    fn mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError> {
        both!(self, s => s.mark_failed(id, holder, failure, policy, now))
    }
    fn outbox(&mut self, state: Option<OutboxState>, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        both!(self, s => s.outbox(state, limit))
    }
    fn schedule_job(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        both!(self, s => s.schedule_job(job))
    }
    fn take_due_jobs(&mut self, lease: &Lease, limit: usize) -> Result<Vec<DueJob>, StoreError> {
        both!(self, s => s.take_due_jobs(lease, limit))
    }
    fn complete_job(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        both!(self, s => s.complete_job(id, holder, result))
    }
    fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, StoreError> {
        both!(self, s => s.due_job(id))
    }
    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        both!(self, s => s.recent_turns(before, limit))
    }
}
