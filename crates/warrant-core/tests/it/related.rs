//! Related rows (issue 17, item 2): a CEL expression follows a `ref` field to its row with
//! `row('TABLE', key)`, refs inside a row's lists included, to a bounded depth. Every row
//! reached is a fact of the decision (on the replay record, among the revisions a confirmation
//! is checked against); a missing or invisible row fails closed; typed tables' fields are
//! checked at load, below `row(…)` too, with the line and column of the misspelt field.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::request;
use warrant_core::turn::{self, Decision, RecordedFacts, Verdict};

use crate::{Policy, Stored};

/// The contract after its head, `crate::CUSTOMERS` ([`contract_text`]).
const BODY: &str = r#"

[[records.table]]
name = "flight"
file = "flights.json"
entity = "Flight"
fields.status = { kind = "enum", values = ["available", "landed", "cancelled"] }
fields.next = { kind = "ref", table = "flight", optional = true }

[[records.table]]
name = "reservation"
file = "reservations.json"
entity = "Reservation"
owner = "owner"
fields.owner = { kind = "ref", table = "customer" }
fields.status = { kind = "enum", values = ["active", "cancelled"] }

[records.table.fields.flights]
kind = "list"
of.kind = "object"
of.fields.flight_number = { kind = "ref", table = "flight" }
of.fields.date = { kind = "date" }

[expressions]
any_flown = "reservation_id.flights.exists(f, row('flight', f.flight_number).status == 'landed')"

[policies]
files = ["policy.cedar"]

[[operation]]
name = "cancel_reservation"
consequential = true
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }
derive = [
  { name = "flown", cel = "any_flown", type = "bool" },
  { name = "airline_cancelled", cel = "reservation_id.flights.all(f, row('flight', f.flight_number).status == 'cancelled')", type = "bool" },
]

[[operation.effect]]
set = "reservation_id.status"
value = "cancelled"

[[operation]]
name = "inspect"
resource = "reservation_id"
args.reservation_id = { kind = "record", table = "reservation" }
args.depth = { kind = "integer", min = 1, max = 5 }
derive = [
  { name = "chain", type = "text", cel = """depth == 1 ? row('flight', reservation_id.flights[0].flight_number).status
    : depth == 2 ? row('flight', row('flight', reservation_id.flights[0].flight_number).next).status
    : depth == 3 ? row('flight', row('flight', row('flight', reservation_id.flights[0].flight_number).next).next).status
    : depth == 4 ? row('flight', row('flight', row('flight', row('flight', reservation_id.flights[0].flight_number).next).next).next).status
    : ''""" },
  { name = "owner_name", type = "text", cel = "depth == 5 ? row('customer', 'lee').name : ''" },
]
"#;

const POLICY: &str = r#"
permit (principal, action, resource);

@id("no_cancel_after_a_flight_flew")
forbid (principal, action == Action::"cancel_reservation", resource)
when { context.derived.flown };
"#;

/// The contract's text: the head every test contract here shares, then its own sections.
fn contract_text() -> String {
    format!("{}{BODY}", crate::CUSTOMERS)
}

fn contract() -> Contract {
    Contract::load("related.toml", &contract_text(), &Policy(POLICY.into())).unwrap()
}

/// Kim's reservation `r1` over flights F1 and F2 (F1's `next` is F2, F2's is F3, F3's F4);
/// Lee is another customer.
fn stored(f1: &str, f2: &str) -> Stored {
    let mut stored = Stored::default();
    stored.put("customer", "kim", 1, json!({"name": "Kim"}));
    stored.put("customer", "lee", 1, json!({"name": "Lee"}));
    stored.put("flight", "F1", 4, json!({"status": f1, "next": "F2"}));
    stored.put("flight", "F2", 7, json!({"status": f2, "next": "F3"}));
    stored.put("flight", "F3", 1, json!({"status": "available", "next": "F4"}));
    stored.put("flight", "F4", 1, json!({"status": "available"}));
    let flights = json!([{"flight_number": "F1", "date": "2026-12-01"}, {"flight_number": "F2", "date": "2026-12-02"}]);
    stored.put("reservation", "r1", 3, json!({"owner": "kim", "status": "active", "flights": flights}));
    stored
}

