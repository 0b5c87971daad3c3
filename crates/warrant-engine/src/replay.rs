//! Replay: every stored turn decided again from its recorded request, the facts it read and the
//! recorded answers of its model checks, against a (possibly changed) contract. A verdict that differs is reported; with the same
//! contract nothing may differ, byte for byte.

use serde::Serialize;
use serde_json::Value;

use warrant_core::Contract;
use warrant_core::id::canonical;
use warrant_core::request;
use warrant_core::turn::{self, TurnResponse};
use warrant_store::{Store, StoredTurn};

use crate::EngineError;
use crate::outcome::{OutcomeFinding, effect_views};
use crate::record::ReplayRecord;
use crate::turn::stored_response;

/// One act whose verdict or reasons changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayChange {
    /// The conversation.
    pub conversation: String,
    /// The turn.
    pub turn: String,
    /// The act's position in the response.
    pub act: usize,
    /// The operation.
    pub op: String,
    /// The verdict and reason codes recorded.
    pub before: String,
    /// The verdict and reason codes now.
    pub after: String,
}

/// A finding an effect's outcome left on a replayed turn (`effect_diverged`). Outcomes come
/// after the decision and never change it: a replay shows them beside the turn and decides
/// the turn as it was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayFinding {
    /// The conversation.
    pub conversation: String,
    /// The turn.
    pub turn: String,
    /// The effect.
    pub effect: String,
    /// Its operation.
    pub op: String,
    /// The finding.
    pub finding: OutcomeFinding,
}

/// What a replay found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Turns replayed.
    pub turns: usize,
    /// Turns whose response is byte-identical to the recorded one.
    pub identical: usize,
    /// Every changed verdict.
    pub changes: Vec<ReplayChange>,
    /// Every finding the replayed turns' effects' outcomes left, in turn order.
    pub findings: Vec<ReplayFinding>,
}

fn summary(response: &TurnResponse, index: usize) -> String {
    response.acts.get(index).map_or_else(
        || "absent".to_owned(),
        |act| {
            let codes: Vec<&str> = act.reasons.iter().map(|r| r.code.as_str()).collect();
            let policies: Vec<&str> = act.reasons.iter().flat_map(|r| r.policies.iter().map(String::as_str)).collect();
            let mut text = format!("{:?} [{}]", act.verdict, codes.join(", ")).to_lowercase();
            if !policies.is_empty() {
                text.push_str(&format!(" policies [{}]", policies.join(", ")));
            }
            text
        },
    )
}

pub(crate) fn replay<S: Store>(contract: &Contract, store: &mut S) -> Result<ReplayReport, EngineError> {
    let mut report = ReplayReport::default();
    let mut after = 0;
    loop {
        let batch = store.turns(after, PAGE)?;
        let Some(last) = batch.last() else { break };
        after = last.seq;
        for stored in &batch {
            replay_turn(contract, store, stored, &mut report)?;
        }
    }
    Ok(report)
}

/// Turns read at a time.
pub(crate) const PAGE: usize = 500;

/// Decides `stored` again from its record and adds what it found to `report`: the turn counted,
/// each changed verdict, each finding its effects' outcomes left. A record that cannot be read
/// is an error, and `report` is left as it was.
pub(crate) fn replay_turn<S: Store>(
    contract: &Contract,
    store: &mut S,
    stored: &StoredTurn,
    report: &mut ReplayReport,
) -> Result<(), EngineError> {
    let mut findings = Vec::new();
    for effect in effect_views(store, &stored.conversation, &stored.turn)? {
        for finding in effect.findings {
            findings.push(ReplayFinding {
                conversation: stored.conversation.clone(),
                turn: stored.turn.clone(),
                effect: effect.id.clone(),
                op: effect.op.clone(),
                finding,
            });
        }
    }
    let recorded = stored_response(stored)?;
    let request: request::TurnRequest = serde_json::from_value(stored.request.clone()).map_err(|e| {
        EngineError::Corrupt { what: format!("request of turn `{}`", stored.turn), message: e.to_string() }
    })?;
    let record = ReplayRecord::of(stored)?;
    report.turns += 1;
    report.findings.extend(findings);
    let facts = record.recorded_facts();
    let now = match request::validate(contract, request) {
        // The recorded answers of the turn's checks: a replay calls no model.
        Ok(valid) => {
            turn::decide_answered(
                contract,
                &valid,
                &facts,
                &record.conflicts,
                &record.answers,
                &record.outbound_answers,
            )
            .response
        }
        Err(error) => {
            for (i, act) in recorded.acts.iter().enumerate() {
                report.changes.push(ReplayChange {
                    conversation: stored.conversation.clone(),
                    turn: stored.turn.clone(),
                    act: i,
                    op: act.op.clone(),
                    before: summary(&recorded, i),
                    after: format!("request rejected: {error}"),
                });
            }
            return Ok(());
        }
    };
    let now_json = serde_json::to_value(&now).unwrap_or(Value::Null);
    if canonical(&stored.response) == canonical(&now_json) {
        report.identical += 1;
    }
    for i in 0..recorded.acts.len().max(now.acts.len()) {
        let (before, after_now) = (summary(&recorded, i), summary(&now, i));
        if before != after_now {
            let op = recorded.acts.get(i).or(now.acts.get(i)).map(|a| a.op.clone()).unwrap_or_default();
            report.changes.push(ReplayChange {
                conversation: stored.conversation.clone(),
                turn: stored.turn.clone(),
                act: i,
                op,
                before,
                after: after_now,
            });
        }
    }
    Ok(())
}
