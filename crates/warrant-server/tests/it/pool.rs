//! The engine pool over a socket: however many connections and requests arrive, a tenant's
//! store is migrated and seeded once, and no more store connections are opened than the pool
//! holds engines.

use std::net::SocketAddr;

use serde_json::json;

use crate::{Place, cancel, http, request};

/// The value of the counter `name` in the `/metrics` text.
fn counter(addr: SocketAddr, name: &str) -> u64 {
    let (status, text) = http(addr, "GET", "/metrics", None, None);
    assert_eq!(status, 200);
    let text = text.as_str().unwrap().to_owned();
    let line = text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("no {name}:\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// `clients` threads each send `turns` turns for each of two tenants, each request on a new
/// connection; the pool opens at most `engines` connections per tenant and readies each store
/// once.
fn opened_once(mut place: Place) {
    let engines = 4;
    let (_, a) = place.tenant("pa");
    let (_, b) = place.tenant("pb");
    let mut config = place.config();
    config.engines_per_tenant = engines;
    let server = warrant_server::Running::start(&config).unwrap();
    let addr = server.addr;
    assert_eq!(counter(addr, "warrant_store_readied_total"), 0);
    let (clients, turns) = (8, 6);
    let round = |label: &'static str| {
        std::thread::scope(|scope| {
            for c in 0..clients {
                let (a, b) = (a.clone(), b.clone());
                scope.spawn(move || {
                    for t in 0..turns {
                        for key in [&a, &b] {
                            let body = request(&format!("{label}{c}_{t}"), "t1", cancel(), json!([]));
                            let (status, answer) = http(addr, "POST", "/v1/turns", Some(key), Some(&body));
                            assert_eq!(status, 200, "{answer}");
                            assert_eq!(answer["acts"][0]["verdict"], "hold", "{answer}");
                        }
                    }
                });
            }
        });
    };
    round("first");
    let opened = counter(addr, "warrant_store_connections_opened_total");
    assert!((2..=2 * engines as u64).contains(&opened), "{opened} connections for 2 tenants of {engines} engines");
    assert_eq!(counter(addr, "warrant_store_readied_total"), 2, "each tenant's store readied once");
    round("second");
    assert_eq!(counter(addr, "warrant_store_connections_opened_total"), opened, "no connection opened again");
    assert_eq!(counter(addr, "warrant_store_readied_total"), 2);
}

#[test]
fn sqlite_a_tenants_store_is_opened_once_per_engine_and_readied_once() {
    opened_once(Place::sqlite());
}

#[test]
fn postgres_a_tenants_store_is_opened_once_per_engine_and_readied_once() {
    opened_once(Place::postgres());
}
