//! What following the system of record costs, through the `warrant` binary as a user runs it:
//! - importing τ-bench retail's 1,000 orders (`warrant records import order FILE`), rows per
//!   second, on SQLite (one file) and on PostgreSQL, beside the store's own import of the same
//!   rows in the same run (the difference is the process, the contract's load and the parse);
//! - `warrant turn` on a store that holds its rows, beside the first turn on an empty store, which
//!   seeds it from the data files (the only call that reads and parses them).
//!
//! Run: `cargo bench -p warrant-cli --bench records` (PostgreSQL at 127.0.0.1:5432, or set
//! `WARRANT_BENCH_POSTGRES`; `WARRANT_BENCH_ROUNDS` sets how many times each figure is taken).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warrant_store::prelude::*;
use warrant_store::{PgStore, SqliteStore};

const CONTRACT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/retail/contract.toml");
const ORDERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/retail/data/orders.json");

/// How many times each figure is taken (the median is printed). Under `cargo test --benches`
/// (no `--bench` argument) the benchmark runs once, as a quick smoke test of itself.
fn rounds() -> usize {
    if !std::env::args().any(|a| a == "--bench") {
        return 1;
    }
    std::env::var("WARRANT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

fn postgres_url() -> String {
    std::env::var("WARRANT_BENCH_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// Runs the binary, failing loudly on any exit but 0.
fn warrant(args: &[&str], input: &str) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "warrant {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn orders() -> Vec<(String, Value)> {
    let Value::Object(map) = serde_json::from_str(&std::fs::read_to_string(ORDERS).unwrap()).unwrap() else {
        panic!("{ORDERS} is not an object of rows");
    };
    map.into_iter().collect()
}

/// The orders as the import reads them: one `{"KEY": ROW}` a line.
fn jsonl(rows: &[(String, Value)], dir: &Path) -> PathBuf {
    let path = dir.join("orders.jsonl");
    let mut text = String::new();
    for (key, row) in rows {
        text.push_str(&json!({ key: row }).to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn cli_schema() -> String {
    format!("warrant_bench_records_{}", std::process::id())
}

fn bare_schema() -> String {
    format!("warrant_bench_records_bare_{}", std::process::id())
}

fn per_second(rows: usize, took: Duration) -> f64 {
    rows as f64 / took.as_secs_f64()
}

fn import_figures(rows: &[(String, Value)], dir: &Path) {
    let file = jsonl(rows, dir);
    let file = file.to_str().unwrap();
    let sqlite = format!("sqlite:{}", dir.join("import.db").display());
    let pg = format!("{}?schema={}", postgres_url(), cli_schema());
    for (name, store) in [("SQLite", &sqlite), ("PostgreSQL", &pg)] {
        let through_cli: Vec<Duration> = (0..rounds())
            .map(|_| warrant(&["records", "import", "order", file, "--contract", CONTRACT, "--store", store], ""))
            .collect();
        let mut bare: Box<dyn Store> = if name == "SQLite" {
            Box::new(SqliteStore::open(&dir.join("bare.db")).unwrap())
        } else {
            Box::new(PgStore::connect(&postgres_url(), &bare_schema()).unwrap())
        };
        bare.migrate().unwrap();
        let in_store: Vec<Duration> = (0..rounds())
            .map(|_| {
                let start = Instant::now();
                let imported = bare.import_records("order", rows).unwrap();
                let took = start.elapsed();
                assert_eq!(imported.count, rows.len());
                took
            })
            .collect();
        let (cli, store) = (median(through_cli), median(in_store));
        println!(
            "import {} orders, {name}: `warrant records import` {:.0} rows/s ({:.1} ms), the store's own import {:.0} rows/s ({:.1} ms)",
            rows.len(),
            per_second(rows.len(), cli),
            cli.as_secs_f64() * 1e3,
            per_second(rows.len(), store),
            store.as_secs_f64() * 1e3,
        );
    }
}

fn turn_figures(dir: &Path) {
    let request = json!({
        "conversation": "bench", "turn": "t0", "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Where is my order?"}],
        "acts": [{"op": "get_order_details", "args": {"order_id": "#W6247578"}}],
    });
    let mut seeding = Vec::new();
    let mut seeded = Vec::new();
    for round in 0..rounds() {
        let store = format!("sqlite:{}", dir.join(format!("turn-{round}.db")).display());
        let mut turn = |n: usize| {
            let mut request = request.clone();
            request["turn"] = json!(format!("t{n}"));
            warrant(&["turn", "--contract", CONTRACT, "--store", &store], &request.to_string())
        };
        seeding.push(turn(0));
        seeded.extend((1..4).map(&mut turn));
    }
    let (first, later) = (median(seeding), median(seeded));
    println!(
        "`warrant turn`, SQLite: {:.1} ms on a store that holds its rows, {:.1} ms for the first turn, which seeds the store from the data files",
        later.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3,
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let rows = orders();
    assert_eq!(rows.len(), 1000, "τ-bench retail has 1,000 orders");
    import_figures(&rows, dir.path());
    turn_figures(dir.path());
    let mut admin = postgres::Client::connect(&postgres_url(), postgres::NoTls).unwrap();
    for schema in [cli_schema(), bare_schema()] {
        admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).unwrap();
    }
}
