//! `warrant records` on SQLite and PostgreSQL, as processes: get, put under each condition,
//! delete, import all or nothing; a stale revision exits 1 with the error JSON, bad input 2.

use std::process::Output;

use serde_json::{Value, json};

use crate::turns::{postgres_schema, sqlite_store};
use crate::{stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";
const ORDER: &str = "#W6247578";

/// `warrant records ARGS… --contract … --store STORE`, fed `stdin`.
fn records(store: &str, args: &[&str], stdin: &str) -> Output {
    let mut all = vec!["records"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--contract", CONTRACT, "--store", store]);
    warrant(&all, stdin)
}

/// The exit status and the JSON printed.
fn answer(output: &Output) -> (Option<i32>, Value) {
    let text = stdout(output);
    let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text} / {}", stderr(output)));
    (output.status.code(), value)
}

fn the_records_commands(store: &str) {
    let (code, row) = answer(&records(store, &["get", "order", ORDER], ""));
    assert_eq!((code, &row["revision"]), (Some(0), &json!(1)), "{row}");
    let mut shipped = row["value"].clone();
    shipped["status"] = json!("delivered");
    let shipped = shipped.to_string();

    let (code, written) = answer(&records(store, &["put", "order", ORDER, "--if-match", "1"], &shipped));
    assert_eq!((code, written), (Some(0), json!({"table": "order", "key": ORDER, "revision": 2})));
    let (code, stale) = answer(&records(store, &["put", "order", ORDER, "--if-match", "1"], &shipped));
    assert_eq!((code, &stale["error"]["code"]), (Some(1), &json!("stale_revision")), "{stale}");
    let (code, taken) = answer(&records(store, &["put", "order", ORDER, "--if-none-match"], &shipped));
    assert_eq!((code, &taken["error"]["code"]), (Some(1), &json!("stale_revision")), "{taken}");
    let (code, row) = answer(&records(store, &["get", "order", ORDER], ""));
    assert_eq!((code, &row["revision"], &row["value"]["status"]), (Some(0), &json!(2), &json!("delivered")));

    // Bad input: a row that does not fit, an unknown table, a body that is not one object.
    let bad = records(store, &["put", "order", "#N", "--if-none-match"], r#"{"price": 47.845}"#);
    assert_eq!(bad.status.code(), Some(2));
    let message = stderr(&bad);
    assert!(message.contains("`price`") && message.contains("#N") && message.lines().count() == 1, "{message}");
    assert_eq!(records(store, &["get", "orders", ORDER], "").status.code(), Some(2));
    assert_eq!(records(store, &["put", "order", "#N"], "[1]").status.code(), Some(2));

    // Create, delete at the revision, and a row that is gone; a new order is a whole row of
    // the table's schema, its `order_id` its key.
    let order = |key: &str| {
        let mut row = row["value"].clone();
        row["order_id"] = json!(key);
        row
    };
    let (code, created) = answer(&records(store, &["put", "order", "#N", "--if-none-match"], &order("#N").to_string()));
    assert_eq!((code, &created["revision"]), (Some(0), &json!(1)), "{created}");
    let (code, stale) = answer(&records(store, &["delete", "order", "#N", "--if-match", "5"], ""));
    assert_eq!((code, &stale["error"]["code"]), (Some(1), &json!("stale_revision")), "{stale}");
    let (code, deleted) = answer(&records(store, &["delete", "order", "#N", "--if-match", "1"], ""));
    assert_eq!((code, deleted), (Some(0), json!({"table": "order", "key": "#N", "deleted": 1})));
    let (code, gone) = answer(&records(store, &["get", "order", "#N"], ""));
    assert_eq!((code, &gone["error"]["code"]), (Some(1), &json!("unknown_record")), "{gone}");

    // An import from standard input and from a file; a bad line writes nothing.
    let lines = format!("{}\n{}\n", json!({"#I1": order("#I1")}), json!({"#I2": {"amount": 0.125}}));
    let refused = records(store, &["import", "order", "-"], &lines);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("`amount`"), "{}", stderr(&refused));
    assert_eq!(answer(&records(store, &["get", "order", "#I1"], "")).0, Some(1), "nothing was imported");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("orders.jsonl");
    let good = format!("{}\n{}\n", json!({"#I1": order("#I1")}), json!({"#N": order("#N")}));
    std::fs::write(&file, &good).unwrap();
    let (code, imported) = answer(&records(store, &["import", "order", file.to_str().unwrap()], ""));
    assert_eq!(code, Some(0), "{imported}");
    assert_eq!(
        imported,
        json!({"count": 2, "revisions": [{"key": "#I1", "revision": 1}, {"key": "#N", "revision": 3}]})
    );
}

#[test]
fn sqlite_the_records_commands() {
    let dir = tempfile::tempdir().unwrap();
    the_records_commands(&sqlite_store(&dir));
}

#[test]
fn postgres_the_records_commands() {
    let pg = postgres_schema();
    the_records_commands(&pg.store());
}
