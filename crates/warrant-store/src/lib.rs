//! Where warrant keeps what it decided: records with revisions, effects, events, interactions
//! and replay records, in SQLite (the embedded default) or PostgreSQL. Only this crate knows SQL.
//!
//! The [`Store`] trait is the whole surface. Both backends keep the same tables and pass the
//! same conformance suite (`tests/it`); the order of a commit and its decisions are written
//! once, in `txn.rs`, and each backend only says how to perform the steps.

mod any;
mod commit;
mod error;
mod guards;
mod migrations;
mod outbox;
mod pg;
mod registry;
mod rows;
mod sqlite;
mod storable;
mod txn;

pub use any::AnyStore;
pub use commit::{Answer, Commit, CommitOutcome, EFFECT_OUTCOMES, OutcomeReport, OutcomeResult, RecordWrite};
pub use error::StoreError;
pub use guards::{AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, PromotionRow};
pub use outbox::{
    DueJob, Enqueued, Failure, FailureRecorded, JobState, Lease, NewJob, OutboxMessage, OutboxRow, OutboxState,
    RetryPolicy,
};
pub use pg::PgStore;
pub use registry::{Added, Registry, TenantEntry};
pub use rows::{
    EffectRow, EventRow, InteractionRow, InteractionState, PromptPromotionRow, PromptRow, Record, StoredTurn,
};
pub use sqlite::SqliteStore;

/// A connection to warrant's store. One value is one connection: give each thread its own.
///
/// Business outcomes (a duplicate turn, a stale revision, a closed interaction) are values of
/// [`CommitOutcome`] and [`OutcomeResult`], and wrote nothing; [`StoreError`] is for failures
/// of the store itself, and a failed write also wrote nothing.
pub trait Store: Send {
    /// Creates or upgrades the schema. Idempotent, and safe to run from several processes at
    /// once: the steps not yet recorded in `schema_version` run in one transaction.
    fn migrate(&mut self) -> Result<(), StoreError>;

    /// Inserts rows of a records table at revision 1, in one transaction. Rows whose key
    /// already exists are left untouched, so seeding twice is a no-op. Returns how many rows
    /// were inserted.
    fn seed_records(&mut self, table: &str, rows: &[(String, serde_json::Value)]) -> Result<usize, StoreError>;

    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError>;

    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError>;

    fn interaction(&mut self, id: &str) -> Result<Option<InteractionRow>, StoreError>;

    fn effect(&mut self, id: &str) -> Result<Option<EffectRow>, StoreError>;

    /// Writes everything of one turn in one transaction, or nothing. A turn stored before
    /// comes back as [`CommitOutcome::Duplicate`], also when a concurrent commit of the same
    /// turn wins the race.
    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError>;

    /// Records an effect's outcome once, with its event and record writes, in one
    /// transaction. A second report, agreeing or not, writes nothing and answers the stored
    /// outcome.
    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError>;

    /// Stored turns in commit order with a sequence number above `after`, at most `limit`.
    fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, StoreError>;

    /// Events in commit order, of every conversation or of one.
    fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, StoreError>;

    /// The findings of `guard` (every version), in the order they were stored, each with its
    /// audit.
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError>;

    /// Stores sampled findings whose id is not stored yet, in one transaction; how many were
    /// new. Sampling the same reply twice is a no-op.
    fn add_samples(&mut self, samples: &[FindingRow]) -> Result<usize, StoreError>;

    /// Labels a finding, once.
    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError>;

    /// Stores an active promotion, demoting the active one of the same subject in the same
    /// transaction; answers its sequence number.
    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError>;

    /// The active promotion of `subject`, if any.
    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError>;

    /// Demotes the active promotion of `subject`; how many were demoted (0 or 1).
    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError>;
    /// Keeps a prompt version unless one of that task and version is kept already; whether it
    /// was new. A version is a content hash, so the kept text is the same text.
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError>;

    /// A kept prompt version.
    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError>;

    /// Records a promotion decision (accepted or refused) of a kept version; its sequence
    /// number.
    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError>;

    /// Every promotion decided for `task`, in decision order: the log of decisions. Which
    /// version is active is the ladder's promotion of subject `prompt:TASK` (`promotion`).
    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError>;

    // Delivery: the outbox and the scheduler's due jobs (`outbox.rs`). Times are milliseconds
    // since the Unix epoch, given by the caller.

    /// Stores a message for delivery, `queued` and due at `now`. A message whose idempotency
    /// key is stored already is not stored again: the answer names the stored one.
    fn enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError>;

    /// Takes up to `limit` deliverable messages (queued and due, or `sending` under an expired
    /// lease) in the order they were stored, counts an attempt on each and leases them to
    /// `lease.holder` until `lease.until`. Two takers never get the same message while its lease
    /// holds.
    fn take_outbox(&mut self, lease: &Lease, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;

    /// Records that the channel accepted these messages, in one transaction; how many this
    /// changed (a message recorded sent before, or unknown, is not counted). The channel's
    /// acceptance is the truth, so it is recorded whoever holds the lease.
    fn mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError>;

    /// Records a failed attempt by `holder`: queued again after the policy's backoff, or dead
    /// after its last attempt or at once for a permanent refusal.
    fn mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError>;

    /// Outbox messages in the order they were stored, of one state or all, at most `limit`.
    fn outbox(&mut self, state: Option<OutboxState>, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;

    /// Stores a due job, `pending`; whether it was new (a job id stored before is a no-op).
    fn schedule_job(&mut self, job: &NewJob) -> Result<bool, StoreError>;

    /// Takes up to `limit` jobs that are due (pending at or before `lease.now`, or taken under
    /// an expired lease), in due order, and leases them as [`Store::take_outbox`] does.
    fn take_due_jobs(&mut self, lease: &Lease, limit: usize) -> Result<Vec<DueJob>, StoreError>;

    /// Marks a job `holder` has taken as done with its result (the outbox message id); whether
    /// it was still held by `holder`.
    fn complete_job(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError>;

    /// A stored due job.
    fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, StoreError>;

    /// Stored turns newest first, with a sequence number below `before` (every turn when
    /// `None`), at most `limit`: the review page's recent turns, paged by the last `seq` seen.
    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError>;
}
