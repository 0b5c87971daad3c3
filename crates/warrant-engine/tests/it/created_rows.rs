//! Rows an effect creates and deletes, through the engine and a real store (SQLite and
//! PostgreSQL): a booking's row, under a key minted from the turn, is inserted with its
//! payments taken from the user's cards; a replay decides the turn the same; a failed outcome
//! deletes the row again and gives the cards back; a deleted row is gone from the store.

use serde_json::{Value, json};
use warrant_core::turn::Verdict;
use warrant_engine::{Engine, ModelSource, load_contract};
use warrant_store::{PgStore, SqliteStore, Store};

use crate::PgSchema;
use crate::reverts::decide;

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
fields.payment_methods = { kind = "map", of = { kind = "object", fields = { source = { kind = "text" }, amount = { kind = "money", optional = true } } } }

[[records.table]]
name = "reservation"
file = "reservations.json"
entity = "Reservation"
owner = "user_id"
fields.user_id = { kind = "text" }
fields.payment_history = { kind = "list", of = { kind = "object", fields = { payment_id = { kind = "text" }, amount = { kind = "money" } } } }

[policies]
files = ["policy.cedar"]

[[operation]]
name = "book"

[operation.keys.booking_id]
length = 6

[operation.args.payment_methods]
kind = "objects"
fields.payment_id = { kind = "string" }
fields.amount = { kind = "money", plain = true }

[[operation.effect]]
create = "reservation"
key = "booking_id"
cel = '{"user_id": actor.key, "payment_history": payment_methods.map(p, {"payment_id": p.payment_id, "amount": p.amount})}'

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
cel = "booking_id"

[[operation]]
name = "forget"
args.reservation_id = { kind = "record", table = "reservation" }
resource = "reservation_id"

[[operation.effect]]
delete = "reservation_id"
"#;

/// The contract's folder, with its data files and policy.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("contract.toml", CONTRACT);
    write("policy.cedar", "permit (principal, action, resource);");
    write(
        "users.json",
        r#"{"ana": {"reservations": ["R1"], "payment_methods": {"gift_card_1": {"source": "gift_card", "amount": 150},
            "certificate_2": {"source": "certificate", "amount": 100}}}}"#,
    );
    write("reservations.json", r#"{"R1": {"user_id": "ana", "payment_history": []}}"#);
    dir
}

fn request(turn: &str, op: &str, args: Value) -> String {
    json!({
        "conversation": "c", "turn": turn, "actor": "ana",
        "at": "2026-11-29T15:00:00Z", "time_zone": "UTC", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Book it."}],
        "acts": [{"op": op, "args": args}],
    })
    .to_string()
}

fn created_and_deleted_rows_reach_the_store<S: Store, R: Store>(mut engine: Engine<S>, mut reader: R) {
    let paid = json!({"payment_methods": [{"payment_id": "gift_card_1", "amount": 20.5}, {"payment_id": "certificate_2", "amount": 100}]});
    let booked = decide(&mut engine, &request("t1", "book", paid));
    assert_eq!(booked.acts[0].verdict, Verdict::Commit, "{:?}", booked.acts);
    let user = reader.record("user", "ana").unwrap().unwrap();
    let key = user.value["reservations"][1].as_str().unwrap().to_owned();
    assert_eq!(key.len(), 6);
    let row = reader.record("reservation", &key).unwrap().unwrap();
    assert_eq!(row.revision, 1);
    assert_eq!(row.value["payment_history"][0], json!({"payment_id": "gift_card_1", "amount": 20.5}));
    assert_eq!(user.value["payment_methods"]["gift_card_1"]["amount"], json!(129.5));
    assert!(user.value["payment_methods"].get("certificate_2").is_none());

    // A replay decides every turn as recorded, the minted key included.
    let report = engine.replay().unwrap();
    assert_eq!((report.turns, report.identical, report.changes.len()), (1, 1, 0), "{:?}", report.changes);

    // Reported failed: the booking's row is deleted again, and the cards are as they were.
    let effect = booked.effects[0].id.clone();
    let result = serde_json::to_value(engine.report_outcome(&effect, "failed", &[]).unwrap()).unwrap();
    assert_eq!(result["reverted"], true, "{result}");
    assert_eq!(reader.record("reservation", &key).unwrap(), None);
    let user = reader.record("user", "ana").unwrap().unwrap();
    assert_eq!(user.value["payment_methods"]["certificate_2"], json!({"source": "certificate", "amount": 100}));
    assert_eq!(user.value["reservations"], json!(["R1"]));

    // A row deleted by an effect is gone from the store.
    let forgotten = decide(&mut engine, &request("t2", "forget", json!({"reservation_id": "R1"})));
    assert_eq!(forgotten.acts[0].verdict, Verdict::Commit, "{:?}", forgotten.acts);
    assert_eq!(reader.record("reservation", "R1").unwrap(), None);
    let again = decide(&mut engine, &request("t3", "forget", json!({"reservation_id": "R1"})));
    assert_eq!(again.acts[0].reasons[0].code.as_str(), "unknown_record", "{:?}", again.acts);
}

#[test]
fn sqlite_created_and_deleted_rows_reach_the_store() {
    let dir = folder();
    let path = dir.path().join("warrant.sqlite");
    let (contract, at) = load_contract(&dir.path().join("contract.toml")).unwrap();
    let engine = crate::build(contract, &at, SqliteStore::open(&path).unwrap(), ModelSource::None);
    created_and_deleted_rows_reach_the_store(engine, SqliteStore::open(&path).unwrap());
}

#[test]
fn postgres_created_and_deleted_rows_reach_the_store() {
    let dir = folder();
    let pg = PgSchema::fresh();
    let (contract, at) = load_contract(&dir.path().join("contract.toml")).unwrap();
    let engine = crate::build(contract, &at, pg.connect(), ModelSource::None);
    let reader: PgStore = pg.connect();
    created_and_deleted_rows_reach_the_store(engine, reader);
}
