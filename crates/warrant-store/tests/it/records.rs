//! Writes from the system of record: puts under each precondition, deletes, imports all or
//! nothing, a data file compared with the store, and how each meets the commit path's revision
//! check.

use serde_json::{Value, json};
use warrant_store::{
    CommitOutcome, Imported, KeyRevision, Precondition, Record, RecordConflict, RecordDifference, RecordError, Store,
    StoreError,
};

use crate::build::{commit, rows, write};
use crate::fixture::{Backend, Fixture, admin};

fn seed(store: &mut dyn Store) {
    let seeded = store
        .seed_records(
            "orders",
            &rows(&[("#W1", json!({"status": "pending"})), ("#W2", json!({"status": "delivered"}))]),
        )
        .unwrap();
    assert_eq!(seeded, 2);
}

fn revision(store: &mut dyn Store, key: &str) -> Option<i64> {
    store.record("orders", key).unwrap().map(|r| r.revision)
}

fn conflict(result: Result<i64, RecordError>) -> RecordConflict {
    match result {
        Err(RecordError::Conflict(conflict)) => conflict,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn store_error<T: std::fmt::Debug>(result: Result<T, RecordError>) -> StoreError {
    match result {
        Err(RecordError::Store(error)) => error,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub fn a_put_without_a_precondition_creates_then_replaces(fx: &Fixture) {
    let mut store = fx.open();
    let first = json!({"status": "pending", "items": [1, 2]});
    assert_eq!(store.put_record("orders", "#W9", &first, Precondition::Any).unwrap(), 1);
    assert_eq!(
        store.record("orders", "#W9").unwrap(),
        Some(Record { table: "orders".into(), key: "#W9".into(), revision: 1, value: first })
    );
    let second = json!({"status": "shipped"});
    assert_eq!(store.put_record("orders", "#W9", &second, Precondition::Any).unwrap(), 2);
    let stored = store.record("orders", "#W9").unwrap().unwrap();
    assert_eq!((stored.revision, stored.value), (2, second));
    // Another connection sees it, and another table holds its own rows.
    assert_eq!(revision(&mut *fx.open(), "#W9"), Some(2));
    assert_eq!(store.record("users", "#W9").unwrap(), None);
}

pub fn if_none_match_only_creates(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    assert_eq!(store.put_record("orders", "#W3", &json!({"n": 1}), Precondition::IfNoneMatch).unwrap(), 1);
    assert_eq!(
        conflict(store.put_record("orders", "#W1", &json!({"n": 2}), Precondition::IfNoneMatch)),
        RecordConflict::Present { table: "orders".into(), key: "#W1".into(), revision: 1 }
    );
    assert_eq!(store.record("orders", "#W1").unwrap().unwrap().value, json!({"status": "pending"}));
}

pub fn if_match_only_updates_that_revision(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    assert_eq!(store.put_record("orders", "#W1", &json!({"status": "shipped"}), Precondition::IfMatch(1)).unwrap(), 2);
    assert_eq!(
        conflict(store.put_record("orders", "#W1", &json!({"status": "lost"}), Precondition::IfMatch(1))),
        RecordConflict::Revision { table: "orders".into(), key: "#W1".into(), expected: 1, current: 2 }
    );
    assert_eq!(
        conflict(store.put_record("orders", "#W7", &json!({}), Precondition::IfMatch(1))),
        RecordConflict::Absent { table: "orders".into(), key: "#W7".into(), expected: 1 }
    );
    let stored = store.record("orders", "#W1").unwrap().unwrap();
    assert_eq!((stored.revision, stored.value), (2, json!({"status": "shipped"})));
    assert_eq!(store.record("orders", "#W7").unwrap(), None);
}

pub fn a_put_makes_a_commit_decided_against_the_old_row_stale(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    let read = store.record("orders", "#W1").unwrap().unwrap();
    // The system of record ships the order between the decision and its commit.
    let shipped = store.put_record("orders", "#W1", &json!({"status": "shipped"}), Precondition::Any).unwrap();
    assert_eq!(shipped, read.revision + 1);
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W1", read.revision, json!({"status": "cancelled"})));
    assert_eq!(
        store.commit(&c).unwrap(),
        CommitOutcome::StaleRevision {
            table: "orders".into(),
            key: "#W1".into(),
            expected: read.revision,
            actual: Some(shipped)
        }
    );
    assert_eq!(store.turn("c1", "t1").unwrap(), None);
    assert_eq!(store.record("orders", "#W1").unwrap().unwrap().value, json!({"status": "shipped"}));
    // Decided again against the new row, it commits, and a put then needs the commit's revision.
    let mut again = commit("c1", "t2");
    again.writes.push(write("orders", "#W1", shipped, json!({"status": "returned"})));
    assert!(matches!(store.commit(&again).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(
        conflict(store.put_record("orders", "#W1", &json!({}), Precondition::IfMatch(shipped))),
        RecordConflict::Revision { table: "orders".into(), key: "#W1".into(), expected: shipped, current: shipped + 1 }
    );
}

pub fn a_delete_needs_the_revision_and_a_deleted_row_is_gone(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    let refused = |result: Result<(), RecordError>| match result {
        Err(RecordError::Conflict(conflict)) => conflict,
        other => panic!("expected a conflict, got {other:?}"),
    };
    assert_eq!(
        refused(store.delete_record("orders", "#W1", 2)),
        RecordConflict::Revision { table: "orders".into(), key: "#W1".into(), expected: 2, current: 1 }
    );
    assert_eq!(
        refused(store.delete_record("orders", "#W8", 1)),
        RecordConflict::Absent { table: "orders".into(), key: "#W8".into(), expected: 1 }
    );
    assert_eq!(revision(&mut *store, "#W1"), Some(1));
    store.delete_record("orders", "#W1", 1).unwrap();
    assert_eq!(store.record("orders", "#W1").unwrap(), None);
    assert_eq!(
        refused(store.delete_record("orders", "#W1", 1)),
        RecordConflict::Absent { table: "orders".into(), key: "#W1".into(), expected: 1 }
    );
    // A commit decided against the deleted row is stale, with no row to name.
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W1", 1, json!({"status": "cancelled"})));
    assert_eq!(
        store.commit(&c).unwrap(),
        CommitOutcome::StaleRevision { table: "orders".into(), key: "#W1".into(), expected: 1, actual: None }
    );
    // Seeding from the file does not bring it back, nor does a put that expects it.
    seed_again(&mut *store);
    assert_eq!(store.record("orders", "#W1").unwrap(), None);
    assert_eq!(
        conflict(store.put_record("orders", "#W1", &json!({}), Precondition::IfMatch(1))),
        RecordConflict::Absent { table: "orders".into(), key: "#W1".into(), expected: 1 }
    );
    let keys: Vec<String> = store.table_records("orders").unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, ["#W2"]);
    // Created again, it comes back past every revision it had, so the old commit stays stale.
    let created = store.put_record("orders", "#W1", &json!({"status": "new"}), Precondition::IfNoneMatch).unwrap();
    assert!(created > 1, "a row created again came back at revision {created}");
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::StaleRevision { actual: Some(r), .. } if r == created));
}

pub fn a_seed_mark_is_kept_per_table_and_replaced(fx: &Fixture) {
    let mut store = fx.open();
    assert_eq!(store.seeded_from("orders").unwrap(), None);
    seed(&mut *store);
    store.mark_seeded("orders", "seed_1").unwrap();
    store.mark_seeded("users", "seed_2").unwrap();
    store.mark_seeded("orders", "seed_3").unwrap();
    assert_eq!(store.seeded_from("orders").unwrap().as_deref(), Some("seed_3"));
    assert_eq!(store.seeded_from("users").unwrap().as_deref(), Some("seed_2"));
    assert_eq!(store.seeded_from("no\0such").unwrap(), None);
    assert!(store.mark_seeded("orders", "nul\0").is_err());
    assert_eq!(store.seeded_from("orders").unwrap().as_deref(), Some("seed_3"), "a refused mark changes nothing");
    // A mark is no row: the table's rows are as seeded.
    assert_eq!(store.table_records("orders").unwrap().len(), 2);
}

fn seed_again(store: &mut dyn Store) {
    let rows = rows(&[("#W1", json!({"status": "pending"})), ("#W2", json!({"status": "delivered"}))]);
    assert_eq!(store.seed_records("orders", &rows).unwrap(), 0);
}

pub fn an_import_creates_or_replaces_every_row_and_answers_each_revision(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    let given = rows(&[
        ("#W3", json!({"status": "pending"})),
        ("#W1", json!({"status": "shipped"})),
        ("#W0", json!({"status": "pending", "total": 12.5})),
    ]);
    assert_eq!(
        store.import_records("orders", &given).unwrap(),
        Imported {
            count: 3,
            revisions: vec![
                KeyRevision { key: "#W3".into(), revision: 1 },
                KeyRevision { key: "#W1".into(), revision: 2 },
                KeyRevision { key: "#W0".into(), revision: 1 },
            ],
        }
    );
    let stored = store.table_records("orders").unwrap();
    let read: Vec<(&str, i64, &Value)> = stored.iter().map(|r| (r.key.as_str(), r.revision, &r.value)).collect();
    assert_eq!(
        read,
        [
            ("#W0", 1, &json!({"status": "pending", "total": 12.5})),
            ("#W1", 2, &json!({"status": "shipped"})),
            ("#W2", 1, &json!({"status": "delivered"})),
            ("#W3", 1, &json!({"status": "pending"})),
        ]
    );
    assert_eq!(store.import_records("orders", &[]).unwrap(), Imported { count: 0, revisions: vec![] });
}

/// Whether an error is the refusal a test expects.
type Refusal = fn(&StoreError) -> bool;

pub fn a_refused_import_writes_no_row(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    let good = ("#W1", json!({"status": "shipped"}));
    let refusals: Vec<(Vec<(String, Value)>, Refusal)> = vec![
        (
            rows(&[good.clone(), ("#W5", json!({})), ("#W6", json!([1]))]),
            |e| matches!(e, StoreError::NotAnObject { key, row: Some(2), .. } if key == "#W6"),
        ),
        (rows(&[good.clone(), ("", json!({}))]), |e| matches!(e, StoreError::EmptyKey { row: Some(1), .. })),
        (
            rows(&[good.clone(), ("#W5", json!({})), ("#W5", json!({}))]),
            |e| matches!(e, StoreError::DuplicateKey { key, .. } if key == "#W5"),
        ),
        (rows(&[good.clone(), ("#W5", json!({"a": "\u{0}"}))]), |e| matches!(e, StoreError::NulCharacter { .. })),
    ];
    for (given, expected) in refusals {
        let error = store.import_records("orders", &given).unwrap_err();
        assert!(expected(&error), "unexpected refusal: {error}");
        assert_eq!(revision(&mut *store, "#W1"), Some(1), "{error}: a row was written");
        assert_eq!(store.record("orders", "#W5").unwrap(), None, "{error}: a row was written");
    }
}

/// Stores a row at the last revision there is, behind the store's back: no write can follow it.
fn store_at_the_last_revision(fx: &Fixture, key: &str) {
    match &fx.backend {
        Backend::Sqlite { path, .. } => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.execute(
                "INSERT INTO records (tbl, key, revision, value) VALUES ('orders', ?1, ?2, '{}')",
                rusqlite::params![key, i64::MAX],
            )
            .unwrap();
        }
        Backend::Postgres { conninfo, schema } => {
            let sql =
                format!("INSERT INTO {schema}.records (tbl, key, revision, value) VALUES ('orders', $1, $2, '{{}}')");
            admin(conninfo).execute(&sql, &[&key, &i64::MAX]).unwrap();
        }
    }
}

pub fn an_import_failing_at_one_row_rolls_back_the_rows_before_it(fx: &Fixture) {
    let mut store = fx.open();
    seed(&mut *store);
    store_at_the_last_revision(fx, "#W9");
    // Written in key order: #W0 and #W1 go in before #W9 fails.
    let given = rows(&[("#W9", json!({})), ("#W1", json!({"status": "shipped"})), ("#W0", json!({}))]);
    let error = store.import_records("orders", &given).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert_eq!(store.record("orders", "#W0").unwrap(), None);
    assert_eq!(store.record("orders", "#W1").unwrap().unwrap().value, json!({"status": "pending"}));
    assert_eq!(revision(&mut *store, "#W9"), Some(i64::MAX));
    // A commit expecting the last revision is stale, not an overflow.
    let mut c = commit("c1", "t1");
    c.writes.push(write("orders", "#W9", i64::MAX, json!({})));
    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::StaleRevision { .. }));
}

