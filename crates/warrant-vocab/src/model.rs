//! The contract's `[model]` section, checked: where the model tasks run and within what limits
//! (docs/design.md §6). warrant-core reads it from the contract (and re-exports it as
//! `warrant_core::contract::{ModelConfig, TaskConfig}`); warrant-model turns it into an endpoint
//! and budgets.

/// The `[model]` section, checked. Every field is optional; an absent section runs no
/// turn-level check and leaves the endpoint and budgets to the environment and defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelConfig {
    /// The OpenAI-compatible endpoint's base URL (`http://…` or `https://…`).
    pub base_url: Option<String>,
    /// The model name sent with each request.
    pub model: Option<String>,
    /// The name of the environment variable that holds the bearer key.
    pub key_env: Option<String>,
    /// How long connecting may take, in milliseconds.
    pub connect_timeout_ms: Option<u64>,
    /// A turn's model calls.
    pub turn_calls: Option<u32>,
    /// A turn's tokens.
    pub turn_tokens: Option<u32>,
    /// A turn's deadline for its checks, in milliseconds.
    pub turn_deadline_ms: Option<u64>,
    /// Limits of single tasks, by task name (a member of [`crate::task::MODEL_TASKS`]).
    pub tasks: std::collections::BTreeMap<String, TaskConfig>,
    /// The turn-level checks that run (members of [`crate::task::TURN_CHECKS`]).
    pub checks: Vec<String>,
}

impl ModelConfig {
    /// Whether the turn-level check `check` runs.
    pub fn runs(&self, check: &str) -> bool {
        self.checks.iter().any(|c| c == check)
    }
}

/// One task's limits in `[model.tasks.NAME]`; what is absent keeps the task's own limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskConfig {
    /// Calls for one run of the task (the first, the repair round, retries).
    pub calls: Option<u32>,
    /// Completion tokens per call.
    pub max_tokens: Option<u32>,
    /// The longest one call may take, in milliseconds.
    pub timeout_ms: Option<u64>,
}
