//! The outbound gate (rule 3): the one place that decides which words may reach a customer, on
//! every path. A draft's claims are checked one by one against the ledger and the authoritative
//! records; a draft that passes (and passes its path's coverage check) goes out as is. Otherwise,
//! when no claim is backed (on a path with the coverage check, also when the draft lists none),
//! the path's fallback copy goes out and no model is asked; when every
//! backed claim's kind has authored copy for the locale, the rewrite is composed by code from
//! that copy; otherwise a model rewrites it once from verified facts only and it is checked
//! again, or the fallback copy goes out. The result is a [`ClearedMessage`], which only this module can
//! build, and the only thing a [`Sender`] accepts.
//!
//! Like the turn, the gate is pure: facts arrive through [`LedgerFacts`], model answers (the
//! coverage checks and the rewrite) arrive as [`GateAnswers`] keyed by a content hash of the
//! question, so the same inputs give the same message, byte for byte.
//!
//! A sender takes only a cleared message. A struct literal does not build one:
//!
//! ```compile_fail
//! use warrant_core::outbound::ClearedMessage;
//! let message = ClearedMessage { id: String::new(), text: "Your link is attached.".into() };
//! ```
//!
//! Nor does deserializing one:
//!
//! ```compile_fail
//! use warrant_core::outbound::ClearedMessage;
//! let message: ClearedMessage = serde_json::from_value(serde_json::json!({"text": "hi"})).unwrap();
//! ```
//!
//! A draft cannot be handed to a sender:
//!
//! ```compile_fail
//! use warrant_core::outbound::{ClearedMessage, Sender};
//! use warrant_core::request::Draft;
//! struct Webhook;
//! impl Sender for Webhook {
//!     type Error = ();
//!     fn send(&mut self, _: ClearedMessage) -> Result<(), ()> { Ok(()) }
//! }
//! let draft = Draft { text: "Your payment link is attached.".into(), claims: Vec::new() };
//! Webhook.send(draft);
//! ```
//!
//! Nor can a string:
//!
//! ```compile_fail
//! use warrant_core::outbound::{ClearedMessage, Sender};
//! struct Webhook;
//! impl Sender for Webhook {
//!     type Error = ();
//!     fn send(&mut self, _: ClearedMessage) -> Result<(), ()> { Ok(()) }
//! }
//! Webhook.send("Your payment link is attached.".to_string());
//! ```
//!
//! Nor is a request valid without being validated:
//!
//! ```compile_fail
//! use warrant_core::outbound::{OutboundRequest, ValidOutbound};
//! use warrant_core::claim::PathName;
//! fn forge(request: OutboundRequest) -> ValidOutbound {
//!     ValidOutbound { request, path: PathName::Live }
//! }
//! ```
//!
//! What the gate returns can be sent:
//!
//! ```
//! use warrant_core::Contract;
//! use warrant_core::outbound::{self, ClearedMessage, GateAnswers, LedgerFacts, Sender, Basis};
//! use warrant_core::records::Record;
//! use warrant_core::turn::{EventRecord, FactError};
//!
//! let contract = Contract::from_toml("c.toml", r#"
//! [sources]
//! kinds = ["user"]
//! [outbound]
//! locales = ["en-US"]
//! [[outbound.channel]]
//! name = "hook"
//! kind = "webhook"
//! url_env = "HOOK_URL"
//! [[outbound.path]]
//! name = "scheduled"
//! channel = "hook"
//! fallback."en-US" = "We will be in touch."
//! "#).unwrap();
//! struct Empty;
//! impl LedgerFacts for Empty {
//!     fn record(&self, _: &str, _: &str) -> Result<Option<Record>, FactError> { Ok(None) }
//!     fn events(&self, _: &str) -> Result<Vec<EventRecord>, FactError> { Ok(Vec::new()) }
//! }
//! let request = r#"{"conversation":"c1","actor":"u1","path":"scheduled","at":"2026-01-01T00:00:00Z",
//!   "locale":"en-US","draft":{"text":"Hello.","claims":[]}}"#;
//! let valid = outbound::parse_request(&contract, request).unwrap();
//! let gate = outbound::clear(&contract, &valid.outgoing(), &Empty, &GateAnswers::new()).unwrap();
//! assert_eq!(gate.message.basis(), Basis::Cleared);
//!
//! struct Outbox(Vec<ClearedMessage>);
//! impl Sender for Outbox {
//!     type Error = std::convert::Infallible;
//!     fn send(&mut self, message: ClearedMessage) -> Result<(), Self::Error> {
//!         self.0.push(message);
//!         Ok(())
//!     }
//! }
//! let mut outbox = Outbox(Vec::new());
//! outbox.send(gate.message).unwrap();
//! assert_eq!(outbox.0[0].text(), "Hello.");
//! ```

