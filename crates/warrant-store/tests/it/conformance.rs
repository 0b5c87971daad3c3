//! What a store must do, one connection at a time: seeding, commits and their all-or-nothing
//! rule, duplicates, interactions, outcome reports, and reading back in commit order.

use serde_json::json;
use warrant_store::{
    Commit, CommitOutcome, EffectHold, InteractionState, OutcomeResult, ReadAhead, Record, ReportedRow, Store,
    StoreError,
};

use crate::build::{answer, commit, effect, event, interaction, report, rows, stored, write};
use crate::fixture::{Backend, Fixture};

/// Asserts that nothing of `commit` is stored: not its turn, effects, events or interactions.
fn nothing_stored(store: &mut dyn Store, commit: &Commit) {
    let turn = &commit.turn;
    assert_eq!(store.turn(&turn.conversation, &turn.turn).unwrap(), None, "the turn was stored");
    for effect in &commit.effects {
        assert_eq!(store.effect(&effect.id).unwrap(), None, "effect `{}` was stored", effect.id);
    }
    let events = store.events(None).unwrap();
    for event in &commit.events {
        assert!(events.iter().all(|e| e.id != event.id), "event `{}` was stored", event.id);
    }
    for opened in &commit.opened {
        assert_eq!(store.interaction(&opened.id).unwrap(), None, "`{}` was opened", opened.id);
    }
}

fn committed(outcome: CommitOutcome) -> i64 {
    match outcome {
        CommitOutcome::Committed { seq } => seq,
        other => panic!("expected the commit to go through, got {other:?}"),
    }
}

fn revision(store: &mut dyn Store, table: &str, key: &str) -> Option<i64> {
    store.record(table, key).unwrap().map(|r| r.revision)
}

fn seed_orders(store: &mut dyn Store) {
    let seeded = store
        .seed_records(
            "orders",
            &rows(&[
                ("#W0001", json!({"status": "pending", "total": "12.50"})),
                ("#W0002", json!({"status": "delivered", "total": "99.00"})),
            ]),
        )
        .unwrap();
    assert_eq!(seeded, 2);
}

pub fn migrating_twice_is_a_no_op(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let seq = committed(store.commit(&commit("c1", "t1")).unwrap());
    // The fixture migrated once already.
    store.migrate().unwrap();
    store.migrate().unwrap();
    fx.open().migrate().unwrap();
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(1));
    assert_eq!(store.turn("c1", "t1").unwrap().map(|t| t.seq), Some(seq));
    // And the schema still works after it.
    committed(store.commit(&commit("c1", "t2")).unwrap());
}

pub fn first_migrations_racing_from_two_connections_both_succeed(fx: &Fixture) {
    // Several processes may start on a new database at once; the one that comes second must
    // find the work done, not fail on it.
    let bare = fx.bare_sibling();
    let barrier = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        let racers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let mut store = bare.open();
                    store.migrate().unwrap();
                    store
                })
            })
            .collect();
        for (n, racer) in racers.into_iter().enumerate() {
            let mut store = racer.join().unwrap();
            committed(store.commit(&commit("c1", &format!("t{n}"))).unwrap());
        }
    });
    let mut store = bare.open();
    seed_orders(&mut *store);
    assert_eq!(store.turns(0, 10).unwrap().len(), 2);
}

pub fn seeded_records_read_back_at_revision_one(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    assert_eq!(
        store.record("orders", "#W0001").unwrap(),
        Some(Record {
            table: "orders".to_owned(),
            key: "#W0001".to_owned(),
            revision: 1,
            value: json!({"status": "pending", "total": "12.50"}),
        })
    );
    assert_eq!(revision(&mut *store, "orders", "#W0002"), Some(1));
    assert_eq!(store.record("orders", "#W0003").unwrap(), None);
    // The same key in another table is another record.
    assert_eq!(store.record("users", "#W0001").unwrap(), None);
    // Another connection sees what was committed.
    assert_eq!(revision(&mut *fx.open(), "orders", "#W0001"), Some(1));
}

pub fn seeding_twice_inserts_nothing_new(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let again = store
        .seed_records(
            "orders",
            &rows(&[("#W0001", json!({"status": "cancelled"})), ("#W0002", json!({"status": "cancelled"}))]),
        )
        .unwrap();
    assert_eq!(again, 0);
    let partly = store
        .seed_records(
            "orders",
            &rows(&[("#W0001", json!({"status": "cancelled"})), ("#W0003", json!({"status": "pending"}))]),
        )
        .unwrap();
    assert_eq!(partly, 1);
    let first = store.record("orders", "#W0001").unwrap().unwrap();
    assert_eq!((first.revision, first.value["status"].clone()), (1, json!("pending")));
    assert_eq!(revision(&mut *store, "orders", "#W0003"), Some(1));
    assert_eq!(store.seed_records("orders", &[]).unwrap(), 0);
}

