//! Two connections at the same moment: the database, not luck, decides who wins. Each race
//! starts both threads at a barrier and runs for many rounds, so a store that only passes when
//! the threads happen to take turns fails here.

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use warrant_store::{CommitOutcome, InteractionState, OutcomeResult, Store};

use crate::build::{answer, commit, effect, event, interaction, report, rows, write};
use crate::fixture::Fixture;

const ROUNDS: i64 = 20;

/// Runs `attempt(store, thread)` on two threads released together, each with its own
/// connection, and returns both results in thread order.
pub fn race<T: Send>(stores: &mut [Box<dyn Store>; 2], attempt: impl Fn(&mut dyn Store, usize) -> T + Sync) -> [T; 2] {
    let barrier = Barrier::new(2);
    let [a, b] = stores;
    std::thread::scope(|s| {
        let (barrier, attempt) = (&barrier, &attempt);
        let first = s.spawn(move || {
            barrier.wait();
            attempt(&mut **a, 0)
        });
        let second = s.spawn(move || {
            barrier.wait();
            attempt(&mut **b, 1)
        });
        [first.join().unwrap(), second.join().unwrap()]
    })
}

/// Which of the two results is the winner's, by `won`; panics unless exactly one won.
fn winner<T: std::fmt::Debug>(results: &[T; 2], won: impl Fn(&T) -> bool) -> usize {
    match (won(&results[0]), won(&results[1])) {
        (true, false) => 0,
        (false, true) => 1,
        _ => panic!("expected exactly one winner, got {results:?}"),
    }
}

pub fn two_writers_of_one_record_one_commits_one_is_stale(fx: &Fixture) {
    let mut setup = fx.open();
    setup.seed_records("orders", &rows(&[("#W0001", json!({"round": 0}))])).unwrap();
    let mut stores = [fx.open(), fx.open()];
    for round in 1..=ROUNDS {
        let attempt = |thread: usize| {
            let mut c = commit(&format!("c{thread}"), &format!("r{round}"));
            c.writes.push(write("orders", "#W0001", round, json!({"round": round, "thread": thread})));
            c.effects.push(effect(&format!("e{round}.{thread}"), &format!("k{round}.{thread}"), &c));
            c.events.push(event(&format!("v{round}.{thread}"), &c.turn.conversation, "written", None));
            c
        };
        let results = race(&mut stores, |store, thread| store.commit(&attempt(thread)).unwrap());
        let won = winner(&results, |r| matches!(r, CommitOutcome::Committed { .. }));
        let lost = 1 - won;
        assert_eq!(
            results[lost],
            CommitOutcome::StaleRevision {
                table: "orders".to_owned(),
                key: "#W0001".to_owned(),
                expected: round,
                actual: Some(round + 1),
            },
            "round {round}"
        );
        let record = setup.record("orders", "#W0001").unwrap().unwrap();
        assert_eq!((record.revision, record.value), (round + 1, json!({"round": round, "thread": won})));
        let loser = attempt(lost);
        assert_eq!(setup.turn(&loser.turn.conversation, &loser.turn.turn).unwrap(), None);
        assert_eq!(setup.effect(&loser.effects[0].id).unwrap(), None);
    }
    assert_eq!(setup.turns(0, 1000).unwrap().len(), ROUNDS as usize);
    assert_eq!(setup.events(None).unwrap().len(), ROUNDS as usize);
}

pub fn two_commits_of_one_turn_one_commits_one_is_a_duplicate(fx: &Fixture) {
    // Both attempts also write the same record at the same revision and carry the same effect
    // key: the loser must still learn that its turn is a duplicate, not that it is stale.
    let mut setup = fx.open();
    setup.seed_records("orders", &rows(&[("#W0001", json!({"round": 0}))])).unwrap();
    let mut stores = [fx.open(), fx.open()];
    for round in 1..=ROUNDS {
        let results = race(&mut stores, |store, thread| {
            let mut c = commit("c", &format!("r{round}"));
            c.turn.request = json!({"round": round, "thread": thread}).into();
            c.writes.push(write("orders", "#W0001", round, json!({"round": round})));
            c.effects.push(effect(&format!("e{round}.{thread}"), &format!("k{round}"), &c));
            c.opened.push(interaction(&format!("i{round}.{thread}"), &c));
            store.commit(&c).unwrap()
        });
        let won = winner(&results, |r| matches!(r, CommitOutcome::Committed { .. }));
        let CommitOutcome::Committed { seq } = results[won] else { unreachable!() };
        match &results[1 - won] {
            CommitOutcome::Duplicate(stored) => {
                assert_eq!(stored.seq, seq);
                assert_eq!(stored.request, json!({"round": round, "thread": won}));
            }
            other => panic!("round {round}: the loser got {other:?}, not a duplicate"),
        }
        assert_eq!(setup.record("orders", "#W0001").unwrap().unwrap().revision, round + 1);
        assert_eq!(setup.effect(&format!("e{round}.{}", 1 - won)).unwrap(), None);
        assert_eq!(setup.interaction(&format!("i{round}.{}", 1 - won)).unwrap(), None);
    }
    assert_eq!(setup.turns(0, 1000).unwrap().len(), ROUNDS as usize);
}

