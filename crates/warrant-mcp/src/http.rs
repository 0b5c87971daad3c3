//! The gateway over streamable HTTP: one MCP session per `mcp-session-id`, its conversation;
//! every request authenticated by an API key of the tenant registry `warrant tenant` keeps, whose
//! tenant name is the actor the calls are decided for. The actor comes from the key alone,
//! never from what the client or the model sends. A session is bound to the tenant whose key
//! opened it: a request of another key in that session (a call, or the answer to an
//! elicitation) is refused, so no key can act in, or answer for, another tenant's session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use warrant_server::tenants::{self, StoreLocation};
use warrant_store::Registry;

use crate::Gateway;

/// The actor an API key opened, put on the request for the gateway to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// The header that names a streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The header a client sends on every request to resume a conversation of its tenant across
/// MCP sessions (a restarted client): its calls are keyed in that conversation, so one sent
/// again is answered from the record and a held one is put to the user again.
pub const RESUME_HEADER: &str = "warrant-session";

/// The conversation of a resumed session: the tenant's own, so that no key reaches another
/// tenant's; `None` for a name that is not 1 to 128 letters, digits, `-` or `_`.
pub fn resumed_conversation(actor: &str, name: &str) -> Option<String> {
    let valid = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then(|| format!("mcp-http-{actor}-{name}"))
}

#[derive(Clone)]
struct Keys {
    registry: Arc<Mutex<Registry>>,
    /// Each session the gateway opened, with the tenant whose key opened it.
    sessions: Arc<Mutex<HashMap<String, String>>>,
}

/// The router: the MCP endpoint at `/mcp`, behind the key check.
pub fn router(
    gateway: Gateway,
    location: &StoreLocation,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<axum::Router, String> {
    let registry = location.registry().map_err(|e| format!("the key registry: {e}"))?;
    let keys = Keys { registry: Arc::new(Mutex::new(registry)), sessions: Arc::default() };
    let config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    let service =
        StreamableHttpService::new(move || Ok(gateway.clone()), Arc::new(LocalSessionManager::default()), config);
    Ok(axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(keys, authenticate)))
}

/// Opens the request with its bearer key, or answers 401 naming why; a request in a session
/// another tenant's key opened (or one the gateway never opened) is answered 403.
async fn authenticate(State(keys): State<Keys>, mut request: Request, next: Next) -> Response {
    let key = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_owned());
    let Some(key) = key else { return unauthorized("an `Authorization: Bearer KEY` header is required") };
    let claimed = tenants::claimed_tenant(&key);
    let stored = match &claimed {
        None => None,
        Some(tenant) => {
            let registry = keys.registry.clone();
            let name = tenant.as_str().to_owned();
            let found = tokio::task::spawn_blocking(move || {
                let mut registry = registry.lock().map_err(|_| "the registry lock is poisoned".to_owned())?;
                registry.key_hash(&name).map_err(|e| e.to_string())
            })
            .await;
            match found {
                Ok(Ok(hash)) => hash,
                Ok(Err(e)) => return internal(&e),
                Err(e) => return internal(&e.to_string()),
            }
        }
    };
    let tenant = match claimed {
        Some(tenant) if tenants::key_opens(&key, stored.as_deref()) => tenant.as_str().to_owned(),
        _ => return unauthorized("the key is not valid"),
    };
    let session = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(session) = &session {
        let owner = match keys.sessions.lock() {
            Ok(sessions) => sessions.get(session).cloned(),
            Err(_) => return internal("the session lock is poisoned"),
        };
        if owner.as_deref() != Some(tenant.as_str()) {
            return forbidden(&format!("the MCP session `{session}` was not opened by this key"));
        }
    }
    let closing = request.method() == axum::http::Method::DELETE;
    request.extensions_mut().insert(Principal(tenant.clone()));
    let mut response = next.run(request).await;
    // A session ended by DELETE is answered 200 with no body: rmcp says 202, which clients
    // (the Python `mcp` client among them) read as a termination that failed.
    if closing && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    let opened = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Ok(mut sessions) = keys.sessions.lock() {
        match (&session, opened) {
            (None, Some(opened)) => {
                sessions.insert(opened, tenant);
            }
            (Some(session), _) if closing && response.status().is_success() => {
                sessions.remove(session);
            }
            _ => {}
        }
    }
    response
}

fn unauthorized(message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": "unauthorized", "message": message}});
    (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
}

fn forbidden(message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": "unauthorized", "message": message}});
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}

fn internal(message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": "internal", "message": format!("registry: {message}")}});
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}
