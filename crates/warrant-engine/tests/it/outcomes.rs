//! The executor reports what happened, on SQLite and on PostgreSQL: an outcome's rows replace
//! warrant's (new revisions, so a confirmation asked against the old row is stale and the next
//! turn decides on the reported one), a field that differs from the effect's prediction leaves
//! an `effect_diverged` finding that replay shows beside the turn, a bad row is refused naming
//! its field with nothing written, and an operation without effect steps holds the rows it names
//! (`effect_pending`) until its outcome is `done` or `failed`. Replay decides every turn as it was.

use std::path::Path;

use serde_json::{Value, json};
use warrant_core::turn::{TurnResponse, Verdict};
use warrant_engine::{Engine, ModelSource, OutcomeReply, OutcomeRow, load_contract};
use warrant_store::{PgStore, SqliteStore, Store};

use crate::reverts::{ORDER, OTHER, address_change, decide, request};
use crate::{PgSchema, retail_dir};

/// The retail contract with one more operation, `ship_order`: consequential, with no effect
/// steps (what shipping changes only the warehouse knows), written into `dir` beside the
/// retail policies and data.
pub fn shipping_contract(dir: &Path) -> std::path::PathBuf {
    let retail = retail_dir();
    let mut text = std::fs::read_to_string(retail.join("contract.toml")).unwrap();
    text.push_str(
        "\n[[operation]]\nname = \"ship_order\"\nfrom = [\"tool_call\"]\nconsequential = true\n\
         resource = \"order_id\"\nargs.order_id = { kind = \"record\", table = \"order\" }\n",
    );
    std::fs::write(dir.join("contract.toml"), text).unwrap();
    std::fs::copy(retail.join("policies.cedar"), dir.join("policies.cedar")).unwrap();
    std::os::unix::fs::symlink(retail.join("data"), dir.join("data")).unwrap();
    dir.join("contract.toml")
}

fn outcome<S: Store>(engine: &mut Engine<S>, effect: &str, word: &str, rows: &[OutcomeRow]) -> Value {
    serde_json::to_value(engine.report_outcome(effect, word, rows).unwrap()).unwrap()
}

fn row(table: &str, key: &str, value: Value) -> OutcomeRow {
    OutcomeRow { table: table.into(), key: key.into(), value }
}

fn act(op: &str, order: &str) -> Value {
    match op {
        "cancel_pending_order" => json!({"op": op, "args": {"order_id": order, "reason": "no longer needed"}}),
        _ => json!({"op": op, "args": {"order_id": order}}),
    }
}

/// Proposes `acts`, confirms every hold, and answers the effects committed.
fn confirmed<S: Store>(engine: &mut Engine<S>, conversation: &str, n: &str, acts: Value) -> Vec<String> {
    let held = decide(engine, &request(conversation, &format!("propose-{n}"), acts, json!([])));
    assert!(held.acts.iter().all(|a| a.verdict == Verdict::Hold), "{:?}", held.acts);
    let answers: Vec<Value> =
        held.interactions.iter().map(|it| json!({"interaction": it.id, "option": "confirm"})).collect();
    let done = decide(engine, &request(conversation, &format!("confirm-{n}"), json!([]), Value::Array(answers)));
    assert!(done.acts.iter().all(|a| a.verdict == Verdict::Commit), "{:?}", done.acts);
    done.effects.iter().map(|e| e.id.clone()).collect()
}

fn verdicts(response: &TurnResponse) -> Vec<(Verdict, Vec<&str>)> {
    response.acts.iter().map(|a| (a.verdict, a.reasons.iter().map(|r| r.code.as_str()).collect())).collect()
}

fn refused_field(reply: &Value) -> (&str, &str) {
    (reply["error"]["code"].as_str().unwrap(), reply["error"]["field"].as_str().unwrap())
}

