//! Semantic checks as the pure core sees them (docs/design.md §3 step 4, rule 4): the questions a
//! decision needs a model task to answer, and the answers, supplied as inputs. The core never
//! calls a model. It names the checks an act needs once the act has passed structure, and it
//! reads their answers, which can only take away: a missing, failed, blocking or unsure answer
//! turns the act into a question (or a refusal), and a passing answer only lets the act go on
//! to policy, which still decides.

pub use warrant_vocab::check::{CheckAnswer, CheckAnswers, CheckFailure, CheckRequest, CheckVerdict};
pub use warrant_vocab::task::{
    ARG_CHECKS, LOCATE, MODEL_TASKS, ModelTask, TURN_CHECKS, UNCOVERED_REQUEST, VALUE_CLASSIFIED, VALUE_STATED,
    named_in, names,
};

use crate::pointer::TextPointer;
use crate::reason::ReasonCode;
use crate::verdict::Finding;

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
        assert_eq!(MODEL_TASKS, ModelTask::ALL);
        assert_eq!(ModelTask::from_name("value-stated"), None);
    }

    fn request() -> CheckRequest {
        CheckRequest::new(ModelTask::ValueStated, "rename", "name", "needs changing", [3, 4], "the name needs changing")
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
        let b = CheckRequest::new(
            ModelTask::ValueStated,
            "rename",
            "name",
            "needs changing",
            [3, 4],
            "the name needs changing!",
        );
        assert_ne!(a.id, b.id);
        assert_eq!(a.id, request().id);
    }
}
