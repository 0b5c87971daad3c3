//! Bad input through the router: U+0000, a repeated key, an array for an object, an instant
//! RFC 3339 does not allow, a request over the contract's limits are each a 400 naming the
//! field, on PostgreSQL (which cannot keep U+0000) as on SQLite, never a 500; a turn key reused
//! with another request is a 409 that does nothing; and every code the service answers with is
//! one of the reason codes `warrant reasons` prints.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use warrant_core::reason::ReasonCode;

use crate::{Place, call, raw, request};

/// A POST of `text` exactly as given (repeated keys survive only in text).
async fn post_text(app: &axum::Router, path: &str, key: &str, text: &str) -> (StatusCode, Value) {
    let request = Request::builder()
        .method("POST")
        .uri(path)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(Body::from(text.to_owned()))
        .unwrap();
    raw(app, request).await
}

fn turn_text(fields: &str) -> String {
    let base = r#"{"conversation":"c1","turn":"t1","actor":"yusuf_rossi_9620","at":"2026-11-29T15:00:00Z",
        "time_zone":"America/New_York","locale":"en-US""#;
    if fields.is_empty() { format!("{base}}}") } else { format!("{base},{fields}}}") }
}

async fn bad_input_is_400_naming_the_field(mut place: Place) {
    let (_, key) = place.tenant("input");
    let app = place.router();
    let outbound = |fields: &str| {
        format!(r#"{{"conversation":"c1","path":"scheduled","at":"2026-11-29T16:00:00Z","locale":"en-US",{fields}}}"#)
    };
    let cases = [
        ("/v1/turns", turn_text(r#""entries":[{"kind":"user","text":"cancel\u0000it"}]"#), "entries[0].text"),
        ("/v1/turns", turn_text("").replace(r#""t1""#, r#""t\u00001""#), "turn"),
        ("/v1/turns", turn_text(r#""acts":[{"op":"get_user_details","args":{"\u0000":1}}]"#), "acts[0].args.\\u{0000}"),
        (
            "/v1/turns",
            turn_text(r#""acts":[{"op":"get_user_details","args":{"user_id":"a","user_id":"b"}}]"#),
            "acts[0].args.user_id",
        ),
        ("/v1/turns", r#"["c1","t1"]"#.to_owned(), ""),
        ("/v1/turns", turn_text("").replace("15:00:00Z", "15:00:00+25:00"), "at"),
        ("/v1/turns", turn_text("").replace(r#""conversation":"c1","#, ""), "conversation"),
        ("/v1/outbound", outbound(r#""draft":{"text":"Hi\u0000"}"#), "draft.text"),
        ("/v1/outbound", outbound(r#""draft":{"text":"Hi","text":"Bye"}"#), "draft.text"),
        ("/v1/outbound", outbound(r#""due":"2026-11-30T09:00:00+25:00","draft":{"text":"Hi"}"#), "due"),
        ("/v1/score", r#"{"kind":"user","text":"a","kind":"model_reply"}"#.to_owned(), "kind"),
        ("/v1/score", r#"{"kind":"user","text":"a\u0000"}"#.to_owned(), "text"),
        ("/v1/effects/eff_x/outcome", r#"{"outcome":"done","outcome":"failed"}"#.to_owned(), "outcome"),
        ("/v1/effects/eff_x/outcome", r#"{}"#.to_owned(), "outcome"),
        ("/v1/findings/fnd_x/audit", r#"{"label":"clean","who":"ana\u0000"}"#.to_owned(), "who"),
    ];
    for (path, text, field) in &cases {
        let (status, answer) = post_text(&app, path, &key, text).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {text}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_input", "{path} {text}: {answer}");
        let named = answer["error"]["field"].as_str().unwrap_or_default();
        assert_eq!(named, *field, "{path} {text}: {answer}");
    }
    // A far due time is a follow-up like any other.
    let far = outbound(r#""due":"9999-12-30T21:59:59Z","draft":{"text":"We will follow up."}"#);
    let (status, scheduled) = post_text(&app, "/v1/outbound", &key, &far).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{scheduled}");
    assert_eq!(scheduled["scheduled"]["due_at_ms"], 253_402_207_199_000_i64);
    let (_, listed) = call(&app, "GET", "/v1/turns", Some(&key), None).await;
    assert_eq!(listed["turns"], json!([]), "nothing of a refused turn is stored");
}

#[tokio::test]
async fn sqlite_bad_input_is_400_invalid_input_naming_the_field_never_500() {
    bad_input_is_400_naming_the_field(Place::sqlite()).await;
}

#[tokio::test]
async fn postgres_bad_input_is_400_invalid_input_naming_the_field_never_500() {
    bad_input_is_400_naming_the_field(Place::postgres()).await;
}

#[tokio::test]
async fn a_request_over_a_limit_is_400_limit_exceeded_naming_the_limit() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("limits");
    let app = place.router();
    let mut body = request("c", "t1", json!([]), json!([]));
    body["acts"] = Value::Array(vec![json!({"op": "get_user_details", "args": {"user_id": crate::USER}}); 15_000]);
    let (status, answer) = call(&app, "POST", "/v1/turns", Some(&key), Some(body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!((&answer["error"]["code"], &answer["error"]["field"]), (&json!("limit_exceeded"), &json!("acts")));
    assert!(answer["error"]["message"].as_str().unwrap().contains("`limits.acts_per_turn`"), "{answer}");
    let (_, listed) = call(&app, "GET", "/v1/turns", Some(&key), None).await;
    assert_eq!(listed["turns"], json!([]));
}

#[tokio::test]
async fn a_turn_key_reused_with_another_request_is_409_and_does_nothing() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("reuse");
    let app = place.router();
    let k = Some(key.as_str());
    let lookup = |actor: &str| {
        let mut body = request("c", "t1", json!([{"op": "get_user_details", "args": {"user_id": actor}}]), json!([]));
        body["actor"] = json!(actor);
        body
    };
    let (status, first) = call(&app, "POST", "/v1/turns", k, Some(lookup(crate::USER))).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, reused) = call(&app, "POST", "/v1/turns", k, Some(lookup("mia_garcia_4516"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{reused}");
    assert_eq!((&reused["error"]["code"], &reused["error"]["field"]), (&json!("turn_key_reused"), &json!("turn")));
    let (status, mut again) = call(&app, "POST", "/v1/turns", k, Some(lookup(crate::USER))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again.as_object_mut().unwrap().remove("repeated"), Some(json!(true)), "{again}");
    assert_eq!(again, first);
    let (_, listed) = call(&app, "GET", "/v1/turns", k, None).await;
    assert_eq!(listed["turns"].as_array().unwrap().len(), 1);
}

/// Every `"code": "…"` literal and every `ReasonCode::…` named in the service's, the command
/// line's and the engine's sources.
fn codes_in_sources() -> Vec<(String, String)> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for crate_dir in ["warrant-server/src", "warrant-cli/src", "warrant-engine/src"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(crate_dir)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files.iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
            let text = std::fs::read_to_string(file).unwrap();
            let name = file.display().to_string();
            for (i, _) in text.match_indices("\"code\": \"") {
                let rest = &text[i + 9..];
                found.push((name.clone(), rest[..rest.find('"').unwrap()].to_owned()));
            }
            for (i, _) in text.match_indices("ReasonCode::") {
                let rest = &text[i + 12..];
                let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
                found.push((name.clone(), rest[..end].to_owned()));
            }
        }
    }
    found
}

#[tokio::test]
async fn every_code_the_service_answers_with_is_in_the_one_list() {
    // In the sources: no code is spelt as a string; every variant named exists.
    let codes = codes_in_sources();
    assert!(codes.iter().any(|(_, c)| c == "NoRoute"), "the scan finds the codes: {codes:?}");
    for (file, code) in &codes {
        let known = ReasonCode::from_code(code).is_some()
            || ReasonCode::ALL.iter().any(|r| format!("{r:?}") == *code)
            || matches!(code.as_str(), "ALL" | "from_code");
        assert!(known, "{file}: `{code}` is not in `ReasonCode::ALL`");
    }
    // And through the router: every error path's answer is a listed code.
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("codes");
    let app = place.router();
    let k = Some(key.as_str());
    let big = json!({"kind": "user", "text": "x".repeat(2 << 20)});
    let answers = vec![
        call(&app, "GET", "/v1/turns", None, None).await,
        call(&app, "GET", "/v1/nowhere", k, None).await,
        call(&app, "DELETE", "/v1/turns", k, None).await,
        call(&app, "POST", "/v1/score", k, Some(big)).await,
        raw(
            &app,
            Request::builder()
                .method("POST")
                .uri("/v1/score")
                .header("authorization", format!("Bearer {key}"))
                .body(Body::from("{}"))
                .unwrap(),
        )
        .await,
        call(&app, "POST", "/v1/effects/eff_none/outcome", k, Some(json!({"outcome": "done"}))).await,
        call(&app, "POST", "/v1/effects/eff_none/outcome", k, Some(json!({"outcome": "maybe"}))).await,
        call(&app, "GET", "/v1/records/order/none", k, None).await,
        call(&app, "GET", "/v1/guards/nothing/findings", k, None).await,
        call(&app, "POST", "/v1/findings/fnd_none/audit", k, Some(json!({"label": "clean", "who": "ana"}))).await,
        call(&app, "POST", "/v1/score", k, Some(json!({"kind": "martian", "text": "hi"}))).await,
        call(&app, "POST", "/v1/turns", k, Some(json!({"conversation": "c"}))).await,
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (status, answer) in &answers {
        let code = answer["error"]["code"].as_str().unwrap_or_else(|| panic!("{status}: {answer}"));
        assert!(ReasonCode::from_code(code).is_some(), "{status}: `{code}` is not a reason code");
        seen.insert(code.to_owned());
    }
    for code in ["unauthorized", "no_route", "method_not_allowed", "payload_too_large", "unsupported_media_type"] {
        assert!(seen.contains(code), "{code} not reached: {seen:?}");
    }
}