pub fn a_commit_stores_everything_of_the_turn(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    c.events.push(event("v1", "c1", "order_cancelled", Some("e1")));
    c.events.push(event("v2", "c1", "reply_sent", None));
    c.opened.push(interaction("i1", &c));
    let seq = committed(store.commit(&c).unwrap());

    let record = store.record("orders", "#W0001").unwrap().unwrap();
    assert_eq!((record.revision, record.value), (2, json!({"status": "cancelled"})));
    assert_eq!(revision(&mut *store, "orders", "#W0002"), Some(1), "an unwritten record moved");

    let expected_turn = stored(&c, seq);
    assert_eq!(store.turn("c1", "t1").unwrap(), Some(expected_turn.clone()));
    assert_eq!(store.turns(0, 10).unwrap(), vec![expected_turn]);

    assert_eq!(store.effect("e1").unwrap(), Some(c.effects[0].clone()));
    assert_eq!(store.interaction("i1").unwrap(), Some(c.opened[0].clone()));

    let events = store.events(Some("c1")).unwrap();
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["v1", "v2"]);
    assert!(events[0].seq < events[1].seq);
    assert_eq!((events[0].effect.as_deref(), &events[0].payload), (Some("e1"), &c.events[0].payload));
    assert_eq!(events[1].kind, "reply_sent");
}

pub fn a_stale_revision_rolls_back_the_whole_commit(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut first = commit("c1", "t1");
    first.opened.push(interaction("i1", &first));
    committed(store.commit(&first).unwrap());
    let events_before = store.events(None).unwrap();

    let mut c = commit("c1", "t2");
    // #W0001 sorts first, so its write is applied before the stale one is found.
    c.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    c.writes.push(write("orders", "#W0002", 5, json!({"status": "returned"})));
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    c.events.push(event("v1", "c1", "order_cancelled", Some("e1")));
    c.opened.push(interaction("i2", &c));
    c.answered.push(answer("i1", "yes"));
    assert_eq!(
        store.commit(&c).unwrap(),
        CommitOutcome::StaleRevision {
            table: "orders".to_owned(),
            key: "#W0002".to_owned(),
            expected: 5,
            actual: Some(1),
        }
    );
    nothing_stored(&mut *store, &c);
    let untouched = store.record("orders", "#W0001").unwrap().unwrap();
    assert_eq!((untouched.revision, untouched.value["status"].clone()), (1, json!("pending")));
    assert_eq!(store.events(None).unwrap(), events_before);
    assert_eq!(store.interaction("i1").unwrap().unwrap().state, InteractionState::Open);

    // Fresh again, the same turn goes through.
    c.writes[1].expected_revision = 1;
    committed(store.commit(&c).unwrap());
    assert_eq!(revision(&mut *store, "orders", "#W0002"), Some(2));
}

pub fn a_write_to_a_missing_record_is_stale_with_no_actual_revision(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W0001", 1, json!({})));
    c.writes.push(write("orders", "#W9999", 1, json!({})));
    assert_eq!(
        store.commit(&c).unwrap(),
        CommitOutcome::StaleRevision {
            table: "orders".to_owned(),
            key: "#W9999".to_owned(),
            expected: 1,
            actual: None,
        }
    );
    assert_eq!(store.record("orders", "#W9999").unwrap(), None);
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(1));
    nothing_stored(&mut *store, &c);
}

pub fn a_duplicate_turn_returns_the_first_and_writes_nothing(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut first = commit("c1", "t1");
    first.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    let seq = committed(store.commit(&first).unwrap());
    let stored = store.turn("c1", "t1").unwrap().unwrap();
    assert_eq!(stored.seq, seq);

    // The same turn again, asking for other things that would all go through on their own.
    let mut again = commit("c1", "t1");
    again.turn.request = json!({"a": "different request"}).into();
    again.writes.push(write("orders", "#W0001", 2, json!({"status": "returned"})));
    again.effects.push(effect("e1", "cancel:#W0001", &again));
    again.events.push(event("v1", "c1", "order_cancelled", Some("e1")));
    again.opened.push(interaction("i1", &again));
    assert_eq!(store.commit(&again).unwrap(), CommitOutcome::Duplicate(stored.clone()));
    assert_eq!(store.effect("e1").unwrap(), None);
    assert_eq!(store.interaction("i1").unwrap(), None);
    assert_eq!(store.events(None).unwrap(), vec![]);
    let record = store.record("orders", "#W0001").unwrap().unwrap();
    assert_eq!((record.revision, record.value), (2, json!({"status": "cancelled"})));
    assert_eq!(store.turns(0, 10).unwrap(), vec![stored]);

    // The same turn key in another conversation is another turn.
    committed(store.commit(&commit("c2", "t1")).unwrap());
}

