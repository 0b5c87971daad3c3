//! The effect steps a booking, a cancellation and a certificate need (τ-bench's airline): a row
//! created under a key minted from the turn, or taken from an argument; a row deleted; a map
//! entry removed; a value appended; a quantity added per element (`each`) through a path keyed
//! by a value; steps conditioned on a path's presence and on CEL. Each is checked when the
//! contract loads, and its rows against their schemas before the act commits.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::records::Record;
use warrant_core::request;

use crate::Rows;
use warrant_core::turn::{self, Decision, RowWrite, Verdict};

const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "user"

[records]
currency = "USD"

[[records.table]]
name = "user"
file = "users.json"
entity = "User"
fields.reservations = { kind = "list", of = { kind = "text" } }
fields.payment_methods = { kind = "map", of = { kind = "object", fields = { source = { kind = "enum", values = ["gift_card", "certificate", "credit_card"] }, amount = { kind = "money", optional = true }, id = { kind = "text" } } } }

[[records.table]]
name = "flight"
file = "flights.json"
entity = "Flight"
fields.price = { kind = "money" }

[[records.table]]
name = "reservation"
file = "reservations.json"
entity = "Reservation"
owner = "user_id"
key = "reservation_id"
fields.reservation_id = { kind = "text" }
fields.user_id = { kind = "text" }
fields.status = { kind = "enum", values = ["active", "cancelled"] }
fields.created_at = { kind = "instant" }
fields.bags = { kind = "integer" }
fields.flights = { kind = "list", of = { kind = "object", fields = { flight_number = { kind = "text" }, date = { kind = "date" }, price = { kind = "money" } } } }
fields.payment_history = { kind = "list", of = { kind = "object", fields = { payment_id = { kind = "text" }, amount = { kind = "money" } } } }

[policies]
files = ["policy.cedar"]

[[operation]]
name = "book"

[operation.keys.booking_id]
length = 6

[operation.args.flights]
kind = "objects"
fields.flight_number = { kind = "record", table = "flight" }
fields.date = { kind = "date", plain = true }

[operation.args.payment_methods]
kind = "objects"
fields.payment_id = { kind = "string" }
fields.amount = { kind = "money", plain = true }

[[operation.effect]]
create = "reservation"
key = "booking_id"
as = "booking"
cel = '''{"reservation_id": booking_id, "user_id": actor.key, "status": "active", "created_at": now, "bags": 0,
  "flights": flights.map(f, {"flight_number": f.flight_number.key, "date": f.date, "price": f.flight_number.price}),
  "payment_history": payment_methods.map(p, {"payment_id": p.payment_id, "amount": p.amount})}'''

[[operation.effect]]
each = "payment_methods"
add = "actor.payment_methods[item.payment_id].amount"
cel = "-item.amount"
type = "money"
when = { "actor.payment_methods[item.payment_id].source" = "gift_card" }

[[operation.effect]]
each = "payment_methods"
remove = "actor.payment_methods[item.payment_id]"
when = { "actor.payment_methods[item.payment_id].source" = "certificate" }

[[operation.effect]]
append = "actor.reservations"
cel = "booking.key"

[[operation]]
name = "cancel"
args.reservation_id = { kind = "record", table = "reservation" }
resource = "reservation_id"

[[operation.effect]]
each = "reservation_id.payment_history"
append = "reservation_id.payment_history"
cel = '{"payment_id": item.payment_id, "amount": -item.amount}'

[[operation.effect]]
set = "reservation_id.status"
value = "cancelled"

[[operation]]
name = "forget"
args.reservation_id = { kind = "record", table = "reservation" }
resource = "reservation_id"

[[operation.effect]]
delete = "reservation_id"

[[operation]]
name = "restore"
args.code = { kind = "string" }

[[operation.effect]]
create = "reservation"
key = "code"
entry.reservation_id = { arg = "code" }
entry.user_id = { value = "ana" }
entry.status = { value = "active" }
entry.created_at = { value = "2026-11-30T03:00:00Z" }
entry.bags = { value = 0 }
entry.flights = { value = [] }
entry.payment_history = { value = [] }

[[operation]]
name = "send_certificate"
args.amount = { kind = "money", plain = true }

[operation.keys.certificate]
prefix = "certificate_"
length = 7
alphabet = "0123456789"

[[operation.effect]]
set = "actor.payment_methods[certificate]"
cel = '{"source": "certificate", "amount": amount, "id": certificate}'
when_absent = ["actor.payment_methods[certificate]"]

