//! Values from the user's words through the engine, over a real SQLite file: a pointer into an
//! earlier user entry of the turn (held, confirmed in a later turn and replayed), and the
//! pointers that may not be followed, each refused naming its field.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, ModelSetup, ModelSource, TurnResult, load_contract};
use warrant_model::{ChatAnswer, ChatRequest, Provider, ProviderError};
use warrant_store::SqliteStore;

/// Answers every `value_stated` question the same way and every `locate` question with
/// `LOCATED`, and keeps each question it was asked.
struct Always {
    answer: &'static str,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// Words 3 to 5 of the first entry of [`close`]'s turns: "moving to Lisbon".
const LOCATED: &str = r#"{"found":true,"from":3,"to":5,"copy":"moving to Lisbon"}"#;

impl Provider for Always {
    fn complete(&self, request: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        let question = request.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let content = if question.contains("proposed_value") { LOCATED } else { self.answer };
        self.asked.lock().unwrap().push(question);
        Ok(ChatAnswer { content: content.to_owned(), prompt_tokens: 20, completion_tokens: 3 })
    }
}

/// The questions the model was asked.
type Asked = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// What these tests add to `examples/rename`: a note the model composes, and a reason the user
/// must have given.
const OPERATIONS: &str = r#"
[[operation]]
name = "note"
args.body = { kind = "string", max_length = 40 }
args.topic = { kind = "string", pattern = "[a-z]+(-[a-z]+)*", optional = true }
args.tone = { kind = "string", values = ["plain", "warm"], optional = true }

[[operation.effect]]
set = "actor.note"
arg = "body"

[[operation]]
name = "close_account"
args.reason = { kind = "enum", values = ["moving_away", "too_expensive", "other"], evidence = true }

[[operation.effect]]
set = "actor.closing_reason"
arg = "reason"

[[operation]]
name = "pause_account"
consequential = true
args.reason = { kind = "enum", values = ["moving_away", "other"], evidence = true }

[[operation.effect]]
set = "actor.pause_reason"
arg = "reason"
"#;

const POLICIES: &str = r#"
@id("anyone_may_leave_a_note")
permit (principal, action == Action::"note", resource);

@id("anyone_may_close_their_account")
permit (principal, action == Action::"close_account", resource);

@id("anyone_may_pause_their_account")
permit (principal, action == Action::"pause_account", resource);

@id("no_notes_about_passwords")
forbid (principal, action == Action::"note", resource) when { context.args.body like "*password*" };
"#;

/// `examples/rename` with `rename` held for the user's confirmation and [`OPERATIONS`], in `dir`.
/// With a model answering every question with `answer`, or with none.
fn engine(dir: &Path, answer: Option<&'static str>) -> (Engine<SqliteStore>, Asked) {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rename");
    let contract = std::fs::read_to_string(example.join("contract.toml")).unwrap();
    let held = contract.replacen("name = \"rename\"\n", "name = \"rename\"\nconsequential = true\n", 1);
    assert_ne!(held, contract, "the example declares `rename`");
    // The fields the added operations write, declared on the example's customer table.
    let declared = "fields.name = { kind = \"text\" }\n";
    let fields = "fields.note = { kind = \"text\", optional = true }\n\
                  fields.closing_reason = { kind = \"text\", optional = true }\n\
                  fields.pause_reason = { kind = \"text\", optional = true }\n";
    let held = held.replacen(declared, &format!("{declared}{fields}"), 1);
    assert!(held.contains("fields.note"), "the example declares its customer's fields");
    std::fs::write(dir.join("contract.toml"), held + OPERATIONS).unwrap();
    let policies = std::fs::read_to_string(example.join("policies.cedar")).unwrap();
    std::fs::write(dir.join("policies.cedar"), policies + POLICIES).unwrap();
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::copy(example.join("data/customers.json"), dir.join("data/customers.json")).unwrap();
    let (contract, folder) = load_contract(&dir.join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.join("warrant.sqlite")).unwrap();
    let asked = Asked::default();
    let model = answer.map_or(ModelSource::None, |answer| {
        let provider = Always { answer, asked: asked.clone() };
        ModelSource::Setup(ModelSetup::new(Box::new(provider), "test-model"))
    });
    (crate::build(contract, &folder, store, model), asked)
}

fn request(turn: &str, entries: Value, acts: Value, answers: Value) -> String {
    json!({"conversation": "c1", "turn": turn, "actor": "kim", "at": "2026-11-29T15:00:00Z",
        "time_zone": "UTC", "locale": "en-US", "entries": entries, "acts": acts, "answers": answers})
    .to_string()
}

fn decided(engine: &mut Engine<SqliteStore>, body: &str) -> TurnResponse {
    match engine.turn(body).unwrap() {
        TurnResult::Decided { response, .. } => response,
        other => panic!("not decided: {other:?}"),
    }
}

/// The first act's verdict, first reason code and its field.
fn first(response: &TurnResponse) -> (Verdict, String, String) {
    let act = &response.acts[0];
    let reason = act.reasons.first();
    (
        act.verdict,
        reason.map_or(String::new(), |r| r.code.as_str().to_owned()),
        reason.and_then(|r| r.field.clone()).unwrap_or_default(),
    )
}

/// Three entries: the name is in the first, the request to use it in the last.
fn conversation() -> Value {
    json!([
        {"kind": "user", "text": "My new name is Kim Lee."},
        {"kind": "agent", "text": "Thanks. What would you like to do with it, Dana Reyes?"},
        {"kind": "user", "text": "Please change my name to that."}
    ])
}

/// The pointer to `word` (a word of entry `entry`'s text), built from the numbered rendering
/// `warrant render` prints, as an integrator builds it.
fn pointer_from_render(entries: &Value, entry: usize, words: &[&str]) -> Value {
    let text = entries[entry]["text"].as_str().unwrap();
    let rendering: Value = serde_json::from_str(&warrant_core::report::render_json(text)).unwrap();
    let number = |word: &str| {
        rendering["words"].as_array().unwrap().iter().find(|w| w["word"] == word).map(|w| w["n"].clone()).unwrap()
    };
    let (from, to) = (number(words[0]), number(words[words.len() - 1]));
    json!({"entry": entry, "ptr": [from, to], "copy": words.join(" ")})
}

#[test]
fn a_pointer_can_point_into_an_earlier_user_entry() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, asked) = engine(dir.path(), Some(r#"{"answer":"yes"}"#));
    let entries = conversation();
    let name = pointer_from_render(&entries, 0, &["Kim", "Lee"]);
    assert_eq!(name["ptr"], json!([5, 6]), "{name}");
    let held =
        decided(&mut engine, &request("t1", entries, json!([{"op": "rename", "args": {"name": name}}]), json!([])));
    assert_eq!(first(&held).0, Verdict::Hold, "{held:?}");
    // `value_stated` judged the words against the entry they were pointed out of.
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(questions[0].contains("[5]Kim [6]Lee"), "{}", questions[0]);
    assert!(!questions[0].contains("change my name"), "{}", questions[0]);

    // Confirmed a turn later, whose only entry is "yes": the same words, kept with the
    // interaction, are checked and written.
    let interaction = held.interactions[0].id.clone();
    let answers = json!([{"interaction": interaction, "option": "confirm"}]);
    let confirmed = decided(&mut engine, &request("t2", json!([{"kind": "user", "text": "yes"}]), json!([]), answers));
    assert_eq!(first(&confirmed).0, Verdict::Commit, "{confirmed:?}");
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["name"], "Kim Lee");
    assert_eq!(confirmed.effects[0].args["name"], "Kim Lee");

    // Each turn is decided again from its record alone, to the same response.
    let replayed = engine.replay().unwrap();
    assert_eq!((replayed.turns, replayed.identical), (2, 2), "{:?}", replayed.changes);
}

