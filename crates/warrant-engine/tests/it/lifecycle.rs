//! A turn's lifecycle on a real SQLite file: idempotent repeats, requests refused whole,
//! confirmations checked again against current revisions, outcomes, and replay.

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, FolderFiles, TurnResult};
use warrant_store::SqliteStore;
use warrant_store::prelude::*;

use crate::{retail_dir, retail_engine};

const USER: &str = "yusuf_rossi_9620";
const PENDING: &str = "#W6247578";

fn request(turn: &str, acts: Value, answers: Value) -> Value {
    json!({
        "conversation": "life",
        "turn": turn,
        "actor": USER,
        "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York",
        "locale": "en-US",
        "entries": [{"kind": "user", "text": "Please cancel it."}],
        "acts": acts,
        "answers": answers,
    })
}

fn cancel() -> Value {
    json!([{"op": "cancel_pending_order", "args": {"order_id": PENDING, "reason": "no longer needed"}}])
}

fn decide<S: Store>(engine: &mut Engine<S>, request: &Value) -> (TurnResponse, bool) {
    match engine.turn(&request.to_string()).unwrap() {
        TurnResult::Decided { response, repeated } => (response, repeated),
        TurnResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

fn confirm(interaction: &str) -> Value {
    json!([{"interaction": interaction, "option": "confirm"}])
}

fn status<S: Store>(engine: &mut Engine<S>, order: &str) -> (String, i64) {
    let record = engine.record("order", order).unwrap().unwrap();
    (record.value["status"].as_str().unwrap().to_owned(), record.revision)
}

fn ledger<S: Store>(engine: &mut Engine<S>) -> (usize, usize) {
    let turns = engine.turns(0, 10_000).unwrap().len();
    let events = engine.events(None).unwrap().len();
    (turns, events)
}

#[test]
fn a_repeated_turn_returns_its_recorded_result_and_does_nothing_twice() {
    let (mut engine, _dir) = retail_engine();
    let (held, _) = decide(&mut engine, &request("t1", cancel(), json!([])));
    let answer = request("t2", json!([]), confirm(&held.interactions[0].id));
    let (first, repeated) = decide(&mut engine, &answer);
    assert!(!repeated);
    assert_eq!(first.acts[0].verdict, Verdict::Commit);
    let after_first = (ledger(&mut engine), status(&mut engine, PENDING));
    let (second, repeated) = decide(&mut engine, &answer);
    assert!(repeated);
    assert_eq!(first, second);
    assert_eq!((ledger(&mut engine), status(&mut engine, PENDING)), after_first);
    assert_eq!(after_first.1, ("cancelled".to_owned(), 2));
}

#[test]
fn a_malformed_request_is_refused_whole_with_the_field_at_fault() {
    let (mut engine, _dir) = retail_engine();
    let good = request("t1", cancel(), json!([]));
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            {
                let mut r = good.clone();
                r["extra"] = json!(1);
                r
            },
            "invalid_input",
            "extra",
        ),
        (
            {
                let mut r = good.clone();
                r["acts"][0]["argz"] = json!({});
                r
            },
            "invalid_input",
            "acts[0].argz",
        ),
        (
            {
                let mut r = good.clone();
                r["at"] = json!("yesterday");
                r
            },
            "invalid_input",
            "at",
        ),
        (
            {
                let mut r = good.clone();
                r["time_zone"] = json!("Mars/Olympus");
                r
            },
            "invalid_input",
            "time_zone",
        ),
        (
            {
                let mut r = good.clone();
                r["locale"] = json!("xx-YY");
                r
            },
            "invalid_input",
            "locale",
        ),
        (
            {
                let mut r = good.clone();
                r["entries"][0]["kind"] = json!("robot");
                r
            },
            "unknown_source_kind",
            "entries[0].kind",
        ),
        (
            {
                let mut r = good.clone();
                r["turn"] = json!("");
                r
            },
            "invalid_input",
            "turn",
        ),
        (
            {
                let mut r = good.clone();
                r["answers"] =
                    json!([{"interaction": "i", "option": "confirm"}, {"interaction": "i", "option": "decline"}]);
                r
            },
            "invalid_input",
            "answers[1].interaction",
        ),
        (
            {
                let mut r = good.clone();
                r["acts"] = json!({"op": "x"});
                r
            },
            "invalid_input",
            "acts",
        ),
    ];
    for (bad, code, field) in cases {
        match engine.turn(&bad.to_string()).unwrap() {
            TurnResult::Rejected(error) => {
                assert_eq!(error.code.as_str(), code, "{bad}");
                assert_eq!(error.field, field, "{bad}");
            }
            TurnResult::Decided { .. } => panic!("decided: {bad}"),
        }
    }
    assert_eq!(ledger(&mut engine), (0, 0), "nothing of a rejected request is committed");
    assert_eq!(status(&mut engine, PENDING), ("pending".to_owned(), 1));
}

