//! The routes and their handlers. Each handler checks the request's shape (its parts are read
//! in `request.rs`), finds the tenant from its key, and makes one engine call; errors are
//! `{"error":{code,field,message}}` with a stable code, whatever went wrong.

use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Query, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use warrant_core::reason::ReasonCode;
use warrant_core::report;
use warrant_core::tools::{self, ToolFormat};
use warrant_engine::{OutcomeReply, OutcomeRow, Submitted, TurnResult};
use warrant_telemetry::{Parent, RequestSpan, TurnTrace};

use crate::AppState;
use crate::request::{
    ApiError, ErrorCode, RequestTenant, Tenant, error_response, json_body, page_limit, query_pairs, query_value,
    refused_input, refused_status, strict_body,
};
use crate::tenants::TenantName;

/// Every route: method and path, as the OpenAPI document lists them. The router is built from
/// this list and nothing else, and a test holds the list and the document to each other.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/health"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("POST", "/v1/turns"),
    ("GET", "/v1/turns"),
    ("POST", "/v1/effects/{id}/outcome"),
    ("GET", "/v1/effects/{id}"),
    ("POST", "/v1/outbound"),
    ("POST", "/v1/score"),
    ("POST", "/v1/render"),
    ("GET", "/v1/tools"),
    ("GET", "/v1/records/{table}/{key}"),
    ("PUT", "/v1/records/{table}/{key}"),
    ("DELETE", "/v1/records/{table}/{key}"),
    ("POST", "/v1/records/{table}/import"),
    ("GET", "/v1/guards/{guard}/findings"),
    ("POST", "/v1/findings/{id}/audit"),
    ("GET", "/v1/ladder"),
];

const OPENAPI: &str = include_str!("openapi.json");
const REVIEW_PAGE: &str = include_str!("review.html");

fn endpoint(method: &str, path: &str) -> Option<MethodRouter<AppState>> {
    Some(match (method, path) {
        ("GET", "/") => get(review_page),
        ("GET", "/health") => get(health),
        ("GET", "/metrics") => get(metrics),
        ("GET", "/openapi.json") => get(openapi),
        ("POST", "/v1/turns") => post(post_turn),
        ("GET", "/v1/turns") => get(list_turns),
        ("POST", "/v1/effects/{id}/outcome") => post(post_outcome),
        ("GET", "/v1/effects/{id}") => get(get_effect),
        ("POST", "/v1/outbound") => post(post_outbound),
        ("POST", "/v1/score") => post(post_score),
        ("POST", "/v1/render") => post(post_render),
        ("GET", "/v1/tools") => get(get_tools),
        ("GET", "/v1/records/{table}/{key}") => get(crate::records::get_record),
        ("PUT", "/v1/records/{table}/{key}") => put(crate::records::put_record),
        ("DELETE", "/v1/records/{table}/{key}") => delete(crate::records::delete_record),
        ("POST", "/v1/records/{table}/import") => crate::records::import_key_row().post(crate::records::import_records),
        ("GET", "/v1/guards/{guard}/findings") => get(crate::ladder::list_findings),
        ("POST", "/v1/findings/{id}/audit") => post(crate::ladder::post_audit),
        ("GET", "/v1/ladder") => get(crate::ladder::get_ladder),
        _ => return None,
    })
}

/// The application: every route of [`ROUTES`], JSON errors for the rest, request metrics,
/// the body limit, and a JSON 500 for a handler that panics.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for (method, path) in ROUTES {
        if let Some(endpoint) = endpoint(method, path) {
            router = router.route(path, endpoint);
        }
    }
    let limit = state.inner.body_limit;
    router
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, ReasonCode::NoRoute, None, "no such route".into()) })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                ReasonCode::MethodNotAllowed,
                None,
                "the route does not take this method".into(),
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), track))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ReasonCode::Internal, None, "the handler failed".into())
                .into_response()
        }))
        .with_state(state)
}

