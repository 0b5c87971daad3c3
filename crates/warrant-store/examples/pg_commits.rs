//! Commits on PostgreSQL from 16 clients at once, beside a bare one-row transaction from as
//! many, in the same run: the store's share of a turn's cost, without deciding anything. Each
//! commit stores a turn with one event and reads two seeded rows (as a retail turn does); with
//! `--reads 0` it reads none.
//!
//! `cargo run -p warrant-store --example pg_commits [-- --commits N --reads K]` (PostgreSQL at
//! 127.0.0.1:5432, or set `WARRANT_BENCH_POSTGRES`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a measurement stops at the first surprise")]

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::json;
use warrant_store::{Commit, CommitOutcome, EventRow, Ledger, PgStore, RecordRead, TurnRow};

const CLIENTS: usize = 16;

fn argument(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name} takes a number, not `{v}`")))
}

fn commit(client: usize, n: usize, reads: usize) -> Commit {
    let conversation = format!("c{client}-{}", std::process::id());
    let text = "Exchange my keyboard for the clicky one, please. ".repeat(8);
    Commit {
        turn: TurnRow {
            conversation: conversation.clone(),
            turn: format!("t{n}"),
            request: json!({"entries": [{"kind": "user", "text": text}], "acts": [{"op": "get_order_details"}]}).into(),
            response: json!({"acts": [{"verdict": "committed", "reasons": []}], "reply": text}).into(),
            replay: json!({"version": 2, "facts": {"records": [{"table": "order", "key": "o1", "revision": 1}]}})
                .into(),
        },
        writes: vec![],
        reads: (0..reads)
            .map(|r| RecordRead { table: "order".to_owned(), key: format!("o{r}"), revision: 1 })
            .collect(),
        effects: vec![],
        events: vec![EventRow {
            seq: 0,
            id: format!("{conversation}-{n}"),
            conversation,
            kind: "get_order_details".to_owned(),
            payload: json!({"order_id": "o1"}),
            effect: None,
        }],
        opened: vec![],
        answered: vec![],
        findings: vec![],
        holds: vec![],
    }
}

/// Runs `each(client, n)` `per` times on each of 16 threads released together; per second.
fn clients<C: Send>(connect: impl Fn() -> C + Sync, per: usize, each: impl Fn(&mut C, usize, usize) + Sync) -> f64 {
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let mut latencies: Vec<Duration> = Vec::new();
    let start = Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let (barrier, connect, each) = (barrier.clone(), &connect, &each);
                scope.spawn(move || {
                    let mut connection = connect();
                    barrier.wait();
                    (0..per)
                        .map(|n| {
                            let t = Instant::now();
                            each(&mut connection, c, n);
                            t.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            latencies.extend(handle.join().expect("client"));
        }
    });
    let wall = start.elapsed();
    latencies.sort();
    let p50 = latencies.get(latencies.len() / 2).copied().unwrap_or_default();
    let rate = latencies.len() as f64 / wall.as_secs_f64();
    print!("{:>8.0} /s  p50 {:>7.2} ms", rate, p50.as_secs_f64() * 1e3);
    rate
}

fn main() {
    let conninfo = std::env::var("WARRANT_BENCH_POSTGRES")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
    let per = argument("--commits", 4000) / CLIENTS;
    let reads = argument("--reads", 2);
    let schema = format!("warrant_commits_{}", std::process::id());
    let mut admin = postgres::Client::connect(&conninfo, postgres::NoTls).expect("PostgreSQL");
    admin
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {schema}_raw; CREATE TABLE {schema}_raw (k text PRIMARY KEY, v jsonb)"
        ))
        .expect("raw table");
    let mut store = PgStore::connect(&conninfo, &schema).expect("store");
    store.migrate().expect("migrate");
    let rows: Vec<(String, serde_json::Value)> =
        (0..reads).map(|r| (format!("o{r}"), json!({"status": "pending"}))).collect();
    store.seed_records("order", &rows).expect("seed");

    print!("bare one-row transaction, {CLIENTS} clients ");
    let insert = format!("INSERT INTO {schema}_raw VALUES ($1, '{{\"a\":1}}')");
    let bare = clients(
        || postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect"),
        per,
        |client, c, n| {
            let mut tx = client.transaction().expect("begin");
            tx.execute(&insert, &[&format!("{c}-{n}")]).expect("insert");
            tx.commit().expect("commit");
        },
    );
    println!();
    print!("store commit ({reads} reads), {CLIENTS} clients   ");
    let commits = clients(
        || PgStore::connect(&conninfo, &schema).expect("store"),
        per,
        |store, c, n| match store.commit(&commit(c, n, reads)).expect("commit") {
            CommitOutcome::Committed { .. } => {}
            other => panic!("client {c}, commit {n}: {other:?}"),
        },
    );
    println!("  {:.0} % of the bare transaction", commits / bare * 100.0);
    let _ = admin.batch_execute(&format!("DROP TABLE IF EXISTS {schema}_raw; DROP SCHEMA IF EXISTS {schema} CASCADE"));
}
