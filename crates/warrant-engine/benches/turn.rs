//! What a turn costs on the retail example, each figure printed beside a baseline measured in
//! the same run:
//! - the deterministic part (parse, structure, policy) against facts in memory, beside parsing
//!   the same request as plain JSON;
//! - a turn with a durable SQLite commit from 1, 2, 4, 8 and 16 clients (group commit), beside a
//!   bare one-row SQLite transaction, then paced at half the best rate for its p99, beside bare
//!   one-row transactions paced alike (what the disk alone makes of that pace);
//! - a turn on PostgreSQL from 1 client and from 16, each beside bare one-row transactions from
//!   as many, and beside transactions of as many statements as a turn sends, pipelined as the
//!   store sends them;
//! - replay throughput, beside reading the stored turns without deciding;
//! - resident memory with the contract and its records loaded, and after many turns.
//!
//! It runs on mimalloc, the `warrant` binary's allocator (`crates/warrant-core/benches/turn.rs`
//! measures the deterministic part on the system allocator).
//!
//! Run: `cargo bench -p warrant-engine --bench turn` (PostgreSQL at 127.0.0.1:5432, or set
//! `WARRANT_BENCH_POSTGRES`; `WARRANT_BENCH_TURNS` scales the counts, and `WARRANT_BENCH_PARTS`
//! picks parts: `deterministic`, `sqlite`, `replay`, `postgres`; `WARRANT_BENCH_CLIENTS` the
//! client counts of the durable SQLite runs).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::Value;
use warrant_core::records::{Record, SharedRecord};
use warrant_core::request;
use warrant_core::turn::{self, FactError, Facts, Interaction};
use warrant_engine::{Engine, ModelSource, TurnResult, load_contract};
use warrant_store::{PgStore, SqliteStore, Store};

#[path = "common/retail.rs"]
mod retail;
use retail::{USER, acts, turn_request};

fn retail() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml")
}

/// How many turns each figure takes. Under `cargo test --all-targets` (no `--bench` argument)
/// the benchmark runs as a quick smoke test of itself.
fn scale() -> usize {
    if !std::env::args().any(|a| a == "--bench") {
        return 32;
    }
    std::env::var("WARRANT_BENCH_TURNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The CPU time this process has used so far (user and system, all threads), from
/// `/proc/self/stat`, in clock ticks (Linux reports them at 100 a second); `None` where it
/// cannot be read.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command's name (which may hold spaces), from the third on.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn report(name: &str, mut latencies: Vec<Duration>, wall: Duration) {
    latencies.sort();
    let n = latencies.len();
    println!(
        "{name:<44} {n:>7} turns  {:>9.0} /s  p50 {:>8.1} µs  p99 {:>8.1} µs",
        n as f64 / wall.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e6,
        percentile(&latencies, 0.99).as_secs_f64() * 1e6,
    );
}

/// Facts in memory: the rows a retail turn reads.
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

fn deterministic(contract: &warrant_core::Contract, facts: &MemoryFacts) {
    let acts = acts();
    let requests: Vec<String> = (0..300).map(|i| turn_request("bench", i, &acts[i % acts.len()])).collect();
    let n = scale() * 10;
    let mut baseline = Vec::with_capacity(n);
    let start = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        let value: Value = serde_json::from_str(&requests[i % requests.len()]).unwrap_or(Value::Null);
        std::hint::black_box(value);
        baseline.push(t.elapsed());
    }
    report("baseline: parse the request as plain JSON", baseline, start.elapsed());
    let mut latencies = Vec::with_capacity(n);
    let start = Instant::now();
    let none = Default::default();
    for i in 0..n {
        let t = Instant::now();
        let valid = request::parse(contract, &requests[i % requests.len()]).expect("valid request");
        let decision = turn::decide(contract, &valid, facts, &none);
        std::hint::black_box(decision);
        latencies.push(t.elapsed());
    }
    report("deterministic turn (parse, structure, policy)", latencies, start.elapsed());
}

