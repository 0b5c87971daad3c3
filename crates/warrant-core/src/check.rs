//! Semantic checks as the pure core sees them (docs/design.md §3 step 4, rule 4): the questions a
//! decision needs a model task to answer, and the answers, supplied as inputs. The core never
//! calls a model. It names the checks an act needs once the act has passed structure, and it
//! reads their answers, which can only take away: a missing, failed, blocking or unsure answer
//! turns the act into a question (or a refusal), and a passing answer only lets the act go on
//! to policy, which still decides.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::id::derive_id;
use crate::pointer::TextPointer;
use crate::reason::ReasonCode;
use crate::verdict::Finding;

/// The model tasks, by the names contracts, prompts and replay records write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelTask {
    /// "Is this pointed value what the user said?" Declared on `text` arguments.
    ValueStated,
    /// "Which words of the user's message give this plain value?" Asked when an agent proposes a
    /// plain string for a `text` argument instead of a pointer; its answer is a pointer that code
    /// checks as if the agent had sent it.
    Locate,
    /// "Does the latest user message hold a request that no act of the turn covers?" Asked once
    /// per turn when the contract's `[model]` section names it.
    UncoveredRequest,
    /// "Does the text state more than its backed claims?" The outbound gate's coverage check.
    ClaimsCoverage,
    /// The outbound gate's rewrite of a draft from its backed claims.
    Rewrite,
}

impl ModelTask {
    /// Every task, in the order contracts list them.
    pub const ALL: [ModelTask; 5] = [
        ModelTask::ValueStated,
        ModelTask::Locate,
        ModelTask::UncoveredRequest,
        ModelTask::ClaimsCoverage,
        ModelTask::Rewrite,
    ];

    /// The task's name, as serialized.
    pub const fn name(self) -> &'static str {
        match self {
            ModelTask::ValueStated => "value_stated",
            ModelTask::Locate => "locate",
            ModelTask::UncoveredRequest => "uncovered_request",
            ModelTask::ClaimsCoverage => "claims_coverage",
            ModelTask::Rewrite => "rewrite",
        }
    }

    /// The task of that name, if there is one.
    pub fn from_name(name: &str) -> Option<ModelTask> {
        ModelTask::ALL.into_iter().find(|task| task.name() == name)
    }
}

impl std::fmt::Display for ModelTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The semantic checks a contract may declare on an argument (`check = ["value_stated"]`).
pub const ARG_CHECKS: &[&str] = &[VALUE_STATED];

/// The checks a contract may run once per turn (`[model] checks = ["uncovered_request"]`).
pub const TURN_CHECKS: &[&str] = &[UNCOVERED_REQUEST];

/// Every model task a contract may give limits to (`[model.tasks.NAME]`); warrant-model runs
/// exactly these.
pub const MODEL_TASKS: &[&str] = &[
    ModelTask::ValueStated.name(),
    ModelTask::Locate.name(),
    ModelTask::UncoveredRequest.name(),
    ModelTask::ClaimsCoverage.name(),
    ModelTask::Rewrite.name(),
];

/// [`ModelTask::ValueStated`]'s name.
pub const VALUE_STATED: &str = ModelTask::ValueStated.name();

/// [`ModelTask::Locate`]'s name.
pub const LOCATE: &str = ModelTask::Locate.name();

/// [`ModelTask::UncoveredRequest`]'s name.
pub const UNCOVERED_REQUEST: &str = ModelTask::UncoveredRequest.name();

/// A question the decision needs answered before an act may go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRequest {
    /// A content hash of the question: the same question always has the same id, and an answer
    /// to another question can never be taken for this one.
    pub id: String,
    /// The task (`value_stated`).
    pub task: String,
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
}

impl CheckRequest {
    /// The question for `task` about argument `arg` of `op`, whose value `value` code sliced
    /// from words `ptr` of `message`.
    pub fn new(task: &str, op: &str, arg: &str, value: &str, ptr: [u32; 2], message: &str) -> CheckRequest {
        let (from, to) = (ptr[0].to_string(), ptr[1].to_string());
        let id = derive_id("chk", &[task, op, arg, value, &from, &to, message]);
        CheckRequest {
            id,
            task: task.to_owned(),
            op: op.to_owned(),
            arg: arg.to_owned(),
            value: value.to_owned(),
            ptr,
            message: message.to_owned(),
            acts: Vec::new(),
        }
    }

    /// The `locate` question for the plain value `proposed` an agent gave argument `arg` of
    /// `op`: it has no pointer yet, so `ptr` is `[0, 0]`, a pointer no message holds.
    pub fn locate(op: &str, arg: &str, proposed: &str, message: &str) -> CheckRequest {
        CheckRequest::new(LOCATE, op, arg, proposed, [0, 0], message)
    }

