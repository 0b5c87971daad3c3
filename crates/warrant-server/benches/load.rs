//! A load test on loopback with the retail example, at concurrency 1, 4 and 16, on SQLite and
//! on PostgreSQL. At each level it measures, in the same run and over the same kind of store,
//! the same hold turns (cancel_pending_order, each a new conversation) made directly on engines
//! (one per client thread, as the server's pool holds them) and through the service on
//! keep-alive connections, with the service's share of the engine's rate; and `/health` at the
//! same concurrency (the cost of HTTP itself). Each level runs in rounds, the engine and the
//! service in turn first, and shows the medians: one run of each is a second or so, and on a
//! shared two-core machine the share read off one pair of runs swings by ten points.
//!
//! Run: `cargo bench -p warrant-server --bench load` (`WARRANT_LOAD_TURNS` turns per level,
//! 2000 unless set; `WARRANT_LOAD_ROUNDS` rounds, 5 unless set; `WARRANT_LOAD_STORES=sqlite` or
//! `postgres` for one store only; `WARRANT_LOAD_ENGINES` for a pool size other than the
//! server's default). Under `cargo test --benches` it runs as a smoke test of itself, a few
//! turns on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use common::{Figures, engine_closed_loop, engine_setup, health_request, http_closed_loop, turn, turn_request};
use warrant_server::{Running, ServeConfig, StoreLocation, add_tenant};

fn run(backend: &str, store: &str, tenant: &str, per_level: usize, levels: &[usize], rounds: usize) {
    let location = StoreLocation::parse(store).unwrap();
    let key = add_tenant(&location, tenant).unwrap();
    let mut config = ServeConfig::new(common::contract(), store.to_owned(), "127.0.0.1:0".into());
    if let Some(engines) = std::env::var("WARRANT_LOAD_ENGINES").ok().and_then(|n| n.parse().ok()) {
        config.engines_per_tenant = engines;
    }
    let engines = config.engines_per_tenant;
    let server = Running::start(&config).unwrap();
    let setup = engine_setup();
    let id = std::process::id();
    for &threads in levels {
        let per_thread = (per_level / threads).max(1);
        let bodies = |kind: &'static str, round: usize| {
            move |t: usize| {
                (0..per_thread).map(|i| turn(&format!("{kind}{id}_{threads}_{round}_{t}_{i}"))).collect::<Vec<_>>()
            }
        };
        // Rounds of one engine run and one HTTP run, in turn first, so that a change in the
        // machine's speed during the level reaches both alike; the medians are shown, and the
        // service's share is the median of the rounds' shares.
        let (mut engine, mut http, mut shares) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let run_engine = || engine_closed_loop(&setup, &location, tenant, threads, bodies("engine", round));
            let run_http = || {
                http_closed_loop(server.addr, threads, |t| {
                    bodies("http", round)(t).iter().map(|body| turn_request(&key, body)).collect()
                })
            };
            let (e, h) = if round % 2 == 0 {
                let e = run_engine();
                (e, run_http())
            } else {
                let h = run_http();
                (run_engine(), h)
            };
            shares.push(100.0 * h.rate / e.rate);
            engine.push(e);
            http.push(h);
        }
        let health: Figures =
            http_closed_loop(server.addr, threads, |_| (0..per_thread * 4).map(|_| health_request()).collect());
        println!(
            "{backend:<8} c={threads:<2} engine {}  |  http (pool {engines}) {}  = {:>5.1} % (rounds {})  |  /health {}",
            Figures::median(&engine).show(),
            Figures::median(&http).show(),
            common::median(&mut shares),
            shares.iter().map(|s| format!("{s:.0}")).collect::<Vec<_>>().join(" "),
            health.show(),
        );
    }
}

/// The `warrant` binary's allocator, so that the figures are the ones it runs at.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let measuring = common::measuring();
    let per_level: usize = if measuring {
        std::env::var("WARRANT_LOAD_TURNS").ok().and_then(|n| n.parse().ok()).unwrap_or(2000)
    } else {
        8
    };
    let stores = std::env::var("WARRANT_LOAD_STORES").unwrap_or_else(|_| "sqlite,postgres".into());
    let levels: &[usize] = if measuring { &[1, 4, 16] } else { &[1, 4] };
    let rounds: usize = if measuring {
        std::env::var("WARRANT_LOAD_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(5).max(1)
    } else {
        2
    };
    println!(
        "each level: {rounds} rounds of {per_level} hold turns on engines directly and the same through HTTP \
         (medians), then 4x as many /health requests"
    );
    if stores.contains("sqlite") {
        let dir = tempfile::tempdir().unwrap();
        run("sqlite", &format!("sqlite:{}", dir.path().display()), "load", per_level, levels, rounds);
    }
    if !measuring || !stores.contains("postgres") {
        return;
    }
    let url =
        std::env::var("WARRANT_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let id = std::process::id();
    let (registry, tenant) = (format!("wsrv_load_reg_{id}"), format!("load_{id}"));
    run("postgres", &format!("{url}?schema={registry}"), &tenant, per_level, levels, rounds);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {registry} CASCADE; DROP SCHEMA IF EXISTS t_{tenant} CASCADE"))
        .unwrap();
}