pub fn two_answers_to_one_interaction_one_is_closed(fx: &Fixture) {
    let mut setup = fx.open();
    let mut stores = [fx.open(), fx.open()];
    for round in 1..=ROUNDS {
        let id = format!("i{round}");
        let mut opening = commit("c", &format!("open{round}"));
        opening.opened.push(interaction(&id, &opening));
        assert!(matches!(setup.commit(&opening).unwrap(), CommitOutcome::Committed { .. }));
        let options = ["yes", "no"];
        let results = race(&mut stores, |store, thread| {
            let mut c = commit("c", &format!("answer{round}.{thread}"));
            c.answered.push(answer(&id, options[thread]));
            store.commit(&c).unwrap()
        });
        let won = winner(&results, |r| matches!(r, CommitOutcome::Committed { .. }));
        assert_eq!(results[1 - won], CommitOutcome::InteractionClosed { id: id.clone() });
        assert_eq!(
            setup.interaction(&id).unwrap().unwrap().state,
            InteractionState::Answered { option: options[won].to_owned(), turn: format!("answer{round}.{won}") }
        );
    }
}

pub fn two_reports_of_one_effect_one_is_recorded(fx: &Fixture) {
    // Both reports also write the same record at the same revision: the loser must learn the
    // stored outcome, not that it is stale.
    let mut setup = fx.open();
    setup.seed_records("orders", &rows(&[("#W0001", json!({"round": 0}))])).unwrap();
    let mut stores = [fx.open(), fx.open()];
    for round in 1..=ROUNDS {
        let id = format!("e{round}");
        let mut c = commit("c", &format!("t{round}"));
        c.effects.push(effect(&id, &id, &c));
        assert!(matches!(setup.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
        let outcomes = ["done", "failed"];
        let results = race(&mut stores, |store, thread| {
            let mut r = report(&id, outcomes[thread], &format!("v{round}.{thread}"), "c");
            r.writes.push(write("orders", "#W0001", round, json!({"round": round})));
            store.report_outcome(&r).unwrap()
        });
        let won = winner(&results, |r| *r == OutcomeResult::Recorded);
        assert_eq!(results[1 - won], OutcomeResult::AlreadyRecorded { outcome: outcomes[won].to_owned() });
        assert_eq!(setup.effect(&id).unwrap().unwrap().outcome.as_deref(), Some(outcomes[won]));
        assert_eq!(setup.record("orders", "#W0001").unwrap().unwrap().revision, round + 1);
    }
    assert_eq!(setup.events(None).unwrap().len(), ROUNDS as usize);
}

pub fn two_writers_of_two_records_in_opposite_orders_do_not_deadlock(fx: &Fixture) {
    // Each names the records in the other's order; the store must lock them in one order, or
    // PostgreSQL aborts one of them as a deadlock instead of answering a stale revision.
    let mut setup = fx.open();
    setup.seed_records("orders", &rows(&[("a", json!(0)), ("b", json!(0))])).unwrap();
    let mut stores = [fx.open(), fx.open()];
    for round in 1..=ROUNDS {
        let results = race(&mut stores, |store, thread| {
            let mut c = commit(&format!("c{thread}"), &format!("r{round}"));
            let keys = if thread == 0 { ["a", "b"] } else { ["b", "a"] };
            for key in keys {
                c.writes.push(write("orders", key, round, json!(round)));
            }
            store.commit(&c).unwrap()
        });
        let won = winner(&results, |r| matches!(r, CommitOutcome::Committed { .. }));
        assert!(
            matches!(&results[1 - won], CommitOutcome::StaleRevision { expected, .. } if *expected == round),
            "round {round}: {results:?}"
        );
    }
    assert_eq!(setup.record("orders", "b").unwrap().unwrap().revision, ROUNDS + 1);
}

pub fn a_reader_tailing_turns_misses_none_while_writers_commit(fx: &Fixture) {
    // A reader that asks for the turns after the last one it saw must see every turn: a
    // sequence number taken before another but committed after it would be skipped.
    const WRITERS: usize = 3;
    const PER_WRITER: usize = 30;
    let total = WRITERS * PER_WRITER;
    let mut writers: Vec<Box<dyn Store>> = (0..WRITERS).map(|_| fx.open()).collect();
    let mut reader = fx.open();
    let barrier = Barrier::new(WRITERS + 1);
    let finished = AtomicUsize::new(0);
    let seen = std::thread::scope(|s| {
        for (w, store) in writers.iter_mut().enumerate() {
            let (barrier, finished) = (&barrier, &finished);
            s.spawn(move || {
                barrier.wait();
                for n in 0..PER_WRITER {
                    let mut c = commit(&format!("w{w}"), &format!("t{n}"));
                    c.events.push(event(&format!("v{w}.{n}"), &format!("w{w}"), "said", None));
                    assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
                }
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
        let (reader, barrier, finished) = (&mut reader, &barrier, &finished);
        s.spawn(move || {
            barrier.wait();
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut seen = Vec::new();
            let mut after = 0;
            while seen.len() < total {
                assert!(Instant::now() < deadline, "the reader saw {} of {total} turns", seen.len());
                // Read before asking for more: once every writer is done, a poll that finds
                // nothing new means the missing turns were skipped, not late.
                let done = finished.load(Ordering::SeqCst) == WRITERS;
                let batch = reader.turns(after, 7).unwrap();
                assert!(
                    !(done && batch.is_empty()),
                    "the reader missed {} of {total} turns: a sequence number was taken before \
                     another one and committed after it",
                    total - seen.len()
                );
                for turn in batch {
                    assert!(turn.seq > after);
                    after = turn.seq;
                    seen.push(turn);
                }
                std::thread::yield_now();
            }
            seen
        })
        .join()
        .unwrap()
    });
    assert_eq!(seen, reader.turns(0, usize::MAX).unwrap());
    let events = reader.events(None).unwrap();
    assert_eq!(events.len(), total);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
}
