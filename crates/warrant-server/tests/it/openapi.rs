//! The OpenAPI document is true: every route of the router is in it, every operation in it is
//! a route of the router, and each one reaches a handler.

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::Request;
use serde_json::Value;

use warrant_server::ROUTES;

use crate::{Place, call, raw};

fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            operations.insert((method.to_uppercase(), path.clone()));
        }
    }
    operations
}

#[tokio::test]
async fn every_route_is_documented_and_every_documented_operation_is_served() {
    let place = Place::sqlite();
    let app = place.router();
    let (_, doc) = call(&app, "GET", "/openapi.json", None, None).await;
    assert_eq!(doc["openapi"], "3.1.0", "{doc}");
    let documented = documented(&doc);
    let routed: BTreeSet<(String, String)> = ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&routed).collect();
    assert!(undocumented.is_empty(), "routes missing from openapi.json: {undocumented:?}");
    assert!(unserved.is_empty(), "documented but not routed: {unserved:?}");
    // The router really has each one: none falls through to the fallback or the wrong method.
    for (method, path) in &documented {
        let concrete = path
            .replace("{id}", "eff_x")
            .replace("{guard}", "announcement")
            .replace("{table}", "orders")
            .replace("{key}", "k");
        let request = Request::builder().method(method.as_str()).uri(&concrete).body(Body::empty()).unwrap();
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