#[test]
fn a_confirmation_is_checked_again_against_current_revisions() {
    let (mut engine, dir) = retail_engine();
    let (held, _) = decide(&mut engine, &request("t1", cancel(), json!([])));
    // Another process changes the order after the question was asked.
    let mut other = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    let record = other.record("order", PENDING).unwrap().unwrap();
    let mut value = record.value.clone();
    value["address"]["zip"] = json!("00000");
    let commit = warrant_store::Commit {
        turn: warrant_store::TurnRow {
            conversation: "x".into(),
            turn: "x".into(),
            request: json!({}).into(),
            response: json!({}).into(),
            replay: json!({}).into(),
        },
        writes: vec![warrant_store::RecordWrite {
            table: "order".into(),
            key: PENDING.into(),
            expected_revision: record.revision,
            value,
        }],
        effects: vec![],
        events: vec![],
        opened: vec![],
        answered: vec![],
        findings: vec![],
        reads: vec![],
        holds: vec![],
    };
    other.commit(&commit).unwrap();
    let (answered, _) = decide(&mut engine, &request("t2", json!([]), confirm(&held.interactions[0].id)));
    assert_eq!(answered.acts[0].verdict, Verdict::Refuse);
    assert_eq!(answered.acts[0].reasons[0].code.as_str(), "stale_revision");
    assert_eq!(status(&mut engine, PENDING).0, "pending");
    // The interaction is used up; asking again works.
    let (again, _) = decide(&mut engine, &request("t3", json!([]), confirm(&held.interactions[0].id)));
    assert_eq!(again.acts[0].reasons[0].code.as_str(), "interaction_closed");
}

#[test]
fn a_declined_or_foreign_answer_commits_nothing() {
    let (mut engine, _dir) = retail_engine();
    let (held, _) = decide(&mut engine, &request("t1", cancel(), json!([])));
    let id = held.interactions[0].id.clone();
    let mut foreign = request("t2", json!([]), confirm(&id));
    foreign["actor"] = json!("james_li_5688");
    let (response, _) = decide(&mut engine, &foreign);
    assert_eq!(response.acts[0].reasons[0].code.as_str(), "unknown_interaction");
    let mut other_conversation = request("t3", json!([]), confirm(&id));
    other_conversation["conversation"] = json!("elsewhere");
    let (response, _) = decide(&mut engine, &other_conversation);
    assert_eq!(response.acts[0].reasons[0].code.as_str(), "unknown_interaction");
    let (response, _) = decide(&mut engine, &request("t4", json!([]), json!([{"interaction": id, "option": "maybe"}])));
    assert_eq!(response.acts[0].reasons[0].code.as_str(), "unknown_option");
    let (response, _) =
        decide(&mut engine, &request("t5", json!([]), json!([{"interaction": id, "option": "decline"}])));
    assert_eq!(response.acts[0].reasons[0].code.as_str(), "declined_by_user");
    assert!(response.effects.is_empty());
    let (response, _) = decide(&mut engine, &request("t6", json!([]), confirm(&id)));
    assert_eq!(response.acts[0].reasons[0].code.as_str(), "interaction_closed");
    assert_eq!(status(&mut engine, PENDING), ("pending".to_owned(), 1));
}

