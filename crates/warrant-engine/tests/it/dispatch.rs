//! The dispatcher over a real SQLite store, where no receiver is needed: a message whose
//! leases kept expiring goes to the dead letter instead of being delivered again.

use std::time::Duration;

use serde_json::json;
use warrant_engine::dispatch::{DispatchConfig, Dispatched, Dispatcher};
use warrant_store::{Lease, OutboxMessage, OutboxState, SqliteStore, Store};

#[test]
fn a_message_whose_leases_kept_expiring_goes_to_the_dead_letter_undelivered() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    store.migrate().unwrap();
    let message = OutboxMessage {
        id: "m1".to_owned(),
        conversation: "c1".to_owned(),
        path: "scheduled".to_owned(),
        channel: "webhook".to_owned(),
        body: json!({"text": "Hello."}),
        record: json!({}),
        idempotency_key: "k1".to_owned(),
    };
    store.enqueue(&message, 0).unwrap();
    // Two dispatchers took it and died before recording anything, their leases long expired.
    for (holder, now) in [("died-1", 0), ("died-2", 10)] {
        let lease = Lease {
            holder: holder.to_owned(),
            now,
            until: now + 1,
        };
        assert_eq!(store.take_outbox(&lease, 1).unwrap().len(), 1, "{holder}");
    }
    // Port 9 (discard) on loopback: were it tried, the error would say `unreachable`.
    let mut config = DispatchConfig::new("http://127.0.0.1:9/hook");
    config.retry.attempts = 2;
    config.timeout = Duration::from_millis(500);
    let dispatcher = Dispatcher::new(config).unwrap();
    let round = dispatcher.dispatch_once(&mut store).unwrap();
    assert_eq!(
        round,
        Dispatched {
            taken: 1,
            dead: 1,
            ..Dispatched::default()
        }
    );
    let dead = store.outbox(Some(OutboxState::Dead), 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].attempts, 3);
    let error = dead[0].last_error.clone().unwrap_or_default();
    assert!(
        error.starts_with("taken 3 times without a recorded answer"),
        "{error}"
    );
}
