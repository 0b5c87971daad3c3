//! Step 4 in the core: the semantic checks an act needs are named once it passes structure,
//! and their answers, supplied as inputs, can only take away (seed 004).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::check::{CheckAnswer, CheckAnswers, CheckFailure, CheckVerdict};
use warrant_core::contract::ContractFiles;
use warrant_core::records::Record;
use warrant_core::request;
use warrant_core::turn::{self, Decision, FactError, Facts, Interaction, Verdict};

const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "customer"

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"

[policies]
files = ["policy.cedar"]

[[operation]]
name = "rename"
args.name = { kind = "text", check = ["value_stated"] }

[[operation.effect]]
set = "actor.name"
arg = "name"
"#;

const POLICY: &str = r#"
permit (principal, action, resource);
@id("no_admin_names")
forbid (principal, action == Action::"rename", resource) when { context.args.name == "admin" };
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "policy.cedar" { Ok(POLICY.into()) } else { Err(format!("no `{path}`")) }
    }
}

struct Memory(BTreeMap<(String, String), Record>);
impl Facts for Memory {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.0.get(&(table.to_owned(), key.to_owned())).cloned())
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
}

fn decide(message: &str, name: Value, answers: &CheckAnswers) -> Decision {
    decide_in(CONTRACT, message, name, answers)
}

fn first(decision: &Decision) -> (Verdict, String) {
    let act = &decision.response.acts[0];
    (act.verdict, act.reasons.first().map_or(String::new(), |r| r.code.as_str().to_owned()))
}

fn answering(decision: &Decision, answer: CheckAnswer) -> CheckAnswers {
    decision.checks.iter().map(|c| (c.id.clone(), answer.clone())).collect()
}

const CARRIER: &str = "the name needs changing";

fn carrier_pointer() -> Value {
    json!({"ptr": [3, 4], "copy": "needs changing"})
}

#[test]
fn the_carrier_words_of_the_name_never_become_the_name() {
    // Structure admits the pointer: "needs changing" is words 3 to 4 of the message.
    let unchecked = decide(CARRIER, carrier_pointer(), &CheckAnswers::new());
    assert_eq!(first(&unchecked), (Verdict::Ask, "check_unfinished".to_owned()), "no answer, no commit");
    assert_eq!(unchecked.checks.len(), 1);
    let check = &unchecked.checks[0];
    assert_eq!(
        (check.task.as_str(), check.arg.as_str(), check.value.as_str(), check.ptr),
        ("value_stated", "name", "needs changing", [3, 4])
    );
    // The model task blocks it: the act becomes a question, with the reason on the record.
    let blocked = decide(
        CARRIER,
        carrier_pointer(),
        &answering(&unchecked, CheckAnswer::Verdict { verdict: CheckVerdict::Block }),
    );
    assert_eq!(first(&blocked), (Verdict::Ask, "value_not_stated".to_owned()));
    assert_eq!(blocked.response.acts[0].reasons[0].field.as_deref(), Some("args.name"));
    assert!(blocked.effects.is_empty() && blocked.writes.is_empty());
}

#[test]
fn every_answer_but_a_pass_turns_the_act_into_a_question() {
    let message = "please change the name to Kim Lee";
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    let unchecked = decide(message, pointer.clone(), &CheckAnswers::new());
    let cases = [
        (CheckAnswer::Verdict { verdict: CheckVerdict::Repair }, "check_repair"),
        (CheckAnswer::Verdict { verdict: CheckVerdict::Ask }, "check_unsure"),
        (CheckAnswer::Failed { failure: CheckFailure::Budget, detail: "out".into() }, "check_budget_exhausted"),
        (CheckAnswer::Failed { failure: CheckFailure::Timeout, detail: "slow".into() }, "check_timeout"),
        (CheckAnswer::Failed { failure: CheckFailure::Provider, detail: "down".into() }, "check_provider_failed"),
        (CheckAnswer::Failed { failure: CheckFailure::InvalidAnswer, detail: "bad".into() }, "check_answer_invalid"),
    ];
    for (answer, code) in cases {
        let decision = decide(message, pointer.clone(), &answering(&unchecked, answer));
        assert_eq!(first(&decision), (Verdict::Ask, code.to_owned()));
        assert!(decision.effects.is_empty());
    }
    let passed = decide(message, pointer, &answering(&unchecked, CheckAnswer::Verdict { verdict: CheckVerdict::Pass }));
    assert_eq!(first(&passed), (Verdict::Commit, String::new()));
    assert_eq!(passed.writes[0].value["name"], json!("Kim Lee"), "code sliced the words");
}

