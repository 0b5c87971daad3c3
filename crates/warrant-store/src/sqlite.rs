//! The embedded store: one SQLite file in write-ahead-log mode, which several processes may
//! open at once. Every write transaction takes the database's write lock when it begins
//! (`BEGIN IMMEDIATE`), so writers are serialized, sequence numbers follow commit order by
//! construction, and a writer never fails to upgrade a read lock halfway through. The commits
//! of every store this process opened on one file share transactions (`group.rs`), so that
//! commits arriving together are made durable by one sync.
//!
//! The file is whole at rest: when the last store of a process on it goes, dropped or
//! [closed](SqliteStore::close), the log is copied into the file and emptied, so that the file
//! copied alone holds every commit (`group.rs`). After a kill, SQLite recovers the log at the
//! next open.

mod group;
mod history;
mod ladder;
mod ledger;
mod maintenance;
mod outbox;
mod prompts;
mod records;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, Transaction, TransactionBehavior};
use serde_json::Value;

use crate::error::StoreError;
use crate::row_cache::RowCache;
use crate::settled::Settled;

pub use maintenance::BackupReport;

/// How long a writer waits for another process's transaction before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Room for every statement this module prepares, so none is prepared twice: those reading and
/// writing rows (under 50), and those that begin and end transactions and savepoints
/// ([`control`]).
const STATEMENT_CACHE: usize = 64;

/// A connection to a SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    /// The committer this store's commits go through; `None` for a store in memory, which no
    /// other store can share, and for one opened ungrouped.
    group: Option<Arc<group::Group>>,
    /// The rows read, with the text they were read from: shared by every store of this process
    /// on the same file.
    rows: RowCache,
}

impl SqliteStore {
    /// Opens (or creates) the store in the file at `path`, in write-ahead-log mode with full
    /// synchronous commits. Run [`Ledger::migrate`](crate::Ledger::migrate) before using a new
    /// file.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = SqliteStore::connect(path)?;
        let group = group::Group::of(path, || SqliteStore::connect(path))?;
        Ok(SqliteStore { conn, rows: group.rows(), group: Some(group) })
    }

    /// Opens the store in the file at `path` as [`SqliteStore::open`] does, if the file exists;
    /// refuses a missing one ([`StoreError::NoSuchFile`]) rather than creating an empty store.
    pub fn open_existing(path: &Path) -> Result<SqliteStore, StoreError> {
        if !path.exists() {
            return Err(StoreError::NoSuchFile { path: path.display().to_string() });
        }
        SqliteStore::open(path)
    }

    /// Opens the store like [`SqliteStore::open`], but its commits share no transaction: each
    /// is one transaction, one sync, of its own, as before group commit. For measuring what
    /// group commit gains, beside stores opened with `open` in the same run.
    pub fn open_ungrouped(path: &Path) -> Result<SqliteStore, StoreError> {
        Ok(SqliteStore { conn: SqliteStore::connect(path)?, group: None, rows: RowCache::default() })
    }

    /// How many transactions the commits of this process on this store's file have shared, and
    /// how many commits those held: the second divided by the first is the mean batch. `None`
    /// for a store in memory, whose commits are one transaction each.
    pub fn commit_batches(&self) -> Result<Option<(u64, u64)>, StoreError> {
        self.group.as_ref().map(|group| group.durable()).transpose()
    }

    /// How many times this process's checkpointer for the store's file has copied the file's
    /// log into it, off the commit path. `None` for a store whose commits share no group.
    pub fn checkpoints(&self) -> Result<Option<u64>, StoreError> {
        self.group.as_ref().map(|group| group.checkpoints()).transpose()
    }

    /// How many times the commits of this process on the store's file have told its
    /// checkpointer to copy the log, counted when told (a copy follows each, off the commit
    /// path, unless one already running takes it). `None` as for [`SqliteStore::checkpoints`].
    pub fn checkpoints_asked(&self) -> Result<Option<u64>, StoreError> {
        self.group.as_ref().map(|group| group.checkpoints_asked()).transpose()
    }

    /// Closes the store, saying what failed. Dropping it does the same and cannot say. When it
    /// is the last store of this process on its file, the file is left whole: its log copied
    /// into it and emptied, so that the file alone holds every commit. Another process that
    /// still has the file open leaves the file whole when its own last store goes.
    pub fn close(self) -> Result<(), StoreError> {
        let SqliteStore { conn, group, rows } = self;
        drop(rows);
        // The store's own connection first: the group's end copies the log whole only once no
        // connection of this process can be reading it.
        let closed = conn.close().map_err(|(_, e)| StoreError::from(e));
        let finished = match group.and_then(Arc::into_inner) {
            Some(group) => group.finish(),
            None => Ok(()),
        };
        closed.and(finished)
    }

    /// A connection to the file at `path`, in write-ahead-log mode.
    fn connect(path: &Path) -> Result<Connection, StoreError> {
        let conn = Connection::open(path)?;
        write_ahead_log(&conn)?;
        SqliteStore::configure(conn)
    }

    /// A private store in memory, gone when dropped. For unit tests only: it is not WAL, and
    /// no other connection can reach it.
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        Ok(SqliteStore {
            conn: SqliteStore::configure(Connection::open_in_memory()?)?,
            group: None,
            rows: RowCache::default(),
        })
    }

    fn configure(conn: Connection) -> Result<Connection, StoreError> {
        // A commit the caller was told about survives a power cut, not only a crash.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(conn)
    }

    fn begin(&mut self) -> Result<Transaction<'_>, StoreError> {
        // A span of reads left open (its caller failed before ending it) ends here: its snapshot
        // is never written from.
        self.end_span()?;
        Ok(self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// Ends a read span (`Ledger::begin_reads`) if one is open on the connection.
    fn end_span(&mut self) -> Result<(), StoreError> {
        if !self.conn.is_autocommit() {
            control(&self.conn, "COMMIT")?;
        }
        Ok(())
    }
}