[[operation]]
name = "add_bags"
args.reservation_id = { kind = "record", table = "reservation" }
args.bags = { kind = "integer", min = 0, max = 9 }
args.payment_id = { kind = "string" }
resource = "reservation_id"

[[operation.derive]]
name = "fee"
cel = "50 * (bags - reservation_id.bags) * 100"
type = "money"

[[operation.effect]]
set = "reservation_id.bags"
arg = "bags"

[[operation.effect]]
append = "reservation_id.payment_history"
cel = '{"payment_id": payment_id, "amount": fee}'
if = "fee != 0"
when_present = ["actor.payment_methods[payment_id]"]
"#;

struct Files;
impl ContractFiles for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "policy.cedar" => Ok("permit (principal, action, resource);".into()),
            other => Err(format!("no `{other}`")),
        }
    }
}

fn load(text: &str) -> Result<Contract, warrant_core::ContractError> {
    Contract::load("steps.toml", text, &Files)
}

fn facts() -> Rows {
    let rows = [
        (
            "user",
            "ana",
            json!({"reservations": ["R1"], "payment_methods": {
            "gift_card_1": {"source": "gift_card", "amount": 150, "id": "gift_card_1"},
            "certificate_2": {"source": "certificate", "amount": 100, "id": "certificate_2"},
            "credit_card_3": {"source": "credit_card", "id": "credit_card_3"}}}),
        ),
        ("flight", "HAT001", json!({"price": 120.5})),
        (
            "reservation",
            "R1",
            json!({"reservation_id": "R1", "user_id": "ana", "status": "active",
            "created_at": "2026-11-01T10:00:00Z", "bags": 1,
            "flights": [{"flight_number": "HAT001", "date": "2026-12-05", "price": 120.5}],
            "payment_history": [{"payment_id": "gift_card_1", "amount": 70.25}, {"payment_id": "credit_card_3", "amount": 50.25}]}),
        ),
    ];
    Rows(
        rows.into_iter()
            .map(|(t, k, v)| (format!("{t}/{k}"), Record { table: t.into(), key: k.into(), revision: 3, value: v }))
            .collect(),
    )
}

fn decide_in(turn_key: &str, op: &str, args: Value) -> Decision {
    let contract = load(CONTRACT).unwrap();
    let body = json!({
        "conversation": "c", "turn": turn_key, "actor": "ana",
        "at": "2026-11-30T03:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Please do it."}],
        "acts": [{"op": op, "args": args}],
    });
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    turn::decide(&contract, &valid, &facts(), &BTreeSet::new())
}

fn decide(op: &str, args: Value) -> Decision {
    decide_in("t", op, args)
}

fn write<'d>(decision: &'d Decision, table: &str) -> &'d RowWrite {
    decision
        .writes
        .iter()
        .find(|w| w.row.table == table)
        .unwrap_or_else(|| panic!("no write to {table}: {:?}", decision.writes))
}

fn booking() -> Value {
    json!({"flights": [{"flight_number": "HAT001", "date": "2026-12-05"}],
           "payment_methods": [{"payment_id": "gift_card_1", "amount": 20.5}, {"payment_id": "certificate_2", "amount": 100}]})
}

#[test]
fn a_booking_creates_its_row_under_a_minted_key_and_pays_from_each_card() {
    let decision = decide("book", booking());
    assert_eq!(decision.response.acts[0].verdict, Verdict::Commit, "{:?}", decision.response.acts);
    let created = write(&decision, "reservation");
    let key = created.row.key.clone();
    assert_eq!(key.len(), 6, "{key}");
    assert!(key.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()), "{key}");
    // Created: written expecting no row, from nothing.
    assert_eq!((created.expected_revision, &created.before), (0, &Value::Null));
    // The CEL map's minor units are written as the table's amounts; `now` as an instant.
    assert_eq!(
        created.value,
        json!({"reservation_id": key, "user_id": "ana", "status": "active", "created_at": "2026-11-30T03:00:00Z", "bags": 0,
               "flights": [{"flight_number": "HAT001", "date": "2026-12-05", "price": 120.5}],
               "payment_history": [{"payment_id": "gift_card_1", "amount": 20.5}, {"payment_id": "certificate_2", "amount": 100.0}]})
    );
    // The gift card paid 20.50 of its 150; the certificate was used up, so it is gone; the
    // new key is appended to the user's reservations.
    let user = &write(&decision, "user").value;
    assert_eq!(user["payment_methods"]["gift_card_1"]["amount"], json!(129.5));
    assert!(user["payment_methods"].get("certificate_2").is_none(), "{user}");
    assert_eq!(user["payment_methods"]["credit_card_3"], json!({"source": "credit_card", "id": "credit_card_3"}));
    assert_eq!(user["reservations"], json!(["R1", key]));
    // The effect record carries the new row, changed whole from nothing.
    let record = &decision.effects[0];
    let change = record.changes.iter().find(|c| c.row.table == "reservation").unwrap();
    assert_eq!(change.fields.len(), 1);
    assert!(change.fields[0].path.is_empty() && change.fields[0].before.is_none(), "{change:?}");
    assert_eq!(change.fields[0].after.as_ref(), Some(&created.value));
    // The minted row was read as absent: a replay reads the same fact.
    assert!(decision.facts.records.iter().any(|r| r.key == key && r.revision == 0 && r.value.is_null()));
}

