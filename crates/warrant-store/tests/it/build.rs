//! Small builders for the values the tests commit, so each test shows only what it is about.

use serde_json::{Value, json};
use warrant_store::{
    Answer, Commit, EffectRow, EventRow, InteractionRow, InteractionState, OutcomeReport,
    RecordWrite, StoredTurn,
};

/// A commit of the turn `turn` of `conversation` that writes nothing else yet.
pub fn commit(conversation: &str, turn: &str) -> Commit {
    Commit {
        turn: StoredTurn {
            seq: 0,
            conversation: conversation.to_owned(),
            turn: turn.to_owned(),
            request: json!({"turn": turn, "entries": [{"kind": "user", "text": "hello"}]}),
            response: json!({"verdicts": []}),
            replay: json!({"checks": [], "turn": turn}),
        },
        writes: vec![],
        effects: vec![],
        events: vec![],
        opened: vec![],
        answered: vec![],
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
    }
}

/// Seed rows from `(key, value)` pairs.
pub fn rows(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}