/// The trace a request's work joins: its own span's, when spans are exported.
#[derive(Debug, Clone, Default)]
struct RequestTrace(Option<Parent>);

/// Metrics, one log line per request: method, route (the route's template, so ids in
/// paths are not logged), status, duration, and the tenant whose key was accepted; and, when
/// spans are exported, the request's span, a child of the caller's `traceparent`.
async fn track(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().map_or("-", MatchedPath::as_str).to_owned();
    let tenant = RequestTenant::default();
    request.extensions_mut().insert(tenant.clone());
    let span = state.inner.telemetry.as_ref().map(|telemetry| {
        let headers = request.headers().iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        telemetry.request(&Parent::from_headers(headers), method.as_str(), &route)
    });
    request.extensions_mut().insert(RequestTrace(span.as_ref().map(RequestSpan::parent)));
    let response = next.run(request).await;
    if let Some(span) = span {
        span.end(response.status().as_u16(), tenant.0.get().map(TenantName::as_str));
    }
    let elapsed = started.elapsed();
    let metrics = &state.inner.metrics;
    metrics.latency(elapsed);
    if let Some(ErrorCode(code)) = response.extensions().get::<ErrorCode>() {
        metrics.error(code);
    }
    tracing::info!(
        target: "warrant::request",
        method = %method,
        route = %route,
        status = response.status().as_u16(),
        duration_ms = format_args!("{:.3}", elapsed.as_secs_f64() * 1000.0),
        tenant = %tenant.0.get().map_or("-", TenantName::as_str),
    );
    response
}

async fn review_page() -> Html<&'static str> {
    Html(REVIEW_PAGE)
}

async fn health() -> axum::Json<Value> {
    axum::Json(json!({"status": "ok"}))
}

async fn metrics(State(state): State<AppState>) -> Response {
    let mut response = state.inner.metrics.render(state.inner.pools.opened()).into_response();
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    response
}