pub fn a_retried_turn_is_a_duplicate_not_a_stale_revision(fx: &Fixture) {
    // The retry carries the revision the first attempt saw, which its own commit moved on: the
    // turn must be recognised before its writes are checked.
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    c.opened.push(interaction("i1", &c));
    let seq = committed(store.commit(&c).unwrap());
    match store.commit(&c).unwrap() {
        CommitOutcome::Duplicate(stored) => assert_eq!(stored.seq, seq),
        other => panic!("a retried turn must be a duplicate, got {other:?}"),
    }
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(2));
}

pub fn a_duplicate_idempotency_key_rolls_back_the_commit(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut first = commit("c1", "t1");
    first.effects.push(effect("e1", "cancel:#W0001", &first));
    committed(store.commit(&first).unwrap());

    let mut second = commit("c1", "t2");
    second.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    second.effects.push(effect("e2", "refund:#W0001", &second));
    second.effects.push(effect("e3", "cancel:#W0001", &second));
    second.events.push(event("v1", "c1", "order_cancelled", Some("e3")));
    second.opened.push(interaction("i1", &second));
    assert_eq!(
        store.commit(&second).unwrap(),
        CommitOutcome::DuplicateEffect { idempotency_key: "cancel:#W0001".to_owned() }
    );
    nothing_stored(&mut *store, &second);
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(1));
    assert_eq!(store.effect("e1").unwrap().unwrap().turn, "t1");
}

pub fn a_commit_repeating_an_idempotency_key_rolls_back(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    c.effects.push(effect("e2", "cancel:#W0001", &c));
    assert_eq!(
        store.commit(&c).unwrap(),
        CommitOutcome::DuplicateEffect { idempotency_key: "cancel:#W0001".to_owned() }
    );
    nothing_stored(&mut *store, &c);
}

pub fn an_interaction_is_answered_once(fx: &Fixture) {
    let mut store = fx.open();
    let mut opening = commit("c1", "t1");
    opening.opened.push(interaction("i1", &opening));
    committed(store.commit(&opening).unwrap());
    assert_eq!(store.interaction("i1").unwrap().unwrap().state, InteractionState::Open);

    let mut yes = commit("c1", "t2");
    yes.answered.push(answer("i1", "yes"));
    yes.events.push(event("v1", "c1", "confirmed", None));
    committed(store.commit(&yes).unwrap());
    let answered = InteractionState::Answered { option: "yes".to_owned(), turn: "t2".to_owned() };
    let stored = store.interaction("i1").unwrap().unwrap();
    assert_eq!(stored.state, answered);
    assert_eq!((stored.turn.as_str(), stored.options.len()), ("t1", 2), "the answer changed the rest");

    let mut no = commit("c1", "t3");
    no.answered.push(answer("i1", "no"));
    no.events.push(event("v2", "c1", "declined", None));
    assert_eq!(store.commit(&no).unwrap(), CommitOutcome::InteractionClosed { id: "i1".to_owned() });
    nothing_stored(&mut *store, &no);
    assert_eq!(store.interaction("i1").unwrap().unwrap().state, answered);
}

pub fn an_interaction_opened_and_answered_in_one_commit(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.opened.push(interaction("i1", &c));
    c.answered.push(answer("i1", "no"));
    committed(store.commit(&c).unwrap());
    assert_eq!(
        store.interaction("i1").unwrap().unwrap().state,
        InteractionState::Answered { option: "no".to_owned(), turn: "t1".to_owned() }
    );

    // Twice in one commit: the second answer finds it closed, and neither stands.
    let mut twice = commit("c1", "t2");
    twice.opened.push(interaction("i2", &twice));
    twice.answered.push(answer("i2", "yes"));
    twice.answered.push(answer("i2", "no"));
    assert_eq!(store.commit(&twice).unwrap(), CommitOutcome::InteractionClosed { id: "i2".to_owned() });
    nothing_stored(&mut *store, &twice);
}

pub fn answering_an_unknown_interaction_is_closed(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.answered.push(answer("nope", "yes"));
    assert_eq!(store.commit(&c).unwrap(), CommitOutcome::InteractionClosed { id: "nope".to_owned() });
    nothing_stored(&mut *store, &c);
}

pub fn an_outcome_is_recorded_once(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    committed(store.commit(&c).unwrap());
    assert_eq!(store.effect("e1").unwrap().unwrap().outcome, None);

    let mut done = report("e1", "done", "v1", "c1");
    done.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    assert_eq!(store.report_outcome(&done).unwrap(), OutcomeResult::Recorded);
    assert_eq!(store.effect("e1").unwrap().unwrap().outcome.as_deref(), Some("done"));
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(2));
    let events = store.events(Some("c1")).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].id.as_str(), events[0].effect.as_deref()), ("v1", Some("e1")));

    // The same report again, then a conflicting one: each answers the stored outcome and
    // writes nothing, not even its event.
    let already = OutcomeResult::AlreadyRecorded { outcome: "done".to_owned() };
    assert_eq!(store.report_outcome(&done).unwrap(), already);
    let mut failed = report("e1", "failed", "v2", "c1");
    failed.writes.push(write("orders", "#W0001", 2, json!({"status": "pending"})));
    assert_eq!(store.report_outcome(&failed).unwrap(), already);
    assert_eq!(store.effect("e1").unwrap().unwrap().outcome.as_deref(), Some("done"));
    assert_eq!(store.events(None).unwrap().len(), 1);
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(2));
}

