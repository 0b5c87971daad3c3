//! `POST /v1/outbound` through the router: seed 003's draft leaves as fallback copy and is
//! stored in the tenant's outbox once; a follow-up with a due time is stored for the scheduler;
//! a bad request names its field; one tenant's outbox is not another's.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::{Place, call};

fn seed_003(path: &str) -> Value {
    json!({"conversation": "seed003", "actor": "yusuf_rossi_9620", "path": path, "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": "Here is the payment link for your order. It's attached below.",
                  "claims": [{"claim": "payment_link_sent", "order": "#W0000000"}]}})
}

#[tokio::test]
async fn a_draft_is_cleared_into_the_tenants_outbox_once_and_a_follow_up_waits_for_its_time() {
    let mut place = Place::sqlite();
    let (_, a) = place.tenant("acme");
    let (_, b) = place.tenant("beta");
    let app = place.router();

    let (status, sent) = call(&app, "POST", "/v1/outbound", Some(&a), Some(seed_003("retry"))).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["basis"], "fallback", "{sent}");
    assert_eq!(sent["claims"], json!([]));
    assert_eq!(sent["reasons"][0]["code"], "claim_not_visible", "no order `#W0000000` exists");
    assert_eq!(sent["outbox"]["duplicate"], false);
    let (_, again) = call(&app, "POST", "/v1/outbound", Some(&a), Some(seed_003("retry"))).await;
    assert_eq!(again["outbox"], json!({"id": sent["outbox"]["id"], "duplicate": true}), "{again}");
    // The other tenant's outbox has never seen it.
    let (_, other) = call(&app, "POST", "/v1/outbound", Some(&b), Some(seed_003("retry"))).await;
    assert_eq!(other["outbox"]["duplicate"], false, "{other}");

    let mut later = seed_003("scheduled");
    later["due"] = json!("2026-11-30T09:00:00Z");
    let (status, scheduled) = call(&app, "POST", "/v1/outbound", Some(&a), Some(later)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{scheduled}");
    assert_eq!(scheduled["scheduled"]["due_at_ms"], 1_796_029_200_000_i64);

    let mut bad = seed_003("queue");
    bad["due"] = json!("2026-11-30T09:00:00Z");
    let (status, error) = call(&app, "POST", "/v1/outbound", Some(&a), Some(bad)).await;
    assert_eq!((status, &error["error"]["field"]), (StatusCode::BAD_REQUEST, &json!("due")), "{error}");
    let mut unknown = seed_003("retry");
    unknown["draft"]["claims"] = json!([{"claim": "payment_link_sent", "order": "#W0000000"}, {"claim": "teleported"}]);
    unknown["extra"] = json!(1);
    let (status, error) = call(&app, "POST", "/v1/outbound", Some(&a), Some(unknown)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("extra"), "{error}");
    let (status, _) = call(&app, "POST", "/v1/outbound", None, Some(seed_003("retry"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
