//! Group commit: the commits of every store this process opened on one file share write
//! transactions, so that commits arriving together are made durable by one `COMMIT` (one sync
//! of the write-ahead log) instead of one each.
//!
//! A file's [`Group`] keeps one connection of its own and a queue. A commit (its turn's JSON
//! columns already text, `TurnRow`) joins the queue; if no commit's thread is leading, its own
//! thread leads: it takes the connection and runs the queued commits, its own among them, in
//! one transaction (`BEGIN IMMEDIATE`), each inside a savepoint of its own (`txn.rs`), so that
//! each commit's checks see every commit before it in the transaction, and a commit refused or
//! failed rolls back to its savepoint alone, never touching the others. The group's lock is
//! not held while the statements run, so commits that arrive meanwhile join the queue, and the
//! leader runs them in the same transaction. When none is left waiting (or the batch is full),
//! the leader ends the transaction with `COMMIT`, again without the lock, and every commit of
//! the batch is answered only then: a commit is acknowledged once it is durable, and a batch
//! whose `COMMIT` fails fails every commit in it, none of which is then written. Once its own
//! commit is answered, the leader hands the lead to a commit still queued. The other commits'
//! threads sleep once, until their answer is there, rather than waking to take the connection
//! and again to be answered; each is woken alone (parked, then unparked by the leader that
//! answers it or leaves it the lead), never by the end of a batch it is not in. Sequence numbers are taken in the order the commits run, which
//! is their commit order. Other processes on the same file are serialized by SQLite's write
//! lock as before.
//!
//! The group's connection leaves copying the log into the file (a checkpoint, with a sync of
//! the file) to a thread of the group, [`checkpointer`], told every [`CHECKPOINT_COMMITS`]
//! durable commits: done after a `COMMIT` on the group's connection, as SQLite does by default,
//! it held up every commit waiting meanwhile, which made the slowest commits (p99) several
//! times slower than the median.
//!
//! When the last store of the process on the file goes (dropped, also by a panic unwinding, or
//! closed), the group ends the file whole ([`Group::finish`]): the checkpointer is stopped and
//! joined, so that its connection is closed, and the group's connection copies the whole log
//! into the file and empties it (`TRUNCATE`) before it closes. The file alone then holds every
//! commit, as a copy of it made without its `-wal` and `-shm` files does. A checkpointer left
//! running with its connection open kept SQLite from doing so itself at the last close, and the
//! file alone was missing what the log held, or unreadable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::{JoinHandle, Thread};

use rusqlite::Connection;

use super::{SqliteTxn, control, ledger};
use crate::commit::{Commit, CommitOutcome};
use crate::error::StoreError;
use crate::row_cache::RowCache;
use crate::settled::Settled;
use crate::txn;

/// The most commits one transaction holds: a steady stream of commits still gets durable.
const MAX_BATCH: usize = 256;

/// How many durable commits make the checkpointer copy the log into the file again. The sync
/// of the file that ends a copy is what a commit's own sync of the log may queue behind, and it
/// is as long as the copy. Against 32, six alternated pairs of the turn bench (every client
/// count): the p99 at full speed lower in every pair at 2, 4, 8 and 16 clients (4 clients:
/// 1.8-2.6 ms against 2.8-3.7; 16 clients: 3.7-4.6 ms against 4.6-5.2), and at half load (16
/// clients paced) 4.1 ms against 5.3 (means, lower in four pairs); rates up to 4 % lower (1
/// client 3,644 against 3,774 turns/s; 16 clients 7,597 against 7,696; means). Every 4 commits
/// lowered the half-load p99 further (2.9 ms against 5.3, eleven pairs) but cost a fifth to a
/// quarter of the rate from 1 to 8 clients: each copy costs a sync of the file, however short.
const CHECKPOINT_COMMITS: u64 = 16;

/// How many pages the log may hold before the group's own connection copies it into the file,
/// after a `COMMIT`. Under a stream of commits with no pause, the checkpointer never copies the
/// log whole, and the log begins again only after a copy made here; the checkpointer has
/// copied most of it by then. Measured against 8,000 pages (the log grew to 33 MB): a higher
/// rate at 16 clients and a lower p99 at half load.
const BACKSTOP_PAGES: i64 = 2_000;

