//! Integration tests of warrant-core: contracts from files, and the invariants of the gate.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod checks;
mod clock;
mod contracts;
mod effect_steps;
mod expressions;
mod fuzz_findings;
// Guards and the outbound gate run the corpus runners, behind the `corpus` feature: a workspace
// build has it (warrant-cli turns it on); alone, `cargo test -p warrant-core --features corpus`.
#[cfg(feature = "corpus")]
mod guards;
mod ledger;
mod module_graph;
mod objects;
#[cfg(feature = "corpus")]
mod outbound;
mod pending;
mod policies;
mod properties;
mod related;
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

/// The head the contracts of `clock`, `related` and `ledger` share: user and agent entries, the
/// agent proposing acts, and the actor a `customer` row with a name.
pub const CUSTOMERS: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "customer"

[records]

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"
fields.name = { kind = "text" }
"#;

/// Serves a contract's one policy file, `policy.cedar`, with this text.
#[derive(Debug)]
pub struct Policy(pub String);

impl warrant_core::contract::ContractFiles for Policy {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "policy.cedar" { Ok(self.0.clone()) } else { Err(format!("no `{path}`")) }
    }
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

/// Rows by `table/key`, interactions by id and the conversation's committed events by kind,
/// for turns decided without a store.
#[derive(Debug, Default)]
pub struct Stored {
    /// Rows by `table/key`.
    pub rows: std::collections::BTreeMap<String, warrant_core::records::Record>,
    /// Interactions by id.
    pub interactions: std::collections::BTreeMap<String, warrant_core::turn::Interaction>,
    /// Committed events by kind.
    pub events: std::collections::BTreeMap<String, Vec<warrant_core::turn::EventRecord>>,
}

impl Stored {
    /// Adds (or replaces) a row.
    pub fn put(&mut self, table: &str, key: &str, revision: i64, value: serde_json::Value) {
        let record = warrant_core::records::Record { table: table.into(), key: key.into(), revision, value };
        self.rows.insert(format!("{table}/{key}"), record);
    }
}

impl warrant_core::turn::Facts for Stored {
    fn record(
        &self,
        table: &str,
        key: &str,
    ) -> Result<Option<warrant_core::records::Record>, warrant_core::turn::FactError> {
        Ok(self.rows.get(&format!("{table}/{key}")).cloned())
    }
    fn interaction(&self, id: &str) -> Result<Option<warrant_core::turn::Interaction>, warrant_core::turn::FactError> {
        Ok(self.interactions.get(id).cloned())
    }
    fn events(
        &self,
        _conversation: &str,
        kind: &str,
    ) -> Result<Vec<warrant_core::turn::EventRecord>, warrant_core::turn::FactError> {
        Ok(self.events.get(kind).cloned().unwrap_or_default())
    }
}
