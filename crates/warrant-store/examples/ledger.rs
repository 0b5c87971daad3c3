//! The ledger in a few lines: open a SQLite store in a temporary folder, seed a record, commit a
//! turn that changes it and records an event, and read both back.
//!
//! `cargo run -p warrant-store --example ledger`

use serde_json::json;
use warrant_store::{Commit, CommitOutcome, EventRow, Ledger, RecordWrite, SqliteStore, StoreError, TurnRow};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = tempfile::tempdir()?;
    let mut store = SqliteStore::open(&folder.path().join("warrant.sqlite"))?;
    store.migrate()?;
    store.seed_records("orders", &[("#1001".to_owned(), json!({"status": "placed"}))])?;

    let outcome = store.commit(&Commit {
        turn: TurnRow {
            conversation: "c1".to_owned(),
            turn: "t1".to_owned(),
            request: json!({"text": "please cancel order #1001"}).into(),
            response: json!({"reply": "Order #1001 is cancelled."}).into(),
            replay: json!({"version": 1}).into(),
        },
        writes: vec![RecordWrite {
            table: "orders".to_owned(),
            key: "#1001".to_owned(),
            expected_revision: 1,
            value: json!({"status": "cancelled"}),
        }],
        effects: vec![],
        events: vec![EventRow {
            seq: 0,
            id: "e1".to_owned(),
            conversation: "c1".to_owned(),
            kind: "order_cancelled".to_owned(),
            payload: json!({"order": "#1001"}),
            effect: None,
        }],
        opened: vec![],
        answered: vec![],
        findings: vec![],
        reads: vec![],
        holds: vec![],
    })?;
    let CommitOutcome::Committed { seq } = outcome else {
        return Err(format!("the commit did not go in: {outcome:?}").into());
    };
    println!("committed turn c1/t1 as number {seq}");

    let order = store.record("orders", "#1001")?.ok_or(StoreError::Corrupt { what: "order #1001".into() })?;
    println!("orders/#1001 at revision {}: {}", order.revision, order.value);
    for event in store.events(Some("c1"))? {
        println!("event {} ({}): {}", event.seq, event.kind, event.payload);
    }
    Ok(())
}