#[test]
fn a_passing_answer_cannot_make_an_act_commit_that_code_refused() {
    // Whatever id it is filed under, a pass does not reach an act that structure or policy
    // refused: structure refuses before any check is named, policy decides after the checks.
    let pass = CheckAnswer::Verdict { verdict: CheckVerdict::Pass };
    let out_of_range = decide(CARRIER, json!({"ptr": [3, 9]}), &CheckAnswers::new());
    assert!(out_of_range.checks.is_empty(), "no check for an act structure refused");
    assert_eq!(first(&out_of_range), (Verdict::Ask, "pointer_invalid".to_owned()));

    let admin = "my name should be admin";
    let pointer = json!({"ptr": [5, 5], "copy": "admin"});
    let unchecked = decide(admin, pointer.clone(), &CheckAnswers::new());
    let decision = decide(admin, pointer, &answering(&unchecked, pass.clone()));
    assert_eq!(first(&decision), (Verdict::Refuse, "forbidden_by_policy".to_owned()));

    // An answer filed under another question's id is no answer to this one.
    let other = decide("please change the name to Kim Lee", json!({"ptr": [6, 7]}), &CheckAnswers::new());
    let stolen = decide(CARRIER, carrier_pointer(), &answering(&other, pass));
    assert_eq!(first(&stolen), (Verdict::Ask, "check_unfinished".to_owned()));
}

#[test]
fn a_check_on_an_argument_that_is_not_text_does_not_load() {
    let bad = CONTRACT.replace(
        r#"args.name = { kind = "text", check = ["value_stated"] }"#,
        r#"args.name = { kind = "text", check = ["looks_fine"] }"#,
    );
    let error = Contract::load("rename.toml", &bad, &Files).unwrap_err().to_string();
    assert!(error.contains("unknown check `looks_fine`"), "{error}");
}

fn located(from: u32, to: u32, copy: &str) -> CheckAnswer {
    let pointer = serde_json::from_value(json!({"ptr": [from, to], "copy": copy})).unwrap();
    CheckAnswer::Located { pointer }
}

/// Merges `more` answers into `answers`, filed under the ids of `decision`'s checks of `task`.
fn with_answer(mut answers: CheckAnswers, decision: &Decision, task: &str, answer: CheckAnswer) -> CheckAnswers {
    for check in decision.checks.iter().filter(|c| c.task == task) {
        answers.insert(check.id.clone(), answer.clone());
    }
    answers
}

#[test]
fn a_plain_value_is_located_then_sliced_by_code_then_checked_as_stated() {
    let message = "please change the name to Kim Lee";
    let first_round = decide(message, json!("Kim Lee"), &CheckAnswers::new());
    assert_eq!(first(&first_round), (Verdict::Ask, "check_unfinished".to_owned()));
    assert_eq!(first_round.checks.len(), 1, "{:?}", first_round.checks);
    let locate = &first_round.checks[0];
    assert_eq!((locate.task.as_str(), locate.value.as_str(), locate.ptr), ("locate", "Kim Lee", [0, 0]));

    // The pointer goes through structure as if the agent had sent it; `value_stated` is named
    // on the words code sliced, in the next round.
    let answers = with_answer(CheckAnswers::new(), &first_round, "locate", located(6, 7, "Kim Lee"));
    let second_round = decide(message, json!("Kim Lee"), &answers);
    assert_eq!(first(&second_round), (Verdict::Ask, "check_unfinished".to_owned()), "located is not stated");
    let stated = second_round.checks.iter().find(|c| c.task == "value_stated").expect("value_stated named");
    assert_eq!((stated.value.as_str(), stated.ptr), ("Kim Lee", [6, 7]));

    let answers =
        with_answer(answers, &second_round, "value_stated", CheckAnswer::Verdict { verdict: CheckVerdict::Pass });
    let done = decide(message, json!("Kim Lee"), &answers);
    assert_eq!(first(&done), (Verdict::Commit, String::new()));
    assert_eq!(done.writes[0].value["name"], json!("Kim Lee"), "code sliced the words");
    assert_eq!(done.checks.iter().map(|c| c.task.as_str()).collect::<Vec<_>>(), ["locate", "value_stated"]);
}