pub fn a_stale_outcome_report_records_nothing(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    committed(store.commit(&c).unwrap());

    let mut stale = report("e1", "done", "v1", "c1");
    stale.writes.push(write("orders", "#W0002", 1, json!({"status": "returned"})));
    stale.writes.push(write("orders", "#W0001", 3, json!({"status": "cancelled"})));
    assert_eq!(
        store.report_outcome(&stale).unwrap(),
        OutcomeResult::StaleRevision {
            table: "orders".to_owned(),
            key: "#W0001".to_owned(),
            expected: 3,
            actual: Some(1),
        }
    );
    assert_eq!(store.effect("e1").unwrap().unwrap().outcome, None);
    assert_eq!(store.events(None).unwrap(), vec![]);
    assert_eq!(revision(&mut *store, "orders", "#W0002"), Some(1));

    stale.writes[1].expected_revision = 1;
    assert_eq!(store.report_outcome(&stale).unwrap(), OutcomeResult::Recorded);
}

pub fn an_outcome_s_rows_replace_the_stored_ones_and_its_report_is_kept(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "cancel:#W0001", &c));
    c.effects.push(effect("e2", "cancel:#W0002", &c));
    committed(store.commit(&c).unwrap());
    assert_eq!(store.effect("e1").unwrap().unwrap().report, None);

    let mut done = report("e1", "done", "v1", "c1");
    let row = |key: &str, value| ReportedRow { table: "orders".into(), key: key.into(), value };
    done.rows = vec![row("#W0002", json!({"status": "shipped"})), row("#W0009", json!({"status": "new"}))];
    done.report = Some(json!({"diverged": [{"path": "status"}]}));
    assert_eq!(store.report_outcome(&done).unwrap(), OutcomeResult::Recorded);
    let stored = store.record("orders", "#W0002").unwrap().unwrap();
    assert_eq!((stored.revision, stored.value), (2, json!({"status": "shipped"})));
    assert_eq!(revision(&mut *store, "orders", "#W0009"), Some(1), "a reported row not stored is created");
    let e1 = store.effect("e1").unwrap().unwrap();
    assert_eq!(e1.report, Some(json!({"diverged": [{"path": "status"}]})));
    let turn: Vec<(String, Option<String>)> =
        store.turn_effects("c1", "t1").unwrap().into_iter().map(|e| (e.id, e.outcome)).collect();
    assert_eq!(turn, [("e1".to_owned(), Some("done".to_owned())), ("e2".to_owned(), None)]);
    assert_eq!(store.turn_effects("c1", "t2").unwrap(), vec![]);

    // A report whose rows cannot be kept writes nothing: not the outcome, not the other rows.
    let mut bad = report("e2", "done", "v2", "c1");
    bad.rows = vec![row("#W0001", json!({"status": "x"})), row("#W0002", json!(["not", "an", "object"]))];
    assert!(matches!(store.report_outcome(&bad), Err(StoreError::NotAnObject { .. })));
    assert_eq!(store.effect("e2").unwrap().unwrap().outcome, None);
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(1));
}

pub fn an_unknown_outcome_is_settled_once_by_done_or_failed(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "ship:#W0001", &c));
    committed(store.commit(&c).unwrap());
    assert_eq!(store.report_outcome(&report("e1", "unknown", "v1", "c1")).unwrap(), OutcomeResult::Recorded);
    let unknown = OutcomeResult::AlreadyRecorded { outcome: "unknown".to_owned() };
    assert_eq!(store.report_outcome(&report("e1", "unknown", "v2", "c1")).unwrap(), unknown);
    assert_eq!(store.report_outcome(&report("e1", "done", "v3", "c1")).unwrap(), OutcomeResult::Recorded);
    let done = OutcomeResult::AlreadyRecorded { outcome: "done".to_owned() };
    assert_eq!(store.report_outcome(&report("e1", "failed", "v4", "c1")).unwrap(), done);
    let events: Vec<String> = store.events(Some("c1")).unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(events, ["v1", "v3"]);
}

