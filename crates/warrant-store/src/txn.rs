//! The order of a commit and its decisions, written once for both backends. A backend only
//! says how to perform each step inside its own transaction; what the steps are, in which
//! order, and which result rolls everything back is decided here, so SQLite and PostgreSQL
//! cannot drift apart.

use serde_json::Value;

use crate::commit::ABSENT;
use crate::commit::{Answer, Commit, CommitOutcome, EffectHold, OutcomeReport, OutcomeResult, RecordRead, RecordWrite};
use crate::error::StoreError;
use crate::ladder::{FindingRow, LadderTxn};
use crate::records::{Current, FIRST_REVISION, Precondition, RecordsTxn, next_revision};
use crate::rows::{EffectRow, EventRow, InteractionRow, InteractionState, StoredTurn, TurnRow};
use crate::settled::Settled;

/// Whether a new effect went in, or its idempotency key was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EffectInsert {
    Inserted,
    KeyTaken,
}

/// The steps of a commit, as one backend performs them inside one open transaction.
pub(crate) trait Txn: RecordsTxn + LadderTxn {
    /// The stored turn (conversation, turn), if any. A backend that lets commits run
    /// concurrently first waits here for any commit of the same turn in flight, so that the
    /// duplicate is found before its record writes could be mistaken for stale ones.
    fn claim_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError>;

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

