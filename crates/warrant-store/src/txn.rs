//! The order of a commit and its decisions, written once for both backends. A backend only
//! says how to perform each step inside its own transaction; what the steps are, in which
//! order, and which result rolls everything back is decided here, so SQLite and PostgreSQL
//! cannot drift apart.

use serde_json::Value;

use crate::commit::ABSENT;
use crate::commit::{Answer, Commit, CommitOutcome, EffectHold, OutcomeReport, OutcomeResult, RecordRead, RecordWrite};
use crate::error::StoreError;
use crate::ladder::LadderTxn;
use crate::records::{Current, FIRST_REVISION, Precondition, RecordsTxn, next_revision};
use crate::rows::{EffectRow, EventRow, InteractionRow, InteractionState, StoredTurn, TurnRow};

/// Whether a new effect went in, or its idempotency key was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EffectInsert {
    Inserted,
    KeyTaken,
}

/// What the backend does with the transaction once the steps are done.
#[derive(Debug)]
pub(crate) enum Settled<T> {
    /// Commit it, and answer `T`.
    Keep(T),
    /// Roll it back, and answer `T`.
    Discard(T),
}

/// The steps of a commit, as one backend performs them inside one open transaction.
pub(crate) trait Txn: LadderTxn {
    /// The stored turn (conversation, turn), if any. A backend that lets commits run
    /// concurrently first waits here for any commit of the same turn in flight, so that the
    /// duplicate is found before its record writes could be mistaken for stale ones.
    fn claim_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError>;

