//! The model tasks. Each asks one small question and reads the answer into a verdict that can
//! only take away (pass, block, repair, ask). Where the answer points into the user's words,
//! code resolves the pointer and slices the words; the model's copy never becomes a value.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use warrant_vocab::check::CheckVerdict;
use warrant_vocab::model::ModelConfig;
use warrant_vocab::pointer::{self, NumberedText, TextPointer, WordRule};
use warrant_vocab::task::ModelTask;

use crate::budget::TaskLimits;
pub use crate::task::Task;

fn parse<'a, T: Deserialize<'a>>(answer: &'a str) -> Result<T, String> {
    serde_json::from_str(answer.trim()).map_err(|e| e.to_string())
}

fn three_way(property: &str) -> Value {
    json!({
        "type": "object",
        "properties": {property: {"type": "string", "enum": ["yes", "no", "unsure"]}},
        "required": [property],
        "additionalProperties": false
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum YesNo {
    Yes,
    No,
    Unsure,
}

fn limits(max_tokens: u32) -> TaskLimits {
    TaskLimits { calls: 3, max_tokens, timeout: Duration::from_secs(20) }
}

/// The question of a task: one JSON object between `<data>` and `</data>`. Everything a user, an
/// agent or a model wrote, and every fact, is a JSON string or value inside it, never prose of
/// the prompt: a draft that writes "Allowed claims:" is a string that says so, not a list. `<`,
/// `>` and `&` are escaped (`\u003c`…), so nothing inside can close the block or open another.
pub fn data_block(data: &Value) -> String {
    let json = data.to_string().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026");
    format!("<data>\n{json}\n</data>")
}

/// A list of JSON texts as values; an item that is not JSON stays a string.
fn values(items: &[String]) -> Vec<Value> {
    items.iter().map(|item| serde_json::from_str(item).unwrap_or_else(|_| Value::String(item.clone()))).collect()
}

/// "Is this pointed value what the user said?"
#[derive(Debug)]
pub struct ValueStated;

/// What `value_stated` is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueStatedInput {
    /// The operation the value is for.
    pub op: String,
    /// The argument (field) the value is for.
    pub field: String,
    /// The user's message.
    pub message: String,
    /// The words pointed at (from 1, inclusive).
    pub ptr: [u32; 2],
    /// The words code sliced.
    pub value: String,
    /// The rule the message's words are numbered by (`warrant_core::pointer::UAX29`).
    pub words: WordRule,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stated {
    answer: YesNo,
}

impl Task for ValueStated {
    type Input = ValueStatedInput;
    type Output = ();
    const TASK: ModelTask = ModelTask::ValueStated;

    fn prompt() -> &'static str {
        include_str!("../prompts/value_stated.md")
    }

    fn schema() -> Value {
        three_way("answer")
    }

    fn limits() -> TaskLimits {
        limits(24)
    }

    fn question(input: &ValueStatedInput) -> String {
        let [from, to] = input.ptr;
        data_block(&json!({
            "message": NumberedText::new(&input.message, input.words).render(),
            "action": input.op,
            "field": input.field,
            "pointed_words": {"from": from, "to": to},
            "value": input.value,
        }))
    }

    fn read(_: &ValueStatedInput, answer: &str) -> Result<(CheckVerdict, ()), String> {
        let stated: Stated = parse(answer)?;
        Ok((
            match stated.answer {
                YesNo::Yes => CheckVerdict::Pass,
                YesNo::No => CheckVerdict::Block,
                YesNo::Unsure => CheckVerdict::Ask,
            },
            (),
        ))
    }
}

/// "Which of the closed set do these pointed words give?" The model is shown the user's words
/// and the set, never the id the agent chose; code compares its choice with that id, so the
/// answer can only confirm the agent's id or take the act away.
#[derive(Debug)]
pub struct ValueClassified;

/// What `value_classified` is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueClassifiedInput {
    /// The operation the value is for.
    pub op: String,
    /// The argument (field) the value is for.
    pub field: String,
    /// The user's message.
    pub message: String,
    /// The words pointed at (from 1, inclusive).
    pub ptr: [u32; 2],
    /// The closed set, in the contract's order.
    pub choices: Vec<String>,
    /// The id the agent chose, which the answer is read against; it is not in the question.
    pub claimed: String,
    /// The rule the message's words are numbered by (`warrant_core::pointer::UAX29`).
    pub words: WordRule,
}

/// What `value_classified` answers beside a choice: the words give none of the choices.
pub const CLASSIFIED_NONE: &str = "none";
/// What `value_classified` answers beside a choice: it cannot tell.
pub const CLASSIFIED_UNSURE: &str = "unsure";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Classified {
    choice: String,
}

impl Task for ValueClassified {
    type Input = ValueClassifiedInput;
    /// The choice the model made, when it made one of the set.
    type Output = Option<String>;
    const TASK: ModelTask = ModelTask::ValueClassified;

    fn prompt() -> &'static str {
        include_str!("../prompts/value_classified.md")
    }

    fn schema() -> Value {
        // The choices differ by argument, and the schema is part of the prompt's version, so
        // the schema takes any string and `read` holds it to the question's choices.
        json!({
            "type": "object",
            "properties": {"choice": {"type": "string"}},
            "required": ["choice"],
            "additionalProperties": false
        })
    }

    fn limits() -> TaskLimits {
        limits(24)
    }

    fn question(input: &ValueClassifiedInput) -> String {
        let numbered = NumberedText::new(&input.message, input.words);
        let [from, to] = input.ptr;
        let pointer = TextPointer { entry: None, from, to, copy: None };
        // The core resolved this pointer before it asked; words that do not resolve are shown
        // as none, and the numbered message still holds them.
        let words = pointer::resolve(&numbered, &pointer).map(|r| r.value.to_owned()).unwrap_or_default();
        data_block(&json!({
            "message": numbered.render(),
            "action": input.op,
            "field": input.field,
            "pointed_words": {"from": from, "to": to},
            "words": words,
            "choices": input.choices,
        }))
    }

    fn read(input: &ValueClassifiedInput, answer: &str) -> Result<(CheckVerdict, Option<String>), String> {
        let classified: Classified = parse(answer)?;
        let choice = classified.choice;
        // Ids are compared as ids: exact members of the contract's closed set, never as words.
        if input.choices.contains(&choice) {
            let verdict = if choice == input.claimed { CheckVerdict::Pass } else { CheckVerdict::Block };
            return Ok((verdict, Some(choice)));
        }
        match choice.as_str() {
            CLASSIFIED_NONE => Ok((CheckVerdict::Block, None)),
            CLASSIFIED_UNSURE => Ok((CheckVerdict::Ask, None)),
            other => Err(format!(
                "`choice` `{}` is none of the choices, `{CLASSIFIED_NONE}` or `{CLASSIFIED_UNSURE}`",
                warrant_vocab::text::visible(other)
            )),
        }
    }
}