/// Runs one of the statements that begin and end transactions and savepoints, prepared once on
/// the connection rather than parsed again each time: a turn runs several of them.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
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

/// The steps of a commit, of the system of record's writes, of the ladder's and of delivery's,
/// inside one SQLite write transaction.
struct SqliteTxn<'a>(&'a Connection);

impl<'a> SqliteTxn<'a> {
    /// The steps on `conn`.
    fn on(conn: &'a Connection) -> SqliteTxn<'a> {
        SqliteTxn(conn)
    }
}

/// A JSON column, which this module always writes as JSON text.
fn json(text: &str, what: impl FnOnce() -> String) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt { what: format!("{} is not JSON: {e}", what()) })
}

/// Copies the whole log of `conn`'s file into the file and empties it (`TRUNCATE`), waiting for
/// other connections' readers and writers as a writer waits for the lock. Where another
/// process still holds the log when the wait ends, the copy stops short without an error: the
/// file is that process's to leave whole.
pub(crate) fn checkpoint_whole(conn: &Connection) -> Result<(), StoreError> {
    // (busy, pages in the log, pages copied): busy only where another process holds it.
    let _busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
    Ok(())
}

/// Sets `conn`'s busy timeout and puts its file in write-ahead-log mode, or fails naming the
/// mode it is stuck in.
pub(crate) fn write_ahead_log(conn: &Connection) -> Result<(), StoreError> {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::{Commit, CommitOutcome, RecordWrite};
    use crate::records::Precondition;
    use crate::rows::TurnRow;
    use crate::{Ledger, Records};
    use serde_json::json;

    #[test]
    fn an_in_memory_store_migrates_and_commits() -> Result<(), StoreError> {
        let mut store = SqliteStore::open_in_memory()?;
        store.migrate()?;
        store.migrate()?;
        assert_eq!(store.seed_records("orders", &[("#1".to_owned(), json!({"n": 1}))])?, 1);
        let turn = TurnRow {
            conversation: "c".to_owned(),
            turn: "t".to_owned(),
            request: json!({}).into(),
            response: json!(null).into(),
            replay: json!([]).into(),
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

    #[test]
    fn a_kept_row_is_served_only_for_the_same_text_whatever_its_revision_says() -> Result<(), StoreError> {
        let mut store = SqliteStore::open_in_memory()?;
        store.migrate()?;
        store.seed_records("orders", &[("#1".to_owned(), json!({"n": 1}))])?;
        let first = store.shared_record("orders", "#1")?.map(|r| r.value);
        let again = store.shared_record("orders", "#1")?.map(|r| r.value);
        assert!(matches!((&first, &again), (Some(a), Some(b)) if Arc::ptr_eq(a, b)), "the kept value was not served");
        // Changed behind the store's back, at the same revision: the text differs, so the row is
        // read again.
        store.conn.execute("UPDATE records SET value = '{\"n\":2}' WHERE key = '#1'", [])?;
        let changed = store.shared_record("orders", "#1")?;
        assert_eq!(changed.map(|r| (r.revision, (*r.value).clone())), Some((1, json!({"n": 2}))));
        Ok(())
    }

    #[test]
    fn the_bundled_sqlite_keeps_each_connections_page_cache_and_allocations_to_itself() -> Result<(), StoreError> {
        // Built as `.cargo/config.toml` asks: with SQLITE_ENABLE_MEMORY_MANAGEMENT every
        // connection's page cache shares one mutex, and with allocations counted every
        // allocation takes another, which 16 connections on two cores queued on.
        let store = SqliteStore::open_in_memory()?;
        let options: Vec<String> =
            store.conn.prepare("PRAGMA compile_options")?.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?;
        assert!(!options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"), "{options:?}");
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
        Ok(())
    }

    #[test]
    fn reads_in_a_span_see_one_snapshot_while_another_store_writes() -> Result<(), StoreError> {
        let dir = tempfile::tempdir().map_err(|e| StoreError::Corrupt { what: e.to_string() })?;
        let path = dir.path().join("store.db");
        let mut reader = SqliteStore::open(&path)?;
        reader.migrate()?;
        reader.seed_records("orders", &[("#1".to_owned(), json!({"n": 1}))])?;
        let mut writer = SqliteStore::open(&path)?;
        reader.begin_reads()?;
        assert_eq!(reader.shared_record("orders", "#1")?.map(|r| r.revision), Some(1));
        writer
            .put_record("orders", "#1", &json!({"n": 2}), Precondition::IfMatch(1))
            .map_err(|e| StoreError::Corrupt { what: format!("{e:?}") })?;
        // The span still reads the store as its first read found it.
        assert_eq!(reader.shared_record("orders", "#1")?.map(|r| r.revision), Some(1));
        assert_eq!(reader.record("orders", "#1")?.map(|r| r.value), Some(json!({"n": 1})));
        reader.end_reads()?;
        assert_eq!(reader.shared_record("orders", "#1")?.map(|r| (*r.value).clone()), Some(json!({"n": 2})));
        Ok(())
    }
}
