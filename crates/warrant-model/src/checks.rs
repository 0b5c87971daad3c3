//! A turn's semantic checks, run at once: up to `parallel` threads (the caller's among them),
//! each taking the next check when it is free, all drawing on the turn's one budget, so a
//! turn's added latency is its slowest check, not the sum. Each answer comes back by check
//! id, ready for `turn::decide_checked`.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use warrant_vocab::check::{CheckAnswer, CheckAnswers, CheckFailure, CheckRequest, CheckVerdict};
use warrant_vocab::pointer::WordRule;
use warrant_vocab::task::ModelTask;

use crate::task::{ModelCall, Outcome, Runner};
use crate::tasks::{
    Locate, LocateInput, UncoveredRequest, UncoveredRequestInput, ValueClassified, ValueClassifiedInput, ValueStated,
    ValueStatedInput,
};

/// The answers of a round of checks and every call made for them, in the order of the requests.
#[derive(Debug, Clone, Default)]
pub struct CheckRound {
    /// Answers by check id; every request has one.
    pub answers: CheckAnswers,
    /// The calls, grouped by request in request order.
    pub calls: Vec<ModelCall>,
    /// When each request's task began and how long it took, in request order: what a trace of
    /// the turn shows of each task (two clock readings a check, beside its model calls).
    pub timings: Vec<TaskTiming>,
}

/// When one check's task began and how long it ran, its repair round and retry included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTiming {
    /// When it began.
    pub started: Instant,
    /// How long it ran.
    pub elapsed: Duration,
}

/// A verdict or a failure as a check's answer.
fn answer<O>(outcome: Outcome<O>) -> CheckAnswer {
    match outcome {
        Outcome::Answered { verdict, .. } => CheckAnswer::Verdict { verdict },
        Outcome::Failed { failure, detail } => CheckAnswer::Failed { failure, detail },
    }
}

/// A check's answer with the calls made for it and its timing.
type Answered = (CheckAnswer, Vec<ModelCall>, TaskTiming);

fn run_one(runner: &Runner<'_>, request: &CheckRequest, words: WordRule) -> Answered {
    let started = Instant::now();
    let (answer, calls) = run_task(runner, request, words);
    (answer, calls, TaskTiming { started, elapsed: started.elapsed() })
}

fn run_task(runner: &Runner<'_>, request: &CheckRequest, words: WordRule) -> (CheckAnswer, Vec<ModelCall>) {
    match request.task {
        ModelTask::ValueStated => {
            let input = ValueStatedInput {
                op: request.op.clone(),
                field: request.arg.clone(),
                message: request.message.clone(),
                ptr: request.ptr,
                value: request.value.clone(),
                words,
            };
            let run = runner.run::<ValueStated>(&input, Some(&request.id));
            (answer(run.outcome), run.calls)
        }
        ModelTask::Locate => {
            let input = LocateInput {
                field: request.arg.clone(),
                proposed: request.value.clone(),
                message: request.message.clone(),
                words,
            };
            let run = runner.run::<Locate>(&input, Some(&request.id));
            let answer = match run.outcome {
                // Only the pointer goes back: the core slices the words itself and checks the
                // pointer by the copy-narrowing rule as if the agent had sent it.
                Outcome::Answered { verdict: CheckVerdict::Pass, output: Some(located) } => {
                    CheckAnswer::Located { pointer: located.pointer }
                }
                other => answer(other),
            };
            (answer, run.calls)
        }
        ModelTask::ValueClassified => {
            let input = ValueClassifiedInput {
                op: request.op.clone(),
                field: request.arg.clone(),
                message: request.message.clone(),
                ptr: request.ptr,
                choices: request.choices.clone(),
                claimed: request.value.clone(),
                words,
            };
            let run = runner.run::<ValueClassified>(&input, Some(&request.id));
            (answer(run.outcome), run.calls)
        }
        ModelTask::UncoveredRequest => {
            let input = UncoveredRequestInput { message: request.message.clone(), acts: request.acts.clone() };
            let run = runner.run::<UncoveredRequest>(&input, Some(&request.id));
            (answer(run.outcome), run.calls)
        }
        // The outbound gate's tasks answer no check.
        other @ (ModelTask::ClaimsCoverage | ModelTask::Rewrite) => (
            CheckAnswer::Failed { failure: CheckFailure::Unfinished, detail: format!("no task runs check `{other}`") },
            Vec::new(),
        ),
    }
}

/// Runs `requests` concurrently, at most `parallel` at a time (at least one). The calling
/// thread runs checks too, and each worker takes the next check as soon as it is free, so one
/// check spawns no thread and a slow check never holds back the start of the others. `words` is
/// the rule the user's message is numbered by, and the model's copy cut by
/// (`warrant_core::pointer::UAX29`).
pub fn run_checks(runner: &Runner<'_>, requests: &[CheckRequest], parallel: usize, words: WordRule) -> CheckRound {
    let workers = parallel.max(1).min(requests.len());
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Answered>>> = requests.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let (Some(request), Some(slot)) = (requests.get(i), slots.get(i)) else { break };
            // A panic in one check fails that check (its slot stays empty), not the turn.
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| run_one(runner, request, words))).ok();
            if let (Some(result), Ok(mut slot)) = (result, slot.lock()) {
                *slot = Some(result);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..workers {
            scope.spawn(work);
        }
        work();
    });
    let mut round = CheckRound::default();
    for (request, slot) in requests.iter().zip(slots) {
        let (answer, calls, timing) = slot.into_inner().ok().flatten().unwrap_or_else(|| {
            let detail = "the check's thread panicked".to_owned();
            let timing = TaskTiming { started: Instant::now(), elapsed: Duration::ZERO };
            (CheckAnswer::Failed { failure: CheckFailure::Unfinished, detail }, Vec::new(), timing)
        });
        round.answers.insert(request.id.clone(), answer);
        round.calls.extend(calls);
        round.timings.push(timing);
    }
    round
}