pub fn an_effect_holds_its_rows_until_its_outcome_is_done_or_failed(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let hold = |effect: &str, key: &str| EffectHold { effect: effect.into(), table: "orders".into(), key: key.into() };
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e2", "ship:#W0001", &c));
    c.effects.push(effect("e1", "ship:both", &c));
    c.holds = vec![hold("e2", "#W0001"), hold("e1", "#W0001"), hold("e1", "#W0002")];
    committed(store.commit(&c).unwrap());
    assert_eq!(store.pending_effect("orders", "#W0001").unwrap().as_deref(), Some("e1"));
    assert_eq!(store.pending_effect("orders", "#W0002").unwrap().as_deref(), Some("e1"));
    assert_eq!(store.pending_effect("orders", "#W0003").unwrap(), None);
    assert_eq!(store.pending_effect("users", "#W0001").unwrap(), None);

    assert_eq!(store.report_outcome(&report("e1", "unknown", "v1", "c1")).unwrap(), OutcomeResult::Recorded);
    assert_eq!(store.pending_effect("orders", "#W0002").unwrap().as_deref(), Some("e1"), "unknown keeps holding");
    assert_eq!(store.report_outcome(&report("e1", "failed", "v2", "c1")).unwrap(), OutcomeResult::Recorded);
    assert_eq!(store.pending_effect("orders", "#W0002").unwrap(), None);
    assert_eq!(store.pending_effect("orders", "#W0001").unwrap().as_deref(), Some("e2"));
    assert_eq!(store.report_outcome(&report("e2", "done", "v3", "c1")).unwrap(), OutcomeResult::Recorded);
    assert_eq!(store.pending_effect("orders", "#W0001").unwrap(), None);

    // A hold naming an effect the commit does not store rolls the commit back.
    let mut orphan = commit("c1", "t2");
    orphan.holds = vec![hold("e404", "#W0001")];
    assert!(store.commit(&orphan).is_err());
    nothing_stored(&mut *store, &orphan);
}

/// A turn's lookup with facts read ahead answers the lookup as `turn` does, and each fact it
/// answers as its own read does; PostgreSQL, which reads them in the lookup's round trip,
/// answers every one.
pub fn a_turn_s_lookup_answers_the_facts_read_ahead_as_each_read_alone_does(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "ship:#W0001", &c));
    c.holds = vec![EffectHold { effect: "e1".into(), table: "orders".into(), key: "#W0001".into() }];
    committed(store.commit(&c).unwrap());
    let rows =
        [("orders", "#W0001"), ("orders", "#W0404"), ("users", "#W0002"), ("orders", "nul\0key"), ("orders", "#W0002")];
    let pending = [("orders", "#W0002"), ("orders", "#W0001"), ("orders", "\0")];
    let ahead = ReadAhead { rows: &rows, pending: &pending };

    for (conversation, turn) in [("c1", "t1"), ("c1", "t2"), ("c\0", "t1")] {
        let answered = store.turn_ahead(conversation, turn, ahead).unwrap();
        assert_eq!(answered.turn, store.turn(conversation, turn).unwrap(), "{conversation}/{turn}");
        assert!(answered.rows.len() <= rows.len() && answered.pending.len() <= pending.len());
        for ((table, key), found) in rows.iter().zip(&answered.rows) {
            if let Some(found) = found {
                assert_eq!(*found, store.shared_record(table, key).unwrap(), "{table}/{key}");
            }
        }
        for ((table, key), found) in pending.iter().zip(&answered.pending) {
            if let Some(found) = found {
                assert_eq!(*found, store.pending_effect(table, key).unwrap(), "{table}/{key}");
            }
        }
        if matches!(fx.backend, Backend::Postgres { .. }) && !conversation.contains('\0') {
            assert_eq!(answered.rows.len(), rows.len());
            assert!(answered.rows.iter().all(Option::is_some), "{:?}", answered.rows);
            assert!(answered.pending.iter().all(Option::is_some), "{:?}", answered.pending);
            let found = |i: usize| answered.rows[i].clone().unwrap().map(|r| r.revision);
            assert_eq!((found(0), found(1), found(2), found(3), found(4)), (Some(1), None, None, None, Some(1)));
            assert_eq!(answered.pending, vec![Some(None), Some(Some("e1".to_owned())), Some(None)]);
        }
    }
    // The answers follow the store: once its outcome is in, the effect holds no row.
    assert_eq!(store.report_outcome(&report("e1", "done", "v1", "c1")).unwrap(), OutcomeResult::Recorded);
    let answered = store.turn_ahead("c1", "t2", ahead).unwrap();
    assert!(answered.pending.iter().all(|found| matches!(found, None | Some(None))), "{:?}", answered.pending);
    if matches!(fx.backend, Backend::Postgres { .. }) {
        assert_eq!(answered.pending, vec![Some(None); 3]);
    }
}

pub fn an_outcome_for_an_unknown_effect_records_nothing(fx: &Fixture) {
    let mut store = fx.open();
    assert_eq!(store.report_outcome(&report("e404", "done", "v1", "c1")).unwrap(), OutcomeResult::UnknownEffect);
    assert_eq!(store.events(None).unwrap(), vec![]);
}

