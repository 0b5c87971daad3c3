//! A turn's semantic checks, run at once: one thread per check (at most `parallel` at a time),
//! all drawing on the turn's one budget, so a turn's added latency is its slowest check, not
//! the sum. Each answer comes back by check id, ready for `turn::decide_checked`.

use warrant_core::check::{CheckAnswer, CheckAnswers, CheckFailure, CheckRequest, VALUE_STATED};

use crate::task::{ModelCall, Outcome, Runner};
use crate::tasks::{ValueStated, ValueStatedInput};

/// The answers of a round of checks and every call made for them, in the order of the requests.
#[derive(Debug, Clone, Default)]
pub struct CheckRound {
    /// Answers by check id; every request has one.
    pub answers: CheckAnswers,
    /// The calls, grouped by request in request order.
    pub calls: Vec<ModelCall>,
}

fn run_one(runner: &Runner<'_>, request: &CheckRequest) -> (CheckAnswer, Vec<ModelCall>) {
    match request.task.as_str() {
        VALUE_STATED => {
            let input = ValueStatedInput {
                op: request.op.clone(),
                field: request.arg.clone(),
                message: request.message.clone(),
                ptr: request.ptr,
                value: request.value.clone(),
            };
            let run = runner.run::<ValueStated>(&input, Some(&request.id));
            let answer = match run.outcome {
                Outcome::Answered { verdict, .. } => CheckAnswer::Verdict { verdict },
                Outcome::Failed { failure, detail } => CheckAnswer::Failed { failure, detail },
            };
            (answer, run.calls)
        }
        other => (
            CheckAnswer::Failed { failure: CheckFailure::Unfinished, detail: format!("no task runs check `{other}`") },
            Vec::new(),
        ),
    }
}

/// Runs `requests` concurrently, at most `parallel` at a time (at least one).
pub fn run_checks(runner: &Runner<'_>, requests: &[CheckRequest], parallel: usize) -> CheckRound {
    let mut results: Vec<(CheckAnswer, Vec<ModelCall>)> = Vec::with_capacity(requests.len());
    for chunk in requests.chunks(parallel.max(1)) {
        let chunk_results: Vec<(CheckAnswer, Vec<ModelCall>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk.iter().map(|request| scope.spawn(move || run_one(runner, request))).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        let detail = "the check's thread panicked".to_owned();
                        (CheckAnswer::Failed { failure: CheckFailure::Unfinished, detail }, Vec::new())
                    })
                })
                .collect()
        });
        results.extend(chunk_results);
    }
    let mut round = CheckRound::default();
    for (request, (answer, calls)) in requests.iter().zip(results) {
        round.answers.insert(request.id.clone(), answer);
        round.calls.extend(calls);
    }
    round
}