fn reported_rows_replace_warrants_and_a_divergence_is_found<S: Store, R: Store>(mut engine: Engine<S>, mut reader: R) {
    let effect = confirmed(&mut engine, "c", "1", json!([address_change(ORDER, 0)])).remove(0);
    let predicted = reader.record("order", ORDER).unwrap().unwrap();
    assert_eq!(predicted.value["address"]["city"], "Denver");
    // A cancellation held against the row as the effect left it.
    let held = decide(&mut engine, &request("c", "hold", json!([act("cancel_pending_order", ORDER)]), json!([])));
    let interaction = held.interactions[0].id.clone();

    // Refused, naming the field, with nothing written: a fraction where the table has none,
    // a row the effect did not change, a table the contract does not declare.
    let mut reported = predicted.value.clone();
    reported["address"]["zip"] = json!("80203");
    let mut bad = reported.clone();
    bad["status"] = json!(1.5);
    let rows = [row("order", ORDER, reported.clone()), row("order", ORDER, bad)];
    let refused = outcome(&mut engine, &effect, "done", &rows[1..]);
    assert_eq!(refused_field(&refused), ("invalid_record", "rows[0].value.status"), "{refused}");
    let twice = outcome(&mut engine, &effect, "done", &[rows[0].clone(), rows[0].clone()]);
    assert_eq!(refused_field(&twice), ("invalid_input", "rows[1]"), "{twice}");
    let other = outcome(&mut engine, &effect, "done", &[row("order", OTHER, reported.clone())]);
    assert_eq!(refused_field(&other), ("invalid_input", "rows[0]"), "{other}");
    let table = outcome(&mut engine, &effect, "done", &[row("orders", ORDER, reported.clone())]);
    assert_eq!(refused_field(&table), ("invalid_input", "rows[0].table"), "{table}");
    assert_eq!(reader.record("order", ORDER).unwrap().unwrap(), predicted, "a refused report wrote a row");
    assert_eq!(engine.turn_effects("c", "confirm-1").unwrap()[0].outcome, None);

    // The warehouse wrote another zip than the one asked for.
    let done = outcome(&mut engine, &effect, "done", &rows[..1]);
    assert_eq!(done["recorded"], true, "{done}");
    assert_eq!(done["rows"], json!([{"table": "order", "key": ORDER, "revision": predicted.revision + 1}]));
    let diverged = json!([{"code": "effect_diverged", "fields": [
        {"table": "order", "key": ORDER, "path": "address.zip", "predicted": "80202", "reported": "80203"}]}]);
    assert_eq!(done["findings"], diverged, "{done}");
    let stored = reader.record("order", ORDER).unwrap().unwrap();
    assert_eq!((stored.revision, &stored.value), (predicted.revision + 1, &reported));
    let views = engine.turn_effects("c", "confirm-1").unwrap();
    assert_eq!(views[0].outcome.as_deref(), Some("done"));
    assert_eq!(serde_json::to_value(&views[0].findings).unwrap(), diverged);
    assert_eq!(views[0].rows, rows[..1]);

    // The confirmation was asked against the old row; the next turn reads the reported one.
    let answer = json!([{"interaction": interaction, "option": "confirm"}]);
    let stale = decide(&mut engine, &request("c", "confirm-hold", json!([]), answer));
    assert_eq!(verdicts(&stale), [(Verdict::Refuse, vec!["stale_revision"])]);
    let next = decide(&mut engine, &request("c", "again", json!([act("cancel_pending_order", ORDER)]), json!([])));
    assert_eq!(verdicts(&next), [(Verdict::Hold, vec!["confirmation_required"])]);
    let turn = engine.turns(0, 100).unwrap().pop().unwrap();
    let read = &turn.replay["facts"]["records"];
    let order = read.as_array().unwrap().iter().find(|r| r["key"] == ORDER).unwrap();
    assert_eq!(
        (order["revision"].as_i64(), &order["value"]["address"]["zip"]),
        (Some(stored.revision), &json!("80203"))
    );

    // A second report changes nothing; replay decides every turn as it was, and shows the finding.
    let again = outcome(&mut engine, &effect, "done", &[]);
    assert_eq!((again["recorded"].clone(), again.get("findings")), (json!(false), None));
    let replay = engine.replay().unwrap();
    assert_eq!((replay.identical, replay.changes.len()), (replay.turns, 0), "{replay:?}");
    assert_eq!(replay.findings.len(), 1);
    assert_eq!((replay.findings[0].turn.as_str(), replay.findings[0].effect.as_str()), ("confirm-1", effect.as_str()));
}

