//! Step 4 through the engine: a turn's semantic checks run through a provider, their answers
//! can only take away, every failure ends in a question with its reason on the record, and a
//! replay decides again from the recorded answers without any model.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use warrant_core::turn::Verdict;
use warrant_engine::{Engine, ModelSetup, ModelSource, TurnResult, load_contract};
use warrant_model::openai::{EndpointConfig, OpenAiProvider};
use warrant_model::{BudgetLimits, ChatAnswer, ChatRequest, Provider, ProviderError};
use warrant_store::SqliteStore;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rename")
}

/// Answers every request the same way.
struct Always(Result<&'static str, ProviderError>);

impl Provider for Always {
    fn complete(&self, _: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        self.0.clone().map(|c| ChatAnswer { content: c.to_owned(), prompt_tokens: 30, completion_tokens: 4 })
    }
}

fn engine(dir: &tempfile::TempDir, model: Option<ModelSetup>) -> Engine<SqliteStore> {
    let (contract, folder) = load_contract(&example().join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    crate::build(contract, &folder, store, model.map_or(ModelSource::None, ModelSource::Setup))
}

fn setup(provider: impl Provider + 'static) -> ModelSetup {
    ModelSetup::new(Box::new(provider), "test-model")
}

fn turn(engine: &mut Engine<SqliteStore>, name: &str) -> (Verdict, String) {
    let text = std::fs::read_to_string(example().join("turns").join(name)).unwrap();
    let TurnResult::Decided { response, .. } = engine.turn(&text).unwrap() else { panic!("rejected") };
    let act = &response.acts[0];
    (act.verdict, act.reasons.first().map_or(String::new(), |r| r.code.as_str().to_owned()))
}

fn replay_record(engine: &mut Engine<SqliteStore>) -> Value {
    engine.turns(0, 10).unwrap().last().unwrap().replay.clone()
}

#[test]
fn the_carrier_words_become_a_question_and_the_model_call_is_on_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(&dir, Some(setup(Always(Ok(r#"{"answer":"no"}"#)))));
    assert_eq!(turn(&mut engine, "carrier.json"), (Verdict::Ask, "value_not_stated".to_owned()));
    let record = replay_record(&mut engine);
    let call = &record["model_calls"][0];
    assert_eq!(call["task"], "value_stated");
    assert_eq!(call["outcome"], "block");
    assert_eq!(call["result"]["Ok"]["content"], r#"{"answer":"no"}"#);
    assert_eq!(call["result"]["Ok"]["prompt_tokens"], 30);
    assert!(call["latency_ms"].is_u64() && call["prompt_version"].as_str().unwrap().len() == 12);
    assert!(call["request"]["messages"][1]["content"].as_str().unwrap().contains("[3]needs [4]changing"));
    let check = record["checks"][0]["id"].as_str().unwrap();
    assert_eq!(record["answers"][check]["verdict"]["verdict"], "block");
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["name"], "Kim", "nothing written");
}

#[test]
fn a_passing_check_lets_structure_and_policy_decide() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(&dir, Some(setup(Always(Ok(r#"{"answer":"yes"}"#)))));
    assert_eq!(turn(&mut engine, "stated.json"), (Verdict::Commit, String::new()));
    assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["name"], "Kim Lee");
}

#[test]
fn every_failure_of_a_check_ends_in_a_question_with_its_reason() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let unreachable = OpenAiProvider::new(EndpointConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "m".into(),
        key: None,
        connect_timeout: Duration::from_secs(1),
        format: Default::default(),
    })
    .unwrap();
    let mut no_budget = setup(Always(Ok(r#"{"answer":"yes"}"#)));
    no_budget.limits = BudgetLimits { calls: 0, ..BudgetLimits::default() };
    let cases: Vec<(Option<ModelSetup>, &str)> = vec![
        (Some(no_budget), "check_budget_exhausted"),
        (Some(setup(Always(Err(ProviderError::Timeout("no answer in 20 s".into()))))), "check_timeout"),
        (Some(setup(Always(Ok("{\"answer\": yes")))), "check_answer_invalid"),
        (Some(setup(unreachable)), "check_provider_failed"),
        (None, "check_unfinished"),
    ];
    for (model, code) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(&dir, model);
        // The value is one the user did state: only the failed check stands in the way.
        assert_eq!(turn(&mut engine, "stated.json"), (Verdict::Ask, code.to_owned()), "{code}");
        let stored = engine.turns(0, 10).unwrap();
        assert_eq!(stored[0].response["acts"][0]["reasons"][0]["code"], code, "the reason is on the record");
        assert!(stored[0].response["effects"].as_array().unwrap().is_empty());
        assert_eq!(engine.record("customer", "kim").unwrap().unwrap().value["name"], "Kim");
    }
}

#[test]
fn a_replay_uses_the_recorded_answers_and_needs_no_model() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut live = engine(&dir, Some(setup(Always(Ok(r#"{"answer":"no"}"#)))));
        assert_eq!(turn(&mut live, "carrier.json").0, Verdict::Ask);
    }
    {
        let mut live = engine(&dir, Some(setup(Always(Ok(r#"{"answer":"yes"}"#)))));
        assert_eq!(turn(&mut live, "stated.json").0, Verdict::Commit);
    }
    // No provider at all: were a model needed, the checks would fail and the verdicts change.
    let mut offline = engine(&dir, None);
    let report = offline.replay().unwrap();
    assert_eq!((report.turns, report.identical), (2, 2), "{report:?}");
    assert!(report.changes.is_empty());
    assert_eq!(offline.replay().unwrap(), report, "the same every time");
}

/// Holds each request until `expect` are in flight together (or a deadline passes), and keeps
/// the most it saw.
struct Gathering {
    expect: usize,
    state: std::sync::Mutex<(usize, usize)>,
    changed: std::sync::Condvar,
}

impl Provider for Gathering {
    fn complete(&self, _: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        state.1 = state.1.max(state.0);
        self.changed.notify_all();
        while state.1 < self.expect && std::time::Instant::now() < deadline {
            state = self.changed.wait_timeout(state, Duration::from_millis(50)).unwrap().0;
        }
        state.0 -= 1;
        Ok(ChatAnswer { content: r#"{"answer":"yes"}"#.into(), prompt_tokens: 1, completion_tokens: 1 })
    }
}

#[test]
fn the_checks_of_one_turn_are_in_flight_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let provider = std::sync::Arc::new(Gathering {
        expect: 2,
        state: std::sync::Mutex::new((0, 0)),
        changed: std::sync::Condvar::new(),
    });
    let mut engine = engine(&dir, Some(setup(provider.clone())));
    let request = serde_json::json!({
        "conversation": "c1", "turn": "t1", "actor": "kim", "at": "2026-11-29T15:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "my full name is Kim Lee"}],
        "acts": [{"op": "rename_full", "args": {"given": {"ptr": [5, 5], "copy": "Kim"}, "family": {"ptr": [6, 6], "copy": "Lee"}}}],
    });
    let TurnResult::Decided { response, .. } = engine.turn(&request.to_string()).unwrap() else { panic!("rejected") };
    assert_eq!(response.acts[0].verdict, Verdict::Commit, "{:?}", response.acts[0].reasons);
    assert_eq!(provider.state.lock().unwrap().1, 2, "both checks were in flight together");
    let record = replay_record(&mut engine);
    assert_eq!(record["model_calls"].as_array().unwrap().len(), 2);
}
