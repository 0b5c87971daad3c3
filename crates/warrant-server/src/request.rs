//! What every handler reads from a request and how it answers an error: the tenant its key
//! opens, its JSON body, its query string, and the JSON error answer with its stable code.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::FromRequestParts;
use axum::extract::Query;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use warrant_core::reason::ReasonCode;
use warrant_engine::EngineError;
use warrant_store::RecordConflict;

use crate::AppState;
use crate::pool::PoolError;
use crate::tenants::{self, TenantName};

/// The most turns `GET /v1/turns` answers with.
pub(crate) const MAX_TURNS: usize = 200;

/// A JSON error answer. Its code is a [`ReasonCode`], so every code the service answers with
/// is in the one list `warrant reasons` prints.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: ReasonCode,
    field: Option<String>,
    message: String,
}

/// The code of an error answer, for the metrics layer.
#[derive(Debug, Clone)]
pub(crate) struct ErrorCode(pub(crate) String);

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: ReasonCode, field: Option<&str>, message: String) -> ApiError {
        ApiError { status, code, field: field.map(str::to_owned), message }
    }

    pub(crate) fn bad(code: ReasonCode, field: Option<&str>, message: String) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, field, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error_response(
            self.status,
            self.code,
            json!({"error": {"code": self.code, "field": self.field, "message": self.message}}),
        )
    }
}

/// The answer to input the core refused: its reason code, the field at fault and why; 409 for
/// a turn key reused with another request, 400 for the rest.
pub(crate) fn refused_input(code: ReasonCode, field: Option<&str>, message: &str) -> Response {
    error_response(refused_status(code), code, json!({"error": {"code": code, "field": field, "message": message}}))
}

pub(crate) fn refused_status(code: ReasonCode) -> StatusCode {
    if code == ReasonCode::TurnKeyReused { StatusCode::CONFLICT } else { StatusCode::BAD_REQUEST }
}

pub(crate) fn error_response(status: StatusCode, code: ReasonCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    response.extensions_mut().insert(ErrorCode(code.as_str().to_owned()));
    response
}

impl From<PoolError> for ApiError {
    fn from(error: PoolError) -> ApiError {
        match error {
            PoolError::Engine(EngineError::Contention(_)) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ReasonCode::Contention, None, error.to_string())
            }
            PoolError::Engine(EngineError::UnknownTable(_)) => {
                ApiError::new(StatusCode::NOT_FOUND, ReasonCode::UnknownTable, Some("table"), error.to_string())
            }
            PoolError::Engine(EngineError::InvalidRow(ref row)) => {
                let field = row.field().map(str::to_owned);
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    ReasonCode::InvalidRecord,
                    field.as_deref(),
                    error.to_string(),
                )
            }
            PoolError::Engine(EngineError::InvalidImport { .. }) => {
                ApiError::bad(ReasonCode::InvalidInput, None, error.to_string())
            }
            PoolError::Engine(EngineError::Conflict(RecordConflict::Absent { .. })) => {
                ApiError::new(StatusCode::NOT_FOUND, ReasonCode::UnknownRecord, Some("key"), error.to_string())
            }
            PoolError::Engine(EngineError::Conflict(ref conflict)) => {
                let field =
                    if matches!(conflict, RecordConflict::Present { .. }) { "if-none-match" } else { "if-match" };
                ApiError::new(StatusCode::CONFLICT, ReasonCode::StaleRevision, Some(field), error.to_string())
            }
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ReasonCode::Internal, None, other.to_string()),
        }
    }
}

/// The tenant a request's key opened, filled in by [`Tenant`]'s check, for the request's log
/// line. Only a checked key names a tenant there: a refused one logs none.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestTenant(pub(crate) Arc<OnceLock<TenantName>>);

/// The tenant whose key came with the request.
#[derive(Debug)]
pub(crate) struct Tenant(pub(crate) TenantName);

