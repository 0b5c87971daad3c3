//! The routes through the router: a turn held, confirmed and committed once; a record with its
//! revision; an effect's outcome; the clause gate; and a JSON error with a stable code for every
//! way a request can be wrong, with nothing committed.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

use crate::{ORDER_PATH, Place, call, cancel, raw, request};

#[tokio::test]
async fn a_turn_is_held_confirmed_committed_once_and_its_outcome_recorded() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("acme");
    let app = place.router();
    let key = Some(key.as_str());
    let (status, held) = call(&app, "POST", "/v1/turns", key, Some(request("c", "t1", cancel(), json!([])))).await;
    assert_eq!(status, StatusCode::OK, "{held}");
    assert_eq!(held["acts"][0]["verdict"], "hold");
    assert_eq!(held["reply"], Value::Null);
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let confirm = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    let (_, first) = call(&app, "POST", "/v1/turns", key, Some(confirm.clone())).await;
    assert_eq!(first["acts"][0]["verdict"], "commit", "{first}");
    let (_, mut again) = call(&app, "POST", "/v1/turns", key, Some(confirm)).await;
    assert_eq!(again.as_object_mut().unwrap().remove("repeated"), Some(json!(true)), "{again}");
    assert_eq!(first, again);
    let (status, record) = call(&app, "GET", ORDER_PATH, key, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(record["revision"], 2, "{record}");
    assert_eq!(record["value"]["status"], "cancelled", "{record}");
    let effect = first["effects"][0]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/effects/{effect}/outcome");
    let (status, done) = call(&app, "POST", &path, key, Some(json!({"outcome": "done"}))).await;
    assert_eq!((status, &done["recorded"]), (StatusCode::OK, &json!(true)), "{done}");
    let (_, twice) = call(&app, "POST", &path, key, Some(json!({"outcome": "failed"}))).await;
    assert_eq!((&twice["recorded"], &twice["outcome"]), (&json!(false), &json!("done")), "{twice}");
    let (status, listed) = call(&app, "GET", "/v1/turns?limit=1", key, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["turns"].as_array().unwrap().len(), 1);
    assert_eq!(listed["turns"][0]["turn"], "t2");
    let (_, metrics) = call(&app, "GET", "/metrics", None, None).await;
    let metrics = metrics.as_str().unwrap();
    for line in [
        "warrant_acts_total{verdict=\"hold\"} 1",
        "warrant_acts_total{verdict=\"commit\"} 1",
        "warrant_turns_total{result=\"repeated\"} 1",
        "warrant_http_request_duration_seconds_count",
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
}

#[tokio::test]
async fn a_rejected_request_is_400_with_its_field_and_commits_nothing() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("acme");
    let app = place.router();
    let key = Some(key.as_str());
    let mut bad = request("c", "t1", cancel(), json!([]));
    bad["at"] = json!("yesterday");
    let (status, error) = call(&app, "POST", "/v1/turns", key, Some(bad)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["field"], "at", "{error}");
    assert!(error["error"]["code"].is_string());
    let (_, listed) = call(&app, "GET", "/v1/turns", key, None).await;
    assert_eq!(listed["turns"], json!([]));
    let (_, record) = call(&app, "GET", ORDER_PATH, key, None).await;
    assert_eq!(record["revision"], 1);
    let (_, metrics) = call(&app, "GET", "/metrics", None, None).await;
    assert!(metrics.as_str().unwrap().contains("warrant_turns_total{result=\"rejected\"} 1"));
}