pub fn a_row_that_is_no_object_or_has_no_key_is_refused(fx: &Fixture) {
    let mut store = fx.open();
    for value in [json!([1]), json!("pending"), json!(null), json!(3)] {
        let error = store_error(store.put_record("orders", "#W1", &value, Precondition::Any));
        assert!(
            matches!(&error, StoreError::NotAnObject { table, key, row: None } if table == "orders" && key == "#W1"),
            "{error}"
        );
        assert!(error.to_string().contains("#W1"), "{error}");
    }
    let error = store_error(store.put_record("orders", "", &json!({}), Precondition::IfNoneMatch));
    assert!(matches!(&error, StoreError::EmptyKey { table, row: None } if table == "orders"), "{error}");
    let error = store_error(store.put_record("orders", "#W\u{0}", &json!({}), Precondition::Any));
    assert!(matches!(error, StoreError::NulCharacter { .. }), "{error}");
    let error = store_error(store.delete_record("orders", "#W\u{0}", 1));
    assert!(matches!(error, StoreError::NulCharacter { .. }), "{error}");
    assert_eq!(store.table_records("orders").unwrap(), []);
}

pub fn a_file_compared_with_the_store_names_the_rows_that_differ(fx: &Fixture) {
    let mut store = fx.open();
    store
        .seed_records(
            "orders",
            &rows(&[("#W1", json!({"status": "pending", "total": 10})), ("#W2", json!({"status": "delivered"}))]),
        )
        .unwrap();
    store.put_record("orders", "#W2", &json!({"status": "returned"}), Precondition::IfMatch(1)).unwrap();
    store.put_record("orders", "#W4", &json!({"status": "api"}), Precondition::Any).unwrap();
    // The same object with its keys in another order is no difference.
    let file = rows(&[
        ("#W1", json!({"total": 10, "status": "pending"})),
        ("#W2", json!({"status": "delivered"})),
        ("#W3", json!({"status": "pending"})),
    ]);
    assert_eq!(
        store.differing_records("orders", &file).unwrap(),
        [
            RecordDifference {
                key: "#W2".into(),
                stored: Some(Record {
                    table: "orders".into(),
                    key: "#W2".into(),
                    revision: 2,
                    value: json!({"status": "returned"})
                }),
                file: json!({"status": "delivered"}),
            },
            RecordDifference { key: "#W3".into(), stored: None, file: json!({"status": "pending"}) },
        ]
    );
    // Comparing wrote nothing; seeding adds the missing row only, and then it is no difference.
    assert_eq!(revision(&mut *store, "#W2"), Some(2));
    assert_eq!(store.record("orders", "#W3").unwrap(), None);
    assert_eq!(store.seed_records("orders", &file).unwrap(), 1);
    let keys: Vec<String> = store.differing_records("orders", &file).unwrap().into_iter().map(|d| d.key).collect();
    assert_eq!(keys, ["#W2"]);
    assert_eq!(store.differing_records("users", &file).unwrap().len(), 3);
}

