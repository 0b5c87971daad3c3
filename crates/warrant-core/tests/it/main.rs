//! Integration tests of warrant-core: contracts from files, and the invariants of the gate.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod checks;
mod contracts;
mod fuzz_findings;
// Guards and the outbound gate run the corpus runners, behind the `corpus` feature: a workspace
// build has it (warrant-cli turns it on); alone, `cargo test -p warrant-core --features corpus`.
#[cfg(feature = "corpus")]
mod guards;
mod module_graph;
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
