//! A soak of the service on SQLite with the retail example's hold turns (each a new
//! conversation), through keep-alive connections:
//! 1. the maximum rate, closed loop at concurrency 4;
//! 2. `WARRANT_SOAK_TURNS` turns (1,000,000 unless set) closed loop, resident memory at the
//!    start, after each tenth and at the end;
//! 3. the maximum rate again, on the store as the soak left it (a million turns bigger, and a
//!    little slower than the fresh one);
//! 4. `WARRANT_SOAK_SECONDS` (60 unless set) open loop at 80 % of that maximum: turns are
//!    scheduled at a fixed rate whatever the answers do, and each one's latency counts from
//!    when it was due, so a stall shows as the queue behind it. Measured against the fresh
//!    store's maximum instead, the rate can sit at what the grown store sustains, and the
//!    figure is the queue's growth rather than a turn's latency.
//!
//! Run: `cargo bench -p warrant-server --bench soak`. Under `cargo test --benches` it runs as a
//! smoke test of itself, a few hundred turns and one second.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{Conn, rss_kib, turn, turn_request};
use warrant_server::{Running, ServeConfig, StoreLocation, add_tenant};

/// Latencies counted in buckets allocated before the soak starts, so that measuring takes no
/// memory that grows with the turns: 1 µs wide up to 10 ms, 1 ms wide from there to 10 s.
#[derive(Clone)]
struct Histogram(Vec<u64>);

const FINE: usize = 10_000;

impl Histogram {
    fn new() -> Histogram {
        Histogram(vec![0; 2 * FINE])
    }

    fn add(&mut self, latency: Duration) {
        let micros = usize::try_from(latency.as_micros()).unwrap_or(usize::MAX);
        let index = if micros < FINE { micros } else { FINE + (micros / 1000).min(FINE - 1) };
        self.0[index] += 1;
    }

    fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }

    fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The latency below which fraction `q` of the counted ones are, in ms.
    fn quantile_ms(&self, q: f64) -> f64 {
        let wanted = ((self.count() as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, n) in self.0.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                return if index < FINE { index as f64 / 1e3 } else { (index - FINE) as f64 + 1.0 };
            }
        }
        f64::INFINITY
    }
}

/// Turn requests, each in a conversation of its own, `soak{n}`.
struct Template {
    key: String,
}

impl Template {
    fn request(&self, n: usize) -> Vec<u8> {
        turn_request(&self.key, &turn(&format!("soak{n}")))
    }
}

/// `total` turns, numbered from `first`, closed loop on `clients` connections; the rate and
/// the latencies.
fn closed(addr: SocketAddr, template: &Arc<Template>, clients: usize, first: usize, total: usize) -> (f64, Histogram) {
    let next = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (template, next, barrier) = (template.clone(), next.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut conn = Conn::open(addr);
                let mut histogram = Histogram::new();
                barrier.wait();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        return histogram;
                    }
                    let request = template.request(first + n);
                    let started = Instant::now();
                    let status = conn.send(&request);
                    histogram.add(started.elapsed());
                    assert_eq!(status, 200, "{}", conn.body());
                }
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let mut all = Histogram::new();
    for handle in handles {
        all.merge(&handle.join().unwrap());
    }
    (total as f64 / started.elapsed().as_secs_f64(), all)
}

