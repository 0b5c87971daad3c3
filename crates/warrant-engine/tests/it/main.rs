//! Integration tests of the engine over real stores: the retail and airline conformance suites
//! (on one harness, `conformance.rs`), a test per limitation of issue 17, the turn's lifecycle
//! (idempotency, confirmation, outcomes, replay), and the dispatcher.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod airline;
mod checks;
mod conformance;
mod created_rows;
mod dispatch;
mod endpoint;
mod every_answer;
mod invariants;
mod keys;
mod lifecycle;
mod limitations;
mod outbound;
mod outcomes;
mod record_writes;
mod records;
mod related_rows;
mod retail;
mod retail_cases;
mod reverts;
mod turn_checks;
mod user_words;
mod visibility;

use std::path::Path;

use warrant_core::Contract;
use warrant_engine::{Engine, ModelSource, load_contract};
use warrant_store::{PgStore, SqliteStore, Store};

pub use retail_cases::{Data, data, retail_dir};

/// An engine for `contract` (loaded from `folder`) over `store`, made as every engine is: by
/// the builder.
pub fn build<S: Store>(contract: Contract, folder: &Path, store: S, model: ModelSource) -> Engine<S> {
    Engine::builder().contract(contract, folder).model(model).build(store).unwrap()
}

/// A fresh engine over a new SQLite file (kept alive by the returned folder), with no model.
pub fn retail_engine() -> (Engine<SqliteStore>, tempfile::TempDir) {
    retail_engine_with(ModelSource::None)
}

/// A fresh engine over a new SQLite file (kept alive by the returned folder), with `model`.
pub fn retail_engine_with(model: ModelSource) -> (Engine<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    (build(contract, &folder, store, model), dir)
}

/// A PostgreSQL schema no other test uses (named by process id and a counter), dropped when the
/// test ends, also when it fails. `WARRANT_TEST_POSTGRES` names another server.
#[derive(Debug)]
pub struct PgSchema {
    conninfo: String,
    schema: String,
}

impl PgSchema {
    pub fn fresh() -> PgSchema {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let conninfo = std::env::var("WARRANT_TEST_POSTGRES")
            .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".to_owned());
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let schema = format!("warrant_engine_test_{}_{n}", std::process::id());
        let mut admin = postgres::Client::connect(&conninfo, postgres::NoTls)
            .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at `{conninfo}`: {e}"));
        admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
        PgSchema { conninfo, schema }
    }

    /// A new connection to the schema.
    pub fn connect(&self) -> PgStore {
        PgStore::connect(&self.conninfo, &self.schema).unwrap()
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.conninfo, postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}
