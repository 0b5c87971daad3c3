//! What a turn's checks add to its latency (docs/design.md §15: its slowest check plus at most 1 ms,
//! not the sum). Four `value_stated` checks against a provider that takes 5 ms per answer, run
//! concurrently as the engine runs them and, in the same run, one after another as a naive
//! baseline. The concurrent time less 5 ms is the overhead of threads, budget, prompt
//! rendering, parsing and records.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::time::{Duration, Instant};

use divan::Bencher;
use warrant_core::pointer::UAX29;
use warrant_model::{
    BudgetLimits, ChatAnswer, ChatRequest, Prompts, Provider, ProviderError, Runner, TurnBudget, run_checks,
};
use warrant_vocab::check::CheckRequest;
use warrant_vocab::task::ModelTask;

fn main() {
    divan::main();
}

/// A model that takes `latency` to say yes.
struct Slow(Duration);

impl Provider for Slow {
    fn complete(&self, _: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        std::thread::sleep(self.0);
        Ok(ChatAnswer { content: r#"{"answer":"yes"}"#.into(), prompt_tokens: 40, completion_tokens: 4 })
    }
}

fn requests() -> Vec<CheckRequest> {
    (0..4)
        .map(|i| {
            CheckRequest::new(
                ModelTask::ValueStated,
                "rename",
                &format!("arg{i}"),
                "Kim Lee",
                [6, 7],
                "please change the name to Kim Lee",
            )
        })
        .collect()
}

/// `parallel = 8`: as the engine runs them; `parallel = 1`: the sequential baseline.
#[divan::bench(args = [8, 1], sample_count = 20)]
fn four_checks_of_5_ms(bencher: Bencher, parallel: usize) {
    let provider = Slow(Duration::from_millis(5));
    let prompts = Prompts::default();
    let requests = requests();
    bencher.bench_local(|| {
        let budget = TurnBudget::new(BudgetLimits::default(), Instant::now());
        let runner = Runner { provider: &provider, model: "m", budget: &budget, prompts: &prompts };
        run_checks(&runner, &requests, parallel, UAX29)
    });
}
