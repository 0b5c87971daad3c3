//! A row's history: the events of the effects committed on it, in every conversation and in
//! commit order, each with the instant of the turn that committed it and its effect's outcome.

use serde_json::json;
use warrant_store::{CommitOutcome, OutcomeResult};

use crate::build::{commit, effect, event, report};
use crate::fixture::Fixture;

pub fn a_row_s_events_are_those_of_the_effects_that_changed_or_hold_it(fx: &Fixture) {
    let mut store = fx.open();
    // An effect whose steps changed the row, in one conversation; one that holds it, in another;
    // one on another row.
    let on = |table: &str, key: &str| json!({"table": table, "key": key});
    let turns = [
        ("c1", "t1", "e1", json!({"changes": [{"row": on("orders", "#W1"), "fields": []}]})),
        ("c2", "t2", "e2", json!({"changes": [], "holds": [on("orders", "#W1")]})),
        ("c1", "t3", "e3", json!({"changes": [{"row": on("orders", "#W2"), "fields": []}]})),
    ];
    for (n, (conversation, turn, id, payload)) in turns.into_iter().enumerate() {
        let mut c = commit(conversation, turn);
        let mut request = c.turn.request.to_value().unwrap();
        request["at"] = json!(format!("2026-11-29T15:0{n}:00Z"));
        c.turn.request = request.into();
        let mut e = effect(id, &format!("k-{id}"), &c);
        e.payload = payload;
        c.effects.push(e);
        c.events.push(event(&format!("ev-{id}"), conversation, "cancel_order", Some(id)));
        assert!(matches!(store.commit(&c).unwrap(), CommitOutcome::Committed { .. }));
    }
    assert_eq!(store.report_outcome(&report("e1", "done", "ev-e1-done", "c1")).unwrap(), OutcomeResult::Recorded);
    let history = store.row_events("orders", "#W1").unwrap();
    let seen: Vec<(&str, &str, &str, Option<&str>)> = history
        .iter()
        .map(|r| (r.event.id.as_str(), r.event.conversation.as_str(), r.at.as_str(), r.outcome.as_deref()))
        .collect();
    // The outcome's own event is not the effect's: it is left out.
    assert_eq!(
        seen,
        vec![("ev-e1", "c1", "2026-11-29T15:00:00Z", Some("done")), ("ev-e2", "c2", "2026-11-29T15:01:00Z", None),]
    );
    assert!(history[0].event.seq < history[1].event.seq);
    assert_eq!(history[0].event.kind, "cancel_order");
    assert_eq!(store.row_events("orders", "#W3").unwrap(), vec![]);
    assert_eq!(store.row_events("orders", "#W\0").unwrap(), vec![]);
}
