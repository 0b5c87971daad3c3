//! The ladder over HTTP: a guard's findings with their audits, a person's audit of one finding,
//! and where every guard and every model task's prompt stands (docs/design.md §8). Each handler is
//! one engine call on the tenant's own store, like every other route; the decisions (which
//! label fits, whether a promotion holds) stay in the engine, the store and warrant-core.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use warrant_core::guard::ANNOUNCEMENT;
use warrant_core::ladder::{Bars, Label};
use warrant_core::reason::ReasonCode;
use warrant_engine::{EngineError, GuardError};
use warrant_store::AuditResult;

use crate::AppState;
use crate::request::{ApiError, Tenant, json_body, page_limit, query_pairs, query_value};

/// The guards a contract can declare, by the name their routes use and their ladder subject.
const GUARDS: &[(&str, &str)] = &[("announcement", ANNOUNCEMENT)];

/// The longest `who` an audit may name, in characters.
const MAX_WHO: usize = 200;

/// A guard call's answer: `None` when the contract declares no such guard.
fn declared<T>(result: Result<T, GuardError>) -> Result<Option<T>, EngineError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(GuardError::NoGuard) => Ok(None),
        Err(GuardError::Engine(error)) => Err(error),
    }
}

fn unknown_guard(guard: &str) -> ApiError {
    let known: Vec<&str> = GUARDS.iter().map(|(name, _)| *name).collect();
    ApiError::new(
        StatusCode::NOT_FOUND,
        ReasonCode::UnknownGuard,
        Some("guard"),
        format!("the contract declares no guard `{guard}`; guards warrant knows: {}", known.join(", ")),
    )
}

/// `GET /v1/guards/{guard}/findings?unaudited=true&limit=N&before=SEQ`: the guard's findings
/// (every version), newest first, each with its audit or `null`.
pub(crate) async fn list_findings(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    guard: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Path(guard) = guard.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, Some("guard"), e.body_text()))?;
    let pairs = query_pairs(query, &["unaudited", "limit", "before"])?;
    let unaudited = query_value::<bool>(&pairs, "unaudited", "`true` or `false`")?.unwrap_or(false);
    let limit = page_limit(&pairs)?;
    let before = query_value::<i64>(&pairs, "before", "a sequence number")?;
    if !GUARDS.iter().any(|(name, _)| *name == guard) {
        return Err(unknown_guard(&guard));
    }
    let found = state.inner.pools.with_engine(&tenant, move |engine| declared(engine.guard_findings())).await?;
    let Some(found) = found else { return Err(unknown_guard(&guard)) };
    let mut page: Vec<_> = found
        .into_iter()
        .rev()
        .filter(|f| before.is_none_or(|before| f.finding.seq < before))
        .filter(|f| !unaudited || f.audit.is_none())
        .take(limit + 1)
        .collect();
    let more = page.len() > limit;
    page.truncate(limit);
    let next = if more { page.last().map(|f| f.finding.seq) } else { None };
    let findings: Vec<Value> = page.into_iter().map(|f| json!({"finding": f.finding, "audit": f.audit})).collect();
    Ok(axum::Json(json!({"guard": guard, "findings": findings, "next": next})).into_response())
}