async fn openapi() -> Response {
    let mut response = OPENAPI.into_response();
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn post_turn(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    trace: Option<axum::Extension<RequestTrace>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let text = json_body(&headers, body)?;
    let traced = state.inner.telemetry.clone().map(|t| (t, trace.and_then(|t| t.0.0).unwrap_or_default()));
    let name = tenant.clone();
    let result = state
        .inner
        .pools
        .with_engine(&tenant, move |engine| {
            let Some((telemetry, parent)) = traced else { return engine.turn(&text) };
            let (started, clock) = (SystemTime::now(), Instant::now());
            let result = engine.turn(&text);
            let turn = TurnTrace {
                started,
                elapsed: clock.elapsed(),
                tenant: Some(name.as_str()),
                request: &text,
                result: result.as_ref(),
                tasks: engine.turn_tasks(),
            };
            telemetry.turn(&parent, &turn);
            result
        })
        .await?;
    let metrics = &state.inner.metrics;
    Ok(match &result {
        TurnResult::Decided { response, repeated } => {
            metrics.turn(if *repeated { "repeated" } else { "decided" });
            if !repeated {
                for act in &response.acts {
                    if let Ok(Value::String(verdict)) = serde_json::to_value(act.verdict) {
                        metrics.act(&verdict);
                    }
                }
            }
            json_answer(StatusCode::OK, decided_json(response, *repeated))
        }
        TurnResult::Rejected(error) => {
            metrics.turn("rejected");
            error_response(refused_status(error.code), error.code, result.to_json())
        }
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutcomeBody {
    outcome: String,
    /// The rows as the system of record left them.
    #[serde(default)]
    rows: Vec<OutcomeRow>,
    /// What running the effect returned, kept with the outcome.
    #[serde(default)]
    result: Option<Value>,
}

async fn post_outcome(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, Some("id"), e.body_text()))?;
    let text = json_body(&headers, body)?;
    let body: OutcomeBody = strict_body(&text)?;
    let reply = state
        .inner
        .pools
        .with_engine(&tenant, move |engine| {
            engine.report_outcome_with(&id, &body.outcome, &body.rows, body.result.as_ref())
        })
        .await?;
    let OutcomeReply::Refused { error } = &reply else {
        return Ok((StatusCode::OK, axum::Json(reply)).into_response());
    };
    let code = error.code;
    let status = match code {
        ReasonCode::UnknownEffect => StatusCode::NOT_FOUND,
        ReasonCode::InvalidRecord => StatusCode::UNPROCESSABLE_ENTITY,
        ReasonCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    let body = serde_json::to_value(&reply)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ReasonCode::Internal, None, e.to_string()))?;
    Ok(error_response(status, code, body))
}

/// An outbound request (a draft for a path) through the outbound gate: the cleared message is
/// stored in the tenant's outbox for `warrant scheduler run` to deliver (200), or a `scheduled`
/// request with a `due` time is stored as a follow-up, cleared when it is due (202).
async fn post_outbound(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let text = json_body(&headers, body)?;
    let now = warrant_engine::dispatch::now_ms();
    let submitted = state.inner.pools.with_engine(&tenant, move |engine| engine.submit(&text, now)).await?;
    let internal = |e: serde_json::Error| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ReasonCode::Internal, None, e.to_string())
    };
    Ok(match submitted {
        Submitted::Queued { run, outbox, duplicate } => {
            let mut message = serde_json::to_value(&run.message).map_err(internal)?;
            if let Some(fields) = message.as_object_mut() {
                fields.insert("outbox".into(), json!({"id": outbox, "duplicate": duplicate}));
            }
            (StatusCode::OK, axum::Json(message)).into_response()
        }
        Submitted::Scheduled { job, due_at, duplicate } => (
            StatusCode::ACCEPTED,
            axum::Json(json!({"scheduled": {"job": job, "due_at_ms": due_at, "duplicate": duplicate}})),
        )
            .into_response(),
        Submitted::Rejected(error) => refused_input(error.code, Some(&error.field), &error.message),
    })
}

async fn post_score(
    State(state): State<AppState>,
    Tenant(_): Tenant,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let text = json_body(&headers, body)?;
    let request = match report::parse_score_request(&text) {
        Ok(request) => request,
        Err(error) => return Ok(refused_input(error.code, error.field, &error.message)),
    };
    match report::score_line(state.inner.pools.contract(), &request) {
        Ok(line) => Ok(json_line(line)),
        Err(error) => Ok(refused_input(error.code, error.field, &error.message)),
    }
}

/// `POST /v1/render`: the numbered rendering of a text, as `warrant render` prints it.
async fn post_render(
    Tenant(_): Tenant,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let text = json_body(&headers, body)?;
    match report::parse_render_request(&text) {
        Ok(request) => Ok(json_line(report::render_json(&request.text))),
        Err(error) => Ok(refused_input(error.code, error.field, &error.message)),
    }
}

/// A decided turn's answer as [`TurnResult::to_json`] has it, written straight from the
/// response rather than through a `serde_json::Value` (field order is the same: the response's
/// own, and `repeated` last).
fn decided_json(response: &warrant_core::turn::TurnResponse, repeated: bool) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec(response)?;
    if repeated && bytes.pop_if(|b| *b == b'}').is_some() {
        if bytes.len() > 1 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(br#""repeated":true}"#);
    }
    Ok(bytes)
}

/// A JSON document written to bytes, as a response with `status`; a 500 if it could not be.
fn json_answer(status: StatusCode, json: Result<Vec<u8>, serde_json::Error>) -> Response {
    match json {
        Ok(bytes) => {
            let mut response = (status, bytes).into_response();
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        Err(e) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ReasonCode::Internal, None, e.to_string()).into_response()
        }
    }
}

