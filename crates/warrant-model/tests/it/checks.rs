//! A turn's checks run at once, on one budget.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use warrant_core::pointer::UAX29;
use warrant_model::{
    BudgetLimits, ChatAnswer, ChatRequest, Prompts, Provider, ProviderError, Runner, TurnBudget, run_checks,
};
use warrant_vocab::check::{CheckAnswer, CheckFailure, CheckRequest, CheckVerdict};
use warrant_vocab::task::ModelTask;

use crate::roomy;

/// Holds each request until `expect` are in flight at once (or a deadline passes), and keeps
/// the most it saw.
struct Gathering {
    expect: usize,
    state: Mutex<(usize, usize)>,
    changed: Condvar,
}

impl Provider for Gathering {
    fn complete(&self, _: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        state.1 = state.1.max(state.0);
        self.changed.notify_all();
        while state.1 < self.expect && Instant::now() < deadline {
            state = self.changed.wait_timeout(state, Duration::from_millis(50)).unwrap().0;
        }
        state.0 -= 1;
        Ok(ChatAnswer { content: r#"{"answer":"yes"}"#.into(), prompt_tokens: 1, completion_tokens: 1 })
    }
}

fn requests(n: usize) -> Vec<CheckRequest> {
    (0..n)
        .map(|i| {
            CheckRequest::new(
                ModelTask::ValueStated,
                "rename",
                &format!("arg{i}"),
                "Kim",
                [5, 5],
                "change the name to Kim",
            )
        })
        .collect()
}

#[test]
fn the_checks_of_a_turn_are_in_flight_at_once() {
    let provider = Gathering { expect: 4, state: Mutex::new((0, 0)), changed: Condvar::new() };
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    let round = run_checks(&runner, &requests(4), 8, UAX29);
    assert_eq!(provider.state.lock().unwrap().1, 4, "all four requests were in flight together");
    assert_eq!(round.answers.len(), 4);
    assert!(round.answers.values().all(|a| *a == CheckAnswer::Verdict { verdict: CheckVerdict::Pass }));
    // The calls come back in the order of the requests, whatever order they finished in.
    let order: Vec<_> = round.calls.iter().map(|c| c.check.clone().unwrap()).collect();
    assert_eq!(order, requests(4).into_iter().map(|r| r.id).collect::<Vec<_>>());
}

#[test]
fn at_most_parallel_checks_are_in_flight() {
    // Each request waits only until two are in flight together; a third in flight would show.
    let provider = Gathering { expect: 2, state: Mutex::new((0, 0)), changed: Condvar::new() };
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    run_checks(&runner, &requests(4), 2, UAX29);
    assert_eq!(provider.state.lock().unwrap().1, 2);
}

#[test]
fn the_turn_budget_is_shared_and_a_check_without_budget_fails() {
    let provider = Gathering { expect: 1, state: Mutex::new((0, 0)), changed: Condvar::new() };
    let budget = TurnBudget::new(BudgetLimits { calls: 2, ..roomy() }, Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    let round = run_checks(&runner, &requests(3), 1, UAX29);
    let failed: Vec<_> = round
        .answers
        .values()
        .filter(|a| matches!(a, CheckAnswer::Failed { failure: CheckFailure::Budget, .. }))
        .collect();
    assert_eq!(failed.len(), 1, "two calls for three checks: one check fails, none passes unasked");
}

#[test]
fn a_check_no_task_runs_fails() {
    let provider = Gathering { expect: 1, state: Mutex::new((0, 0)), changed: Condvar::new() };
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    // A gate task asked as an argument's check: no check task runs it.
    let request = CheckRequest::new(ModelTask::Rewrite, "rename", "name", "Kim", [1, 1], "Kim");
    let round = run_checks(&runner, std::slice::from_ref(&request), 4, UAX29);
    assert!(matches!(
        round.answers.get(&request.id),
        Some(CheckAnswer::Failed { failure: CheckFailure::Unfinished, .. })
    ));
}

#[test]
fn a_locate_check_answers_with_the_pointer_and_an_uncovered_check_with_its_verdict() {
    use crate::Scripted;
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let message = "please change the name to Kim Lee";
    let locate = CheckRequest::locate("rename", "name", "Kim Lee", message);
    let provider = Scripted::new(vec![Ok(r#"{"found":true,"from":5,"to":7,"copy":"Kim Lee"}"#)]);
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    let round = run_checks(&runner, std::slice::from_ref(&locate), 8, UAX29);
    // The copy narrowed the pointer to the words it holds; only the pointer comes back.
    let pointer = serde_json::from_value(serde_json::json!({"ptr": [6, 7], "copy": "Kim Lee"})).unwrap();
    assert_eq!(round.answers[&locate.id], CheckAnswer::Located { pointer });
    assert!(provider.requests()[0].messages[1].content.contains("[6]Kim [7]Lee"));

    let provider = Scripted::new(vec![Ok(r#"{"found":false,"from":0,"to":0,"copy":""}"#)]);
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    let round = run_checks(&runner, std::slice::from_ref(&locate), 8, UAX29);
    assert_eq!(
        round.answers[&locate.id],
        CheckAnswer::Verdict { verdict: CheckVerdict::Ask },
        "not found is no pointer"
    );

    let uncovered = CheckRequest::uncovered("cancel it and change my address", vec!["cancel_pending_order {}".into()]);
    let provider = Scripted::new(vec![Ok(r#"{"uncovered":"yes"}"#)]);
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    let round = run_checks(&runner, std::slice::from_ref(&uncovered), 8, UAX29);
    assert_eq!(round.answers[&uncovered.id], CheckAnswer::Verdict { verdict: CheckVerdict::Block });
    assert!(provider.requests()[0].messages[1].content.contains(r#""planned_actions":["cancel_pending_order {}"]"#));
}

#[test]
fn one_check_runs_on_the_calling_thread() {
    struct Here(std::thread::ThreadId);
    impl Provider for Here {
        fn complete(&self, _: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
            let content =
                if std::thread::current().id() == self.0 { r#"{"answer":"yes"}"# } else { r#"{"answer":"no"}"# };
            Ok(ChatAnswer { content: content.into(), prompt_tokens: 1, completion_tokens: 1 })
        }
    }
    let provider = Here(std::thread::current().id());
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
    let round = run_checks(&runner, &requests(1), 8, UAX29);
    assert!(
        round.answers.values().all(|a| *a == CheckAnswer::Verdict { verdict: CheckVerdict::Pass }),
        "no thread was spawned for it"
    );
}
