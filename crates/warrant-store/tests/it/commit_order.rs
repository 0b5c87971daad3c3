//! Commit order without one commit at a time: many committers at once, gaps left by commits
//! that roll back after taking a number, and readers in order that must miss nothing and read
//! the same order every time, on PostgreSQL, where commits take numbers side by side. A commit
//! is also held open, on purpose, after it has taken its number, to show that others commit
//! meanwhile and that no reader passes it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use warrant_store::{CommitOutcome, StoreError, StoredTurn};

use crate::build::{commit, effect, event};
use crate::fixture::{Backend, Fixture, admin};

const WRITERS: usize = 16;
const PER_WRITER: usize = 24;

fn committed(outcome: CommitOutcome) -> i64 {
    match outcome {
        CommitOutcome::Committed { seq } => seq,
        other => panic!("expected a commit, got {other:?}"),
    }
}

fn keys(turns: &[StoredTurn]) -> Vec<(i64, String, String)> {
    turns.iter().map(|t| (t.seq, t.conversation.clone(), t.turn.clone())).collect()
}

/// Sixteen committers at once, every fourth commit of each failing after its turn went in (an
/// event id taken, so the number it took is a gap), while a reader tails the turns seven at a
/// time; then pages back from the newest: no committed turn is missed, numbers only go up, and
/// reading everything again gives the same order. (SQLite, one writer at a time, has its own
/// tailing test among the conformance tests.)
#[test]
fn postgres_sixteen_committers_with_gaps_a_tailing_reader_misses_none() {
    let fx = &Fixture::postgres();
    let mut setup = fx.open();
    let mut taken = commit("setup", "t0");
    taken.events.push(event("taken", "setup", "said", None));
    committed(setup.commit(&taken).unwrap());
    let expected = WRITERS * (PER_WRITER - PER_WRITER / 4);
    let barrier = Arc::new(Barrier::new(WRITERS + 1));
    let finished = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (mut store, barrier, finished) = (fx.open(), barrier.clone(), finished.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for n in 0..PER_WRITER {
                    let mut c = commit(&format!("w{w}"), &format!("t{n}"));
                    let fails = n % 4 == 3;
                    let id = if fails { "taken".to_owned() } else { format!("v{w}.{n}") };
                    c.events.push(event(&id, &format!("w{w}"), "said", None));
                    match store.commit(&c) {
                        Ok(outcome) if !fails => drop(committed(outcome)),
                        Err(StoreError::IdTaken { kind: "event", .. }) if fails => {}
                        other => panic!("writer {w}, commit {n}: {other:?}"),
                    }
                }
                finished.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    let mut reader = fx.open();
    barrier.wait();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen: Vec<StoredTurn> = Vec::new();
    let mut after = 0;
    // The setup turn, then every turn that committed.
    while seen.len() < expected + 1 {
        assert!(Instant::now() < deadline, "the reader saw {} of {} turns", seen.len(), expected + 1);
        // Read before asking: once every writer is done, a poll that finds nothing new means
        // the missing turns were skipped, not late.
        let done = finished.load(Ordering::SeqCst) == WRITERS;
        let batch = reader.turns(after, 7).unwrap();
        assert!(
            !(done && batch.is_empty()),
            "the reader missed {} turns: it read past a number whose commit was still open",
            expected + 1 - seen.len()
        );
        for turn in batch {
            assert!(turn.seq > after, "turn {} came after {after}", turn.seq);
            after = turn.seq;
            seen.push(turn);
        }
    }
    for writer in writers {
        writer.join().unwrap();
    }
    let all = reader.turns(0, usize::MAX).unwrap();
    assert_eq!(keys(&seen), keys(&all), "the tailing reader and a full read disagree");
    assert_eq!(keys(&reader.turns(0, usize::MAX).unwrap()), keys(&all), "a second full read changed order");
    // Paging back from the newest meets every turn, in the same order reversed.
    let mut back = Vec::new();
    let mut before = None;
    loop {
        let page = reader.recent_turns(before, 11).unwrap();
        let Some(last) = page.last() else { break };
        before = Some(last.seq);
        back.extend(page);
    }
    back.reverse();
    assert_eq!(keys(&back), keys(&all));
    // Each writer's turns in the order it committed them, whatever came between.
    for w in 0..WRITERS {
        let mine: Vec<&str> =
            all.iter().filter(|t| t.conversation == format!("w{w}")).map(|t| t.turn.as_str()).collect();
        let wanted: Vec<String> = (0..PER_WRITER).filter(|n| n % 4 != 3).map(|n| format!("t{n}")).collect();
        assert_eq!(mine, wanted, "writer {w}");
    }
    let events = reader.events(None).unwrap();
    assert_eq!(events.len(), expected + 1);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
}

/// A commit held open after taking its number (its event waits on a row lock held here) does
/// not hold up another conversation's commit, and a reader asking meanwhile never returns the
/// later turn without the earlier one: it answers once the held commit ends, with both in order.
#[test]
fn postgres_a_commit_held_open_blocks_no_other_and_no_reader_passes_it() {
    let fx = Fixture::postgres();
    let Backend::Postgres { conninfo, schema } = &fx.backend else { unreachable!() };
    let mut setup = fx.open();
    let mut first = commit("c0", "t0");
    first.effects.push(effect("e0", "k0", &first));
    let seq_0 = committed(setup.commit(&first).unwrap());

    // Hold the effect row, so that a commit whose event names it waits after its turn is in.
    let mut holder = admin(conninfo);
    let mut hold = holder.transaction().unwrap();
    hold.execute(&format!("SELECT 1 FROM {schema}.effects WHERE id = 'e0' FOR UPDATE"), &[]).unwrap();

    let (held_tx, held_rx) = mpsc::channel();
    let mut store = fx.open();
    std::thread::spawn(move || {
        let mut c = commit("a", "t1");
        c.events.push(event("va", "a", "reported", Some("e0")));
        held_tx.send(store.commit(&c).map(committed)).unwrap();
    });
    // Watched from a connection of its own: a transaction keeps one view of the activity.
    let holder_pid: i32 = hold.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let mut watcher = admin(conninfo);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE $1 = ANY (pg_blocking_pids(pid)) AND query LIKE 'INSERT INTO events%'",
                &[&holder_pid],
            )
            .unwrap()
            .get(0);
        if waiting == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the held commit never reached its event");
        std::thread::sleep(Duration::from_millis(10));
    }

    let (other_tx, other_rx) = mpsc::channel();
    let mut store = fx.open();
    std::thread::spawn(move || other_tx.send(store.commit(&commit("b", "t1")).map(committed)).unwrap());
    let seq_b = other_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("another conversation's commit waited for the held one: commits are serialized")
        .unwrap();

    let (read_tx, read_rx) = mpsc::channel();
    for newest_first in [false, true] {
        let (mut reader, read_tx) = (fx.open(), read_tx.clone());
        std::thread::spawn(move || {
            let read = if newest_first { reader.recent_turns(None, 100) } else { reader.turns(0, 100) };
            read_tx.send((newest_first, read.unwrap())).unwrap();
        });
    }
    // Whatever a reader answers while the commit is held must stop below it.
    let early_deadline = Instant::now() + Duration::from_millis(500);
    let mut answers = Vec::new();
    while let Ok(answer) = read_rx.recv_timeout(early_deadline.saturating_duration_since(Instant::now())) {
        let seqs: Vec<i64> = answer.1.iter().map(|t| t.seq).collect();
        assert!(!seqs.contains(&seq_b), "a reader returned turn {seq_b} past the open one: {seqs:?}");
        answers.push(answer);
    }
    hold.rollback().unwrap();
    let seq_a = held_rx.recv_timeout(Duration::from_secs(30)).expect("the held commit never ended").unwrap();
    assert!(seq_0 < seq_a && seq_a < seq_b, "numbers {seq_0}, {seq_a}, {seq_b} are not in the order taken");
    while answers.len() < 2 {
        answers.push(read_rx.recv_timeout(Duration::from_secs(30)).expect("a reader never answered"));
    }
    for (newest_first, mut turns) in answers {
        if newest_first {
            turns.reverse();
        }
        let seqs: Vec<i64> = turns.iter().map(|t| t.seq).collect();
        // A reader that answered early stops below the open turn; one that waited has all three.
        assert!(seqs == [seq_0] || seqs == [seq_0, seq_a, seq_b], "a reader read {seqs:?}");
    }
    let all: Vec<i64> = setup.turns(0, 100).unwrap().iter().map(|t| t.seq).collect();
    assert_eq!(all, [seq_0, seq_a, seq_b]);
}