/// An engine over `store`, made by the builder as every engine is, with no model.
fn build_engine<S: Store>(contract: warrant_core::Contract, folder: &std::path::Path, store: S) -> Engine<S> {
    Engine::builder().contract(contract, folder).model(ModelSource::None).build(store).expect("engine")
}

/// `clients` threads, each with its own engine on the store `make` opens, making `per_client`
/// turns as fast as they are answered; prints and returns the rate (turns/s).
fn durable<S: Store + 'static>(label: &str, make: impl Fn() -> S + Sync, clients: usize, per_client: usize) -> f64 {
    run_clients(label, make, clients, per_client, None)
}

/// As [`durable`], with the turns scheduled at `rate` turns/s in all (each client at its share,
/// whatever the answers do), each latency counted from when its turn was due. The clients'
/// schedules are spread over each interval (client `c` of `n` starts `c/n` of an interval late),
/// so that the turns arrive evenly rather than all clients' at once.
fn paced<S: Store + 'static>(label: &str, make: impl Fn() -> S + Sync, clients: usize, rate: f64, seconds: f64) {
    let per_client = ((rate * seconds) as usize / clients).max(1);
    run_clients(label, make, clients, per_client, Some(rate / clients as f64));
}

fn run_clients<S: Store + 'static>(
    label: &str,
    make: impl Fn() -> S + Sync,
    clients: usize,
    per_client: usize,
    rate_per_client: Option<f64>,
) -> f64 {
    let (contract, folder) = load_contract(&retail()).expect("contract");
    // Seed once, then each client opens its own engine on the same store.
    drop(build_engine(contract.clone(), &folder, make()));
    let cpu_before = cpu_ticks();
    let (latencies, wall) = on_clients(clients, |c, barrier| {
        let mut engine = build_engine(contract.clone(), &folder, make());
        let acts = acts();
        // A conversation of this run's own: a turn id another run already stored would be
        // answered as a repeat, read back rather than decided and committed.
        let conversation = format!("{label}-{clients}-{c}-{}", std::process::id());
        let requests: Vec<String> =
            (0..per_client).map(|i| turn_request(&conversation, i, &acts[i % acts.len()])).collect();
        barrier.wait();
        let begun = Instant::now();
        let mut out = Vec::with_capacity(per_client);
        for (i, body) in requests.iter().enumerate() {
            let t = match rate_per_client {
                Some(rate) => wait_until_due(begun, i, c, clients, rate),
                None => Instant::now(),
            };
            let result = engine.turn(body).expect("turn");
            out.push(t.elapsed());
            assert!(
                matches!(result, TurnResult::Decided { repeated: false, .. }),
                "every measured turn is decided and committed, not a repeat: {:?}",
                result.to_json()
            );
        }
        out
    });
    let cpu = cpu_ticks().zip(cpu_before).map(|(after, before)| (after - before) as f64 * 10_000.0);
    let turns = latencies.len().max(1) as f64;
    let rate = latencies.len() as f64 / wall.as_secs_f64();
    report(&format!("{label}, {clients} client(s)"), latencies, wall);
    if let Some(cpu) = cpu {
        println!("{:<44} {:.0} µs of CPU a turn (every thread, opening the engines included)", "", cpu / turns);
    }
    rate
}

/// Sleeps until turn `i` of client `c` (of `clients`, each at `rate` turns/s) is due, and
/// answers when it was due: client `c` starts `c/clients` of an interval late.
fn wait_until_due(begun: Instant, i: usize, c: usize, clients: usize, rate: f64) -> Instant {
    let phase = c as f64 / clients as f64;
    let due = begun + Duration::from_secs_f64((i as f64 + phase) / rate);
    std::thread::sleep(due.saturating_duration_since(Instant::now()));
    due
}

