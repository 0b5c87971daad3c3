//! The outbox and the due jobs on both backends: storing once per idempotency key, taking under
//! a lease (never the same row twice while the lease holds, again once it expires), retries
//! with backoff, the dead letter, and jobs completed by their holder.

use std::collections::BTreeSet;

use serde_json::json;
use warrant_store::{
    Enqueued, Failure, FailureRecorded, JobState, Lease, NewJob, OutboxMessage, OutboxState, RetryPolicy, StoreError,
};

use crate::concurrency::race;
use crate::fixture::Fixture;

const POLICY: RetryPolicy = RetryPolicy { attempts: 3, backoff_base_ms: 100, backoff_cap_ms: 150 };

fn message(n: usize) -> OutboxMessage {
    OutboxMessage {
        id: format!("m{n}"),
        conversation: "c1".to_owned(),
        path: "scheduled".to_owned(),
        channel: "webhook".to_owned(),
        body: json!({"text": format!("message {n}"), "n": n}),
        record: json!({"basis": "cleared"}),
        idempotency_key: format!("key-{n}"),
    }
}

fn lease(holder: &str, now: i64) -> Lease {
    Lease { holder: holder.to_owned(), now, until: now + 1000 }
}

fn ids<T>(rows: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    rows.iter().map(|r| id(r).to_owned()).collect()
}

pub fn a_duplicate_enqueue_is_one_row(fx: &Fixture) {
    let mut store = fx.open();
    assert_eq!(store.enqueue(&message(1), 10).unwrap(), Enqueued::Stored);
    let mut again = message(1);
    again.id = "m1-again".to_owned();
    assert_eq!(store.enqueue(&again, 20).unwrap(), Enqueued::Duplicate { id: "m1".to_owned() });
    assert_eq!(store.enqueue(&message(1), 30).unwrap(), Enqueued::Duplicate { id: "m1".to_owned() });
    let rows = store.outbox(None, 10).unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.message, message(1));
    assert_eq!((row.state, row.attempts, row.next_attempt_at, row.created_at), (OutboxState::Queued, 0, 10, 10));
    // Another message under a taken id is a caller's bug, not a duplicate.
    let mut clash = message(2);
    clash.id = "m1".to_owned();
    assert!(matches!(store.enqueue(&clash, 40), Err(StoreError::IdTaken { .. })));
    assert_eq!(store.outbox(None, 10).unwrap().len(), 1);
}

pub fn taking_leases_due_messages_in_stored_order(fx: &Fixture) {
    let mut store = fx.open();
    for n in 0..5 {
        store.enqueue(&message(n), 100).unwrap();
    }
    assert!(store.take_outbox(&lease("early", 99), 10).unwrap().is_empty(), "nothing is due before it was stored");
    let taken = store.take_outbox(&lease("a", 100), 3).unwrap();
    assert_eq!(ids(&taken, |r| &r.message.id), ["m0", "m1", "m2"]);
    for row in &taken {
        assert_eq!((row.state, row.attempts), (OutboxState::Sending, 1));
        assert_eq!((row.lease_holder.as_deref(), row.lease_until), (Some("a"), Some(1100)));
    }
    let rest = store.take_outbox(&lease("b", 200), 10).unwrap();
    assert_eq!(ids(&rest, |r| &r.message.id), ["m3", "m4"]);
    assert!(store.take_outbox(&lease("c", 300), 10).unwrap().is_empty());
    assert_eq!(store.outbox(Some(OutboxState::Sending), 10).unwrap().len(), 5);
    assert_eq!(store.mark_sent(&["m0".to_owned(), "m3".to_owned()], 400).unwrap(), 2);
    let again = ["m0".to_owned(), "nope".to_owned(), "m4".to_owned()];
    assert_eq!(store.mark_sent(&again, 500).unwrap(), 1, "m0 was sent once, `nope` is unknown");
    let sent = store.outbox(Some(OutboxState::Sent), 10).unwrap();
    assert_eq!(ids(&sent, |r| &r.message.id), ["m0", "m3", "m4"]);
    assert_eq!((sent[0].sent_at, sent[0].lease_holder.as_deref()), (Some(400), None));
    assert!(store.take_outbox(&lease("a", 100), 0).unwrap().is_empty());
}

