//! Small builders for the values the tests commit, so each test shows only what it is about.

use serde_json::{Value, json};
use warrant_store::{
    Answer, AuditRow, Commit, EffectRow, EventRow, FindingKind, FindingRow, InteractionRow, InteractionState,
    OutcomeReport, PromotionRow, RecordWrite, StoredTurn, TurnRow,
};

/// A commit of the turn `turn` of `conversation` that writes nothing else yet.
pub fn commit(conversation: &str, turn: &str) -> Commit {
    Commit {
        turn: TurnRow {
            conversation: conversation.to_owned(),
            turn: turn.to_owned(),
            request: json!({"turn": turn, "entries": [{"kind": "user", "text": "hello"}]}).into(),
            response: json!({"verdicts": []}).into(),
            replay: json!({"checks": [], "turn": turn}).into(),
        },
        writes: vec![],
        effects: vec![],
        events: vec![],
        opened: vec![],
        answered: vec![],
        findings: vec![],
        reads: vec![],
        holds: vec![],
    }
}

/// The turn of `commit` as the store should give it back, at `seq`.
pub fn stored(commit: &Commit, seq: i64) -> StoredTurn {
    let turn = &commit.turn;
    StoredTurn {
        seq,
        conversation: turn.conversation.clone(),
        turn: turn.turn.clone(),
        request: turn.request.to_value().unwrap(),
        response: turn.response.to_value().unwrap(),
        replay: turn.replay.to_value().unwrap(),
    }
}

pub fn write(table: &str, key: &str, expected_revision: i64, value: Value) -> RecordWrite {
    RecordWrite { table: table.to_owned(), key: key.to_owned(), expected_revision, value }
}

pub fn effect(id: &str, idempotency_key: &str, commit: &Commit) -> EffectRow {
    EffectRow {
        id: id.to_owned(),
        idempotency_key: idempotency_key.to_owned(),
        conversation: commit.turn.conversation.clone(),
        turn: commit.turn.turn.clone(),
        op: "cancel_order".to_owned(),
        payload: json!({"order": "#W0001", "reason": "no_longer_needed"}),
        outcome: None,
        report: None,
    }
}

pub fn event(id: &str, conversation: &str, kind: &str, effect: Option<&str>) -> EventRow {
    EventRow {
        seq: 0,
        id: id.to_owned(),
        conversation: conversation.to_owned(),
        kind: kind.to_owned(),
        payload: json!({"event": id}),
        effect: effect.map(str::to_owned),
    }
}

pub fn interaction(id: &str, commit: &Commit) -> InteractionRow {
    InteractionRow {
        id: id.to_owned(),
        conversation: commit.turn.conversation.clone(),
        turn: commit.turn.turn.clone(),
        payload: json!({"card": "confirm", "op": "cancel_order"}),
        options: vec!["yes".to_owned(), "no".to_owned()],
        state: InteractionState::Open,
    }
}

pub fn answer(interaction: &str, option: &str) -> Answer {
    Answer { interaction: interaction.to_owned(), option: option.to_owned() }
}

pub fn report(effect: &str, outcome: &str, event_id: &str, conversation: &str) -> OutcomeReport {
    OutcomeReport {
        effect: effect.to_owned(),
        outcome: outcome.to_owned(),
        event: self::event(event_id, conversation, "effect_reported", Some(effect)),
        writes: vec![],
        rows: vec![],
        report: None,
    }
}

/// Seed rows from `(key, value)` pairs.
pub fn rows(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

/// A flag raised in the turn of `commit`.
pub fn finding(id: &str, commit: &Commit) -> FindingRow {
    FindingRow {
        seq: 0,
        id: id.to_owned(),
        guard: "guard:announcement".to_owned(),
        version: "v1".to_owned(),
        conversation: commit.turn.conversation.clone(),
        turn: commit.turn.turn.clone(),
        kind: FindingKind::Flag,
        payload: json!({"sentence": 0, "text": "Let me check that file."}),
        at: "2026-11-29T15:00:00Z".to_owned(),
    }
}

/// An unflagged reply of `commit`'s turn, sampled for audit.
pub fn sample(id: &str, commit: &Commit) -> FindingRow {
    FindingRow { kind: FindingKind::Sample, payload: json!({"reply": "Done."}), ..finding(id, commit) }
}

pub fn audit(finding: &str, label: &str) -> AuditRow {
    AuditRow {
        finding: finding.to_owned(),
        label: label.to_owned(),
        who: "ana".to_owned(),
        at: "2026-11-30T09:00:00Z".to_owned(),
    }
}

pub fn promotion(version: &str) -> PromotionRow {
    PromotionRow {
        seq: 0,
        subject: "guard:announcement".to_owned(),
        version: version.to_owned(),
        record: json!({"version": version, "audits": {"audited": 50}}),
        promoted_by: "ana".to_owned(),
        promoted_at: "2026-11-30T10:00:00Z".to_owned(),
        demoted: None,
    }
}
