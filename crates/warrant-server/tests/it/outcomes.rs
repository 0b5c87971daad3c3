//! The executor's report over HTTP, on SQLite and on PostgreSQL: `POST /v1/effects/{id}/outcome`
//! with `rows` refuses a row that does not fit (422 naming `rows[0].value.status`) and writes
//! nothing, writes the rows it accepts at new revisions, answers the `effect_diverged`
//! finding, and releases the rows an operation without effect steps held (`effect_pending`);
//! `GET /v1/turns` shows each effect with its outcome and finding.

use axum::http::StatusCode;
use serde_json::{Value, json};
use warrant_server::{AppState, router};

use crate::{ORDER_PATH, Place, call, request};

const ORDER: &str = "#W6247578";
const OTHER: &str = "#W4776164";

/// The retail example with `ship_order`, a consequential operation without effect steps, in
/// `dir` (its policies copied, its data linked).
fn with_shipping(dir: &std::path::Path) -> std::path::PathBuf {
    let retail = crate::contract();
    let folder = retail.parent().unwrap();
    let ship = "\n[[operation]]\nname = \"ship_order\"\nfrom = [\"tool_call\"]\nconsequential = true\n\
                resource = \"order_id\"\nargs.order_id = { kind = \"record\", table = \"order\" }\n";
    std::fs::write(dir.join("contract.toml"), std::fs::read_to_string(&retail).unwrap() + ship).unwrap();
    std::fs::copy(folder.join("policies.cedar"), dir.join("policies.cedar")).unwrap();
    std::os::unix::fs::symlink(folder.join("data"), dir.join("data")).unwrap();
    dir.join("contract.toml")
}

async fn turn(app: &axum::Router, key: Option<&str>, n: &str, acts: Value, answers: Value) -> Value {
    let (status, response) = call(app, "POST", "/v1/turns", key, Some(request("c", n, acts, answers))).await;
    assert_eq!(status, StatusCode::OK, "{response}");
    response
}

fn codes(response: &Value) -> Vec<(String, String)> {
    response["acts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["verdict"].as_str().unwrap().to_owned(), a["reasons"][0]["code"].as_str().unwrap_or("").to_owned()))
        .collect()
}

async fn the_executor_reports_rows_over_http(mut place: Place) {
    let (_, key) = place.tenant("exec");
    let dir = tempfile::tempdir().unwrap();
    let mut config = place.config();
    config.contract = with_shipping(dir.path());
    let app = router(std::thread::spawn(move || AppState::new(&config)).join().unwrap().unwrap());
    let k = Some(key.as_str());
    let cancel = json!({"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}});
    let ship = json!({"op": "ship_order", "args": {"order_id": OTHER}});
    let held = turn(&app, k, "t1", json!([cancel, ship]), json!([])).await;
    let answers: Vec<Value> = held["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| json!({"interaction": it["id"], "option": "confirm"}))
        .collect();
    let done = turn(&app, k, "t2", json!([]), Value::Array(answers)).await;
    let effects: Vec<String> =
        done["effects"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect();
    let (_, before) = call(&app, "GET", ORDER_PATH, k, None).await;

    // A row that does not fit its table: refused naming the field, nothing written.
    let path = format!("/v1/effects/{}/outcome", effects[0]);
    let mut reported = before["value"].clone();
    reported["cancel_reason"] = json!("ordered by mistake");
    let mut bad = reported.clone();
    bad["status"] = json!(1.5);
    let body = |value: &Value| json!({"outcome": "done", "rows": [{"table": "order", "key": ORDER, "value": value}]});
    let (status, refused) = call(&app, "POST", &path, k, Some(body(&bad))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(
        (&refused["error"]["code"], &refused["error"]["field"]),
        (&json!("invalid_record"), &json!("rows[0].value.status"))
    );
    let (_, unchanged) = call(&app, "GET", ORDER_PATH, k, None).await;
    assert_eq!(unchanged, before);

    // Accepted: a new revision, and the field the cancellation predicted otherwise.
    let (status, recorded) = call(&app, "POST", &path, k, Some(body(&reported))).await;
    assert_eq!(status, StatusCode::OK, "{recorded}");
    let revision = before["revision"].as_i64().unwrap() + 1;
    assert_eq!(recorded["rows"], json!([{"table": "order", "key": ORDER, "revision": revision}]));
    let finding = json!({"code": "effect_diverged", "fields": [{"table": "order", "key": ORDER, "path": "cancel_reason",
        "predicted": "no longer needed", "reported": "ordered by mistake"}]});
    assert_eq!(recorded["findings"], json!([finding]), "{recorded}");
    let (_, after) = call(&app, "GET", ORDER_PATH, k, None).await;
    assert_eq!((&after["revision"], &after["value"]), (&json!(revision), &reported));

    // The shipment holds its order until its outcome arrives.
    let cancel_other =
        json!([{"op": "cancel_pending_order", "args": {"order_id": OTHER, "reason": "no longer needed"}}]);
    let pending = turn(&app, k, "t3", cancel_other.clone(), json!([])).await;
    assert_eq!(codes(&pending), [("ask".to_owned(), "effect_pending".to_owned())]);
    let mut shipped = call(&app, "GET", "/v1/records/order/%23W4776164", k, None).await.1["value"].clone();
    shipped["status"] = json!("processed");
    let ship_path = format!("/v1/effects/{}/outcome", effects[1]);
    let report = json!({"outcome": "done", "rows": [{"table": "order", "key": OTHER, "value": shipped}]});
    let (status, released) = call(&app, "POST", &ship_path, k, Some(report)).await;
    assert_eq!((status, &released["recorded"]), (StatusCode::OK, &json!(true)), "{released}");
    let decided = turn(&app, k, "t4", cancel_other, json!([])).await;
    assert_eq!(codes(&decided), [("refuse".to_owned(), "forbidden_by_policy".to_owned())]);

    // The turn that committed the effects shows their outcomes and the finding.
    let (_, page) = call(&app, "GET", "/v1/turns?limit=10", k, None).await;
    let t2 = page["turns"].as_array().unwrap().iter().find(|t| t["turn"] == "t2").unwrap();
    let shown: Vec<(&Value, &Value, usize)> = t2["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (&e["op"], &e["outcome"], e["findings"].as_array().unwrap().len()))
        .collect();
    assert!(shown.contains(&(&json!("cancel_pending_order"), &json!("done"), 1)), "{t2}");
    assert!(shown.contains(&(&json!("ship_order"), &json!("done"), 0)), "{t2}");
}

#[tokio::test]
async fn sqlite_the_executor_reports_rows_over_http() {
    the_executor_reports_rows_over_http(Place::sqlite()).await;
}

#[tokio::test]
async fn postgres_the_executor_reports_rows_over_http() {
    the_executor_reports_rows_over_http(Place::postgres()).await;
}
