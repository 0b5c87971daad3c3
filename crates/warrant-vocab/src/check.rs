//! Semantic checks as data: the question a decision needs a model task to answer
//! ([`CheckRequest`], keyed by a content hash of the question) and the answers
//! ([`CheckAnswer`]), which can only take away. warrant-core names the questions and reads the
//! answers (`warrant_core::check`); warrant-model answers them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::id::derive_id;
use crate::pointer::TextPointer;
use crate::task::ModelTask;

/// A question the decision needs answered before an act may go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRequest {
    /// A content hash of the question: the same question always has the same id, and an answer
    /// to another question can never be taken for this one.
    pub id: String,
    /// The task (`value_stated`).
    pub task: ModelTask,
    /// The operation of the act.
    pub op: String,
    /// The argument checked.
    pub arg: String,
    /// The value code sliced from the user's message.
    pub value: String,
    /// The pointer's first and last word (from 1).
    pub ptr: [u32; 2],
    /// The user's message the pointer points into.
    pub message: String,
    /// For `uncovered_request`: the turn's proposed acts, each as `op {args}`. Absent from
    /// the records of every other check, so those read and hash as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acts: Vec<String>,
    /// For `value_classified`: the closed set the pointed words are judged against (the enum's
    /// ids, in the contract's order). Absent from the records of every other check, so those
    /// read and hash as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

impl CheckRequest {
    /// The question for `task` about argument `arg` of `op`, whose value `value` code sliced
    /// from words `ptr` of `message`.
    pub fn new(task: ModelTask, op: &str, arg: &str, value: &str, ptr: [u32; 2], message: &str) -> CheckRequest {
        let (from, to) = (ptr[0].to_string(), ptr[1].to_string());
        let id = derive_id("chk", &[task.as_str(), op, arg, value, &from, &to, message]);
        CheckRequest {
            id,
            task,
            op: op.to_owned(),
            arg: arg.to_owned(),
            value: value.to_owned(),
            ptr,
            message: message.to_owned(),
            acts: Vec::new(),
            choices: Vec::new(),
        }
    }

    /// The `value_classified` question about argument `arg` of `op`: which of `choices` the
    /// words `ptr` of `message` give, the agent having chosen `id`. The id is part of the
    /// question (an answer is read against it), but the model is never shown it.
    pub fn classified(op: &str, arg: &str, id: &str, ptr: [u32; 2], message: &str, choices: &[String]) -> CheckRequest {
        let task = ModelTask::ValueClassified;
        let (from, to) = (ptr[0].to_string(), ptr[1].to_string());
        let mut parts: Vec<&str> = vec![task.as_str(), op, arg, id, &from, &to, message];
        parts.extend(choices.iter().map(String::as_str));
        CheckRequest {
            id: derive_id("chk", &parts),
            task,
            op: op.to_owned(),
            arg: arg.to_owned(),
            value: id.to_owned(),
            ptr,
            message: message.to_owned(),
            acts: Vec::new(),
            choices: choices.to_vec(),
        }
    }

    /// The `locate` question for the plain value `proposed` an agent gave argument `arg` of
    /// `op`: it has no pointer yet, so `ptr` is `[0, 0]`, a pointer no message holds.
    pub fn locate(op: &str, arg: &str, proposed: &str, message: &str) -> CheckRequest {
        CheckRequest::new(ModelTask::Locate, op, arg, proposed, [0, 0], message)
    }

    /// The turn's `uncovered_request` question over the latest user `message` and the turn's
    /// proposed `acts`.
    pub fn uncovered(message: &str, acts: Vec<String>) -> CheckRequest {
        let mut parts: Vec<&str> = vec![ModelTask::UncoveredRequest.as_str(), message];
        parts.extend(acts.iter().map(String::as_str));
        let id = derive_id("chk", &parts);
        CheckRequest {
            id,
            task: ModelTask::UncoveredRequest,
            op: String::new(),
            arg: String::new(),
            value: String::new(),
            ptr: [0, 0],
            message: message.to_owned(),
            acts,
            choices: Vec::new(),
        }
    }
}

/// What a model task concluded. No variant authorizes anything: `Pass` only means the task
/// found nothing to take away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckVerdict {
    /// Nothing to take away.
    Pass,
    /// The task found the input wrong (e.g. the value is not what the user said).
    Block,
    /// The input must be repaired by the model that proposed it.
    Repair,
    /// The task cannot tell; the user is asked.
    Ask,
}

/// Why a check did not produce a verdict. Each counts as failed, never as passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckFailure {
    /// The turn's or the task's budget (calls, tokens, deadline) ran out.
    Budget,
    /// The provider did not answer in time.
    Timeout,
    /// The provider could not be reached or answered with an error.
    Provider,
    /// The answer did not fit the task's schema, also after the repair round.
    InvalidAnswer,
    /// No answer was supplied (no provider configured, or the check was never run).
    Unfinished,
}

/// The answer to one check, as the engine (or a replay) supplies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckAnswer {
    /// The task answered.
    Verdict {
        /// What it concluded.
        verdict: CheckVerdict,
    },
    /// The `locate` task found the words: a pointer into the message, which code resolves by
    /// the copy-narrowing rule exactly as if the agent had sent it. It is no verdict: the
    /// words it holds still face structure and `value_stated`.
    Located {
        /// The pointer the model gave (narrowed by its copy), never the value's text.
        pointer: TextPointer,
    },
    /// The task could not answer.
    Failed {
        /// Why.
        failure: CheckFailure,
        /// What happened, on one line.
        detail: String,
    },
}

/// Answers by check id.
pub type CheckAnswers = BTreeMap<String, CheckAnswer>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids of these questions, as warrant-core derived them before the checks moved here:
    /// replay records and cassettes keep them, so they never change.
    #[test]
    fn check_ids_are_pinned() {
        let stated = CheckRequest::new(
            ModelTask::ValueStated,
            "rename",
            "name",
            "needs changing",
            [3, 4],
            "the name needs changing",
        );
        assert_eq!(stated.id, "chk_958e651373e9db6492b619e3d8ddea4c");
        let uncovered =
            CheckRequest::uncovered("cancel it and change my address", vec!["cancel_pending_order {}".to_owned()]);
        assert_eq!(uncovered.id, "chk_92015f31dec56572d24370d07a8e7e9b");
    }

    #[test]
    fn a_classification_s_id_covers_its_choices_and_the_id_chosen() {
        let choices = ["health".to_owned(), "weather".to_owned()];
        let ask = |id: &str, choices: &[String]| {
            CheckRequest::classified("cancel", "reason", id, [1, 3], "I feel unwell", choices)
        };
        let a = ask("health", &choices);
        assert_eq!(a.id, ask("health", &choices).id);
        assert_ne!(a.id, ask("weather", &choices).id);
        assert_ne!(a.id, ask("health", &choices[..1]).id);
        // Not the same question as `value_stated` about the same words.
        assert_ne!(
            a.id,
            CheckRequest::new(ModelTask::ValueStated, "cancel", "reason", "health", [1, 3], "I feel unwell").id
        );
        // Its choices travel with it; every other check's record reads as before.
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["choices"], serde_json::json!(["health", "weather"]));
        let stated =
            serde_json::to_value(CheckRequest::new(ModelTask::ValueStated, "o", "a", "v", [1, 1], "v")).unwrap();
        assert!(stated.get("choices").is_none());
    }
}
