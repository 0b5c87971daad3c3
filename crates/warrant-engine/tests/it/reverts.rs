//! A failed effect undoes only itself: two effects of one turn that write the same row, one of
//! them reported failed, on SQLite and on PostgreSQL. Rows are read back through a second
//! connection to the same store, as another process would see them.

use serde_json::{Value, json};
use warrant_core::pointer;
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, ModelSource, TurnResult, load_contract};
use warrant_store::{PgStore, SqliteStore, Store};

use crate::{PgSchema, retail_dir};

pub(crate) const USER: &str = "yusuf_rossi_9620";
/// Yusuf's two pending orders, both shipping to 763 Broadway, Philadelphia.
pub(crate) const ORDER: &str = "#W6247578";
pub(crate) const OTHER: &str = "#W4776164";

/// The user's words, which hold every address the acts point into.
const WORDS: [&str; 2] = ["12 Oak Street | Denver | CO | USA | 80202", "9 Elm Road | Austin | TX | USA | 73301"];

/// An address change to the `n`th address of [`WORDS`], each field a pointer to its words.
pub(crate) fn address_change(order: &str, n: usize) -> Value {
    let message = WORDS.join(" / ");
    let mut next = 1;
    let mut fields = serde_json::Map::new();
    for (i, address) in WORDS.iter().enumerate() {
        for (field, text) in ["address1", "city", "state", "country", "zip"].iter().zip(address.split(" | ")) {
            let count = pointer::numbered(text).len();
            if i == n {
                fields.insert((*field).into(), json!({"ptr": [next, next + count - 1], "copy": text}));
            }
            next += count;
        }
    }
    assert_eq!(next - 1, pointer::numbered(&message).len(), "the pointers cover the message");
    fields.insert("order_id".into(), json!(order));
    fields.insert("address2".into(), json!(""));
    json!({"op": "modify_pending_order_address", "args": fields})
}

pub(crate) fn request(conversation: &str, turn: &str, acts: Value, answers: Value) -> String {
    json!({
        "conversation": conversation, "turn": turn, "actor": USER,
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": WORDS.join(" / ")}],
        "acts": acts, "answers": answers,
    })
    .to_string()
}

pub(crate) fn decide<S: Store>(engine: &mut Engine<S>, request: &str) -> TurnResponse {
    match engine.turn(request).unwrap() {
        TurnResult::Decided { response, .. } => response,
        TurnResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

/// Proposes `acts` in one turn and confirms every one of them in the next: one turn, one
/// effect per act, in order.
fn commit_together<S: Store>(engine: &mut Engine<S>, conversation: &str, acts: Value) -> Vec<String> {
    let held = decide(engine, &request(conversation, "propose", acts, json!([])));
    assert!(held.acts.iter().all(|a| a.verdict == Verdict::Hold), "{:?}", held.acts);
    let answers: Vec<Value> =
        held.interactions.iter().map(|it| json!({"interaction": it.id, "option": "confirm"})).collect();
    let done = decide(engine, &request(conversation, "confirm", json!([]), Value::Array(answers)));
    assert!(done.acts.iter().all(|a| a.verdict == Verdict::Commit), "{:?}", done.acts);
    done.effects.iter().map(|e| e.id.clone()).collect()
}

fn order(reader: &mut impl Store, key: &str) -> (Value, i64) {
    let row = reader.record("order", key).unwrap().unwrap();
    (row.value, row.revision)
}

fn city(row: &Value) -> &str {
    row["address"]["city"].as_str().unwrap()
}

fn a_failed_effect_undoes_only_its_own_fields_of_a_row_its_turn_shares<S: Store, R: Store>(
    mut engine: Engine<S>,
    mut reader: R,
) {
    // An address change and a cancellation of one order, committed in one turn.
    let cancel = json!({"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}});
    let effects = commit_together(&mut engine, "shared", json!([address_change(ORDER, 0), cancel]));
    let (address, _cancel) = (&effects[0], &effects[1]);
    let (row, _) = order(&mut reader, ORDER);
    assert_eq!((city(&row), row["status"].as_str().unwrap()), ("Denver", "cancelled"));
    let payments = row["payment_history"].clone();
    assert_eq!(payments.as_array().unwrap().len(), 2, "the cancellation's refund is recorded");

    // The address change failed: its address goes back, and the cancellation stays whole. (The
    // turn's `before` of the row would have made the order pending again, refund gone.)
    let result = serde_json::to_value(engine.report_outcome(address, "failed", &[]).unwrap()).unwrap();
    assert_eq!((result["recorded"].clone(), result["reverted"].clone()), (json!(true), json!(true)));
    let (row, _) = order(&mut reader, ORDER);
    assert_eq!(city(&row), "Philadelphia");
    assert_eq!(row["address"]["address1"], "763 Broadway");
    assert_eq!(row["address"]["address2"], "Suite 135");
    assert_eq!(row["status"], "cancelled");
    assert_eq!(row["payment_history"], payments);

    // Two address changes of one order in one turn: the first, reported failed, is not undone,
    // because the second has written the same fields since; the second, then, is undone back
    // to what the first left.
    let effects = commit_together(&mut engine, "twice", json!([address_change(OTHER, 0), address_change(OTHER, 1)]));
    let (row, revision) = order(&mut reader, OTHER);
    assert_eq!(city(&row), "Austin");
    let result = serde_json::to_value(engine.report_outcome(&effects[0], "failed", &[]).unwrap()).unwrap();
    assert_eq!((result["recorded"].clone(), result["reverted"].clone()), (json!(true), json!(false)));
    assert_eq!(order(&mut reader, OTHER), (row, revision), "nothing was written");
    let result = serde_json::to_value(engine.report_outcome(&effects[1], "failed", &[]).unwrap()).unwrap();
    assert_eq!(result["reverted"], true);
    let (row, _) = order(&mut reader, OTHER);
    assert_eq!((city(&row), row["address"]["zip"].as_str().unwrap()), ("Denver", "80202"));
}

#[test]
fn sqlite_a_failed_effect_undoes_only_its_own_fields_of_a_row_its_turn_shares() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warrant.sqlite");
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    let engine = crate::build(contract, &folder, SqliteStore::open(&path).unwrap(), ModelSource::None);
    a_failed_effect_undoes_only_its_own_fields_of_a_row_its_turn_shares(engine, SqliteStore::open(&path).unwrap());
}

#[test]
fn postgres_a_failed_effect_undoes_only_its_own_fields_of_a_row_its_turn_shares() {
    let pg = PgSchema::fresh();
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    let engine = crate::build(contract, &folder, pg.connect(), ModelSource::None);
    let reader: PgStore = pg.connect();
    a_failed_effect_undoes_only_its_own_fields_of_a_row_its_turn_shares(engine, reader);
}
