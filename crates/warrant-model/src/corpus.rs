//! The recorded corpus of a task: cases, each an input with the verdict it must get. A prompt
//! version is promoted only if it gets every case's verdict (docs/design.md §6); run against a
//! cassette, this needs no network, so the decision is the same wherever it is made.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use warrant_vocab::check::CheckVerdict;
use warrant_vocab::pointer::WordRule;

use crate::task::{Outcome, Runner, Task};
use crate::tasks::{
    ClaimsCoverage, ClaimsCoverageInput, Locate, LocateInput, Rewrite, RewriteInput, UncoveredRequest,
    UncoveredRequestInput, ValueClassified, ValueClassifiedInput, ValueStated, ValueStatedInput,
};

/// One case of the corpus: a line of its JSON-lines file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A name that says what the case is about.
    pub name: String,
    /// The task's input, as the fields of its input type.
    pub input: Value,
    /// The verdict the task must reach.
    pub expect: CheckVerdict,
}

/// What a prompt version made of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case.
    pub name: String,
    /// What it must get.
    pub expect: CheckVerdict,
    /// What it got: a verdict, or why none.
    pub got: Result<CheckVerdict, String>,
}

impl CaseResult {
    /// Whether the verdict is the expected one.
    pub fn passed(&self) -> bool {
        self.got.as_ref().is_ok_and(|v| *v == self.expect)
    }
}

/// Why a case cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    /// No task has this name.
    #[error("no task is named `{0}`")]
    UnknownTask(String),
    /// A case's input does not fit its task.
    #[error("case `{case}`: the input does not fit task `{task}`: {message}")]
    Input {
        /// The case's name.
        case: String,
        /// The task it was run as.
        task: String,
        /// What does not fit, naming the field.
        message: String,
    },
}

fn field<T: for<'de> Deserialize<'de>>(case: &Case, task: &str, input: &Value, name: &str) -> Result<T, CorpusError> {
    let value = input.get(name).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| CorpusError::Input {
        case: case.name.clone(),
        task: task.to_owned(),
        message: format!("`{name}`: {e}"),
    })
}

fn verdict<O>(outcome: Outcome<O>) -> Result<CheckVerdict, String> {
    match outcome {
        Outcome::Answered { verdict, .. } => Ok(verdict),
        Outcome::Failed { failure, detail } => Err(format!("{failure:?}: {detail}").to_lowercase()),
    }
}

/// The JSON schema of the task named `task`.
pub fn schema(task: &str) -> Result<Value, CorpusError> {
    Ok(match task {
        ValueStated::NAME => ValueStated::schema(),
        Locate::NAME => Locate::schema(),
        UncoveredRequest::NAME => UncoveredRequest::schema(),
        ClaimsCoverage::NAME => ClaimsCoverage::schema(),
        Rewrite::NAME => Rewrite::schema(),
        ValueClassified::NAME => ValueClassified::schema(),
        other => return Err(CorpusError::UnknownTask(other.to_owned())),
    })
}

/// Runs one case of the task named `task`; a message is numbered by `words`
/// (`warrant_core::pointer::UAX29`).
pub fn run_case(runner: &Runner<'_>, task: &str, case: &Case, words: WordRule) -> Result<CaseResult, CorpusError> {
    let i = &case.input;
    let got = match task {
        ValueStated::NAME => {
            let input = ValueStatedInput {
                op: field(case, task, i, "op")?,
                field: field(case, task, i, "field")?,
                message: field(case, task, i, "message")?,
                ptr: field(case, task, i, "ptr")?,
                value: field(case, task, i, "value")?,
                words,
            };
            verdict(runner.run::<ValueStated>(&input, None).outcome)
        }
        Locate::NAME => {
            let input = LocateInput {
                field: field(case, task, i, "field")?,
                proposed: field(case, task, i, "proposed")?,
                message: field(case, task, i, "message")?,
                words,
            };
            verdict(runner.run::<Locate>(&input, None).outcome)
        }
        UncoveredRequest::NAME => {
            let input = UncoveredRequestInput {
                message: field(case, task, i, "message")?,
                acts: field(case, task, i, "acts")?,
            };
            verdict(runner.run::<UncoveredRequest>(&input, None).outcome)
        }
        ClaimsCoverage::NAME => {
            let input =
                ClaimsCoverageInput { text: field(case, task, i, "text")?, claims: field(case, task, i, "claims")? };
            verdict(runner.run::<ClaimsCoverage>(&input, None).outcome)
        }
        Rewrite::NAME => {
            let input = RewriteInput { facts: field(case, task, i, "facts")? };
            verdict(runner.run::<Rewrite>(&input, None).outcome)
        }
        ValueClassified::NAME => {
            let input = ValueClassifiedInput {
                op: field(case, task, i, "op")?,
                field: field(case, task, i, "field")?,
                message: field(case, task, i, "message")?,
                ptr: field(case, task, i, "ptr")?,
                choices: field(case, task, i, "choices")?,
                claimed: field(case, task, i, "value")?,
                words,
            };
            verdict(runner.run::<ValueClassified>(&input, None).outcome)
        }
        other => return Err(CorpusError::UnknownTask(other.to_owned())),
    };
    Ok(CaseResult { name: case.name.clone(), expect: case.expect, got })
}