fn an_effect_without_steps_holds_its_rows_until_its_outcome<S: Store, R: Store>(mut engine: Engine<S>, mut reader: R) {
    let before = reader.record("order", ORDER).unwrap().unwrap();
    let ships = confirmed(&mut engine, "w", "1", json!([act("ship_order", ORDER), act("ship_order", OTHER)]));
    assert_eq!(reader.record("order", ORDER).unwrap().unwrap(), before, "an effect without steps writes no row");
    let views = engine.turn_effects("w", "confirm-1").unwrap();
    assert!(views.iter().all(|v| v.holds.len() == 1 && v.outcome.is_none()), "{views:?}");

    // Every later consequential act naming a held row is asked; a read is not held.
    let acts = json!([act("cancel_pending_order", ORDER), act("get_order_details", ORDER)]);
    let pending = decide(&mut engine, &request("w", "pending", acts.clone(), json!([])));
    assert_eq!(verdicts(&pending), [(Verdict::Ask, vec!["effect_pending"]), (Verdict::Commit, vec![])]);
    let recorded = engine.turns(0, 100).unwrap().pop().unwrap();
    let held_by: Vec<&Value> =
        recorded.replay["facts"]["pending"].as_array().unwrap().iter().map(|p| &p["effect"]).collect();
    assert_eq!(held_by.len(), 1, "{}", recorded.replay["facts"]);

    // `unknown` keeps holding; a row the effect does not name is refused.
    assert_eq!(outcome(&mut engine, &ships[0], "unknown", &[])["recorded"], true);
    let still = decide(&mut engine, &request("w", "still", acts.clone(), json!([])));
    assert_eq!(verdicts(&still)[0], (Verdict::Ask, vec!["effect_pending"]));
    let stray = outcome(&mut engine, &ships[0], "done", &[row("order", OTHER, before.value.clone())]);
    assert_eq!(refused_field(&stray), ("invalid_input", "rows[0]"), "{stray}");

    // Done, with the row as the warehouse left it: written, released, and decided on.
    let mut shipped = before.value.clone();
    shipped["status"] = json!("processed");
    let done = outcome(&mut engine, &ships[0], "done", &[row("order", ORDER, shipped.clone())]);
    assert_eq!((done["recorded"].clone(), done.get("findings")), (json!(true), None), "{done}");
    assert_eq!(reader.record("order", ORDER).unwrap().unwrap().revision, before.revision + 1);
    let released = decide(&mut engine, &request("w", "released", acts, json!([])));
    assert_eq!(verdicts(&released)[0].1, ["forbidden_by_policy"]);
    assert_eq!(released.acts[0].reasons[0].policies, ["order_not_pending"]);

    // Failed, without rows: released, nothing written.
    let other = decide(&mut engine, &request("w", "other", json!([act("cancel_pending_order", OTHER)]), json!([])));
    assert_eq!(verdicts(&other), [(Verdict::Ask, vec!["effect_pending"])]);
    assert_eq!(outcome(&mut engine, &ships[1], "failed", &[])["reverted"], false);
    let free = decide(&mut engine, &request("w", "free", json!([act("cancel_pending_order", OTHER)]), json!([])));
    assert_eq!(verdicts(&free), [(Verdict::Hold, vec!["confirmation_required"])]);

    let replay = engine.replay().unwrap();
    assert_eq!((replay.identical, replay.changes.len(), replay.findings.len()), (replay.turns, 0, 0), "{replay:?}");
}

/// Within one turn too: a confirmed act without steps holds its row for the acts after it.
fn an_effect_without_steps_holds_its_rows_in_its_own_turn<S: Store>(mut engine: Engine<S>) {
    let held = decide(&mut engine, &request("t", "propose", json!([act("ship_order", ORDER)]), json!([])));
    let answer = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    let acts = json!([act("cancel_pending_order", ORDER)]);
    let both = decide(&mut engine, &request("t", "confirm", acts, answer));
    assert_eq!(verdicts(&both), [(Verdict::Commit, vec![]), (Verdict::Ask, vec!["effect_pending"])]);
    let replay = engine.replay().unwrap();
    assert_eq!((replay.identical, replay.changes.len()), (replay.turns, 0), "{replay:?}");
}