pub use warrant_contract::claim;
#[cfg(feature = "corpus")]
pub mod corpus;

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::claim::{Backing, Claim, ClaimArgKind, PathName};
use crate::facts::{EventRecord, FactError};
use crate::request::{Draft, RequestError};
use crate::visibility;
use warrant_contract::check::{CheckFailure, CheckVerdict, ModelTask};
use warrant_contract::contract::Contract;
use warrant_contract::id::derive_id;
use warrant_contract::reason::ReasonCode;
use warrant_contract::records::Record;
use warrant_contract::verdict::Reason;

/// The task names of the gate's model questions.
pub const REWRITE: &str = warrant_contract::check::ModelTask::Rewrite.name();

/// The texts the gate checks in turn: the agent's draft, then, when asked for, the rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStage {
    /// The agent's draft.
    Draft,
    /// The model's rewrite of the draft from its backed claims.
    Rewrite,
}

impl GateStage {
    /// The stage's name, as serialized and as it begins the fields of reasons (`draft.text`).
    pub const fn name(self) -> &'static str {
        match self {
            GateStage::Draft => "draft",
            GateStage::Rewrite => "rewrite",
        }
    }
}

impl std::fmt::Display for GateStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The facts the gate reads: authoritative rows and the conversation's committed events.
pub trait LedgerFacts {
    /// The row, or `None` if it does not exist.
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError>;
    /// The committed events of the message's conversation of kind `kind`, in commit order.
    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError>;
}

/// Everything the gate read, for the replay record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerRead {
    /// Rows read (`null` value with revision 0 marks a row that did not exist).
    pub records: Vec<Record>,
    /// Events read, by kind.
    pub events: BTreeMap<String, Vec<EventRecord>>,
}

/// Logs every fact read through it.
struct LedgerReading<'f> {
    facts: &'f dyn LedgerFacts,
    log: RefCell<LedgerRead>,
}

impl LedgerFacts for LedgerReading<'_> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let found = self.facts.record(table, key)?;
        let mut log = self.log.borrow_mut();
        if !log.records.iter().any(|r| r.table == table && r.key == key) {
            let kept = found.clone().unwrap_or(Record {
                table: table.to_owned(),
                key: key.to_owned(),
                revision: 0,
                value: Value::Null,
            });
            log.records.push(kept);
        }
        Ok(found)
    }

    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let found = self.facts.events(kind)?;
        self.log.borrow_mut().events.insert(kind.to_owned(), found.clone());
        Ok(found)
    }
}

/// Facts served back from a replay record; anything not on it cannot be read.
#[derive(Debug, Clone, Default)]
pub struct RecordedLedger {
    read: LedgerRead,
}

impl RecordedLedger {
    /// Serves `read`.
    pub fn new(read: LedgerRead) -> RecordedLedger {
        RecordedLedger { read }
    }
}

impl LedgerFacts for RecordedLedger {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        match self.read.records.iter().find(|r| r.table == table && r.key == key) {
            Some(r) if r.revision == 0 && r.value.is_null() => Ok(None),
            Some(r) => Ok(Some(r.clone())),
            None => Err(FactError(format!("row `{key}` of `{table}` is not on the replay record"))),
        }
    }

    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        self.read
            .events
            .get(kind)
            .cloned()
            .ok_or_else(|| FactError(format!("events of `{kind}` are not on the replay record")))
    }
}

/// An outbound request (`warrant outbound`, the scheduler): a draft for a path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundRequest {
    /// The conversation the message belongs to.
    pub conversation: String,
    /// The recipient: the actor the message is for. A claim about a row they may not see is
    /// not backed, and such a row is never given to a model.
    pub actor: String,
    /// The outbound path (`live`, `retry`, `scheduled`, `digest`, `queue`).
    pub path: String,
    /// The instant the message is cleared, RFC 3339.
    pub at: String,
    /// The locale to send in; one of the contract's `outbound.locales`.
    pub locale: String,
    /// What the generator wants to send.
    #[serde(deserialize_with = "warrant_contract::request::wire::object")]
    pub draft: Draft,
    /// The channel; by default the path's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// For the `scheduled` path only: when the follow-up is due, RFC 3339. A request with a
    /// due time is stored, not cleared; warrant's scheduler clears it when it is due, against
    /// the ledger and the records as they are then, with `at` set to that instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<String>,
}