/// Turns a plain value an agent proposed into a pointer into the numbered user message.
#[derive(Debug)]
pub struct Locate;

/// What `locate` is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocateInput {
    /// The argument (field) the value is for.
    pub field: String,
    /// The value as the agent proposed it, in its own words.
    pub proposed: String,
    /// The user's message.
    pub message: String,
    /// The rule the message's words are numbered by and the model's copy is cut by
    /// (`warrant_core::pointer::UAX29`).
    pub words: WordRule,
}

/// A pointer the model gave and code resolved: the words are the message's, sliced by code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The pointer, narrowed by its copy where the copy narrowed it.
    pub pointer: TextPointer,
    /// The exact words of the message it holds.
    pub value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LocateAnswer {
    found: bool,
    from: u32,
    to: u32,
    copy: String,
}

impl Task for Locate {
    type Input = LocateInput;
    /// `Some` only with a passing verdict.
    type Output = Option<Located>;
    const TASK: ModelTask = ModelTask::Locate;

    fn prompt() -> &'static str {
        include_str!("../prompts/locate.md")
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "found": {"type": "boolean"},
                "from": {"type": "integer", "minimum": 0},
                "to": {"type": "integer", "minimum": 0},
                "copy": {"type": "string"}
            },
            "required": ["found", "from", "to", "copy"],
            "additionalProperties": false
        })
    }

    fn limits() -> TaskLimits {
        limits(64)
    }

    fn question(input: &LocateInput) -> String {
        data_block(&json!({
            "message": NumberedText::new(&input.message, input.words).render(),
            "field": input.field,
            "proposed_value": input.proposed,
        }))
    }

    fn read(input: &LocateInput, answer: &str) -> Result<(CheckVerdict, Option<Located>), String> {
        let found: LocateAnswer = parse(answer)?;
        if !found.found {
            // The user did not give the value: ask them for it.
            return Ok((CheckVerdict::Ask, None));
        }
        let pointer = TextPointer { entry: None, from: found.from, to: found.to, copy: Some(found.copy) };
        let numbered = NumberedText::new(&input.message, input.words);
        // A pointer that does not resolve is a structural mistake: the repair round quotes it.
        let resolved = pointer::resolve(&numbered, &pointer).map_err(|e| format!("{}: {e}", e.code()))?;
        let narrowed = TextPointer { entry: None, from: resolved.from, to: resolved.to, copy: pointer.copy };
        Ok((CheckVerdict::Pass, Some(Located { pointer: narrowed, value: resolved.value.to_owned() })))
    }
}

/// "Does the message hold a request no act covers?"
#[derive(Debug)]
pub struct UncoveredRequest;

/// What `uncovered_request` is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncoveredRequestInput {
    /// The user's message.
    pub message: String,
    /// The acts of the turn, each described by its operation and arguments.
    pub acts: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Uncovered {
    uncovered: YesNo,
}

impl Task for UncoveredRequest {
    type Input = UncoveredRequestInput;
    type Output = ();
    const TASK: ModelTask = ModelTask::UncoveredRequest;

