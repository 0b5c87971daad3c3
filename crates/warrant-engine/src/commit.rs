//! The commit mapping: a decision, with what it was decided from, as the one transaction the
//! store commits (the turn with its replay record, the writes, effects, events, interactions
//! opened and answered, and the guard's findings).

use std::collections::BTreeSet;

use serde_json::json;

use warrant_core::check::CheckAnswers;
use warrant_core::outbound::GateAnswers;
use warrant_core::request::{TurnRequest, ValidRequest};
use warrant_core::turn::{self, Decision, RowRef};
use warrant_model::ModelCall;
use warrant_store::{
    Answer, Commit, EffectHold, EffectRow, EventRow, FindingKind, FindingRow, InteractionRow, InteractionState,
    RecordWrite, StoredTurn,
};

use crate::EngineError;
use crate::record::{REPLAY_VERSION, ReplayRecord};

/// A decision and everything it was decided from: what a commit is made of.
pub(crate) struct Decided<'a> {
    /// The request.
    pub(crate) valid: &'a ValidRequest,
    /// The decision.
    pub(crate) decision: &'a Decision,
    /// The rows whose commit conflicted before, decided as lost.
    pub(crate) conflicts: &'a BTreeSet<RowRef>,
    /// Every check answer the turn has so far.
    pub(crate) answers: &'a CheckAnswers,
    /// Every answer of the outbound gate's questions so far.
    pub(crate) gate_answers: &'a GateAnswers,
    /// Every model call made for the turn.
    pub(crate) calls: &'a [ModelCall],
}

fn corrupt(error: serde_json::Error) -> EngineError {
    EngineError::Corrupt { what: "decision".into(), message: error.to_string() }
}

/// The commit of a decided turn.
pub(crate) fn to_commit(decided: &Decided<'_>) -> Result<Commit, EngineError> {
    let request = decided.valid.request();
    let decision = decided.decision;
    Ok(Commit {
        turn: stored_turn(decided)?,
        writes: decision
            .writes
            .iter()
            .map(|w| RecordWrite {
                table: w.row.table.clone(),
                key: w.row.key.clone(),
                expected_revision: w.expected_revision,
                value: w.value.clone(),
            })
            .collect(),
        effects: effects(request, decision),
        events: decision
            .events
            .iter()
            .map(|e| EventRow {
                seq: 0,
                id: e.id.clone(),
                conversation: request.conversation.clone(),
                kind: e.kind.clone(),
                payload: e.payload.clone(),
                effect: e.effect.clone(),
            })
            .collect(),
        opened: opened(request, decision)?,
        answered: decision
            .answered
            .iter()
            .map(|(id, option)| Answer { interaction: id.clone(), option: option.clone() })
            .collect(),
        findings: findings(request, decision)?,
        holds: decision
            .effects
            .iter()
            .flat_map(|record| {
                record.holds.iter().map(|row| EffectHold {
                    effect: record.effect.id.clone(),
                    table: row.table.clone(),
                    key: row.key.clone(),
                })
            })
            .collect(),
    })
}

/// The turn as stored: its request, its response and its replay record.
fn stored_turn(decided: &Decided<'_>) -> Result<StoredTurn, EngineError> {
    let request = decided.valid.request();
    Ok(StoredTurn {
        seq: 0,
        conversation: request.conversation.clone(),
        turn: request.turn.clone(),
        request: serde_json::to_value(request).map_err(corrupt)?,
        response: serde_json::to_value(&decided.decision.response).map_err(corrupt)?,
        replay: serde_json::to_value(replay_record(decided)).map_err(corrupt)?,
    })
}

/// The replay record: the facts the decision read, and the answers it read (those of the checks
/// and questions it needed) with every model call made for them, so that a replay decides again
/// from these answers and needs no model.
fn replay_record(decided: &Decided<'_>) -> ReplayRecord {
    let decision = decided.decision;
    let answers: CheckAnswers =
        decision.checks.iter().filter_map(|c| decided.answers.get(&c.id).map(|a| (c.id.clone(), a.clone()))).collect();
    let outbound_answers: GateAnswers = decision
        .outbound
        .questions
        .iter()
        .filter_map(|q| decided.gate_answers.get(&q.id).map(|a| (q.id.clone(), a.clone())))
        .collect();
    ReplayRecord {
        version: REPLAY_VERSION,
        contract: decision.response.contract.clone(),
        facts: decision.facts.clone(),
        conflicts: decided.conflicts.clone(),
        findings: decision.response.findings.clone(),
        checks: decision.checks.clone(),
        answers,
        model_calls: decided.calls.to_vec(),
        outbound: decision.outbound.clone(),
        outbound_answers,
    }
}

/// Each effect keeps its own field changes, not the turn's write of a row it shares with other
/// effects: a failed one is undone alone ([`crate::Engine::report_outcome`]). An effect without
/// effect steps keeps the rows it holds, which its outcome may report.
fn effects(request: &TurnRequest, decision: &Decision) -> Vec<EffectRow> {
    decision
        .effects
        .iter()
        .map(|record| {
            let mut payload = json!({"args": record.effect.args, "changes": record.changes});
            if let (false, Some(fields)) = (record.holds.is_empty(), payload.as_object_mut()) {
                fields.insert("holds".into(), json!(record.holds));
            }
            EffectRow {
                id: record.effect.id.clone(),
                idempotency_key: record.effect.idempotency_key.clone(),
                conversation: request.conversation.clone(),
                turn: request.turn.clone(),
                op: record.effect.op.clone(),
                payload,
                outcome: None,
                report: None,
            }
        })
        .collect()
}

/// The interactions the decision opened, each with its options.
fn opened(request: &TurnRequest, decision: &Decision) -> Result<Vec<InteractionRow>, EngineError> {
    decision
        .opened
        .iter()
        .map(|it| {
            Ok(InteractionRow {
                id: it.id.clone(),
                conversation: it.conversation.clone(),
                turn: request.turn.clone(),
                payload: serde_json::to_value(it).map_err(corrupt)?,
                options: it.options.clone(),
                state: InteractionState::Open,
            })
        })
        .collect()
}

/// The guard's findings on the response, as the ladder's flags.
fn findings(request: &TurnRequest, decision: &Decision) -> Result<Vec<FindingRow>, EngineError> {
    decision
        .response
        .findings
        .iter()
        .enumerate()
        .map(|(n, finding)| {
            Ok(FindingRow {
                seq: 0,
                id: turn::derive_id("fnd", &[&request.conversation, &request.turn, "finding", &n.to_string()]),
                guard: finding.guard.clone(),
                version: finding.version.clone(),
                conversation: request.conversation.clone(),
                turn: request.turn.clone(),
                kind: FindingKind::Flag,
                payload: serde_json::to_value(finding).map_err(corrupt)?,
                at: request.at.clone(),
            })
        })
        .collect()
}
