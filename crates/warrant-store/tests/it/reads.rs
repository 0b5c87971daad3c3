//! The rows a decision read and does not write (a row followed by reference, a related row, a
//! row read for policy): a commit goes through only while each is as it was read, and a row
//! that changed, was deleted or was created since makes the whole commit stale.

use serde_json::json;
use warrant_store::{CommitOutcome, Precondition, ReadAhead, RecordRead, Store};

use crate::build::{commit, effect, event, rows, write};
use crate::concurrency::race;
use crate::fixture::{Backend, Fixture};

fn read(table: &str, key: &str, revision: i64) -> RecordRead {
    RecordRead { table: table.to_owned(), key: key.to_owned(), revision }
}

fn seed(store: &mut dyn Store) {
    let seeded = store
        .seed_records(
            "flights",
            &rows(&[("F1", json!({"status": "available"})), ("F2", json!({"status": "available"}))]),
        )
        .unwrap();
    assert_eq!(seeded, 2);
    store.seed_records("reservations", &rows(&[("R1", json!({"status": "active"}))])).unwrap();
}

/// A cancellation of R1 decided from flights F1 and F2 at revision 1.
fn cancellation(turn: &str) -> warrant_store::Commit {
    let mut c = commit("c1", turn);
    c.writes.push(write("reservations", "R1", 1, json!({"status": "cancelled"})));
    c.reads.push(read("flights", "F1", 1));
    c.reads.push(read("flights", "F2", 1));
    c.effects.push(effect(&format!("e-{turn}"), &format!("cancel-{turn}"), &c));
    c.events.push(event(&format!("v-{turn}"), "c1", "reservation_cancelled", Some(&format!("e-{turn}"))));
    c
}

/// Nothing of the cancellation went in: no turn, no effect, no event, R1 as seeded.
fn nothing_written(store: &mut dyn Store, turn: &str) {
    assert_eq!(store.turn("c1", turn).unwrap(), None, "the turn was stored");
    assert_eq!(store.effect(&format!("e-{turn}")).unwrap(), None, "the effect was stored");
    assert!(store.events(None).unwrap().is_empty(), "an event was stored");
    let r1 = store.record("reservations", "R1").unwrap().unwrap();
    assert_eq!((r1.revision, r1.value), (1, json!({"status": "active"})));
}

