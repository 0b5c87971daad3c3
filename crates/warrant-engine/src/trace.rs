//! What a turn's model tasks took, kept for whoever traces the turn (the `warrant` binary and
//! the service export them as OpenTelemetry spans through warrant-telemetry). The engine only
//! records: it exports nothing, knows no tracing API, and keeps no customer words here (a task
//! is named by its check's id, a content hash, and its outcome by a code).

use std::time::{Duration, Instant, SystemTime};

use warrant_core::check::{CheckAnswer, CheckFailure, CheckVerdict, ModelTask};
use warrant_core::outbound::GateAnswer;
use warrant_model::ModelCall;

/// One model task a turn ran: a semantic check, or a question of the outbound gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRun {
    /// The task.
    pub task: ModelTask,
    /// The check's or question's id (a content hash of the question, never its words).
    pub id: String,
    /// When it began.
    pub started: SystemTime,
    /// How long it ran, its repair round and retry included.
    pub elapsed: Duration,
    /// What it concluded: a verdict (`pass`, `block`, `repair`, `ask`), `located`,
    /// `rewritten`, or the failure's code (`timeout`, `budget`, …).
    pub outcome: String,
    /// The model calls it made.
    pub calls: usize,
    /// The prompt version of its first call, when it made one.
    pub prompt_version: Option<String>,
}

impl TaskRun {
    /// A task that began at `started` (read on this process's monotonic clock) and ran for
    /// `elapsed`, its calls among `calls` (those whose `check` is `id`).
    pub(crate) fn new(
        task: ModelTask,
        id: &str,
        (started, elapsed): (Instant, Duration),
        outcome: String,
        calls: &[ModelCall],
    ) -> TaskRun {
        let mine = || calls.iter().filter(|c| c.check.as_deref() == Some(id));
        TaskRun {
            task,
            id: id.to_owned(),
            started: wall_time(started),
            elapsed,
            outcome,
            calls: mine().count(),
            prompt_version: mine().next().map(|c| c.prompt_version.clone()),
        }
    }
}

/// The wall-clock time of a reading of the monotonic clock taken a moment ago.
fn wall_time(at: Instant) -> SystemTime {
    SystemTime::now().checked_sub(at.elapsed()).unwrap_or_else(SystemTime::now)
}

fn verdict(verdict: CheckVerdict) -> String {
    code(&verdict)
}

fn failure(failure: CheckFailure) -> String {
    code(&failure)
}

/// The snake_case name serde gives a unit variant.
fn code<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "unknown".to_owned(),
    }
}

/// A check's answer as a trace's outcome.
pub(crate) fn check_outcome(answer: Option<&CheckAnswer>) -> String {
    match answer {
        Some(CheckAnswer::Verdict { verdict: v }) => verdict(*v),
        Some(CheckAnswer::Located { .. }) => "located".to_owned(),
        Some(CheckAnswer::Failed { failure: f, .. }) => failure(*f),
        None => "unanswered".to_owned(),
    }
}

/// An outbound question's answer as a trace's outcome.
pub(crate) fn gate_outcome(answer: Option<&GateAnswer>) -> String {
    match answer {
        Some(GateAnswer::Verdict { verdict: v }) => verdict(*v),
        Some(GateAnswer::Rewritten { .. }) => "rewritten".to_owned(),
        Some(GateAnswer::Failed { failure: f, .. }) => failure(*f),
        None => "unanswered".to_owned(),
    }
}