pub fn an_expired_lease_is_taken_again(fx: &Fixture) {
    let mut store = fx.open();
    store.enqueue(&message(1), 0).unwrap();
    assert_eq!(store.take_outbox(&lease("dead-process", 0), 10).unwrap().len(), 1);
    assert!(store.take_outbox(&lease("b", 999), 10).unwrap().is_empty(), "the lease holds until it expires");
    let again = store.take_outbox(&lease("b", 1000), 10).unwrap();
    assert_eq!(ids(&again, |r| &r.message.id), ["m1"]);
    assert_eq!((again[0].attempts, again[0].lease_holder.as_deref()), (2, Some("b")));
    // The first holder's failure comes too late to count: the message is b's now.
    let late = store.mark_failed("m1", "dead-process", &Failure::Transient("timeout".into()), &POLICY, 1001);
    assert_eq!(late.unwrap(), FailureRecorded::NotHeld);
    assert_eq!(store.outbox(Some(OutboxState::Sending), 10).unwrap().len(), 1);
}

pub fn failures_back_off_and_the_last_attempt_is_dead(fx: &Fixture) {
    let mut store = fx.open();
    store.enqueue(&message(1), 0).unwrap();
    let failure = Failure::Transient("503 Service Unavailable".into());
    let mut now = 0;
    for expected in [FailureRecorded::Retry { at: 100 }, FailureRecorded::Retry { at: 250 }] {
        let taken = store.take_outbox(&lease("d", now), 1).unwrap();
        assert_eq!(taken.len(), 1, "due at {now}");
        assert_eq!(store.mark_failed("m1", "d", &failure, &POLICY, now).unwrap(), expected);
        let FailureRecorded::Retry { at } = expected else { unreachable!() };
        assert!(store.take_outbox(&lease("d", at - 1), 1).unwrap().is_empty(), "not before its backoff");
        now = at;
    }
    assert_eq!(store.take_outbox(&lease("d", now), 1).unwrap()[0].attempts, 3);
    assert_eq!(store.mark_failed("m1", "d", &failure, &POLICY, now).unwrap(), FailureRecorded::Dead);
    let dead = store.outbox(Some(OutboxState::Dead), 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].attempts, dead[0].last_error.as_deref()), (3, Some("503 Service Unavailable")));
    assert!(store.take_outbox(&lease("d", i64::MAX / 2), 10).unwrap().is_empty(), "a dead letter is never retried");
}

pub fn a_permanent_refusal_is_dead_at_once(fx: &Fixture) {
    let mut store = fx.open();
    store.enqueue(&message(1), 0).unwrap();
    store.take_outbox(&lease("d", 0), 1).unwrap();
    let refused = Failure::Permanent("400 Bad Request".into());
    assert_eq!(store.mark_failed("m1", "d", &refused, &POLICY, 5).unwrap(), FailureRecorded::Dead);
    assert_eq!(store.mark_failed("m1", "d", &refused, &POLICY, 6).unwrap(), FailureRecorded::NotHeld);
    let row = &store.outbox(None, 10).unwrap()[0];
    assert_eq!((row.state, row.attempts), (OutboxState::Dead, 1));
}

/// Two connections take from the same outbox at the same moment, round after round: every
/// message is taken by exactly one of them.
pub fn two_takers_never_get_the_same_row(fx: &Fixture) {
    let mut setup = fx.open();
    let count = 60;
    for n in 0..count {
        setup.enqueue(&message(n), 0).unwrap();
    }
    let mut stores = [fx.open(), fx.open()];
    let mut taken: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for round in 0..count {
        let results =
            race(&mut stores, |store, thread| store.take_outbox(&lease(&format!("taker{thread}"), 10), 2).unwrap());
        for (thread, rows) in results.iter().enumerate() {
            assert!(rows.iter().all(|r| r.lease_holder.as_deref() == Some(format!("taker{thread}").as_str())));
            taken[thread].extend(ids(rows, |r| &r.message.id));
        }
        if results.iter().all(Vec::is_empty) {
            assert!(round > 0);
            break;
        }
    }
    let all: Vec<&String> = taken.iter().flatten().collect();
    let distinct: BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), distinct.len(), "a message was taken twice: {taken:?}");
    assert_eq!(distinct.len(), count);
}

