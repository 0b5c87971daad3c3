//! The OpenAPI document is true: every route of the router is in it, every operation in it is
//! a route of the router and reaches a handler; and real requests and answers of every route,
//! through the router, fit its schemas — every success and every error status it documents,
//! each answer checked with every object closed to fields the document does not name.

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::Request;
use axum::http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use warrant_core::reason::ReasonCode;
use warrant_server::{AppState, ROUTES, ServeConfig, router};

use crate::{ORDER, Place, USER, call, cancel, raw, request};

fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            operations.insert((method.to_uppercase(), path.clone()));
        }
    }
    operations
}

fn document() -> Value {
    serde_json::from_str(include_str!("../../src/openapi.json")).unwrap()
}

#[tokio::test]
async fn every_route_is_documented_and_every_documented_operation_is_served() {
    let place = Place::sqlite();
    let app = place.router();
    let (_, doc) = call(&app, "GET", "/openapi.json", None, None).await;
    assert_eq!(doc["openapi"], "3.1.0", "{doc}");
    assert_eq!(doc, document());
    let documented = documented(&doc);
    let routed: BTreeSet<(String, String)> = ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&routed).collect();
    assert!(undocumented.is_empty(), "routes missing from openapi.json: {undocumented:?}");
    assert!(unserved.is_empty(), "documented but not routed: {unserved:?}");
    // The router really has each one: none falls through to the fallback or the wrong method.
    for (method, path) in &documented {
        let request = Request::builder().method(method.as_str()).uri(concrete(path)).body(Body::empty()).unwrap();
        let (status, body) = raw(&app, request).await;
        let code = body["error"]["code"].as_str().unwrap_or("");
        assert!(code != "no_route" && code != "method_not_allowed", "{method} {path}: {status} {body}");
        // A route that needs a key says so, as the document does.
        let secured = doc["paths"][path][method.to_lowercase()].get("security").is_some();
        assert_eq!(secured, status == 401, "{method} {path}: {status} {body}");
    }
    // And a path that is in neither is not served.
    let (status, body) = call(&app, "GET", "/v1/outbox", None, None).await;
    assert_eq!((status.as_u16(), &body["error"]["code"]), (404, &Value::from("no_route")));
}

