//! The plain data the store keeps and returns. Payloads are JSON values, so this crate needs
//! nothing from warrant-core and the engine decides what the payloads mean.

use serde::{Deserialize, Serialize};

/// A row of an authoritative record table (orders, users, …), with the revision that every
/// write must name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The records table (`orders`, `users`, …).
    pub table: String,
    /// The row's key within its table.
    pub key: String,
    /// 1 when first stored, one more on every write: a commit's, a put's, a delete's.
    pub revision: i64,
    /// The row as the contract's records describe it.
    pub value: serde_json::Value,
}

/// A row of a records table as [`Record`], its value shared rather than copied: what
/// [`Ledger::shared_record`](crate::Ledger::shared_record) answers.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedRecord {
    /// The records table.
    pub table: String,
    /// The row's key within its table.
    pub key: String,
    /// The revision the row is at.
    pub revision: i64,
    /// The row.
    pub value: std::sync::Arc<serde_json::Value>,
}

impl From<Record> for SharedRecord {
    fn from(Record { table, key, revision, value }: Record) -> SharedRecord {
        SharedRecord { table, key, revision, value: std::sync::Arc::new(value) }
    }
}

/// A turn as the store keeps it: what came in, what went out, and the replay record. A turn
/// seen again is answered from here and does nothing again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTurn {
    /// The position of the turn in commit order, assigned by the store.
    pub seq: i64,
    /// The conversation the turn belongs to.
    pub conversation: String,
    /// The turn's idempotency key, unique within its conversation.
    pub turn: String,
    /// The request as it came in.
    pub request: serde_json::Value,
    /// The response as it went out.
    pub response: serde_json::Value,
    /// The replay record: the facts the decision read and why it was made.
    pub replay: serde_json::Value,
}

/// A JSON value as text, written once by whoever holds the value: a commit's turn carries its
/// request, response and replay record so, and the store binds the text as it is, rather than
/// being handed a [`serde_json::Value`] built only to be written out again. Only serializing
/// makes one, so the text is JSON as serde_json writes it (compact, U+0000 escaped as
/// `\u0000`), and a value and its text make the same `JsonText` either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// `value` written as JSON text; fails only where serde_json cannot write it (a map whose
    /// keys are not strings).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<JsonText, serde_json::Error> {
        serde_json::to_string(value).map(JsonText)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value the text is of.
    pub fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

impl From<&serde_json::Value> for JsonText {
    fn from(value: &serde_json::Value) -> JsonText {
        JsonText(value.to_string())
    }
}

impl From<serde_json::Value> for JsonText {
    fn from(value: serde_json::Value) -> JsonText {
        JsonText::from(&value)
    }
}

/// Written as the JSON value it holds, not as a string of JSON.
impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().map_err(serde::ser::Error::custom)?.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<JsonText, D::Error> {
        serde_json::Value::deserialize(deserializer).map(JsonText::from)
    }
}

/// A turn as a commit writes it: a [`StoredTurn`] without its `seq`, which the store assigns,
/// and with its JSON columns as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRow {
    /// The conversation the turn belongs to.
    pub conversation: String,
    /// The turn's idempotency key, unique within its conversation.
    pub turn: String,
    /// The request as it came in.
    pub request: JsonText,
    /// The response as it goes out.
    pub response: JsonText,
    /// The replay record: the facts the decision read and why it was made.
    pub replay: JsonText,
}

/// Whether an interaction still waits for its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum InteractionState {
    /// Waiting for its answer.
    Open,
    /// Answered with `option`, by the turn `turn` of the same conversation.
    Answered {
        /// The option chosen.
        option: String,
        /// The turn that answered it.
        turn: String,
    },
}

/// A pending decision the server issued (a confirmation card, say), with its closed set of
/// option ids. It is answered at most once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractionRow {
    /// Unique across interactions, chosen by the caller.
    pub id: String,
    /// The conversation it belongs to.
    pub conversation: String,
    /// The turn that opened it.
    pub turn: String,
    /// What the interaction asks, as the engine records it.
    pub payload: serde_json::Value,
    /// The ids of the options it may be answered with.
    pub options: Vec<String>,
    /// Open, or answered and with what.
    pub state: InteractionState,
}

/// An effect the gate authorized. Its idempotency key is unique across the store, so the same
/// effect cannot be committed twice; its outcome is reported once, by the executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRow {
    /// Unique across effects, chosen by the caller.
    pub id: String,
    /// Unique across the store: the same effect is never committed twice.
    pub idempotency_key: String,
    /// The conversation it belongs to.
    pub conversation: String,
    /// The turn that authorized it.
    pub turn: String,
    /// The operation it performs, as the contract names it.
    pub op: String,
    /// Its arguments and derived quantities, as the engine records them.
    pub payload: serde_json::Value,
    /// `done`, `failed` or `unknown` once reported; `None` until then.
    pub outcome: Option<String>,
    /// What the outcome's report kept (the rows reported, the fields that diverged from the
    /// effect's predicted changes); `None` until an outcome with one is reported. Ignored in a
    /// [`Commit`](crate::Commit).
    #[serde(default)]
    pub report: Option<serde_json::Value>,
}

/// A committed fact in the ledger. Events back the claims of outgoing messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    /// The position of the event in commit order, assigned by the store.
    pub seq: i64,
    /// Unique across events, chosen by the caller.
    pub id: String,
    /// The conversation it belongs to.
    pub conversation: String,
    /// What happened, as the contract names it.
    pub kind: String,
    /// The event's facts, as the engine records them.
    pub payload: serde_json::Value,
    /// The effect the event reports on, if any.
    pub effect: Option<String>,
}

/// A committed event of a row, as [`Ledger::row_events`](crate::Ledger::row_events) reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowEventRow {
    /// The event.
    pub event: EventRow,
    /// The instant of the turn that committed it, as its request gave it (RFC 3339).
    pub at: String,
    /// The outcome of its effect once one is reported (`done`, `failed`, `unknown`).
    pub outcome: Option<String>,
}

/// A version of a model task's prompt: its content hash and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptRow {
    /// The model task the prompt is for.
    pub task: String,
    /// The content hash of the text.
    pub version: String,
    /// The prompt itself.
    pub text: String,
}

/// A promotion decided for a prompt version, accepted or refused, with the report that decided
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptPromotionRow {
    /// The position in decision order, assigned by the store.
    pub seq: i64,
    /// The model task.
    pub task: String,
    /// The prompt version decided on.
    pub version: String,
    /// Whether the promotion was accepted.
    pub accepted: bool,
    /// The report it was decided on.
    pub report: serde_json::Value,
}
