//! The turn request on the wire, parsed all or nothing: the body is read strictly first
//! ([`warrant_contract::request::wire`]: one object, no repeated key, no U+0000), unknown fields are rejected, every
//! entry's source kind must be declared, the clock must evaluate, the request must be within the
//! contract's `[limits]`, and any fault is answered with a stable code and the path of the field
//! at fault. Nothing of a rejected request reaches a decision, so nothing of it can be
//! committed.
//!
//! A [`ValidRequest`] is made only by [`parse`] and [`validate`]; a struct literal does not
//! build one:
//!
//! ```compile_fail
//! use warrant_core::request::{TurnRequest, ValidRequest};
//! fn forge(request: TurnRequest, clock: warrant_core::date::TurnClock) -> ValidRequest {
//!     ValidRequest { request, clock }
//! }
//! ```

use warrant_contract::contract::Contract;
use warrant_contract::date::TurnClock;
use warrant_contract::limits::within;
use warrant_contract::reason::ReasonCode;
use warrant_contract::request::wire;

pub use warrant_contract::request::{body, error};

pub use body::{ActRequest, AnswerRequest, Call, Draft, Entry, TurnRequest};
pub use error::RequestError;

/// A parsed request whose every part is valid for the contract, with its clock. Only [`parse`]
/// and [`validate`] make one.
#[derive(Debug, Clone)]
pub struct ValidRequest {
    request: TurnRequest,
    clock: TurnClock,
}

impl ValidRequest {
    /// The request as sent.
    pub fn request(&self) -> &TurnRequest {
        &self.request
    }

    /// The turn's clock.
    pub fn clock(&self) -> &TurnClock {
        &self.clock
    }
}

/// Parses and validates a turn request against a contract.
pub fn parse(contract: &Contract, json: &str) -> Result<ValidRequest, RequestError> {
    let request: TurnRequest = wire::read(json)?;
    validate(contract, request)
}

/// Validates an already parsed request.
pub fn validate(contract: &Contract, request: TurnRequest) -> Result<ValidRequest, RequestError> {
    let bad = |code, field: &str, message: String| RequestError { code, field: field.to_owned(), message };
    for (field, value) in [("conversation", &request.conversation), ("turn", &request.turn), ("actor", &request.actor)]
    {
        if value.is_empty() || value.chars().any(warrant_contract::text::is_invisible) || value.len() > 256 {
            return Err(bad(ReasonCode::InvalidInput, field, format!("`{field}` must be 1 to 256 visible characters")));
        }
    }
    let clock = TurnClock::new(&request.at, &request.time_zone, &request.locale).map_err(|e| {
        let field = match e.code() {
            "unknown_time_zone" => "time_zone",
            "unknown_locale" => "locale",
            _ => "at",
        };
        bad(ReasonCode::InvalidInput, field, e.to_string())
    })?;
    check_limits(contract, &request)?;
    for (i, entry) in request.entries.iter().enumerate() {
        if contract.kinds().get(&entry.kind).is_none() {
            return Err(bad(
                ReasonCode::UnknownSourceKind,
                &format!("entries[{i}].kind"),
                format!(
                    "source kind `{}` is not declared by the contract",
                    warrant_contract::text::visible(&entry.kind)
                ),
            ));
        }
    }
    for (i, act) in request.acts.iter().enumerate() {
        match &act.from {
            Some(kind) if contract.kinds().get(kind).is_none() => {
                return Err(bad(
                    ReasonCode::UnknownSourceKind,
                    &format!("acts[{i}].from"),
                    format!("source kind `{}` is not declared by the contract", warrant_contract::text::visible(kind)),
                ));
            }
            None if contract.act_kind().is_none() => {
                return Err(bad(
                    ReasonCode::UnknownSourceKind,
                    &format!("acts[{i}].from"),
                    "the act names no source kind and the contract declares no `sources.acts`".into(),
                ));
            }
            _ => {}
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, answer) in request.answers.iter().enumerate() {
        if !seen.insert(&answer.interaction) {
            return Err(bad(
                ReasonCode::InvalidInput,
                &format!("answers[{i}].interaction"),
                format!("interaction `{}` is answered twice", warrant_contract::text::visible(&answer.interaction)),
            ));
        }
    }
    Ok(ValidRequest { request, clock })
}

/// The contract's `[limits]` on the turn: counts first, then the length of each text, so that
/// an oversized request is refused before any of it is read further.
fn check_limits(contract: &Contract, request: &TurnRequest) -> Result<(), RequestError> {
    let limits = contract.limits();
    let over = |field: &str, what: &str, exceeded: warrant_contract::limits::Exceeded| RequestError {
        code: ReasonCode::LimitExceeded,
        field: field.to_owned(),
        message: exceeded.message(what),
    };
    within("limits.entries_per_turn", limits.entries_per_turn, request.entries.len())
        .map_err(|e| over("entries", "entries", e))?;
    within("limits.acts_per_turn", limits.acts_per_turn, request.acts.len()).map_err(|e| over("acts", "acts", e))?;
    within("limits.answers_per_turn", limits.answers_per_turn, request.answers.len())
        .map_err(|e| over("answers", "answers", e))?;
    within("limits.calls_per_turn", limits.calls_per_turn, request.calls.len())
        .map_err(|e| over("calls", "calls", e))?;
    for (i, entry) in request.entries.iter().enumerate() {
        within("limits.characters_per_entry", limits.characters_per_entry, entry.text.chars().count())
            .map_err(|e| over(&format!("entries[{i}].text"), "characters", e))?;
    }
    if let Some(draft) = &request.draft {
        check_draft(contract, draft, "draft")?;
    }
    Ok(())
}

/// The contract's `[limits]` on a draft, in a turn or an outbound request (`field` is where
/// the draft is).
pub(crate) fn check_draft(contract: &Contract, draft: &Draft, field: &str) -> Result<(), RequestError> {
    let limits = contract.limits();
    let over = |at: &str, what: &str, exceeded: warrant_contract::limits::Exceeded| RequestError {
        code: ReasonCode::LimitExceeded,
        field: format!("{field}.{at}"),
        message: exceeded.message(what),
    };
    within("limits.claims_per_draft", limits.claims_per_draft, draft.claims.len())
        .map_err(|e| over("claims", "claims", e))?;
    within("limits.characters_per_draft", limits.characters_per_draft, draft.text.chars().count())
        .map_err(|e| over("text", "characters", e))?;
    Ok(())
}
