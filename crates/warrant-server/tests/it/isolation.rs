//! A tenant can never read or affect another tenant's records: the same order ids, turn keys,
//! interaction ids and effect ids reach only the caller's own store. Through the router on
//! SQLite and PostgreSQL, and once over a real socket.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::{ORDER_PATH, Place, call, cancel, http, request};

/// What tenant A did: the effect id and interaction id it made.
struct Done {
    effect: String,
    interaction: String,
}

/// Tenant A cancels the order; returns its ids.
async fn a_cancels(app: &axum::Router, a: Option<&str>) -> Done {
    let (_, held) = call(app, "POST", "/v1/turns", a, Some(request("c", "t1", cancel(), json!([])))).await;
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let (_, done) = call(
        app,
        "POST",
        "/v1/turns",
        a,
        Some(request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]))),
    )
    .await;
    assert_eq!(done["acts"][0]["verdict"], "commit", "{done}");
    Done { effect: done["effects"][0]["id"].as_str().unwrap().to_owned(), interaction }
}

async fn isolated(mut place: Place) {
    let (_, a) = place.tenant("ta");
    let (_, b) = place.tenant("tb");
    let app = place.router();
    let (a, b) = (Some(a.as_str()), Some(b.as_str()));
    let done = a_cancels(&app, a).await;

    // B's copy of the same order is untouched, and B cannot see A's turns.
    let (_, record) = call(&app, "GET", ORDER_PATH, b, None).await;
    assert_eq!((&record["revision"], &record["value"]["status"]), (&json!(1), &json!("pending")), "{record}");
    let (_, listed) = call(&app, "GET", "/v1/turns", b, None).await;
    assert_eq!(listed["turns"], json!([]));

    // A's effect id is unknown to B, and reporting on it changes nothing for A.
    let path = format!("/v1/effects/{}/outcome", done.effect);
    let (status, error) = call(&app, "POST", &path, b, Some(json!({"outcome": "failed"}))).await;
    assert_eq!((status, &error["error"]["code"]), (StatusCode::NOT_FOUND, &json!("unknown_effect")), "{error}");

    // Answering A's interaction from B confirms nothing anywhere.
    let (_, answered) = call(
        &app,
        "POST",
        "/v1/turns",
        b,
        Some(request("c", "t9", json!([]), json!([{"interaction": done.interaction, "option": "confirm"}]))),
    )
    .await;
    assert!(answered["effects"].as_array().is_none_or(Vec::is_empty), "{answered}");
    assert_ne!(answered["acts"][0]["verdict"], "commit", "{answered}");

    // The same turn key in B is B's own turn, decided afresh, not A's stored answer.
    let (_, fresh) = call(&app, "POST", "/v1/turns", b, Some(request("c", "t1", cancel(), json!([])))).await;
    assert_eq!(fresh["acts"][0]["verdict"], "hold", "{fresh}");
    assert_ne!(fresh["interactions"][0]["id"], json!(null));

    // A is as A left it: its order cancelled at revision 2, its effect not yet reported.
    let (_, record) = call(&app, "GET", ORDER_PATH, a, None).await;
    assert_eq!((&record["revision"], &record["value"]["status"]), (&json!(2), &json!("cancelled")), "{record}");
    let (status, first) = call(&app, "POST", &path, a, Some(json!({"outcome": "done"}))).await;
    assert_eq!((status, &first["recorded"]), (StatusCode::OK, &json!(true)), "{first}");
    let (_, b_record) = call(&app, "GET", ORDER_PATH, b, None).await;
    assert_eq!(b_record["revision"], 1, "{b_record}");
}

#[tokio::test]
async fn sqlite_a_tenant_never_reads_or_affects_another_tenants_records() {
    isolated(Place::sqlite()).await;
}

#[tokio::test]
async fn postgres_a_tenant_never_reads_or_affects_another_tenants_records() {
    isolated(Place::postgres()).await;
}

#[test]
fn over_a_socket_a_tenant_never_reads_or_affects_another_tenants_records() {
    let mut place = Place::postgres();
    let (_, a) = place.tenant("sa");
    let (_, b) = place.tenant("sb");
    let server = warrant_server::Running::start(&place.config()).unwrap();
    let addr = server.addr;
    let (a, b) = (Some(a.as_str()), Some(b.as_str()));
    let (status, held) = http(addr, "POST", "/v1/turns", a, Some(&request("c", "t1", cancel(), json!([]))));
    assert_eq!(status, 200, "{held}");
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let confirm = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    let (_, done) = http(addr, "POST", "/v1/turns", a, Some(&confirm));
    let effect = done["effects"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) =
        http(addr, "POST", &format!("/v1/effects/{effect}/outcome"), b, Some(&json!({"outcome": "failed"})));
    assert_eq!(status, 404);
    let (_, record) = http(addr, "GET", ORDER_PATH, b, None);
    assert_eq!((&record["revision"], &record["value"]["status"]), (&json!(1), &json!("pending")), "{record}");
    let (_, record) = http(addr, "GET", ORDER_PATH, a, None);
    assert_eq!((&record["revision"], &record["value"]["status"]), (&json!(2), &json!("cancelled")), "{record}");
    let (status, _) = http(addr, "GET", ORDER_PATH, None, None);
    assert_eq!(status, 401);
    let (_, listed) = http(addr, "GET", "/v1/turns", b, None);
    assert_eq!(listed["turns"], Value::Array(vec![]));
}