#[test]
fn a_located_pointer_at_the_wrong_words_ends_in_a_question() {
    let message = "please change the name to Kim Lee";
    let unchecked = decide(message, json!("Kim Lee"), &CheckAnswers::new());
    let pass = CheckAnswer::Verdict { verdict: CheckVerdict::Pass };
    // Pointers that structure refuses: outside the message, a copy the words do not hold, a
    // copy that moves the pointer. No value is sliced, no `value_stated` is even asked.
    for bad in [located(6, 9, "Kim Lee"), located(1, 2, "Kim Lee"), located(3, 5, "Lee"), located(2, 1, "change")] {
        let answers = with_answer(CheckAnswers::new(), &unchecked, "locate", bad.clone());
        let decision = decide(message, json!("Kim Lee"), &answers);
        assert_eq!(first(&decision), (Verdict::Ask, "pointer_invalid".to_owned()), "{bad:?}");
        assert!(decision.checks.iter().all(|c| c.task == "locate"), "{bad:?}");
        // Even a pass filed for every question it could be cannot reach it.
        let all = decision.checks.iter().map(|c| (c.id.clone(), pass.clone())).chain(answers.clone()).collect();
        assert!(decide(message, json!("Kim Lee"), &all).effects.is_empty());
    }
    // Words that resolve but are not the value: `value_stated` blocks them.
    let answers = with_answer(CheckAnswers::new(), &unchecked, "locate", located(2, 4, "change the name"));
    let second = decide(message, json!("Kim Lee"), &answers);
    let answers = with_answer(answers, &second, "value_stated", CheckAnswer::Verdict { verdict: CheckVerdict::Block });
    let blocked = decide(message, json!("Kim Lee"), &answers);
    assert_eq!(first(&blocked), (Verdict::Ask, "value_not_stated".to_owned()));
    assert!(blocked.effects.is_empty() && blocked.writes.is_empty());
}

#[test]
fn a_locate_answer_that_is_no_pointer_can_only_take_away() {
    let message = "please change the name to Kim Lee";
    let unchecked = decide(message, json!("Kim Lee"), &CheckAnswers::new());
    let cases = [
        (CheckAnswer::Verdict { verdict: CheckVerdict::Ask }, "value_not_located"),
        (CheckAnswer::Verdict { verdict: CheckVerdict::Block }, "value_not_located"),
        (CheckAnswer::Verdict { verdict: CheckVerdict::Pass }, "check_answer_invalid"),
        (CheckAnswer::Failed { failure: CheckFailure::Timeout, detail: "slow".into() }, "check_timeout"),
        (CheckAnswer::Failed { failure: CheckFailure::InvalidAnswer, detail: "bad".into() }, "check_answer_invalid"),
    ];
    for (answer, code) in cases {
        let decision = decide(message, json!("Kim Lee"), &answering(&unchecked, answer));
        assert_eq!(first(&decision), (Verdict::Ask, code.to_owned()));
        assert_eq!(decision.response.acts[0].reasons[0].field.as_deref(), Some("args.name"));
        assert!(decision.effects.is_empty());
    }
    // A pointer is no verdict: filed under a yes-or-no question, it does not fit.
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    let stated = decide(message, pointer.clone(), &CheckAnswers::new());
    let decision = decide(message, pointer, &answering(&stated, located(6, 7, "Kim Lee")));
    assert_eq!(first(&decision), (Verdict::Ask, "check_answer_invalid".to_owned()));
}

fn with_uncovered(contract: &str) -> String {
    format!("{contract}\n[model]\nchecks = [\"uncovered_request\"]\n")
}

