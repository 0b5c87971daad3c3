//! SQLite's group commit, on a real file: many threads of one process, each with its own
//! store, commit at once; their commits share transactions, every acknowledged commit is there
//! after the file is opened again, a refused or failed commit in a batch loses none of the
//! others, and sequence numbers follow commit order.

use std::sync::Barrier;

use serde_json::json;
use warrant_store::{CommitOutcome, Ledger, SqliteStore, StoreError};

use crate::build::{commit, event, rows, write};

const THREADS: usize = 8;
const PER_THREAD: usize = 60;

fn file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new().prefix("warrant-group-").tempdir().unwrap();
    let path = dir.path().join("store.db");
    SqliteStore::open(&path).unwrap().migrate().unwrap();
    (dir, path)
}

/// Runs `each(store, thread)` on [`THREADS`] threads released together, each with its own
/// store on the file, and returns what each answered, in thread order.
fn at_once<T: Send>(path: &std::path::Path, each: impl Fn(&mut SqliteStore, usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (barrier, each) = (&barrier, &each);
                s.spawn(move || {
                    let mut store = SqliteStore::open(path).unwrap();
                    barrier.wait();
                    each(&mut store, thread)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn seq(outcome: &CommitOutcome) -> Option<i64> {
    match outcome {
        CommitOutcome::Committed { seq } => Some(*seq),
        _ => None,
    }
}

#[test]
fn commits_at_once_share_transactions_and_every_acknowledged_one_is_there_after_reopening() {
    let (_dir, path) = file();
    // Open for the whole run, so that the file's committer, and its counts, last it.
    let keep = SqliteStore::open(&path).unwrap();
    let acknowledged: Vec<Vec<(String, i64)>> = at_once(&path, |store, thread| {
        (0..PER_THREAD)
            .map(|i| {
                let mut c = commit(&format!("c{thread}"), &format!("t{i}"));
                c.events.push(event(&format!("v{thread}.{i}"), &c.turn.conversation, "said", None));
                let seq = seq(&store.commit(&c).unwrap()).unwrap();
                (format!("c{thread}/t{i}"), seq)
            })
            .collect()
    });
    let (batches, commits) = keep.commit_batches().unwrap().unwrap();
    // The log was copied into the file off the commit path, as commits came: the
    // checkpointer is told every few durable commits.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while keep.checkpoints().unwrap().unwrap() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(keep.checkpoints().unwrap().unwrap() > 0, "{commits} commits and no checkpoint");
    drop(keep);
    // Every store of the process is gone now, and its committer with them: the file, opened
    // again, holds every acknowledged commit, at the sequence number it was acknowledged with.
    let mut reopened = SqliteStore::open(&path).unwrap();
    let stored = reopened.turns(0, 10_000).unwrap();
    let mut expected: Vec<(String, i64)> = acknowledged.into_iter().flatten().collect();
    expected.sort_by_key(|(_, seq)| *seq);
    let found: Vec<(String, i64)> = stored.iter().map(|t| (format!("{}/{}", t.conversation, t.turn), t.seq)).collect();
    assert_eq!(found, expected);
    assert_eq!(reopened.events(None).unwrap().len(), THREADS * PER_THREAD);
    assert_eq!(commits, (THREADS * PER_THREAD) as u64);
    assert!(batches < commits, "{commits} commits took {batches} transactions: none was shared");
}

#[test]
fn the_checkpointer_copies_the_log_after_every_sixteenth_durable_commit_and_not_before() {
    let (_dir, path) = file();
    let mut store = SqliteStore::open(&path).unwrap();
    let copies = |store: &SqliteStore| store.checkpoints().unwrap().unwrap();
    let wait_for = |store: &SqliteStore, expected: u64| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while copies(store) < expected && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        copies(store)
    };
    let asked = |store: &SqliteStore| store.checkpoints_asked().unwrap().unwrap();
    let (start, start_asked) = (copies(&store), asked(&store));
    assert_eq!(start, start_asked, "a copy the commit path did not ask for");
    for round in 1..=3 {
        // One thread: each commit is a batch of its own, durable before the next begins.
        for i in 0..15 {
            assert!(seq(&store.commit(&commit("c", &format!("r{round}.{i}"))).unwrap()).is_some());
        }
        // Fifteen commits since the last copy: the checkpointer has not been told, which the
        // count the commit path keeps says at once (no waiting to see that nothing happens).
        assert_eq!(asked(&store), start_asked + round - 1, "round {round}: told before the sixteenth commit");
        assert!(copies(&store) < start + round, "round {round}: a copy before the sixteenth commit");
        assert!(seq(&store.commit(&commit("c", &format!("r{round}.15"))).unwrap()).is_some());
        assert_eq!(asked(&store), start_asked + round, "round {round}: not told at the sixteenth commit");
        assert_eq!(wait_for(&store, start + round), start + round, "round {round}: no copy after the sixteenth");
    }
}

#[test]
fn a_refused_or_failed_commit_in_a_batch_loses_none_of_the_others() {
    let (_dir, path) = file();
    let mut setup = SqliteStore::open(&path).unwrap();
    setup.seed_records("orders", &rows(&[("#W1", json!({"n": 0}))])).unwrap();
    let mut first = commit("setup", "t0");
    first.events.push(event("taken", "setup", "said", None));
    assert!(seq(&setup.commit(&first).unwrap()).is_some());
    let results: Vec<Vec<(usize, Result<CommitOutcome, String>)>> = at_once(&path, |store, thread| {
        (0..PER_THREAD)
            .map(|i| {
                let mut c = commit(&format!("c{thread}"), &format!("t{i}"));
                match i % 3 {
                    // Stale: no decision read #W1 at revision 99.
                    1 => c.writes.push(write("orders", "#W1", 99, json!({"n": i}))),
                    // An error: an event id every thread uses.
                    2 if thread > 0 => c.events.push(event("taken", "setup", "said", None)),
                    _ => {}
                }
                (i, store.commit(&c).map_err(|e: StoreError| e.to_string()))
            })
            .collect()
    });
    let mut store = SqliteStore::open(&path).unwrap();
    for (thread, results) in results.iter().enumerate() {
        for (i, result) in results {
            let turn = store.turn(&format!("c{thread}"), &format!("t{i}")).unwrap();
            match (i % 3, result) {
                (1, Ok(CommitOutcome::StaleRevision { actual: Some(1), .. })) => assert_eq!(turn, None),
                (2, Err(why)) if thread > 0 => {
                    assert!(why.contains("taken"), "{why}");
                    assert_eq!(turn, None);
                }
                (_, Ok(CommitOutcome::Committed { seq })) => assert_eq!(turn.map(|t| t.seq), Some(*seq)),
                other => panic!("thread {thread} commit {i}: {other:?}"),
            }
        }
    }
    assert_eq!(store.record("orders", "#W1").unwrap().unwrap().revision, 1);
    let (batches, commits) = store.commit_batches().unwrap().unwrap();
    assert!(batches < commits, "{commits} commits took {batches} transactions: none was shared");
}

#[test]
fn sequence_numbers_follow_commit_order() {
    // Every commit moves one counter on from the revision it read, retrying when another
    // moved it first: the counter's values, in the order commits took them, must be in the
    // order of their sequence numbers, within a batch and across batches.
    let (_dir, path) = file();
    SqliteStore::open(&path).unwrap().seed_records("counter", &rows(&[("n", json!({"n": 0}))])).unwrap();
    let taken: Vec<Vec<(i64, i64)>> = at_once(&path, |store, thread| {
        let mut mine = Vec::new();
        for i in 0..PER_THREAD / 2 {
            for attempt in 0.. {
                let at = store.record("counter", "n").unwrap().unwrap();
                let n = at.value["n"].as_i64().unwrap() + 1;
                let mut c = commit(&format!("c{thread}"), &format!("t{i}.{attempt}"));
                c.writes.push(write("counter", "n", at.revision, json!({"n": n})));
                if let Some(seq) = seq(&store.commit(&c).unwrap()) {
                    mine.push((n, seq));
                    break;
                }
            }
        }
        // One thread's own commits come in the order it made them.
        assert!(mine.windows(2).all(|w| w[0].1 < w[1].1), "{mine:?}");
        mine
    });
    let mut all: Vec<(i64, i64)> = taken.into_iter().flatten().collect();
    all.sort_unstable();
    let counted: Vec<i64> = all.iter().map(|(n, _)| *n).collect();
    assert_eq!(counted, (1..=(THREADS * PER_THREAD / 2) as i64).collect::<Vec<_>>());
    assert!(all.windows(2).all(|w| w[0].1 < w[1].1), "sequence numbers out of commit order: {all:?}");
}

/// A waiting commit is woken alone, by the leader that answers it or leaves it the lead: a
/// stream of commits from many threads, some arriving while a batch's `COMMIT` runs (to be led
/// next), must leave none asleep for ever. A commit not answered within the deadline fails the
/// test rather than hanging it.
#[test]
fn a_stream_of_commits_from_many_threads_leaves_none_waiting() {
    const STREAMS: usize = 16;
    const EACH: usize = 150;
    let (_dir, path) = file();
    let (answered, answers) = std::sync::mpsc::channel();
    for thread in 0..STREAMS {
        let (path, answered) = (path.clone(), answered.clone());
        std::thread::spawn(move || {
            let mut store = SqliteStore::open(&path).unwrap();
            for i in 0..EACH {
                let outcome = store.commit(&commit(&format!("s{thread}"), &format!("t{i}"))).unwrap();
                answered.send(seq(&outcome)).unwrap();
            }
        });
    }
    drop(answered);
    let mut seqs = Vec::new();
    for n in 0..STREAMS * EACH {
        let answer = answers.recv_timeout(std::time::Duration::from_secs(30));
        let seq = answer.unwrap_or_else(|e| panic!("{n} commits answered, then none for 30 s: {e}"));
        seqs.push(seq.unwrap_or_else(|| panic!("commit {n} was not committed")));
    }
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), STREAMS * EACH, "every commit took a sequence number of its own");
}