/// `GET /v1/tools?format=openai|anthropic|mcp`: the contract's operations as tool definitions,
/// the JSON `warrant tools --format FORMAT` prints for the contract the service runs (`mcp`
/// unless asked). Like the MCP gateway's `tools/list`, the list is the contract's, the same for
/// every actor: what an actor may do is decided when a call is proposed.
async fn get_tools(
    State(state): State<AppState>,
    Tenant(_): Tenant,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let pairs = query_pairs(query, &["format"])?;
    let name = query_value::<String>(&pairs, "format", "a format")?.unwrap_or_else(|| "mcp".to_owned());
    let format = ToolFormat::parse(&name).ok_or_else(|| {
        ApiError::bad(
            ReasonCode::InvalidInput,
            Some("format"),
            format!("`format` is `{name}`: give {}", ToolFormat::CHOICES),
        )
    })?;
    let definitions = tools::definitions(state.inner.pools.contract());
    Ok(axum::Json(tools::render(&definitions, format)).into_response())
}

/// A JSON document already written, as a 200 response.
fn json_line(json: String) -> Response {
    let mut response = json.into_response();
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The most recent turns first, `limit` at a time; `before` (the `next` of the previous page)
/// pages back through older ones.
/// An effect with its outcome and what its report kept (its result included), so that an
/// executor that finds a call committed again answers it from its first run.
async fn get_effect(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, Some("id"), e.body_text()))?;
    let shown = id.clone();
    let effect = state.inner.pools.with_engine(&tenant, move |engine| engine.effect(&id)).await?;
    match effect {
        Some(effect) => Ok(axum::Json(effect).into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ReasonCode::UnknownEffect,
            Some("effect"),
            format!("no effect `{shown}`"),
        )),
    }
}

async fn list_turns(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let pairs = query_pairs(query, &["limit", "before"])?;
    let limit = page_limit(&pairs)?;
    let before = query_value::<i64>(&pairs, "before", "a sequence number")?;
    // One more than asked tells whether an older page exists.
    let (turns, more) = state
        .inner
        .pools
        .with_engine(&tenant, move |engine| {
            let mut turns = engine.recent_turns(before, limit + 1)?;
            let more = turns.len() > limit;
            turns.truncate(limit);
            let mut shown = Vec::with_capacity(turns.len());
            for t in turns {
                // Each effect with its outcome, and what the outcome's report found.
                let effects = engine.turn_effects(&t.conversation, &t.turn)?;
                shown.push((t, effects));
            }
            Ok((shown, more))
        })
        .await?;
    let next = if more { turns.last().map(|(t, _)| t.seq) } else { None };
    let turns: Vec<Value> = turns
        .into_iter()
        .map(|(t, effects)| {
            json!({"seq": t.seq, "conversation": t.conversation, "turn": t.turn, "request": t.request,
                   "response": t.response, "effects": effects})
        })
        .collect();
    Ok(axum::Json(json!({"turns": turns, "next": next})).into_response())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A real turn's answer, written straight from the response, is byte for byte the
    /// `serde_json::Value` the engine's `to_json` gives, first time and repeated.
    #[test]
    fn a_decided_answer_is_written_as_to_json_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let contract = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml");
        let store = warrant_store::SqliteStore::open(&dir.path().join("t.sqlite")).unwrap();
        let mut engine = warrant_engine::Engine::builder()
            .contract_file(contract)
            .model(warrant_engine::ModelSource::None)
            .build(store)
            .unwrap();
        let body = json!({"conversation": "c", "turn": "t1", "actor": "yusuf_rossi_9620",
            "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
            "entries": [{"kind": "user", "text": "Cancel it please."}],
            "acts": [{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]});
        let TurnResult::Decided { response, .. } = engine.turn(&body.to_string()).unwrap() else {
            panic!("the turn was rejected")
        };
        for repeated in [false, true] {
            let result = TurnResult::Decided { response: response.clone(), repeated };
            let written = decided_json(&response, repeated).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), result.to_json().to_string(), "repeated {repeated}");
        }
    }
}
