//! `locate` and `uncovered_request` in the turn, through the engine, the OpenAI-compatible
//! provider over a real socket and the cassette mechanism: a plain value is located by a
//! model, sliced and checked by code, and checked again by `value_stated`; a request no act
//! covers takes the turn's acts away; every answer that is not a pass, and every failure, can
//! only take away; and a replay decides the same from the record, with no provider.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use warrant_core::turn::Verdict;
use warrant_engine::{Engine, ModelSetup, ModelSource, TurnResult, load_contract};
use warrant_model::{RecordedProvider, Recorder};

use crate::endpoint::{Seen, live};
use warrant_store::SqliteStore;

/// The rename example with the turn-level check on.
fn contract_folder(dir: &Path) -> PathBuf {
    contract_folder_with(dir, "")
}

/// The rename example with the turn-level check on and `more` after its `[model]` section.
fn contract_folder_with(dir: &Path, more: &str) -> PathBuf {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rename");
    let folder = dir.join("contract");
    std::fs::create_dir_all(folder.join("data")).unwrap();
    std::fs::copy(example.join("policies.cedar"), folder.join("policies.cedar")).unwrap();
    std::fs::copy(example.join("data/customers.json"), folder.join("data/customers.json")).unwrap();
    let text = std::fs::read_to_string(example.join("contract.toml")).unwrap();
    std::fs::write(folder.join("contract.toml"), format!("{text}\n[model]\nchecks = [\"uncovered_request\"]\n{more}"))
        .unwrap();
    folder
}

/// What the endpoint answers for each task, as the model's JSON text.
#[derive(Clone, Copy)]
struct Answers {
    locate: &'static str,
    value_stated: &'static str,
    uncovered_request: &'static str,
}

const COVERED: Answers = Answers {
    locate: r#"{"found":true,"from":6,"to":7,"copy":"Kim Lee"}"#,
    value_stated: r#"{"answer":"yes"}"#,
    uncovered_request: r#"{"uncovered":"no"}"#,
};

/// The endpoint answering with `answers`.
fn endpoint(answers: Answers) -> String {
    crate::endpoint::endpoint(
        move |name| {
            match name {
                "locate" => answers.locate,
                "value_stated" => answers.value_stated,
                "uncovered_request" => answers.uncovered_request,
                other => panic!("no answer for {other:?}"),
            }
            .to_owned()
        },
        Seen::default(),
    )
}

fn engine(dir: &Path, store: &str, model: Option<ModelSetup>) -> Engine<SqliteStore> {
    let (contract, folder) = load_contract(&contract_folder(dir).join("contract.toml")).unwrap();
    let model = model.map_or(ModelSource::None, ModelSource::Setup);
    crate::build(contract, &folder, SqliteStore::open(&dir.join(store)).unwrap(), model)
}

fn request(message: &str, name: Value) -> String {
    json!({
        "conversation": "c1", "turn": "t1", "actor": "kim", "at": "2026-11-29T15:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": message}],
        "acts": [{"op": "rename", "args": {"name": name}}],
    })
    .to_string()
}

fn decide(engine: &mut Engine<SqliteStore>, request: &str) -> (Verdict, String, Value) {
    let result = engine.turn(request).unwrap();
    let TurnResult::Decided { response, .. } = &result else { panic!("rejected") };
    let act = &response.acts[0];
    (act.verdict, act.reasons.first().map_or(String::new(), |r| r.code.as_str().to_owned()), result.to_json())
}

fn name_of_kim(engine: &mut Engine<SqliteStore>) -> Value {
    engine.record("customer", "kim").unwrap().unwrap().value["name"].clone()
}

const MESSAGE: &str = "please change the name to Kim Lee";

/// Runs `request` live through a recorder, then again from the cassette alone in a fresh
/// store, then replays both stores with no provider; returns the live outcome.
fn live_recorded_replayed(dir: &Path, answers: Answers, request: &str) -> (Verdict, String, Value) {
    let cassette = dir.join("cassette.jsonl");
    let recorder = Recorder::new(live(endpoint(answers)), &cassette).unwrap();
    let mut first = engine(dir, "live.sqlite", Some(ModelSetup::new(Box::new(recorder), "m")));
    let outcome = decide(&mut first, request);

    let recorded = RecordedProvider::load(&cassette).unwrap();
    let mut again = engine(dir, "recorded.sqlite", Some(ModelSetup::new(Box::new(recorded), "m")));
    let from_cassette = decide(&mut again, request);
    assert_eq!(from_cassette.2.to_string(), outcome.2.to_string(), "the cassette answers what the endpoint did");

    for store in ["live.sqlite", "recorded.sqlite"] {
        let report = engine(dir, store, None).replay().unwrap();
        assert_eq!((report.turns, report.identical), (1, 1), "{store}: {report:?}");
    }
    outcome
}

#[test]
fn a_plain_value_is_located_sliced_by_code_checked_as_stated_and_replayed_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let (verdict, code, response) = live_recorded_replayed(dir.path(), COVERED, &request(MESSAGE, json!("Kim Lee")));
    assert_eq!((verdict, code.as_str()), (Verdict::Commit, ""), "{response}");
    assert_eq!(response["effects"][0]["args"]["name"], "Kim Lee", "code sliced the words");
    let mut stored = engine(dir.path(), "live.sqlite", None);
    assert_eq!(name_of_kim(&mut stored), "Kim Lee");
    let record = stored.turns(0, 10).unwrap()[0].replay.clone();
    let tasks: Vec<&str> = record["checks"].as_array().unwrap().iter().map(|c| c["task"].as_str().unwrap()).collect();
    assert_eq!(tasks, ["uncovered_request", "locate", "value_stated"]);
    let locate = &record["checks"][1]["id"];
    assert_eq!(
        record["answers"][locate.as_str().unwrap()],
        json!({"located": {"pointer": {"ptr": [6, 7], "copy": "Kim Lee"}}})
    );
    let calls: Vec<&str> =
        record["model_calls"].as_array().unwrap().iter().map(|c| c["task"].as_str().unwrap()).collect();
    assert_eq!(calls.len(), 3, "one call per check: {calls:?}");
}