/// How many times in a row the checkpointer copies the log while commits keep adding to it,
/// before it waits to be told again.
const CHECKPOINT_ROUNDS: usize = 4;

/// The groups of the files this process has open, by canonical path; a group goes when the
/// last store on its file does.
static GROUPS: Mutex<BTreeMap<PathBuf, Weak<Group>>> = Mutex::new(BTreeMap::new());

/// The committer of one file's commits, shared by every store of this process on that file.
#[derive(Debug)]
pub(crate) struct Group {
    state: Mutex<State>,
    /// The checkpointer's signal: it copies the log into the file off the commit path.
    checkpoints: Arc<Signal>,
    /// The checkpointer's thread, joined when the group ends; `None` once it has been.
    checkpointer: Mutex<Option<JoinHandle<()>>>,
    /// The file, for a connection of the group's end when a leader's panic took the group's.
    path: PathBuf,
    /// The rows the file's stores read, shared by them all.
    rows: RowCache,
}

impl Drop for Group {
    fn drop(&mut self) {
        // A drop cannot say what failed; [`Group::finish`] called first (a store's `close`)
        // does, and leaves nothing for this one to do.
        let _ = self.finish();
    }
}

/// What the checkpointer is told, and what it has done.
#[derive(Debug, Default)]
struct Signal {
    state: Mutex<Told>,
    told: Condvar,
}

#[derive(Debug, Default)]
struct Told {
    /// Commits have been made durable since the checkpointer last copied the log.
    due: bool,
    /// The group is gone: the checkpointer ends.
    stop: bool,
    /// Checkpoints the checkpointer has run.
    runs: u64,
    /// Times the commit path has told it to, counted as it tells, so that a reader knows
    /// without waiting that it was not told.
    asked: u64,
}

impl Signal {
    fn tell(&self, what: impl FnOnce(&mut Told)) {
        if let Ok(mut told) = self.state.lock() {
            what(&mut told);
            self.told.notify_one();
        }
    }
}

/// Copies the log into the file whenever told to, on a connection of its own, until the group
/// is gone. Each copy is SQLite's passive checkpoint: it waits for no reader or writer, so
/// commits go on meanwhile, and no commit waits for the copy or its sync of the file. A copy
/// that finds the log grown while it ran copies again (a few rounds), so that the log is
/// copied whole in a pause between commits, and the next commit begins it again.
fn checkpointer(conn: Connection, signal: Arc<Signal>) {
    loop {
        {
            let Ok(mut told) = signal.state.lock() else { return };
            while !told.due && !told.stop {
                let Ok(next) = signal.told.wait(told) else { return };
                told = next;
            }
            if told.stop {
                return;
            }
            told.due = false;
            told.runs += 1;
        }
        for _ in 0..CHECKPOINT_ROUNDS {
            // (busy, pages in the log, pages copied); a failure is left to the next round and
            // to the backstop: nothing depends on a copy being made.
            let copied = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
            });
            match copied {
                Ok((log, done)) if done < log => {}
                _ => break,
            }
        }
    }
}

#[derive(Debug)]
struct State {
    /// The group's connection; `None` while a leader runs commits on it.
    conn: Option<Connection>,
    /// Whether a commit's thread is running the queued commits (the leader).
    leading: bool,
    /// Commits waiting for the leader, by ticket, in the order they came.
    queue: Vec<(u64, Commit)>,
    /// The ticket the next commit takes.
    next: u64,
    /// The thread of every commit not yet answered, by ticket: woken alone when its answer is
    /// there or when it is to lead, so that a batch's end wakes only the threads it concerns.
    waiting: BTreeMap<u64, Thread>,
    /// The answers of commits whose batch has ended, by ticket, until their threads take them.
    answers: BTreeMap<u64, Result<CommitOutcome, StoreError>>,
    /// Batches made durable, and the commits they held.
    durable: (u64, u64),
    /// Commits made durable since the checkpointer was last told.
    since_checkpoint: u64,
}

