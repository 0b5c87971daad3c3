//! How a model task runs (docs/design.md §6): the task's prompt (versioned by content hash) and the
//! question go to the provider with the output schema; the answer is parsed all or nothing; a
//! structural mistake gets one repair round quoting the exact error; a transport failure is
//! retried once in place; every call, its tokens and latency, is kept for the replay record.
//! The budget is asked before each call. Whatever fails, the task fails: it never passes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use warrant_vocab::check::{CheckFailure, CheckVerdict};
use warrant_vocab::task::ModelTask;

use crate::budget::{TaskLimits, TurnBudget};
use crate::provider::{ChatAnswer, ChatRequest, Message, Provider, ProviderError, canonical};

/// A small question with its own prompt, output schema and limits.
pub trait Task {
    /// What the task is asked about.
    type Input;
    /// What it returns beside its verdict (a pointer, a draft; often nothing).
    type Output;
    /// The task.
    const TASK: ModelTask;
    /// The task's name (`value_stated`).
    const NAME: &'static str = Self::TASK.name();
    /// The built-in prompt.
    fn prompt() -> &'static str;
    /// The JSON schema of the answer.
    fn schema() -> Value;
    /// Its limits.
    fn limits() -> TaskLimits;
    /// The question, as the user message of the chat.
    fn question(input: &Self::Input) -> String;
    /// Reads a parsed answer. An `Err` is a structural mistake, quoted in the repair round.
    fn read(input: &Self::Input, answer: &str) -> Result<(CheckVerdict, Self::Output), String>;
}

/// A prompt and its version: the first 12 hex digits of the SHA-256 of the prompt text and
/// the output schema, so that changing either makes a new version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptVersion {
    /// The task.
    pub task: String,
    /// The content hash.
    pub version: String,
    /// The prompt text.
    pub text: String,
}

impl PromptVersion {
    /// The version of `text` for the task named `task` whose schema is `schema`.
    pub fn new(task: &str, text: &str, schema: &Value) -> PromptVersion {
        let mut hasher = Sha256::new();
        hasher.update(text.as_bytes());
        hasher.update([0u8]);
        hasher.update(canonical(schema).as_bytes());
        let version: String = hasher.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();
        PromptVersion { task: task.to_owned(), version, text: text.to_owned() }
    }

    /// The built-in prompt of `T`.
    pub fn builtin<T: Task>() -> PromptVersion {
        PromptVersion::new(T::NAME, T::prompt(), &T::schema())
    }
}

/// The prompt each task runs with; tasks not named here run with their built-in prompt.
#[derive(Debug, Clone, Default)]
pub struct Prompts {
    by_task: BTreeMap<String, PromptVersion>,
}

impl Prompts {
    /// Runs `prompt` for its task.
    pub fn set(&mut self, prompt: PromptVersion) {
        self.by_task.insert(prompt.task.clone(), prompt);
    }

    /// The prompt for `T`.
    pub fn get<T: Task>(&self) -> PromptVersion {
        self.by_task.get(T::NAME).cloned().unwrap_or_else(builtin_once::<T>)
    }
}

/// The built-in version of `T`'s prompt, hashed once per process: hashing the prompt text and
/// its schema again on every run of every check was part of what a turn's checks added to its
/// latency (docs/design.md §15).
fn builtin_once<T: Task>() -> PromptVersion {
    static BUILTIN: std::sync::OnceLock<std::sync::Mutex<BTreeMap<&'static str, PromptVersion>>> =
        std::sync::OnceLock::new();
    let cache = BUILTIN.get_or_init(Default::default);
    let Ok(mut versions) = cache.lock() else { return PromptVersion::builtin::<T>() };
    versions.entry(T::NAME).or_insert_with(PromptVersion::builtin::<T>).clone()
}

/// Which attempt a call was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Round {
    /// The first question.
    First,
    /// The repair round after a structural mistake.
    Repair,
}

/// One model call, for the replay record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// The task.
    pub task: ModelTask,
    /// The prompt version.
    pub prompt_version: String,
    /// The check it answered, when it ran for a check of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The round.
    pub round: Round,
    /// 0 for the first attempt, 1 for the retry in place after a transport failure.
    pub attempt: u32,
    /// The hash of the request (the cassette key).
    pub request_hash: String,
    /// The request.
    pub request: ChatRequest,
    /// The answer or the provider's error; `None` when the budget refused the call.
    pub result: Option<Result<ChatAnswer, ProviderError>>,
    /// Wall time of the call, in milliseconds.
    pub latency_ms: u64,
    /// What the call led to: a verdict, a structural error, or a failure.
    pub outcome: String,
}

/// What a task's run concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<O> {
    /// The task answered, within its schema.
    Answered {
        /// The verdict; none authorizes anything.
        verdict: CheckVerdict,
        /// What else it returned.
        output: O,
    },
    /// The task did not answer; this counts as failed.
    Failed {
        /// Why.
        failure: CheckFailure,
        /// What happened, on one line.
        detail: String,
    },
}

/// A task's run: its outcome and its calls.
#[derive(Debug, Clone)]
pub struct TaskRun<O> {
    /// What it concluded.
    pub outcome: Outcome<O>,
    /// Every call it made, in order.
    pub calls: Vec<ModelCall>,
}

