//! What one turn writes and what an executor reports back, as values, with the outcomes a
//! caller must handle. A stale revision or a closed interaction is an outcome, not an error:
//! the engine turns it into a verdict.

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::ladder::{FindingRow, check_finding};
use crate::rows::{EffectRow, EventRow, InteractionRow, StoredTurn, TurnRow};
use crate::storable;

/// The outcomes an executor may report for an effect.
pub const EFFECT_OUTCOMES: [&str; 3] = ["done", "failed", "unknown"];

/// The revision a decision read a row at that did not exist: no stored row is ever at it.
pub const ABSENT: i64 = 0;

/// A write to a record, applied only if the record is still as the decision read it: at
/// `expected_revision`, or, where that is [`ABSENT`], not there (an effect that creates a row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordWrite {
    /// The records table.
    pub table: String,
    /// The record's key within its table.
    pub key: String,
    /// The revision the decision was made against; [`ABSENT`] creates the row, which must not
    /// exist then.
    pub expected_revision: i64,
    /// The whole new value; it replaces the stored one. `null` deletes the row (an effect that
    /// deletes it), which must be at `expected_revision`.
    pub value: serde_json::Value,
}

/// A row a decision read without writing it (a row followed by reference, a related row, a
/// row read for policy): the commit goes through only if the row is still at `revision`, or,
/// where that is [`ABSENT`], still not there. A row the commit also writes is checked by its
/// write alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordRead {
    /// The records table.
    pub table: String,
    /// The record's key within its table.
    pub key: String,
    /// The revision the decision read; [`ABSENT`] for a row it found missing or deleted.
    pub revision: i64,
}

/// An answer to an open interaction, by option id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The interaction answered.
    pub interaction: String,
    /// The option chosen, one of the interaction's own.
    pub option: String,
}

/// Everything one turn writes, committed in one transaction or not at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    /// The turn and its replay record.
    pub turn: TurnRow,
    /// Writes to records, each checked against its expected revision.
    pub writes: Vec<RecordWrite>,
    /// Rows the decision read and does not write, each checked against the revision read: a
    /// changed, created or deleted one makes the commit stale, as a write would.
    #[serde(default)]
    pub reads: Vec<RecordRead>,
    /// New effects. Their `outcome` is ignored: a new effect has none yet.
    pub effects: Vec<EffectRow>,
    /// New events, stored in this order. Their `seq` is ignored: the store assigns it.
    pub events: Vec<EventRow>,
    /// New interactions. Their `state` is ignored: a new interaction is open.
    pub opened: Vec<InteractionRow>,
    /// Answers to interactions that must be open now; the answering turn is `turn.turn`.
    pub answered: Vec<Answer>,
    /// What the guards flagged in the turn. Their `seq` is ignored: the store assigns it.
    #[serde(default)]
    pub findings: Vec<FindingRow>,
    /// The rows the new effects of operations without effect steps hold, until each effect's
    /// outcome is `done` or `failed` ([`Ledger::pending_effect`](crate::Ledger::pending_effect)).
    #[serde(default)]
    pub holds: Vec<EffectHold>,
}

/// A row an effect holds until its outcome is `done` or `failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectHold {
    /// The effect, one of the commit's own.
    pub effect: String,
    /// The records table.
    pub table: String,
    /// The row's key.
    pub key: String,
}

/// A row as the system of record left it after an effect, reported with its outcome: it
/// replaces the stored row (or creates it) whatever the stored row's revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedRow {
    /// The records table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// The whole row, a JSON object.
    pub value: serde_json::Value,
}

/// What became of a commit. Every variant but `Committed` wrote nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CommitOutcome {
    /// Everything was written; `seq` is the turn's position in commit order.
    Committed {
        /// The turn's position in commit order.
        seq: i64,
    },
    /// The turn (conversation, turn) was stored before; this is the stored one.
    Duplicate(StoredTurn),
    /// A record written or read was not at the expected revision (`actual` is `None` when it
    /// does not exist).
    StaleRevision {
        /// The records table.
        table: String,
        /// The record's key.
        key: String,
        /// The revision the decision was made against.
        expected: i64,
        /// The revision stored, `None` when the record does not exist.
        actual: Option<i64>,
    },
    /// An answered interaction is not open (answered before, or unknown).
    InteractionClosed {
        /// The interaction.
        id: String,
    },
    /// An effect with this idempotency key is stored already, or the commit repeats it.
    DuplicateEffect {
        /// The key taken.
        idempotency_key: String,
    },
}

/// An executor's report on an effect, with the event that records it and the record writes
/// that follow from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeReport {
    /// The effect reported on.
    pub effect: String,
    /// One of [`EFFECT_OUTCOMES`].
    pub outcome: String,
    /// Its `seq` is ignored: the store assigns it.
    pub event: EventRow,
    /// Writes that follow from the outcome, each checked against its expected revision.
    pub writes: Vec<RecordWrite>,
    /// The rows as the system of record left them, each written at the next revision.
    #[serde(default)]
    pub rows: Vec<ReportedRow>,
    /// What is kept with the outcome (the rows reported, the fields that diverged), as the
    /// engine records it; `None` keeps nothing.
    #[serde(default)]
    pub report: Option<serde_json::Value>,
}

