//! One model task answered from a recording: a scripted provider answers `value_stated` once
//! while a `Recorder` writes the exchange to a cassette; then a `RecordedProvider` loaded from
//! that cassette answers the same question, with no provider behind it.
//!
//! `cargo run -p warrant-model --example recorded`

use std::time::{Duration, Instant};

use warrant_core::pointer::UAX29;
use warrant_model::tasks::{ValueStated, ValueStatedInput};
use warrant_model::{
    BudgetLimits, ChatAnswer, ChatRequest, Outcome, Prompts, Provider, ProviderError, RecordedProvider, Recorder,
    Runner, TurnBudget,
};

/// A stand-in for a model: it says the value was stated, whatever it is asked.
struct Scripted;

impl Provider for Scripted {
    fn complete(&self, _request: &ChatRequest, _timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        Ok(ChatAnswer { content: r#"{"answer":"yes"}"#.to_owned(), prompt_tokens: 40, completion_tokens: 5 })
    }
}

/// Runs `value_stated` for seed 004's rename through `provider`; the verdict, or why it failed.
fn ask(provider: &dyn Provider) -> String {
    let question = ValueStatedInput {
        op: "rename".into(),
        field: "name".into(),
        message: "please change the name to Kim Lee".into(),
        ptr: [6, 7],
        value: "Kim Lee".into(),
        words: UAX29,
    };
    let budget = TurnBudget::new(BudgetLimits::default(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider, model: "example-model", budget: &budget, prompts: &prompts };
    let run = runner.run::<ValueStated>(&question, Some("chk_example"));
    match run.outcome {
        Outcome::Answered { verdict, .. } => format!("{verdict:?} after {} call(s)", run.calls.len()),
        Outcome::Failed { failure, detail } => format!("failed ({failure:?}): {detail}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cassette = dir.path().join("value_stated.jsonl");
    let recorder = Recorder::new(Scripted, &cassette)?;
    println!("live, recorded: {}", ask(&recorder));
    drop(recorder);
    let recorded = RecordedProvider::load(&cassette)?;
    println!("from the cassette ({} exchange(s)): {}", recorded.len(), ask(&recorded));
    Ok(())
}
