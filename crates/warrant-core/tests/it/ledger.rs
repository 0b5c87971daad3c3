//! The ledger in policy (issue 17, item 7): CEL's `ledger` is the conversation's committed
//! effects, so "a certificate only after the reservation was changed or cancelled" is a derived
//! quantity the Cedar policy reads. The events read are facts of the decision: a replay from
//! the record decides the same; a turn's earlier committed act is in the ledger of its later
//! ones; a ledger that cannot be read fails closed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::request;
use warrant_core::turn::{self, Decision, EventRecord, Facts, RecordedFacts, Verdict};

use crate::{Policy, Rows, Stored};

/// The contract after its head, `crate::CUSTOMERS` ([`contract_text`]).
const BODY: &str = r#"

[[records.table]]
name = "reservation"
file = "reservations.json"
entity = "Reservation"
owner = "owner"
fields.owner = { kind = "ref", table = "customer" }
fields.status = { kind = "enum", values = ["active", "cancelled"] }

[expressions]
changed_or_cancelled = """ledger.exists(e,
  e.operation in ['cancel_reservation', 'update_reservation_flights']
  && e.args.reservation_id == reservation_id.key)"""

[policies]
files = ["policy.cedar"]

[[operation]]
name = "cancel_reservation"
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }

[[operation.effect]]
set = "reservation_id.status"
value = "cancelled"

[[operation]]
name = "update_reservation_flights"
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }

[[operation]]
name = "send_certificate"
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }
derive = [
  { name = "after_change", cel = "changed_or_cancelled", type = "bool" },
  { name = "certificates_sent", cel = "size(ledger.filter(e, e.operation == 'send_certificate'))", type = "integer" },
]
"#;

const POLICY: &str = r#"
permit (principal, action, resource);

@id("certificate_only_after_change_or_cancel")
forbid (principal, action == Action::"send_certificate", resource)
unless { context.derived.after_change };

@id("one_certificate_per_conversation")
forbid (principal, action == Action::"send_certificate", resource)
when { context.derived.certificates_sent > 0 };
"#;

/// The contract's text: the head every test contract here shares, then its own sections.
fn contract_text() -> String {
    format!("{}{BODY}", crate::CUSTOMERS)
}

fn contract() -> Contract {
    Contract::load("ledger.toml", &contract_text(), &Policy(POLICY.into())).unwrap()
}

fn event(n: usize, kind: &str, reservation: &str) -> EventRecord {
    EventRecord {
        id: format!("evt_{n}"),
        kind: kind.into(),
        payload: json!({"actor": "kim", "args": {"reservation_id": reservation}}),
        effect: Some(format!("eff_{n}")),
    }
}

/// Kim's reservations r1 and r2, and the conversation's committed `events`.
fn stored(events: &[EventRecord]) -> Stored {
    let mut stored = Stored::default();
    stored.put("customer", "kim", 1, json!({"name": "Kim"}));
    for key in ["r1", "r2"] {
        stored.put("reservation", key, 2, json!({"owner": "kim", "status": "active"}));
    }
    for e in events {
        stored.events.entry(e.kind.clone()).or_default().push(e.clone());
    }
    stored
}

fn decide(facts: &dyn Facts, acts: Value) -> Decision {
    let contract = contract();
    let body = json!({"conversation": "c", "turn": "t", "actor": "kim", "at": "2026-11-30T03:00:00Z",
        "time_zone": "UTC", "locale": "en-US", "entries": [{"kind": "user", "text": "Go ahead."}], "acts": acts});
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, facts, &BTreeSet::new())
}

fn certificate(reservation: &str) -> Value {
    json!([{"op": "send_certificate", "args": {"reservation_id": reservation}}])
}

