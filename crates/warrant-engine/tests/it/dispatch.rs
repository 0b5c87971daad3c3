//! Delivery over a real SQLite store, where no receiver is needed: a message whose leases kept
//! expiring goes to the dead letter instead of being delivered again, a due job run again
//! after its scheduler died is stored in the outbox once, and each channel goes to the webhook
//! its own `url_env` names. A job's message is what the gate cleared; the rows stored by hand
//! here stand for what a scheduler that died had stored.

use std::time::Duration;

use serde_json::json;
use warrant_engine::dispatch::{DispatchConfig, Dispatched, Dispatcher};
use warrant_engine::outbox::{job_key, run_due_jobs};
use warrant_engine::{OutboundResult, OutboundRun};
use warrant_store::prelude::*;
use warrant_store::{DueJob, JobState, Lease, NewJob, OutboxMessage, OutboxState, SqliteStore};

use crate::retail_engine;

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
        let lease = Lease { holder: holder.to_owned(), now, until: now + 1 };
        assert_eq!(store.take_outbox(&lease, 1).unwrap().len(), 1, "{holder}");
    }
    // Port 9 (discard) on loopback: were it tried, the error would say `unreachable`.
    let mut config = DispatchConfig::new("http://127.0.0.1:9/hook");
    config.retry.attempts = 2;
    config.timeout = Duration::from_millis(500);
    let dispatcher = Dispatcher::new(config).unwrap();
    let round = dispatcher.dispatch_once(&mut store).unwrap();
    assert_eq!(round, Dispatched { taken: 1, dead: 1, ..Dispatched::default() });
    let dead = store.outbox(Some(OutboxState::Dead), 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].attempts, 3);
    let error = dead[0].last_error.clone().unwrap_or_default();
    assert!(error.starts_with("taken 3 times without a recorded answer"), "{error}");
}

fn job(id: &str, due_at: i64) -> NewJob {
    NewJob { id: id.to_owned(), conversation: "c1".to_owned(), due_at, draft: json!({"text": "Any news?"}) }
}

/// What the gate clears for a follow-up; `n` tells the compositions apart.
fn cleared(n: usize) -> OutboundRun {
    let (mut engine, _dir) = retail_engine();
    let request = json!({"conversation": "c1", "actor": "yusuf_rossi_9620", "path": "scheduled", "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": format!("Any news? ({n})"), "claims": []}});
    match engine.outbound(&request.to_string()).unwrap() {
        OutboundResult::Cleared(run) => run,
        OutboundResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

/// The row a scheduler that died had stored for a job; `n` tells the two compositions apart.
fn composed(job: &DueJob, n: usize) -> OutboxMessage {
    OutboxMessage {
        id: format!("{}-message-{n}", job.job.id),
        conversation: job.job.conversation.clone(),
        path: "scheduled".to_owned(),
        channel: "webhook".to_owned(),
        body: json!({"text": format!("composed {n}")}),
        record: json!({"basis": "fallback"}),
        idempotency_key: "whatever the caller chose".to_owned(),
    }
}

#[test]
fn a_due_job_run_again_after_its_scheduler_died_is_one_outbox_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    store.migrate().unwrap();
    store.schedule_job(&job("j1", 100)).unwrap();
    store.schedule_job(&job("later", 10_000)).unwrap();
    // A scheduler took j1 and stored its message, then died before completing the job.
    let died = Lease { holder: "died".to_owned(), now: 100, until: 200 };
    let taken = store.take_due_jobs(&died, 10).unwrap();
    let mut first = composed(&taken[0], 1);
    first.idempotency_key = job_key("j1");
    store.enqueue(&first, 100).unwrap();

    // Its successor takes j1 again once the lease expired; the gate may compose another text,
    // but the job's key finds the stored message, and the job completes with it.
    let next = Lease { holder: "next".to_owned(), now: 200, until: 300 };
    let second = cleared(2);
    let run = run_due_jobs(&mut store, &next, 10, |_, _| Ok::<_, String>(second.clone())).unwrap();
    assert_eq!((run.taken, run.enqueued, run.already_enqueued, run.failed.len()), (1, 0, 1, 0));
    let outbox = store.outbox(None, 10).unwrap();
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].message.body, json!({"text": "composed 1"}));
    let done = store.due_job("j1").unwrap().unwrap();
    assert_eq!((done.state, done.result.as_deref()), (JobState::Done, Some("j1-message-1")));
    assert_eq!(store.due_job("later").unwrap().unwrap().state, JobState::Pending);

    // A job the caller cannot compose stays taken, to be taken again when its lease expires;
    // one it can is stored under its own key.
    store.schedule_job(&job("j2", 300)).unwrap();
    store.schedule_job(&job("j3", 300)).unwrap();
    let at = Lease { holder: "next".to_owned(), now: 300, until: 400 };
    let third = cleared(3);
    let run = run_due_jobs(&mut store, &at, 10, |_, job| {
        if job.job.id == "j2" { Err("no order in the record".to_owned()) } else { Ok(third.clone()) }
    })
    .unwrap();
    assert_eq!(run.failed, [("j2".to_owned(), "no order in the record".to_owned())]);
    assert_eq!(run.enqueued, 1);
    assert_eq!(store.due_job("j2").unwrap().unwrap().state, JobState::Taken);
    let j3 = store.outbox(None, 10).unwrap().into_iter().find(|r| r.message.idempotency_key == job_key("j3")).unwrap();
    assert_eq!(j3.message.body, serde_json::to_value(&third.message).unwrap());
    assert_eq!(j3.message.record, serde_json::to_value(&third.record).unwrap());
}

