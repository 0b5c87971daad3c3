//! The turn's clock in policy (issue 17, item 1): `context.now` and `context.today` reach Cedar
//! as `datetime`s and `context.time_zone` as a string; a typed row's `instant` and `date` fields
//! are `datetime`s there too, so a 24-hour rule and a date rule are written in Cedar; a CEL
//! quantity of type `instant` is a `datetime` to the policy; an effect writes the turn's instant.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::records::Record;
use warrant_core::request;
use warrant_core::turn::{self, Decision, Verdict};

use crate::{Policy, Rows};

/// The contract after its head, `crate::CUSTOMERS` ([`contract_text`]).
const BODY: &str = r#"

[[records.table]]
name = "booking"
file = "bookings.json"
entity = "Booking"
fields.owner = { kind = "ref", table = "customer" }
fields.created_at = { kind = "instant" }
fields.depart_on = { kind = "date" }
fields.status = { kind = "enum", values = ["active", "cancelled"] }
fields.cancelled_at = { kind = "instant", optional = true }

[policies]
files = ["policy.cedar"]

[[operation]]
name = "cancel"
resource = "booking_id"
args.booking_id = { kind = "record", table = "booking" }
derive = [
  { name = "deadline", cel = "timestamp(booking_id.created_at) + duration('24h')", type = "instant" },
]

[[operation.effect]]
set = "booking_id.status"
value = "cancelled"

[[operation.effect]]
set = "booking_id.cancelled_at"
cel = "now"
type = "instant"
"#;

const POLICY: &str = r#"
permit (principal, action, resource);

@id("cancel_within_24_hours_of_booking")
forbid (principal, action == Action::"cancel", resource)
when { context.now > resource.created_at.offset(duration("24h")) };

@id("not_after_departure")
forbid (principal, action == Action::"cancel", resource)
when { resource.depart_on < context.today };

@id("deadline_passed")
forbid (principal, action == Action::"cancel", resource)
when { context.now > context.derived.deadline };

@id("paris_only")
forbid (principal, action == Action::"cancel", resource)
unless { context.time_zone == "Europe/Paris" };
"#;

/// The contract's text: the head every test contract here shares, then its own sections.
fn contract_text() -> String {
    format!("{}{BODY}", crate::CUSTOMERS)
}

fn contract() -> Contract {
    Contract::load("clock.toml", &contract_text(), &Policy(POLICY.into())).unwrap()
}

fn booking(created_at: &str, depart_on: &str) -> Value {
    json!({"owner": "kim", "created_at": created_at, "depart_on": depart_on, "status": "active"})
}

fn decide(contract: &Contract, booking: Value, at: &str) -> Decision {
    let mut rows = BTreeMap::new();
    let kim = json!({"name": "Kim"});
    rows.insert(
        "customer/kim".to_owned(),
        Record { table: "customer".into(), key: "kim".into(), revision: 1, value: kim },
    );
    rows.insert(
        "booking/b1".to_owned(),
        Record { table: "booking".into(), key: "b1".into(), revision: 2, value: booking },
    );
    let body = json!({
        "conversation": "c", "turn": "t", "actor": "kim",
        "at": at, "time_zone": "Europe/Paris", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel my booking."}],
        "acts": [{"op": "cancel", "args": {"booking_id": "b1"}}],
    });
    let valid = request::parse(contract, &body.to_string()).unwrap();
    turn::decide(contract, &valid, &Rows(rows), &BTreeSet::new())
}

fn outcome(decision: &Decision) -> (Verdict, Vec<String>) {
    let act = &decision.response.acts[0];
    (act.verdict, act.reasons.first().map_or(vec![], |r| r.policies.clone()))
}

#[test]
fn the_24_hour_rule_is_written_in_cedar_against_the_turn_s_clock() {
    let contract = contract();
    // Booked at 10:00 (+02:00), that is 08:00Z; the turn is 23 hours later: within the window.
    let within = decide(&contract, booking("2026-11-29T10:00:00+02:00", "2026-12-20"), "2026-11-30T07:00:00Z");
    assert_eq!(outcome(&within), (Verdict::Commit, vec![]), "{:?}", within.response.acts[0]);
    // 24 hours and one second after the booking: refused, naming the rule, and the CEL
    // deadline (an instant quantity, a datetime to Cedar) says the same.
    let late = decide(&contract, booking("2026-11-29T10:00:00+02:00", "2026-12-20"), "2026-11-30T08:00:01Z");
    let rules = vec!["cancel_within_24_hours_of_booking".to_owned(), "deadline_passed".to_owned()];
    assert_eq!(outcome(&late), (Verdict::Refuse, rules));
    // Exactly 24 hours later is still within it.
    let edge = decide(&contract, booking("2026-11-29T10:00:00+02:00", "2026-12-20"), "2026-11-30T08:00:00Z");
    assert_eq!(outcome(&edge).0, Verdict::Commit);
}

