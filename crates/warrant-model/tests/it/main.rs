//! Integration tests of warrant-model: tasks through scripted, recorded and HTTP providers;
//! repair rounds, retries, budgets and failures that can only take away; concurrency; and the
//! scan of the public API for functions that would decide meaning from two strings; and the
//! dependency closure, which holds no Cedar, TOML or ICU.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod api;
mod checks;
mod closure;
mod http;
mod tasks;

use std::sync::Mutex;
use std::time::Duration;

use warrant_model::{BudgetLimits, ChatAnswer, ChatRequest, Provider, ProviderError};

/// A provider that answers from a list, in order, and keeps every request.
#[derive(Debug)]
pub struct Scripted {
    answers: Mutex<Vec<Result<String, ProviderError>>>,
    pub seen: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    pub fn new(answers: Vec<Result<&str, ProviderError>>) -> Scripted {
        let mut answers: Vec<Result<String, ProviderError>> =
            answers.into_iter().map(|a| a.map(str::to_owned)).collect();
        answers.reverse();
        Scripted { answers: Mutex::new(answers), seen: Mutex::new(Vec::new()) }
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Provider for Scripted {
    fn complete(&self, request: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        self.seen.lock().unwrap().push(request.clone());
        let next = self.answers.lock().unwrap().pop().expect("the script ran out");
        next.map(|content| ChatAnswer { content, prompt_tokens: 10, completion_tokens: 5 })
    }
}

pub fn roomy() -> BudgetLimits {
    BudgetLimits { calls: 50, tokens: 100_000, deadline: Duration::from_secs(60) }
}
