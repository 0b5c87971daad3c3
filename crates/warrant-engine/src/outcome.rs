//! Outcomes: an effect's outcome as its executor reports it, recorded once, with the rows as the
//! system of record left them (they replace warrant's, and where they differ from the effect's
//! predicted changes an `effect_diverged` finding is kept), or, without rows, a failed effect's
//! own field changes undone where the rows still hold what it left.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use warrant_core::change::{Divergence, RowChange};
use warrant_core::reason::ReasonCode;
use warrant_core::records;
use warrant_core::request::RequestError;
use warrant_core::turn::{self, RowRef};
use warrant_store::{EffectRow, EventRow, OutcomeReport, OutcomeResult, RecordWrite, ReportedRow, Store};

use crate::{Engine, EngineError};

/// What [`Engine::report_outcome`] answers; its JSON is the answer of `POST
/// /v1/effects/{id}/outcome` and of `warrant effect-outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OutcomeReply {
    /// The effect's outcome: recorded now, or recorded before (and then not changed).
    Accepted(EffectOutcome),
    /// The report was refused and nothing was written: an outcome not in the list or a row the
    /// effect does not name (`invalid_input`), a row that does not fit its table
    /// (`invalid_record`), or an effect the store does not hold (`unknown_effect`).
    Refused {
        /// The code, the field at fault and what is wrong.
        error: RequestError,
    },
}

/// A row as the system of record left it after an effect, as the executor reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRow {
    /// The records table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// The whole row.
    pub value: Value,
}

/// Reads the reported rows of an outcome given apart from its body, as `warrant effect-outcome
/// --rows` takes them: a JSON array of rows, each `{"table","key","value"}`, read as strictly as
/// a request body; an error names the field at fault as the route does (`rows[1].value`).
pub fn outcome_rows(json: &str) -> Result<Vec<OutcomeRow>, RequestError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Rows {
        rows: Vec<OutcomeRow>,
    }
    let body = format!("{{\"rows\": {json}\n}}");
    warrant_core::wire::check(&body)?;
    Ok(warrant_core::wire::from_str::<Rows>(&body)?.rows)
}

/// A reported row and the revision its report left it at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowRevision {
    /// The records table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// Its revision after the report.
    pub revision: i64,
}

/// What an outcome's report found: `effect_diverged`, with each field whose reported value is
/// not the one the effect's steps predicted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeFinding {
    /// `effect_diverged`.
    pub code: ReasonCode,
    /// The fields that differ, predicted against reported.
    pub fields: Vec<Divergence>,
}

/// An effect's outcome as [`Engine::report_outcome`] found or left it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectOutcome {
    /// The effect.
    pub effect: String,
    /// Its outcome: the one reported, or the one recorded before.
    pub outcome: String,
    /// Whether this report recorded it.
    pub recorded: bool,
    /// Whether the effect's own field changes were undone; given only when this report
    /// recorded the outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverted: Option<bool>,
    /// The reported rows with the revisions they are at now; given only when this report
    /// recorded them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<RowRevision>,
    /// What this report found (`effect_diverged`); given only when it recorded the outcome.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<OutcomeFinding>,
}

/// An effect of a stored turn with its outcome and what the outcome's report kept, as the
/// review page and `warrant replay` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectView {
    /// The effect.
    pub id: String,
    /// Its operation.
    pub op: String,
    /// `done`, `failed` or `unknown`; `null` until reported.
    pub outcome: Option<String>,
    /// The rows it holds until its outcome is `done` or `failed` (an operation without effect
    /// steps); empty for the rest.
    pub holds: Vec<RowRef>,
    /// The rows its outcome reported.
    pub rows: Vec<OutcomeRow>,
    /// What its outcome's report found.
    pub findings: Vec<OutcomeFinding>,
    /// What running it returned, as its executor reported it beside the outcome (at most
    /// [`MAX_RESULT`] bytes of JSON), so that a call found committed again is answered with its
    /// first run's result rather than run twice; absent when none was reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// The most bytes of JSON an effect's reported result may take.
pub const MAX_RESULT: usize = 64 * 1024;

/// What an outcome's report keeps with the effect.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    #[serde(default)]
    rows: Vec<OutcomeRow>,
    #[serde(default)]
    findings: Vec<OutcomeFinding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
}

