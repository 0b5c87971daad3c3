//! `warrant prompt`: a version becomes active only by a promotion that replays the recorded
//! corpus against a cassette; a regression refuses it, naming the cases, and either way the
//! decision is recorded.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use warrant_core::pointer::UAX29;
use warrant_model::corpus::{self, Case};
use warrant_model::tasks::{Task, ValueStated};
use warrant_model::{
    BudgetLimits, ChatAnswer, ChatRequest, PromptVersion, Prompts, Provider, ProviderError, Recorder, Runner,
    TurnBudget,
};

use crate::{root, stdout, warrant};

/// Answers `value_stated` by a rule of the test's own, standing in for a model.
struct Rule(fn(&str) -> &'static str, Mutex<usize>);

impl Provider for Rule {
    fn complete(&self, request: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        *self.1.lock().unwrap() += 1;
        let question = &request.messages[1].content;
        Ok(ChatAnswer {
            content: format!(r#"{{"answer":"{}"}}"#, (self.0)(question)),
            prompt_tokens: 1,
            completion_tokens: 1,
        })
    }
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("corpus/model/value_stated.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Records the corpus's requests for `prompt` with answers by `rule`.
fn record(cassette: &Path, prompt: &str, rule: fn(&str) -> &'static str) {
    let recorder = Recorder::new(Rule(rule, Mutex::new(0)), cassette).unwrap();
    let mut prompts = Prompts::default();
    prompts.set(PromptVersion::new(ValueStated::NAME, prompt, &ValueStated::schema()));
    for case in cases() {
        let budget = TurnBudget::new(BudgetLimits::default(), Instant::now());
        let runner = Runner { provider: &recorder, model: "default", budget: &budget, prompts: &prompts };
        corpus::run_case(&runner, ValueStated::NAME, &case, UAX29).unwrap();
    }
}

fn right(question: &str) -> &'static str {
    if question.contains("needs changing") || question.contains("can you fix") { "no" } else { "yes" }
}

fn always_yes(_: &str) -> &'static str {
    "yes"
}

#[test]
fn a_prompt_is_promoted_only_when_no_recorded_case_regresses() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.sqlite").display());
    let cases_file = root().join("corpus/model/value_stated.jsonl");
    let cases_arg = cases_file.to_str().unwrap();

    let good_prompt = dir.path().join("good.md");
    std::fs::write(&good_prompt, "Say whether the user gave the value. Reply {\"answer\": \"yes\"|\"no\"|\"unsure\"}.")
        .unwrap();
    let added = warrant(&["prompt", "add", "--store", &store, "value_stated", good_prompt.to_str().unwrap()], "");
    assert!(added.status.success(), "{added:?}");
    let good = stdout(&added).trim().to_owned();
    assert_eq!(
        good,
        PromptVersion::new("value_stated", &std::fs::read_to_string(&good_prompt).unwrap(), &ValueStated::schema())
            .version
    );

    let good_cassette = dir.path().join("good.jsonl");
    record(&good_cassette, &std::fs::read_to_string(&good_prompt).unwrap(), right);
    let promoted = warrant(
        &[
            "prompt",
            "promote",
            "--store",
            &store,
            "--cases",
            cases_arg,
            "--cassette",
            good_cassette.to_str().unwrap(),
            "value_stated",
            &good,
        ],
        "",
    );
    assert!(promoted.status.success(), "{}", stdout(&promoted));
    let summary: Value = serde_json::from_str(stdout(&promoted).lines().last().unwrap()).unwrap();
    assert_eq!((summary["accepted"].clone(), summary["regressions"].clone()), (Value::Bool(true), Value::from(0)));

    // A candidate that answers yes to everything lets the carrier words through: refused.
    let lax_prompt = dir.path().join("lax.md");
    std::fs::write(&lax_prompt, "Always answer {\"answer\": \"yes\"}.").unwrap();
    let lax = stdout(&warrant(&["prompt", "add", "--store", &store, "value_stated", lax_prompt.to_str().unwrap()], ""))
        .trim()
        .to_owned();
    let lax_cassette = dir.path().join("lax.jsonl");
    record(&lax_cassette, &std::fs::read_to_string(&lax_prompt).unwrap(), always_yes);
    let refused = warrant(
        &[
            "prompt",
            "promote",
            "--store",
            &store,
            "--cases",
            cases_arg,
            "--cassette",
            lax_cassette.to_str().unwrap(),
            "value_stated",
            &lax,
        ],
        "",
    );
    assert_eq!(refused.status.code(), Some(1));
    let out = stdout(&refused);
    assert!(
        out.contains("regression: case `carrier_words_of_the_field_are_not_a_name` expects block and got pass"),
        "{out}"
    );
    assert!(out.contains("a_request_is_not_a_name"), "{out}");

    // Without recordings of the candidate, every case fails: refused, not guessed.
    let unrecorded = warrant(
        &[
            "prompt",
            "promote",
            "--store",
            &store,
            "--cases",
            cases_arg,
            "--cassette",
            good_cassette.to_str().unwrap(),
            "value_stated",
            &lax,
        ],
        "",
    );
    assert_eq!(unrecorded.status.code(), Some(1));
    assert!(stdout(&unrecorded).contains("no recording of request"));

    // Both decisions are on the record; the good version stays active.
    let listed = stdout(&warrant(&["prompt", "list", "--store", &store, "value_stated"], ""));
    let lines: Vec<Value> = listed.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["active"], good.as_str());
    let decided: Vec<(String, bool)> = lines[1..]
        .iter()
        .map(|l| (l["version"].as_str().unwrap().to_owned(), l["accepted"].as_bool().unwrap()))
        .collect();
    assert_eq!(decided, [(good.clone(), true), (lax.clone(), false), (lax, false)]);
}