fn decide_in(contract: &str, message: &str, name: Value, answers: &CheckAnswers) -> Decision {
    let contract = Contract::load("rename.toml", contract, &Files).unwrap();
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": message}],
        "acts": [{"op": "rename", "args": {"name": name}}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    let mut rows = BTreeMap::new();
    rows.insert(
        ("customer".to_owned(), "kim".to_owned()),
        Record { table: "customer".into(), key: "kim".into(), revision: 1, value: json!({"name": "Kim"}) },
    );
    turn::decide_checked(&contract, &valid, &Memory(rows), &BTreeSet::new(), answers)
}

#[test]
fn an_uncovered_request_takes_away_what_would_commit_and_a_pass_changes_nothing() {
    let contract = with_uncovered(CONTRACT);
    let message = "please change the name to Kim Lee and cancel my order";
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    let unchecked = decide_in(&contract, message, pointer.clone(), &CheckAnswers::new());
    let tasks: Vec<&str> = unchecked.checks.iter().map(|c| c.task.as_str()).collect();
    assert_eq!(tasks, ["uncovered_request", "value_stated"], "both in the first round");
    let uncovered = &unchecked.checks[0];
    assert_eq!(uncovered.message, message);
    // The act's arguments in canonical form (keys sorted): the question is the same for a
    // request whose store kept its keys in another order.
    assert_eq!(uncovered.acts, [r#"rename {"name":{"copy":"Kim Lee","ptr":[6,7]}}"#]);

    let stated = with_answer(
        CheckAnswers::new(),
        &unchecked,
        "value_stated",
        CheckAnswer::Verdict { verdict: CheckVerdict::Pass },
    );
    let unanswered = decide_in(&contract, message, pointer.clone(), &stated);
    assert_eq!(first(&unanswered), (Verdict::Ask, "check_unfinished".to_owned()));
    let cases = [
        (CheckAnswer::Verdict { verdict: CheckVerdict::Block }, "request_uncovered"),
        (CheckAnswer::Verdict { verdict: CheckVerdict::Ask }, "check_unsure"),
        (CheckAnswer::Failed { failure: CheckFailure::Provider, detail: "down".into() }, "check_provider_failed"),
        (CheckAnswer::Failed { failure: CheckFailure::Budget, detail: "out".into() }, "check_budget_exhausted"),
    ];
    for (answer, code) in cases {
        let answers = with_answer(stated.clone(), &unchecked, "uncovered_request", answer);
        let decision = decide_in(&contract, message, pointer.clone(), &answers);
        assert_eq!(first(&decision), (Verdict::Ask, code.to_owned()));
        assert!(decision.effects.is_empty() && decision.writes.is_empty() && decision.events.is_empty());
    }
    let answers =
        with_answer(stated, &unchecked, "uncovered_request", CheckAnswer::Verdict { verdict: CheckVerdict::Pass });
    let passed = decide_in(&contract, message, pointer.clone(), &answers);
    let plain = decide(
        message,
        pointer.clone(),
        &answering(
            &decide(message, pointer, &CheckAnswers::new()),
            CheckAnswer::Verdict { verdict: CheckVerdict::Pass },
        ),
    );
    assert_eq!(first(&passed), (Verdict::Commit, String::new()));
    assert_eq!(passed.writes, plain.writes, "a pass changes nothing");
}

#[test]
fn an_uncovered_request_turns_a_hold_into_a_question_and_opens_nothing() {
    let contract =
        with_uncovered(&CONTRACT.replace("name = \"rename\"\n", "name = \"rename\"\nconsequential = true\n"));
    let message = "please change the name to Kim Lee";
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    let unchecked = decide_in(&contract, message, pointer.clone(), &CheckAnswers::new());
    let pass = with_answer(
        CheckAnswers::new(),
        &unchecked,
        "value_stated",
        CheckAnswer::Verdict { verdict: CheckVerdict::Pass },
    );
    let held = decide_in(
        &contract,
        message,
        pointer.clone(),
        &with_answer(
            pass.clone(),
            &unchecked,
            "uncovered_request",
            CheckAnswer::Verdict { verdict: CheckVerdict::Pass },
        ),
    );
    assert_eq!(held.response.acts[0].verdict, Verdict::Hold);
    assert_eq!(held.opened.len(), 1);
    let asked = decide_in(
        &contract,
        message,
        pointer,
        &with_answer(pass, &unchecked, "uncovered_request", CheckAnswer::Verdict { verdict: CheckVerdict::Block }),
    );
    assert_eq!(first(&asked), (Verdict::Ask, "request_uncovered".to_owned()));
    assert!(asked.opened.is_empty() && asked.response.interactions.is_empty());
}

#[test]
fn without_the_model_section_no_turn_level_check_is_asked() {
    let pointer = json!({"ptr": [6, 7], "copy": "Kim Lee"});
    let decision = decide("please change the name to Kim Lee", pointer, &CheckAnswers::new());
    assert!(decision.checks.iter().all(|c| c.task != "uncovered_request"));
}

#[test]
fn the_model_section_loads_and_names_the_key_by_its_variable() {
    let text = format!(
        "{CONTRACT}\n[model]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"smollm2\"\nkey_env = \"WARRANT_TEST_KEY\"\nconnect_timeout_ms = 500\nturn_calls = 6\nturn_tokens = 900\nturn_deadline_ms = 4000\nchecks = [\"uncovered_request\"]\n\n[model.tasks.locate]\ntimeout_ms = 1500\n"
    );
    let contract = Contract::load("rename.toml", &text, &Files).unwrap();
    let model = contract.model();
    assert_eq!(model.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
    assert_eq!((model.model.as_deref(), model.key_env.as_deref()), (Some("smollm2"), Some("WARRANT_TEST_KEY")));
    assert_eq!(
        (model.turn_calls, model.turn_tokens, model.turn_deadline_ms, model.connect_timeout_ms),
        (Some(6), Some(900), Some(4000), Some(500))
    );
    assert_eq!(model.tasks["locate"].timeout_ms, Some(1500));
    assert_eq!(model.tasks["locate"].calls, None, "what is left out keeps the task's own limit");
    assert!(model.runs("uncovered_request"));
    assert_eq!(Contract::load("rename.toml", CONTRACT, &Files).unwrap().model(), &Default::default());
}