#[test]
fn the_documents_reason_codes_are_the_reason_codes() {
    let doc = document();
    let listed: Vec<&str> = doc["components"]["schemas"]["ReasonCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let codes: Vec<&str> = ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(listed, codes, "the `ReasonCode` schema lists every code of `warrant reasons`, in its order");
}

/// Every answer of the records routes: writes under each condition, refused rows, unknown
/// tables and rows, an import all or nothing.
async fn records_routes(c: &mut Checker, app: &axum::Router, k: &str) {
    let (row_route, uri) = ("/v1/records/{table}/{key}", "/v1/records/order/%23N1");
    let row = crate::order_row("#N1", USER);
    c.headers = vec![("if-none-match", "*".into())];
    let (status, created) = c.json(app, ("PUT", row_route, uri), k, Some(row.clone())).await;
    assert_eq!((status, &created["key"]), (200, &json!("#N1")), "{created}");
    let (status, _) = c.json(app, ("PUT", row_route, uri), k, Some(row.clone())).await;
    assert_eq!(status, 409);
    c.headers = vec![("if-match", "\"1\"".into())];
    let (status, replaced) = c.json(app, ("PUT", row_route, uri), k, Some(row.clone())).await;
    assert_eq!((status, &replaced["revision"]), (200, &json!(2)), "{replaced}");
    let none = crate::order_row("#none", USER);
    let (status, _) = c.json(app, ("PUT", row_route, "/v1/records/order/%23none"), k, Some(none)).await;
    assert_eq!(status, 404);
    c.headers = vec![];
    let (status, _) = c.json(app, ("PUT", row_route, "/v1/records/orders/x"), k, Some(row.clone())).await;
    assert_eq!(status, 404);
    let (status, bad) = c.json(app, ("PUT", row_route, uri), k, Some(json!({"price": 47.845}))).await;
    assert_eq!((status, &bad["error"]["field"]), (422, &json!("price")), "{bad}");
    let (status, _) = c.refused(app, ("PUT", row_route, uri), Some(k), Some("[1]")).await;
    assert_eq!(status, 400);

    let (status, _) = c.json(app, ("DELETE", row_route, uri), k, None).await;
    assert_eq!(status, 400, "no If-Match");
    c.headers = vec![("if-match", "1".into())];
    let (status, _) = c.json(app, ("DELETE", row_route, uri), k, None).await;
    assert_eq!(status, 409);
    let (status, _) = c.json(app, ("DELETE", row_route, "/v1/records/order/%23none"), k, None).await;
    assert_eq!(status, 404);
    c.headers = vec![("if-match", "2".into())];
    let (status, deleted) = c.json(app, ("DELETE", row_route, uri), k, None).await;
    assert_eq!((status, &deleted["deleted"]), (200, &json!(2)), "{deleted}");
    c.headers = vec![];

    let import = "/v1/records/{table}/import";
    let lines = |text: &str| Some(("application/x-ndjson", text.to_owned()));
    let good = format!("{}\n{}\n", json!({"#N1": row}), json!({"#N2": crate::order_row("#N2", USER)}));
    let (status, imported) =
        c.exchange(app, ("POST", import, "/v1/records/order/import"), Some(k), lines(&good), false).await;
    assert_eq!((status, &imported["count"]), (200, &json!(2)), "{imported}");
    assert_eq!(imported["revisions"][0], json!({"key": "#N1", "revision": 4}), "{imported}");
    let bad = format!("{}\n{}\n", json!({"#N3": crate::order_row("#N3", USER)}), json!({"#N4": {"amount": 0.001}}));
    let (status, _) = c.exchange(app, ("POST", import, "/v1/records/order/import"), Some(k), lines(&bad), false).await;
    assert_eq!(status, 422);
    let (status, _) =
        c.exchange(app, ("POST", import, "/v1/records/order/import"), Some(k), lines("not json"), false).await;
    assert_eq!(status, 400);
    let (status, _) = c.exchange(app, ("POST", import, "/v1/records/nope/import"), Some(k), lines(&good), false).await;
    assert_eq!(status, 404);
}

fn concrete(path: &str) -> String {
    path.replace("{id}", "eff_x").replace("{guard}", "announcement").replace("{table}", "order").replace("{key}", "k")
}

/// The document's schemas with every object that names its properties closed to others, so
/// that an answer with a field the document does not describe fails.
fn closed(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out: serde_json::Map<String, Value> = map.iter().map(|(k, v)| (k.clone(), closed(v))).collect();
            if out.contains_key("properties") && !out.contains_key("additionalProperties") {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(closed).collect()),
        other => other.clone(),
    }
}

/// What the router was asked and answered, checked against the document.
struct Checker {
    doc: Value,
    components: Value,
    /// (method, route, status) of every answer checked.
    seen: BTreeSet<(String, String, u16)>,
    /// Headers sent with the next requests (the records routes' conditions).
    headers: Vec<(&'static str, String)>,
}

impl Checker {
    fn new() -> Checker {
        let doc = document();
        let components = closed(&doc["components"]);
        Checker { doc, components, seen: BTreeSet::new(), headers: Vec::new() }
    }

