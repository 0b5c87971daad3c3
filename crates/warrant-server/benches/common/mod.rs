//! What the load test and the soak share: a lean keep-alive HTTP/1.1 client, the turn they
//! send, engines driven directly over the same store, latency figures and resident memory.
#![allow(dead_code, reason = "each benchmark uses its own part of this")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::json;

use warrant_engine::{Engine, EngineSetup, ModelSource};
use warrant_server::{AnyStore, StoreLocation, TenantName};

/// The retail example's contract.
pub fn contract() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml")
}

/// A hold turn (`cancel_pending_order`, confirmation needed) in a conversation of its own.
pub fn turn(conversation: &str) -> String {
    json!({
        "conversation": conversation, "turn": "t1", "actor": "yusuf_rossi_9620",
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": [{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}],
        "answers": [],
    })
    .to_string()
}

/// The whole HTTP request for `POST /v1/turns` with `body`, written once before it is timed.
pub fn turn_request(key: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /v1/turns HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// `GET /health`, written once.
pub fn health_request() -> Vec<u8> {
    b"GET /health HTTP/1.1\r\nHost: bench\r\n\r\n".to_vec()
}

/// A keep-alive HTTP/1.1 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    line: String,
    body: Vec<u8>,
}

impl Conn {
    /// Connects to `addr`.
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            reader: BufReader::with_capacity(64 << 10, stream.try_clone().unwrap()),
            writer: stream,
            line: String::new(),
            body: Vec::new(),
        }
    }

    /// Sends a request written whole and reads its answer; the status.
    pub fn send(&mut self, request: &[u8]) -> u16 {
        self.writer.write_all(request).unwrap();
        self.line.clear();
        self.reader.read_line(&mut self.line).unwrap();
        let status = self.line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            self.line.clear();
            self.reader.read_line(&mut self.line).unwrap();
            if self.line == "\r\n" {
                break;
            }
            if let Some((name, value)) = self.line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body).unwrap();
        status
    }

    /// The body of the last answer.
    pub fn body(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap_or("(not UTF-8)")
    }
}

/// Throughput and latency of one measured run.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    /// Requests per second over the run's wall clock.
    pub rate: f64,
    /// The median latency.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
}

impl Figures {
    /// From every request's latency and the run's wall clock.
    pub fn of(mut latencies: Vec<Duration>, wall: Duration) -> Figures {
        latencies.sort_unstable();
        let at = |q: f64| {
            let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
            latencies.get(index).copied().unwrap_or_default()
        };
        Figures { rate: latencies.len() as f64 / wall.as_secs_f64(), p50: at(0.50), p99: at(0.99) }
    }

    /// Of several runs, the median of each figure.
    pub fn median(runs: &[Figures]) -> Figures {
        let pick = |f: fn(&Figures) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
        Figures {
            rate: pick(|f| f.rate),
            p50: Duration::from_secs_f64(pick(|f| f.p50.as_secs_f64())),
            p99: Duration::from_secs_f64(pick(|f| f.p99.as_secs_f64())),
        }
    }

    /// `N/s  p50 … ms  p99 … ms`.
    pub fn show(&self) -> String {
        format!(
            "{:>8.1}/s  p50 {:>6.2} ms  p99 {:>6.2} ms",
            self.rate,
            self.p50.as_secs_f64() * 1e3,
            self.p99.as_secs_f64() * 1e3
        )
    }
}

/// Runs, on each of `threads` keep-alive connections at once, the requests `requests(t)` gives
/// connection `t`, each answered 200.
pub fn http_closed_loop(addr: SocketAddr, threads: usize, requests: impl Fn(usize) -> Vec<Vec<u8>>) -> Figures {
    let batches: Vec<Vec<Vec<u8>>> = (0..threads).map(&requests).collect();
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = batches
        .into_iter()
        .map(|batch| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut conn = Conn::open(addr);
                let mut latencies = Vec::with_capacity(batch.len());
                barrier.wait();
                for request in &batch {
                    let started = Instant::now();
                    let status = conn.send(request);
                    latencies.push(started.elapsed());
                    assert_eq!(status, 200, "{}", conn.body());
                }
                latencies
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let latencies: Vec<Duration> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    Figures::of(latencies, started.elapsed())
}

/// The engine setup the server makes (the contract, no model), for engines driven directly.
pub fn engine_setup() -> EngineSetup {
    Engine::builder().contract_file(contract()).model(ModelSource::None).prepare().unwrap()
}

/// Runs, on each of `threads` engines over the tenant's store at once (the first readies it,
/// the others attach, as the server's pool does), the turn bodies `bodies(t)` gives engine `t`.
pub fn engine_closed_loop(
    setup: &EngineSetup,
    location: &StoreLocation,
    tenant: &str,
    threads: usize,
    bodies: impl Fn(usize) -> Vec<String>,
) -> Figures {
    let tenant = TenantName::parse(tenant).unwrap();
    let open = || -> AnyStore { location.tenant_store(&tenant).unwrap() };
    drop(setup.build(open()).unwrap());
    let mut engines: Vec<Engine<AnyStore>> = (0..threads).map(|_| setup.attach(open()).unwrap()).collect();
    let batches: Vec<Vec<String>> = (0..threads).map(&bodies).collect();
    let barrier = Barrier::new(threads + 1);
    let (latencies, wall) = std::thread::scope(|scope| {
        let handles: Vec<_> = engines
            .iter_mut()
            .zip(&batches)
            .map(|(engine, batch)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut latencies = Vec::with_capacity(batch.len());
                    barrier.wait();
                    for body in batch {
                        let started = Instant::now();
                        let result = engine.turn(body).unwrap();
                        latencies.push(started.elapsed());
                        assert!(matches!(result, warrant_engine::TurnResult::Decided { .. }), "{:?}", result.to_json());
                    }
                    latencies
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let latencies: Vec<Duration> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        (latencies, started.elapsed())
    });
    drop(engines);
    Figures::of(latencies, wall)
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// This process's resident memory, in KiB (0 where `/proc` has none).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Whether this run is a measurement (`cargo bench`) rather than a smoke test of the benchmark
/// itself (`cargo test --benches`).
pub fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}