/// A request whose path, locale and channel the contract declares, within its limits. Only
/// [`parse_request`] and [`validate_request`] make one.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidOutbound {
    request: OutboundRequest,
    path: PathName,
}

impl ValidOutbound {
    /// The request.
    pub fn request(&self) -> &OutboundRequest {
        &self.request
    }

    /// Its path.
    pub fn path(&self) -> PathName {
        self.path
    }

    /// What the gate clears.
    pub fn outgoing(&self) -> Outgoing<'_> {
        Outgoing {
            conversation: &self.request.conversation,
            actor: &self.request.actor,
            path: self.path,
            channel: self.request.channel.as_deref(),
            locale: &self.request.locale,
            at: &self.request.at,
            draft: &self.request.draft,
        }
    }
}

/// A draft and where it is going.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The conversation.
    pub conversation: &'a str,
    /// The recipient (the turn's actor on the live path).
    pub actor: &'a str,
    /// The path.
    pub path: PathName,
    /// The channel, if not the path's.
    pub channel: Option<&'a str>,
    /// The locale.
    pub locale: &'a str,
    /// The instant.
    pub at: &'a str,
    /// The draft.
    pub draft: &'a Draft,
}

fn invalid(field: &str, message: String) -> RequestError {
    RequestError { code: ReasonCode::InvalidInput, field: field.to_owned(), message }
}

/// Parses an outbound request all or nothing, read strictly as a turn request is
/// ([`warrant_contract::request::wire`]); errors name the field at fault.
pub fn parse_request(contract: &Contract, json: &str) -> Result<ValidOutbound, RequestError> {
    warrant_contract::request::wire::check(json)?;
    let request: OutboundRequest = warrant_contract::request::wire::from_str(json)?;
    validate_request(contract, request)
}

/// Validates a parsed outbound request against the contract.
pub fn validate_request(contract: &Contract, request: OutboundRequest) -> Result<ValidOutbound, RequestError> {
    if request.conversation.is_empty()
        || request.conversation.chars().any(warrant_contract::text::is_invisible)
        || request.conversation.len() > 256
    {
        return Err(invalid("conversation", "`conversation` must be 1 to 256 visible characters".into()));
    }
    if request.actor.is_empty()
        || request.actor.chars().any(warrant_contract::text::is_invisible)
        || request.actor.len() > 256
    {
        return Err(invalid("actor", "`actor` must be 1 to 256 visible characters".into()));
    }
    if warrant_contract::date::parse_instant(&request.at).is_err() {
        return Err(invalid(
            "at",
            format!("`{}` is not an RFC 3339 instant", warrant_contract::text::visible(&request.at)),
        ));
    }
    let path = PathName::from_name(&request.path).ok_or_else(|| {
        invalid(
            "path",
            format!(
                "`{}` is not one of `live`, `retry`, `scheduled`, `digest`, `queue`",
                warrant_contract::text::visible(&request.path)
            ),
        )
    })?;
    if let Some(due) = &request.due {
        if path != PathName::Scheduled {
            return Err(invalid("due", format!("`due` is for the `scheduled` path only, not `{}`", path.as_str())));
        }
        if warrant_contract::date::parse_instant(due).is_err() {
            return Err(invalid(
                "due",
                format!("`{}` is not an RFC 3339 instant", warrant_contract::text::visible(due)),
            ));
        }
    }
    crate::request::check_draft(contract, &request.draft, "draft")?;
    let valid = ValidOutbound { request, path };
    check_route(contract, &valid.outgoing())?;
    Ok(valid)
}

/// The path, channel and locale the contract declares for `outgoing`, or the field at fault.
fn check_route<'c>(
    contract: &'c Contract,
    outgoing: &Outgoing<'_>,
) -> Result<(&'c claim::OutboundPath, String), RequestError> {
    let outbound = contract.outbound();
    let path = outbound.path(outgoing.path).ok_or_else(|| {
        invalid("path", format!("the contract declares no outbound path `{}`", outgoing.path.as_str()))
    })?;
    if path.fallback(outgoing.locale).is_none() {
        return Err(invalid(
            "locale",
            format!(
                "`{}` is not one of the contract's `outbound.locales`",
                warrant_contract::text::visible(outgoing.locale)
            ),
        ));
    }
    let channel = outgoing.channel.unwrap_or(&path.channel);
    if outbound.channel(channel).is_none() {
        return Err(invalid(
            "channel",
            format!("`{}` is not a channel of the contract", warrant_contract::text::visible(channel)),
        ));
    }
    Ok((path, channel.to_owned()))
}