/// Each channel of the retail contract to the URL its `url_env` names; a variable that is unset
/// (or empty) is an error naming it, before anything is taken. A message stored for a channel
/// this dispatcher has no webhook for is not sent anywhere else: it waits, queued, with why.
#[test]
fn a_channel_goes_to_its_own_webhook_and_one_without_a_url_is_named_not_guessed() {
    use warrant_engine::dispatch::Channels;
    let (contract, _) = warrant_engine::load_contract(&crate::retail_dir().join("contract.toml")).unwrap();
    let outbound = contract.outbound();
    let env = |url: &'static str| move |name: &str| (name == "WARRANT_RETAIL_WEBHOOK_URL").then(|| url.to_owned());
    let channels = Channels::from_contract(outbound, &env("http://127.0.0.1:9/retail")).unwrap();
    assert_eq!(channels.url("support_webhook"), Some("http://127.0.0.1:9/retail"));
    assert_eq!(channels.url("sms"), None);
    for missing in [Channels::from_contract(outbound, &|_| None), Channels::from_contract(outbound, &env(""))] {
        let error = missing.unwrap_err().to_string();
        assert!(error.contains("`WARRANT_RETAIL_WEBHOOK_URL`") && error.contains("`support_webhook`"), "{error}");
    }

    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("w.sqlite")).unwrap();
    store.migrate().unwrap();
    let message = OutboxMessage {
        id: "m1".to_owned(),
        conversation: "c1".to_owned(),
        path: "queue".to_owned(),
        channel: "sms".to_owned(),
        body: json!({"text": "Hello."}),
        record: json!({}),
        idempotency_key: "k1".to_owned(),
    };
    store.enqueue(&message, 0).unwrap();
    let mut config = DispatchConfig::new(channels);
    config.timeout = Duration::from_millis(500);
    let round = Dispatcher::new(config).unwrap().dispatch_once(&mut store).unwrap();
    assert_eq!(round, Dispatched { taken: 1, retried: 1, ..Dispatched::default() });
    let queued = store.outbox(Some(OutboxState::Queued), 10).unwrap();
    let error = queued[0].last_error.clone().unwrap_or_default();
    assert!(error.contains("channel `sms` has no webhook here"), "{error}");
}