/// What a run needs: the provider, the model name, the turn's budget and the prompts.
#[derive(Clone, Copy)]
pub struct Runner<'a> {
    /// Where requests go.
    pub provider: &'a dyn Provider,
    /// The model name sent.
    pub model: &'a str,
    /// The turn's budget.
    pub budget: &'a TurnBudget,
    /// The prompt versions to run.
    pub prompts: &'a Prompts,
}

impl std::fmt::Debug for Runner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("model", &self.model).finish()
    }
}

/// What a call asks: the prompt version, the task, the check it answers, and the round.
#[derive(Clone, Copy)]
struct Asked<'a> {
    prompt: &'a PromptVersion,
    task: ModelTask,
    check: Option<&'a str>,
    round: Round,
}

/// The message of the repair round.
fn repair_message(error: &str) -> String {
    format!(
        "Your answer does not fit the required JSON schema: {error}. Answer again with only the JSON object the schema describes."
    )
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Runner<'_> {
    /// Runs `T` on `input`; `check` names the check it answers, for the record.
    pub fn run<T: Task>(&self, input: &T::Input, check: Option<&str>) -> TaskRun<T::Output> {
        let prompt = self.prompts.get::<T>();
        let limits = self.budget.task_limits(T::NAME, T::limits());
        let mut messages = vec![Message::new("system", prompt.text.clone()), Message::new("user", T::question(input))];
        let mut calls: Vec<ModelCall> = Vec::new();
        let mut spent = 0u32;
        for round in [Round::First, Round::Repair] {
            let request = ChatRequest {
                model: self.model.to_owned(),
                messages: messages.clone(),
                schema_name: T::NAME.to_owned(),
                schema: T::schema(),
                max_tokens: limits.max_tokens,
            };
            let answer = match self.call(
                &request,
                &limits,
                &mut spent,
                Asked { prompt: &prompt, task: T::TASK, check, round },
                &mut calls,
            ) {
                Ok(answer) => answer,
                Err((failure, detail)) => return TaskRun { outcome: Outcome::Failed { failure, detail }, calls },
            };
            match T::read(input, &answer.content) {
                Ok((verdict, output)) => {
                    if let Some(last) = calls.last_mut() {
                        last.outcome = format!("{verdict:?}").to_lowercase();
                    }
                    return TaskRun { outcome: Outcome::Answered { verdict, output }, calls };
                }
                Err(error) => {
                    if let Some(last) = calls.last_mut() {
                        last.outcome = format!("invalid: {error}");
                    }
                    if round == Round::Repair {
                        let detail = format!("the answer does not fit the schema after a repair round: {error}");
                        return TaskRun {
                            outcome: Outcome::Failed { failure: CheckFailure::InvalidAnswer, detail },
                            calls,
                        };
                    }
                    messages.push(Message::new("assistant", answer.content));
                    messages.push(Message::new("user", repair_message(&error)));
                }
            }
        }
        let detail = "no round answered".to_owned();
        TaskRun { outcome: Outcome::Failed { failure: CheckFailure::InvalidAnswer, detail }, calls }
    }

    /// One question, retried once in place after a transport failure.
    fn call(
        &self,
        request: &ChatRequest,
        limits: &TaskLimits,
        spent: &mut u32,
        asked: Asked<'_>,
        calls: &mut Vec<ModelCall>,
    ) -> Result<ChatAnswer, (CheckFailure, String)> {
        let Asked { prompt, task, check, round } = asked;
        let hash = request.hash();
        for attempt in 0..2u32 {
            let mut record = ModelCall {
                task,
                prompt_version: prompt.version.clone(),
                check: check.map(str::to_owned),
                round,
                attempt,
                request_hash: hash.clone(),
                request: request.clone(),
                result: None,
                latency_ms: 0,
                outcome: String::new(),
            };
            if *spent >= limits.calls {
                let detail = format!("task `{task}` has used its {} calls", limits.calls);
                record.outcome = format!("budget: {detail}");
                calls.push(record);
                return Err((CheckFailure::Budget, detail));
            }
            let reservation = match self.budget.reserve(limits.max_tokens, limits.timeout) {
                Ok(r) => r,
                Err(detail) => {
                    record.outcome = format!("budget: {detail}");
                    calls.push(record);
                    return Err((CheckFailure::Budget, detail));
                }
            };
            *spent += 1;
            let started = Instant::now();
            let result = self.provider.complete(request, reservation.timeout);
            record.latency_ms = millis(started.elapsed());
            let used = result.as_ref().map_or(0, |a| a.prompt_tokens.saturating_add(a.completion_tokens));
            self.budget.settle(reservation, used);
            record.result = Some(result.clone());
            match result {
                Ok(answer) => {
                    calls.push(record);
                    return Ok(answer);
                }
                Err(error) => {
                    record.outcome = format!("failed: {error}");
                    calls.push(record);
                    if error.is_transient() && attempt == 0 {
                        continue;
                    }
                    let failure = match error {
                        ProviderError::Timeout(_) => CheckFailure::Timeout,
                        _ => CheckFailure::Provider,
                    };
                    return Err((failure, error.to_string().replace('\n', " ")));
                }
            }
        }
        Err((CheckFailure::Provider, "the retry in place failed".to_owned()))
    }
}