#[tokio::test]
async fn every_kind_of_bad_request_has_its_status_and_stable_code() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("acme");
    let app = place.router();
    let k = Some(key.as_str());
    let body = Some(request("c", "t1", cancel(), json!([])));
    let wrong = format!("{}{}", &key[..key.len() - 1], if key.ends_with('0') { '1' } else { '0' });
    let cases: Vec<(&str, (StatusCode, Value))> = vec![
        ("no key", call(&app, "POST", "/v1/turns", None, body.clone()).await),
        ("a malformed key", call(&app, "POST", "/v1/turns", Some("nope"), body.clone()).await),
        (
            "an unknown tenant",
            call(&app, "GET", "/v1/turns", Some(&format!("wrt_nobody.{}", "0".repeat(64))), None).await,
        ),
        ("a wrong key", call(&app, "GET", "/v1/turns", Some(&wrong), None).await),
        ("an unknown route", call(&app, "GET", "/v1/nothing", k, None).await),
        ("a wrong method", call(&app, "DELETE", "/v1/turns", k, None).await),
        ("an unknown record", call(&app, "GET", "/v1/records/order/nothing", k, None).await),
        (
            "an unknown effect",
            call(&app, "POST", "/v1/effects/eff_nothing/outcome", k, Some(json!({"outcome": "done"}))).await,
        ),
        (
            "a bad outcome body",
            call(&app, "POST", "/v1/effects/eff_nothing/outcome", k, Some(json!({"result": "done"}))).await,
        ),
        ("a bad limit", call(&app, "GET", "/v1/turns?limit=many", k, None).await),
        ("not JSON", call(&app, "POST", "/v1/score", k, Some(json!("text"))).await),
    ];
    let expected = [
        (401, "unauthorized"),
        (401, "unauthorized"),
        (401, "unauthorized"),
        (401, "unauthorized"),
        (404, "no_route"),
        (405, "method_not_allowed"),
        (404, "unknown_record"),
        (404, "unknown_effect"),
        (400, "invalid_input"),
        (400, "invalid_input"),
        (400, "invalid_input"),
    ];
    for ((name, (status, body)), (want_status, want_code)) in cases.iter().zip(expected) {
        assert_eq!((status.as_u16(), body["error"]["code"].as_str()), (want_status, Some(want_code)), "{name}: {body}");
        assert!(body["error"]["message"].is_string(), "{name}: {body}");
    }
    let plain = Request::builder()
        .method("POST")
        .uri("/v1/turns")
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "text/plain")
        .body(Body::from(request("c", "t1", cancel(), json!([])).to_string()))
        .unwrap();
    let (status, body) = raw(&app, plain).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, &json!("unsupported_media_type"))
    );
    let huge = json!({"kind": "user", "text": "x".repeat(2 << 20)});
    let (status, body) = call(&app, "POST", "/v1/score", k, Some(huge)).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::PAYLOAD_TOO_LARGE, &json!("payload_too_large")),
        "{body}"
    );
    // None of it committed anything.
    let (_, listed) = call(&app, "GET", "/v1/turns", k, None).await;
    assert_eq!(listed["turns"], json!([]));
    let (_, metrics) = call(&app, "GET", "/metrics", None, None).await;
    assert!(metrics.as_str().unwrap().contains("warrant_http_errors_total{code=\"unauthorized\"} 4"), "{metrics}");
}

#[tokio::test]
async fn score_answers_the_json_of_warrant_score() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("acme");
    let app = place.router();
    let k = Some(key.as_str());
    let (status, reading) =
        call(&app, "POST", "/v1/score", k, Some(json!({"kind": "user", "text": "Cancel it please."}))).await;
    assert_eq!(status, StatusCode::OK, "{reading}");
    let mut keys: Vec<&String> = reading.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["operations", "rejection", "source_kind", "text"]);
    let (status, error) = call(&app, "POST", "/v1/score", k, Some(json!({"kind": "martian", "text": "hi"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (&error["error"]["code"], &error["error"]["field"]),
        (&json!("unknown_source_kind"), &json!("kind")),
        "{error}"
    );
}

#[tokio::test]
async fn health_and_the_review_page_need_no_key() {
    let place = Place::sqlite();
    let app = place.router();
    let (status, health) = call(&app, "GET", "/health", None, None).await;
    assert_eq!((status, health), (StatusCode::OK, json!({"status": "ok"})));
    let (status, page) = call(&app, "GET", "/", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.as_str().unwrap().contains("/v1/turns?limit="));
}

#[tokio::test]
async fn a_store_that_cannot_open_is_a_json_500_and_the_next_request_tries_again() {
    let mut place = Place::sqlite();
    let (name, key) = place.tenant("broken");
    let crate::Place::Sqlite(dir) = &place else { unreachable!() };
    // A folder where the tenant's SQLite file should be.
    let blocker = dir.path().join(format!("t_{name}.sqlite"));
    std::fs::create_dir(&blocker).unwrap();
    let app = place.router();
    let k = Some(key.as_str());
    let (status, error) = call(&app, "GET", ORDER_PATH, k, None).await;
    assert_eq!((status, &error["error"]["code"]), (StatusCode::INTERNAL_SERVER_ERROR, &json!("internal")), "{error}");
    std::fs::remove_dir(&blocker).unwrap();
    let (status, record) = call(&app, "GET", ORDER_PATH, k, None).await;
    assert_eq!((status, &record["revision"]), (StatusCode::OK, &json!(1)), "{record}");
    let (_, metrics) = call(&app, "GET", "/metrics", None, None).await;
    assert!(metrics.as_str().unwrap().contains("warrant_http_errors_total{code=\"internal\"} 1"), "{metrics}");
}
