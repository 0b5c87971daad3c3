//! The records routes: writes from the system of record (`PUT`, `DELETE`, `POST …/import`) and
//! a row read with its revision (`GET`). A row's revision is its `ETag`; `If-Match: REV` makes
//! a write conditional on it, `If-None-Match: *` makes a put a create. Each request is one
//! engine call, which checks the table and the row against the contract.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::header::{CONTENT_TYPE, ETAG, IF_MATCH, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use warrant_core::reason::ReasonCode;
use warrant_store::Precondition;

use crate::AppState;
use crate::request::{ApiError, Tenant, json_body, strict_body};

/// The media types an import's body may be sent as: JSON lines.
const JSON_LINES: &[&str] = &["application/x-ndjson", "application/jsonl"];

/// `table` and `key` from the path.
fn table_key(path: Result<Path<(String, String)>, PathRejection>) -> Result<(String, String), ApiError> {
    let Path(pair) = path.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, None, e.body_text()))?;
    Ok(pair)
}

/// A JSON answer with the row's revision as its `ETag`.
fn tagged(body: Value, revision: i64) -> Response {
    let mut response = axum::Json(body).into_response();
    if let Ok(tag) = HeaderValue::from_str(&format!("\"{revision}\"")) {
        response.headers_mut().insert(ETAG, tag);
    }
    response
}

/// The revision an `If-Match` header names: `"3"` as an `ETag` of this service is written, or
/// a bare `3`.
fn if_match(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(value) = headers.get(IF_MATCH) else { return Ok(None) };
    let text = value.to_str().unwrap_or("").trim();
    let bare = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
    bare.parse::<i64>().map(Some).map_err(|_| {
        ApiError::bad(ReasonCode::InvalidInput, Some("if-match"), format!("`If-Match: {text}` is not a revision"))
    })
}

/// What a put's headers require of the row it replaces.
fn precondition(headers: &HeaderMap) -> Result<Precondition, ApiError> {
    let none_match = match headers.get(IF_NONE_MATCH) {
        None => false,
        Some(value) if value.to_str().is_ok_and(|v| v.trim() == "*") => true,
        Some(_) => {
            let message = "only `If-None-Match: *` (create) is taken".to_owned();
            return Err(ApiError::bad(ReasonCode::InvalidInput, Some("if-none-match"), message));
        }
    };
    match (if_match(headers)?, none_match) {
        (Some(_), true) => Err(ApiError::bad(
            ReasonCode::InvalidInput,
            Some("if-match"),
            "give `If-Match` or `If-None-Match`, not both".into(),
        )),
        (Some(revision), false) => Ok(Precondition::IfMatch(revision)),
        (None, true) => Ok(Precondition::IfNoneMatch),
        (None, false) => Ok(Precondition::Any),
    }
}

/// A row keyed `import`, whose path is the import route's: its `GET`, `PUT` and `DELETE` are
/// the row's, as for any other key.
pub(crate) fn import_key_row() -> axum::routing::MethodRouter<AppState> {
    let key = |path: Result<Path<String>, PathRejection>| path.map(|Path(table)| Path((table, "import".to_owned())));
    axum::routing::get(move |state, tenant, path| get_record(state, tenant, key(path)))
        .put(move |state, tenant, path, headers, body| put_record(state, tenant, key(path), headers, body))
        .delete(move |state, tenant, path, headers| delete_record(state, tenant, key(path), headers))
}

/// The row `key` of `table` with its revision, and the revision as its `ETag`.
pub(crate) async fn get_record(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let (table, key) = table_key(path)?;
    let (table_name, key_name) = (table.clone(), key.clone());
    let record = state.inner.pools.with_engine(&tenant, move |engine| engine.record(&table_name, &key_name)).await?;
    match record {
        Some(record) => Ok(tagged(
            json!({"table": record.table, "key": record.key, "revision": record.revision, "value": record.value}),
            record.revision,
        )),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ReasonCode::UnknownRecord,
            Some("key"),
            format!("no record `{key}` in `{table}`"),
        )),
    }
}

/// The body is the row; the headers say what the row must be before it is replaced.
pub(crate) async fn put_record(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (table, key) = table_key(path)?;
    let text = json_body(&headers, body)?;
    let precondition = precondition(&headers)?;
    let row: Value = strict_body(&text)?;
    let written = state
        .inner
        .pools
        .with_engine(&tenant, move |engine| engine.put_record(&table, &key, &row, precondition))
        .await?;
    let revision = written.revision;
    Ok(tagged(json!(written), revision))
}

/// Deletes the row at the revision `If-Match` names.
pub(crate) async fn delete_record(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (table, key) = table_key(path)?;
    let revision = if_match(&headers)?.ok_or_else(|| {
        ApiError::bad(ReasonCode::InvalidInput, Some("if-match"), "a delete needs `If-Match: REVISION`".into())
    })?;
    let (table_name, key_name) = (table.clone(), key.clone());
    state
        .inner
        .pools
        .with_engine(&tenant, move |engine| engine.delete_record(&table_name, &key_name, revision))
        .await?;
    Ok(axum::Json(json!({"table": table, "key": key, "deleted": revision})).into_response())
}

/// JSON lines, one `{"KEY": ROW}` each, imported all or nothing.
pub(crate) async fn import_records(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(table) = path.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, Some("table"), e.body_text()))?;
    let text = json_lines_body(&headers, body)?;
    let imported = state.inner.pools.with_engine(&tenant, move |engine| engine.import_records(&table, &text)).await?;
    Ok(axum::Json(json!(imported)).into_response())
}

/// The body of an import: JSON lines, within the size limit, UTF-8.
fn json_lines_body(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<String, ApiError> {
    let media = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(|v| v.split(';').next());
    let lines = media.is_some_and(|m| JSON_LINES.iter().any(|t| m.trim().eq_ignore_ascii_case(t)));
    // The JSON reader gives the size and UTF-8 answers; told the body is JSON, it reads it as is.
    let mut as_json = HeaderMap::new();
    as_json.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let text = json_body(&as_json, body)?;
    if !lines {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ReasonCode::UnsupportedMediaType,
            Some("content-type"),
            "send `Content-Type: application/x-ndjson`, one row a line".into(),
        ));
    }
    Ok(text)
}