impl OutcomeReply {
    fn refused(code: ReasonCode, field: &str, message: String) -> OutcomeReply {
        OutcomeReply::Refused { error: RequestError { code, field: field.to_owned(), message } }
    }

    fn unknown_effect(effect_id: &str) -> OutcomeReply {
        OutcomeReply::refused(ReasonCode::UnknownEffect, "effect", format!("no effect `{effect_id}`"))
    }

    fn accepted(effect: &str, outcome: &str, recorded: bool, reverted: Option<bool>) -> OutcomeReply {
        OutcomeReply::Accepted(EffectOutcome {
            effect: effect.to_owned(),
            outcome: outcome.to_owned(),
            recorded,
            reverted,
            rows: Vec::new(),
            findings: Vec::new(),
        })
    }
}

/// What an effect's payload says it did: its own field changes and the rows it holds.
#[derive(Default)]
struct Payload {
    changes: Vec<RowChange>,
    holds: Vec<RowRef>,
}

fn payload(effect_id: &str, payload: &Value) -> Result<Payload, EngineError> {
    let corrupt =
        |e: serde_json::Error| EngineError::Corrupt { what: format!("effect `{effect_id}`"), message: e.to_string() };
    let field = |name: &str| payload.get(name).cloned().unwrap_or(Value::Array(vec![]));
    Ok(Payload {
        changes: serde_json::from_value(field("changes")).map_err(corrupt)?,
        holds: serde_json::from_value(field("holds")).map_err(corrupt)?,
    })
}

impl<S: Store> Engine<S> {
    /// Records an effect's outcome as the executor reports it, with `rows`, the rows as the
    /// system of record left them (none: the executor reports none).
    ///
    /// Each row must be one the effect names (a row its changes wrote, or one it holds) and fit
    /// its table, or the report is refused and nothing is written. The rows replace the stored
    /// ones at new revisions, in one transaction with the outcome; for a `done` effect, each
    /// field its steps predicted and the row reports otherwise makes an `effect_diverged`
    /// finding, kept with the outcome. Without rows, a failed effect's own field changes are
    /// undone, each row's only where it still holds what the effect left there; if any of them
    /// was written since, the outcome is recorded and no row is touched. A recorded `unknown`
    /// keeps holding the rows of an effect without steps; a later `done` or `failed` is
    /// recorded over it, once.
    pub fn report_outcome(
        &mut self,
        effect_id: &str,
        outcome: &str,
        rows: &[OutcomeRow],
    ) -> Result<OutcomeReply, EngineError> {
        self.report_outcome_with(effect_id, outcome, rows, None)
    }