/// The baseline of the paced run: `clients` threads on the schedule [`paced`] keeps, each turn
/// a bare one-row transaction (one `fsync` each) on one connection they share, so that the
/// p99 shows what this machine's disk and scheduler alone make of a durable write at that pace.
fn paced_bare(path: &std::path::Path, clients: usize, rate: f64, seconds: f64) {
    let raw = rusqlite::Connection::open(path).expect("raw");
    raw.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
        .expect("schema");
    let raw = std::sync::Mutex::new(raw);
    let per_client = ((rate * seconds) as usize / clients).max(1);
    let rate_per_client = rate / clients as f64;
    let (latencies, wall) = on_clients(clients, |c, barrier| {
        barrier.wait();
        let begun = Instant::now();
        (0..per_client)
            .map(|i| {
                let due = wait_until_due(begun, i, c, clients, rate_per_client);
                let raw = raw.lock().expect("connection");
                raw.execute_batch("BEGIN IMMEDIATE").expect("begin");
                raw.execute("INSERT INTO t VALUES (?1, ?2)", (format!("{c}-{i}"), "{\"a\":1}")).expect("insert");
                raw.execute_batch("COMMIT").expect("commit");
                due.elapsed()
            })
            .collect()
    });
    report(&format!("baseline: bare one-row transaction, paced, {clients} client(s)"), latencies, wall);
}

/// The PostgreSQL baseline: `clients` threads, each on its own connection, each making `per`
/// bare one-row transactions (`BEGIN`, one `INSERT`, `COMMIT`) as fast as they are answered.
fn bare_postgres(conninfo: &str, clients: usize, per: usize) {
    let (latencies, wall) = on_clients(clients, |c, barrier| {
        let mut client = postgres::Client::connect(conninfo, postgres::NoTls).expect("connect");
        barrier.wait();
        (0..per)
            .map(|i| {
                let t = Instant::now();
                let mut tx = client.transaction().expect("begin");
                tx.execute("INSERT INTO bench_raw VALUES ($1, '{\"a\":1}')", &[&format!("{clients}-{c}-{i}")])
                    .expect("insert");
                tx.commit().expect("commit");
                t.elapsed()
            })
            .collect()
    });
    report(&format!("baseline: bare one-row PostgreSQL transaction, {clients} client(s)"), latencies, wall);
}

/// Runs `client` on `clients` threads at once, each given its number and a barrier to wait at
/// once it is ready, and answers every latency they measured and the time they took.
fn on_clients(clients: usize, client: impl Fn(usize, &Barrier) -> Vec<Duration> + Sync) -> (Vec<Duration>, Duration) {
    let barrier = Barrier::new(clients);
    let start = Instant::now();
    let latencies = std::thread::scope(|scope| {
        let (client, barrier) = (&client, &barrier);
        let handles: Vec<_> = (0..clients).map(|c| scope.spawn(move || client(c, barrier))).collect();
        handles.into_iter().flat_map(|h| h.join().expect("client")).collect()
    });
    (latencies, start.elapsed())
}

/// How many statements the PostgreSQL protocol baseline sends in a transaction: about as many
/// as a retail turn sends, its reads ahead (the turn's lookup, two or three rows) and its commit
/// (the claim, the lookup after it, a locked read per row, one to three inserts).
const TURN_STATEMENTS: usize = 10;