/// A question the gate needs a model task to answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// A content hash of the question: an answer to another question never fits this one.
    pub id: String,
    /// `claims_coverage` or `rewrite`.
    pub task: ModelTask,
    /// For coverage: the text checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For coverage: the claims the text may make, each as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<String>,
    /// For the rewrite: the verified facts, each a JSON object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
}

impl Question {
    fn coverage(text: &str, claims: &[Claim]) -> Question {
        let canonical: Vec<String> = claims.iter().map(|c| warrant_contract::id::canonical(&c.to_json())).collect();
        let claims: Vec<String> = claims.iter().map(|c| c.to_json().to_string()).collect();
        let mut parts: Vec<&str> = vec![claim::CLAIMS_COVERAGE, text];
        parts.extend(canonical.iter().map(String::as_str));
        Question {
            id: derive_id("q", &parts),
            task: ModelTask::ClaimsCoverage,
            text: Some(text.to_owned()),
            claims,
            facts: Vec::new(),
        }
    }

    fn rewrite(facts: Vec<String>) -> Question {
        let mut parts: Vec<&str> = vec![REWRITE];
        parts.extend(facts.iter().map(String::as_str));
        Question { id: derive_id("q", &parts), task: ModelTask::Rewrite, text: None, claims: Vec::new(), facts }
    }
}

/// A model task's answer to a gate question, as the engine (or a replay) supplies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateAnswer {
    /// The coverage check answered.
    Verdict {
        /// `pass` only when the text claims nothing beyond its list.
        verdict: CheckVerdict,
    },
    /// The rewrite answered with a text: only a draft, checked again.
    Rewritten {
        /// The text.
        text: String,
    },
    /// The task could not answer; this counts as failed.
    Failed {
        /// Why.
        failure: CheckFailure,
        /// What happened.
        detail: String,
    },
}

/// Answers by question id.
pub type GateAnswers = BTreeMap<String, GateAnswer>;

/// How a message came to be cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The draft, as is: every claim backed, its coverage check passed.
    Cleared,
    /// The one rewrite: composed by code from the backed claims' authored copy
    /// (`rewrite_composed`), or written by a model from verified facts and checked again.
    Rewritten,
    /// The path's deterministic fallback copy.
    Fallback,
}

/// What the gate lets out. Its fields are private and it has no `Deserialize`: only [`clear`]
/// builds one, so a [`Sender`] can be handed nothing else.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClearedMessage {
    id: String,
    conversation: String,
    actor: String,
    path: PathName,
    channel: String,
    locale: String,
    at: String,
    basis: Basis,
    text: String,
    claims: Vec<Value>,
    reasons: Vec<Reason>,
}

impl ClearedMessage {
    /// A hash of the message's content, its conversation, recipient, path, channel, locale and
    /// instant: the outbox's idempotency key.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The conversation.
    pub fn conversation(&self) -> &str {
        &self.conversation
    }
    /// The recipient.
    pub fn actor(&self) -> &str {
        &self.actor
    }
    /// The path.
    pub fn path(&self) -> PathName {
        self.path
    }
    /// The channel it leaves by.
    pub fn channel(&self) -> &str {
        &self.channel
    }
    /// The locale.
    pub fn locale(&self) -> &str {
        &self.locale
    }
    /// The instant it was cleared.
    pub fn at(&self) -> &str {
        &self.at
    }
    /// How it was cleared.
    pub fn basis(&self) -> Basis {
        self.basis
    }
    /// The text to send.
    pub fn text(&self) -> &str {
        &self.text
    }
    /// The backed claims it makes (none for fallback copy).
    pub fn claims(&self) -> &[Value] {
        &self.claims
    }
    /// Why it is not the draft, if it is not.
    pub fn reasons(&self) -> &[Reason] {
        &self.reasons
    }
}

/// Whatever delivers messages takes only what the gate cleared.
pub trait Sender {
    /// Why a delivery failed.
    type Error;
    /// Delivers (or stores for delivery) one cleared message.
    fn send(&mut self, message: ClearedMessage) -> Result<(), Self::Error>;
}

/// The verdict on one claim, for the replay record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimVerdict {
    /// `draft` or `rewrite`.
    pub stage: GateStage,
    /// Its index in the stage's claims.
    pub index: usize,
    /// The claim as given.
    pub claim: Value,
    /// Whether it is backed.
    pub backed: bool,
    /// What backs it: an event id, or `table/key@revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why not, if not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReasonCode>,
}