    /// Inserts a record at `revision` unless one with its key exists (deleted or not); whether
    /// it did.
    fn insert_record_if_absent(
        &mut self,
        table: &str,
        key: &str,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError>;

    /// Applies the write, leaving the record at `revision`, if the record is stored (not
    /// deleted) at the expected revision; whether it did.
    fn update_record(&mut self, write: &RecordWrite, revision: i64) -> Result<bool, StoreError>;

    /// The revision of a stored record, `None` when there is none (or it was deleted), locked
    /// against writers until the transaction ends (a shared lock: other readers go on).
    fn lock_read(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError>;

    /// The revision of a stored record, `None` when there is none (or it was deleted).
    fn record_revision(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError>;

    /// Inserts a new effect, without an outcome.
    fn insert_effect(&mut self, effect: &EffectRow) -> Result<EffectInsert, StoreError>;

    /// Inserts a row an effect of the same transaction holds.
    fn insert_hold(&mut self, hold: &EffectHold) -> Result<(), StoreError>;

    /// Inserts a new interaction, open.
    fn insert_interaction(&mut self, interaction: &InteractionRow) -> Result<(), StoreError>;

    /// Answers the interaction if it is open; whether it did.
    fn answer(&mut self, answer: &Answer, turn: &str) -> Result<bool, StoreError>;

    /// Inserts the turn and answers its sequence number, or `None` when (conversation, turn)
    /// is taken. Commits may take numbers side by side, so a backend that lets them do so keeps
    /// its readers in order from reading past a number still open (`pg.rs`).
    fn insert_turn(&mut self, turn: &TurnRow) -> Result<Option<i64>, StoreError>;

    /// Inserts the event and answers its sequence number.
    fn insert_event(&mut self, event: &EventRow) -> Result<i64, StoreError>;

    /// Locks the effect against concurrent reports and answers its outcome: `None` when there
    /// is no such effect, `Some(None)` when none is recorded yet.
    fn lock_effect_outcome(&mut self, effect: &str) -> Result<Option<Option<String>>, StoreError>;

    /// Stores the effect's outcome, with what its report keeps.
    fn set_outcome(&mut self, effect: &str, outcome: &str, report: Option<&Value>) -> Result<(), StoreError>;
}

/// The steps of seeding: each row goes in unless its key is there, also as a deleted row, so
/// that seeding never brings back a row the system of record deleted.
pub(crate) fn seed(tx: &mut impl Txn, table: &str, rows: &[(String, Value)]) -> Result<usize, StoreError> {
    let mut inserted = 0;
    for (key, value) in rows {
        if tx.insert_record_if_absent(table, key, FIRST_REVISION, value)? {
            inserted += 1;
        }
    }
    Ok(inserted)
}

/// A stale write, as the outcome types report it.
struct Stale {
    table: String,
    key: String,
    expected: i64,
    actual: Option<i64>,
}

/// One row a commit checks: read at a revision, or written.
enum Step<'c> {
    Read(&'c RecordRead),
    Write(&'c RecordWrite),
}

impl Step<'_> {
    fn row(&self) -> (&str, &str) {
        match self {
            Step::Read(read) => (&read.table, &read.key),
            Step::Write(write) => (&write.table, &write.key),
        }
    }
}

/// Checks the reads and applies the writes, all in (table, key) order, so that two
/// transactions that lock the same records lock them in the same order and cannot deadlock.
/// Stops at the first stale one. A row both read and written is checked by its write alone,
/// which locks it for writing at once rather than upgrading a shared lock.
///
/// A read expecting [`ABSENT`] finds no row (or a deleted one); any other read finds the row
/// at the revision read. A write expecting [`ABSENT`] creates its row, which must not exist (a
/// deleted row may be created again, at the revision after its tombstone's); a write of `null`
/// deletes its row at the revision expected; any other write replaces the row at the revision
/// expected.
fn apply_writes(
    tx: &mut impl RecordsTxn,
    reads: &[RecordRead],
    writes: &[RecordWrite],
) -> Result<Option<Stale>, StoreError> {
    let written: std::collections::BTreeSet<(&str, &str)> =
        writes.iter().map(|w| (w.table.as_str(), w.key.as_str())).collect();
    let mut ordered: Vec<Step<'_>> = writes.iter().map(Step::Write).collect();
    ordered.extend(reads.iter().filter(|r| !written.contains(&(r.table.as_str(), r.key.as_str()))).map(Step::Read));
    ordered.sort_by(|a, b| a.row().cmp(&b.row()));
    for step in ordered {
        let (fresh, expected) = match step {
            Step::Read(read) => {
                let at = tx.lock_read(&read.table, &read.key)?;
                (at == Some(read.revision) || (at.is_none() && read.revision == ABSENT), read.revision)
            }
            Step::Write(write) => (apply_write(tx, write)?, write.expected_revision),
        };
        if !fresh {
            let (table, key) = step.row();
            let actual = tx.record_revision(table, key)?;
            return Ok(Some(Stale { table: table.to_owned(), key: key.to_owned(), expected, actual }));
        }
    }
    Ok(None)
}

/// Applies one write if its row is as the decision read it; whether it did.
fn apply_write(tx: &mut impl RecordsTxn, write: &RecordWrite) -> Result<bool, StoreError> {
    let (table, key) = (write.table.as_str(), write.key.as_str());
    Ok(if write.expected_revision == ABSENT {
        crate::records::write(tx, table, key, &write.value, Precondition::IfNoneMatch)?.is_ok()
    } else if write.value.is_null() {
        match (tx.lock_record(table, key)?, next_revision(write.expected_revision)) {
            (Current::Live(at), Some(next)) if at == write.expected_revision => {
                tx.delete_record(table, key, at, next)?
            }
            _ => false,
        }
    } else {
        // No row is ever at the last revision there is, so a write expecting it is stale.
        match next_revision(write.expected_revision) {
            Some(revision) => tx.update_record(write, revision)?,
            None => false,
        }
    })
}

/// The steps of a commit. `None` means the turn's unique constraint fired: a concurrent commit
/// of the same turn won the race, and the caller reads the stored turn after the rollback and
/// answers it as a duplicate.
pub(crate) fn commit(tx: &mut impl RecordsTxn, commit: &Commit) -> Result<Settled<Option<CommitOutcome>>, StoreError> {
    use Settled::{Discard, Keep};
    let turn = &commit.turn;
    if let Some(stored) = tx.claim_turn(&turn.conversation, &turn.turn)? {
        return Ok(Discard(Some(CommitOutcome::Duplicate(stored))));
    }
    if let Some(Stale { table, key, expected, actual }) = apply_writes(tx, &commit.reads, &commit.writes)? {
        let stale = CommitOutcome::StaleRevision { table, key, expected, actual };
        return Ok(Discard(Some(stale)));
    }
    // Sorted for the same reason as the writes: unique keys are locked as they go in.
    let mut effects: Vec<&EffectRow> = commit.effects.iter().collect();
    effects.sort_by(|a, b| a.idempotency_key.cmp(&b.idempotency_key));
    for effect in effects {
        if tx.insert_effect(effect)? == EffectInsert::KeyTaken {
            let key = effect.idempotency_key.clone();
            return Ok(Discard(Some(CommitOutcome::DuplicateEffect { idempotency_key: key })));
        }
    }
    let mut holds: Vec<&EffectHold> = commit.holds.iter().collect();
    holds.sort_by(|a, b| (&a.table, &a.key, &a.effect).cmp(&(&b.table, &b.key, &b.effect)));
    holds.dedup();
    for hold in holds {
        tx.insert_hold(hold)?;
    }
    let mut opened: Vec<&InteractionRow> = commit.opened.iter().collect();
    opened.sort_by(|a, b| a.id.cmp(&b.id));
    for interaction in opened {
        tx.insert_interaction(interaction)?;
    }
    let mut answered: Vec<&Answer> = commit.answered.iter().collect();
    answered.sort_by(|a, b| a.interaction.cmp(&b.interaction));
    for answer in answered {
        if !tx.answer(answer, &turn.turn)? {
            let id = answer.interaction.clone();
            return Ok(Discard(Some(CommitOutcome::InteractionClosed { id })));
        }
    }
    // Sequence numbers last: a commit holds its number open for as short a time as it can.
    let Some(seq) = tx.insert_turn(turn)? else {
        return Ok(Discard(None));
    };
    for event in &commit.events {
        tx.insert_event(event)?;
    }
    for finding in &commit.findings {
        if !tx.insert_finding(finding)? {
            return Err(StoreError::IdTaken { kind: "finding", id: finding.id.clone() });
        }
    }
    Ok(Keep(Some(CommitOutcome::Committed { seq })))
}

/// The steps of an outcome report. The effect is locked first, so of two concurrent reports
/// the second finds the first one's outcome and writes nothing. A stored `unknown` is not
/// final: a `done` or `failed` after it is recorded over it.
pub(crate) fn report_outcome(
    tx: &mut impl RecordsTxn,
    report: &OutcomeReport,
) -> Result<Settled<OutcomeResult>, StoreError> {
    match tx.lock_effect_outcome(&report.effect)? {
        None => return Ok(Settled::Discard(OutcomeResult::UnknownEffect)),
        Some(Some(outcome)) if outcome != "unknown" || report.outcome == "unknown" => {
            return Ok(Settled::Discard(OutcomeResult::AlreadyRecorded { outcome }));
        }
        Some(_) => {}
    }
    tx.set_outcome(&report.effect, &report.outcome, report.report.as_ref())?;
    if let Some(Stale { table, key, expected, actual }) = apply_writes(tx, &[], &report.writes)? {
        return Ok(Settled::Discard(OutcomeResult::StaleRevision { table, key, expected, actual }));
    }
    // The reported rows in (table, key) order, as every write locks them.
    let mut rows: Vec<_> = report.rows.iter().collect();
    rows.sort_by(|a, b| (&a.table, &a.key).cmp(&(&b.table, &b.key)));
    for row in rows {
        crate::records::write(tx, &row.table, &row.key, &row.value, Precondition::Any)?.map_err(|conflict| {
            StoreError::Corrupt { what: format!("an unconditional write was refused: {conflict}") }
        })?;
    }
    tx.insert_event(&report.event)?;
    Ok(Settled::Keep(OutcomeResult::Recorded))
}

/// The interaction state stored as a state name and the answer's two columns.
pub(crate) fn interaction_state(
    id: &str,
    state: &str,
    option: Option<String>,
    turn: Option<String>,
) -> Result<InteractionState, StoreError> {
    match (state, option, turn) {
        ("open", None, None) => Ok(InteractionState::Open),
        ("answered", Some(option), Some(turn)) => Ok(InteractionState::Answered { option, turn }),
        (state, ..) => Err(StoreError::Corrupt {
            what: format!("interaction `{id}` has state `{state}` with an answer that does not fit it"),
        }),
    }
}

/// The options of an interaction, stored as a JSON array of strings.
pub(crate) fn interaction_options(id: &str, options: Value) -> Result<Vec<String>, StoreError> {
    serde_json::from_value(options).map_err(|e| StoreError::Corrupt {
        what: format!("the options of interaction `{id}` are not a list of strings: {e}"),
    })
}

/// The options of an interaction as the JSON array both backends store.
pub(crate) fn options_json(options: &[String]) -> Value {
    Value::Array(options.iter().cloned().map(Value::String).collect())
}

/// The turn's unique constraint fired, yet the turn is not there: turns are never deleted, so
/// the database is not what this crate wrote.
pub(crate) fn vanished(conversation: &str, turn: &str) -> StoreError {
    StoreError::Corrupt {
        what: format!("turn `{conversation}`/`{turn}` was stored by a concurrent commit but cannot be read"),
    }
}