#[test]
fn a_locate_answer_at_the_wrong_words_ends_in_a_question() {
    // Words that are in the message but are not the value: `value_stated` blocks them.
    let dir = tempfile::tempdir().unwrap();
    let wrong_words = Answers {
        locate: r#"{"found":true,"from":2,"to":4,"copy":"change the name"}"#,
        value_stated: r#"{"answer":"no"}"#,
        ..COVERED
    };
    let (verdict, code, _) = live_recorded_replayed(dir.path(), wrong_words, &request(MESSAGE, json!("Kim Lee")));
    assert_eq!((verdict, code.as_str()), (Verdict::Ask, "value_not_stated"));
    assert_eq!(name_of_kim(&mut engine(dir.path(), "live.sqlite", None)), "Kim");

    // A pointer outside the message, or a copy its words do not hold: never sliced, asked.
    for locate in
        [r#"{"found":true,"from":6,"to":9,"copy":"Kim Lee"}"#, r#"{"found":true,"from":1,"to":2,"copy":"Kim Lee"}"#]
    {
        let dir = tempfile::tempdir().unwrap();
        let outside = Answers { locate, ..COVERED };
        let (verdict, code, _) = live_recorded_replayed(dir.path(), outside, &request(MESSAGE, json!("Kim Lee")));
        assert_eq!((verdict, code.as_str()), (Verdict::Ask, "check_answer_invalid"), "{locate}");
        assert_eq!(name_of_kim(&mut engine(dir.path(), "live.sqlite", None)), "Kim");
    }

    // Not found: the user is asked for the value.
    let dir = tempfile::tempdir().unwrap();
    let absent = Answers { locate: r#"{"found":false,"from":0,"to":0,"copy":""}"#, ..COVERED };
    let (verdict, code, _) =
        live_recorded_replayed(dir.path(), absent, &request("the name needs changing", json!("needs changing")));
    assert_eq!((verdict, code.as_str()), (Verdict::Ask, "value_not_located"));
}

#[test]
fn an_uncovered_request_asks_instead_of_committing_and_a_pass_changes_nothing() {
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    let message = "please change the name to Kim Lee and cancel my order";
    let dir = tempfile::tempdir().unwrap();
    let blocked = Answers { uncovered_request: r#"{"uncovered":"yes"}"#, ..COVERED };
    let (verdict, code, response) = live_recorded_replayed(dir.path(), blocked, &request(message, pointer.clone()));
    assert_eq!((verdict, code.as_str()), (Verdict::Ask, "request_uncovered"));
    assert!(response["effects"].as_array().unwrap().is_empty());
    assert_eq!(name_of_kim(&mut engine(dir.path(), "live.sqlite", None)), "Kim");

    let dir = tempfile::tempdir().unwrap();
    let unsure = Answers { uncovered_request: r#"{"uncovered":"unsure"}"#, ..COVERED };
    assert_eq!(live_recorded_replayed(dir.path(), unsure, &request(message, pointer.clone())).1, "check_unsure");

    let dir = tempfile::tempdir().unwrap();
    let malformed = Answers { uncovered_request: r#"{"uncovered": maybe"#, ..COVERED };
    assert_eq!(
        live_recorded_replayed(dir.path(), malformed, &request(message, pointer.clone())).1,
        "check_answer_invalid"
    );

    let dir = tempfile::tempdir().unwrap();
    let (verdict, code, _) = live_recorded_replayed(dir.path(), COVERED, &request(message, pointer));
    assert_eq!((verdict, code.as_str()), (Verdict::Commit, ""));
}

#[test]
fn an_unreachable_provider_fails_the_turn_level_check_and_every_act_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = live(format!("http://127.0.0.1:{port}/v1"));
    let mut engine = engine(dir.path(), "live.sqlite", Some(ModelSetup::new(Box::new(down), "m")));
    let (verdict, code, _) = decide(&mut engine, &request(MESSAGE, json!({"ptr": [6, 7], "copy": "Kim Lee"})));
    assert_eq!((verdict, code.as_str()), (Verdict::Ask, "check_provider_failed"));
    assert_eq!(name_of_kim(&mut engine), "Kim");
}

#[test]
fn a_task_runs_under_the_limits_the_contract_gives_it() {
    let malformed = Answers { value_stated: r#"{"answer": perhaps"#, ..COVERED };
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    // Its own limits allow a repair round; the schema error survives it.
    let dir = tempfile::tempdir().unwrap();
    let mut own = engine(dir.path(), "own.sqlite", Some(ModelSetup::new(Box::new(live(endpoint(malformed))), "m")));
    assert_eq!(decide(&mut own, &request(MESSAGE, pointer.clone())).1, "check_answer_invalid");
    // One call, as the contract says: no repair round is left, and the check fails on budget.
    let dir = tempfile::tempdir().unwrap();
    let folder = contract_folder_with(dir.path(), "\n[model.tasks.value_stated]\ncalls = 1\n");
    let (contract, folder) = load_contract(&folder.join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.path().join("tight.sqlite")).unwrap();
    let setup = ModelSetup::new(Box::new(live(endpoint(malformed))), "m");
    let mut tight = crate::build(contract, &folder, store, ModelSource::Setup(setup));
    assert_eq!(decide(&mut tight, &request(MESSAGE, pointer)).1, "check_budget_exhausted");
}