/// What became of an outcome report. Every variant but `Recorded` wrote nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum OutcomeResult {
    /// The outcome, its event and its writes were stored.
    Recorded,
    /// The effect's outcome was reported before; `outcome` is the one stored, which stands
    /// whether or not this report agrees with it. Only `unknown` is not final: a later `done`
    /// or `failed` is recorded over it, once.
    AlreadyRecorded {
        /// The outcome stored.
        outcome: String,
    },
    /// No effect has that id.
    UnknownEffect,
    /// A record was not at the expected revision; nothing was written.
    StaleRevision {
        /// The records table.
        table: String,
        /// The record's key.
        key: String,
        /// The revision the report expected.
        expected: i64,
        /// The revision stored, `None` when the record does not exist.
        actual: Option<i64>,
    },
}

pub(crate) fn check_commit(commit: &Commit) -> Result<(), StoreError> {
    let turn = &commit.turn;
    storable::text(|| "`turn.conversation`".to_owned(), &turn.conversation)?;
    storable::text(|| "`turn.turn`".to_owned(), &turn.turn)?;
    storable::json_text(|| "`turn.request`".to_owned(), &turn.request)?;
    storable::json_text(|| "`turn.response`".to_owned(), &turn.response)?;
    storable::json_text(|| "`turn.replay`".to_owned(), &turn.replay)?;
    for (i, write) in commit.writes.iter().enumerate() {
        check_write(|| format!("writes[{i}]"), write)?;
    }
    for (i, read) in commit.reads.iter().enumerate() {
        storable::text(|| format!("`reads[{i}].table`"), &read.table)?;
        storable::text(|| format!("`reads[{i}].key`"), &read.key)?;
    }
    for (i, effect) in commit.effects.iter().enumerate() {
        let at = |f: &str| format!("`effects[{i}].{f}`");
        storable::text(|| at("id"), &effect.id)?;
        storable::text(|| at("idempotency_key"), &effect.idempotency_key)?;
        storable::text(|| at("conversation"), &effect.conversation)?;
        storable::text(|| at("turn"), &effect.turn)?;
        storable::text(|| at("op"), &effect.op)?;
        storable::json(|| at("payload"), &effect.payload)?;
    }
    for (i, event) in commit.events.iter().enumerate() {
        check_event(|| format!("events[{i}]"), event)?;
    }
    for (i, hold) in commit.holds.iter().enumerate() {
        let at = |f: &str| format!("`holds[{i}].{f}`");
        storable::text(|| at("effect"), &hold.effect)?;
        storable::text(|| at("table"), &hold.table)?;
        storable::text(|| at("key"), &hold.key)?;
    }
    for (i, opened) in commit.opened.iter().enumerate() {
        let at = |f: &str| format!("`opened[{i}].{f}`");
        storable::text(|| at("id"), &opened.id)?;
        storable::text(|| at("conversation"), &opened.conversation)?;
        storable::text(|| at("turn"), &opened.turn)?;
        storable::json(|| at("payload"), &opened.payload)?;
        for (j, option) in opened.options.iter().enumerate() {
            storable::text(|| at(&format!("options[{j}]")), option)?;
        }
    }
    for (i, answer) in commit.answered.iter().enumerate() {
        storable::text(|| format!("`answered[{i}].interaction`"), &answer.interaction)?;
        storable::text(|| format!("`answered[{i}].option`"), &answer.option)?;
    }
    for (i, finding) in commit.findings.iter().enumerate() {
        check_finding(|| format!("findings[{i}]"), finding)?;
    }
    Ok(())
}

pub(crate) fn check_report(report: &OutcomeReport) -> Result<(), StoreError> {
    if !EFFECT_OUTCOMES.contains(&report.outcome.as_str()) {
        return Err(StoreError::UnknownOutcome { outcome: report.outcome.clone() });
    }
    storable::text(|| "`effect`".to_owned(), &report.effect)?;
    check_event(|| "event".to_owned(), &report.event)?;
    for (i, write) in report.writes.iter().enumerate() {
        check_write(|| format!("writes[{i}]"), write)?;
    }
    let mut rows = std::collections::BTreeMap::new();
    for row in &report.rows {
        rows.entry(row.table.as_str()).or_insert_with(Vec::new).push((row.key.as_str(), &row.value));
    }
    for (table, rows) in rows {
        crate::records::check_rows(table, &rows, false)?;
    }
    if let Some(kept) = &report.report {
        storable::json(|| "`report`".to_owned(), kept)?;
    }
    Ok(())
}

fn check_write(at: impl Fn() -> String, write: &RecordWrite) -> Result<(), StoreError> {
    storable::text(|| format!("`{}.table`", at()), &write.table)?;
    storable::text(|| format!("`{}.key`", at()), &write.key)?;
    storable::json(|| format!("`{}.value`", at()), &write.value)
}

fn check_event(at: impl Fn() -> String, event: &EventRow) -> Result<(), StoreError> {
    storable::text(|| format!("`{}.id`", at()), &event.id)?;
    storable::text(|| format!("`{}.conversation`", at()), &event.conversation)?;
    storable::text(|| format!("`{}.kind`", at()), &event.kind)?;
    storable::json(|| format!("`{}.payload`", at()), &event.payload)?;
    if let Some(effect) = &event.effect {
        storable::text(|| format!("`{}.effect`", at()), effect)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn an_unknown_outcome_is_refused_before_anything_else() {
        let report = OutcomeReport {
            effect: "e".into(),
            outcome: "maybe".into(),
            event: EventRow {
                seq: 0,
                id: "v".into(),
                conversation: "c".into(),
                kind: "k".into(),
                payload: Value::Null,
                effect: None,
            },
            writes: vec![],
            rows: vec![],
            report: None,
        };
        assert!(matches!(check_report(&report), Err(StoreError::UnknownOutcome { .. })));
    }
}