fn retail<S: Store>(store: S) -> Engine<S> {
    let (contract, folder) = load_contract(&retail_dir().join("contract.toml")).unwrap();
    crate::build(contract, &folder, store, ModelSource::None)
}

fn shipping<S: Store>(dir: &Path, store: S) -> Engine<S> {
    let (contract, folder) = load_contract(&shipping_contract(dir)).unwrap();
    crate::build(contract, &folder, store, ModelSource::None)
}

#[test]
fn sqlite_reported_rows_replace_warrants_and_a_divergence_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warrant.sqlite");
    let engine = retail(SqliteStore::open(&path).unwrap());
    reported_rows_replace_warrants_and_a_divergence_is_found(engine, SqliteStore::open(&path).unwrap());
}

#[test]
fn postgres_reported_rows_replace_warrants_and_a_divergence_is_found() {
    let pg = PgSchema::fresh();
    let reader: PgStore = pg.connect();
    reported_rows_replace_warrants_and_a_divergence_is_found(retail(pg.connect()), reader);
}

#[test]
fn sqlite_an_effect_without_steps_holds_its_rows_until_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warrant.sqlite");
    let engine = shipping(dir.path(), SqliteStore::open(&path).unwrap());
    an_effect_without_steps_holds_its_rows_until_its_outcome(engine, SqliteStore::open(&path).unwrap());
    let other = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&other.path().join("warrant.sqlite")).unwrap();
    an_effect_without_steps_holds_its_rows_in_its_own_turn(shipping(other.path(), store));
}

#[test]
fn postgres_an_effect_without_steps_holds_its_rows_until_its_outcome() {
    let (pg, dir) = (PgSchema::fresh(), tempfile::tempdir().unwrap());
    let reader: PgStore = pg.connect();
    an_effect_without_steps_holds_its_rows_until_its_outcome(shipping(dir.path(), pg.connect()), reader);
    let (pg, dir) = (PgSchema::fresh(), tempfile::tempdir().unwrap());
    an_effect_without_steps_holds_its_rows_in_its_own_turn(shipping(dir.path(), pg.connect()));
}

#[test]
fn an_outcome_reply_names_what_it_recorded() {
    let (mut engine, _dir) = crate::retail_engine();
    let effect = confirmed(&mut engine, "r", "1", json!([address_change(ORDER, 0)])).remove(0);
    let OutcomeReply::Accepted(reply) = engine.report_outcome(&effect, "done", &[]).unwrap() else { panic!("refused") };
    assert!(reply.recorded && reply.rows.is_empty() && reply.findings.is_empty(), "{reply:?}");
}

#[test]
fn an_outcome_keeps_the_result_reported_with_it_and_refuses_one_too_large() {
    let (mut engine, _dir) = crate::retail_engine();
    let effect = confirmed(&mut engine, "r", "1", json!([address_change(ORDER, 0)])).remove(0);
    assert_eq!(engine.effect(&effect).unwrap().map(|e| e.outcome), Some(None));
    let large = json!("x".repeat(warrant_engine::MAX_RESULT));
    let OutcomeReply::Refused { error } = engine.report_outcome_with(&effect, "done", &[], Some(&large)).unwrap()
    else {
        panic!("a result past MAX_RESULT was kept")
    };
    assert_eq!(error.field, "result");
    assert_eq!(engine.effect(&effect).unwrap().map(|e| e.outcome), Some(None), "nothing was recorded");
    let result = json!({"changed": ORDER, "lines": [1, 2]});
    engine.report_outcome_with(&effect, "done", &[], Some(&result)).unwrap();
    let stored = engine.effect(&effect).unwrap().unwrap();
    assert_eq!((stored.outcome.as_deref(), stored.result), (Some("done"), Some(result)));
    assert!(engine.effect("eff_none").unwrap().is_none());
}