    /// The turn's `uncovered_request` question over the latest user `message` and the turn's
    /// proposed `acts`.
    pub fn uncovered(message: &str, acts: Vec<String>) -> CheckRequest {
        let mut parts: Vec<&str> = vec![UNCOVERED_REQUEST, message];
        parts.extend(acts.iter().map(String::as_str));
        let id = derive_id("chk", &parts);
        CheckRequest {
            id,
            task: UNCOVERED_REQUEST.to_owned(),
            op: String::new(),
            arg: String::new(),
            value: String::new(),
            ptr: [0, 0],
            message: message.to_owned(),
            acts,
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

/// What an answer takes away, if anything: `None` only for a passing verdict.
pub fn finding(request: &CheckRequest, answer: Option<&CheckAnswer>) -> Option<Finding> {
    let field = format!("args.{}", request.arg);
    taken(request, answer, ReasonCode::ValueNotStated).map(|f| f.field(field))
}

/// The pointer a `locate` answer gives, or what the answer takes away: anything but a pointer
/// (no answer, a failure, a verdict, "not found") turns the act into a question.
pub fn located(request: &CheckRequest, answer: Option<&CheckAnswer>) -> Result<TextPointer, Finding> {
    let field = format!("args.{}", request.arg);
    match answer {
        Some(CheckAnswer::Located { pointer }) => Ok(pointer.clone()),
        Some(CheckAnswer::Verdict { verdict: CheckVerdict::Pass }) => Err(Finding::ask(ReasonCode::CheckAnswerInvalid)
            .field(field)
            .detail(format!("check `{}` passed without a pointer", request.task))),
        // "Not found", or any other verdict: the user did not give the value, so they are asked.
        Some(CheckAnswer::Verdict { .. }) => Err(Finding::ask(ReasonCode::ValueNotLocated)
            .field(field)
            .detail(format!("check `{}` found no words that give the value", request.task))),
        other => Err(taken(request, other, ReasonCode::ValueNotLocated)
            .unwrap_or_else(|| Finding::ask(ReasonCode::ValueNotLocated))
            .field(field)),
    }
}

/// What a turn-level check's answer (`uncovered_request`) takes away from every act that
/// would commit or be held: `None` only for a passing verdict.
pub fn turn_finding(request: &CheckRequest, answer: Option<&CheckAnswer>) -> Option<Finding> {
    taken(request, answer, ReasonCode::RequestUncovered)
}

/// The one mapping of answers to findings; `blocked` is the reason a blocking verdict gives.
fn taken(request: &CheckRequest, answer: Option<&CheckAnswer>, blocked: ReasonCode) -> Option<Finding> {
    let task = &request.task;
    let found = match answer {
        None => Finding::ask(ReasonCode::CheckUnfinished).detail(format!("check `{task}` has no answer")),
        Some(CheckAnswer::Verdict { verdict: CheckVerdict::Pass }) => return None,
        Some(CheckAnswer::Verdict { verdict: CheckVerdict::Block }) => {
            // A blocked value is asked for again: the user can say what they meant.
            Finding::ask(blocked).detail(format!("check `{task}` blocked"))
        }
        Some(CheckAnswer::Verdict { verdict: CheckVerdict::Repair }) => {
            Finding::ask(ReasonCode::CheckRepair).detail(format!("check `{task}` asks for a repair"))
        }
        Some(CheckAnswer::Verdict { verdict: CheckVerdict::Ask }) => {
            Finding::ask(ReasonCode::CheckUnsure).detail(format!("check `{task}` cannot tell"))
        }
        Some(CheckAnswer::Located { .. }) => {
            // A pointer answers no yes-or-no question: the answer does not fit the check.
            Finding::ask(ReasonCode::CheckAnswerInvalid).detail(format!("check `{task}` answered with a pointer"))
        }
        Some(CheckAnswer::Failed { failure, detail }) => {
            let code = match failure {
                CheckFailure::Budget => ReasonCode::CheckBudgetExhausted,
                CheckFailure::Timeout => ReasonCode::CheckTimeout,
                CheckFailure::Provider => ReasonCode::CheckProviderFailed,
                CheckFailure::InvalidAnswer => ReasonCode::CheckAnswerInvalid,
                CheckFailure::Unfinished => ReasonCode::CheckUnfinished,
            };
            Finding::ask(code).detail(format!("check `{task}`: {detail}"))
        }
    };
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    #[test]
    fn a_model_task_is_serialized_as_its_name() {
        for task in ModelTask::ALL {
            assert_eq!(serde_json::to_value(task).unwrap(), serde_json::Value::String(task.name().to_owned()));
            assert_eq!(ModelTask::from_name(task.name()), Some(task));
        }
        assert_eq!(MODEL_TASKS, ModelTask::ALL.map(ModelTask::name));
        assert_eq!(ModelTask::from_name("value-stated"), None);
    }

    fn request() -> CheckRequest {
        CheckRequest::new(VALUE_STATED, "rename", "name", "needs changing", [3, 4], "the name needs changing")
    }

    #[test]
    fn only_a_passing_verdict_takes_nothing_away() {
        let r = request();
        assert_eq!(finding(&r, Some(&CheckAnswer::Verdict { verdict: CheckVerdict::Pass })), None);
        let mut taken = vec![finding(&r, None)];
        for verdict in [CheckVerdict::Block, CheckVerdict::Repair, CheckVerdict::Ask] {
            taken.push(finding(&r, Some(&CheckAnswer::Verdict { verdict })));
        }
        for failure in [
            CheckFailure::Budget,
            CheckFailure::Timeout,
            CheckFailure::Provider,
            CheckFailure::InvalidAnswer,
            CheckFailure::Unfinished,
        ] {
            taken.push(finding(&r, Some(&CheckAnswer::Failed { failure, detail: "x".into() })));
        }
        for f in taken {
            let f = f.expect("takes away");
            assert_eq!(f.verdict, Verdict::Ask);
            assert_eq!(f.reason.field.as_deref(), Some("args.name"));
        }
    }

    #[test]
    fn the_id_is_a_hash_of_the_whole_question() {
        let a = request();
        let b = CheckRequest::new(VALUE_STATED, "rename", "name", "needs changing", [3, 4], "the name needs changing!");
        assert_ne!(a.id, b.id);
        assert_eq!(a.id, request().id);
    }
}
