//! API keys through the router: the scheme's case, one answer for an unknown tenant and a wrong
//! secret, and keys rotated and revoked while the router runs (it reads the registry on every
//! request), on both stores.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use warrant_server::{StoreLocation, revoke_tenant, rotate_key};

use crate::{ORDER_PATH, Place, call};

/// A `GET` of the order with `authorization` as written; the status, every header but the
/// date, and the body's bytes.
async fn answer(app: &axum::Router, authorization: &str) -> (StatusCode, Vec<(String, Vec<u8>)>, Vec<u8>) {
    let request =
        Request::builder().method("GET").uri(ORDER_PATH).header("authorization", authorization).body(Body::empty());
    let response = app.clone().oneshot(request.unwrap()).await.unwrap();
    let status = response.status();
    let headers = response
        .headers()
        .iter()
        .filter(|(name, _)| *name != "date")
        .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
        .collect();
    let body = response.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, headers, body)
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case() {
    let mut place = Place::sqlite();
    let (_, key) = place.tenant("acme");
    let app = place.router();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let (status, _, body) = answer(&app, &format!("{scheme} {key}")).await;
        assert_eq!(status, StatusCode::OK, "{scheme}: {}", String::from_utf8_lossy(&body));
    }
    for wrong in [format!("Basic {key}"), format!("Bearer{key}"), "Bearer ".to_owned(), key.clone()] {
        let (status, _, _) = answer(&app, &wrong).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{wrong}");
    }
}

#[tokio::test]
async fn an_unknown_tenant_and_a_wrong_secret_get_byte_identical_answers() {
    let mut place = Place::sqlite();
    let (name, key) = place.tenant("acme");
    let app = place.router();
    let secret = key.rsplit_once('.').unwrap().1;
    let flipped: String = secret.chars().map(|c| if c == '0' { '1' } else { '0' }).collect();
    let wrong_secret = format!("wrt_{name}.{flipped}");
    let unknown_tenant = format!("wrt_nobody.{secret}");
    let wrong = answer(&app, &format!("Bearer {wrong_secret}")).await;
    let unknown = answer(&app, &format!("Bearer {unknown_tenant}")).await;
    assert_eq!(wrong.0, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong, unknown, "the answer tells an unknown tenant from a wrong secret");
    // A revoked tenant is refused the same way too.
    let location = StoreLocation::parse(&place.store()).unwrap();
    std::thread::spawn(move || revoke_tenant(&location, &name, "2026-11-29T15:00:00Z").unwrap()).join().unwrap();
    assert_eq!(answer(&app, &format!("Bearer {key}")).await, unknown);
}

/// The router over `place`: a key works until it is rotated, the new one works, and revoking
/// refuses every key; no server restarts in between.
async fn rotation(mut place: Place) {
    let (name, old) = place.tenant("rot");
    let (_, other) = place.tenant("other");
    let app = place.router();
    let ok = |key: &str| {
        let (app, key) = (app.clone(), key.to_owned());
        async move { call(&app, "GET", ORDER_PATH, Some(&key), None).await.0 }
    };
    assert_eq!(ok(&old).await, StatusCode::OK);
    let location = StoreLocation::parse(&place.store()).unwrap();
    let (at, owned) = (location.clone(), name.clone());
    let new = std::thread::spawn(move || rotate_key(&at, &owned).unwrap()).join().unwrap();
    assert_ne!(new, old);
    assert_eq!(ok(&old).await, StatusCode::UNAUTHORIZED, "the old key still works after rotate");
    assert_eq!(ok(&new).await, StatusCode::OK);
    let (at, owned) = (location.clone(), name.clone());
    std::thread::spawn(move || revoke_tenant(&at, &owned, "2026-11-29T15:00:00Z").unwrap()).join().unwrap();
    assert_eq!(ok(&new).await, StatusCode::UNAUTHORIZED, "a revoked tenant's key still works");
    assert_eq!(ok(&old).await, StatusCode::UNAUTHORIZED);
    assert_eq!(ok(&other).await, StatusCode::OK, "another tenant is not touched");
    let (_, error) = call(&app, "GET", ORDER_PATH, Some(&new), None).await;
    assert_eq!(
        error,
        json!({"error": {"code": "unauthorized", "field": "authorization", "message": "the key is not valid"}})
    );
    // Rotating again gives the tenant a working key.
    let newest = std::thread::spawn(move || rotate_key(&location, &name).unwrap()).join().unwrap();
    assert_eq!(ok(&newest).await, StatusCode::OK);
    assert_eq!(ok(&new).await, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn sqlite_a_rotated_key_is_refused_and_its_successor_works_while_the_server_runs() {
    rotation(Place::sqlite()).await;
}

#[tokio::test]
async fn postgres_a_rotated_key_is_refused_and_its_successor_works_while_the_server_runs() {
    rotation(Place::postgres()).await;
}