/// Everything the gate decided about one draft.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// What goes out.
    pub message: ClearedMessage,
    /// Every claim's verdict.
    pub verdicts: Vec<ClaimVerdict>,
    /// The model questions the decision needed, in order; answers with these ids are the ones
    /// it read.
    pub questions: Vec<Question>,
    /// The facts it read.
    pub facts: LedgerRead,
}

impl Gate {
    /// The questions in `questions` that `answers` does not answer yet.
    pub fn unanswered(&self, answers: &GateAnswers) -> Vec<Question> {
        self.questions.iter().filter(|q| !answers.contains_key(&q.id)).cloned().collect()
    }
}

fn reason(code: ReasonCode, field: Option<String>, detail: Option<String>) -> Reason {
    Reason { code, field, policies: Vec::new(), detail: detail.map(|d| d.replace('\n', " ")) }
}

/// What checking one stage found.
struct StageFinding {
    /// The claims that parsed and are backed.
    backed: Vec<Claim>,
    /// Whether the stage passes.
    passed: bool,
}

/// The gate's inputs that hold for every stage: the contract, the recipient, the ledger and
/// the answers of its questions.
struct GateInput<'a> {
    contract: &'a Contract,
    recipient: &'a str,
    facts: &'a dyn LedgerFacts,
    answers: &'a GateAnswers,
}

/// A text under check: the stage (`draft` or `rewrite`), its text and claims, and whether its
/// coverage is checked.
#[derive(Clone, Copy)]
struct StageText<'a> {
    stage: GateStage,
    text: &'a str,
    claims: &'a [Value],
    coverage: bool,
}

/// What the gate found over its stages: every claim's verdict, the questions it asked, and why.
#[derive(Default)]
struct GateLog {
    verdicts: Vec<ClaimVerdict>,
    questions: Vec<Question>,
    reasons: Vec<Reason>,
}

/// Checks a draft (or the rewrite) claim by claim, then, when `coverage`, its coverage.
fn check_stage(input: &GateInput<'_>, under: StageText<'_>, log: &mut GateLog) -> StageFinding {
    let mut parsed = Vec::new();
    let mut all_parse = true;
    for (i, value) in under.claims.iter().enumerate() {
        match claim::parse_claim(input.contract.outbound(), value, &format!("{}.claims[{i}]", under.stage)) {
            Ok(claim) => parsed.push((i, claim)),
            Err((field, message)) => {
                all_parse = false;
                log.verdicts.push(ClaimVerdict {
                    stage: under.stage,
                    index: i,
                    claim: value.clone(),
                    backed: false,
                    by: None,
                    reason: Some(ReasonCode::ClaimInvalid),
                });
                log.reasons.push(reason(ReasonCode::ClaimInvalid, Some(field), Some(message)));
            }
        }
    }
    let (backed, all_backed) = back_claims(input, under.stage, parsed, log);
    if !(all_parse && all_backed) {
        return StageFinding { backed, passed: false };
    }
    check_coverage(input, under, backed, log)
}

/// Each parsed claim against the ledger, visibility first; the backed ones, and whether all were.
fn back_claims(
    input: &GateInput<'_>,
    stage: GateStage,
    parsed: Vec<(usize, Claim)>,
    log: &mut GateLog,
) -> (Vec<Claim>, bool) {
    let mut backed = Vec::new();
    let mut all_backed = true;
    for (i, claim) in parsed {
        let field = format!("{stage}.claims[{i}]");
        // Visibility first: a claim about a row the recipient may not see is not backed, however
        // the ledger stands, and is refused alike whether the row exists or not.
        let backed_by = match claim_visible(input.contract, input.recipient, &claim, input.facts) {
            Ok(true) => backing(input.contract, &claim, input.facts).map(|by| by.ok_or(ReasonCode::ClaimUnbacked)),
            Ok(false) => Ok(Err(ReasonCode::ClaimNotVisible)),
            Err(e) => Err(e),
        };
        let (by, code) = match backed_by {
            Ok(Ok(by)) => (Some(by), None),
            Ok(Err(code)) => (None, Some(code)),
            Err(e) => {
                log.reasons.push(reason(ReasonCode::ClaimUnverifiable, Some(field.clone()), Some(e.0)));
                (None, Some(ReasonCode::ClaimUnverifiable))
            }
        };
        if code == Some(ReasonCode::ClaimNotVisible) {
            log.reasons.push(reason(
                ReasonCode::ClaimNotVisible,
                Some(field.clone()),
                Some(format!("`{}` names a row that is not the recipient's to see", claim.claim)),
            ));
        }
        if code == Some(ReasonCode::ClaimUnbacked) {
            log.reasons.push(reason(
                ReasonCode::ClaimUnbacked,
                Some(field),
                Some(format!("no committed event or record backs `{}`", claim.claim)),
            ));
        }
        log.verdicts.push(ClaimVerdict {
            stage,
            index: i,
            claim: claim.to_json(),
            backed: by.is_some(),
            by: by.clone(),
            reason: code,
        });
        if by.is_some() {
            backed.push(claim);
        } else {
            all_backed = false;
        }
    }
    (backed, all_backed)
}