pub fn turns_come_in_commit_order_after_a_sequence_number(fx: &Fixture) {
    let mut store = fx.open();
    let order = [("c1", "t1"), ("c2", "t1"), ("c1", "t2"), ("c3", "x"), ("c2", "t2")];
    let mut seqs = Vec::new();
    for (conversation, turn) in order {
        seqs.push(committed(store.commit(&commit(conversation, turn)).unwrap()));
    }
    // A rolled-back commit in the middle takes no place in the order.
    let mut stale = commit("c9", "t9");
    stale.writes.push(write("orders", "#nope", 1, json!({})));
    assert!(matches!(store.commit(&stale).unwrap(), CommitOutcome::StaleRevision { .. }));
    seqs.push(committed(store.commit(&commit("c1", "t3")).unwrap()));

    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "sequence numbers {seqs:?} are not increasing");
    let keys = |turns: Vec<warrant_store::StoredTurn>| -> Vec<(String, String)> {
        turns.into_iter().map(|t| (t.conversation, t.turn)).collect()
    };
    let all = store.turns(0, 100).unwrap();
    assert_eq!(all.iter().map(|t| t.seq).collect::<Vec<_>>(), seqs);
    assert_eq!(keys(all)[..5], order.map(|(c, t)| (c.to_owned(), t.to_owned())));
    assert_eq!(
        keys(store.turns(seqs[1], 2).unwrap()),
        [("c1".to_owned(), "t2".to_owned()), ("c3".to_owned(), "x".to_owned())]
    );
    assert_eq!(store.turns(seqs[4], 100).unwrap().len(), 1);
    assert_eq!(store.turns(seqs[5], 100).unwrap(), vec![]);
    assert_eq!(store.turns(0, 0).unwrap(), vec![]);
    assert_eq!(store.turns(-1, usize::MAX).unwrap().len(), 6);
}

pub fn events_come_in_commit_order_of_every_or_one_conversation(fx: &Fixture) {
    let mut store = fx.open();
    let mut a1 = commit("a", "t1");
    a1.effects.push(effect("e1", "k1", &a1));
    a1.events.push(event("a1-1", "a", "one", None));
    a1.events.push(event("a1-2", "a", "two", Some("e1")));
    committed(store.commit(&a1).unwrap());
    let mut b1 = commit("b", "t1");
    b1.events.push(event("b1-1", "b", "one", None));
    committed(store.commit(&b1).unwrap());
    assert_eq!(store.report_outcome(&report("e1", "failed", "a-r", "a")).unwrap(), OutcomeResult::Recorded);
    let mut a2 = commit("a", "t2");
    a2.events.push(event("a2-1", "a", "three", None));
    committed(store.commit(&a2).unwrap());

    let all = store.events(None).unwrap();
    let ids: Vec<&str> = all.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a1-1", "a1-2", "b1-1", "a-r", "a2-1"]);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    let of_a: Vec<String> = store.events(Some("a")).unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(of_a, ["a1-1", "a1-2", "a-r", "a2-1"]);
    assert_eq!(store.events(Some("b")).unwrap(), all[2..3].to_vec());
    assert_eq!(store.events(Some("nobody")).unwrap(), vec![]);
}

pub fn refused_input_writes_nothing(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut c = commit("c1", "t1");
    c.effects.push(effect("e1", "k1", &c));
    committed(store.commit(&c).unwrap());

    let unknown = store.report_outcome(&report("e1", "maybe", "v1", "c1"));
    assert!(matches!(unknown, Err(StoreError::UnknownOutcome { .. })), "{unknown:?}");
    assert_eq!(store.effect("e1").unwrap().unwrap().outcome, None);

    let mut nul = commit("c1", "t2");
    nul.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    nul.events.push(event("v1", "c1", "said", None));
    nul.events[0].payload = json!({"text": "a\u{0}b"});
    let refused = store.commit(&nul);
    assert!(
        matches!(&refused, Err(StoreError::NulCharacter { field }) if field == "`events[0].payload`"),
        "{refused:?}"
    );
    nothing_stored(&mut *store, &nul);
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(1));

    // A turn's JSON columns come as text: U+0000 is found there too, in a value or in a key,
    // after any run of escaped backslashes, and a backslash followed by `u0000` is plain text.
    for (at, replay) in [
        ("value", json!({"facts": ["\u{0}"]})),
        ("key", json!({"a\u{0}": 1})),
        ("after backslashes", json!({"text": "\\\\\u{0}"})),
    ] {
        let mut nul = commit("c1", "t3");
        nul.turn.replay = (&replay).into();
        let refused = store.commit(&nul);
        assert!(
            matches!(&refused, Err(StoreError::NulCharacter { field }) if field == "`turn.replay`"),
            "a U+0000 in a {at}: {refused:?}"
        );
        nothing_stored(&mut *store, &nul);
    }
    let mut plain = commit("c1", "t3");
    let request = json!({"text": "C:\\u0000 and \\\\\\u0000"});
    plain.turn.request = (&request).into();
    committed(store.commit(&plain).unwrap());
    assert_eq!(store.turn("c1", "t3").unwrap().unwrap().request, request);
}