    fn validate(&self, schema: &Value, instance: &Value, what: &str) {
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.components,
            "allOf": [schema],
        });
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("{what}: the document's schema does not compile: {e}"));
        let errors: Vec<String> =
            validator.iter_errors(instance).map(|e| format!("{} at `{}`", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{what} does not fit the document:\n  {}\n{instance:#}", errors.join("\n  "));
    }

    /// Sends `body` (JSON) to `route` (the document's path, e.g. `/v1/effects/{id}/outcome`)
    /// at `uri`; checks the request against the operation's body schema when `valid`, and the
    /// answer against the schema of its status, which the operation must document.
    async fn exchange(
        &mut self,
        app: &axum::Router,
        (method, route, uri): (&str, &str, &str),
        key: Option<&str>,
        body: Option<(&str, String)>,
        valid: bool,
    ) -> (u16, Value) {
        let operation = self.doc["paths"][route][method.to_lowercase()].clone();
        assert!(operation.is_object(), "{method} {route} is not documented");
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(key) = key {
            builder = builder.header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in &self.headers {
            builder = builder.header(*name, value.as_str());
        }
        let request = match &body {
            Some((content_type, text)) => {
                if valid {
                    let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
                    assert!(schema.is_object(), "{method} {route} documents no request body");
                    let sent: Value = serde_json::from_str(text).unwrap();
                    self.validate(schema, &sent, &format!("the request to {method} {route}"));
                }
                builder.header(CONTENT_TYPE, *content_type).body(Body::from(text.clone())).unwrap()
            }
            None => builder.body(Body::empty()).unwrap(),
        };
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .unwrap_or("")
            .to_owned();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let documented = &operation["responses"][status.to_string()];
        assert!(documented.is_object(), "{method} {route} answered {status}, which it does not document: {text}");
        let content = &documented["content"][&content_type];
        assert!(content.is_object(), "{method} {route} {status}: `{content_type}` is not documented");
        let answer = if content_type == "application/json" {
            let answer: Value = serde_json::from_str(&text).unwrap();
            self.validate(&content["schema"], &answer, &format!("the {status} answer of {method} {route}"));
            answer
        } else {
            Value::String(text)
        };
        self.seen.insert((method.to_owned(), route.to_owned(), status));
        (status, answer)
    }

    async fn json(
        &mut self,
        app: &axum::Router,
        (method, route, uri): (&str, &str, &str),
        key: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let body = body.map(|b| ("application/json", b.to_string()));
        self.exchange(app, (method, route, uri), Some(key), body, true).await
    }

    /// A request the service must refuse: sent as text, not checked against the request schema.
    async fn refused(
        &mut self,
        app: &axum::Router,
        (method, route, uri): (&str, &str, &str),
        key: Option<&str>,
        text: Option<&str>,
    ) -> (u16, Value) {
        let body = text.map(|t| ("application/json", t.to_owned()));
        self.exchange(app, (method, route, uri), key, body, false).await
    }
}

#[tokio::test]
async fn real_requests_and_answers_of_every_route_fit_the_document() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("doc");
    let app = place.router();
    let k = key.as_str();
    let mut c = Checker::new();

    for route in ["/", "/health", "/metrics", "/openapi.json"] {
        let (status, _) = c.exchange(&app, ("GET", route, route), None, None, true).await;
        assert_eq!(status, 200, "{route}");
    }

    // A turn held, confirmed with a draft and its claims, repeated, and its key reused.
    let turns = ("POST", "/v1/turns", "/v1/turns");
    let (status, held) = c.json(&app, turns, k, Some(request("c", "t1", cancel(), json!([])))).await;
    assert_eq!((status, &held["acts"][0]["verdict"]), (200, &json!("hold")), "{held}");
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let mut confirm = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    confirm["draft"] = json!({"text": "Your order #W6247578 is cancelled. Let me check your account now.",
        "claims": [{"claim": "order_cancelled", "order": ORDER}]});
    confirm["calls"] = json!([{"tool": "cancel_pending_order", "args": {"order_id": ORDER}}]);
    let (status, committed) = c.json(&app, turns, k, Some(confirm.clone())).await;
    assert_eq!(status, 200);
    assert_eq!(committed["effects"].as_array().map(Vec::len), Some(1), "{committed}");
    assert!(committed["reply"].is_object() && committed["findings"].is_array(), "{committed}");
    let (_, repeated) = c.json(&app, turns, k, Some(confirm.clone())).await;
    assert_eq!(repeated["repeated"], true);
    let mut other = confirm.clone();
    other["answers"] = json!([]);
    other["acts"] = json!([{"op": "modify_pending_order_address", "from": "tool_call", "args": {
        "order_id": {"id": "#W4776164", "revision": 1}, "address1": {"ptr": [1, 2], "copy": null}, "address2": "",
        "city": {"ptr": [3, 3]}, "state": "IL", "country": {"ptr": [5, 5]}, "zip": {"ptr": [6, 6]}}}]);
    let (status, reused) = c.json(&app, turns, k, Some(other.clone())).await;
    assert_eq!((status, &reused["error"]["code"]), (409, &json!("turn_key_reused")), "{reused}");
    other["turn"] = json!("t3");
    other["entries"] = json!([{"kind": "user", "text": "12 Elm Springfield IL USA 62701"}]);
    let (status, address) = c.json(&app, turns, k, Some(other)).await;
    assert_eq!(status, 200, "{address}");
    let (status, _) = c.refused(&app, turns, Some(k), Some(r#"{"conversation":"c"}"#)).await;
    assert_eq!(status, 400);

    let listed = ("GET", "/v1/turns", "/v1/turns?limit=2");
    let (_, page) = c.json(&app, listed, k, None).await;
    assert_eq!(page["turns"].as_array().map(Vec::len), Some(2), "{page}");
    let (status, _) = c.refused(&app, ("GET", "/v1/turns", "/v1/turns?limit=many"), Some(k), None).await;
    assert_eq!(status, 400);

    // The effect's outcome, twice; an effect that does not exist; a bad body.
    let effect = committed["effects"][0]["id"].as_str().unwrap();
    let outcome_uri = format!("/v1/effects/{effect}/outcome");
    let outcome = ("POST", "/v1/effects/{id}/outcome", outcome_uri.as_str());
    // With the row as the system of record left it: a bad one refused, then one that diverges.
    let (_, order) = c.json(&app, ("GET", "/v1/records/{table}/{key}", "/v1/records/order/%23W6247578"), k, None).await;
    let mut row = order["value"].clone();
    row["cancel_reason"] = json!("ordered by mistake");
    let rows = |value: &Value| json!({"outcome": "done", "rows": [{"table": "order", "key": ORDER, "value": value}]});
    let (status, _) = c.json(&app, outcome, k, Some(rows(&json!({"status": 1.5, "user_id": USER})))).await;
    assert_eq!(status, 422);
    // With what running it returned, kept with the outcome and answered by GET /v1/effects/{id}.
    let mut reported = rows(&row);
    reported["result"] = json!({"cancelled": ORDER});
    let (status, recorded) = c.json(&app, outcome, k, Some(reported)).await;
    assert_eq!((status, &recorded["recorded"]), (200, &json!(true)));
    assert_eq!(recorded["findings"][0]["code"], "effect_diverged", "{recorded}");
    let (_, again) = c.json(&app, outcome, k, Some(json!({"outcome": "failed"}))).await;
    assert_eq!(again["recorded"], false);
    let (_, page) = c.json(&app, listed, k, None).await;
    assert!(page["turns"].as_array().unwrap().iter().any(|t| t["effects"][0]["outcome"] == "done"), "{page}");
    let effect_uri = format!("/v1/effects/{effect}");
    let (status, stored) = c.json(&app, ("GET", "/v1/effects/{id}", effect_uri.as_str()), k, None).await;
    assert_eq!((status, &stored["outcome"], &stored["result"]), (200, &json!("done"), &json!({"cancelled": ORDER})));
    let (status, _) = c.json(&app, ("GET", "/v1/effects/{id}", "/v1/effects/eff_none"), k, None).await;
    assert_eq!(status, 404);
    let nothing = ("POST", "/v1/effects/{id}/outcome", "/v1/effects/eff_none/outcome");
    let (status, _) = c.json(&app, nothing, k, Some(json!({"outcome": "done"}))).await;
    assert_eq!(status, 404);
    let (status, _) = c.refused(&app, outcome, Some(k), Some(r#"{"outcome":"done","outcome":"done"}"#)).await;
    assert_eq!(status, 400);

    // The outbound gate: a message stored, a follow-up scheduled, a request refused.
    let outbound = ("POST", "/v1/outbound", "/v1/outbound");
    let message = json!({"conversation": "c", "actor": USER, "path": "retry", "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "channel": "support_webhook", "draft": {"text": "Your order #W6247578 is cancelled.",
        "claims": [{"claim": "order_cancelled", "order": ORDER}]}});
    let (status, sent) = c.json(&app, outbound, k, Some(message.clone())).await;
    assert_eq!((status, &sent["actor"]), (200, &json!(USER)), "{sent}");
    let mut later = message.clone();
    later["path"] = json!("scheduled");
    later["due"] = json!("2026-11-30T16:00:00+09:00");
    let (status, _) = c.json(&app, outbound, k, Some(later)).await;
    assert_eq!(status, 202);
    let (status, _) = c.refused(&app, outbound, Some(k), Some(r#"{"conversation":"c","path":"nowhere"}"#)).await;
    assert_eq!(status, 400);

    let score = ("POST", "/v1/score", "/v1/score");
    let (status, reading) = c.json(&app, score, k, Some(json!({"kind": "user", "text": "Cancel it. Now."}))).await;
    assert_eq!((status, reading["rejection"].is_object()), (200, true), "{reading}");
    let (status, _) = c.json(&app, score, k, Some(json!({"kind": "martian", "text": "hi"}))).await;
    assert_eq!(status, 400);

    let render = ("POST", "/v1/render", "/v1/render");
    let (status, rendering) = c.json(&app, render, k, Some(json!({"text": "Ship it to Dana Reyes."}))).await;
    assert_eq!((status, &rendering["rendered"]), (200, &json!("[1]Ship [2]it [3]to [4]Dana [5]Reyes.")), "{rendering}");
    let (status, _) = c.refused(&app, render, Some(k), Some(r#"{"text":"a","kind":"user"}"#)).await;
    assert_eq!(status, 400);

    // The tool definitions in each format, the default one, a format that is not one.
    for format in ["openai", "anthropic", "mcp"] {
        let uri = format!("/v1/tools?format={format}");
        let (status, listed) = c.json(&app, ("GET", "/v1/tools", uri.as_str()), k, None).await;
        let tools = if format == "mcp" { &listed["tools"] } else { &listed };
        assert_eq!((status, tools.as_array().map(|t| !t.is_empty())), (200, Some(true)), "{format}: {listed}");
    }
    let (_, default) = c.json(&app, ("GET", "/v1/tools", "/v1/tools"), k, None).await;
    assert!(default["tools"].is_array(), "{default}");
    let (status, _) = c.refused(&app, ("GET", "/v1/tools", "/v1/tools?format=gemini"), Some(k), None).await;
    assert_eq!(status, 400);

    let record_uri = "/v1/records/order/%23W6247578";
    let (status, record) = c.json(&app, ("GET", "/v1/records/{table}/{key}", record_uri), k, None).await;
    assert_eq!((status, &record["value"]["status"]), (200, &json!("cancelled")), "{record}");
    let (status, _) = c.json(&app, ("GET", "/v1/records/{table}/{key}", "/v1/records/order/none"), k, None).await;
    assert_eq!(status, 404);
    records_routes(&mut c, &app, k).await;

    // Findings, an audit of one, the same audit again, and the ladder.
    let findings_uri = "/v1/guards/announcement/findings?limit=5";
    let (status, findings) = c.json(&app, ("GET", "/v1/guards/{guard}/findings", findings_uri), k, None).await;
    assert_eq!(status, 200);
    let finding = findings["findings"][0]["finding"]["id"].as_str().expect("the draft's announcement is a finding");
    let (status, _) =
        c.json(&app, ("GET", "/v1/guards/{guard}/findings", "/v1/guards/loyalty/findings"), k, None).await;
    assert_eq!(status, 404);
    let bad_query = "/v1/guards/announcement/findings?sort=new";
    let (status, _) = c.refused(&app, ("GET", "/v1/guards/{guard}/findings", bad_query), Some(k), None).await;
    assert_eq!(status, 400);
    let audit_uri = format!("/v1/findings/{finding}/audit");
    let audit = ("POST", "/v1/findings/{id}/audit", audit_uri.as_str());
    let label = json!({"label": "true_positive", "who": "ana"});
    let (status, _) = c.json(&app, audit, k, Some(label.clone())).await;
    assert_eq!(status, 200);
    let (status, _) = c.json(&app, audit, k, Some(label.clone())).await;
    assert_eq!(status, 409);
    let (status, _) =
        c.json(&app, ("POST", "/v1/findings/{id}/audit", "/v1/findings/fnd_none/audit"), k, Some(label)).await;
    assert_eq!(status, 404);
    let (status, _) = c.refused(&app, audit, Some(k), Some(r#"{"label":"maybe","who":"ana"}"#)).await;
    assert_eq!(status, 400);
    let (_, findings) = c.json(&app, ("GET", "/v1/guards/{guard}/findings", findings_uri), k, None).await;
    assert!(findings["findings"][0]["audit"].is_object(), "{findings}");
    let (status, ladder) = c.json(&app, ("GET", "/v1/ladder", "/v1/ladder"), k, None).await;
    assert_eq!(status, 200, "{ladder}");

    // Every secured route without a key; every body in another media type and over the limit.
    for &(method, route) in ROUTES {
        let operation = c.doc["paths"][route][method.to_lowercase()].clone();
        let uri = concrete(route);
        if operation.get("security").is_some() {
            let (status, _) = c.refused(&app, (method, route, uri.as_str()), None, None).await;
            assert_eq!(status, 401, "{method} {route}");
        }
        if operation.get("requestBody").is_some() {
            let plain = Some(("text/plain", "{}".to_owned()));
            let (status, _) = c.exchange(&app, (method, route, uri.as_str()), Some(k), plain, false).await;
            assert_eq!(status, 415, "{method} {route}");
            let huge = json!({"text": "x".repeat(2 << 20)}).to_string();
            let (status, _) = c.refused(&app, (method, route, uri.as_str()), Some(k), Some(&huge)).await;
            assert_eq!(status, 413, "{method} {route}");
        }
    }

    // The clause gate's readings, from a contract with a score.
    let score_en = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/score-en/contract.toml");
    let config = ServeConfig::new(score_en, place.store(), "127.0.0.1:0".into());
    let scored = router(std::thread::spawn(move || AppState::new(&config)).join().unwrap().unwrap());
    let mut read = request("s", "t1", json!([]), json!([]));
    read["entries"] = json!([{"kind": "model_reply", "text": "I'll pass this to a colleague who can help."},
        {"kind": "model_reply", "text": "Hello there."}]);
    let (status, readings) = c.json(&scored, turns, k, Some(read)).await;
    assert_eq!(status, 200);
    assert_eq!(readings["readings"][0]["operations"][0]["op"], "escalate", "{readings}");
    assert!(readings["readings"][1]["rejection"].is_object(), "{readings}");

    // Every status the document gives an operation, but a failing store's, was answered.
    let mut missing = Vec::new();
    for (path, item) in c.doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for status in operation["responses"].as_object().unwrap().keys() {
                let status: u16 = status.parse().unwrap();
                if status < 500 && !c.seen.contains(&(method.to_uppercase(), path.clone(), status)) {
                    missing.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "documented but never answered in this test: {missing:#?}");
}