/// The coverage check of a text whose every claim is backed, when its path asks for it.
fn check_coverage(input: &GateInput<'_>, under: StageText<'_>, backed: Vec<Claim>, log: &mut GateLog) -> StageFinding {
    if !under.coverage {
        return StageFinding { backed, passed: true };
    }
    if backed.is_empty() {
        // On a path whose text must be bounded by its claims, a text with no backed claim has
        // nothing it may say. Only a model could call it harmless, and a model's answer is no
        // warrant: it does not go out, and no model is asked.
        return StageFinding { backed, passed: false };
    }
    let question = Question::coverage(under.text, &backed);
    let answer = input.answers.get(&question.id);
    let id = question.id.clone();
    if !log.questions.iter().any(|q| q.id == id) {
        log.questions.push(question);
    }
    let rewrite = under.stage != GateStage::Draft;
    let field = Some(format!("{}.text", under.stage));
    let taken = match answer {
        Some(GateAnswer::Verdict { verdict: CheckVerdict::Pass }) => {
            return StageFinding { backed, passed: true };
        }
        Some(GateAnswer::Verdict { verdict: CheckVerdict::Block | CheckVerdict::Repair }) => {
            (ReasonCode::CoverageBlocked, "the text states more than its claims".to_owned())
        }
        Some(GateAnswer::Verdict { verdict: CheckVerdict::Ask }) => {
            (ReasonCode::CoverageUnsure, "the coverage check cannot tell".to_owned())
        }
        Some(GateAnswer::Failed { detail, .. }) => (ReasonCode::CoverageFailed, detail.clone()),
        Some(GateAnswer::Rewritten { .. }) => (ReasonCode::CoverageFailed, "the answer is not a verdict".to_owned()),
        None => (ReasonCode::CoverageFailed, "the coverage check has no answer".to_owned()),
    };
    // A rewrite that fails its coverage check, for whatever cause, claims more than the facts
    // it was given could back.
    let code = if rewrite { ReasonCode::RewriteUnbacked } else { taken.0 };
    log.reasons.push(reason(code, field, Some(format!("{}: {}", claim::CLAIMS_COVERAGE, taken.1))));
    StageFinding { backed, passed: false }
}

