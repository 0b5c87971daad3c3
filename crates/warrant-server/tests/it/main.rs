//! The HTTP API through its router (`tower::ServiceExt::oneshot`) and over a real socket: the
//! routes against the OpenAPI document, the JSON errors, tenant isolation, the tool definitions,
//! the review page in headless Chromium.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod api;
mod input;
mod isolation;
mod keys;
mod ladder;
mod openapi;
mod outbound;
mod outcomes;
mod pool;
mod records;
mod review;
mod tools;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use warrant_server::{AppState, ServeConfig, StoreLocation, add_tenant, router};

pub const USER: &str = "yusuf_rossi_9620";
pub const ORDER: &str = "#W6247578";
pub const ORDER_PATH: &str = "/v1/records/order/%23W6247578";

/// A whole order row of the retail contract's schema, its `order_id` its key `key`, of `user`.
pub fn order_row(key: &str, user: &str) -> Value {
    let address = json!({"address1": "1 Main St", "address2": "", "city": "Austin",
        "country": "USA", "state": "TX", "zip": "78701"});
    json!({"order_id": key, "user_id": user, "status": "pending", "address": address,
        "items": [], "fulfillments": [], "payment_history": []})
}

pub fn contract() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml")
}

/// A turn request of the retail example.
pub fn request(conversation: &str, turn: &str, acts: Value, answers: Value) -> Value {
    json!({
        "conversation": conversation,
        "turn": turn,
        "actor": USER,
        "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York",
        "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": acts,
        "answers": answers,
    })
}

pub fn cancel() -> Value {
    json!([{"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}}])
}

/// Where a test's tenants live, removed when it goes.
#[derive(Debug)]
pub enum Place {
    Sqlite(tempfile::TempDir),
    Postgres { url: String, registry: String, tenants: Vec<String> },
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn unique(prefix: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!(
        "{prefix}{}_{}_{}",
        std::process::id(),
        nanos % 100_000,
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

impl Place {
    pub fn sqlite() -> Place {
        Place::Sqlite(tempfile::tempdir().unwrap())
    }

    pub fn postgres() -> Place {
        let url = std::env::var("WARRANT_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        Place::Postgres { url, registry: unique("wsrv_reg_"), tenants: Vec::new() }
    }

    pub fn store(&self) -> String {
        match self {
            Place::Sqlite(dir) => format!("sqlite:{}", dir.path().display()),
            Place::Postgres { url, registry, .. } => format!("{url}?schema={registry}"),
        }
    }

    /// Adds a tenant with a fresh name starting with `prefix`; returns (name, key).
    pub fn tenant(&mut self, prefix: &str) -> (String, String) {
        let name = unique(prefix);
        let (location, owned) = (StoreLocation::parse(&self.store()).unwrap(), name.clone());
        let key = std::thread::spawn(move || add_tenant(&location, &owned)).join().unwrap().unwrap();
        if let Place::Postgres { tenants, .. } = self {
            tenants.push(name.clone());
        }
        (name, key)
    }

    pub fn config(&self) -> ServeConfig {
        ServeConfig::new(contract(), self.store(), "127.0.0.1:0".into())
    }

    pub fn router(&self) -> axum::Router {
        // The blocking PostgreSQL client may not run on an async test's thread.
        let config = self.config();
        router(std::thread::spawn(move || AppState::new(&config)).join().unwrap().unwrap())
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::Postgres { url, registry, tenants } = self {
            let mut sql = format!("DROP SCHEMA IF EXISTS {registry} CASCADE;");
            for tenant in tenants.iter() {
                sql.push_str(&format!("DROP SCHEMA IF EXISTS t_{tenant} CASCADE;"));
            }
            let url = url.clone();
            // The blocking client may not run on an async test's thread.
            let dropped = std::thread::spawn(move || {
                postgres::Client::connect(&url, postgres::NoTls).and_then(|mut client| client.batch_execute(&sql))
            })
            .join();
            if !matches!(dropped, Ok(Ok(()))) {
                eprintln!("cannot drop test schemas: {dropped:?}");
            }
        }
    }
}

/// One request through the router.
pub async fn call(
    router: &axum::Router,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        builder = builder.header("authorization", format!("Bearer {key}"));
    }
    let request = match body {
        Some(body) => builder.header("content-type", "application/json").body(Body::from(body.to_string())).unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    };
    raw(router, request).await
}

/// Any request through the router; the body as JSON, or as a string when it is not JSON.
pub async fn raw(router: &axum::Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// One HTTP/1.1 request over a real socket (`Connection: close`); the status and the body.
pub fn http(addr: SocketAddr, method: &str, path: &str, key: Option<&str>, body: Option<&Value>) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if let Some(key) = key {
        head.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    stream.write_all(format!("{head}\r\n{body}").as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse::<usize>().unwrap());
        }
    }
    let mut bytes = Vec::new();
    match length {
        Some(n) => {
            bytes.resize(n, 0);
            reader.read_exact(&mut bytes).unwrap();
        }
        None => {
            reader.read_to_end(&mut bytes).unwrap();
        }
    }
    let text = String::from_utf8(bytes).unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}
