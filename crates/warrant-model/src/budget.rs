//! Budgets (docs/design.md §6): a turn may spend so many model calls, so many tokens and so much
//! time on its checks, and each task so many calls. A budget that runs out fails the check; it
//! never lets one pass.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use warrant_vocab::model::ModelConfig;

/// A turn's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Model calls, repairs and retries included.
    pub calls: u32,
    /// Tokens, prompt and completion together; a call reserves its task's `max_tokens` first.
    pub tokens: u32,
    /// Time from the start of the turn's checks.
    pub deadline: Duration,
}

impl Default for BudgetLimits {
    fn default() -> Self {
        BudgetLimits { calls: 24, tokens: 24_000, deadline: Duration::from_secs(30) }
    }
}

/// One task's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Calls for one run of the task: the first, one repair round, and retries in place.
    pub calls: u32,
    /// Completion tokens per call.
    pub max_tokens: u32,
    /// The longest one call may take.
    pub timeout: Duration,
}

#[derive(Debug)]
struct Left {
    calls: u32,
    tokens: u32,
}

/// What a turn has left; shared by the threads running its checks.
#[derive(Debug)]
pub struct TurnBudget {
    left: Mutex<Left>,
    deadline: Instant,
    /// Limits that replace a task's own (from the contract's `[model.tasks.NAME]`).
    tasks: BTreeMap<String, TaskLimits>,
}

/// A call the budget allowed, with the tokens it holds until it is settled.
#[derive(Debug)]
#[must_use]
pub(crate) struct Reservation {
    tokens: u32,
    pub(crate) timeout: Duration,
}

impl TurnBudget {
    /// A fresh budget whose deadline counts from `start`.
    pub fn new(limits: BudgetLimits, start: Instant) -> TurnBudget {
        TurnBudget {
            left: Mutex::new(Left { calls: limits.calls, tokens: limits.tokens }),
            deadline: start + limits.deadline,
            tasks: BTreeMap::new(),
        }
    }

    /// The same budget, with `tasks`' limits in place of those tasks' own.
    pub fn with_task_limits(mut self, tasks: BTreeMap<String, TaskLimits>) -> TurnBudget {
        self.tasks = tasks;
        self
    }

    /// The limits task `task` runs under: the replacement given for it, or its own.
    pub fn task_limits(&self, task: &str, own: TaskLimits) -> TaskLimits {
        self.tasks.get(task).copied().unwrap_or(own)
    }

    /// Takes one call and `tokens` tokens, with the time left (at most `timeout`), or says
    /// which limit ran out.
    pub(crate) fn reserve(&self, tokens: u32, timeout: Duration) -> Result<Reservation, String> {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err("the turn's deadline has passed".into());
        }
        let mut left = self.left.lock().map_err(|_| "the budget is poisoned".to_owned())?;
        if left.calls == 0 {
            return Err("the turn has no model calls left".into());
        }
        if left.tokens < tokens {
            return Err(format!("the turn has {} tokens left, the call needs {tokens}", left.tokens));
        }
        left.calls -= 1;
        left.tokens -= tokens;
        Ok(Reservation { tokens, timeout: timeout.min(remaining) })
    }

    /// Returns what a call reserved and did not use.
    pub(crate) fn settle(&self, reservation: Reservation, used: u32) {
        if let Ok(mut left) = self.left.lock() {
            left.tokens = left.tokens.saturating_add(reservation.tokens.saturating_sub(used));
        }
    }
}

impl BudgetLimits {
    /// The turn budget a contract's `[model]` section gives, the defaults where it says nothing.
    pub fn from_contract(config: &ModelConfig) -> BudgetLimits {
        let default = BudgetLimits::default();
        BudgetLimits {
            calls: config.turn_calls.unwrap_or(default.calls),
            tokens: config.turn_tokens.unwrap_or(default.tokens),
            deadline: config.turn_deadline_ms.map_or(default.deadline, Duration::from_millis),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warrant_vocab::task::ModelTask;

    #[test]
    fn calls_and_tokens_run_out() {
        let budget =
            TurnBudget::new(BudgetLimits { calls: 2, tokens: 100, deadline: Duration::from_secs(60) }, Instant::now());
        let r = budget.reserve(60, Duration::from_secs(1)).unwrap();
        assert!(budget.reserve(60, Duration::from_secs(1)).is_err(), "40 tokens left");
        budget.settle(r, 10);
        let r = budget.reserve(60, Duration::from_secs(1)).unwrap();
        budget.settle(r, 60);
        assert!(budget.reserve(1, Duration::from_secs(1)).unwrap_err().contains("no model calls"));
    }

    #[test]
    fn a_task_runs_under_the_limits_given_for_it() {
        let own = TaskLimits { calls: 3, max_tokens: 24, timeout: Duration::from_secs(20) };
        let tighter = TaskLimits { calls: 1, max_tokens: 8, timeout: Duration::from_secs(2) };
        let budget = TurnBudget::new(BudgetLimits::default(), Instant::now())
            .with_task_limits(BTreeMap::from([(ModelTask::Locate.name().to_owned(), tighter)]));
        assert_eq!(budget.task_limits(ModelTask::Locate.name(), own), tighter);
        assert_eq!(budget.task_limits(ModelTask::ValueStated.name(), own), own);
    }

    #[test]
    fn a_passed_deadline_allows_nothing() {
        let budget = TurnBudget::new(BudgetLimits { calls: 9, tokens: 999, deadline: Duration::ZERO }, Instant::now());
        assert!(budget.reserve(1, Duration::from_secs(1)).unwrap_err().contains("deadline"));
    }
}
