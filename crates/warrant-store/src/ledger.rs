//! The ledger: what every turn committed (records with revisions, effects and their outcomes,
//! events, interactions, the stored turn with its replay record), written by [`Ledger::commit`]
//! in one transaction and read back by key or in commit order. The steps of a commit are
//! written once, in `txn.rs`.
//!
//! Commit order is the order of sequence numbers. A commit that ended before another began
//! has the lower number; two that overlapped (PostgreSQL lets them) may have either, and a
//! commit that rolled back leaves a gap. A reader in order never sees a number while a lower
//! one may still commit, so paging by the last number seen misses nothing, and the order of
//! what was read never changes.

use serde_json::Value;

use crate::commit::{Commit, CommitOutcome, OutcomeReport, OutcomeResult};
use crate::error::StoreError;
use crate::rows::{EffectRow, EventRow, InteractionRow, Record, RowEventRow, SharedRecord, StoredTurn};

/// Facts a decision is foreseen to read, asked of the store beside a turn's lookup
/// ([`Ledger::turn_ahead`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadAhead<'a> {
    /// Rows, as table and key ([`Ledger::shared_record`]).
    pub rows: &'a [(&'a str, &'a str)],
    /// Rows whose pending effect is asked ([`Ledger::pending_effect`]), as table and key.
    pub pending: &'a [(&'a str, &'a str)],
}

/// A turn's lookup, and what the store read beside it of the facts a [`ReadAhead`] foresaw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnAhead {
    /// The stored turn, if it was decided before.
    pub turn: Option<StoredTurn>,
    /// Each foreseen row's answer, in the order asked: `None` where it was not read. Shorter
    /// than what was asked when the rest was not read.
    pub rows: Vec<Option<Option<SharedRecord>>>,
    /// Each foreseen row's pending effect, as [`TurnAhead::rows`] answers rows.
    pub pending: Vec<Option<Option<String>>>,
}

/// The ledger of a store: the schema, the records, and every turn's commit.
pub trait Ledger: Send {
    /// Creates or upgrades the schema (of every concern, not only the ledger's). Idempotent,
    /// and safe to run from several processes at once: the steps not yet recorded in
    /// `schema_version` run in one transaction.
    fn migrate(&mut self) -> Result<(), StoreError>;

    /// Inserts rows of a records table at revision 1, in one transaction. Rows whose key
    /// already exists are left untouched, row by row, so seeding twice is a no-op and a data
    /// file seeded again adds only its rows the store lacks; a row the system of record
    /// deleted ([`Records::delete_record`](crate::Records::delete_record)) is not brought back.
    /// Returns how many rows were inserted.
    fn seed_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<usize, StoreError>;

    /// The mark [`Ledger::mark_seeded`] last recorded for `table`: what its rows were seeded
    /// from. `None` for a table never marked.
    fn seeded_from(&mut self, table: &str) -> Result<Option<String>, StoreError>;

    /// Records that every row of the source `mark` names is in `table` (seeded, or deleted
    /// since by the system of record), replacing the table's previous mark. A caller marks a
    /// table after [`Ledger::seed_records`] committed, so a mark never names rows not there.
    fn mark_seeded(&mut self, table: &str, mark: &str) -> Result<(), StoreError>;

    /// The record `key` of `table`, with its revision; `None` when there is none, or it was
    /// deleted.
    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError>;

    /// The record as [`Ledger::record`] answers it, its value shared: a backend that keeps the
    /// rows it read answers a row whose stored text has not changed with the value it keeps,
    /// rather than reading the JSON again. By default, `record`'s answer.
    fn shared_record(&mut self, table: &str, key: &str) -> Result<Option<SharedRecord>, StoreError> {
        Ok(self.record(table, key)?.map(SharedRecord::from))
    }

    /// Starts a span of reads that see the store as one snapshot, until [`Ledger::end_reads`]:
    /// a decision's facts are read from one state of the store, and a backend whose readers pay
    /// for every change they see (SQLite's page cache, dropped when another connection wrote)
    /// pays once for the span. A span already open is ended first. Nothing may be written
    /// through this store inside the span. By default, nothing.
    fn begin_reads(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Ends the span [`Ledger::begin_reads`] started, if one is open. By default, nothing.
    fn end_reads(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The stored turn `turn` of `conversation`.
    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError>;

    /// The stored turn `turn` of `conversation`, as [`Ledger::turn`] answers it, with those of
    /// the facts `ahead` foresees that the backend reads as cheaply beside it: one that pays a
    /// round trip for every read sends them together. A foreseen fact that was not read, or
    /// failed to be, is left unanswered (whoever needs it reads it); only the turn's lookup
    /// failing is an error. Inside a span of reads ([`Ledger::begin_reads`]) all of it is read
    /// in the span. By default, the lookup alone.
    fn turn_ahead(&mut self, conversation: &str, turn: &str, ahead: ReadAhead<'_>) -> Result<TurnAhead, StoreError> {
        let _ = ahead;
        Ok(TurnAhead { turn: self.turn(conversation, turn)?, rows: Vec::new(), pending: Vec::new() })
    }

    /// A stored interaction, open or answered.
    fn interaction(&mut self, id: &str) -> Result<Option<InteractionRow>, StoreError>;

    /// A stored effect, with its outcome once reported.
    fn effect(&mut self, id: &str) -> Result<Option<EffectRow>, StoreError>;

    /// Writes everything of one turn in one transaction, or nothing. A turn stored before
    /// comes back as [`CommitOutcome::Duplicate`], also when a concurrent commit of the same
    /// turn wins the race.
    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError>;

    /// Records an effect's outcome once, with its event, its record writes and the rows it
    /// reports (each at the next revision), in one transaction. A second report, agreeing or
    /// not, writes nothing and answers the stored outcome; only a stored `unknown` is followed
    /// by a `done` or `failed`, once.
    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError>;

    /// The effect that holds the row `key` of `table`: of the effects a commit's
    /// [`holds`](crate::Commit::holds) named it for, the first by id whose outcome is none yet or
    /// `unknown`. `None` when no effect holds it.
    fn pending_effect(&mut self, table: &str, key: &str) -> Result<Option<String>, StoreError>;

    /// The effects the turn `turn` of `conversation` committed, with their outcomes, by id.
    fn turn_effects(&mut self, conversation: &str, turn: &str) -> Result<Vec<EffectRow>, StoreError>;

    /// Stored turns in commit order with a sequence number above `after`, at most `limit`.
    /// Paging with the last number seen as the next `after` misses no turn, also while others
    /// commit: a turn whose commit is still open at a lower number is waited for.
    fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, StoreError>;

    /// Stored turns newest first, with a sequence number below `before` (every turn when
    /// `None`), at most `limit`: the review page's recent turns, paged by the last `seq` seen.
    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError>;

    /// Events in commit order, of every conversation or of one.
    fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, StoreError>;

    /// The committed events of the row `key` of `table`, of every conversation, in commit
    /// order: the event of each effect whose changes name the row or that holds it, with the
    /// instant of the turn that committed it and the effect's outcome once reported.
    fn row_events(&mut self, table: &str, key: &str) -> Result<Vec<RowEventRow>, StoreError>;
}
