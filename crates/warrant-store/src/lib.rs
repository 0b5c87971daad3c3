//! Where warrant keeps what it decided: records with revisions, effects, events, interactions
//! and replay records, in SQLite (the embedded default) or PostgreSQL. Only this crate knows SQL.
//!
//! The [`Store`] trait is the whole surface. Both backends keep the same tables and pass the
//! same conformance suite (`tests/it`); the order of a commit and its decisions are written
//! once, in `txn.rs`, and each backend only says how to perform the steps.

mod any;
mod commit;
mod error;
mod ladder;
mod ledger;
mod migrations;
mod outbox;
mod pg;
mod prompts;
mod registry;
mod rows;
mod sqlite;
mod storable;
mod txn;

pub use any::AnyStore;
pub use commit::{Answer, Commit, CommitOutcome, EFFECT_OUTCOMES, OutcomeReport, OutcomeResult, RecordWrite};
pub use error::StoreError;
pub use ladder::{AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, Ladder, PromotionRow};
pub use ledger::Ledger;
pub use outbox::{
    DueJob, Enqueued, Failure, FailureRecorded, JobState, Jobs, Lease, NewJob, Outbox, OutboxMessage, OutboxRow,
    OutboxState, RetryPolicy,
};
pub use pg::PgStore;
pub use prompts::PromptRegistry;
pub use registry::{Added, Registry, TenantEntry};
pub use rows::{
    EffectRow, EventRow, InteractionRow, InteractionState, PromptPromotionRow, PromptRow, Record, StoredTurn,
};
pub use sqlite::SqliteStore;

/// A connection to warrant's store: the ledger, the ladder, the prompt registry, the outbox
/// and the due jobs. One value is one connection: give each thread its own.
///
/// Every type that implements the five implements `Store`, so `S: Store`, `dyn Store` and
/// `Box<dyn Store>` reach every method. A caller holding a concrete store (a [`SqliteStore`])
/// brings the trait of the methods it calls into scope, or [`prelude`] for all of them.
///
/// Business outcomes (a duplicate turn, a stale revision, a closed interaction) are values of
/// [`CommitOutcome`] and [`OutcomeResult`], and wrote nothing; [`StoreError`] is for failures
/// of the store itself, and a failed write also wrote nothing.
pub trait Store: Ledger + Ladder + PromptRegistry + Outbox + Jobs + Send {}

impl<S: Ledger + Ladder + PromptRegistry + Outbox + Jobs + Send + ?Sized> Store for S {}

/// The store's traits, for a caller that holds a concrete store: `use warrant_store::prelude::*`.
pub mod prelude {
    pub use crate::{Jobs, Ladder, Ledger, Outbox, PromptRegistry, Store};
}