/// An audit's body, checked field by field so that an error names the field at fault.
fn audit_body(text: &str) -> Result<(Label, String), ApiError> {
    // Read strictly (one object, no repeated key, no U+0000), as every body is.
    let value: Value = crate::request::strict_body(text)?;
    let Value::Object(fields) = value else {
        return Err(ApiError::bad(
            ReasonCode::InvalidInput,
            None,
            "the body must be an object `{\"label\",\"who\"}`".into(),
        ));
    };
    if let Some(name) = fields.keys().find(|k| !matches!(k.as_str(), "label" | "who")) {
        return Err(ApiError::bad(
            ReasonCode::InvalidInput,
            Some(name),
            format!("unknown field `{name}`; the fields are label and who"),
        ));
    }
    let text_field = |fields: &Map<String, Value>, name: &str| -> Result<String, ApiError> {
        match fields.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => {
                Err(ApiError::bad(ReasonCode::InvalidInput, Some(name), format!("`{name}` must be a non-empty string")))
            }
            None => Err(ApiError::bad(ReasonCode::InvalidInput, Some(name), format!("`{name}` is missing"))),
        }
    };
    let label = text_field(&fields, "label")?;
    let label = Label::parse(&label).ok_or_else(|| {
        ApiError::bad(
            ReasonCode::InvalidInput,
            Some("label"),
            format!("`{label}` is not a label: give true_positive, false_positive, miss or clean"),
        )
    })?;
    let who = text_field(&fields, "who")?;
    if who.chars().count() > MAX_WHO {
        return Err(ApiError::bad(
            ReasonCode::InvalidInput,
            Some("who"),
            format!("`who` is longer than {MAX_WHO} characters"),
        ));
    }
    Ok((label, who))
}

/// `POST /v1/findings/{id}/audit` with `{"label","who"}`: labels a finding once. A second
/// audit writes nothing and answers `finding_already_audited` with the stored label.
pub(crate) async fn post_audit(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id.map_err(|e| ApiError::bad(ReasonCode::InvalidInput, Some("id"), e.body_text()))?;
    let text = json_body(&headers, body)?;
    let (label, who) = audit_body(&text)?;
    let at = jiff::Timestamp::now().to_string();
    let (finding, stored_who, stored_at) = (id.clone(), who.clone(), at.clone());
    let result = state
        .inner
        .pools
        .with_engine(&tenant, move |engine| declared(engine.guard_audit(&finding, label, &stored_who, &stored_at)))
        .await?;
    match result {
        // Every guard's findings share one table: a contract without guards has none to audit.
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ReasonCode::UnknownFinding,
            Some("id"),
            format!("no finding `{id}`: the contract declares no guard"),
        )),
        Some(AuditResult::Recorded) => {
            Ok(axum::Json(json!({"finding": id, "label": label.as_str(), "who": who, "at": at})).into_response())
        }
        Some(AuditResult::UnknownFinding) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ReasonCode::UnknownFinding,
            Some("id"),
            format!("no finding `{id}`"),
        )),
        Some(AuditResult::AlreadyAudited { label: stored }) => Err(ApiError::new(
            StatusCode::CONFLICT,
            ReasonCode::FindingAlreadyAudited,
            Some("id"),
            format!("finding `{id}` is audited already, as `{stored}`; nothing was written"),
        )),
        Some(AuditResult::LabelDoesNotFit { kind }) => {
            let fits = kind.labels().join(" or ");
            Err(ApiError::bad(
                ReasonCode::AuditLabelDoesNotFit,
                Some("label"),
                format!("a {} finding is labelled {fits}, not `{}`", kind.as_str(), label.as_str()),
            ))
        }
    }
}

/// `GET /v1/ladder`: every declared guard's status (the data of `warrant guard status`, with
/// the bars a promotion must clear) and every model task's prompt (`warrant prompt list`).
pub(crate) async fn get_ladder(State(state): State<AppState>, Tenant(tenant): Tenant) -> Result<Response, ApiError> {
    let (guard, prompts) = state
        .inner
        .pools
        .with_engine(&tenant, move |engine| Ok((declared(engine.guard_status())?, engine.prompt_status()?)))
        .await?;
    let guards: Vec<Value> = guard
        .into_iter()
        .map(|status| {
            let mut value = json!(status);
            if let Value::Object(fields) = &mut value {
                // The bars of an unpromoted guard are the defaults `promote` checks; a promoted
                // one shows the bars its record cleared on its promotion.
                let bars = status
                    .promotion
                    .as_ref()
                    .and_then(|p| p.get("bars").cloned())
                    .unwrap_or_else(|| json!(Bars::default()));
                fields.insert("bars".into(), bars);
            }
            value
        })
        .collect();
    Ok(axum::Json(json!({"guards": guards, "prompts": prompts})).into_response())
}
