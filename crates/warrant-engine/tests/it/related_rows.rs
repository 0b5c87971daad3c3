//! Related rows and the ledger over a real store (issue 17, items 2 and 7): a flight a
//! reservation refers to, followed by `row(…)` when a cancellation is held, written by the
//! system of record before the confirmation, makes the confirmation stale; a certificate is
//! refused until an earlier turn's committed cancellation is in the conversation's ledger; and
//! every stored turn replays identically from its record.

use serde_json::{Value, json};
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, ModelSource, load_contract};
use warrant_store::{Precondition, SqliteStore};

use crate::build;
use crate::reverts::decide;

const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "customer"

[records]

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"
fields.name = { kind = "text" }

[[records.table]]
name = "flight"
file = "flights.json"
entity = "Flight"
fields.status = { kind = "enum", values = ["available", "landed"] }

[[records.table]]
name = "reservation"
file = "reservations.json"
entity = "Reservation"
owner = "owner"
fields.owner = { kind = "ref", table = "customer" }
fields.status = { kind = "enum", values = ["active", "cancelled"] }
fields.flights = { kind = "list", of = { kind = "ref", table = "flight" } }

[policies]
files = ["policy.cedar"]

[[operation]]
name = "cancel_reservation"
consequential = true
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }
derive = [
  { name = "flown", type = "bool", cel = "reservation_id.flights.exists(f, row('flight', f).status == 'landed')" },
]

[[operation.effect]]
set = "reservation_id.status"
value = "cancelled"

[[operation]]
name = "send_certificate"
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }
derive = [
  { name = "after_cancel", type = "bool", cel = """ledger.exists(e, e.operation == 'cancel_reservation'
      && e.args.reservation_id == reservation_id.key)""" },
]
"#;

const POLICY: &str = r#"
permit (principal, action, resource);

@id("no_cancel_after_a_flight_flew")
forbid (principal, action == Action::"cancel_reservation", resource) when { context.derived.flown };

@id("certificate_only_after_cancel")
forbid (principal, action == Action::"send_certificate", resource) unless { context.derived.after_cancel };
"#;

/// An engine over a fresh SQLite store for the contract above, its data files beside it.
fn engine(dir: &std::path::Path) -> Engine<SqliteStore> {
    let files = [
        ("contract.toml", CONTRACT.to_owned()),
        ("policy.cedar", POLICY.to_owned()),
        ("customers.json", json!({"kim": {"name": "Kim"}}).to_string()),
        ("flights.json", json!({"F1": {"status": "available"}, "F2": {"status": "available"}}).to_string()),
        ("reservations.json", json!({"r1": {"owner": "kim", "status": "active", "flights": ["F1", "F2"]}}).to_string()),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let (contract, folder) = load_contract(&dir.join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.join("warrant.sqlite")).unwrap();
    build(contract, &folder, store, ModelSource::None)
}

fn request(turn: &str, acts: Value, answers: Value) -> String {
    json!({
        "conversation": "c", "turn": turn, "actor": "kim",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it and send me a certificate."}],
        "acts": acts, "answers": answers,
    })
    .to_string()
}

fn verdict(response: &TurnResponse) -> (Verdict, Vec<String>) {
    let act = &response.acts[0];
    (
        act.verdict,
        act.reasons.iter().flat_map(|r| r.policies.clone().into_iter().chain([r.code.as_str().into()])).collect(),
    )
}

#[test]
fn a_followed_row_written_before_the_confirmation_makes_it_stale_and_the_ledger_spans_turns() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = engine(dir.path());
    let cancel = json!([{"op": "cancel_reservation", "args": {"reservation_id": "r1"}}]);
    let certificate = json!([{"op": "send_certificate", "args": {"reservation_id": "r1"}}]);

    // No cancellation committed yet: no certificate.
    let early = decide(&mut engine, &request("t1", certificate.clone(), json!([])));
    assert_eq!(verdict(&early).0, Verdict::Refuse, "{:?}", early.acts);
    assert_eq!(verdict(&early).1[0], "certificate_only_after_cancel");

    // Held against both flights; the system of record then writes flight F2.
    let held = decide(&mut engine, &request("t2", cancel.clone(), json!([])));
    assert_eq!(verdict(&held).0, Verdict::Hold, "{:?}", held.acts);
    let f2 = engine.record("flight", "F2").unwrap().unwrap();
    engine.put_record("flight", "F2", &json!({"status": "available"}), Precondition::IfMatch(f2.revision)).unwrap();
    let answer = |id: &str| json!([{"interaction": id, "option": "confirm"}]);
    let stale = decide(&mut engine, &request("t3", json!([]), answer(&held.interactions[0].id)));
    assert_eq!(verdict(&stale), (Verdict::Refuse, vec!["stale_revision".to_owned()]), "{:?}", stale.acts);
    assert_eq!(engine.record("reservation", "r1").unwrap().unwrap().value["status"], "active");

    // Asked again and confirmed, it commits; the certificate in a later turn sees it.
    let held = decide(&mut engine, &request("t4", cancel, json!([])));
    let confirmed = decide(&mut engine, &request("t5", json!([]), answer(&held.interactions[0].id)));
    assert_eq!(verdict(&confirmed).0, Verdict::Commit, "{:?}", confirmed.acts);
    let late = decide(&mut engine, &request("t6", certificate, json!([])));
    assert_eq!(verdict(&late), (Verdict::Commit, vec![]), "{:?}", late.acts);

    // Every turn decides again, from its replay record alone, as it did.
    let report = engine.replay().unwrap();
    assert_eq!((report.turns, report.identical), (6, 6), "{:?}", report.changes);
}
