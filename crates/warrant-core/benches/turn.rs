//! The deterministic part of a retail turn (parse, structure, policy) against rows in memory,
//! beside parsing the same request as plain JSON, each measured in the same run: the figure
//! `crates/warrant-engine/benches/turn.rs` prints first, without building a store. This one runs
//! on the system allocator, as a library's embedder gets by default; the engine's bench runs on
//! the `warrant` binary's (mimalloc).
//!
//! Run: `cargo bench -p warrant-core --bench turn`. `WARRANT_BENCH_TURNS` sets how many turns
//! each figure takes (20,000 by default); with `--count N` the turns are decided N times and
//! nothing is timed, for `valgrind --tool=callgrind` (instructions do not depend on the load);
//! `--act K` (0 the read, 1 the cancel, 2 the exchange) then decides that act's turns alone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros,
    reason = "a benchmark reads its fixtures, reads the clock, prints, and stops at the first surprise"
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::{self, Record, SharedRecord, TableSource};
use warrant_core::request;
use warrant_core::turn::{self, FactError, Facts, Interaction};

fn retail() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail")
}

struct Folder(PathBuf);
impl ContractFiles for Folder {
    fn read(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(self.0.join(path)).map_err(|e| e.to_string())
    }
}

/// Every row of the retail data, in memory, each at revision 1.
struct MemoryFacts {
    rows: BTreeMap<(String, String), SharedRecord>,
}

impl Facts for MemoryFacts {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.rows.get(&(table.to_owned(), key.to_owned())).map(SharedRecord::to_record))
    }
    /// The row kept, shared: no copy per read.
    fn shared_record(&self, table: &str, key: &str) -> Result<Option<SharedRecord>, FactError> {
        Ok(self.rows.get(&(table.to_owned(), key.to_owned())).cloned())
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        Ok(None)
    }
}

fn load() -> (Contract, MemoryFacts) {
    let folder = retail();
    let text = std::fs::read_to_string(folder.join("contract.toml")).expect("contract");
    let contract = Contract::load("contract.toml", &text, &Folder(folder.clone())).expect("loads");
    let currency = contract.currency();
    let mut by_table: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for table in contract.tables() {
        let rows = match &table.source {
            TableSource::File(file) => {
                let data: Value =
                    serde_json::from_str(&std::fs::read_to_string(folder.join(file)).expect("data")).expect("json");
                records::rows_from_file(table, data, currency).expect("rows")
            }
            TableSource::Nested { table: parent, path, parent_field } => {
                records::rows_from_parent(table, &by_table[parent], path, parent_field, currency).expect("rows")
            }
        };
        by_table.insert(table.name.clone(), rows);
    }
    let mut rows = BTreeMap::new();
    for (table, list) in by_table {
        for (key, value) in list {
            rows.insert((table.clone(), key.clone()), Record { table: table.clone(), key, revision: 1, value }.into());
        }
    }
    (contract, MemoryFacts { rows })
}

const USER: &str = "yusuf_rossi_9620";

/// The requests, as `crates/warrant-engine/benches/turn.rs` makes them: a read that commits, a
/// cancel and an exchange that are held for confirmation, in rotation.
const ACTS: [&str; 3] = ["read", "cancel", "exchange"];

fn requests(n: usize) -> Vec<String> {
    let acts = [
        json!({"op": "get_order_details", "args": {"order_id": "#W4776164"}}),
        json!({"op": "cancel_pending_order", "args": {"order_id": "#W4776164", "reason": "no longer needed"}}),
        json!({"op": "exchange_delivered_order_items", "args": {"order_id": "#W2378156", "item_ids": ["1151293680"], "new_item_ids": ["7706410293"], "payment_method_id": "credit_card_9513926"}}),
    ];
    (0..n)
        .map(|i| {
            json!({
                "conversation": "bench", "turn": format!("t{i}"), "actor": USER,
                "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
                "entries": [{"kind": "user", "text": "Exchange my keyboard for the clicky one, please."}],
                "acts": [acts[i % acts.len()]],
            })
            .to_string()
        })
        .collect()
}

fn one_turn(contract: &Contract, facts: &MemoryFacts, body: &str) -> turn::Decision {
    let valid = request::parse(contract, body).expect("valid request");
    turn::decide(contract, &valid, facts, &Default::default())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default().as_secs_f64() * 1e6
}

fn report(name: &str, mut latencies: Vec<Duration>) {
    latencies.sort();
    println!(
        "{name:<48} {:>7} turns  p50 {:>7.1} µs  p99 {:>7.1} µs",
        latencies.len(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99)
    );
}

fn main() {
    let (contract, facts) = load();
    let bodies = requests(300);
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--count") {
        let n: usize = args.get(at + 1).and_then(|v| v.parse().ok()).expect("--count N");
        let act = args.iter().position(|a| a == "--act").map(|at| {
            args.get(at + 1).and_then(|v| v.parse::<usize>().ok()).filter(|k| *k < ACTS.len()).expect("--act K")
        });
        let chosen: Vec<&String> = bodies
            .iter()
            .enumerate()
            .filter(|(i, _)| act.is_none_or(|k| i % ACTS.len() == k))
            .map(|(_, b)| b)
            .collect();
        for i in 0..n {
            std::hint::black_box(one_turn(&contract, &facts, chosen[i % chosen.len()]));
        }
        return;
    }
    let n = if args.iter().any(|a| a == "--bench") {
        std::env::var("WARRANT_BENCH_TURNS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
    } else {
        30
    };
    let (mut baseline, mut latencies) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut by_act: Vec<Vec<Duration>> = vec![Vec::with_capacity(n / ACTS.len() + 1); ACTS.len()];
    // Interleaved, so that a change in the machine's load reaches both figures alike.
    for i in 0..n {
        let body = &bodies[i % bodies.len()];
        let t = Instant::now();
        std::hint::black_box(serde_json::from_str::<Value>(body).unwrap_or(Value::Null));
        baseline.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(one_turn(&contract, &facts, body));
        let took = t.elapsed();
        latencies.push(took);
        by_act[i % ACTS.len()].push(took);
    }
    report("baseline: parse the request as plain JSON", baseline);
    report("deterministic turn (parse, structure, policy)", latencies);
    for (name, took) in ACTS.iter().zip(by_act) {
        report(&format!("  of which the {name}"), took);
    }
}
