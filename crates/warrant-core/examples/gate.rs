//! The clause gate in a few lines: load the English score of `examples/score-en`, read model
//! replies through it, and print what each performs.
//!
//! Run it with `cargo run -p warrant-core --example gate`, or pass a reply of your own:
//! `cargo run -p warrant-core --example gate -- "We can close this ticket now."`.
// An example is a program: it prints, and reads its arguments (warrant-core's clippy.toml forbids
// both in the library).
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::collections::BTreeMap;

use warrant_core::Contract;
use warrant_core::contract::ContractFiles;

/// The contract's companion files, held in memory: warrant-core reads no file itself, so
/// whoever loads a contract hands it the files it names (this score names none).
struct InMemory(BTreeMap<String, String>);

impl ContractFiles for InMemory {
    fn read(&self, path: &str) -> Result<String, String> {
        self.0.get(path).cloned().ok_or_else(|| format!("no file `{path}`"))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = include_str!("../../../examples/score-en/contract.toml");
    let contract = Contract::load("examples/score-en/contract.toml", text, &InMemory(BTreeMap::new()))?;
    let kind = contract.kinds().get("model_reply").ok_or("the score declares no `model_reply` kind")?;

    let given: Vec<String> = std::env::args().skip(1).collect();
    let replies = if given.is_empty() {
        vec!["Thank you. We can close this ticket now.".to_owned(), "We can probably close this ticket now.".to_owned()]
    } else {
        given
    };
    for reply in &replies {
        let reading = contract.score().read(kind, reply);
        println!("{reply}");
        match &reading.rejection {
            Some(rejection) => println!("  performs nothing: {}", rejection.reason),
            None if reading.operations.is_empty() => println!("  performs nothing: no scored clause"),
            None => {
                for operation in &reading.operations {
                    println!("  performs `{}` (sentence {})", operation.clause.op(), operation.sentence + 1);
                }
            }
        }
    }
    Ok(())
}