impl FromRequestParts<AppState> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Tenant, ApiError> {
        let unauthorized = |message: &str| {
            ApiError::new(StatusCode::UNAUTHORIZED, ReasonCode::Unauthorized, Some("authorization"), message.into())
        };
        let header =
            parts.headers.get(AUTHORIZATION).ok_or_else(|| unauthorized("give `Authorization: Bearer KEY`"))?;
        let key = header
            .to_str()
            .ok()
            .and_then(bearer_token)
            .ok_or_else(|| unauthorized("give `Authorization: Bearer KEY`"))?
            .to_owned();
        // An unknown tenant, a revoked one and a wrong secret take one path: the registry is
        // read for the tenant the key names, and the key is compared once, with a stand-in hash
        // where there is none, so the answer and the work are the same.
        let claimed = tenants::claimed_tenant(&key);
        let stored = match &claimed {
            None => None,
            Some(tenant) => {
                let registry = state.inner.registry.clone();
                let name = tenant.clone();
                let read = move || {
                    let mut registry = registry.lock().map_err(|_| "the registry lock is poisoned".to_owned())?;
                    let registry = registry.as_mut().ok_or_else(|| "the registry is closed".to_owned())?;
                    registry.key_hash(name.as_str()).map_err(|e| e.to_string())
                };
                // Read here, on the request's own thread, where a read never waits (a SQLite
                // file in WAL mode); on the blocking pool where it is a round trip away.
                let found = if state.inner.registry_inline {
                    read()
                } else {
                    tokio::task::spawn_blocking(read).await.map_err(|e| e.to_string()).and_then(|r| r)
                };
                found.map_err(|e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        ReasonCode::Internal,
                        None,
                        format!("registry: {e}"),
                    )
                })?
            }
        };
        match claimed {
            Some(tenant) if tenants::key_opens(&key, stored.as_deref()) => {
                if let Some(RequestTenant(slot)) = parts.extensions.get::<RequestTenant>() {
                    let _ = slot.set(tenant.clone());
                }
                Ok(Tenant(tenant))
            }
            _ => Err(unauthorized("the key is not valid")),
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header. The scheme is case-insensitive
/// (RFC 9110 §11.1): `bearer` and `BEARER` are `Bearer`.
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The body of a JSON request: the right content type, within the size limit, UTF-8.
pub(crate) fn json_body(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<String, ApiError> {
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ReasonCode::PayloadTooLarge,
                None,
                "the body is over the size limit".into(),
            )
        } else {
            ApiError::bad(ReasonCode::InvalidInput, None, rejection.body_text())
        }
    })?;
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ReasonCode::UnsupportedMediaType,
            Some("content-type"),
            "send `Content-Type: application/json`".into(),
        ));
    }
    // The collected body is handed over, not copied.
    String::from_utf8(Vec::from(body))
        .map_err(|_| ApiError::bad(ReasonCode::InvalidInput, None, "the body is not UTF-8".into()))
}

/// Reads a JSON body strictly, as the core reads every request ([`warrant_core::wire`]): one
/// object, no repeated key, no U+0000; the error names the field at fault.
pub(crate) fn strict_body<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    warrant_core::wire::check(text)
        .and_then(|()| warrant_core::wire::from_str(text))
        .map_err(|e| ApiError::bad(e.code, (!e.field.is_empty()).then_some(e.field.as_str()), e.message))
}

/// A query string as (name, value) pairs, each name one of `known`: an unknown name is an
/// error naming it, so a misspelt filter never silently widens an answer.
pub(crate) fn query_pairs(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    known: &[&str],
) -> Result<Vec<(String, String)>, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, None, e.body_text()))?;
    if let Some((name, _)) = pairs.iter().find(|(name, _)| !known.contains(&name.as_str())) {
        return Err(ApiError::bad(
            ReasonCode::InvalidInput,
            Some(name),
            format!("unknown query parameter `{name}`; known: {}", known.join(", ")),
        ));
    }
    Ok(pairs)
}

/// The value of query parameter `name`, parsed, if given.
pub(crate) fn query_value<T: std::str::FromStr>(
    pairs: &[(String, String)],
    name: &str,
    what: &str,
) -> Result<Option<T>, ApiError> {
    match pairs.iter().rev().find(|(n, _)| n == name) {
        None => Ok(None),
        Some((_, value)) => value.parse().map(Some).map_err(|_| {
            ApiError::bad(ReasonCode::InvalidInput, Some(name), format!("`{name}={value}` is not {what}"))
        }),
    }
}

/// The page size a query asks for: `limit`, 1 to `MAX_TURNS`, 20 unless given.
pub(crate) fn page_limit(pairs: &[(String, String)]) -> Result<usize, ApiError> {
    let limit = query_value::<usize>(pairs, "limit", "a whole number")?.unwrap_or(20);
    if !(1..=MAX_TURNS).contains(&limit) {
        return Err(ApiError::bad(
            ReasonCode::InvalidInput,
            Some("limit"),
            format!("`limit` must be 1 to {MAX_TURNS}, not {limit}"),
        ));
    }
    Ok(limit)
}
