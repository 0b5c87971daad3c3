//! Outcomes: an effect's outcome as its executor reports it, recorded once, with a failed
//! effect's own field changes undone where the rows still hold what it left.

use serde::Serialize;
use serde_json::{Value, json};

use warrant_core::change::RowChange;
use warrant_core::reason::ReasonCode;
use warrant_core::request::RequestError;
use warrant_core::turn;
use warrant_store::{EffectRow, EventRow, OutcomeReport, OutcomeResult, RecordWrite, Store};

use crate::{Engine, EngineError};

/// What [`Engine::report_outcome`] answers; its JSON is the answer of `POST
/// /v1/effects/{id}/outcome` and of `warrant effect-outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OutcomeReply {
    /// The effect's outcome: recorded now, or recorded before (and then not changed).
    Accepted(EffectOutcome),
    /// The report was refused: an outcome not in the list (`invalid_input`) or an effect the
    /// store does not hold (`unknown_effect`).
    Refused {
        /// The code, the field at fault and what is wrong.
        error: RequestError,
    },
}

/// An effect's outcome as [`Engine::report_outcome`] found or left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
        })
    }
}

impl<S: Store> Engine<S> {
    /// Records an effect's outcome as the executor reports it. A failed effect's own field
    /// changes are undone, each row's only where it still holds what the effect left there; if
    /// any of them was written since (by another effect of the same turn or by a later
    /// commit), the outcome is recorded and no row is touched.
    pub fn report_outcome(&mut self, effect_id: &str, outcome: &str) -> Result<OutcomeReply, EngineError> {
        if !matches!(outcome, "done" | "failed" | "unknown") {
            let message = format!("`{outcome}` is not one of done, failed, unknown");
            return Ok(OutcomeReply::refused(ReasonCode::InvalidInput, "outcome", message));
        }
        let Some(effect) = self.store.effect(effect_id)? else {
            return Ok(OutcomeReply::unknown_effect(effect_id));
        };
        let writes = if outcome == "failed" && effect.outcome.is_none() {
            self.reverts(effect_id, &effect.payload)?
        } else {
            Vec::new()
        };
        let reverting = !writes.is_empty();
        let report = OutcomeReport {
            effect: effect_id.to_owned(),
            outcome: outcome.to_owned(),
            event: outcome_event(effect_id, &effect, outcome, reverting),
            writes,
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
            OutcomeResult::Recorded => OutcomeReply::accepted(effect_id, outcome, true, Some(reverting)),
            OutcomeResult::AlreadyRecorded { outcome: stored } => {
                OutcomeReply::accepted(effect_id, &stored, false, None)
            }
            OutcomeResult::UnknownEffect => OutcomeReply::unknown_effect(effect_id),
            OutcomeResult::StaleRevision { .. } => OutcomeReply::accepted(effect_id, outcome, false, None),
        })
    }

    /// The writes that undo a failed effect's own changes on the rows as they are now; none
    /// when any changed field has been written since. An effect stored before effects kept
    /// their own changes has none to undo, and is not reverted.
    fn reverts(&mut self, effect_id: &str, payload: &Value) -> Result<Vec<RecordWrite>, EngineError> {
        let changes: Vec<RowChange> =
            serde_json::from_value(payload.get("changes").cloned().unwrap_or(Value::Array(vec![])))
                .map_err(|e| EngineError::Corrupt { what: format!("effect `{effect_id}`"), message: e.to_string() })?;
        let mut writes = Vec::with_capacity(changes.len());
        for change in changes {
            let Some(current) = self.store.record(&change.row.table, &change.row.key)? else { return Ok(Vec::new()) };
            let Some(value) = warrant_core::change::revert(&current.value, &change.fields) else {
                return Ok(Vec::new());
            };
            // The revision read now: a commit between this read and the write makes the
            // write stale, and the outcome is then recorded without it.
            writes.push(RecordWrite {
                table: change.row.table,
                key: change.row.key,
                expected_revision: current.revision,
                value,
            });
        }
        Ok(writes)
    }
}

/// The event that records the outcome of the effect `effect_id`.
fn outcome_event(effect_id: &str, effect: &EffectRow, outcome: &str, reverted: bool) -> EventRow {
    EventRow {
        seq: 0,
        id: turn::derive_id("evt", &[effect_id, "outcome"]),
        conversation: effect.conversation.clone(),
        kind: format!("effect_{outcome}"),
        payload: json!({"effect": effect_id, "op": effect.op, "outcome": outcome, "reverted": reverted}),
        effect: Some(effect_id.to_owned()),
    }
}