/// Dropped only when a leader leaves the lead by a panic or an error of the group's lock: the
/// lead is let go, without the connection, and every commit waiting is woken, to fail rather
/// than wait for ever.
struct Unwinding<'g>(&'g Group);

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.leading = false;
        for thread in state.waiting.values() {
            thread.unpark();
        }
    }
}

/// A commit's result inside its batch, before the batch has ended.
type Applied = Result<CommitOutcome, StoreError>;

impl Group {
    /// The group of the file at `path`, made with `connect` if this process has none yet.
    pub(crate) fn of(
        path: &Path,
        connect: impl Fn() -> Result<Connection, StoreError>,
    ) -> Result<Arc<Group>, StoreError> {
        let path = std::fs::canonicalize(path)
            .map_err(|e| StoreError::Corrupt { what: format!("cannot resolve `{}`: {e}", path.display()) })?;
        let mut groups = GROUPS.lock().map_err(|_| poisoned())?;
        groups.retain(|_, group| group.strong_count() > 0);
        if let Some(group) = groups.get(&path).and_then(Weak::upgrade) {
            return Ok(group);
        }
        let conn = connect()?;
        // The checkpointer copies the log; this connection only when it falls far behind.
        conn.pragma_update(None, "wal_autocheckpoint", BACKSTOP_PAGES)?;
        // A batch's savepoints keep the pages they change in a journal of their own; past 64 KiB
        // SQLite moves it to a temporary file, written page by page and deleted at the end of
        // the batch. Kept in memory instead: a batch's journal is bounded by its commits.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        let checkpoints = Arc::new(Signal::default());
        let copier = connect()?;
        let told = Arc::clone(&checkpoints);
        let thread = std::thread::Builder::new()
            .name("warrant-checkpoint".into())
            .spawn(move || checkpointer(copier, told))
            .map_err(|e| StoreError::Corrupt { what: format!("cannot start the checkpointer: {e}") })?;
        let state = State {
            conn: Some(conn),
            leading: false,
            queue: Vec::new(),
            next: 1,
            waiting: BTreeMap::new(),
            answers: BTreeMap::new(),
            durable: (0, 0),
            since_checkpoint: 0,
        };
        let group = Arc::new(Group {
            state: Mutex::new(state),
            checkpoints,
            checkpointer: Mutex::new(Some(thread)),
            path: path.clone(),
            rows: RowCache::default(),
        });
        groups.insert(path, Arc::downgrade(&group));
        Ok(group)
    }

    /// Ends the group with its file whole: the checkpointer stopped and joined (its connection
    /// closed with it), then the whole log copied into the file and emptied on the group's
    /// connection, which is closed. Called once no store of the process is left on the file
    /// (by the last one's `close`, else by the group's drop); a second call finds nothing to do.
    ///
    /// Another process with the file open may still be reading the log, or writing to it: the
    /// copy then waits for it as long as a writer waits for a lock, and where it still cannot
    /// empty the log it is not an error of this process. That process's own end makes the file
    /// whole.
    pub(crate) fn finish(&self) -> Result<(), StoreError> {
        self.checkpoints.tell(|s| s.stop = true);
        let thread = self.checkpointer.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(thread) = thread else { return Ok(()) };
        // A checkpointer that panicked has already let its connection go.
        let _ = thread.join();
        let conn = self.state.lock().unwrap_or_else(PoisonError::into_inner).conn.take();
        let conn = match conn {
            Some(conn) => conn,
            // A leader's panic took the group's connection with it (rolled back as it closed).
            None => {
                let conn = Connection::open(&self.path)?;
                super::write_ahead_log(&conn)?;
                conn
            }
        };
        let emptied = super::checkpoint_whole(&conn);
        let closed = conn.close().map_err(|(_, e)| StoreError::from(e));
        emptied.and(closed)
    }

    /// The rows cache of the file's stores.
    pub(crate) fn rows(&self) -> RowCache {
        self.rows.clone()
    }

    /// How many batches this group has made durable, and how many commits they held.
    pub(crate) fn durable(&self) -> Result<(u64, u64), StoreError> {
        Ok(self.lock()?.durable)
    }

