//! Where warrant keeps what it decided: records with revisions, effects, events, interactions
//! and replay records, in SQLite (the embedded default) or PostgreSQL. Only this crate knows SQL.
//!
//! The surface is six traits, one per concern: the [`Ledger`] (commits, turns, records,
//! events, interactions, replay records), [`Records`] (writes from the system of record:
//! puts, deletes and imports under revisions), the [`LadderStore`] (findings, audits, promotions),
//! the [`PromptRegistry`], the [`Outbox`] and the [`Jobs`], and [`Maintenance`] (the store as a
//! whole, for its operator: schema, integrity, effects, export); [`Store`] is all seven. Both backends
//! keep the same tables and pass the same conformance suite (`tests/it`). The rules are
//! written once, over the primitive statements each backend supplies: the order of a commit
//! and its decisions in `txn.rs`, the system of record's writes in `records.rs`, the ladder's
//! in `ladder.rs`, delivery's in `outbox.rs`; the SQL of each concern is in `sqlite/*.rs` and
//! `pg/*.rs`. [`AnyStore`] and `Box<S>` forward every method to the store they hold, in one
//! macro (`any.rs`).

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

mod any;
mod commit;
mod error;
mod ladder;
mod ledger;
mod location;
mod maintenance;
mod migrations;
mod outbox;
mod pg;
mod prompts;
mod records;
mod registry;
mod row_cache;
mod rows;
mod settled;
mod sqlite;
mod storable;
mod txn;

pub use any::AnyStore;
pub use commit::{
    ABSENT, Answer, Commit, CommitOutcome, EFFECT_OUTCOMES, EffectHold, OutcomeReport, OutcomeResult, RecordRead,
    RecordWrite, ReportedRow,
};
pub use error::StoreError;
pub use ladder::{AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, LadderStore, PromotionRow};
pub use ledger::{Ledger, ReadAhead, TurnAhead};
pub use location::{Location, LocationError, shown as shown_location};
pub use maintenance::{
    EXPORT_KINDS, EffectCensus, ExportCounts, ExportError, ExportLine, ExportSink, Integrity, Maintenance,
    PendingEffect, SchemaState,
};
pub use outbox::{
    DueJob, Enqueued, Failure, FailureRecorded, JobState, Jobs, Lease, NewJob, Outbox, OutboxMessage, OutboxRow,
    OutboxState, RetryPolicy,
};
pub use pg::PgStore;
pub use prompts::PromptRegistry;
pub use records::{Imported, KeyRevision, Precondition, RecordConflict, RecordDifference, RecordError, Records};
pub use registry::{Added, Registry, TenantEntry};
pub use rows::{
    EffectRow, EventRow, InteractionRow, InteractionState, JsonText, PromptPromotionRow, PromptRow, Record,
    RowEventRow, SharedRecord, StoredTurn, TurnRow,
};
pub use sqlite::{BackupReport, SqliteStore};

/// A connection to warrant's store: the ledger, the records' writes, the ladder, the prompt
/// registry, the outbox, the due jobs and its maintenance. One value is one connection: give each thread its own.
///
/// Every type that implements the seven implements `Store`, so `S: Store`, `dyn Store` and
/// `Box<dyn Store>` reach every method. A caller holding a concrete store (a [`SqliteStore`])
/// brings the trait of the methods it calls into scope, or [`prelude`] for all of them.
///
/// Business outcomes (a duplicate turn, a stale revision, a closed interaction) are values of
/// [`CommitOutcome`] and [`OutcomeResult`], and wrote nothing; a write from the system of
/// record refused by its precondition is a [`RecordConflict`]; [`StoreError`] is for failures
/// of the store itself and input it cannot keep, and a failed write also wrote nothing.
pub trait Store: Ledger + Records + LadderStore + PromptRegistry + Outbox + Jobs + Maintenance + Send {}

impl<S: Ledger + Records + LadderStore + PromptRegistry + Outbox + Jobs + Maintenance + Send + ?Sized> Store for S {}

/// The store's traits, for a caller that holds a concrete store: `use warrant_store::prelude::*`.
pub mod prelude {
    pub use crate::{Jobs, LadderStore, Ledger, Maintenance, Outbox, PromptRegistry, Records, Store};
}