pub fn a_taken_id_is_an_error_and_writes_nothing(fx: &Fixture) {
    let mut store = fx.open();
    let mut first = commit("c1", "t1");
    first.effects.push(effect("e1", "k1", &first));
    first.opened.push(interaction("i1", &first));
    first.events.push(event("v1", "c1", "one", None));
    committed(store.commit(&first).unwrap());

    let mut effect_taken = commit("c1", "t2");
    effect_taken.effects.push(effect("e1", "k2", &effect_taken));
    let result = store.commit(&effect_taken);
    assert!(matches!(&result, Err(StoreError::IdTaken { kind: "effect", id }) if id == "e1"), "{result:?}");

    let mut interaction_taken = commit("c1", "t3");
    interaction_taken.opened.push(interaction("i1", &interaction_taken));
    let result = store.commit(&interaction_taken);
    assert!(matches!(&result, Err(StoreError::IdTaken { kind: "interaction", .. })), "{result:?}");

    let mut event_taken = commit("c1", "t4");
    event_taken.events.push(event("v1", "c1", "two", None));
    let result = store.commit(&event_taken);
    assert!(matches!(&result, Err(StoreError::IdTaken { kind: "event", .. })), "{result:?}");

    assert_eq!(store.turns(0, 10).unwrap().len(), 1);
    assert_eq!(store.effect("e1").unwrap().unwrap().idempotency_key, "k1");
    assert_eq!(store.interaction("i1").unwrap().unwrap().turn, "t1");
    assert_eq!(store.events(None).unwrap().len(), 1);
}

/// A commit's steps are judged in order, and the first whose result ends the commit decides
/// it, whatever a later step would have failed on: a backend that runs steps ahead of their
/// answers (PostgreSQL sends them in one pipeline) must answer as one that stops at once.
pub fn the_first_step_that_ends_a_commit_decides_it(fx: &Fixture) {
    let mut store = fx.open();
    seed_orders(&mut *store);
    let mut first = commit("c1", "t1");
    first.effects.push(effect("e1", "k1", &first));
    first.opened.push(interaction("i1", &first));
    first.events.push(event("v1", "c1", "one", None));
    first.findings.push(crate::build::finding("f1", &first));
    committed(store.commit(&first).unwrap());
    let mut closing = commit("c1", "t2");
    closing.answered.push(answer("i1", "yes"));
    committed(store.commit(&closing).unwrap());
    let stale = |expected| CommitOutcome::StaleRevision {
        table: "orders".to_owned(),
        key: "#W0002".to_owned(),
        expected,
        actual: Some(1),
    };
    // Each refused commit takes turn t3, and leaves the first commit's one event alone.
    let untouched = |store: &mut dyn Store| {
        assert_eq!(store.turn("c1", "t3").unwrap(), None);
        assert_eq!(store.events(None).unwrap().len(), 1);
    };

    // A stale read, then an interaction whose id is taken.
    let mut c = commit("c1", "t3");
    c.reads.push(warrant_store::RecordRead { table: "orders".into(), key: "#W0002".into(), revision: 4 });
    c.opened.push(interaction("i1", &c));
    assert_eq!(store.commit(&c).unwrap(), stale(4));
    untouched(&mut *store);

    // A stale write, then an effect whose id is taken and a finding whose id is taken.
    let mut c = commit("c1", "t3");
    c.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    c.writes.push(write("orders", "#W0002", 3, json!({"status": "returned"})));
    c.effects.push(effect("e1", "k9", &c));
    c.findings.push(crate::build::finding("f1", &c));
    assert_eq!(store.commit(&c).unwrap(), stale(3));
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(1));

    // A duplicate turn, then a stale read and an effect whose key is taken.
    let mut c = commit("c1", "t1");
    c.reads.push(warrant_store::RecordRead { table: "orders".into(), key: "#W0002".into(), revision: 4 });
    c.effects.push(effect("e9", "k1", &c));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Duplicate(turn) if turn.turn == "t1"));

    // An effect whose key is taken, then an event whose id is taken.
    let mut c = commit("c1", "t3");
    c.effects.push(effect("e9", "k1", &c));
    c.events.push(event("v1", "c1", "two", None));
    assert_eq!(store.commit(&c).unwrap(), CommitOutcome::DuplicateEffect { idempotency_key: "k1".to_owned() });
    untouched(&mut *store);
    assert_eq!(store.effect("e9").unwrap(), None);

    // A closed interaction, then an event naming an effect that does not exist.
    let mut c = commit("c1", "t3");
    c.answered.push(answer("i1", "no"));
    c.events.push(event("v9", "c1", "two", Some("e404")));
    assert_eq!(store.commit(&c).unwrap(), CommitOutcome::InteractionClosed { id: "i1".to_owned() });
    untouched(&mut *store);

    // An error decides where nothing before it ends the commit.
    let mut c = commit("c1", "t3");
    c.reads.push(warrant_store::RecordRead { table: "orders".into(), key: "#W0002".into(), revision: 1 });
    c.events.push(event("v9", "c1", "two", Some("e404")));
    c.opened.push(interaction("i1", &c));
    let result = store.commit(&c);
    assert!(matches!(&result, Err(StoreError::IdTaken { kind: "interaction", id }) if id == "i1"), "{result:?}");
    untouched(&mut *store);

    // And the connection is left as it was: the same turn, made good, goes through.
    let mut c = commit("c1", "t3");
    c.reads.push(warrant_store::RecordRead { table: "orders".into(), key: "#W0002".into(), revision: 1 });
    c.writes.push(write("orders", "#W0001", 1, json!({"status": "cancelled"})));
    c.effects.push(effect("e2", "k2", &c));
    c.events.push(event("v2", "c1", "two", Some("e2")));
    c.findings.push(crate::build::finding("f2", &c));
    committed(store.commit(&c).unwrap());
    assert_eq!(revision(&mut *store, "orders", "#W0001"), Some(2));
    assert_eq!(store.events(None).unwrap().len(), 2);
}