#[test]
fn a_pointer_into_an_entry_that_is_not_the_users_is_refused_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, asked) = engine(dir.path(), Some(r#"{"answer":"yes"}"#));
    // Entry 1 is the agent's: "Dana Reyes" there are not the user's words.
    for (turn, entry) in [("t1", 1), ("t2", 3)] {
        let name = json!({"entry": entry, "ptr": [1, 1]});
        let body = request(turn, conversation(), json!([{"op": "rename", "args": {"name": name}}]), json!([]));
        let response = decided(&mut engine, &body);
        let expected = (Verdict::Refuse, "pointer_entry_invalid".to_owned(), "args.name.entry".to_owned());
        assert_eq!(first(&response), expected, "entry {entry}: {response:?}");
    }
    assert!(asked.lock().unwrap().is_empty(), "nothing refused reaches a model");
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["name"], "Kim");
}

fn note(engine: &mut Engine<SqliteStore>, turn: &str, args: Value) -> TurnResponse {
    let entries = json!([{"kind": "user", "text": "Leave a note for the courier."}]);
    decided(engine, &request(turn, entries, json!([{"op": "note", "args": args}]), json!([])))
}

#[test]
fn a_string_argument_is_not_the_users_words() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, asked) = engine(dir.path(), Some(r#"{"answer":"no"}"#));
    // Words the user never said commit: no pointer, no `value_stated` (whose "no" would block).
    let body = "Ring twice, the bell is broken";
    let committed = note(&mut engine, "t1", json!({"body": body, "topic": "delivery-notes", "tone": "warm"}));
    assert_eq!(first(&committed), (Verdict::Commit, String::new(), String::new()), "{committed:?}");
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["note"], body);
    assert!(asked.lock().unwrap().is_empty(), "a model was asked: {:?}", asked.lock().unwrap());

    // Checked by its schema alone, each failure refused with its code.
    let refused = |code: &str, field: &str| (Verdict::Refuse, code.to_owned(), field.to_owned());
    let cases = [
        (json!({"body": {"ptr": [1, 3]}}), refused("wrong_argument_type", "args.body")),
        (json!({"body": "x".repeat(41)}), refused("string_too_long", "args.body")),
        (json!({"body": "é".repeat(40)}), (Verdict::Commit, String::new(), String::new())),
        (json!({"body": "Ring", "topic": "Delivery notes"}), refused("pattern_mismatch", "args.topic")),
        (json!({"body": "Ring", "topic": "notes-"}), refused("pattern_mismatch", "args.topic")),
        (json!({"body": "Ring", "tone": "cold"}), refused("not_in_closed_set", "args.tone")),
        (json!({"body": "my password is 1234"}), refused("forbidden_by_policy", "")),
    ];
    for (i, (args, expected)) in cases.into_iter().enumerate() {
        let response = note(&mut engine, &format!("t{}", i + 2), args.clone());
        assert_eq!(first(&response), expected, "{args}: {response:?}");
    }
    let forbidden = note(&mut engine, "t9", json!({"body": "the password"}));
    assert_eq!(forbidden.acts[0].reasons[0].policies, ["no_notes_about_passwords"]);
    assert!(asked.lock().unwrap().is_empty());
}

