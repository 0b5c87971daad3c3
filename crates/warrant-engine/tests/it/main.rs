//! Integration tests of the engine over real stores: the retail conformance suite and the
//! turn's lifecycle (idempotency, confirmation, outcomes, replay), and the dispatcher.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod checks;
mod dispatch;
mod endpoint;
mod every_answer;
mod keys;
mod lifecycle;
mod outbound;
mod retail;
mod turn_checks;
mod visibility;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use warrant_engine::{Engine, load_contract};
use warrant_store::SqliteStore;

/// The retail example's folder.
pub fn retail_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail")
}

/// A fresh engine over a new SQLite file (kept alive by the returned folder).
pub fn retail_engine() -> (Engine<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    (Engine::new(contract, &folder, store).unwrap(), dir)
}

/// The retail data, for building cases.
#[derive(Debug)]
pub struct Data {
    pub orders: BTreeMap<String, Value>,
    pub users: BTreeMap<String, Value>,
    /// Every variant, keyed by item id, with its `product_id`.
    pub items: BTreeMap<String, Value>,
}

pub fn data() -> Data {
    let read = |name: &str| -> BTreeMap<String, Value> {
        serde_json::from_str(&std::fs::read_to_string(retail_dir().join("data").join(name)).unwrap()).unwrap()
    };
    let products = read("products.json");
    let mut items = BTreeMap::new();
    for (product_id, product) in &products {
        for (item_id, variant) in product["variants"].as_object().unwrap() {
            let mut v = variant.clone();
            v["product_id"] = Value::String(product_id.clone());
            items.insert(item_id.clone(), v);
        }
    }
    Data { orders: read("orders.json"), users: read("users.json"), items }
}