fn verdicts(decision: &Decision) -> Vec<(Verdict, Vec<String>)> {
    decision
        .response
        .acts
        .iter()
        .map(|a| {
            (
                a.verdict,
                a.reasons
                    .iter()
                    .flat_map(|r| r.policies.clone().into_iter().chain([r.code.as_str().to_owned()]))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn a_certificate_only_after_the_reservation_was_changed_or_cancelled() {
    let refused =
        (Verdict::Refuse, vec!["certificate_only_after_change_or_cancel".to_owned(), "forbidden_by_policy".to_owned()]);
    // Nothing committed yet.
    assert_eq!(verdicts(&decide(&stored(&[]), certificate("r1"))), std::slice::from_ref(&refused));
    // Another reservation was cancelled, not this one.
    let other = stored(&[event(0, "cancel_reservation", "r2")]);
    assert_eq!(verdicts(&decide(&other, certificate("r1"))), [refused]);
    // This one's flights were changed: the certificate commits.
    let changed = stored(&[event(0, "cancel_reservation", "r2"), event(1, "update_reservation_flights", "r1")]);
    assert_eq!(verdicts(&decide(&changed, certificate("r1"))), [(Verdict::Commit, vec![])]);
    // A second certificate in the conversation is refused by its own rule.
    let again = stored(&[event(1, "cancel_reservation", "r1"), event(2, "send_certificate", "r1")]);
    let decision = decide(&again, certificate("r1"));
    assert_eq!(
        verdicts(&decision),
        [(Verdict::Refuse, vec!["one_certificate_per_conversation".into(), "forbidden_by_policy".into()])]
    );
}

#[test]
fn the_events_read_are_facts_and_a_replay_decides_the_same() {
    let facts = stored(&[event(0, "cancel_reservation", "r2"), event(1, "update_reservation_flights", "r1")]);
    let decision = decide(&facts, certificate("r1"));
    // Every operation's events were read, each kind once, the empty ones too.
    let kinds: Vec<&str> = decision.facts.events.keys().map(String::as_str).collect();
    assert_eq!(kinds, ["cancel_reservation", "send_certificate", "update_reservation_flights"]);
    assert_eq!(decision.facts.events["update_reservation_flights"], [event(1, "update_reservation_flights", "r1")]);
    let replayed = decide(&RecordedFacts::new(&decision.facts), certificate("r1"));
    assert_eq!(replayed, decision);
    // The record survives its JSON form, as the store keeps it.
    let json = serde_json::to_value(&decision.facts).unwrap();
    let read_back: turn::FactsRead = serde_json::from_value(json).unwrap();
    assert_eq!(decide(&RecordedFacts::new(&read_back), certificate("r1")), decision);
}

#[test]
fn an_act_committed_earlier_in_the_turn_is_in_the_ledger_of_the_later_ones() {
    let acts = json!([
        {"op": "send_certificate", "args": {"reservation_id": "r1"}},
        {"op": "cancel_reservation", "args": {"reservation_id": "r1"}},
        {"op": "send_certificate", "args": {"reservation_id": "r1"}},
        {"op": "send_certificate", "args": {"reservation_id": "r1"}},
    ]);
    let decision = decide(&stored(&[]), acts);
    let codes: Vec<(Verdict, Vec<String>)> = verdicts(&decision);
    assert_eq!(codes[0].0, Verdict::Refuse, "before the cancellation: {codes:?}");
    assert_eq!(codes[1], (Verdict::Commit, vec![]));
    assert_eq!(codes[2], (Verdict::Commit, vec![]), "after it: {codes:?}");
    assert_eq!(codes[3].1[0], "one_certificate_per_conversation", "{codes:?}");
    // The turn's own events are not facts read: a replay makes them again.
    assert!(decision.facts.events.values().all(Vec::is_empty), "{:?}", decision.facts.events);
    assert_eq!(decide(&RecordedFacts::new(&decision.facts), decision_acts()), decision);
}

fn decision_acts() -> Value {
    json!([
        {"op": "send_certificate", "args": {"reservation_id": "r1"}},
        {"op": "cancel_reservation", "args": {"reservation_id": "r1"}},
        {"op": "send_certificate", "args": {"reservation_id": "r1"}},
        {"op": "send_certificate", "args": {"reservation_id": "r1"}},
    ])
}

#[test]
fn a_ledger_that_cannot_be_read_fails_closed() {
    let mut rows = BTreeMap::new();
    for (table, key, value) in [
        ("customer", "kim", json!({"name": "Kim"})),
        ("reservation", "r1", json!({"owner": "kim", "status": "active"})),
    ] {
        rows.insert(
            format!("{table}/{key}"),
            warrant_core::records::Record { table: table.into(), key: key.into(), revision: 1, value },
        );
    }
    let decision = decide(&Rows(rows), certificate("r1"));
    let reason = &decision.response.acts[0].reasons[0];
    assert_eq!((decision.response.acts[0].verdict, reason.code.as_str()), (Verdict::Refuse, "fact_unavailable"));
    assert!(reason.detail.as_deref().unwrap_or("").contains("events of `cancel_reservation`"), "{reason:?}");
}

#[test]
fn ledger_is_a_turn_name_no_argument_may_take() {
    let text = contract_text().replace(
        "name = \"send_certificate\"\nresource = \"reservation_id\"\n",
        "name = \"send_certificate\"\nresource = \"reservation_id\"\nargs.ledger = { kind = \"integer\" }\n",
    );
    let error = Contract::load("ledger.toml", &text, &Policy(POLICY.into())).unwrap_err().to_string();
    assert!(error.contains("`ledger` names the turn's value in CEL"), "{error}");
}