/// Before: an answer to another actor's interaction was refused as
/// `interaction_of_another_actor`, and every refused answer named the held operation, so anyone
/// could learn that an interaction id exists and what it holds.
#[test]
fn an_answer_to_another_actors_or_conversations_interaction_is_refused_as_one_that_does_not_exist() {
    let (mut engine, _dir) = retail_engine();
    let (held, _) = decide(&mut engine, &request("t1", cancel(), json!([])));
    let id = held.interactions[0].id.clone();
    // The refused act with the id it echoes taken out, as JSON text.
    let refusal = |response: &TurnResponse| {
        let mut act = serde_json::to_value(&response.acts[0]).unwrap();
        act.as_object_mut().unwrap().remove("interaction");
        act.to_string()
    };
    let mut nobody = request("t2", json!([]), confirm("int_0000000000000000"));
    nobody["actor"] = json!("james_li_5688");
    let (unknown, _) = decide(&mut engine, &nobody);
    let mut foreign_actor = request("t3", json!([]), confirm(&id));
    foreign_actor["actor"] = json!("james_li_5688");
    let (another_actor, _) = decide(&mut engine, &foreign_actor);
    let mut foreign_conversation = request("t4", json!([]), confirm(&id));
    foreign_conversation["conversation"] = json!("elsewhere");
    let (another_conversation, _) = decide(&mut engine, &foreign_conversation);
    assert_eq!(
        serde_json::from_str::<Value>(&refusal(&unknown)).unwrap(),
        json!({"source": "answer", "index": 0, "op": "", "verdict": "refuse",
            "reasons": [{"code": "unknown_interaction", "field": "answers[0]"}]})
    );
    assert_eq!(refusal(&another_actor), refusal(&unknown));
    assert_eq!(refusal(&another_conversation), refusal(&unknown));
    assert!(another_actor.effects.is_empty() && another_conversation.effects.is_empty());
    assert_eq!(status(&mut engine, PENDING), ("pending".to_owned(), 1));
}

