//! What a durable SQLite commit costs, with and without group commit, in one run: threads of
//! one process, each with its own store on one file, committing turns (a turn with a replay
//! record of about 2 KB and an event), beside a bare one-row transaction; then a paced run at a
//! fixed rate, each commit's latency taken from when it was scheduled.
//!
//! `cargo run --release -p warrant-store --example commits [TURNS [RATE]]` (defaults 4000,
//! 5000 commits/s).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "a benchmark stops at the first surprise"
)]

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::json;
use warrant_store::{Commit, EventRow, Ledger, SqliteStore, TurnRow};

fn report(name: &str, mut latencies: Vec<Duration>, wall: Duration) {
    latencies.sort();
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e6;
    println!(
        "{name:<52} {:>6} commits {:>8.0} /s  p50 {:>8.1} µs  p99 {:>8.1} µs",
        latencies.len(),
        latencies.len() as f64 / wall.as_secs_f64(),
        at(0.5),
        at(0.99)
    );
}

fn turn(conversation: &str, n: usize) -> Commit {
    let facts: Vec<_> =
        (0..12).map(|i| json!({"table": "order", "key": format!("#W{i}"), "revision": 3, "value": {"status": "pending", "items": ["1151293680", "7706410293"]}})).collect();
    Commit {
        turn: TurnRow {
            conversation: conversation.to_owned(),
            turn: format!("t{n}"),
            request: json!({"turn": n, "entries": [{"kind": "user", "text": "Cancel my order, please."}]}).into(),
            response: json!({"acts": [{"verdict": "hold"}]}).into(),
            replay: json!({"facts": {"records": facts}, "checks": []}).into(),
        },
        writes: vec![],
        reads: vec![],
        effects: vec![],
        events: vec![EventRow {
            seq: 0,
            id: format!("{conversation}-{n}"),
            conversation: conversation.to_owned(),
            kind: "turn_decided".to_owned(),
            payload: json!({"n": n}),
            effect: None,
        }],
        opened: vec![],
        answered: vec![],
        findings: vec![],
        holds: vec![],
    }
}

/// `threads` stores on `path`, each committing `per` turns as fast as it can, or at `rate`
/// commits a second over all threads.
fn run(label: &str, path: &Path, grouped: bool, threads: usize, per: usize, rate: Option<f64>) {
    let barrier = Barrier::new(threads);
    let start = Instant::now();
    let latencies: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut store =
                        if grouped { SqliteStore::open(path) } else { SqliteStore::open_ungrouped(path) }.unwrap();
                    let conversation = format!("{label}-{threads}-{t}");
                    let commits: Vec<Commit> = (0..per).map(|n| turn(&conversation, n)).collect();
                    barrier.wait();
                    let begun = Instant::now();
                    commits
                        .iter()
                        .enumerate()
                        .map(|(n, commit)| {
                            let due = rate.map_or_else(Instant::now, |rate| {
                                begun + Duration::from_secs_f64((n * threads + t) as f64 / rate)
                            });
                            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                                std::thread::sleep(wait);
                            }
                            store.commit(commit).unwrap();
                            due.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let name = match rate {
        Some(rate) => format!("{label}, {threads} threads at {rate:.0}/s"),
        None => format!("{label}, {threads} threads"),
    };
    report(&name, latencies, start.elapsed());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let turns: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let rate: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5000.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("commits.sqlite");
    let mut keep = SqliteStore::open(&path).unwrap();
    keep.migrate().unwrap();

    let raw = rusqlite::Connection::open(dir.path().join("raw.sqlite")).unwrap();
    raw.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
        .unwrap();
    let mut latencies = Vec::new();
    let start = Instant::now();
    for i in 0..turns / 4 {
        let t = Instant::now();
        raw.execute_batch("BEGIN IMMEDIATE").unwrap();
        raw.execute("INSERT INTO t VALUES (?1, ?2)", (format!("k{i}"), "{\"a\":1}")).unwrap();
        raw.execute_batch("COMMIT").unwrap();
        latencies.push(t.elapsed());
    }
    report("baseline: bare one-row SQLite transaction", latencies, start.elapsed());

    for threads in [1, 2, 4, 8, 16] {
        run("before: a transaction per commit", &path, false, threads, turns / 4 / threads, None);
        let before = keep.commit_batches().unwrap().unwrap_or_default();
        run("after: group commit", &path, true, threads, turns / threads, None);
        let after = keep.commit_batches().unwrap().unwrap_or_default();
        println!(
            "{:<52} {:.1} commits a transaction",
            "",
            (after.1 - before.1) as f64 / (after.0 - before.0).max(1) as f64
        );
    }
    run("after: group commit, paced", &path, true, 8, turns * 2 / 8, Some(rate));
    run("after: group commit, paced", &path, true, 16, turns * 2 / 16, Some(rate));
    run("before: a transaction per commit, paced", &path, false, 8, turns / 2 / 8, Some(rate / 4.0));
}