fn turn(contract: &Contract, stored: &Stored, turn_key: &str, body: Value) -> Decision {
    let mut body = body;
    let fields = json!({"conversation": "c", "turn": turn_key, "actor": "kim", "at": "2026-11-30T03:00:00Z",
                        "time_zone": "UTC", "locale": "en-US", "entries": [{"kind": "user", "text": "Go ahead."}]});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    let valid = request::parse(contract, &body.to_string()).unwrap();
    let decision = turn::decide(contract, &valid, stored, &BTreeSet::new());
    // Every fact it read is on its record: decided again from the record alone, the same.
    let again = turn::decide(contract, &valid, &RecordedFacts::new(&decision.facts), &BTreeSet::new());
    assert_eq!(again, decision, "a replay from the facts read decides the same");
    decision
}

fn cancel(contract: &Contract, stored: &Stored) -> Decision {
    turn(contract, stored, "t1", json!({"acts": [{"op": "cancel_reservation", "args": {"reservation_id": "r1"}}]}))
}

fn inspect(contract: &Contract, stored: &Stored, depth: i64) -> Decision {
    turn(contract, stored, "t1", json!({"acts": [{"op": "inspect", "args": {"reservation_id": "r1", "depth": depth}}]}))
}

fn first_reason(decision: &Decision) -> (Verdict, String, String) {
    let act = &decision.response.acts[0];
    let reason = act.reasons.first();
    (
        act.verdict,
        reason.map_or(String::new(), |r| r.code.as_str().to_owned()),
        reason.and_then(|r| r.detail.clone()).unwrap_or_default(),
    )
}

fn read_keys(decision: &Decision, table: &str) -> Vec<String> {
    decision.facts.records.iter().filter(|r| r.table == table).map(|r| r.key.clone()).collect()
}

#[test]
fn a_ref_inside_a_row_s_list_is_followed_and_policy_decides_on_it() {
    let contract = contract();
    let open = cancel(&contract, &stored("available", "available"));
    assert_eq!(first_reason(&open).0, Verdict::Hold, "{:?}", open.response.acts[0]);
    // Each flight reached is a fact of the decision, with the revision it was read at.
    assert_eq!(read_keys(&open, "flight"), ["F1", "F2"]);
    let flown = cancel(&contract, &stored("available", "landed"));
    let act = &flown.response.acts[0];
    assert_eq!(
        (act.verdict, act.reasons[0].policies.clone()),
        (Verdict::Refuse, vec!["no_cancel_after_a_flight_flew".into()])
    );
}

#[test]
fn a_followed_row_changed_before_the_confirmation_refuses_it_as_stale() {
    let contract = contract();
    let mut stored = stored("available", "available");
    let held = cancel(&contract, &stored);
    let interaction = held.opened[0].clone();
    // The flights the question was asked against are among its revisions.
    assert_eq!(interaction.revisions.get("flight/F2"), Some(&7), "{:?}", interaction.revisions);
    stored.interactions.insert(interaction.id.clone(), interaction.clone());
    let confirm = json!({"answers": [{"interaction": interaction.id, "option": "confirm"}]});
    // Unchanged, the confirmation commits.
    let committed = turn(&contract, &stored, "t2", confirm.clone());
    assert_eq!(first_reason(&committed).0, Verdict::Commit, "{:?}", committed.response.acts);
    // The system of record moved flight F2 (a new revision) after the question: refused.
    stored.put("flight", "F2", 8, json!({"status": "available", "next": "F3"}));
    let stale = turn(&contract, &stored, "t2", confirm);
    let (verdict, code, detail) = first_reason(&stale);
    assert_eq!((verdict, code.as_str()), (Verdict::Refuse, "stale_revision"), "{detail}");
    assert!(detail.contains("flight/F2"), "{detail}");
    assert!(stale.writes.is_empty());
}

#[test]
fn a_missing_or_invisible_referenced_row_fails_closed() {
    let contract = contract();
    let mut missing = stored("available", "available");
    missing.rows.remove("flight/F2");
    let (verdict, code, detail) = first_reason(&cancel(&contract, &missing));
    assert_eq!((verdict, code.as_str()), (Verdict::Refuse, "related_row_missing"));
    assert!(detail.contains("table `flight` has no row `F2`"), "{detail}");
    // Lee's row is not Kim's to see: to Kim it does not exist.
    let (verdict, code, detail) = first_reason(&inspect(&contract, &stored("available", "available"), 5));
    assert_eq!((verdict, code.as_str()), (Verdict::Refuse, "related_row_missing"));
    assert!(detail.contains("table `customer` has no row `lee`"), "{detail}");
}

