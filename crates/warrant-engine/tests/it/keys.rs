//! Keys on a real SQLite file: ids and idempotency keys derived from unambiguous parts, so two
//! turns whose conversation and turn join to the same text are two turns; a turn key reused
//! with another request refused without doing anything; the same request answered with its
//! recorded response; ids that hash JSON unchanged by the order of its keys.

use serde_json::{Value, json};
use warrant_engine::{Engine, Submitted, TurnResult};
use warrant_store::SqliteStore;
use warrant_store::prelude::*;

use crate::retail_engine;

const USER: &str = "yusuf_rossi_9620";

fn lookup(conversation: &str, turn: &str, actor: &str) -> Value {
    json!({
        "conversation": conversation, "turn": turn, "actor": actor,
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "What is on my account?"}],
        "acts": [{"op": "get_user_details", "args": {"user_id": actor}}],
    })
}

fn turns_and_effects(path: &std::path::Path) -> (usize, usize) {
    let mut store = SqliteStore::open(path).unwrap();
    let turns = store.turns(0, 10_000).unwrap();
    let effects = turns.iter().map(|t| t.response["effects"].as_array().map_or(0, Vec::len)).sum();
    (turns.len(), effects)
}

#[test]
fn a_conversation_and_turn_that_join_to_the_same_text_are_different_turns() {
    let (mut engine, dir) = retail_engine();
    let mut keys = Vec::new();
    for (conversation, turn) in [("x/y", "z"), ("x", "y/z"), ("x/y/z", "0")] {
        let result = engine.turn(&lookup(conversation, turn, USER).to_string()).unwrap();
        let TurnResult::Decided { response, repeated } = result else { panic!("{conversation} {turn}: {result:?}") };
        assert!(!repeated, "{conversation} {turn} was taken for another turn");
        assert_eq!(response.acts[0].verdict, warrant_core::turn::Verdict::Commit, "{conversation} {turn}");
        let effect = &response.effects[0];
        keys.push((effect.id.clone(), effect.idempotency_key.clone()));
    }
    let ids: std::collections::BTreeSet<_> = keys.iter().map(|(id, _)| id).collect();
    let idempotency: std::collections::BTreeSet<_> = keys.iter().map(|(_, key)| key).collect();
    assert_eq!((ids.len(), idempotency.len()), (3, 3), "{keys:?}");
    for (id, key) in &keys {
        assert!(id.starts_with("eff_") && key.starts_with("key_"), "{id} {key}");
    }
    assert_eq!(turns_and_effects(&dir.path().join("warrant.sqlite")), (3, 3));
}

#[test]
fn a_turn_key_reused_with_another_request_is_refused_and_does_nothing() {
    let (mut engine, dir) = retail_engine();
    let db = dir.path().join("warrant.sqlite");
    let first = lookup("c1", "t1", USER);
    let TurnResult::Decided { response, repeated: false } = engine.turn(&first.to_string()).unwrap() else {
        panic!("not decided")
    };
    // Another actor, another operation, the same key.
    let mut other = lookup("c1", "t1", "mia_garcia_4516");
    other["acts"] = json!([{"op": "get_order_details", "args": {"order_id": "#W6247578"}}]);
    match engine.turn(&other.to_string()).unwrap() {
        TurnResult::Rejected(error) => {
            assert_eq!((error.code.as_str(), error.field.as_str()), ("turn_key_reused", "turn"), "{error}");
            let answer = TurnResult::Rejected(error).to_json();
            assert_eq!(answer["error"]["code"], "turn_key_reused");
        }
        decided @ TurnResult::Decided { .. } => panic!("another request got the first one's answer: {decided:?}"),
    }
    // A change anywhere is another request: an entry's text, a draft.
    let mut text = first.clone();
    text["entries"][0]["text"] = json!("What is on my account now?");
    let mut draft = first.clone();
    draft["draft"] = json!({"text": "Here it is."});
    for changed in [text, draft] {
        assert!(matches!(engine.turn(&changed.to_string()).unwrap(), TurnResult::Rejected(_)), "{changed}");
    }
    assert_eq!(turns_and_effects(&db), (1, 1), "a refused request does nothing");
    // The identical request, with its keys in another order and its defaults spelt out, is
    // answered with its recorded response, marked as a repeat.
    let spelt = r#"{"calls":[],"answers":[],"draft":null,"acts":[{"args":{"user_id":"yusuf_rossi_9620"},"op":"get_user_details"}],
        "entries":[{"text":"What is on my account?","kind":"user"}],"locale":"en-US","time_zone":"America/New_York",
        "at":"2026-11-29T15:00:00Z","actor":"yusuf_rossi_9620","turn":"t1","conversation":"c1"}"#;
    let result = engine.turn(spelt).unwrap();
    let TurnResult::Decided { response: again, repeated: true } = &result else { panic!("{result:?}") };
    assert_eq!(again, &response);
    assert_eq!(result.to_json()["repeated"], true);
    let fresh = TurnResult::Decided { response, repeated: false }.to_json();
    assert!(fresh.get("repeated").is_none(), "a first decision carries no mark: {fresh}");
    assert_eq!(turns_and_effects(&db), (1, 1));
}

#[test]
fn a_follow_up_with_its_keys_in_another_order_is_the_same_job() {
    let (mut engine, _dir) = retail_engine();
    let one = r##"{"conversation":"c1","actor":"yusuf_rossi_9620","path":"scheduled","at":"2026-11-29T16:00:00Z","due":"2026-11-30T16:00:00Z",
        "locale":"en-US","draft":{"text":"Your order is cancelled.","claims":[{"claim":"order_cancelled","order":"#W6247578"}]}}"##;
    let other = r##"{"draft":{"claims":[{"order":"#W6247578","claim":"order_cancelled"}],"text":"Your order is cancelled."},
        "locale":"en-US","due":"2026-11-30T16:00:00Z","at":"2026-11-29T16:00:00Z","path":"scheduled","actor":"yusuf_rossi_9620","conversation":"c1"}"##;
    let job = |engine: &mut Engine<SqliteStore>, text: &str| match engine.submit(text, 0).unwrap() {
        Submitted::Scheduled { job, duplicate, .. } => (job, duplicate),
        other => panic!("not scheduled: {other:?}"),
    };
    let (first, duplicate) = job(&mut engine, one);
    assert!(!duplicate);
    assert_eq!(job(&mut engine, other), (first, true), "the same follow-up, stored once");
}