#[test]
fn a_failed_outcome_undoes_the_effect_and_outcomes_are_recorded_once() {
    let (mut engine, _dir) = retail_engine();
    let (held, _) = decide(&mut engine, &request("t1", cancel(), json!([])));
    let (done, _) = decide(&mut engine, &request("t2", json!([]), confirm(&held.interactions[0].id)));
    let effect = done.effects[0].id.clone();
    assert_eq!(status(&mut engine, PENDING), ("cancelled".to_owned(), 2));
    let result = serde_json::to_value(engine.report_outcome(&effect, "failed", &[]).unwrap()).unwrap();
    assert_eq!(result["recorded"], true);
    assert_eq!(result["reverted"], true);
    // The typed reply's JSON, byte for byte, as the hand-built one was.
    let expected = format!(r#"{{"effect":"{effect}","outcome":"failed","recorded":true,"reverted":true}}"#);
    assert_eq!(result.to_string(), expected);
    assert_eq!(status(&mut engine, PENDING), ("pending".to_owned(), 3));
    let again = serde_json::to_value(engine.report_outcome(&effect, "done", &[]).unwrap()).unwrap();
    assert_eq!(again["recorded"], false);
    assert_eq!(again["outcome"], "failed");
    let kinds: Vec<String> = engine.events(Some("life")).unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, ["cancel_pending_order", "effect_failed"]);
    let unknown = serde_json::to_value(engine.report_outcome("eff_nothing", "done", &[]).unwrap()).unwrap();
    assert_eq!(unknown["error"]["code"], "unknown_effect");
    let bad = serde_json::to_value(engine.report_outcome(&effect, "maybe", &[]).unwrap()).unwrap();
    assert_eq!(bad["error"]["field"], "outcome");
    assert_eq!(
        again.to_string(),
        format!(r#"{{"effect":"{effect}","outcome":"failed","recorded":false}}"#),
        "an outcome recorded before carries no `reverted`"
    );
    assert_eq!(
        unknown.to_string(),
        r#"{"error":{"code":"unknown_effect","field":"effect","message":"no effect `eff_nothing`"}}"#
    );
}

#[test]
fn replay_is_identical_with_the_same_contract_and_names_changes_with_another() {
    let (mut engine, dir) = retail_engine();
    let (held, _) = decide(&mut engine, &request("t1", cancel(), json!([])));
    decide(&mut engine, &request("t2", json!([]), confirm(&held.interactions[0].id)));
    decide(
        &mut engine,
        &request(
            "t3",
            json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6679257", "reason": "no longer needed"}}]),
            json!([]),
        ),
    );
    decide(
        &mut engine,
        &request("t4", json!([{"op": "get_order_details", "args": {"order_id": "#W4776164"}}]), json!([])),
    );
    let report = engine.replay().unwrap();
    assert_eq!((report.turns, report.identical, report.changes.len()), (4, 4, 0));

    // The same store replayed against a contract whose reason set lost "no longer needed".
    let text = std::fs::read_to_string(retail_dir().join("contract.toml")).unwrap();
    let changed =
        text.replace("values = [\"no longer needed\", \"ordered by mistake\"]", "values = [\"ordered by mistake\"]");
    assert_ne!(text, changed);
    let contract = Contract::load("changed.toml", &changed, &FolderFiles::new(&retail_dir())).unwrap();
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    let mut other = crate::build(contract, &retail_dir(), store, warrant_engine::ModelSource::None);
    let report = other.replay().unwrap();
    let changed_turns: Vec<&str> = report.changes.iter().map(|c| c.turn.as_str()).collect();
    assert_eq!(changed_turns, ["t1", "t2", "t3"], "{:?}", report.changes);
    assert!(report.changes.iter().all(|c| c.after.contains("not_in_closed_set")), "{:?}", report.changes);
}

#[test]
fn a_cancelled_gift_card_order_is_refunded_onto_the_card_at_once() {
    let (mut engine, _dir) = retail_engine();
    // Task 30 of τ-bench: #W9373487 was paid with gift card 7711863.
    let order = "#W9373487";
    let owner = engine.record("order", order).unwrap().unwrap().value["user_id"].as_str().unwrap().to_owned();
    let card = "gift_card_7711863";
    let balance = |engine: &mut Engine<SqliteStore>| {
        engine.record("user", &owner).unwrap().unwrap().value["payment_methods"][card]["balance"].clone()
    };
    let before = balance(&mut engine);
    let mut ask = request(
        "g1",
        json!([{"op": "cancel_pending_order", "args": {"order_id": order, "reason": "no longer needed"}}]),
        json!([]),
    );
    ask["actor"] = json!(owner);
    let (held, _) = decide(&mut engine, &ask);
    let mut yes = request("g2", json!([]), confirm(&held.interactions[0].id));
    yes["actor"] = json!(owner);
    let (done, _) = decide(&mut engine, &yes);
    assert_eq!(done.acts[0].verdict, Verdict::Commit, "{:?}", done.acts[0]);
    let after = balance(&mut engine);
    let cents = |v: &Value| (v.as_f64().unwrap() * 100.0).round() as i64;
    assert_eq!(cents(&after) - cents(&before), 10927, "{before} -> {after}");
    let history = engine.record("order", order).unwrap().unwrap().value["payment_history"].clone();
    assert_eq!(history[1], json!({"transaction_type": "refund", "amount": 109.27, "payment_method_id": card}));
}
