//! `warrant effect-outcome --rows` as a process, on SQLite and on PostgreSQL: a row that does not
//! fit is refused naming its field (exit 2) and nothing is written; the rows it accepts get new
//! revisions and a field the effect predicted otherwise is an `effect_diverged` finding, which
//! `warrant replay` prints beside turns it decides as they were; an operation without effect
//! steps holds its order (`effect_pending`) until its outcome.

use serde_json::{Value, json};

use crate::turns::{postgres_schema, sqlite_store};
use crate::{stderr, stdout, warrant};

const USER: &str = "yusuf_rossi_9620";
const ORDER: &str = "#W6247578";
const OTHER: &str = "#W4776164";

/// A folder holding the retail contract and one more operation, `ship_order`, which declares no
/// effect steps; its policies are copied and its data linked.
fn shipping() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let retail = crate::root().join("examples/retail");
    let mut contract = std::fs::read_to_string(retail.join("contract.toml")).unwrap();
    contract += "\n[[operation]]\nname = \"ship_order\"\nfrom = [\"tool_call\"]\nconsequential = true\n";
    contract += "resource = \"order_id\"\nargs.order_id = { kind = \"record\", table = \"order\" }\n";
    std::fs::write(dir.path().join("contract.toml"), contract).unwrap();
    std::fs::copy(retail.join("policies.cedar"), dir.path().join("policies.cedar")).unwrap();
    std::os::unix::fs::symlink(retail.join("data"), dir.path().join("data")).unwrap();
    dir
}

/// Runs `warrant` with the contract and store; (exit status, the JSON printed).
fn run(contract: &str, store: &str, args: &[&str], stdin: &str) -> (Option<i32>, Value) {
    let all: Vec<&str> = args.iter().copied().chain(["--contract", contract, "--store", store]).collect();
    let out = warrant(&all, stdin);
    let text = stdout(&out);
    (out.status.code(), serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text} {}", stderr(&out))))
}

fn turn(contract: &str, store: &str, n: &str, acts: Value, answers: Value) -> Value {
    let body = json!({"conversation": "c", "turn": n, "actor": USER, "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please."}],
        "acts": acts, "answers": answers});
    let (code, response) = run(contract, store, &["turn"], &body.to_string());
    assert_eq!(code, Some(0), "{response}");
    response
}

fn cancel(order: &str) -> Value {
    json!({"op": "cancel_pending_order", "args": {"order_id": order, "reason": "no longer needed"}})
}

fn first_reason(response: &Value) -> (&str, &str) {
    let act = &response["acts"][0];
    (act["verdict"].as_str().unwrap(), act["reasons"][0]["code"].as_str().unwrap())
}

fn the_executor_reports_rows_from_the_command_line(store: &str) {
    let dir = shipping();
    let contract = dir.path().join("contract.toml").display().to_string();
    let c = contract.as_str();
    let held =
        turn(c, store, "t1", json!([cancel(ORDER), {"op": "ship_order", "args": {"order_id": OTHER}}]), json!([]));
    let mut answers = Vec::new();
    for interaction in held["interactions"].as_array().unwrap() {
        answers.push(json!({"interaction": interaction["id"], "option": "confirm"}));
    }
    let done = turn(c, store, "t2", json!([]), Value::Array(answers));
    let effect = |i: usize| done["effects"][i]["id"].as_str().unwrap().to_owned();
    let (cancelled, shipped) = (effect(0), effect(1));
    let (_, before) = run(c, store, &["records", "get", "order", ORDER], "");

    // A row that does not fit, from a file: refused naming the field; nothing written.
    let mut row = before["value"].clone();
    row["cancel_reason"] = json!("ordered by mistake");
    let mut bad = row.clone();
    bad["status"] = json!(1.5);
    let file = dir.path().join("rows.json");
    std::fs::write(&file, json!([{"table": "order", "key": ORDER, "value": bad}]).to_string()).unwrap();
    let report = ["effect-outcome", "--effect", &cancelled, "--outcome", "done", "--rows"];
    let (code, refused) = run(c, store, &[&report[..], &[file.to_str().unwrap()]].concat(), "");
    assert_eq!(code, Some(2), "{refused}");
    assert_eq!(
        (&refused["error"]["code"], &refused["error"]["field"]),
        (&json!("invalid_record"), &json!("rows[0].value.status"))
    );
    let (code, unreadable) = run(c, store, &[&report[..], &["-"]].concat(), r#"{"table": "order"}"#);
    assert_eq!((code, &unreadable["error"]["code"]), (Some(2), &json!("invalid_input")), "{unreadable}");
    assert_eq!(run(c, store, &["records", "get", "order", ORDER], "").1, before);

    // From standard input: written at the next revision, the divergence found.
    let rows = json!([{"table": "order", "key": ORDER, "value": row}]).to_string();
    let (code, recorded) = run(c, store, &[&report[..], &["-"]].concat(), &rows);
    assert_eq!(code, Some(0), "{recorded}");
    assert_eq!(recorded["findings"][0]["fields"][0]["path"], "cancel_reason", "{recorded}");
    let (_, after) = run(c, store, &["records", "get", "order", ORDER], "");
    assert_eq!((after["revision"].as_i64(), &after["value"]), (Some(before["revision"].as_i64().unwrap() + 1), &row));

    // The shipment holds its order until it is reported; failed, it releases it.
    assert_eq!(first_reason(&turn(c, store, "t3", json!([cancel(OTHER)]), json!([]))), ("ask", "effect_pending"));
    let (code, released) = run(c, store, &["effect-outcome", "--effect", &shipped, "--outcome", "failed"], "");
    assert_eq!((code, &released["recorded"]), (Some(0), &json!(true)), "{released}");
    let free = turn(c, store, "t4", json!([cancel(OTHER)]), json!([]));
    assert_eq!(first_reason(&free), ("hold", "confirmation_required"));

    let out = warrant(&["replay", "--contract", c, "--store", store], "");
    let printed = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(printed.ends_with("4 turns replayed, 4 identical, 0 verdicts changed\n"), "{printed}");
    let line = format!(
        "effect_diverged: c t2 effect {cancelled} `cancel_pending_order`: order/{ORDER} `cancel_reason` predicted \
         \"no longer needed\", reported \"ordered by mistake\""
    );
    assert!(printed.lines().any(|l| l == line), "{printed}");
}

#[test]
fn sqlite_the_executor_reports_rows_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    the_executor_reports_rows_from_the_command_line(&sqlite_store(&dir));
}

#[test]
fn postgres_the_executor_reports_rows_from_the_command_line() {
    let pg = postgres_schema();
    the_executor_reports_rows_from_the_command_line(&pg.store());
}
