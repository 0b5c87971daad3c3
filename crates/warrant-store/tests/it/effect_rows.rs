//! Rows an effect creates or deletes: a commit's write expecting `ABSENT` inserts its row,
//! which must not exist (a tombstone may be created again), and a write of `null` deletes its
//! row at the revision read; either refused makes the whole commit stale.

use serde_json::{Value, json};
use warrant_store::{ABSENT, CommitOutcome};

use crate::build::{commit, rows, write};
use crate::fixture::Fixture;

fn seeded(fx: &Fixture) -> Box<dyn warrant_store::Store> {
    let mut store = fx.open();
    store.seed_records("reservations", &rows(&[("R1", json!({"status": "active"}))])).unwrap();
    store
}

pub fn a_created_row_is_inserted_and_a_second_create_of_it_is_stale(fx: &Fixture) {
    let mut store = seeded(fx);
    let mut c = commit("c1", "t1");
    c.writes.push(write("reservations", "HATHAT", ABSENT, json!({"status": "active"})));
    c.writes.push(write("reservations", "R1", 1, json!({"status": "cancelled"})));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
    let created = store.record("reservations", "HATHAT").unwrap().unwrap();
    assert_eq!((created.revision, created.value), (1, json!({"status": "active"})));
    // Another turn decided that the key was free: its commit is stale, and writes nothing.
    let mut again = commit("c1", "t2");
    again.writes.push(write("reservations", "HATHAT", ABSENT, json!({"status": "other"})));
    assert_eq!(
        store.commit(&again).unwrap(),
        CommitOutcome::StaleRevision {
            table: "reservations".into(),
            key: "HATHAT".into(),
            expected: ABSENT,
            actual: Some(1)
        }
    );
    assert_eq!(store.record("reservations", "HATHAT").unwrap().unwrap().value["status"], "active");
    assert_eq!(store.turn("c1", "t2").unwrap(), None);
}

pub fn a_deleted_row_is_gone_at_the_revision_read_and_may_be_created_again(fx: &Fixture) {
    let mut store = seeded(fx);
    // At another revision than the one read: stale, the row stays.
    let mut stale = commit("c1", "t1");
    stale.writes.push(write("reservations", "R1", 2, Value::Null));
    assert!(matches!(store.commit(&stale).unwrap(), CommitOutcome::StaleRevision { expected: 2, actual: Some(1), .. }));
    assert!(store.record("reservations", "R1").unwrap().is_some());
    let mut c = commit("c1", "t2");
    c.writes.push(write("reservations", "R1", 1, Value::Null));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(store.record("reservations", "R1").unwrap(), None);
    // Deleting it again finds no row.
    let mut twice = commit("c1", "t3");
    twice.writes.push(write("reservations", "R1", 1, Value::Null));
    assert!(matches!(store.commit(&twice).unwrap(), CommitOutcome::StaleRevision { actual: None, .. }));
    // Created again, it comes back after its tombstone's revision, never at one a decision read.
    let mut back = commit("c1", "t4");
    back.writes.push(write("reservations", "R1", ABSENT, json!({"status": "active"})));
    assert!(matches!(store.commit(&back).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(store.record("reservations", "R1").unwrap().unwrap().revision, 3);
}