pub fn an_event_naming_an_unknown_effect_is_an_error_and_writes_nothing(fx: &Fixture) {
    let mut store = fx.open();
    let mut c = commit("c1", "t1");
    c.events.push(event("v1", "c1", "order_cancelled", Some("e404")));
    let result = store.commit(&c);
    assert!(
        matches!(&result, Err(StoreError::UnknownEffectReference { effect, .. }) if effect == "e404"),
        "{result:?}"
    );
    nothing_stored(&mut *store, &c);
}

pub fn prompt_versions_are_kept_and_every_promotion_decision_is_logged(fx: &Fixture) {
    use warrant_store::{PromptPromotionRow, PromptRow};
    let mut store = fx.open();
    let v1 = PromptRow { task: "value_stated".into(), version: "aaa".into(), text: "first".into() };
    let v2 = PromptRow { task: "value_stated".into(), version: "bbb".into(), text: "second".into() };
    assert!(store.put_prompt(&v1).unwrap());
    assert!(!store.put_prompt(&v1).unwrap(), "a version is kept once");
    assert!(store.put_prompt(&v2).unwrap());
    assert_eq!(store.prompt("value_stated", "bbb").unwrap(), Some(v2.clone()));
    assert_eq!(store.prompt("value_stated", "zzz").unwrap(), None);
    assert!(store.promotions("value_stated").unwrap().is_empty());
    let promote = |version: &str, accepted: bool| PromptPromotionRow {
        seq: 0,
        task: "value_stated".into(),
        version: version.into(),
        accepted,
        report: json!({"cases": 2, "regressions": []}),
    };
    store.record_promotion(&promote("aaa", true)).unwrap();
    store.record_promotion(&promote("bbb", false)).unwrap();
    store.record_promotion(&promote("bbb", true)).unwrap();
    let all = store.promotions("value_stated").unwrap();
    assert_eq!(
        all.iter().map(|p| (p.version.as_str(), p.accepted)).collect::<Vec<_>>(),
        [("aaa", true), ("bbb", false), ("bbb", true)]
    );
    assert_eq!(all[0].report, json!({"cases": 2, "regressions": []}));
    // A promotion of a version that is not kept is refused by the store.
    assert!(store.record_promotion(&promote("never_kept", true)).is_err());
}

pub fn recent_turns_come_newest_first_before_a_cursor(fx: &Fixture) {
    let mut store = fx.open();
    assert_eq!(store.recent_turns(None, 10).unwrap(), vec![]);
    let order = [("c1", "t1"), ("c2", "t1"), ("c1", "t2"), ("c3", "x")];
    let mut seqs = Vec::new();
    for (conversation, turn) in order {
        seqs.push(committed(store.commit(&commit(conversation, turn)).unwrap()));
    }
    let keys = |turns: Vec<warrant_store::StoredTurn>| -> Vec<(String, String)> {
        turns.into_iter().map(|t| (t.conversation, t.turn)).collect()
    };
    let newest = store.recent_turns(None, 2).unwrap();
    assert_eq!(newest.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![seqs[3], seqs[2]]);
    // The next page starts below the last sequence number seen, and ends at the oldest turn.
    let cursor = newest.last().unwrap().seq;
    assert_eq!(
        keys(store.recent_turns(Some(cursor), 10).unwrap()),
        [("c2".to_owned(), "t1".to_owned()), ("c1".to_owned(), "t1".to_owned())]
    );
    assert_eq!(store.recent_turns(Some(seqs[0]), 10).unwrap(), vec![]);
    assert_eq!(store.recent_turns(None, 0).unwrap(), vec![]);
    // Every turn, newest first, is the commit order reversed.
    let mut all = store.turns(0, 100).unwrap();
    all.reverse();
    assert_eq!(store.recent_turns(None, usize::MAX).unwrap(), all);
}
