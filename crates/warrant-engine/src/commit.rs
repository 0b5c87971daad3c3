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
    JsonText, RecordRead, RecordWrite, TurnRow,
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
        turn: turn_row(decided)?,
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
        reads: reads(decision),
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

/// Every row the decision read and does not write (rows followed by reference, related rows,
/// rows read for policy or by the outbound gate), at the revision it read them: the store
/// checks each as it checks a write, so a decision made from a row that changed since is
/// stale. A row read missing is read at [`warrant_store::ABSENT`].
fn reads(decision: &Decision) -> Vec<RecordRead> {
    let written: BTreeSet<(&str, &str)> =
        decision.writes.iter().map(|w| (w.row.table.as_str(), w.row.key.as_str())).collect();
    decision
        .facts
        .records
        .iter()
        .filter(|r| !written.contains(&(r.table.as_str(), r.key.as_str())))
        .map(|r| RecordRead { table: r.table.clone(), key: r.key.clone(), revision: r.revision })
        .collect()
}

/// The turn as stored: its request, its response and its replay record, each written as JSON
/// text straight from its own type (no `Value` is built only to be written out).
fn turn_row(decided: &Decided<'_>) -> Result<TurnRow, EngineError> {
    let request = decided.valid.request();
    Ok(TurnRow {
        conversation: request.conversation.clone(),
        turn: request.turn.clone(),
        request: JsonText::of(request).map_err(corrupt)?,
        response: JsonText::of(&decided.decision.response).map_err(corrupt)?,
        replay: JsonText::of(&replay_record(decided)).map_err(corrupt)?,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test stops at the first surprise")]

    use serde_json::{Value, json};
    use warrant_core::records::{Record, SharedRecord};
    use warrant_core::turn::{FactsRead, RecordedFacts, Verdict};

    use super::*;

    const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "customer"

[records]

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"
fields.name = { kind = "text" }

[[records.table]]
name = "flight"
file = "flights.json"
entity = "Flight"
fields.status = { kind = "enum", values = ["available", "landed"] }

[[records.table]]
name = "reservation"
file = "reservations.json"
entity = "Reservation"
owner = "owner"
fields.owner = { kind = "ref", table = "customer" }
fields.status = { kind = "enum", values = ["active", "cancelled"] }
fields.flights = { kind = "list", of = { kind = "ref", table = "flight" } }

[policies]
files = ["policy.cedar"]

[[operation]]
name = "cancel_reservation"
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }
derive = [
  { name = "flown", type = "bool", cel = "reservation_id.flights.exists(f, row('flight', f).status == 'landed')" },
]

[[operation.effect]]
set = "reservation_id.status"
value = "cancelled"
"#;

    const POLICY: &str = r#"
permit (principal, action, resource);

@id("no_cancel_after_a_flight_flew")
forbid (principal, action == Action::"cancel_reservation", resource) when { context.derived.flown };
"#;

    fn row(table: &str, key: &str, revision: i64, value: Value) -> SharedRecord {
        Record { table: table.into(), key: key.into(), revision, value }.into()
    }

    #[test]
    fn a_commit_checks_every_row_the_decision_read_and_does_not_write() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("contract.toml", CONTRACT.to_owned()),
            ("policy.cedar", POLICY.to_owned()),
            ("customers.json", json!({"kim": {"name": "Kim"}}).to_string()),
            ("flights.json", json!({"F1": {"status": "available"}}).to_string()),
            ("reservations.json", json!({"r1": {"owner": "kim", "status": "active", "flights": ["F1"]}}).to_string()),
        ] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let (contract, _) = crate::load_contract(&dir.path().join("contract.toml")).unwrap();
        let facts = RecordedFacts::new(&FactsRead {
            records: vec![
                row("customer", "kim", 3, json!({"name": "Kim"})),
                row("flight", "F1", 7, json!({"status": "available"})),
                row("reservation", "r1", 5, json!({"owner": "kim", "status": "active", "flights": ["F1"]})),
            ],
            ..FactsRead::default()
        });
        let body = json!({
            "conversation": "c", "turn": "t1", "actor": "kim",
            "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
            "entries": [{"kind": "user", "text": "Cancel it."}],
            "acts": [{"op": "cancel_reservation", "args": {"reservation_id": "r1"}}],
        });
        let valid = warrant_core::request::parse(&contract, &body.to_string()).unwrap();
        let conflicts = BTreeSet::new();
        let decision = turn::decide(&contract, &valid, &facts, &conflicts);
        assert_eq!(decision.response.acts[0].verdict, Verdict::Commit, "{:?}", decision.response.acts);
        let commit = to_commit(&Decided {
            valid: &valid,
            decision: &decision,
            conflicts: &conflicts,
            answers: &CheckAnswers::new(),
            gate_answers: &GateAnswers::new(),
            calls: &[],
        })
        .unwrap();
        // The reservation is written at the revision read; the flight followed by `row(…)`
        // and the actor read for policy are checked at theirs.
        let written: Vec<_> = commit.writes.iter().map(|w| (w.key.as_str(), w.expected_revision)).collect();
        assert_eq!(written, [("r1", 5)]);
        let mut reads: Vec<_> = commit.reads.iter().map(|r| (r.table.as_str(), r.key.as_str(), r.revision)).collect();
        reads.sort_unstable();
        assert_eq!(reads, [("customer", "kim", 3), ("flight", "F1", 7)]);
    }
}
