//! The records routes on SQLite and PostgreSQL: a row's revision as its `ETag`, writes under
//! `If-Match` and `If-None-Match`, an import all or nothing, each tenant's rows its own; and a
//! `PUT` between a hold and its confirmation, which makes the confirmation `stale_revision` and
//! the next turn decide on the new row.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{ORDER, ORDER_PATH, Place, USER, call, cancel, request};

/// A request with `headers`; the status, the `ETag` and the body.
async fn send(
    app: &axum::Router,
    (method, path): (&str, &str),
    key: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> (StatusCode, Option<String>, Value) {
    let mut builder = Request::builder().method(method).uri(path).header("authorization", format!("Bearer {key}"));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = match body {
        Some((media, text)) => builder.header("content-type", media).body(Body::from(text)).unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    };
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let etag = response.headers().get("etag").map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, etag, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn json_body(value: &Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

async fn records_over_http(mut place: Place) {
    let (_, a) = place.tenant("ra");
    let (_, b) = place.tenant("rb");
    let app = place.router();
    let (a, b) = (a.as_str(), b.as_str());

    let (status, etag, row) = send(&app, ("GET", ORDER_PATH), a, &[], None).await;
    assert_eq!((status, etag.as_deref(), &row["revision"]), (StatusCode::OK, Some("\"1\""), &json!(1)), "{row}");
    let mut shipped = row["value"].clone();
    shipped["status"] = json!("delivered");

    // A's order ships; B's copy of the same order does not move.
    let (status, etag, written) =
        send(&app, ("PUT", ORDER_PATH), a, &[("if-match", "\"1\"")], json_body(&shipped)).await;
    assert_eq!(status, StatusCode::OK, "{written}");
    assert_eq!(written, json!({"table": "order", "key": ORDER, "revision": 2}));
    assert_eq!(etag.as_deref(), Some("\"2\""));
    let (_, _, theirs) = send(&app, ("GET", ORDER_PATH), b, &[], None).await;
    assert_eq!((&theirs["revision"], &theirs["value"]["status"]), (&json!(1), &json!("pending")), "{theirs}");
    let (status, _, stale) = send(&app, ("PUT", ORDER_PATH), a, &[("if-match", "1")], json_body(&shipped)).await;
    assert_eq!((status, &stale["error"]["code"]), (StatusCode::CONFLICT, &json!("stale_revision")), "{stale}");

    // B creates a row A never sees, then deletes it.
    let new_row = crate::order_row("#B1", "someone");
    let path = "/v1/records/order/%23B1";
    let (status, _, created) = send(&app, ("PUT", path), b, &[("if-none-match", "*")], json_body(&new_row)).await;
    assert_eq!((status, &created["revision"]), (StatusCode::OK, &json!(1)), "{created}");
    let (status, _, _) = send(&app, ("GET", path), a, &[], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = send(&app, ("DELETE", path), a, &[("if-match", "1")], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "A cannot delete B's row");
    let (status, _, _) = send(&app, ("DELETE", path), b, &[("if-match", "1")], None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, gone) = send(&app, ("GET", path), b, &[], None).await;
    assert_eq!((status, &gone["error"]["code"]), (StatusCode::NOT_FOUND, &json!("unknown_record")), "{gone}");

    // An import is all or nothing; the bad row is named by its field.
    let lines = |rows: &[(&str, Value)]| {
        let text: String = rows.iter().map(|(k, v)| format!("{}\n", json!({*k: v}))).collect();
        Some(("application/x-ndjson", text))
    };
    let mine = |key: &str| crate::order_row(key, "someone");
    let bad = lines(&[("#I1", mine("#I1")), ("#I2", json!({"amount": 0.125}))]);
    let (status, _, refused) = send(&app, ("POST", "/v1/records/order/import"), a, &[], bad).await;
    assert_eq!((status, &refused["error"]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("amount")));
    let (status, _, _) = send(&app, ("GET", "/v1/records/order/%23I1"), a, &[], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing of a refused import was written");
    let good = lines(&[("#I1", mine("#I1")), ("#I2", mine("#I2"))]);
    let (status, _, imported) = send(&app, ("POST", "/v1/records/order/import"), a, &[], good).await;
    assert_eq!(status, StatusCode::OK, "{imported}");
    assert_eq!(
        imported,
        json!({"count": 2, "revisions": [{"key": "#I1", "revision": 1}, {"key": "#I2", "revision": 1}]})
    );
    let (status, _, _) = send(&app, ("GET", "/v1/records/order/%23I1"), b, &[], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "A's import is A's");

    // A row keyed `import` is a row like any other, though its path is the import route's.
    let path = "/v1/records/order/import";
    let row = crate::order_row("import", USER);
    let (status, _, created) = send(&app, ("PUT", path), a, &[("if-none-match", "*")], json_body(&row)).await;
    assert_eq!((status, &created["key"]), (StatusCode::OK, &json!("import")), "{created}");
    let (status, etag, read) = send(&app, ("GET", path), a, &[], None).await;
    assert_eq!((status, etag.as_deref(), &read["value"]), (StatusCode::OK, Some("\"1\""), &row), "{read}");
    let (status, _, _) = send(&app, ("DELETE", path), a, &[("if-match", "1")], None).await;
    assert_eq!(status, StatusCode::OK);
}

/// A `PUT` between a hold and its confirmation: the confirmation is refused `stale_revision`,
/// and the next turn decides on the row as written.
async fn a_put_makes_the_held_confirmation_stale(mut place: Place) {
    let (_, key) = place.tenant("rh");
    let app = place.router();
    let k = Some(key.as_str());
    let (_, held) = call(&app, "POST", "/v1/turns", k, Some(request("c", "t1", cancel(), json!([])))).await;
    assert_eq!(held["acts"][0]["verdict"], "hold", "{held}");
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();

    let (_, row) = call(&app, "GET", ORDER_PATH, k, None).await;
    let mut shipped = row["value"].clone();
    shipped["status"] = json!("delivered");
    let (status, _, _) = send(&app, ("PUT", ORDER_PATH), &key, &[("if-match", "1")], json_body(&shipped)).await;
    assert_eq!(status, StatusCode::OK);

    let confirm = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    let (_, answered) = call(&app, "POST", "/v1/turns", k, Some(confirm)).await;
    assert!(answered["effects"].as_array().is_none_or(Vec::is_empty), "{answered}");
    assert!(answered.to_string().contains("\"stale_revision\""), "{answered}");
    let (_, again) = call(&app, "POST", "/v1/turns", k, Some(request("c", "t3", cancel(), json!([])))).await;
    assert_eq!(again["acts"][0]["verdict"], "refuse", "{again}");
    let (_, row) = call(&app, "GET", ORDER_PATH, k, None).await;
    assert_eq!((&row["revision"], &row["value"]["status"]), (&json!(2), &json!("delivered")), "{row}");
}

#[tokio::test]
async fn sqlite_records_are_written_read_and_imported_per_tenant() {
    records_over_http(Place::sqlite()).await;
}

#[tokio::test]
async fn postgres_records_are_written_read_and_imported_per_tenant() {
    records_over_http(Place::postgres()).await;
}

#[tokio::test]
async fn sqlite_a_put_between_a_hold_and_its_confirmation_makes_it_stale() {
    a_put_makes_the_held_confirmation_stale(Place::sqlite()).await;
}

#[tokio::test]
async fn postgres_a_put_between_a_hold_and_its_confirmation_makes_it_stale() {
    a_put_makes_the_held_confirmation_stale(Place::postgres()).await;
}
