//! The embedded store: one SQLite file in write-ahead-log mode, which several processes may
//! open at once. Every write transaction takes the database's write lock when it begins
//! (`BEGIN IMMEDIATE`), so writers are serialized, sequence numbers follow commit order by
//! construction, and a writer never fails to upgrade a read lock halfway through. The commits
//! of every store this process opened on one file share transactions (`group.rs`), so that
//! commits arriving together are made durable by one sync.

mod group;
mod history;
mod ladder;
mod ledger;
mod outbox;
mod prompts;
mod records;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, Transaction, TransactionBehavior};
use serde_json::Value;

use crate::error::StoreError;
use crate::txn::Settled;

/// How long a writer waits for another process's transaction before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Room for every statement this module prepares, so none is prepared twice.
const STATEMENT_CACHE: usize = 48;

/// A connection to a SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    /// The committer this store's commits go through; `None` for a store in memory, which no
    /// other store can share, and for one opened ungrouped.
    group: Option<Arc<group::Group>>,
}

impl SqliteStore {
    /// Opens (or creates) the store in the file at `path`, in write-ahead-log mode with full
    /// synchronous commits. Run [`Ledger::migrate`](crate::Ledger::migrate) before using a new
    /// file.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = SqliteStore::connect(path)?;
        let group = group::Group::of(path, || SqliteStore::connect(path))?;
        Ok(SqliteStore { conn, group: Some(group) })
    }

    /// Opens the store like [`SqliteStore::open`], but its commits share no transaction: each
    /// is one transaction, one sync, of its own, as before group commit. For measuring what
    /// group commit gains, beside stores opened with `open` in the same run.
    pub fn open_ungrouped(path: &Path) -> Result<SqliteStore, StoreError> {
        Ok(SqliteStore { conn: SqliteStore::connect(path)?, group: None })
    }

    /// How many transactions the commits of this process on this store's file have shared, and
    /// how many commits those held: the second divided by the first is the mean batch. `None`
    /// for a store in memory, whose commits are one transaction each.
    pub fn commit_batches(&self) -> Result<Option<(u64, u64)>, StoreError> {
        self.group.as_ref().map(|group| group.durable()).transpose()
    }

    /// A connection to the file at `path`, in write-ahead-log mode.
    fn connect(path: &Path) -> Result<Connection, StoreError> {
        let conn = Connection::open(path)?;
        // First, so that switching the journal mode also waits for other processes.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Two connections switching a fresh file to WAL at once can get SQLITE_BUSY without the
        // busy handler being asked (SQLite's deadlock avoidance), so the switch is retried.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mode: String = loop {
            match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                other => break other?,
            }
        };
        if mode != "wal" {
            return Err(StoreError::NoWriteAheadLog { mode });
        }
        SqliteStore::configure(conn)
    }

    /// A private store in memory, gone when dropped. For unit tests only: it is not WAL, and
    /// no other connection can reach it.
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        Ok(SqliteStore { conn: SqliteStore::configure(Connection::open_in_memory()?)?, group: None })
    }

    fn configure(conn: Connection) -> Result<Connection, StoreError> {
        // A commit the caller was told about survives a power cut, not only a crash.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(conn)
    }

    fn begin(&mut self) -> Result<Transaction<'_>, StoreError> {
        Ok(self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
    }
}

/// Ends the transaction as the steps decided.
fn settle<T>(tx: Transaction<'_>, settled: Settled<T>) -> Result<T, StoreError> {
    match settled {
        Settled::Keep(answer) => {
            tx.commit()?;
            Ok(answer)
        }
        Settled::Discard(answer) => {
            tx.rollback()?;
            Ok(answer)
        }
    }
}

/// The steps of a commit inside one SQLite write transaction.
struct SqliteTxn<'a>(&'a Connection);

/// A JSON column, which this module always writes as JSON text.
fn json(text: &str, what: impl FnOnce() -> String) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt { what: format!("{} is not JSON: {e}", what()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ledger;
    use crate::commit::{Commit, CommitOutcome, RecordWrite};
    use crate::rows::StoredTurn;
    use serde_json::json;

    #[test]
    fn an_in_memory_store_migrates_and_commits() -> Result<(), StoreError> {
        let mut store = SqliteStore::open_in_memory()?;
        store.migrate()?;
        store.migrate()?;
        assert_eq!(store.seed_records("orders", &[("#1".to_owned(), json!({"n": 1}))])?, 1);
        let turn = StoredTurn {
            seq: 0,
            conversation: "c".to_owned(),
            turn: "t".to_owned(),
            request: json!({}),
            response: json!(null),
            replay: json!([]),
        };
        let commit = Commit {
            turn,
            writes: vec![RecordWrite {
                table: "orders".to_owned(),
                key: "#1".to_owned(),
                expected_revision: 1,
                value: json!({"n": 2}),
            }],
            effects: vec![],
            events: vec![],
            opened: vec![],
            answered: vec![],
            findings: vec![],
            reads: vec![],
            holds: vec![],
        };
        assert!(matches!(store.commit(&commit)?, CommitOutcome::Committed { .. }));
        assert!(matches!(store.commit(&commit)?, CommitOutcome::Duplicate(_)));
        assert_eq!(store.record("orders", "#1")?.map(|r| r.revision), Some(2));
        Ok(())
    }
}