    /// [`Engine::report_outcome`] with what running the effect returned, kept with the outcome
    /// (at most [`MAX_RESULT`] bytes of JSON) and shown by [`Engine::effect`] and
    /// [`Engine::turn_effects`].
    pub fn report_outcome_with(
        &mut self,
        effect_id: &str,
        outcome: &str,
        rows: &[OutcomeRow],
        result: Option<&Value>,
    ) -> Result<OutcomeReply, EngineError> {
        if let Some(size) = result.map(|r| r.to_string().len()).filter(|&size| size > MAX_RESULT) {
            let message = format!("the result is {size} bytes of JSON; at most {MAX_RESULT}");
            return Ok(OutcomeReply::refused(ReasonCode::InvalidInput, "result", message));
        }
        if !matches!(outcome, "done" | "failed" | "unknown") {
            let message = format!("`{outcome}` is not one of done, failed, unknown");
            return Ok(OutcomeReply::refused(ReasonCode::InvalidInput, "outcome", message));
        }
        let Some(effect) = self.store.effect(effect_id)? else {
            return Ok(OutcomeReply::unknown_effect(effect_id));
        };
        let settles =
            effect.outcome.is_none() || (effect.outcome.as_deref() == Some("unknown") && outcome != "unknown");
        let reverts = outcome == "failed" && rows.is_empty() && settles;
        // The payload is read only where it is needed: a `done` without rows reads nothing.
        let did = if reverts || !rows.is_empty() { payload(effect_id, &effect.payload)? } else { Payload::default() };
        if let Err(refused) = self.check_reported(effect_id, &did, rows) {
            return Ok(refused);
        }
        let findings = if outcome == "done" { diverged(&did.changes, rows) } else { Vec::new() };
        let writes = if reverts { self.reverts(&did.changes)? } else { Vec::new() };
        let reverting = !writes.is_empty();
        let kept = (!rows.is_empty() || !findings.is_empty() || result.is_some()).then(|| Kept {
            rows: rows.to_vec(),
            findings: findings.clone(),
            result: result.cloned(),
        });
        let report = OutcomeReport {
            effect: effect_id.to_owned(),
            outcome: outcome.to_owned(),
            event: outcome_event(effect_id, &effect, outcome, reverting),
            writes,
            rows: rows
                .iter()
                .map(|r| ReportedRow { table: r.table.clone(), key: r.key.clone(), value: r.value.clone() })
                .collect(),
            report: kept.map(|k| serde_json::to_value(k).unwrap_or(Value::Null)),
        };
        let result = match self.store.report_outcome(&report)? {
            OutcomeResult::StaleRevision { .. } => {
                // A later commit moved the rows: record the outcome, leave the rows alone.
                let report = OutcomeReport {
                    writes: Vec::new(),
                    event: outcome_event(effect_id, &effect, outcome, false),
                    ..report
                };
                self.store.report_outcome(&report)?
            }
            other => other,
        };
        Ok(match result {
            OutcomeResult::Recorded => {
                let mut revisions = Vec::with_capacity(rows.len());
                for row in rows {
                    let revision = self.store.record(&row.table, &row.key)?.map_or(0, |r| r.revision);
                    revisions.push(RowRevision { table: row.table.clone(), key: row.key.clone(), revision });
                }
                OutcomeReply::Accepted(EffectOutcome {
                    effect: effect_id.to_owned(),
                    outcome: outcome.to_owned(),
                    recorded: true,
                    reverted: Some(reverting),
                    rows: revisions,
                    findings,
                })
            }
            OutcomeResult::AlreadyRecorded { outcome: stored } => {
                OutcomeReply::accepted(effect_id, &stored, false, None)
            }
            OutcomeResult::UnknownEffect => OutcomeReply::unknown_effect(effect_id),
            OutcomeResult::StaleRevision { .. } => OutcomeReply::accepted(effect_id, outcome, false, None),
        })
    }

    /// Refuses a reported row the effect does not name, one given twice, and one that does not
    /// fit its table, naming the field at fault.
    fn check_reported(&self, effect_id: &str, did: &Payload, rows: &[OutcomeRow]) -> Result<(), OutcomeReply> {
        let named = |row: &OutcomeRow| {
            did.changes.iter().map(|c| &c.row).chain(&did.holds).any(|r| r.table == row.table && r.key == row.key)
        };
        for (i, row) in rows.iter().enumerate() {
            let at = format!("rows[{i}]");
            let Some(table) = self.contract.tables().iter().find(|t| t.name == row.table) else {
                let message = format!("the contract declares no records table `{}`", row.table);
                return Err(OutcomeReply::refused(ReasonCode::InvalidInput, &format!("{at}.table"), message));
            };
            if !named(row) {
                let message =
                    format!("effect `{effect_id}` neither changed nor holds row `{}` of `{}`", row.key, row.table);
                return Err(OutcomeReply::refused(ReasonCode::InvalidInput, &at, message));
            }
            if rows.iter().take(i).any(|r| r.table == row.table && r.key == row.key) {
                let message = format!("row `{}` of `{}` is given twice", row.key, row.table);
                return Err(OutcomeReply::refused(ReasonCode::InvalidInput, &at, message));
            }
            if let Err(e) = records::check_row(table, &row.key, &row.value, self.contract.currency()) {
                let field = e.field().map_or_else(|| format!("{at}.value"), |path| format!("{at}.value.{path}"));
                return Err(OutcomeReply::refused(ReasonCode::InvalidRecord, &field, e.to_string()));
            }
        }
        Ok(())
    }