#[test]
fn references_are_followed_to_a_bounded_depth() {
    let contract = contract();
    let stored = stored("available", "cancelled");
    // Depth 1 reads F1, depth 2 F1 and F2, depth 3 F1 to F3.
    for (depth, reached) in [(1, vec!["F1"]), (2, vec!["F1", "F2"]), (3, vec!["F1", "F2", "F3"])] {
        let decision = inspect(&contract, &stored, depth);
        assert_eq!(first_reason(&decision).0, Verdict::Commit, "depth {depth}: {:?}", decision.response.acts);
        assert_eq!(read_keys(&decision, "flight"), reached, "depth {depth}");
    }
    let (verdict, code, detail) = first_reason(&inspect(&contract, &stored, 4));
    assert_eq!((verdict, code.as_str()), (Verdict::Refuse, "related_rows_limit"), "{detail}");
    assert!(detail.contains("deeper than 3"), "{detail}");
}

#[test]
fn no_more_than_64_rows_are_reached() {
    let contract = contract();
    let mut stored = stored("available", "available");
    let flights: Vec<Value> = (0..65)
        .map(|i| {
            stored.put("flight", &format!("G{i}"), 1, json!({"status": "available"}));
            json!({"flight_number": format!("G{i}"), "date": "2026-12-01"})
        })
        .collect();
    stored.put("reservation", "r1", 3, json!({"owner": "kim", "status": "active", "flights": flights}));
    let (verdict, code, detail) = first_reason(&cancel(&contract, &stored));
    assert_eq!((verdict, code.as_str()), (Verdict::Refuse, "related_rows_limit"), "{detail}");
    assert!(detail.contains("more than 64 rows"), "{detail}");
}

/// The contract with `from` replaced by `to`, loaded: its error, at `line:column`.
fn load_error(from: &str, to: &str) -> String {
    assert!(contract_text().contains(from), "{from}");
    Contract::load("related.toml", &contract_text().replacen(from, to, 1), &Policy(POLICY.into()))
        .unwrap_err()
        .to_string()
}

/// The 1-based line and column of the first `needle` after `after` in the contract with
/// `from` replaced by `to`.
fn place(from: &str, to: &str, after: &str, needle: &str) -> String {
    let text = contract_text().replacen(from, to, 1);
    let start = text.find(after).unwrap();
    let offset = start + text[start..].find(needle).unwrap();
    let line = text[..offset].matches('\n').count() + 1;
    let column = text[..offset].rsplit('\n').next().unwrap().chars().count() + 1;
    format!("related.toml:{line}:{column}:")
}

#[test]
fn a_misspelt_field_of_a_typed_table_in_a_cel_path_stops_the_load_at_its_place() {
    // Below `row(…)`.
    let (from, to) =
        ("row('flight', f.flight_number).status == 'landed'", "row('flight', f.flight_number).statsu == 'landed'");
    let error = load_error(from, to);
    assert!(error.starts_with(&place(from, to, "[expressions]", "statsu")), "{error}");
    assert!(error.contains("has no field `statsu` (its fields: key, next, status)"), "{error}");
    // Below a record argument, through a comprehension over a typed list.
    let (from, to) = ("all(f, row('flight', f.flight_number)", "all(f, row('flight', f.flight_numbr)");
    let error = load_error(from, to);
    assert!(error.starts_with(&place(from, to, "airline_cancelled", "flight_numbr")), "{error}");
    assert!(
        error.contains("`reservation_id.flights` has no field `flight_numbr` (its fields: date, flight_number)"),
        "{error}"
    );
    // Below the actor.
    let (from, to) = ("row('customer', 'lee').name", "actor.nam");
    let error = load_error(from, to);
    assert!(error.contains("`actor` has no field `nam` (its fields: key, name)"), "{error}");
}

#[test]
fn a_row_call_must_name_a_table_its_key_refers_to() {
    let error = load_error(
        "row('flight', f.flight_number).status == 'landed'",
        "row('flights', f.flight_number).status == 'landed'",
    );
    assert!(error.contains("no table is named `flights` (tables: customer, flight, reservation)"), "{error}");
    let error = load_error("row('customer', 'lee')", "row('customer', reservation_id.flights[0].flight_number)");
    assert!(error.contains("refers to a row of `flight`, not of `customer`"), "{error}");
    let error = load_error("row('customer', 'lee')", "row(reservation_id.status, 'lee')");
    assert!(error.contains("takes a table's name, as a string literal, and a key"), "{error}");
    let error = load_error("row('customer', 'lee')", "row('customer', 'lee', 1)");
    assert!(error.contains("takes a table's name, as a string literal, and a key"), "{error}");
}
