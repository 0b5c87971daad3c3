//! A load test on loopback with the retail example: turns per second and p50/p99 latency at
//! concurrency 1, 4 and 16, on SQLite and on PostgreSQL, each beside `/health` at the same
//! concurrency measured in the same run (the cost of HTTP itself). Run it by hand:
//! `cargo bench -p warrant-server --bench load`; under `cargo test` it does nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::json;

use warrant_server::{Running, ServeConfig, StoreLocation, add_tenant};

/// A keep-alive HTTP/1.1 connection.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn { reader: BufReader::new(stream.try_clone().unwrap()), writer: stream }
    }

    fn send(&mut self, method: &str, path: &str, key: &str, body: &str) -> u16 {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.writer.write_all(request.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        status
    }
}

/// Runs `per_thread` requests on each of `threads` connections; returns (requests per second,
/// p50, p99).
fn measure(
    addr: SocketAddr,
    threads: usize,
    per_thread: usize,
    request: impl Fn(usize, usize) -> (String, String) + Send + Sync + 'static,
    key: &str,
) -> (f64, Duration, Duration) {
    let request = Arc::new(request);
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (request, barrier, key) = (request.clone(), barrier.clone(), key.to_owned());
            std::thread::spawn(move || {
                let mut conn = Conn::open(addr);
                let mut latencies = Vec::with_capacity(per_thread);
                barrier.wait();
                for i in 0..per_thread {
                    let (path, body) = request(t, i);
                    let method = if body.is_empty() { "GET" } else { "POST" };
                    let started = Instant::now();
                    let status = conn.send(method, &path, &key, &body);
                    latencies.push(started.elapsed());
                    assert_eq!(status, 200, "{path}");
                }
                latencies
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let mut latencies: Vec<Duration> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    (latencies.len() as f64 / elapsed.as_secs_f64(), at(0.50), at(0.99))
}

fn turn(conversation: &str) -> String {
    json!({
        "conversation": conversation, "turn": "t1", "actor": "yusuf_rossi_9620",
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": [{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}],
        "answers": [],
    })
    .to_string()
}

fn run(backend: &str, store: &str, tenant: &str, per_level: usize) {
    let contract = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml");
    let key = add_tenant(&StoreLocation::parse(store).unwrap(), tenant).unwrap();
    let config = ServeConfig::new(contract, store.to_owned(), "127.0.0.1:0".into());
    let engines = config.engines_per_tenant;
    let server = Running::start(&config).unwrap();
    let run_id = std::process::id();
    for threads in [1, 4, 16] {
        let per_thread = per_level / threads;
        let (hrps, h50, h99) =
            measure(server.addr, threads, per_thread * 4, |_, _| ("/health".into(), String::new()), &key);
        let (trps, t50, t99) = measure(
            server.addr,
            threads,
            per_thread,
            move |t, i| ("/v1/turns".into(), turn(&format!("load{run_id}_{threads}_{t}_{i}"))),
            &key,
        );
        println!(
            "{backend:<8} engines {engines}  c={threads:<2}  turns {trps:>7.1}/s  p50 {:>7.2} ms  p99 {:>7.2} ms   |  /health {hrps:>8.1}/s  p50 {:>6.3} ms  p99 {:>6.3} ms",
            t50.as_secs_f64() * 1e3,
            t99.as_secs_f64() * 1e3,
            h50.as_secs_f64() * 1e3,
            h99.as_secs_f64() * 1e3,
        );
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("the load test runs under `cargo bench -p warrant-server --bench load`");
        return;
    }
    let per_level: usize = std::env::var("WARRANT_LOAD_TURNS").ok().and_then(|n| n.parse().ok()).unwrap_or(480);
    println!(
        "each level: {per_level} hold turns (cancel_pending_order, each a new conversation), 4x as many /health requests"
    );
    let dir = tempfile::tempdir().unwrap();
    run("sqlite", &format!("sqlite:{}", dir.path().display()), "load", per_level);
    let url =
        std::env::var("WARRANT_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let id = std::process::id();
    let (registry, tenant) = (format!("wsrv_load_reg_{id}"), format!("load_{id}"));
    run("postgres", &format!("{url}?schema={registry}"), &tenant, per_level);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {registry} CASCADE; DROP SCHEMA IF EXISTS t_{tenant} CASCADE"))
        .unwrap();
}