/// Turns at `rate` per second for `seconds`, numbered from `first`, each sent when due by the
/// first of `clients` connections free; the latencies from when each was due, how many were
/// sent, and how many were sent more than 1 ms late.
fn open(
    addr: SocketAddr,
    template: &Arc<Template>,
    clients: usize,
    first: usize,
    rate: f64,
    seconds: f64,
) -> (Histogram, usize, usize) {
    let total = (rate * seconds) as usize;
    let next = Arc::new(AtomicUsize::new(0));
    let late = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(clients + 1));
    let start = Arc::new(std::sync::OnceLock::<Instant>::new());
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (template, next, late, barrier, start) =
                (template.clone(), next.clone(), late.clone(), barrier.clone(), start.clone());
            std::thread::spawn(move || {
                let mut conn = Conn::open(addr);
                let mut histogram = Histogram::new();
                barrier.wait();
                let start = *start.get().unwrap();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        return histogram;
                    }
                    let request = template.request(first + n);
                    let due = start + Duration::from_secs_f64(n as f64 / rate);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    } else if now - due > Duration::from_millis(1) {
                        late.fetch_add(1, Ordering::Relaxed);
                    }
                    let status = conn.send(&request);
                    histogram.add(due.elapsed());
                    assert_eq!(status, 200, "{}", conn.body());
                }
            })
        })
        .collect();
    start.set(Instant::now() + Duration::from_millis(10)).unwrap();
    barrier.wait();
    let mut all = Histogram::new();
    for handle in handles {
        all.merge(&handle.join().unwrap());
    }
    (all, total, late.load(Ordering::Relaxed))
}

/// The `warrant` binary's allocator, so that the figures are the ones it runs at.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let measuring = common::measuring();
    let setting = |name: &str, default: f64, smoke: f64| {
        if !measuring {
            return smoke;
        }
        std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let turns = setting("WARRANT_SOAK_TURNS", 1_000_000.0, 400.0) as usize;
    let seconds = setting("WARRANT_SOAK_SECONDS", 60.0, 1.0);
    let clients = 4;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().display());
    let key = add_tenant(&StoreLocation::parse(&store).unwrap(), "soak").unwrap();
    let config = ServeConfig::new(common::contract(), store, "127.0.0.1:0".into());
    let server = Running::start(&config).unwrap();
    let template = Arc::new(Template { key });
    let mut n = 0;

    // The maximum rate: a closed loop of `probe` turns, shown under `what`.
    let probe = (turns / 20).clamp(100, 20_000);
    let maximum = |n: &mut usize, what: &str| {
        let (rate, probed) = closed(server.addr, &template, clients, *n, probe);
        *n += probe;
        println!(
            "maximum rate, {what}: {rate:.0} turns/s (p50 {:.2} ms, p99 {:.2} ms)",
            probed.quantile_ms(0.5),
            probed.quantile_ms(0.99)
        );
        rate
    };
    // Warm up (the pool's engines, the store's caches), then the maximum rate.
    n += closed(server.addr, &template, clients, n, probe).1.count() as usize;
    maximum(&mut n, &format!("closed loop c={clients}, pool {}", config.engines_per_tenant));

    let start_kib = rss_kib();
    println!("soak: {turns} turns, closed loop c={clients}; resident memory at the start {start_kib} KiB");
    let tenth = (turns / 10).max(1);
    let mut done = 0;
    let soak_started = Instant::now();
    while done < turns {
        let chunk = tenth.min(turns - done);
        let (rate, histogram) = closed(server.addr, &template, clients, n, chunk);
        n += chunk;
        done += chunk;
        println!(
            "  {done:>9} turns  {rate:>7.0}/s  p50 {:.2} ms  p99 {:.2} ms  resident {} KiB",
            histogram.quantile_ms(0.5),
            histogram.quantile_ms(0.99),
            rss_kib()
        );
    }
    let end_kib = rss_kib();
    println!(
        "soak done in {:.0} s; resident memory {start_kib} KiB at the start, {end_kib} KiB at the end ({:+} KiB)",
        soak_started.elapsed().as_secs_f64(),
        end_kib as i64 - start_kib as i64
    );

    let rate = 0.8 * maximum(&mut n, "again, on the store the soak left");
    let (histogram, sent, late) = open(server.addr, &template, 16, n, rate, seconds);
    println!(
        "open loop at 80 % of the maximum ({rate:.0} turns/s) for {seconds} s: {sent} turns, p50 {:.2} ms, p99 {:.2} ms, \
         p99.9 {:.2} ms (from when each was due; {late} sent over 1 ms late); resident {} KiB",
        histogram.quantile_ms(0.5),
        histogram.quantile_ms(0.99),
        histogram.quantile_ms(0.999),
        rss_kib()
    );
}