    fn prompt() -> &'static str {
        include_str!("../prompts/uncovered_request.md")
    }

    fn schema() -> Value {
        three_way("uncovered")
    }

    fn limits() -> TaskLimits {
        limits(24)
    }

    fn question(input: &UncoveredRequestInput) -> String {
        data_block(&json!({"message": input.message, "planned_actions": input.acts}))
    }

    fn read(_: &UncoveredRequestInput, answer: &str) -> Result<(CheckVerdict, ()), String> {
        let found: Uncovered = parse(answer)?;
        Ok((
            match found.uncovered {
                // A request nobody covers is put to the user; it never adds an act.
                YesNo::Yes => CheckVerdict::Block,
                YesNo::Unsure => CheckVerdict::Ask,
                YesNo::No => CheckVerdict::Pass,
            },
            (),
        ))
    }
}

/// "Does this text claim anything its claims list does not contain?"
#[derive(Debug)]
pub struct ClaimsCoverage;

/// What `claims_coverage` is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsCoverageInput {
    /// The draft's text.
    pub text: String,
    /// Its typed claims, each as JSON text.
    pub claims: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Coverage {
    unlisted_claim: YesNo,
}

impl Task for ClaimsCoverage {
    type Input = ClaimsCoverageInput;
    type Output = ();
    const TASK: ModelTask = ModelTask::ClaimsCoverage;

    fn prompt() -> &'static str {
        include_str!("../prompts/claims_coverage.md")
    }

    fn schema() -> Value {
        three_way("unlisted_claim")
    }

    fn limits() -> TaskLimits {
        limits(24)
    }

    fn question(input: &ClaimsCoverageInput) -> String {
        data_block(&json!({"message": input.text, "allowed_claims": values(&input.claims)}))
    }

    fn read(_: &ClaimsCoverageInput, answer: &str) -> Result<(CheckVerdict, ()), String> {
        let found: Coverage = parse(answer)?;
        Ok((
            match found.unlisted_claim {
                // An unlisted claim forces the rewrite or the fallback.
                YesNo::Yes => CheckVerdict::Block,
                YesNo::Unsure => CheckVerdict::Ask,
                YesNo::No => CheckVerdict::Pass,
            },
            (),
        ))
    }
}

/// Composes a message from verified facts only. Its draft is only a draft: the outbound gate
/// checks it again like any other.
#[derive(Debug)]
pub struct Rewrite;

/// What `rewrite` is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewriteInput {
    /// The verified facts, each a JSON object (a backed claim, or a row it names).
    pub facts: Vec<String>,
}

/// A rewritten draft; not a cleared message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewrittenDraft {
    /// The text.
    pub text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rewritten {
    text: String,
}

impl Task for Rewrite {
    type Input = RewriteInput;
    /// `Some` only with a passing verdict.
    type Output = Option<RewrittenDraft>;
    const TASK: ModelTask = ModelTask::Rewrite;

    fn prompt() -> &'static str {
        include_str!("../prompts/rewrite.md")
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            // Lengths are checked by code in `read`: a length bound in the schema becomes a
            // grammar repetition that llama.cpp's server cannot afford.
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false
        })
    }

    fn limits() -> TaskLimits {
        limits(256)
    }

    fn question(input: &RewriteInput) -> String {
        data_block(&json!({"verified_facts": values(&input.facts)}))
    }

    fn read(_: &RewriteInput, answer: &str) -> Result<(CheckVerdict, Option<RewrittenDraft>), String> {
        let draft: Rewritten = parse(answer)?;
        if draft.text.trim().is_empty() {
            return Err("`text` is empty".into());
        }
        if draft.text.chars().count() > 2000 {
            return Err("`text` is longer than 2000 characters".into());
        }
        Ok((CheckVerdict::Pass, Some(RewrittenDraft { text: draft.text })))
    }
}

/// The task limits a contract's `[model.tasks.NAME]` sections give, each over the task's own
/// limits where it leaves a field out.
pub fn task_limits_from_contract(config: &ModelConfig) -> BTreeMap<String, TaskLimits> {
    config
        .tasks
        .iter()
        .filter_map(|(name, task)| {
            let own = own_limits(name)?;
            let limits = TaskLimits {
                calls: task.calls.unwrap_or(own.calls),
                max_tokens: task.max_tokens.unwrap_or(own.max_tokens),
                timeout: task.timeout_ms.map_or(own.timeout, Duration::from_millis),
            };
            Some((name.clone(), limits))
        })
        .collect()
}

/// The name of every task.
pub const TASKS: &[&str] = &[
    ValueStated::NAME,
    Locate::NAME,
    UncoveredRequest::NAME,
    ClaimsCoverage::NAME,
    Rewrite::NAME,
    ValueClassified::NAME,
];

/// The built-in limits of the task named `task`, if there is one.
pub fn own_limits(task: &str) -> Option<TaskLimits> {
    Some(match task {
        ValueStated::NAME => ValueStated::limits(),
        Locate::NAME => Locate::limits(),
        UncoveredRequest::NAME => UncoveredRequest::limits(),
        ClaimsCoverage::NAME => ClaimsCoverage::limits(),
        Rewrite::NAME => Rewrite::limits(),
        ValueClassified::NAME => ValueClassified::limits(),
        _ => return None,
    })
}