    /// How many times the checkpointer has copied the log into the file.
    pub(crate) fn checkpoints(&self) -> Result<u64, StoreError> {
        Ok(self.checkpoints.state.lock().map_err(|_| poisoned())?.runs)
    }

    /// How many times the commit path has told the checkpointer to copy the log.
    pub(crate) fn checkpoints_asked(&self) -> Result<u64, StoreError> {
        Ok(self.checkpoints.state.lock().map_err(|_| poisoned())?.asked)
    }

    /// Commits `commit` in the group's next batch, and answers once that batch has ended.
    pub(crate) fn commit(&self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        // Copied before the lock is taken: a commit's copy (its turn's text, some kilobytes) is
        // no part of what the other commits wait for.
        let queued = commit.clone();
        let mut state = self.lock()?;
        let ticket = state.next;
        state.next += 1;
        state.queue.push((ticket, queued));
        state.waiting.insert(ticket, std::thread::current());
        loop {
            if let Some(answer) = state.answers.remove(&ticket) {
                state.waiting.remove(&ticket);
                return answer;
            }
            state = if state.leading {
                // Woken when answered or when the lead is left to this commit; a wake-up for
                // neither (a spurious one) only goes round again.
                drop(state);
                std::thread::park();
                self.lock()?
            } else {
                match self.lead(state, ticket) {
                    Ok(state) => state,
                    Err(e) => {
                        self.lock()?.waiting.remove(&ticket);
                        return Err(e);
                    }
                }
            };
        }
    }

    /// Runs the queued commits, a batch at a time, until the batch holding `ticket` has ended;
    /// then leaves the lead to a commit still waiting.
    fn lead<'g>(&'g self, mut state: MutexGuard<'g, State>, ticket: u64) -> Result<MutexGuard<'g, State>, StoreError> {
        // A leader that panicked took the connection with it: every commit fails from then on.
        let Some(conn) = state.conn.take() else { return Err(poisoned()) };
        state.leading = true;
        let unwinding = Unwinding(self);
        while !state.answers.contains_key(&ticket) {
            state = self.batch(&conn, state)?;
        }
        std::mem::forget(unwinding);
        state.conn = Some(conn);
        state.leading = false;
        // The lead goes to the commit queued first; the others wait for its batch.
        if let Some(thread) = state.queue.first().and_then(|(next, _)| state.waiting.get(next)) {
            thread.unpark();
        }
        Ok(state)
    }

    /// One batch: the queued commits, and those that come while they run, in one transaction,
    /// ended with `COMMIT` once none waits or the batch is full; every commit of it answered.
    fn batch<'g>(
        &'g self,
        conn: &Connection,
        mut state: MutexGuard<'g, State>,
    ) -> Result<MutexGuard<'g, State>, StoreError> {
        let mut applied: Vec<(u64, Applied)> = Vec::new();
        let mut broken: Option<(u64, StoreError)> = None;
        loop {
            let take = state.queue.len().min(MAX_BATCH - applied.len());
            if take == 0 {
                break;
            }
            let taken: Vec<(u64, Commit)> = state.queue.drain(..take).collect();
            drop(state);
            let mut rest = taken.into_iter();
            for (t, commit) in rest.by_ref() {
                match apply(conn, applied.is_empty(), &commit) {
                    Ok(result) => applied.push((t, result)),
                    Err(e) => {
                        broken = Some((t, e));
                        break;
                    }
                }
            }
            state = self.lock()?;
            if broken.is_some() {
                // Not run: back to the head of the queue, for the next batch.
                state.queue.splice(0..0, rest);
                break;
            }
        }
        if let Some((t, e)) = broken {
            // Nothing of the batch stays: every commit in it is told so.
            let why = e.to_string();
            for (other, _) in applied {
                state.answer(other, Err(StoreError::BatchFailed { why: why.clone() }));
            }
            state.answer(t, Err(e));
            return Ok(state);
        }
        if applied.is_empty() {
            return Ok(state);
        }
        drop(state);
        let committed = control(conn, "COMMIT");
        if committed.is_err() {
            // Still open after a failed COMMIT (a busy lock, a full disk): nothing is kept.
            let _ = control(conn, "ROLLBACK");
        }
        let mut state = self.lock()?;
        match committed {
            Ok(()) => {
                let commits = u64::try_from(applied.len()).unwrap_or(u64::MAX);
                state.durable.0 += 1;
                state.durable.1 += commits;
                state.since_checkpoint += commits;
                if state.since_checkpoint >= CHECKPOINT_COMMITS {
                    state.since_checkpoint = 0;
                    self.checkpoints.tell(|s| {
                        s.due = true;
                        s.asked += 1;
                    });
                }
                for (t, result) in applied {
                    state.answer(t, result);
                }
            }
            Err(e) => {
                let why = e.to_string();
                for (t, _) in applied {
                    state.answer(t, Err(StoreError::BatchFailed { why: why.clone() }));
                }
            }
        }
        Ok(state)
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.state.lock().map_err(|_| poisoned())
    }
}

