//! What exporting traces costs a turn: retail turns with a durable SQLite commit, in rounds that
//! alternate between no exporter (the default: no endpoint, nothing built) and one exporting
//! every turn's span to an OTLP receiver on this machine (a thread that accepts every export, as
//! a collector would). Turns per second and the p50 and p99 of each, from the same run; then how
//! many exports and bytes the receiver took, once the exporter was shut down (flushed); and a
//! turn's span alone, built and queued, which is all that exporting adds to a turn's path.
//!
//! Run: `cargo bench -p warrant-telemetry --bench export` (`WARRANT_BENCH_TURNS` turns each
//! side, 2000 by default, in four rounds; under `cargo test` 32, as a smoke test of itself).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use warrant_engine::{Engine, ModelSource};
use warrant_store::AnyStore;
use warrant_telemetry::{Content, Parent, Telemetry, TurnTrace};

#[path = "../../warrant-engine/benches/common/retail.rs"]
#[allow(dead_code, reason = "the engine's benchmark reads the customer's id too; this one only the turns")]
mod retail;
use retail::{acts, turn_request as request};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn scale() -> usize {
    if !std::env::args().any(|a| a == "--bench") {
        return 32;
    }
    std::env::var("WARRANT_BENCH_TURNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

/// Exports and bytes received.
#[derive(Default)]
struct Received {
    exports: AtomicUsize,
    bytes: AtomicUsize,
}

/// An OTLP/HTTP receiver that answers every request 200 with an empty body, keeping each
/// connection open as a collector does; returns its base URL.
fn receiver(received: Arc<Received>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let received = Arc::clone(&received);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    received.exports.fetch_add(1, Ordering::Relaxed);
                    received.bytes.fetch_add(length, Ordering::Relaxed);
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    base
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

/// One round of `n` turns in its own conversation, traced by `telemetry` when it is given.
fn round(
    engine: &mut Engine<AnyStore>,
    name: &str,
    n: usize,
    telemetry: Option<&Telemetry>,
) -> (Vec<Duration>, Duration) {
    let acts = acts();
    let requests: Vec<String> = (0..n).map(|i| request(name, i, &acts[i % acts.len()])).collect();
    let parent = Parent::root();
    let mut latencies = Vec::with_capacity(n);
    let start = Instant::now();
    for json in &requests {
        let t = Instant::now();
        match telemetry {
            None => {
                std::hint::black_box(engine.turn(json).unwrap());
            }
            Some(telemetry) => {
                let started = SystemTime::now();
                let result = engine.turn(json);
                let turn = TurnTrace {
                    started,
                    elapsed: t.elapsed(),
                    tenant: None,
                    request: json,
                    result: result.as_ref(),
                    tasks: engine.turn_tasks(),
                };
                telemetry.turn(&parent, &turn);
                std::hint::black_box(result.unwrap());
            }
        }
        latencies.push(t.elapsed());
    }
    (latencies, start.elapsed())
}

fn report(name: &str, mut latencies: Vec<Duration>, wall: Duration) {
    latencies.sort();
    println!(
        "{name:<40} {:>6} turns {:>8.0} /s  p50 {:>8.1} µs  p99 {:>8.1} µs",
        latencies.len(),
        latencies.len() as f64 / wall.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e6,
        percentile(&latencies, 0.99).as_secs_f64() * 1e6,
    );
}

fn main() {
    let contract = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml");
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("bench.sqlite").display());
    let mut engine = Engine::builder().contract_file(&contract).model(ModelSource::None).open(&store).unwrap();
    let received = Arc::new(Received::default());
    let telemetry = Telemetry::start(Some(&receiver(Arc::clone(&received))), Content::Withheld).unwrap().unwrap();
    let n = scale();
    // A warm-up round of each, then rounds that alternate, so that neither side has the store's
    // growth or the machine's drift to itself.
    round(&mut engine, "warm-off", n / 4, None);
    round(&mut engine, "warm-on", n / 4, Some(&telemetry));
    let (mut off, mut on) = ((Vec::new(), Duration::ZERO), (Vec::new(), Duration::ZERO));
    for r in 0..4 {
        let (latencies, wall) = round(&mut engine, &format!("off-{r}"), n / 4, None);
        off.0.extend(latencies);
        off.1 += wall;
        let (latencies, wall) = round(&mut engine, &format!("on-{r}"), n / 4, Some(&telemetry));
        on.0.extend(latencies);
        on.1 += wall;
    }
    report("no exporter (no endpoint configured)", off.0, off.1);
    report("exporting every turn's span over OTLP", on.0, on.1);
    // What exporting adds to a turn, without the commit's noise around it: a decided turn's
    // span built and handed to the batch, alone.
    let json = request("alone", 0, &acts()[0]);
    let decided = engine.turn(&json).unwrap();
    let parent = Parent::root();
    let mut alone = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        let turn = TurnTrace {
            started: SystemTime::now(),
            elapsed: Duration::from_micros(1),
            tenant: Some("acme"),
            request: &json,
            result: Ok(&decided),
            tasks: &[],
        };
        telemetry.turn(&parent, &turn);
        alone.push(t.elapsed());
    }
    report("a turn's span alone, built and queued", alone, start.elapsed());
    let flushing = Instant::now();
    telemetry.shutdown().unwrap();
    println!(
        "receiver: {} exports, {} bytes; shutdown flushed in {:.1} ms",
        received.exports.load(Ordering::Relaxed),
        received.bytes.load(Ordering::Relaxed),
        flushing.elapsed().as_secs_f64() * 1000.0
    );
    assert!(received.exports.load(Ordering::Relaxed) > 0, "nothing was exported");
}
