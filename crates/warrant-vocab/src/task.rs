//! The model tasks by name: the one enum that contracts, prompts, budgets and replay records
//! name them by, and the lists of the checks a contract may declare.

use serde::{Deserialize, Serialize};

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
    /// "Which of the closed set do these pointed words give?" Declared on an `enum` with
    /// `evidence` (`check = ["value_classified"]`), in place of `value_stated`: the model is
    /// shown the user's words and the set, never the id the agent chose, and the check passes
    /// only when its choice is that id.
    ValueClassified,
}

impl ModelTask {
    /// Every task, in the order contracts list them.
    pub const ALL: [ModelTask; 6] = [
        ModelTask::ValueStated,
        ModelTask::Locate,
        ModelTask::UncoveredRequest,
        ModelTask::ClaimsCoverage,
        ModelTask::Rewrite,
        ModelTask::ValueClassified,
    ];

    /// The task's name, as serialized.
    pub const fn name(self) -> &'static str {
        match self {
            ModelTask::ValueStated => "value_stated",
            ModelTask::Locate => "locate",
            ModelTask::UncoveredRequest => "uncovered_request",
            ModelTask::ClaimsCoverage => "claims_coverage",
            ModelTask::Rewrite => "rewrite",
            ModelTask::ValueClassified => "value_classified",
        }
    }

    /// The task's name, as serialized and as hashed into check ids (the same as [`ModelTask::name`]).
    pub const fn as_str(self) -> &'static str {
        self.name()
    }

    /// The task of that name, if there is one.
    pub fn from_name(name: &str) -> Option<ModelTask> {
        ModelTask::ALL.into_iter().find(|task| task.name() == name)
    }
}

impl PartialEq<str> for ModelTask {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for ModelTask {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl std::fmt::Display for ModelTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The semantic checks a contract may declare on an argument (`check = ["value_stated"]`).
pub const ARG_CHECKS: &[ModelTask] = &[ModelTask::ValueStated, ModelTask::ValueClassified];

/// The checks a contract may run once per turn (`[model] checks = ["uncovered_request"]`).
pub const TURN_CHECKS: &[ModelTask] = &[ModelTask::UncoveredRequest];

/// Every model task a contract may give limits to (`[model.tasks.NAME]`); warrant-model runs
/// exactly these.
pub const MODEL_TASKS: &[ModelTask] = &ModelTask::ALL;

/// The task of that name among `tasks`, if it is one of them.
pub fn named_in(tasks: &[ModelTask], name: &str) -> Option<ModelTask> {
    tasks.iter().copied().find(|task| task.name() == name)
}

/// The names of `tasks`, separated by commas, for the errors that list what a contract may name.
pub fn names(tasks: &[ModelTask]) -> String {
    tasks.iter().map(|task| task.name()).collect::<Vec<_>>().join(", ")
}

/// [`ModelTask::ValueStated`]'s name.
pub const VALUE_STATED: &str = ModelTask::ValueStated.name();

/// [`ModelTask::ValueClassified`]'s name.
pub const VALUE_CLASSIFIED: &str = ModelTask::ValueClassified.name();

/// [`ModelTask::Locate`]'s name.
pub const LOCATE: &str = ModelTask::Locate.name();

/// [`ModelTask::UncoveredRequest`]'s name.
pub const UNCOVERED_REQUEST: &str = ModelTask::UncoveredRequest.name();