#[test]
fn a_turn_answers_its_checks_from_a_cassette_and_replays_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.sqlite").display());
    let contract = root().join("examples/rename/contract.toml");
    // Record the carrier turn's check with the built-in prompt, answered as a model should.
    let cassette = dir.path().join("turn.jsonl");
    {
        let recorder = Recorder::new(Rule(right, Mutex::new(0)), &cassette).unwrap();
        let budget = TurnBudget::new(BudgetLimits::default(), Instant::now());
        let prompts = Prompts::default();
        let runner = Runner { provider: &recorder, model: "default", budget: &budget, prompts: &prompts };
        corpus::run_case(&runner, "value_stated", &cases()[0], UAX29).unwrap();
    }
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args([
            "turn",
            "--contract",
            contract.to_str().unwrap(),
            "--store",
            &store,
            "--request",
            "examples/rename/turns/carrier.json",
        ])
        .current_dir(root())
        .env("WARRANT_MODEL_CASSETTE", &cassette)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let response: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(response["acts"][0]["verdict"], "ask");
    assert_eq!(response["acts"][0]["reasons"][0]["code"], "value_not_stated");
    // Replay with no model configured at all.
    let replayed = warrant(&["replay", "--contract", contract.to_str().unwrap(), "--store", &store], "");
    assert!(replayed.status.success(), "{}", stdout(&replayed));
}

/// An OpenAI-compatible endpoint on 127.0.0.1 that answers every request with `content`.
fn endpoint(content: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let reply = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}).to_string();
            let mut stream = stream;
            write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}", reply.len()).unwrap();
        }
    });
    base
}

#[test]
fn a_cassette_recorded_from_a_live_endpoint_decides_the_promotion() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.sqlite").display());
    let cases_file = root().join("corpus/model/value_stated.jsonl");
    let prompt = dir.path().join("p.md");
    std::fs::write(&prompt, "Answer no.").unwrap();
    let version = stdout(&warrant(&["prompt", "add", "--store", &store, "value_stated", prompt.to_str().unwrap()], ""))
        .trim()
        .to_owned();
    let cassette = dir.path().join("live.jsonl");
    let recorded = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args([
            "prompt",
            "record",
            "--store",
            &store,
            "--cases",
            cases_file.to_str().unwrap(),
            "--cassette",
            cassette.to_str().unwrap(),
            "value_stated",
            &version,
        ])
        .env("WARRANT_MODEL_BASE_URL", endpoint(r#"{"answer":"no"}"#))
        .env_remove("WARRANT_MODEL")
        .output()
        .unwrap();
    assert!(recorded.status.success(), "{recorded:?}");
    assert_eq!(stdout(&recorded).lines().count(), cases().len());
    // An endpoint that says no to everything blocks the names the users gave: refused.
    let promoted = warrant(
        &[
            "prompt",
            "promote",
            "--store",
            &store,
            "--cases",
            cases_file.to_str().unwrap(),
            "--cassette",
            cassette.to_str().unwrap(),
            "value_stated",
            &version,
        ],
        "",
    );
    assert_eq!(promoted.status.code(), Some(1));
    assert!(
        stdout(&promoted).contains("regression: case `the_name_the_user_gave_is_stated` expects pass and got block")
    );
}

#[test]
fn the_turn_budget_comes_from_the_environment_and_an_empty_one_asks() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.sqlite").display());
    let contract = root().join("examples/rename/contract.toml");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args([
            "turn",
            "--contract",
            contract.to_str().unwrap(),
            "--store",
            &store,
            "--request",
            "examples/rename/turns/stated.json",
        ])
        .current_dir(root())
        .env("WARRANT_MODEL_BASE_URL", endpoint(r#"{"answer":"yes"}"#))
        .env("WARRANT_MODEL_CALLS", "0")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let response: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(response["acts"][0]["verdict"], "ask");
    assert_eq!(response["acts"][0]["reasons"][0]["code"], "check_budget_exhausted");
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args([
            "turn",
            "--contract",
            contract.to_str().unwrap(),
            "--store",
            &store,
            "--request",
            "examples/rename/turns/stated.json",
        ])
        .current_dir(root())
        .env("WARRANT_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
        .env("WARRANT_MODEL_CALLS", "many")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
