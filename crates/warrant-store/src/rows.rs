//! The plain data the store keeps and returns. Payloads are JSON values, so this crate needs
//! nothing from warrant-core and the engine decides what the payloads mean.

use serde::{Deserialize, Serialize};

/// A row of an authoritative record table (orders, users, …), with the revision that every
/// write must name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub table: String,
    pub key: String,
    /// 1 when seeded, one more on every committed write.
    pub revision: i64,
    pub value: serde_json::Value,
}

/// A turn as the store keeps it: what came in, what went out, and the replay record. A turn
/// seen again is answered from here and does nothing again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTurn {
    /// The position of the turn in commit order, assigned by the store.
    pub seq: i64,
    pub conversation: String,
    /// The turn's idempotency key, unique within its conversation.
    pub turn: String,
    pub request: serde_json::Value,
    pub response: serde_json::Value,
    pub replay: serde_json::Value,
}

/// Whether an interaction still waits for its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum InteractionState {
    Open,
    /// Answered with `option`, by the turn `turn` of the same conversation.
    Answered {
        option: String,
        turn: String,
    },
}

/// A pending decision the server issued (a confirmation card, say), with its closed set of
/// option ids. It is answered at most once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractionRow {
    pub id: String,
    pub conversation: String,
    /// The turn that opened it.
    pub turn: String,
    pub payload: serde_json::Value,
    pub options: Vec<String>,
    pub state: InteractionState,
}

/// An effect the gate authorized. Its idempotency key is unique across the store, so the same
/// effect cannot be committed twice; its outcome is reported once, by the executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRow {
    pub id: String,
    pub idempotency_key: String,
    pub conversation: String,
    /// The turn that authorized it.
    pub turn: String,
    pub op: String,
    pub payload: serde_json::Value,
    /// `done`, `failed` or `unknown` once reported; `None` until then.
    pub outcome: Option<String>,
}

/// A committed fact in the ledger. Events back the claims of outgoing messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    /// The position of the event in commit order, assigned by the store.
    pub seq: i64,
    pub id: String,
    pub conversation: String,
    pub kind: String,
    pub payload: serde_json::Value,
    /// The effect the event reports on, if any.
    pub effect: Option<String>,
}

/// A version of a model task's prompt: its content hash and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptRow {
    pub task: String,
    pub version: String,
    pub text: String,
}

/// A promotion decided for a prompt version, accepted or refused, with the report that decided
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptPromotionRow {
    /// The position in decision order, assigned by the store.
    pub seq: i64,
    pub task: String,
    pub version: String,
    pub accepted: bool,
    pub report: serde_json::Value,
}
