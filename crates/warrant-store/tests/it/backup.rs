//! SQLite's live backup (`SqliteStore::backup_to`): taken while threads go on committing, the
//! copy is one snapshot that holds every turn committed before the backup began, passes
//! SQLite's integrity check alone, and opens as a store; a file already at the destination is
//! never replaced; a PostgreSQL store is refused with the way to back it up.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use warrant_store::{AnyStore, CommitOutcome, Ledger, Maintenance, SqliteStore, StoreError};

use crate::at_rest::alone;
use crate::build::commit;
use crate::fixture::{Backend, Fixture};

const THREADS: usize = 4;
/// Turns committed before the backup begins, at the least.
const BEFORE: usize = 1_000;

#[test]
fn a_backup_taken_while_threads_commit_holds_every_turn_committed_before_it_began() {
    let dir = tempfile::Builder::new().prefix("warrant-backup-").tempdir().unwrap();
    let path = dir.path().join("store.db");
    SqliteStore::open(&path).unwrap().migrate().unwrap();
    let to = dir.path().join("copy.db");
    let acknowledged: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let start = Barrier::new(THREADS + 1);
    let (before, report, after) = std::thread::scope(|s| {
        for thread in 0..THREADS {
            let (acknowledged, stop, start, path) = (&acknowledged, &stop, &start, &path);
            s.spawn(move || {
                let mut store = SqliteStore::open(path).unwrap();
                start.wait();
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let (conversation, turn) = (format!("c{thread}"), format!("t{i}"));
                    let outcome = store.commit(&commit(&conversation, &turn)).unwrap();
                    assert!(matches!(outcome, CommitOutcome::Committed { .. }), "{outcome:?}");
                    acknowledged.lock().unwrap().push(format!("{conversation}/{turn}"));
                    i += 1;
                }
            });
        }
        start.wait();
        let deadline = Instant::now() + Duration::from_secs(60);
        while acknowledged.lock().unwrap().len() < BEFORE {
            assert!(Instant::now() < deadline, "the committing threads stalled");
            std::thread::yield_now();
        }
        let source = SqliteStore::open(&path).unwrap();
        // Every turn acknowledged by now was committed before the backup began.
        let before: BTreeSet<String> = acknowledged.lock().unwrap().iter().cloned().collect();
        let report = source.backup_to(&to).unwrap();
        let after = acknowledged.lock().unwrap().len();
        stop.store(true, Ordering::SeqCst);
        (before, report, after)
    });
    let copied = copied_turns(&to);
    let missing: Vec<&String> = before.iter().filter(|t| !copied.contains(*t)).collect();
    assert!(missing.is_empty(), "turns committed before the backup are not in it: {missing:?}");
    let total = acknowledged.lock().unwrap().len();
    let held = i64::try_from(copied.len()).unwrap();
    assert_eq!(report.turns, held);
    assert!(copied.len() <= total, "the copy holds turns never committed");
    eprintln!(
        "backup under {THREADS} committing threads: {} turns committed before it began, {} in the copy, {after} \
         acknowledged when it ended, {total} in all",
        before.len(),
        copied.len()
    );
    // The copy alone, without a log beside it, is whole, and opens as a store.
    assert_eq!(alone(&to), ("ok".to_owned(), held));
    for beside in ["copy.db-wal", "copy.db-shm", "copy.db.partial"] {
        assert!(!dir.path().join(beside).exists(), "`{beside}` was left beside the copy");
    }
    let mut reopened = SqliteStore::open(&to).unwrap();
    reopened.migrate().unwrap();
    assert_eq!(reopened.integrity().unwrap().problems, Vec::<String>::new());
    assert!(matches!(reopened.commit(&commit("after", "t0")).unwrap(), CommitOutcome::Committed { .. }));
}

fn copied_turns(path: &std::path::Path) -> BTreeSet<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut statement = conn.prepare("SELECT conversation || '/' || turn FROM turns").unwrap();
    statement.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_backup_never_replaces_a_file_and_a_failed_one_leaves_nothing() {
    let fx = Fixture::sqlite();
    let Backend::Sqlite { path, .. } = &fx.backend else { unreachable!() };
    let store = SqliteStore::open(path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken.db");
    std::fs::write(&taken, b"an operator's file").unwrap();
    assert!(matches!(store.backup_to(&taken), Err(StoreError::Backup { .. })));
    assert_eq!(std::fs::read(&taken).unwrap(), b"an operator's file");
    let nowhere = dir.path().join("no such folder").join("copy.db");
    assert!(store.backup_to(&nowhere).is_err());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a failed backup left a file");
}

#[test]
fn a_postgresql_store_s_backup_is_refused_naming_pg_dump() {
    let fx = Fixture::postgres();
    let Backend::Postgres { conninfo, schema } = &fx.backend else { unreachable!() };
    let store = AnyStore::Postgres(Box::new(warrant_store::PgStore::connect(conninfo, schema).unwrap()));
    let refused = store.backup_to(std::path::Path::new("/nonexistent/copy.db")).unwrap_err();
    assert!(matches!(&refused, StoreError::BackupByPgDump { schema: s } if s == schema), "{refused}");
    assert!(refused.to_string().contains(&format!("pg_dump --schema={schema}")), "{refused}");
}
