//! Counters and a latency histogram in Prometheus' text format, kept with atomics so that
//! counting never waits on a lock held by another request.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

/// The server's counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    /// Acts by verdict (`commit`, `hold`, `ask`, `refuse`).
    acts: Mutex<BTreeMap<String, u64>>,
    /// Turns by result (`decided`, `repeated`, `rejected`).
    turns: Mutex<BTreeMap<String, u64>>,
    /// Error answers by code.
    errors: Mutex<BTreeMap<String, u64>>,
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

fn bump(map: &Mutex<BTreeMap<String, u64>>, key: &str) {
    if let Ok(mut map) = map.lock() {
        // The key is copied only the first time it is counted.
        match map.get_mut(key) {
            Some(count) => *count += 1,
            None => {
                map.insert(key.to_owned(), 1);
            }
        }
    }
}

impl Metrics {
    pub(crate) fn act(&self, verdict: &str) {
        bump(&self.acts, verdict);
    }

    pub(crate) fn turn(&self, result: &str) {
        bump(&self.turns, result);
    }

    pub(crate) fn error(&self, code: &str) {
        bump(&self.errors, code);
    }

    pub(crate) fn latency(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            if seconds <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The text exposition format, version 0.0.4, with the pool's store connections: `opened`
    /// in all, `readied` of them the first of their tenant, which migrated and seeded its store.
    pub(crate) fn render(&self, (opened, readied): (usize, usize)) -> String {
        let mut out = String::new();
        for (name, help, value) in [
            ("warrant_store_connections_opened_total", "Tenant store connections the pool opened.", opened),
            ("warrant_store_readied_total", "Tenant stores migrated and seeded (once per tenant).", readied),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        }
        let family = |out: &mut String, name: &str, help: &str, label: &str, map: &Mutex<BTreeMap<String, u64>>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            if let Ok(map) = map.lock() {
                for (key, value) in map.iter() {
                    let _ = writeln!(out, "{name}{{{label}=\"{key}\"}} {value}");
                }
            }
        };
        family(&mut out, "warrant_acts_total", "Acts decided, by verdict.", "verdict", &self.acts);
        family(&mut out, "warrant_turns_total", "Turn requests, by result.", "result", &self.turns);
        family(&mut out, "warrant_http_errors_total", "Error answers, by code.", "code", &self.errors);
        let name = "warrant_http_request_duration_seconds";
        let _ = writeln!(out, "# HELP {name} Time to answer a request.\n# TYPE {name} histogram");
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {}", bucket.load(Ordering::Relaxed));
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {}", self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count {count}");
        out
    }
}