impl State {
    /// Leaves the answer of the commit `ticket` for its thread, and wakes that thread unless it
    /// is this one (the leader's own commit).
    fn answer(&mut self, ticket: u64, answer: Result<CommitOutcome, StoreError>) {
        self.answers.insert(ticket, answer);
        if let Some(thread) = self.waiting.get(&ticket)
            && thread.id() != std::thread::current().id()
        {
            thread.unpark();
        }
    }
}

/// Runs the commit's steps in the group's transaction, opening it first when `begin`, inside a
/// savepoint of its own; answers its result. An error is the batch's: the transaction is rolled
/// back, and nothing of it stays.
fn apply(conn: &Connection, begin: bool, commit: &Commit) -> Result<Applied, StoreError> {
    if begin {
        control(conn, "BEGIN IMMEDIATE")?;
    }
    run(conn, commit).inspect_err(|_| {
        // The savepoint could not be released or rolled back: the whole batch is lost.
        let _ = control(conn, "ROLLBACK");
    })
}

/// One commit inside its own savepoint: released when kept, rolled back when refused or
/// failed. The outer error means the savepoint itself failed.
fn run(conn: &Connection, commit: &Commit) -> Result<Applied, StoreError> {
    control(conn, "SAVEPOINT one_commit")?;
    let steps = txn::commit(&mut SqliteTxn::on(conn), commit);
    let keep = matches!(steps, Ok(Settled::Keep(_)));
    if keep {
        control(conn, "RELEASE one_commit")?;
    } else {
        control(conn, "ROLLBACK TO one_commit")?;
        control(conn, "RELEASE one_commit")?;
    }
    Ok(match steps {
        Ok(Settled::Keep(Some(outcome)) | Settled::Discard(Some(outcome))) => Ok(outcome),
        // The turn's unique constraint fired: only another connection's commit could have
        // stored it, and this transaction has held the write lock since it began.
        Ok(Settled::Keep(None) | Settled::Discard(None)) => ledger::duplicate(conn, commit),
        Err(e) => Err(e),
    })
}

fn poisoned() -> StoreError {
    StoreError::Corrupt { what: "a commit panicked inside the group committer".into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::SqliteStore;

    #[test]
    fn the_groups_connection_journals_a_batchs_savepoints_in_memory() -> Result<(), StoreError> {
        let dir = tempfile::tempdir().map_err(|e| StoreError::Corrupt { what: e.to_string() })?;
        let path = dir.path().join("store.db");
        let (first, second) = (SqliteStore::open(&path)?, SqliteStore::open(&path)?);
        let group = first.group.clone().ok_or_else(poisoned)?;
        assert!(second.group.as_ref().is_some_and(|other| Arc::ptr_eq(&group, other)), "one file, one group");
        let state = group.lock()?;
        let conn = state.conn.as_ref().ok_or_else(poisoned)?;
        // 2: MEMORY. Under SQLite's default a batch's savepoint journal past 64 KiB went to a
        // temporary file, written page by page.
        let temp_store: i64 = conn.query_row("PRAGMA temp_store", [], |row| row.get(0))?;
        assert_eq!(temp_store, 2);
        Ok(())
    }
}