pub fn two_creates_of_one_row_one_creates_one_finds_it(fx: &Fixture) {
    for round in 0..4 {
        let key = format!("#R{round}");
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Result<i64, RecordError>> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..2)
                .map(|n| {
                    let (barrier, key) = (&barrier, &key);
                    s.spawn(move || {
                        let mut store = fx.open();
                        barrier.wait();
                        store.put_record("orders", key, &json!({"by": n}), Precondition::IfNoneMatch)
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let created = results.iter().filter(|r| matches!(r, Ok(1))).count();
        let found = results
            .iter()
            .filter(|r| matches!(r, Err(RecordError::Conflict(RecordConflict::Present { revision: 1, .. }))))
            .count();
        assert_eq!((created, found), (1, 1), "{results:?}");
    }
}

pub fn two_unconditional_puts_of_a_new_row_both_write(fx: &Fixture) {
    for round in 0..4 {
        let key = format!("#R{round}");
        let barrier = std::sync::Barrier::new(2);
        let mut revisions: Vec<i64> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..2)
                .map(|n| {
                    let (barrier, key) = (&barrier, &key);
                    s.spawn(move || {
                        let mut store = fx.open();
                        barrier.wait();
                        store.put_record("orders", key, &json!({"by": n}), Precondition::Any).unwrap()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        revisions.sort_unstable();
        assert_eq!(revisions, [1, 2]);
        assert_eq!(revision(&mut *fx.open(), &key), Some(2));
    }
}

pub fn a_put_and_a_commit_of_one_revision_one_wins(fx: &Fixture) {
    for round in 0..6 {
        let key = format!("#R{round}");
        fx.open().seed_records("orders", &rows(&[(key.as_str(), json!({"status": "pending"}))])).unwrap();
        let barrier = std::sync::Barrier::new(2);
        let (put, committed) = std::thread::scope(|s| {
            let (barrier, key) = (&barrier, &key);
            let put = s.spawn(move || {
                let mut store = fx.open();
                barrier.wait();
                store.put_record("orders", key, &json!({"status": "shipped"}), Precondition::IfMatch(1))
            });
            let committed = s.spawn(move || {
                let mut store = fx.open();
                let mut c = commit("c1", key);
                c.writes.push(write("orders", key, 1, json!({"status": "cancelled"})));
                barrier.wait();
                store.commit(&c).unwrap()
            });
            (put.join().unwrap(), committed.join().unwrap())
        });
        let stored = fx.open().record("orders", &key).unwrap().unwrap();
        assert_eq!(stored.revision, 2, "{put:?} {committed:?}");
        match (&put, &committed) {
            (Ok(2), CommitOutcome::StaleRevision { actual: Some(2), .. }) => {
                assert_eq!(stored.value, json!({"status": "shipped"}));
            }
            (
                Err(RecordError::Conflict(RecordConflict::Revision { current: 2, .. })),
                CommitOutcome::Committed { .. },
            ) => {
                assert_eq!(stored.value, json!({"status": "cancelled"}));
            }
            _ => panic!("not one winner: {put:?} {committed:?}"),
        }
    }
}
