//! What delivery costs: messages per second from the outbox to a webhook on 127.0.0.1, each
//! figure beside a baseline measured in the same run, the same POSTs sent by a bare HTTP client
//! with no store (the dispatcher's own cost is the difference):
//! - SQLite (one file, WAL, synchronous commits): batches of 1, of 32, and of 32 delivered 4 at
//!   a time;
//! - PostgreSQL, batches of 32 delivered 4 at a time.
//!
//! Run: `cargo bench -p warrant-cli --bench dispatch` (PostgreSQL at 127.0.0.1:5432, or set
//! `WARRANT_BENCH_POSTGRES`; `WARRANT_BENCH_MESSAGES` scales the count).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

#[path = "../tests/it/receiver.rs"]
#[allow(dead_code, reason = "the benchmark holds no request")]
mod receiver;

use std::time::{Duration, Instant};

use serde_json::json;
use warrant_engine::dispatch::{DispatchConfig, Dispatcher};
use warrant_store::prelude::*;
use warrant_store::{OutboxMessage, OutboxState, PgStore, SqliteStore};

use receiver::{Behaviour, Webhook};

/// How many messages each figure takes. Under `cargo test --benches` (no `--bench` argument)
/// the benchmark runs as a quick smoke test of itself.
fn count() -> usize {
    if !std::env::args().any(|a| a == "--bench") {
        return 20;
    }
    std::env::var("WARRANT_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn fill(store: &mut dyn Store, count: usize, tag: &str) {
    for n in 0..count {
        let message = OutboxMessage {
            id: format!("{tag}-{n}"),
            conversation: format!("c{}", n % 50),
            path: "scheduled".to_owned(),
            channel: "webhook".to_owned(),
            body: json!({"text": "Your order is on its way.", "n": n}),
            record: json!({"basis": "cleared"}),
            idempotency_key: format!("{tag}-key-{n}"),
        };
        store.enqueue(&message, 0).unwrap();
    }
}

/// Messages per second through the dispatcher, draining `count` stored messages.
fn through_dispatcher(
    store: &mut dyn Store,
    hook: &Webhook,
    count: usize,
    (batch, parallel): (usize, usize),
    tag: &str,
) -> f64 {
    fill(store, count, tag);
    let mut config = DispatchConfig::new(hook.url());
    config.batch = batch;
    config.parallel = parallel;
    config.timeout = Duration::from_secs(5);
    config.lease = Duration::from_secs(600);
    let dispatcher = Dispatcher::new(config).unwrap();
    let start = Instant::now();
    let done = dispatcher.drain(store).unwrap();
    let elapsed = start.elapsed();
    assert_eq!(done.sent, count, "{done:?}");
    count as f64 / elapsed.as_secs_f64()
}

/// Messages per second for the same POSTs from a bare client: no store, no lease, no record.
fn bare_posts(hook: &Webhook, count: usize) -> f64 {
    // The workspace's reqwest has no TLS provider of its own; the dispatcher installs ring too.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let start = Instant::now();
    for n in 0..count {
        let status = client
            .post(hook.url())
            .header("content-type", "application/json")
            .header("idempotency-key", format!("bare-{n}"))
            .body(json!({"text": "Your order is on its way.", "n": n}).to_string())
            .send()
            .unwrap()
            .status();
        assert!(status.is_success());
    }
    count as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let count = count();
    let hook = Webhook::start(Behaviour::Answer(200));
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = SqliteStore::open(&dir.path().join("bench.sqlite")).unwrap();
    sqlite.migrate().unwrap();

    let baseline = bare_posts(&hook, count);
    println!("baseline: bare POSTs, no store         {baseline:>9.0} messages/s");
    let shapes = [(1, 1), (32, 1), (32, 4)];
    for (batch, parallel) in shapes {
        let rate = through_dispatcher(&mut sqlite, &hook, count, (batch, parallel), &format!("s{batch}.{parallel}"));
        println!(
            "dispatcher on SQLite, batch {batch:>2} × {parallel}    {rate:>9.0} messages/s ({:.0}% of baseline)",
            100.0 * rate / baseline
        );
    }
    assert_eq!(sqlite.outbox(Some(OutboxState::Sent), usize::MAX).unwrap().len(), shapes.len() * count);

    let conninfo = std::env::var("WARRANT_BENCH_POSTGRES")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
    let schema = format!("warrant_bench_dispatch_{}", std::process::id());
    let mut pg = PgStore::connect(&conninfo, &schema).unwrap();
    pg.migrate().unwrap();
    let rate = through_dispatcher(&mut pg, &hook, count, (32, 4), "p");
    println!(
        "dispatcher on PostgreSQL, batch 32 × 4 {rate:>9.0} messages/s ({:.0}% of baseline)",
        100.0 * rate / baseline
    );
    let mut admin = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).unwrap();
    // Every stored message and every bare POST had a key of its own, so each was applied once.
    assert_eq!(hook.log().applied.len(), (shapes.len() + 2) * count);
}