#[test]
fn a_minted_key_is_the_same_for_the_same_turn_and_another_for_another() {
    let key = |turn_key: &str| write(&decide_in(turn_key, "book", booking()), "reservation").row.key.clone();
    assert_eq!(key("t"), key("t"));
    assert_ne!(key("t"), key("u"));
    let certificate = decide("send_certificate", json!({"amount": 50}));
    let methods = &write(&certificate, "user").value["payment_methods"];
    let minted: Vec<&String> = methods
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("certificate_") && *k != "certificate_2")
        .collect();
    assert_eq!(minted.len(), 1, "{methods}");
    assert!(minted[0].len() == "certificate_".len() + 7 && minted[0][12..].chars().all(|c| c.is_ascii_digit()));
    assert_eq!(methods[minted[0]], json!({"source": "certificate", "amount": 50.0, "id": minted[0]}));
}

#[test]
fn a_cancellation_refunds_each_payment_of_the_row() {
    let decision = decide("cancel", json!({"reservation_id": "R1"}));
    assert_eq!(decision.response.acts[0].verdict, Verdict::Commit, "{:?}", decision.response.acts);
    let row = &write(&decision, "reservation").value;
    assert_eq!(row["status"], "cancelled");
    assert_eq!(
        row["payment_history"],
        json!([{"payment_id": "gift_card_1", "amount": 70.25}, {"payment_id": "credit_card_3", "amount": 50.25},
               {"payment_id": "gift_card_1", "amount": -70.25}, {"payment_id": "credit_card_3", "amount": -50.25}])
    );
}

#[test]
fn a_deleted_row_is_written_as_null_at_the_revision_read() {
    let decision = decide("forget", json!({"reservation_id": "R1"}));
    assert_eq!(decision.response.acts[0].verdict, Verdict::Commit, "{:?}", decision.response.acts);
    let deleted = write(&decision, "reservation");
    assert_eq!((deleted.expected_revision, &deleted.value), (3, &Value::Null));
    assert_eq!(deleted.before["reservation_id"], "R1");
    let change = &decision.effects[0].changes[0];
    assert!(change.fields[0].path.is_empty() && change.fields[0].after.is_none(), "{change:?}");
}

#[test]
fn a_row_created_under_a_key_that_exists_is_refused_record_exists() {
    let taken = decide("restore", json!({"code": "R1"}));
    let act = &taken.response.acts[0];
    assert_eq!((act.verdict, act.reasons[0].code.as_str()), (Verdict::Refuse, "record_exists"), "{act:?}");
    assert!(taken.writes.is_empty() && taken.effects.is_empty());
    let fresh = decide("restore", json!({"code": "R9"}));
    assert_eq!(fresh.response.acts[0].verdict, Verdict::Commit, "{:?}", fresh.response.acts);
    assert_eq!(write(&fresh, "reservation").value["reservation_id"], "R9");
    // A row that breaks its table's schema is refused before anything is written.
    let text = CONTRACT.replace("entry.status = { value = \"active\" }\n", "");
    let contract = load(&text);
    assert!(contract.unwrap_err().to_string().contains("lacks its field `status`"));
    let broken =
        CONTRACT.replace("\"status\": \"active\", \"created_at\": now", "\"status\": \"booked\", \"created_at\": now");
    let contract = load(&broken).unwrap();
    let body = json!({"conversation": "c", "turn": "t", "actor": "ana", "at": "2026-11-30T03:00:00Z", "time_zone": "UTC",
        "locale": "en-US", "entries": [{"kind": "user", "text": "Book."}], "acts": [{"op": "book", "args": booking()}]});
    let valid = request::parse(&contract, &body.to_string()).unwrap();
    let refused = turn::decide(&contract, &valid, &facts(), &BTreeSet::new());
    assert_eq!(
        refused.response.acts[0].reasons[0].code.as_str(),
        "effect_breaks_schema",
        "{:?}",
        refused.response.acts
    );
    assert!(refused.writes.is_empty());
}

