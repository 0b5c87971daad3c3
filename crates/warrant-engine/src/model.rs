//! The engine's side of step 4: a model provider with its budget and prompts, and one round of
//! a turn's checks through it. Without a provider every check fails as unfinished, so the acts
//! that need one are asked, never committed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use warrant_core::check::{CheckAnswer, CheckFailure, CheckRequest};
use warrant_core::ladder::{Promotion, PromotionRecord};
use warrant_core::pointer::UAX29;
use warrant_model::tasks::TASKS;
use warrant_model::{
    BudgetLimits, CheckRound, PromptVersion, Prompts, Provider, Runner, TaskLimits, TurnBudget, run_checks,
};
use warrant_store::Store;

use crate::EngineError;

/// How many rounds of checks one decision may take.
pub(crate) const ROUNDS: usize = 3;

/// A model provider and how the engine uses it: give it to the builder as
/// [`ModelSource::Setup`](crate::ModelSource::Setup). Each engine the builder makes gets a copy,
/// all sharing the one provider.
#[derive(Clone)]
pub struct ModelSetup {
    /// Where requests go (a live endpoint, a recording, a recorder).
    pub provider: Arc<dyn Provider>,
    /// The model name sent with each request.
    pub model: String,
    /// Each turn's budget.
    pub limits: BudgetLimits,
    /// How many checks run at once.
    pub parallel: usize,
    /// The prompt of each task; the store's active versions replace the built-in ones.
    pub prompts: Prompts,
    /// Limits that replace a task's own, by task name. Each engine made with this setup adds
    /// the contract's `[model.tasks.NAME]` limits for the tasks not named here.
    pub task_limits: BTreeMap<String, TaskLimits>,
}

impl std::fmt::Debug for ModelSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSetup").field("model", &self.model).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl ModelSetup {
    /// `provider` with the default budget, eight checks at once and the built-in prompts.
    pub fn new(provider: Box<dyn Provider>, model: &str) -> ModelSetup {
        ModelSetup {
            provider: Arc::from(provider),
            model: model.to_owned(),
            limits: BudgetLimits::default(),
            parallel: 8,
            prompts: Prompts::default(),
            task_limits: BTreeMap::new(),
        }
    }

    pub(crate) fn turn_budget(&self) -> TurnBudget {
        TurnBudget::new(self.limits, Instant::now()).with_task_limits(self.task_limits.clone())
    }
}

/// The ladder subject a task's prompt versions are promoted under.
pub fn prompt_subject(task: &str) -> String {
    format!("prompt:{task}")
}

/// The version of `task`'s prompt the ladder made active: the stored promotion of
/// `prompt:TASK`, admitted only while its record still clears its bars. A record that does not
/// read back, or no longer clears them, leaves the built-in prompt in force.
pub fn active_prompt<S: Store + ?Sized>(store: &mut S, task: &str) -> Result<Option<String>, EngineError> {
    let Some(row) = store.promotion(&prompt_subject(task))? else { return Ok(None) };
    let Ok(record) = serde_json::from_value::<PromotionRecord>(row.record) else { return Ok(None) };
    Ok(Promotion::admit(&record, &record.subject).ok().map(|p| p.record().subject.version.clone()))
}

/// Replaces built-in prompts with the versions the registry made active.
pub(crate) fn load_active_prompts<S: Store>(store: &mut S, model: &mut ModelSetup) -> Result<(), EngineError> {
    for task in TASKS {
        let Some(version) = active_prompt(store, task)? else { continue };
        let row = store.prompt(task, &version)?.ok_or_else(|| EngineError::Corrupt {
            what: format!("prompt registry of `{task}`"),
            message: format!("the active version `{version}` is not kept"),
        })?;
        model.prompts.set(PromptVersion { task: row.task, version: row.version, text: row.text });
    }
    Ok(())
}

/// Runs one round of checks; without a model each fails as unfinished.
pub(crate) fn run(model: Option<&ModelSetup>, budget: Option<&TurnBudget>, requests: &[CheckRequest]) -> CheckRound {
    match (model, budget) {
        (Some(model), Some(budget)) => {
            let runner =
                Runner { provider: model.provider.as_ref(), model: &model.model, budget, prompts: &model.prompts };
            run_checks(&runner, requests, model.parallel, UAX29)
        }
        _ => {
            let mut round = CheckRound::default();
            for request in requests {
                let detail = "no model provider is configured".to_owned();
                round
                    .answers
                    .insert(request.id.clone(), CheckAnswer::Failed { failure: CheckFailure::Unfinished, detail });
            }
            round
        }
    }
}