#[test]
fn a_date_field_compares_with_the_turn_s_local_date() {
    let contract = contract();
    // 23:30Z on the 29th is already the 30th in Paris: a departure on the 29th has passed.
    let passed = decide(&contract, booking("2026-11-29T12:00:00Z", "2026-11-29"), "2026-11-29T23:30:00Z");
    assert_eq!(outcome(&passed), (Verdict::Refuse, vec!["not_after_departure".to_owned()]));
    // A departure on the local date itself has not passed.
    let today = decide(&contract, booking("2026-11-29T12:00:00Z", "2026-11-30"), "2026-11-29T23:30:00Z");
    assert_eq!(outcome(&today).0, Verdict::Commit, "{:?}", today.response.acts[0]);
}

#[test]
fn an_effect_writes_the_turn_s_instant() {
    let decision = decide(&contract(), booking("2026-11-29T10:00:00Z", "2026-12-20"), "2026-11-30T03:00:00.250Z");
    let write = decision.writes.iter().find(|w| w.row.key == "b1").unwrap();
    assert_eq!(write.value["status"], json!("cancelled"));
    assert_eq!(write.value["cancelled_at"], json!("2026-11-30T03:00:00.250Z"));
}

#[test]
fn the_cedar_schema_declares_the_clock_and_instants_as_datetimes() {
    let contract = contract();
    let schema = contract.cedar_schema();
    let datetime = json!({"type": "Extension", "name": "datetime"});
    let context = &schema[""]["actions"]["cancel"]["appliesTo"]["context"]["attributes"];
    assert_eq!(context["now"], datetime);
    assert_eq!(context["today"], datetime);
    assert_eq!(context["time_zone"], json!({"type": "String"}));
    assert_eq!(context["derived"]["attributes"]["deadline"], datetime);
    let booking = &schema[""]["entityTypes"]["Booking"]["shape"]["attributes"];
    assert_eq!(booking["created_at"], datetime);
    assert_eq!(booking["depart_on"], datetime);
    assert_eq!(booking["cancelled_at"], json!({"type": "Extension", "name": "datetime", "required": false}));
    assert_eq!(booking["owner"], json!({"type": "String"}));
}

#[test]
fn a_policy_comparing_an_instant_with_a_string_stops_the_load() {
    let policy = "permit (principal, action, resource);\n\
                  forbid (principal, action, resource) when { resource.created_at < \"2026-11-29\" };\n";
    let error = Contract::load("clock.toml", &contract_text(), &Policy(policy.into())).unwrap_err().to_string();
    assert!(error.contains("policy.cedar:2:"), "{error}");
}

#[test]
fn an_instant_quantity_or_effect_is_checked_as_one() {
    // Writing an instant into an enum field stops the load.
    let bad = contract_text().replace("set = \"booking_id.cancelled_at\"", "set = \"booking_id.status\"");
    let error = Contract::load("clock.toml", &bad, &Policy(POLICY.into())).unwrap_err().to_string();
    assert!(error.contains("is enum, not an instant or text"), "{error}");
    // A quantity declared an instant whose value is none refuses the act.
    let wrong = contract_text().replace("timestamp(booking_id.created_at) + duration('24h')", "booking_id.status");
    let contract = Contract::load("clock.toml", &wrong, &Policy(POLICY.into())).unwrap();
    let decision = decide(&contract, booking("2026-11-29T10:00:00Z", "2026-12-20"), "2026-11-30T03:00:00Z");
    let reason = &decision.response.acts[0].reasons[0];
    assert_eq!(reason.code.as_str(), "expression_wrong_type");
    assert!(reason.detail.as_deref().unwrap().contains("declared `instant`"), "{reason:?}");
}
