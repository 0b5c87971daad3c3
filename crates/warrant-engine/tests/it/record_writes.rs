//! Writes from the system of record through the engine, on SQLite and on PostgreSQL: a row put,
//! deleted and imported under its preconditions, each row checked as seeding checks a data
//! file's; and a put between a hold and its confirmation, which makes the confirmation stale and
//! the next turn decide on the new row.

use serde_json::{Value, json};
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, EngineError, ModelSource, TurnResult, load_contract};
use warrant_store::{Precondition, RecordConflict, SqliteStore, Store};

use crate::{PgSchema, retail_dir};

const USER: &str = "yusuf_rossi_9620";
const ORDER: &str = "#W6247578";

fn request(turn: &str, acts: Value, answers: Value) -> String {
    json!({
        "conversation": "sor", "turn": turn, "actor": USER,
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Please cancel my order, I no longer need it."}],
        "acts": acts, "answers": answers,
    })
    .to_string()
}

fn decide<S: Store>(engine: &mut Engine<S>, request: &str) -> TurnResponse {
    match engine.turn(request).unwrap() {
        TurnResult::Decided { response, .. } => response,
        TurnResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

fn codes(response: &TurnResponse) -> Vec<String> {
    response.acts.iter().flat_map(|a| a.reasons.iter().map(|r| r.code.as_str().to_owned())).collect()
}

fn a_put_between_a_hold_and_its_confirmation_makes_it_stale<S: Store>(mut engine: Engine<S>) {
    let cancel = json!([{"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}}]);
    let held = decide(&mut engine, &request("propose", cancel.clone(), json!([])));
    assert_eq!(held.acts[0].verdict, Verdict::Hold, "{:?}", held.acts);
    let interaction = held.interactions[0].id.clone();

    // The order ships in the system of record while the user is asked.
    let before = engine.record("order", ORDER).unwrap().unwrap();
    let mut shipped = before.value.clone();
    shipped["status"] = json!("delivered");
    let written = engine.put_record("order", ORDER, &shipped, Precondition::IfMatch(before.revision)).unwrap();
    assert_eq!((written.table.as_str(), written.key.as_str()), ("order", ORDER));
    assert!(written.revision > before.revision);

    let answer = json!([{"interaction": interaction, "option": "confirm"}]);
    let confirmed = decide(&mut engine, &request("confirm", json!([]), answer));
    assert!(confirmed.effects.is_empty(), "nothing commits: {confirmed:?}");
    assert!(codes(&confirmed).contains(&"stale_revision".to_owned()), "{:?}", confirmed.acts);
    assert_eq!(engine.record("order", ORDER).unwrap().unwrap().value["status"], "delivered");

    // The next turn decides on the row as the system of record left it: not pending.
    let again = decide(&mut engine, &request("again", cancel, json!([])));
    assert_eq!(again.acts[0].verdict, Verdict::Refuse, "{:?}", again.acts);
    assert!(!codes(&again).contains(&"stale_revision".to_owned()), "{:?}", again.acts);
}

fn writes_are_checked_and_conditional<S: Store>(mut engine: Engine<S>) {
    let row = engine.record("order", ORDER).unwrap().unwrap();
    // A stale If-Match, a create over a live row, a delete at another revision: nothing written.
    let stale = engine.put_record("order", ORDER, &row.value, Precondition::IfMatch(row.revision + 7));
    assert!(matches!(stale, Err(EngineError::Conflict(RecordConflict::Revision { .. }))), "{stale:?}");
    let taken = engine.put_record("order", ORDER, &row.value, Precondition::IfNoneMatch);
    assert!(matches!(taken, Err(EngineError::Conflict(RecordConflict::Present { .. }))), "{taken:?}");
    let gone = engine.delete_record("order", "#nope", 1);
    assert!(matches!(gone, Err(EngineError::Conflict(RecordConflict::Absent { .. }))), "{gone:?}");
    assert_eq!(engine.record("order", ORDER).unwrap().unwrap(), row);

    // A row checked as a data file's: money exact in the contract's currency, named by field.
    let mut bad = row.value.clone();
    bad["items"][0]["price"] = json!(47.845);
    match engine.put_record("order", ORDER, &bad, Precondition::Any) {
        Err(EngineError::InvalidRow(error)) => {
            assert_eq!(error.field(), Some("items[0].price"));
            assert!(error.to_string().contains("`order`") && error.to_string().contains(ORDER), "{error}");
        }
        other => panic!("{other:?}"),
    }
    let item = engine.put_record("item", "x1", &json!({"price": 3}), Precondition::Any);
    assert!(matches!(&item, Err(EngineError::InvalidRow(e)) if e.field() == Some("product_id")), "{item:?}");
    assert!(matches!(engine.record("orders", ORDER), Err(EngineError::UnknownTable(t)) if t == "orders"));
    let unknown = engine.put_record("orders", ORDER, &row.value, Precondition::Any);
    assert!(matches!(unknown, Err(EngineError::UnknownTable(_))), "{unknown:?}");

    // The table's schema: a row is closed, and its `order_id` is its key.
    let mut extra = row.value.clone();
    extra["statu"] = json!("cancelled");
    let undeclared = engine.put_record("order", ORDER, &extra, Precondition::Any);
    assert!(matches!(&undeclared, Err(EngineError::InvalidRow(e)) if e.field() == Some("statu")), "{undeclared:?}");
    let elsewhere = engine.put_record("order", "#elsewhere", &row.value, Precondition::Any);
    assert!(matches!(&elsewhere, Err(EngineError::InvalidRow(e)) if e.field() == Some("order_id")), "{elsewhere:?}");
    let order = |key: &str| {
        let mut value = row.value.clone();
        value["order_id"] = json!(key);
        value
    };

    // Create, replace, delete, each at the revision the last left.
    let created = engine.put_record("order", "#new", &order("#new"), Precondition::IfNoneMatch).unwrap();
    let mut processed = order("#new");
    processed["status"] = json!("processed");
    let replaced = engine.put_record("order", "#new", &processed, Precondition::IfMatch(created.revision)).unwrap();
    engine.delete_record("order", "#new", replaced.revision).unwrap();
    assert_eq!(engine.record("order", "#new").unwrap(), None);

    // An import is all or nothing: a bad line names its line and writes nothing.
    let lines = format!("{}\n\n{}\n", json!({"#a": order("#a")}), json!({"#b": {"price": 1.555}}));
    let refused = engine.import_records("order", &lines);
    assert!(matches!(&refused, Err(EngineError::InvalidRow(e)) if e.field() == Some("price")), "{refused:?}");
    let unreadable = engine.import_records("order", &format!("{}\nnot json\n", json!({"#a": order("#a")})));
    assert!(matches!(unreadable, Err(EngineError::InvalidImport { line: 2, .. })), "{unreadable:?}");
    let twice = engine.import_records("order", &format!("{0}\n{0}\n", json!({"#a": order("#a")})));
    assert!(matches!(twice, Err(EngineError::InvalidImport { line: 2, .. })), "{twice:?}");
    assert_eq!(engine.record("order", "#a").unwrap(), None);
    let lines = format!("{}\n{}\n", json!({"#a": order("#a")}), json!({"#new": order("#new")}));
    let imported = engine.import_records("order", &lines).unwrap();
    assert_eq!(imported.count, 2);
    let keys: Vec<&str> = imported.revisions.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["#a", "#new"]);
    assert!(imported.revisions[1].revision > replaced.revision, "a deleted row keeps counting");
}

fn sqlite_engine() -> (Engine<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    (crate::build(contract, &folder, store, ModelSource::None), dir)
}

fn pg_engine(pg: &PgSchema) -> Engine<warrant_store::PgStore> {
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    crate::build(contract, &folder, pg.connect(), ModelSource::None)
}

#[test]
fn sqlite_a_put_between_a_hold_and_its_confirmation_makes_it_stale() {
    let (engine, _dir) = sqlite_engine();
    a_put_between_a_hold_and_its_confirmation_makes_it_stale(engine);
}

#[test]
fn postgres_a_put_between_a_hold_and_its_confirmation_makes_it_stale() {
    let pg = PgSchema::fresh();
    a_put_between_a_hold_and_its_confirmation_makes_it_stale(pg_engine(&pg));
}

#[test]
fn sqlite_record_writes_are_checked_and_conditional() {
    let (engine, _dir) = sqlite_engine();
    writes_are_checked_and_conditional(engine);
}

#[test]
fn postgres_record_writes_are_checked_and_conditional() {
    let pg = PgSchema::fresh();
    writes_are_checked_and_conditional(pg_engine(&pg));
}