pub fn a_read_row_changed_since_the_decision_makes_the_commit_stale(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    // The system of record lands flight F2 between the decision and its commit.
    let landed = store.put_record("flights", "F2", &json!({"status": "landed"}), Precondition::IfMatch(1)).unwrap();
    assert_eq!(
        store.commit(&cancellation("t1")).unwrap(),
        CommitOutcome::StaleRevision { table: "flights".into(), key: "F2".into(), expected: 1, actual: Some(landed) }
    );
    nothing_written(&mut *store, "t1");
    // Decided again from the row as it is now, it commits.
    let mut again = cancellation("t1");
    again.reads[1].revision = landed;
    assert!(matches!(store.commit(&again).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(store.record("reservations", "R1").unwrap().unwrap().revision, 2);
    // A read leaves its row as it was.
    let f2 = store.record("flights", "F2").unwrap().unwrap();
    assert_eq!((f2.revision, f2.value), (landed, json!({"status": "landed"})));
}

pub fn a_read_row_deleted_since_is_stale_with_no_actual_revision(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    store.delete_record("flights", "F1", 1).unwrap();
    assert_eq!(
        store.commit(&cancellation("t1")).unwrap(),
        CommitOutcome::StaleRevision { table: "flights".into(), key: "F1".into(), expected: 1, actual: None }
    );
    nothing_written(&mut *store, "t1");
}

pub fn a_row_read_missing_and_created_since_is_stale(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    let mut c = cancellation("t1");
    c.reads.push(read("flights", "F3", warrant_store::ABSENT));
    // Still missing: the read holds.
    let mut fresh = c.clone();
    fresh.turn.turn = "t0".into();
    fresh.writes.clear();
    fresh.effects.clear();
    fresh.events.clear();
    assert!(matches!(store.commit(&fresh).unwrap(), CommitOutcome::Committed { .. }));
    let created =
        store.put_record("flights", "F3", &json!({"status": "available"}), Precondition::IfNoneMatch).unwrap();
    assert_eq!(
        store.commit(&c).unwrap(),
        CommitOutcome::StaleRevision {
            table: "flights".into(),
            key: "F3".into(),
            expected: warrant_store::ABSENT,
            actual: Some(created)
        }
    );
    assert_eq!(store.turn("c1", "t1").unwrap(), None);
    assert_eq!(store.record("reservations", "R1").unwrap().unwrap().revision, 1);
}

pub fn a_row_both_read_and_written_is_checked_by_its_write(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    let mut c = cancellation("t1");
    // The engine leaves such a read out; a store given one still decides by the write alone.
    c.reads.push(read("reservations", "R1", 1));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(store.record("reservations", "R1").unwrap().unwrap().revision, 2);
}

/// A commit that read F1 races a commit that writes F1. Whichever order the database picks,
/// the reader commits only if it comes first in commit order: a reader after the writer would
/// have been decided from a row that was no longer there.
pub fn a_commit_reading_a_row_and_a_writer_of_it_are_serialized(fx: &Fixture) {
    let mut setup = fx.open();
    seed(&mut *setup);
    let mut stores = [fx.open(), fx.open()];
    let (mut readers_first, mut readers_stale) = (0, 0);
    for round in 1..=20_i64 {
        let results = race(&mut stores, |store, thread| {
            let mut c = commit(&format!("c{thread}"), &format!("r{round}"));
            if thread == 0 {
                c.reads.push(read("flights", "F1", round));
            } else {
                c.writes.push(write("flights", "F1", round, json!({"round": round})));
            }
            store.commit(&c).unwrap()
        });
        let CommitOutcome::Committed { seq: written } = results[1] else {
            panic!("round {round}: the writer got {:?}", results[1]);
        };
        match &results[0] {
            CommitOutcome::Committed { seq } => {
                assert!(*seq < written, "round {round}: the reader committed after the writer");
                readers_first += 1;
            }
            CommitOutcome::StaleRevision { table, key, expected, actual } => {
                assert_eq!(
                    (table.as_str(), key.as_str(), *expected, *actual),
                    ("flights", "F1", round, Some(round + 1))
                );
                assert_eq!(setup.turn("c0", &format!("r{round}")).unwrap(), None);
                readers_stale += 1;
            }
            other => panic!("round {round}: the reader got {other:?}"),
        }
        assert_eq!(setup.record("flights", "F1").unwrap().unwrap().revision, round + 1);
    }
    assert_eq!(readers_first + readers_stale, 20);
}

/// A commit that read F2 and F1 races a commit that writes F1 and F2. Each locks its rows in
/// (table, key) order, whatever order its decision listed them in, so neither can hold one row
/// while it waits for the other's: every round ends with the reader first or stale, never with
/// an error (on PostgreSQL, a deadlock).
pub fn reads_of_several_rows_and_a_writer_of_them_never_deadlock(fx: &Fixture) {
    let mut setup = fx.open();
    seed(&mut *setup);
    let mut stores = [fx.open(), fx.open()];
    for round in 1..=20_i64 {
        let results = race(&mut stores, |store, thread| {
            let mut c = commit(&format!("c{thread}"), &format!("r{round}"));
            if thread == 0 {
                c.reads.extend([read("flights", "F2", round), read("flights", "F1", round)]);
            } else {
                for flight in ["F1", "F2"] {
                    c.writes.push(write("flights", flight, round, json!({"round": round})));
                }
            }
            store.commit(&c)
        });
        let [reader, writer] = results;
        let Ok(CommitOutcome::Committed { seq: written }) = writer else {
            panic!("round {round}: the writer got {writer:?}");
        };
        match reader {
            Ok(CommitOutcome::Committed { seq }) => assert!(seq < written, "round {round}: the reader came after"),
            Ok(CommitOutcome::StaleRevision { table, key, expected, actual }) => assert_eq!(
                (table.as_str(), key.as_str(), expected, actual),
                ("flights", "F1", round, Some(round + 1)),
                "round {round}: the first row in order is the one found stale"
            ),
            other => panic!("round {round}: the reader got {other:?}"),
        }
    }
}

/// A row read shared is the row as stored, after every write to it: a backend that keeps the
/// rows it read never serves one a write has replaced.
pub fn a_row_read_shared_is_the_row_as_stored_after_every_write(f: &Fixture) {
    let mut store = f.open();
    seed(&mut *store);
    let first = store.shared_record("flights", "F1").unwrap().unwrap();
    assert_eq!((first.revision, &*first.value), (1, &json!({"status": "available"})));
    assert_eq!(
        store.record("flights", "F1").unwrap().map(|r| (r.revision, r.value)),
        Some((1, (*first.value).clone()))
    );
    // Read again, unchanged: the same row.
    assert_eq!(store.shared_record("flights", "F1").unwrap(), Some(first));
    // Written through another store: the new row.
    let mut other = f.open();
    let revision =
        other.put_record("flights", "F1", &json!({"status": "cancelled"}), Precondition::IfMatch(1)).unwrap();
    let second = store.shared_record("flights", "F1").unwrap().unwrap();
    assert_eq!((second.revision, &*second.value), (revision, &json!({"status": "cancelled"})));
    // Written by a commit of this store: the new row again.
    let mut c = commit("c1", "t1");
    c.writes.push(write("flights", "F1", revision, json!({"status": "available", "gate": "B4"})));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
    let third = store.shared_record("flights", "F1").unwrap().unwrap();
    assert_eq!((third.revision, &*third.value), (revision + 1, &json!({"status": "available", "gate": "B4"})));
    // Deleted: none, and another row is not mistaken for it.
    other.delete_record("flights", "F1", revision + 1).unwrap();
    assert_eq!(store.shared_record("flights", "F1").unwrap(), None);
    assert_eq!(store.shared_record("flights", "F2").unwrap().map(|r| r.revision), Some(1));
    assert_eq!(store.shared_record("flights", "missing").unwrap(), None);
}

/// A row read again whose stored text has not changed is served the value read before, not
/// parsed again, whether it is read alone or beside a turn's lookup; once its text changes,
/// the new value is read.
pub fn a_row_read_again_from_the_same_text_is_served_the_value_already_read(f: &Fixture) {
    let mut store = f.open();
    seed(&mut *store);
    let first = store.shared_record("flights", "F1").unwrap().unwrap();
    let again = store.shared_record("flights", "F1").unwrap().unwrap();
    assert!(std::sync::Arc::ptr_eq(&first.value, &again.value), "read alone twice");
    let rows = [("flights", "F1")];
    let ahead = store.turn_ahead("c1", "t1", ReadAhead { rows: &rows, pending: &[] }).unwrap();
    // PostgreSQL reads ahead beside the lookup; SQLite answers the lookup alone.
    match ahead.rows.first() {
        Some(Some(Some(read))) => {
            assert!(std::sync::Arc::ptr_eq(&first.value, &read.value), "read beside a lookup")
        }
        other => assert!(!matches!(f.backend, Backend::Postgres { .. }), "PostgreSQL read ahead {other:?}"),
    }
    // Another store writes the same value at a new revision: the text is the same, and so is
    // the value; the revision is the one stored.
    let mut other = f.open();
    let revision =
        other.put_record("flights", "F1", &json!({"status": "available"}), Precondition::IfMatch(1)).unwrap();
    let same = store.shared_record("flights", "F1").unwrap().unwrap();
    assert_eq!(same.revision, revision);
    assert_eq!(*same.value, *first.value);
    other.put_record("flights", "F1", &json!({"status": "full"}), Precondition::IfMatch(revision)).unwrap();
    let changed = store.shared_record("flights", "F1").unwrap().unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first.value, &changed.value));
    assert_eq!(*changed.value, json!({"status": "full"}));
}

/// Reads inside a span, on any backend, read the rows as stored, and a span ended (or left
/// open and ended by the next write) leaves the store writable.
pub fn reads_in_a_span_read_the_rows_and_leave_the_store_writable(f: &Fixture) {
    let mut store = f.open();
    seed(&mut *store);
    store.begin_reads().unwrap();
    assert_eq!(store.shared_record("flights", "F1").unwrap().map(|r| r.revision), Some(1));
    assert_eq!(store.turn("c1", "t1").unwrap(), None);
    store.end_reads().unwrap();
    store.end_reads().unwrap();
    // A span begun twice, then left open: the next write still goes through, and reads after
    // it see it.
    store.begin_reads().unwrap();
    store.begin_reads().unwrap();
    assert_eq!(store.record("flights", "F2").unwrap().map(|r| r.revision), Some(1));
    let revision = store.put_record("flights", "F2", &json!({"status": "full"}), Precondition::IfMatch(1)).unwrap();
    assert_eq!(store.shared_record("flights", "F2").unwrap().map(|r| r.revision), Some(revision));
    assert!(matches!(store.commit(&commit("c1", "t2")).unwrap(), CommitOutcome::Committed { .. }));
}