pub fn due_jobs_are_taken_when_due_once_and_completed_by_their_holder(fx: &Fixture) {
    let mut store = fx.open();
    let job = |id: &str, due_at: i64| NewJob {
        id: id.to_owned(),
        conversation: "c1".to_owned(),
        due_at,
        draft: json!({"text": "Your payment link is attached.", "claims": []}),
    };
    assert!(store.schedule_job(&job("late", 500)).unwrap());
    assert!(store.schedule_job(&job("early", 100)).unwrap());
    assert!(!store.schedule_job(&job("early", 999)).unwrap(), "a job id is scheduled once");
    assert!(store.take_due_jobs(&lease("s", 99), 10).unwrap().is_empty());
    let taken = store.take_due_jobs(&lease("s", 500), 10).unwrap();
    assert_eq!(ids(&taken, |j| &j.job.id), ["early", "late"], "in due order");
    assert_eq!(taken[0].job, job("early", 100));
    assert!(store.take_due_jobs(&lease("t", 600), 10).unwrap().is_empty(), "held by s");
    assert!(!store.complete_job("early", "t", "m1").unwrap(), "t does not hold it");
    assert!(store.complete_job("early", "s", "m1").unwrap());
    assert!(!store.complete_job("early", "s", "m2").unwrap(), "completed once");
    let done = store.due_job("early").unwrap().unwrap();
    assert_eq!((done.state, done.result.as_deref(), done.lease_holder), (JobState::Done, Some("m1"), None));
    // s died holding `late`: once its lease expires, another scheduler takes it.
    let again = store.take_due_jobs(&lease("t", 1500), 10).unwrap();
    assert_eq!(ids(&again, |j| &j.job.id), ["late"]);
    assert_eq!(again[0].state, JobState::Taken);
    assert!(store.due_job("nope").unwrap().is_none());
}

pub fn two_schedulers_never_take_the_same_job(fx: &Fixture) {
    let mut setup = fx.open();
    let count = 40;
    for n in 0..count {
        let job = NewJob { id: format!("j{n}"), conversation: "c".to_owned(), due_at: 0, draft: json!({}) };
        setup.schedule_job(&job).unwrap();
    }
    let mut stores = [fx.open(), fx.open()];
    let mut all = Vec::new();
    for _ in 0..count {
        let results =
            race(&mut stores, |store, thread| store.take_due_jobs(&lease(&format!("s{thread}"), 10), 3).unwrap());
        if results.iter().all(Vec::is_empty) {
            break;
        }
        all.extend(results.iter().flatten().map(|j| j.job.id.clone()));
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (count, count));
}

pub fn delivery_input_with_nul_is_refused(fx: &Fixture) {
    let mut store = fx.open();
    let mut bad = message(1);
    bad.body = json!({"text": "a\u{0}b"});
    assert!(matches!(store.enqueue(&bad, 0), Err(StoreError::NulCharacter { field }) if field == "`body`"));
    let mut bad = message(1);
    bad.idempotency_key = "k\u{0}".to_owned();
    assert!(matches!(store.enqueue(&bad, 0), Err(StoreError::NulCharacter { .. })));
    let job = NewJob { id: "j\u{0}".to_owned(), conversation: "c".to_owned(), due_at: 0, draft: json!({}) };
    assert!(matches!(store.schedule_job(&job), Err(StoreError::NulCharacter { .. })));
    assert!(store.outbox(None, 10).unwrap().is_empty());
    assert_eq!(store.mark_sent(&["m\u{0}".to_owned()], 0).unwrap(), 0);
    assert!(store.due_job("j\u{0}").unwrap().is_none());
}