fn close(engine: &mut Engine<SqliteStore>, turn: &str, reason: Value) -> TurnResponse {
    let entries = json!([
        {"kind": "user", "text": "I am moving to Lisbon next month."},
        {"kind": "agent", "text": "Is it too expensive for you?"},
        {"kind": "user", "text": "Close my account, please."}
    ]);
    decided(engine, &request(turn, entries, json!([{"op": "close_account", "args": {"reason": reason}}]), json!([])))
}

#[test]
fn an_enum_the_user_must_have_said_carries_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let said = json!({"value": "moving_away", "entry": 0, "ptr": [3, 7], "copy": "moving to Lisbon"});
    let (mut engine, asked) = engine(dir.path(), Some(r#"{"answer":"yes"}"#));
    let committed = close(&mut engine, "t1", said.clone());
    assert_eq!(first(&committed), (Verdict::Commit, String::new(), String::new()), "{committed:?}");
    assert_eq!(committed.effects[0].args["reason"], "moving_away", "policy and effects see the id alone");
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["closing_reason"], "moving_away");
    // `value_stated` was asked whether those words of entry 0 give that id.
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    for part in ["[3]moving [4]to [5]Lisbon", r#""value":"moving_away""#, r#""from":3,"to":5"#] {
        assert!(questions[0].contains(part), "{part}: {}", questions[0]);
    }

    // The agent's words are no evidence; an id outside the set, with words or without, is refused.
    let refused = |code: &str, field: &str| (Verdict::Refuse, code.to_owned(), field.to_owned());
    let agent = json!({"value": "too_expensive", "entry": 1, "ptr": [4, 5]});
    assert_eq!(first(&close(&mut engine, "t2", agent)), refused("pointer_entry_invalid", "args.reason.entry"));
    let unknown = json!({"value": "bored", "entry": 0, "ptr": [3, 3]});
    assert_eq!(first(&close(&mut engine, "t3", unknown)), refused("not_in_closed_set", "args.reason"));
    assert_eq!(first(&close(&mut engine, "t4", json!("bored"))), refused("not_in_closed_set", "args.reason"));
    assert_eq!(asked.lock().unwrap().len(), 1, "nothing refused reaches a model");

    // A bare id is located in the latest user entry like a plain text value, then judged.
    let entries = json!([{"kind": "user", "text": "I am moving to Lisbon next month."}]);
    let acts = json!([{"op": "close_account", "args": {"reason": "moving_away"}}]);
    let located = decided(&mut engine, &request("t5", entries, acts, json!([])));
    assert_eq!(first(&located), (Verdict::Commit, String::new(), String::new()), "{located:?}");
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 3, "a locate question, then a value_stated one: {questions:?}");
    assert!(questions[1].contains(r#""proposed_value":"moving_away""#), "{}", questions[1]);
    assert!(questions[2].contains(r#""from":3,"to":5"#), "{}", questions[2]);

    // Without a model the evidence cannot be judged, and a bare id cannot be located: asked.
    let bare = tempfile::tempdir().unwrap();
    let (mut unjudged, _) = self::engine(bare.path(), None);
    for (turn, reason, code) in [("t1", said, "check_unfinished"), ("t2", json!("moving_away"), "check_unfinished")] {
        let response = close(&mut unjudged, turn, reason.clone());
        assert_eq!(first(&response), (Verdict::Ask, code.to_owned(), "args.reason".to_owned()), "{reason}");
    }
    assert_eq!(unjudged.record("customer", "kim").unwrap().unwrap().value.get("closing_reason"), None);
}

#[test]
fn an_enum_the_user_did_not_say_is_asked_about() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, _) = engine(dir.path(), Some(r#"{"answer":"no"}"#));
    // The model says the words do not give the reason: the user is asked, nothing is written.
    let guessed = json!({"value": "too_expensive", "entry": 0, "ptr": [3, 7]});
    let response = close(&mut engine, "t1", guessed);
    assert_eq!(first(&response), (Verdict::Ask, "value_not_stated".to_owned(), "args.reason".to_owned()));
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value.get("closing_reason"), None);
}

#[test]
fn an_enum_s_evidence_in_an_earlier_entry_is_kept_until_it_is_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, asked) = engine(dir.path(), Some(r#"{"answer":"yes"}"#));
    let entries = json!([
        {"kind": "user", "text": "I am moving to Lisbon next month."},
        {"kind": "user", "text": "Pause my account, please."}
    ]);
    let reason = json!({"value": "moving_away", "entry": 0, "ptr": [3, 5]});
    let acts = json!([{"op": "pause_account", "args": {"reason": reason}}]);
    let held = decided(&mut engine, &request("t1", entries, acts, json!([])));
    assert_eq!(first(&held).0, Verdict::Hold, "{held:?}");
    let answers = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    let confirmed = decided(&mut engine, &request("t2", json!([{"kind": "user", "text": "ok"}]), json!([]), answers));
    assert_eq!(first(&confirmed).0, Verdict::Commit, "{confirmed:?}");
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["pause_reason"], "moving_away");
    // Both turns judged the words of the entry they came from.
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(questions.iter().all(|q| q.contains("[3]moving [4]to [5]Lisbon")), "{questions:?}");
    let replayed = engine.replay().unwrap();
    assert_eq!((replayed.turns, replayed.identical), (2, 2), "{:?}", replayed.changes);
}