    /// Performs `actions` in order from the first, and answers what each found: the first
    /// alone, or more where the backend sends several statements before it reads an answer.
    /// The answers end at the first error; none is empty.
    fn perform(&mut self, actions: &[Action<'_>]) -> Vec<Result<Found, StoreError>>
    where
        Self: Sized,
    {
        actions.first().map(|action| perform_one(self, action)).into_iter().collect()
    }
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

/// One step of a commit, whose result decides whether the commit goes on. [`plan`] puts them
/// in the order every backend runs them.
pub(crate) enum Action<'c> {
    /// Waits for any commit of the same turn in flight, then looks the turn up.
    Claim(&'c TurnRow),
    /// Locks a row the decision read, and reads its revision.
    Read(&'c RecordRead),
    /// A write that replaces a live row at its expected revision, leaving it at `revision`.
    Replace(&'c RecordWrite, i64),
    /// Any other write (one that creates or deletes its row, or can never apply), which looks
    /// at the row before it writes.
    Write(&'c RecordWrite),
    Effect(&'c EffectRow),
    Hold(&'c EffectHold),
    Open(&'c InteractionRow),
    /// An answer, given in the turn being committed.
    Answer(&'c Answer, &'c str),
    Turn(&'c TurnRow),
    Event(&'c EventRow),
    Finding(&'c FindingRow),
}

/// What an [`Action`] found.
#[derive(Debug)]
pub(crate) enum Found {
    /// The stored turn a claim found, if any.
    Turn(Option<Box<StoredTurn>>),
    /// The revision of a row read, as locked; `None` when it is missing or deleted.
    Revision(Option<i64>),
    /// Whether a write applied, and if not, the row's revision then.
    Written {
        applied: bool,
        actual: Option<i64>,
    },
    Effect(EffectInsert),
    /// A row that went in (a hold, an interaction, an event).
    Inserted,
    /// Whether the interaction was open, and is now answered.
    Answered(bool),
    /// The turn's sequence number, `None` when (conversation, turn) is taken.
    Numbered(Option<i64>),
    /// Whether the finding went in (its id was free).
    Finding(bool),
}

/// The rows a commit checks, in (table, key) order, so that two transactions that lock the
/// same records lock them in the same order and cannot deadlock. A row both read and written
/// is checked by its write alone, which locks it for writing at once rather than upgrading a
/// shared lock.
///
/// A read expecting [`ABSENT`] finds no row (or a deleted one); any other read finds the row
/// at the revision read. A write expecting [`ABSENT`] creates its row, which must not exist (a
/// deleted row may be created again, at the revision after its tombstone's); a write of `null`
/// deletes its row at the revision expected; any other write replaces the row at the revision
/// expected.
fn rows<'c>(reads: &'c [RecordRead], writes: &'c [RecordWrite]) -> Vec<Action<'c>> {
    let written: std::collections::BTreeSet<(&str, &str)> =
        writes.iter().map(|w| (w.table.as_str(), w.key.as_str())).collect();
    let mut ordered: Vec<(&str, &str, Action<'c>)> = writes
        .iter()
        .map(|write| {
            // No row is ever at the last revision there is, so a write expecting it is stale.
            let replace = (write.expected_revision != ABSENT && !write.value.is_null())
                .then(|| next_revision(write.expected_revision))
                .flatten();
            let action = replace.map_or(Action::Write(write), |revision| Action::Replace(write, revision));
            (write.table.as_str(), write.key.as_str(), action)
        })
        .collect();
    ordered.extend(
        reads
            .iter()
            .filter(|r| !written.contains(&(r.table.as_str(), r.key.as_str())))
            .map(|read| (read.table.as_str(), read.key.as_str(), Action::Read(read))),
    );
    ordered.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    ordered.into_iter().map(|(_, _, action)| action).collect()
}

/// The steps of a commit, in order: the turn's claim, the rows, then what goes in, each kind
/// sorted where its unique keys are locked as they go in (for the same reason as the rows).
/// Sequence numbers last: a commit holds its number open for as short a time as it can.
pub(crate) fn plan(commit: &Commit) -> Vec<Action<'_>> {
    let turn = &commit.turn;
    let mut actions = vec![Action::Claim(turn)];
    actions.extend(rows(&commit.reads, &commit.writes));
    let mut effects: Vec<&EffectRow> = commit.effects.iter().collect();
    effects.sort_by(|a, b| a.idempotency_key.cmp(&b.idempotency_key));
    actions.extend(effects.into_iter().map(Action::Effect));
    let mut holds: Vec<&EffectHold> = commit.holds.iter().collect();
    holds.sort_by(|a, b| (&a.table, &a.key, &a.effect).cmp(&(&b.table, &b.key, &b.effect)));
    holds.dedup();
    actions.extend(holds.into_iter().map(Action::Hold));
    let mut opened: Vec<&InteractionRow> = commit.opened.iter().collect();
    opened.sort_by(|a, b| a.id.cmp(&b.id));
    actions.extend(opened.into_iter().map(Action::Open));
    let mut answered: Vec<&Answer> = commit.answered.iter().collect();
    answered.sort_by(|a, b| a.interaction.cmp(&b.interaction));
    actions.extend(answered.into_iter().map(|answer| Action::Answer(answer, &turn.turn)));
    actions.push(Action::Turn(turn));
    actions.extend(commit.events.iter().map(Action::Event));
    actions.extend(commit.findings.iter().map(Action::Finding));
    actions
}

/// Performs one action with the backend's steps, waiting for each statement's answer.
pub(crate) fn perform_one(tx: &mut impl Txn, action: &Action<'_>) -> Result<Found, StoreError> {
    Ok(match action {
        Action::Claim(turn) => Found::Turn(tx.claim_turn(&turn.conversation, &turn.turn)?.map(Box::new)),
        Action::Read(read) => Found::Revision(tx.lock_read(&read.table, &read.key)?),
        Action::Replace(write, revision) => written(tx, write, |tx| tx.update_record(write, *revision))?,
        Action::Write(write) => written(tx, write, |tx| apply_write(tx, write))?,
        Action::Effect(effect) => Found::Effect(tx.insert_effect(effect)?),
        Action::Hold(hold) => {
            tx.insert_hold(hold)?;
            Found::Inserted
        }
        Action::Open(interaction) => {
            tx.insert_interaction(interaction)?;
            Found::Inserted
        }
        Action::Answer(answer, turn) => Found::Answered(tx.answer(answer, turn)?),
        Action::Turn(turn) => Found::Numbered(tx.insert_turn(turn)?),
        Action::Event(event) => {
            tx.insert_event(event)?;
            Found::Inserted
        }
        Action::Finding(finding) => Found::Finding(tx.insert_finding(finding)?),
    })
}

/// A write's [`Found`]: whether it applied, and if not, the row's revision then.
fn written<T: Txn>(
    tx: &mut T,
    write: &RecordWrite,
    apply: impl FnOnce(&mut T) -> Result<bool, StoreError>,
) -> Result<Found, StoreError> {
    let applied = apply(tx)?;
    let actual = if applied { None } else { tx.record_revision(&write.table, &write.key)? };
    Ok(Found::Written { applied, actual })
}

/// The row a rows action found stale, if it did.
fn stale(action: &Action<'_>, found: &Found) -> Option<Stale> {
    let (table, key, expected, actual) = match (action, found) {
        (Action::Read(read), Found::Revision(at)) => {
            if *at == Some(read.revision) || (at.is_none() && read.revision == ABSENT) {
                return None;
            }
            (&read.table, &read.key, read.revision, *at)
        }
        (Action::Replace(write, _) | Action::Write(write), Found::Written { applied: false, actual }) => {
            (&write.table, &write.key, write.expected_revision, *actual)
        }
        _ => return None,
    };
    Some(Stale { table: table.clone(), key: key.clone(), expected, actual })
}

/// Checks the reads and applies the writes, in [`rows`] order, stopping at the first stale one.
fn apply_writes(tx: &mut impl Txn, reads: &[RecordRead], writes: &[RecordWrite]) -> Result<Option<Stale>, StoreError> {
    for action in rows(reads, writes) {
        let found = perform_one(tx, &action)?;
        if let Some(stale) = stale(&action, &found) {
            return Ok(Some(stale));
        }
    }
    Ok(None)
}

/// Applies one write if its row is as the decision read it; whether it did.
fn apply_write(tx: &mut impl Txn, write: &RecordWrite) -> Result<bool, StoreError> {
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
        match next_revision(write.expected_revision) {
            Some(revision) => tx.update_record(write, revision)?,
            None => false,
        }
    })
}

/// What one action's result makes of the commit.
enum Judged {
    /// Go on.
    Go,
    /// The turn took this sequence number; go on.
    Numbered(i64),
    /// The commit ends here.
    End(Box<Settled<Option<CommitOutcome>>>),
}

/// What `found` makes of the commit. `None` for the outcome means the turn's unique
/// constraint fired: a concurrent commit of the same turn won the race.
fn judge(action: &Action<'_>, found: Found) -> Result<Judged, StoreError> {
    use Settled::Discard;
    if let Some(Stale { table, key, expected, actual }) = stale(action, &found) {
        let stale = CommitOutcome::StaleRevision { table, key, expected, actual };
        return Ok(Judged::End(Box::new(Discard(Some(stale)))));
    }
    Ok(match (action, found) {
        (Action::Claim(_), Found::Turn(Some(stored))) => {
            Judged::End(Box::new(Discard(Some(CommitOutcome::Duplicate(*stored)))))
        }
        (Action::Effect(effect), Found::Effect(EffectInsert::KeyTaken)) => {
            let idempotency_key = effect.idempotency_key.clone();
            Judged::End(Box::new(Discard(Some(CommitOutcome::DuplicateEffect { idempotency_key }))))
        }
        (Action::Answer(answer, _), Found::Answered(false)) => {
            let id = answer.interaction.clone();
            Judged::End(Box::new(Discard(Some(CommitOutcome::InteractionClosed { id }))))
        }
        (Action::Turn(_), Found::Numbered(None)) => Judged::End(Box::new(Discard(None))),
        (Action::Turn(_), Found::Numbered(Some(seq))) => Judged::Numbered(seq),
        (Action::Finding(finding), Found::Finding(false)) => {
            return Err(StoreError::IdTaken { kind: "finding", id: finding.id.clone() });
        }
        (Action::Claim(_), Found::Turn(None))
        | (Action::Read(_), Found::Revision(_))
        | (Action::Replace(..) | Action::Write(_), Found::Written { .. })
        | (Action::Effect(_), Found::Effect(EffectInsert::Inserted))
        | (Action::Hold(_) | Action::Open(_) | Action::Event(_), Found::Inserted)
        | (Action::Answer(..), Found::Answered(true))
        | (Action::Finding(_), Found::Finding(true)) => Judged::Go,
        (_, found) => return Err(StoreError::Corrupt { what: format!("a commit step answered {found:?}") }),
    })
}

/// The steps of a commit, in [`plan`] order, each judged in that order: the first whose
/// result ends the commit decides it, whatever the backend ran after it (inside the same
/// transaction, which is then rolled back). `None` means the turn's unique constraint fired:
/// the caller reads the stored turn after the rollback and answers it as a duplicate.
pub(crate) fn commit(tx: &mut impl Txn, commit: &Commit) -> Result<Settled<Option<CommitOutcome>>, StoreError> {
    let actions = plan(commit);
    let mut rest = actions.as_slice();
    let mut seq = None;
    while !rest.is_empty() {
        let results = tx.perform(rest);
        if results.is_empty() {
            return Err(StoreError::Corrupt { what: "a commit step answered nothing".to_owned() });
        }
        let ran = results.len();
        for (action, found) in rest.iter().zip(results) {
            match judge(action, found?)? {
                Judged::Go => {}
                Judged::Numbered(taken) => seq = Some(taken),
                Judged::End(settled) => return Ok(*settled),
            }
        }
        rest = rest.get(ran..).unwrap_or_default();
    }
    let seq = seq.ok_or_else(|| StoreError::Corrupt { what: "a commit took no sequence number".to_owned() })?;
    Ok(Settled::Keep(Some(CommitOutcome::Committed { seq })))
}

/// The steps of an outcome report. The effect is locked first, so of two concurrent reports
/// the second finds the first one's outcome and writes nothing. A stored `unknown` is not
/// final: a `done` or `failed` after it is recorded over it.
pub(crate) fn report_outcome(tx: &mut impl Txn, report: &OutcomeReport) -> Result<Settled<OutcomeResult>, StoreError> {
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