/// Whether every row `claim` names is one `recipient` may see; a row that does not exist is
/// seen by nobody.
fn claim_visible(
    contract: &Contract,
    recipient: &str,
    claim: &Claim,
    facts: &dyn LedgerFacts,
) -> Result<bool, FactError> {
    let Some(kind) = contract.outbound().claim(&claim.claim) else {
        return Ok(false);
    };
    for arg in &kind.args {
        if let (ClaimArgKind::Record { table }, Some(Value::String(key))) = (&arg.kind, claim.args.get(&arg.name))
            && !row_visible(contract, recipient, table, key, facts)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the row exists and `recipient` may see it.
fn row_visible(
    contract: &Contract,
    recipient: &str,
    table: &str,
    key: &str,
    facts: &dyn LedgerFacts,
) -> Result<bool, FactError> {
    let Some(row) = facts.record(table, key)? else {
        return Ok(false);
    };
    let mut parent = |t: &str, k: &str| facts.record(t, k).map(|r| r.map(|r| r.value));
    visibility::visible(contract, recipient, visibility::RowValue { table, key, value: &row.value }, &mut parent)
}

/// What backs `claim`: an event id or a row, `None` when nothing does.
fn backing(contract: &Contract, claim: &Claim, facts: &dyn LedgerFacts) -> Result<Option<String>, FactError> {
    let Some(kind) = contract.outbound().claim(&claim.claim) else {
        return Ok(None);
    };
    match &kind.backing {
        Backing::Event { op, args, done } => {
            let events = facts.events(op)?;
            let matching = events.iter().filter(|event| {
                args.iter().all(|(op_arg, claim_arg)| {
                    let recorded = event.payload.get("args").and_then(|a| a.get(op_arg));
                    recorded.is_some() && recorded == claim.args.get(claim_arg)
                })
            });
            let mut found = None;
            let outcomes = if *done { facts.events("effect_done")? } else { Vec::new() };
            for event in matching {
                let reported = !*done || outcomes.iter().any(|o| event.effect.is_some() && o.effect == event.effect);
                if reported {
                    found = Some(event.id.clone());
                    break;
                }
            }
            Ok(found)
        }
        Backing::Record { table, key, field, values } => {
            let Some(Value::String(row_key)) = claim.args.get(key) else {
                return Ok(None);
            };
            let Some(row) = facts.record(table, row_key)? else {
                return Ok(None);
            };
            let state = row.value.get(field.as_str()).and_then(Value::as_str);
            Ok(state.filter(|s| values.iter().any(|v| v == s)).map(|_| format!("{table}/{row_key}@{}", row.revision)))
        }
    }
}

/// The verified facts for the model rewrite, each a JSON object: `{"claim": …}` for each backed
/// claim, then `{"record": {"table", "key", "value"}}` for each row they name, as read now. They
/// are data; the model task puts them in its prompt as such. Only rows the recipient may see
/// reach the model (a backed claim names no other; the check is made again here, where the rows
/// are read).
fn verified_facts(contract: &Contract, recipient: &str, backed: &[Claim], facts: &dyn LedgerFacts) -> Vec<String> {
    let mut lines: Vec<String> = backed.iter().map(|c| serde_json::json!({"claim": c.to_json()}).to_string()).collect();
    let mut rows: Vec<(String, String)> = Vec::new();
    for claim in backed {
        let Some(kind) = contract.outbound().claim(&claim.claim) else {
            continue;
        };
        for arg in &kind.args {
            if let (ClaimArgKind::Record { table }, Some(Value::String(key))) = (&arg.kind, claim.args.get(&arg.name))
                && !rows.iter().any(|(t, k)| t == table && k == key)
            {
                rows.push((table.clone(), key.clone()));
            }
        }
    }
    for (table, key) in rows {
        // A row that cannot be read now is not a verified fact; it is left out.
        if row_visible(contract, recipient, &table, &key, facts) != Ok(true) {
            continue;
        }
        if let Ok(Some(row)) = facts.record(&table, &key) {
            lines.push(serde_json::json!({"record": {"table": table, "key": key, "value": row.value}}).to_string());
        }
    }
    lines
}

/// The rewrite composed by code: each backed claim, in the draft's order and once, stated in its
/// kind's authored copy for `locale`, the sentences joined by one space; with the claims it
/// states. `None` when some backed claim's kind has no copy for `locale`: the model rewrite is
/// asked instead, and checked again.
fn compose(contract: &Contract, backed: &[Claim], locale: &str) -> Option<(String, Vec<Claim>)> {
    let mut sentences: Vec<String> = Vec::new();
    let mut stated: Vec<Claim> = Vec::new();
    for claim in backed {
        if stated.contains(claim) {
            continue;
        }
        let kind = contract.outbound().claim(&claim.claim)?;
        sentences.push(kind.state(claim, locale)?);
        stated.push(claim.clone());
    }
    Some((sentences.join(" "), stated))
}

/// Clears `outgoing`: the draft as is, the one rewrite, or the fallback copy. An `Err` is a
/// route the contract does not declare (path, locale, channel): nothing can be sent on it.
pub fn clear(
    contract: &Contract,
    outgoing: &Outgoing<'_>,
    facts: &dyn LedgerFacts,
    answers: &GateAnswers,
) -> Result<Gate, RequestError> {
    let (path, channel) = check_route(contract, outgoing)?;
    let reading = LedgerReading { facts, log: RefCell::new(LedgerRead::default()) };
    let input = GateInput { contract, recipient: outgoing.actor, facts: &reading, answers };
    let mut log = GateLog::default();
    let draft = outgoing.draft;
    let under =
        StageText { stage: GateStage::Draft, text: &draft.text, claims: &draft.claims, coverage: path.coverage };
    let first = check_stage(&input, under, &mut log);
    let (basis, text, claims) = if first.passed {
        (Basis::Cleared, draft.text.clone(), first.backed)
    } else if first.backed.is_empty() {
        // Nothing the draft claims is true, so there is nothing to rewrite from: a model asked
        // to rewrite it could only repeat the draft or invent. No model is asked.
        log.reasons.push(reason(
            ReasonCode::NothingBacked,
            None,
            Some("no claim of the draft is backed: there is nothing true to rewrite from".into()),
        ));
        fallback(path, outgoing.locale, &mut log.reasons)
    } else if let Some((text, claims)) = compose(contract, &first.backed, outgoing.locale) {
        // Every backed claim has authored copy: the rewrite is those sentences, by code, and
        // states nothing else. No model writes it, so there is nothing to check again.
        log.reasons.push(reason(
            ReasonCode::RewriteComposed,
            None,
            Some("composed from the authored copy of the backed claims".into()),
        ));
        (Basis::Rewritten, text, claims)
    } else {
        model_rewrite(&input, path, outgoing, &first.backed, &mut log)
    };
    let GateLog { verdicts, questions, reasons } = log;
    let message = cleared_message(outgoing, channel, Cleared { basis, text, claims }, reasons);
    Ok(Gate { message, verdicts, questions, facts: reading.log.into_inner() })
}

/// What the gate clears: the basis, the text and the claims it states.
struct Cleared {
    basis: Basis,
    text: String,
    claims: Vec<Claim>,
}

/// The cleared message, its id a hash of everything it is.
fn cleared_message(outgoing: &Outgoing<'_>, channel: String, cleared: Cleared, reasons: Vec<Reason>) -> ClearedMessage {
    let Cleared { basis, text, claims } = cleared;
    let claims: Vec<Value> = claims.iter().map(Claim::to_json).collect();
    let claims_text = warrant_contract::id::canonical(&Value::Array(claims.clone()));
    let basis_name = match basis {
        Basis::Cleared => "cleared",
        Basis::Rewritten => "rewritten",
        Basis::Fallback => "fallback",
    };
    let id = derive_id(
        "msg",
        &[
            outgoing.conversation,
            outgoing.actor,
            outgoing.path.as_str(),
            &channel,
            outgoing.locale,
            outgoing.at,
            basis_name,
            &text,
            &claims_text,
        ],
    );
    ClearedMessage {
        id,
        conversation: outgoing.conversation.to_owned(),
        actor: outgoing.actor.to_owned(),
        path: outgoing.path,
        channel,
        locale: outgoing.locale.to_owned(),
        at: outgoing.at.to_owned(),
        basis,
        text,
        claims,
        reasons,
    }
}

/// The model's rewrite, given only the backed claims and the rows they name, checked again
/// with coverage on every path; anything else is the fallback copy.
fn model_rewrite(
    input: &GateInput<'_>,
    path: &claim::OutboundPath,
    outgoing: &Outgoing<'_>,
    backed: &[Claim],
    log: &mut GateLog,
) -> (Basis, String, Vec<Claim>) {
    let question = Question::rewrite(verified_facts(input.contract, outgoing.actor, backed, input.facts));
    let answer = input.answers.get(&question.id).cloned();
    log.questions.push(question);
    match answer {
        Some(GateAnswer::Rewritten { text }) => {
            let claims: Vec<Value> = backed.iter().map(Claim::to_json).collect();
            // The rewrite's text is the model's, not the generator's: its coverage check
            // runs on every path, so that nothing unchecked reaches a customer.
            let under = StageText { stage: GateStage::Rewrite, text: &text, claims: &claims, coverage: true };
            let second = check_stage(input, under, log);
            if second.passed {
                (Basis::Rewritten, text, second.backed)
            } else {
                fallback(path, outgoing.locale, &mut log.reasons)
            }
        }
        Some(GateAnswer::Failed { detail, .. }) => {
            log.reasons.push(reason(ReasonCode::RewriteFailed, Some(ModelTask::Rewrite.name().into()), Some(detail)));
            fallback(path, outgoing.locale, &mut log.reasons)
        }
        Some(GateAnswer::Verdict { .. }) | None => {
            log.reasons.push(reason(
                ReasonCode::RewriteFailed,
                Some(ModelTask::Rewrite.name().into()),
                Some("the rewrite has no text".into()),
            ));
            fallback(path, outgoing.locale, &mut log.reasons)
        }
    }
}

fn fallback(path: &claim::OutboundPath, locale: &str, reasons: &mut Vec<Reason>) -> (Basis, String, Vec<Claim>) {
    reasons.push(reason(ReasonCode::FallbackSent, None, None));
    // `check_route` made sure the copy exists; an empty text would never be sent by a sender
    // that checks, but it cannot happen here.
    (Basis::Fallback, path.fallback(locale).unwrap_or_default().to_owned(), Vec::new())
}
