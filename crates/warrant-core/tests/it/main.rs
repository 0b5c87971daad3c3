//! Integration tests of warrant-core: contracts from files, and the invariants of the gate.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod checks;
mod contracts;
mod effect_steps;
mod expressions;
mod fuzz_findings;
// Guards and the outbound gate run the corpus runners, behind the `corpus` feature: a workspace
// build has it (warrant-cli turns it on); alone, `cargo test -p warrant-core --features corpus`.
#[cfg(feature = "corpus")]
mod guards;
mod module_graph;
mod objects;
#[cfg(feature = "corpus")]
mod outbound;
mod pending;
mod policies;
mod properties;
mod requests;
mod schemas;
mod turns;
mod visibility;

use std::path::PathBuf;

/// The repository root, for fixtures.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Loads a contract of the repository.
pub fn load(relative: &str) -> warrant_core::Contract {
    let path = root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap();
    warrant_core::Contract::from_toml(relative, &text).unwrap()
}

/// Rows in memory by `table/key`, for turns decided without a store; no interactions.
#[derive(Debug)]
pub struct Rows(pub std::collections::BTreeMap<String, warrant_core::records::Record>);

impl warrant_core::turn::Facts for Rows {
    fn record(
        &self,
        table: &str,
        key: &str,
    ) -> Result<Option<warrant_core::records::Record>, warrant_core::turn::FactError> {
        Ok(self.0.get(&format!("{table}/{key}")).cloned())
    }
    fn interaction(&self, _: &str) -> Result<Option<warrant_core::turn::Interaction>, warrant_core::turn::FactError> {
        Ok(None)
    }
}