    /// The writes that undo a failed effect's own changes on the rows as they are now; none
    /// when any changed field has been written since. An effect stored before effects kept
    /// their own changes has none to undo, and is not reverted.
    fn reverts(&mut self, changes: &[RowChange]) -> Result<Vec<RecordWrite>, EngineError> {
        let mut writes = Vec::with_capacity(changes.len());
        for change in changes {
            let stored = self.store.record(&change.row.table, &change.row.key)?;
            // A row the effect created is deleted, and one it deleted created again, if the
            // row is still as the effect left it.
            if let Some(whole) =
                change.fields.iter().find(|f| f.path.is_empty() && (f.before.is_none() || f.after.is_none()))
            {
                let (expected_revision, value) = match (&whole.before, &whole.after, stored) {
                    (None, Some(after), Some(current)) if current.value == *after => (current.revision, Value::Null),
                    (Some(before), None, None) => (warrant_store::ABSENT, before.clone()),
                    _ => return Ok(Vec::new()),
                };
                writes.push(RecordWrite {
                    table: change.row.table.clone(),
                    key: change.row.key.clone(),
                    expected_revision,
                    value,
                });
                continue;
            }
            let Some(current) = stored else { return Ok(Vec::new()) };
            let Some(value) = warrant_core::change::revert(&current.value, &change.fields) else {
                return Ok(Vec::new());
            };
            // The revision read now: a commit between this read and the write makes the
            // write stale, and the outcome is then recorded without it.
            writes.push(RecordWrite {
                table: change.row.table.clone(),
                key: change.row.key.clone(),
                expected_revision: current.revision,
                value,
            });
        }
        Ok(writes)
    }

    /// The effects the turn `turn` of `conversation` committed, by id, each with its outcome
    /// and what the outcome's report kept.
    pub fn turn_effects(&mut self, conversation: &str, turn: &str) -> Result<Vec<EffectView>, EngineError> {
        effect_views(&mut self.store, conversation, turn)
    }

    /// The effect `effect_id` with its outcome and what the outcome's report kept, its result
    /// included; `None` when the store holds no such effect.
    pub fn effect(&mut self, effect_id: &str) -> Result<Option<EffectView>, EngineError> {
        self.store.effect(effect_id)?.map(effect_view).transpose()
    }
}

/// The effects of a stored turn as [`EffectView`]s.
pub(crate) fn effect_views<S: Store>(
    store: &mut S,
    conversation: &str,
    turn: &str,
) -> Result<Vec<EffectView>, EngineError> {
    store.turn_effects(conversation, turn)?.into_iter().map(effect_view).collect()
}

/// A stored effect as [`EffectView`] shows it.
fn effect_view(effect: EffectRow) -> Result<EffectView, EngineError> {
    let did = payload(&effect.id, &effect.payload)?;
    let kept: Kept = match effect.report {
        Some(report) => serde_json::from_value(report).map_err(|e| EngineError::Corrupt {
            what: format!("outcome report of effect `{}`", effect.id),
            message: e.to_string(),
        })?,
        None => Kept::default(),
    };
    Ok(EffectView {
        id: effect.id,
        op: effect.op,
        outcome: effect.outcome,
        holds: did.holds,
        rows: kept.rows,
        findings: kept.findings,
        result: kept.result,
    })
}

/// The `effect_diverged` finding of reported rows against the effect's predicted changes, if
/// any field differs.
fn diverged(changes: &[RowChange], rows: &[OutcomeRow]) -> Vec<OutcomeFinding> {
    let fields: Vec<Divergence> = changes
        .iter()
        .flat_map(|change| {
            let reported = rows.iter().find(|r| r.table == change.row.table && r.key == change.row.key);
            reported.map(|row| warrant_core::change::diverged(change, &row.value)).unwrap_or_default()
        })
        .collect();
    if fields.is_empty() { Vec::new() } else { vec![OutcomeFinding { code: ReasonCode::EffectDiverged, fields }] }
}

/// The event that records the outcome of the effect `effect_id`. An outcome recorded over a
/// stored `unknown` is an event of its own, under an id of its own.
fn outcome_event(effect_id: &str, effect: &EffectRow, outcome: &str, reverted: bool) -> EventRow {
    let id = match effect.outcome.as_deref() {
        Some("unknown") => turn::derive_id("evt", &[effect_id, "outcome", outcome]),
        _ => turn::derive_id("evt", &[effect_id, "outcome"]),
    };
    EventRow {
        seq: 0,
        id,
        conversation: effect.conversation.clone(),
        kind: format!("effect_{outcome}"),
        payload: json!({"effect": effect_id, "op": effect.op, "outcome": outcome, "reverted": reverted}),
        effect: Some(effect_id.to_owned()),
    }
}