#[test]
fn conditions_on_presence_and_cel_decide_whether_a_step_applies() {
    let two_bags = decide("add_bags", json!({"reservation_id": "R1", "bags": 3, "payment_id": "credit_card_3"}));
    let row = &write(&two_bags, "reservation").value;
    assert_eq!(row["bags"], 3);
    assert_eq!(row["payment_history"][2], json!({"payment_id": "credit_card_3", "amount": 100.0}));
    // No fee: `if` does not hold, nothing appended.
    let same = decide("add_bags", json!({"reservation_id": "R1", "bags": 1, "payment_id": "credit_card_3"}));
    assert!(same.writes.is_empty(), "{:?}", same.writes);
    // A payment method the user lacks: `when_present` does not hold.
    let unknown = decide("add_bags", json!({"reservation_id": "R1", "bags": 2, "payment_id": "paypal_9"}));
    let row = &write(&unknown, "reservation").value;
    assert_eq!((row["bags"].clone(), row["payment_history"].as_array().unwrap().len()), (json!(2), 2));
}

#[test]
fn each_new_step_is_checked_when_the_contract_loads() {
    let cases = [
        (
            "add = \"actor.payment_methods[item.payment_id].amount\"",
            "add = \"actor.reservations[item.payment_id].amount\"",
            "not a map",
        ),
        (
            "remove = \"actor.payment_methods[item.payment_id]\"",
            "remove = \"actor.payment_methods\"",
            "must end in a keyed segment",
        ),
        (
            "create = \"reservation\"\nkey = \"code\"",
            "create = \"reservatio\"\nkey = \"code\"",
            "table `reservatio` is not declared",
        ),
        (
            "create = \"reservation\"\nkey = \"code\"",
            "create = \"reservation\"\nkey = \"cod\"",
            "`cod` is no argument, minted key or `item`",
        ),
        ("as = \"booking\"", "as = \"flights\"", "needs a name nothing else has"),
        (
            "when_present = [\"actor.payment_methods[payment_id]\"]",
            "when_present = [\"actor.payment_method[payment_id]\"]",
            "has no field `payment_method`",
        ),
        (
            "cel = \"-item.amount\"\ntype = \"money\"",
            "cel = \"-item.amount\"",
            "needs `type = \"money\"` or `\"integer\"`",
        ),
        ("each = \"reservation_id.payment_history\"", "each = \"reservation_id.flight\"", "has no field `flight`"),
        ("cel = \"booking.key\"", "cel = \"booking.key\"\nvalue = 3", "needs `entry` fields, or exactly one of"),
        (
            "delete = \"reservation_id\"",
            "delete = \"reservation_id\"\nvalue = 3",
            "effect `delete` does not take `value`",
        ),
        ("[operation.keys.booking_id]\nlength = 6", "[operation.keys.booking_id]\nlength = 0", "`length` is 1 to 64"),
        ("each = \"payment_methods\"\nremove", "remove", "`[item.payment_id]` names the element of `each`"),
    ];
    for (from, to, expected) in cases {
        let text = CONTRACT.replacen(from, to, 1);
        assert_ne!(text, CONTRACT, "{from}");
        let error = load(&text).unwrap_err().to_string();
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(error.starts_with("steps.toml:"), "{error}");
    }
    // A path's fault is placed at the path, on its line.
    let misspelt = CONTRACT.replacen(
        "remove = \"actor.payment_methods[item.payment_id]\"",
        "remove = \"actor.payment_method[item.payment_id]\"",
        1,
    );
    let error = load(&misspelt).unwrap_err().to_string();
    let line = CONTRACT.lines().position(|l| l.starts_with("remove = ")).unwrap() + 1;
    assert!(error.starts_with(&format!("steps.toml:{line}:")), "{error}");
}