/// The second PostgreSQL baseline: `clients` threads, each on a connection of its own, each
/// making `per` transactions of [`TURN_STATEMENTS`] prepared statements (one-row lookups, then
/// one `INSERT`) sent in one pipeline between `BEGIN` and `COMMIT`, as warrant's store sends a
/// commit's steps: `tokio-postgres` ends each statement with a sync point of its own, which
/// the server answers and flushes on its own. What a turn's statement count costs on this
/// protocol, apart from what the statements do.
fn pipelined_postgres(conninfo: &str, clients: usize, per: usize) {
    use tokio_postgres::types::ToSql;
    let (latencies, wall) = on_clients(clients, |c, barrier| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.expect("connect");
            tokio::spawn(connection);
            let lookup = client.prepare("SELECT v::text FROM bench_raw WHERE k = $1").await.expect("prepare");
            let insert = client.prepare("INSERT INTO bench_raw VALUES ($1, '{\"a\":1}')").await.expect("prepare");
            barrier.wait();
            let mut latencies = Vec::with_capacity(per);
            for i in 0..per {
                let t = Instant::now();
                // A row the bare run wrote, and a key of this run's own.
                let (found, key) = (format!("{clients}-{c}-0"), format!("pipelined-{clients}-{c}-{i}"));
                let (found, key): (&(dyn ToSql + Sync), &(dyn ToSql + Sync)) = (&found, &key);
                client.batch_execute("BEGIN").await.expect("begin");
                let lookups = (1..TURN_STATEMENTS).map(|_| client.query(&lookup, std::slice::from_ref(&found)));
                let (looked, inserted) = futures_util::future::join(
                    futures_util::future::join_all(lookups),
                    client.query(&insert, std::slice::from_ref(&key)),
                )
                .await;
                looked.into_iter().for_each(|rows| assert_eq!(rows.expect("lookup").len(), 1));
                inserted.expect("insert");
                client.batch_execute("COMMIT").await.expect("commit");
                latencies.push(t.elapsed());
            }
            latencies
        })
    });
    report(&format!("baseline: {TURN_STATEMENTS} statements pipelined, {clients} client(s)"), latencies, wall);
}

/// How many clients the durable SQLite runs use, one run each: 1, 2, 4, 8 and 16, unless
/// `WARRANT_BENCH_CLIENTS` lists others (`16`, say, to profile that run alone).
fn client_counts() -> Vec<usize> {
    std::env::var("WARRANT_BENCH_CLIENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).filter(|&c| c > 0).collect::<Vec<_>>())
        .filter(|counts| !counts.is_empty())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16])
}

/// Whether the part `name` of the run is measured: every part, unless `WARRANT_BENCH_PARTS`
/// names some (`deterministic`, `sqlite`, `replay`, `postgres`, separated by commas).
fn part(name: &str) -> bool {
    std::env::var("WARRANT_BENCH_PARTS").map_or(true, |parts| parts.split(',').any(|p| p.trim() == name))
}

