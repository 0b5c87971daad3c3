//! A SQLite store is whole at rest: once the last store of the process on a file is gone
//! (dropped, closed, or dropped by a panic unwinding), the file copied alone, without its
//! `-wal` and `-shm` files, passes SQLite's integrity check and holds every commit. Before
//! group commit's checkpointer was joined at the end, the same copy was unreadable or missing
//! the commits still in the log.

use std::path::{Path, PathBuf};

use warrant_store::{CommitOutcome, Ledger, Registry, SqliteStore};

use crate::build::commit;

const THREADS: usize = 4;
const PER_THREAD: usize = 40;

fn file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("warrant-at-rest-").tempdir().unwrap();
    let path = dir.path().join("store.db");
    (dir, path)
}

/// The file at `path` copied alone into a directory of its own, opened: what SQLite's
/// integrity check says, and how many turns it holds.
pub fn alone(path: &Path) -> (String, i64) {
    let copy = tempfile::Builder::new().prefix("warrant-copy-").tempdir().unwrap();
    let copied = copy.path().join("copy.db");
    std::fs::copy(path, &copied).unwrap();
    let conn = rusqlite::Connection::open(&copied).unwrap();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    let turns: i64 = conn.query_row("SELECT count(*) FROM turns", [], |row| row.get(0)).unwrap();
    (integrity, turns)
}

/// Commits [`PER_THREAD`] turns from each of [`THREADS`] threads, each with its own store on
/// the file, one kept open throughout; `end` then ends the kept store.
fn committed_then(path: &Path, end: impl FnOnce(SqliteStore)) {
    let mut kept = SqliteStore::open(path).unwrap();
    kept.migrate().unwrap();
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            s.spawn(move || {
                let mut store = SqliteStore::open(path).unwrap();
                for i in 0..PER_THREAD {
                    let outcome = store.commit(&commit(&format!("c{thread}"), &format!("t{i}"))).unwrap();
                    assert!(matches!(outcome, CommitOutcome::Committed { .. }), "{outcome:?}");
                }
            });
        }
    });
    end(kept);
}

fn expected() -> (String, i64) {
    ("ok".to_owned(), i64::try_from(THREADS * PER_THREAD).unwrap())
}

#[test]
fn the_file_alone_holds_every_commit_once_the_last_store_is_dropped() {
    let (_dir, path) = file();
    committed_then(&path, drop);
    assert_eq!(alone(&path), expected());
    // The log is gone too: nothing is left beside the file that it would need.
    let log = path.with_extension("db-wal");
    assert!(std::fs::metadata(&log).map_or(true, |m| m.len() == 0), "the log holds pages after the last store");
}

#[test]
fn the_file_alone_holds_every_commit_once_the_last_store_is_closed() {
    let (_dir, path) = file();
    committed_then(&path, |store| store.close().unwrap());
    assert_eq!(alone(&path), expected());
}

#[test]
fn the_file_alone_holds_every_commit_once_a_panic_unwinds_past_the_last_store() {
    let (_dir, path) = file();
    let unwound = std::thread::spawn({
        let path = path.clone();
        move || {
            committed_then(&path, |store| {
                let _held = store;
                panic!("a panic with the store held");
            })
        }
    })
    .join();
    assert!(unwound.is_err(), "the thread did not panic");
    assert_eq!(alone(&path), expected());
}

#[test]
fn a_store_still_open_keeps_the_group_and_the_file_is_whole_once_it_goes() {
    let (_dir, path) = file();
    let mut last = SqliteStore::open(&path).unwrap();
    committed_then(&path, |store| store.close().unwrap());
    // Closing one store while another of the process is open ends nothing of the other's.
    assert!(matches!(last.commit(&commit("late", "t0")).unwrap(), CommitOutcome::Committed { .. }));
    last.close().unwrap();
    assert_eq!(alone(&path), (expected().0, expected().1 + 1));
}

#[test]
fn a_registry_file_alone_holds_every_tenant_once_it_is_dropped_or_closed() {
    let (dir, _) = file();
    let path = dir.path().join("control.sqlite");
    let mut registry = Registry::open_sqlite(&path).unwrap();
    registry.add("acme", "aa").unwrap();
    registry.close().unwrap();
    let mut registry = Registry::open_sqlite(&path).unwrap();
    registry.add("globex", "bb").unwrap();
    drop(registry);
    let copy = dir.path().join("copy.sqlite");
    std::fs::copy(&path, &copy).unwrap();
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    let tenants: i64 = conn.query_row("SELECT count(*) FROM tenants", [], |row| row.get(0)).unwrap();
    assert_eq!((integrity.as_str(), tenants), ("ok", 2));
}