/// The `warrant` binary's allocator, so that the figures are the ones it runs at.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let (contract, folder) = load_contract(&retail()).expect("contract");
    let rss_start = rss_kib();

    // Facts for the deterministic part: every row of the retail data, in memory.
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("bench.sqlite");
    let mut engine = build_engine(contract.clone(), &folder, SqliteStore::open(&db).expect("sqlite"));
    let mut rows = BTreeMap::new();
    for (table, key) in
        [("user", USER), ("order", "#W4776164"), ("order", "#W2378156"), ("item", "1151293680"), ("item", "7706410293")]
    {
        let r = engine.record(table, key).expect("read").expect("row");
        rows.insert(
            (table.to_owned(), key.to_owned()),
            Record { table: r.table, key: r.key, revision: r.revision, value: r.value }.into(),
        );
    }
    let facts = MemoryFacts { rows };
    println!(
        "resident memory with the retail contract and its records seeded: {} KiB (process start {} KiB)",
        rss_kib(),
        rss_start
    );
    if part("deterministic") {
        deterministic(&contract, &facts);
        let rss_before = rss_kib();
        let none = Default::default();
        let acts = acts();
        for i in 0..scale() * 100 {
            let valid = request::parse(&contract, &turn_request("soak", i, &acts[i % acts.len()])).expect("valid");
            std::hint::black_box(turn::decide(&contract, &valid, &facts, &none));
        }
        println!(
            "resident memory after {} more deterministic turns: {} KiB (before {} KiB)",
            scale() * 100,
            rss_kib(),
            rss_before
        );
    }

    if part("sqlite") {
        // Durable SQLite.
        {
            let raw = rusqlite::Connection::open(dir.path().join("raw.sqlite")).expect("raw");
            raw.execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)",
            )
            .expect("schema");
            let mut latencies = Vec::new();
            let start = Instant::now();
            for i in 0..scale() {
                let t = Instant::now();
                raw.execute_batch("BEGIN IMMEDIATE").expect("begin");
                raw.execute("INSERT INTO t VALUES (?1, ?2)", (format!("k{i}"), "{\"a\":1}")).expect("insert");
                raw.execute_batch("COMMIT").expect("commit");
                latencies.push(t.elapsed());
            }
            report("baseline: bare one-row SQLite transaction", latencies, start.elapsed());
        }
        let sqlite = |path: PathBuf| move || SqliteStore::open(&path).expect("sqlite");
        // A store kept open through the runs keeps the file's group, whose counts tell how many
        // commits each transaction held.
        let keep = SqliteStore::open(&db).expect("sqlite");
        let batches = || keep.commit_batches().expect("batches").unwrap_or_default();
        // Group commit: the more clients commit at once, the more commits share a transaction.
        let mut best = (0.0, 1);
        for clients in client_counts() {
            let before = batches();
            let rate = durable("sqlite durable turn", sqlite(db.clone()), clients, (scale() * 2 / clients).max(1));
            let after = batches();
            println!(
                "{:<44} {:.1} commits a transaction",
                "",
                (after.1 - before.1) as f64 / (after.0 - before.0).max(1) as f64
            );
            if rate > best.0 {
                best = (rate, clients);
            }
        }
        let (max, clients) = best;
        let seconds = if scale() > 100 { 10.0 } else { 0.5 };
        println!("sqlite: paced at half the best rate ({:.0} /s with {clients} clients) for {seconds} s", max / 2.0);
        paced_bare(&dir.path().join("paced.sqlite"), clients, max / 2.0, seconds);
        paced("sqlite durable turn at half load", sqlite(db.clone()), clients, max / 2.0, seconds);
    }

    if part("replay") {
        // Replay of everything stored so far.
        let mut replaying = build_engine(contract.clone(), &folder, SqliteStore::open(&db).expect("sqlite"));
        let start = Instant::now();
        let mut read = 0;
        let mut after = 0;
        loop {
            let batch = replaying.turns(after, 500).expect("turns");
            let Some(last) = batch.last() else { break };
            after = last.seq;
            read += batch.len();
        }
        let read_wall = start.elapsed();
        println!(
            "{:<44} {read:>7} turns  {:>9.0} /min",
            "baseline: read the stored turns",
            read as f64 / read_wall.as_secs_f64() * 60.0
        );
        let start = Instant::now();
        let report_ = replaying.replay().expect("replay");
        let wall = start.elapsed();
        println!(
            "{:<44} {:>7} turns  {:>9.0} /min  ({} identical, {} changed)",
            "replay from recorded facts",
            report_.turns,
            report_.turns as f64 / wall.as_secs_f64() * 60.0,
            report_.identical,
            report_.changes.len()
        );
    }

    // PostgreSQL.
    let conninfo = std::env::var("WARRANT_BENCH_POSTGRES")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
    let schema = format!("warrant_bench_{}", std::process::id());
    match postgres::Client::connect(&conninfo, postgres::NoTls) {
        _ if !part("postgres") => {}
        Err(e) => println!("postgres: not reachable ({e}); no PostgreSQL figures"),
        Ok(mut client) => {
            client
                .batch_execute("DROP TABLE IF EXISTS bench_raw; CREATE TABLE bench_raw (k TEXT PRIMARY KEY, v JSONB)")
                .expect("raw table");
            // One client shows what a turn's round trips cost; sixteen, what the server does.
            for clients in [1, 16] {
                let per = if clients == 1 { scale() / 8 } else { scale() / clients };
                bare_postgres(&conninfo, clients, per);
                pipelined_postgres(&conninfo, clients, per);
                let pg =
                    |conninfo: String, schema: String| move || PgStore::connect(&conninfo, &schema).expect("postgres");
                durable("postgres turn", pg(conninfo.clone(), schema.clone()), clients, per);
            }
            let _ = client
                .batch_execute(&format!("DROP TABLE IF EXISTS bench_raw; DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}
