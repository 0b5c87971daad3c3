//! Stored facts as the core sees them: rows by key, interactions, committed events, and the
//! [`Facts`] trait through which the engine (or a replay) supplies them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ladder::{PromotionRecord, Subject};
use crate::records::Record;

/// A row of a table, by key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RowRef {
    /// The table.
    pub table: String,
    /// The key.
    pub key: String,
}

/// A pending decision the server issued: the act it holds and what it saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// The server-issued id.
    pub id: String,
    /// The conversation it belongs to.
    pub conversation: String,
    /// The actor it was issued to.
    pub actor: String,
    /// The held operation.
    pub op: String,
    /// Its arguments as proposed.
    pub args: Map<String, Value>,
    /// The source kind that proposed it.
    pub from: String,
    /// The closed set of option ids.
    pub options: Vec<String>,
    /// The revision of every row the checks read when it was issued.
    pub revisions: BTreeMap<String, i64>,
    /// The latest user entry of the turn that proposed it: text pointers point into it, and
    /// the checks run again against it when the answer comes.
    #[serde(default)]
    pub user_text: Option<String>,
    /// The user entries of the turn that proposed it that its arguments' pointers name by index
    /// (`"entry": i`), by that index, so that the confirmation resolves the same words. Left
    /// out of the stored JSON when empty, so an interaction without one is stored as before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub entries: BTreeMap<u32, String>,
    /// Whether it still waits for an answer.
    pub open: bool,
}

/// A fact that could not be read: the act that needed it fails closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FactError(pub String);

/// Stored facts, as the engine (or a replay) supplies them.
pub trait Facts {
    /// The row, or `None` if it does not exist.
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError>;
    /// The interaction, or `None` if there is none with that id.
    fn interaction(&self, id: &str) -> Result<Option<Interaction>, FactError>;

    /// The active promotion record of `subject`'s name, if any; the guard checks that it names
    /// the exact version in force. A source without promotions has none, so guards observe.
    fn promotion(&self, subject: &Subject) -> Result<Option<PromotionRecord>, FactError> {
        let _ = subject;
        Ok(None)
    }

    /// The effect that holds `row`, if any: one committed for an operation without effect
    /// steps, naming the row, whose outcome (`done` or `failed`) has not arrived. A consequential
    /// act naming a held row is asked (`effect_pending`). A source without effects holds none.
    fn pending_effect(&self, row: &RowRef) -> Result<Option<String>, FactError> {
        let _ = row;
        Ok(None)
    }

    /// The committed events of `conversation` of kind `kind`, in commit order, for the
    /// outbound gate. A source without a ledger cannot back any claim: it fails closed.
    fn events(&self, conversation: &str, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let _ = conversation;
        Err(FactError(format!("no ledger is served here: events of `{kind}` cannot be read")))
    }

    /// The committed events of `row`, of every conversation, in commit order: those of the
    /// effects whose steps changed the row or that hold it, for the `history` expressions read.
    /// A source without a ledger cannot say: it fails closed.
    fn row_events(&self, row: &RowRef) -> Result<Vec<RowEvent>, FactError> {
        Err(FactError(format!(
            "no ledger is served here: the events of row `{}` of `{}` cannot be read",
            row.key, row.table
        )))
    }
}

/// A committed event of a row, with where and when it was committed and how its effect ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowEvent {
    /// The event (its kind is the operation's name).
    pub event: EventRecord,
    /// The conversation that committed it.
    pub conversation: String,
    /// The instant of the turn that committed it (its `at`, RFC 3339).
    pub at: String,
    /// Its effect's outcome once one is reported (`done`, `failed`, `unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// The committed events a decision read of one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowHistory {
    /// The row.
    pub row: RowRef,
    /// Its committed events, in commit order.
    pub events: Vec<RowEvent>,
}

/// A committed fact for the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Its id.
    pub id: String,
    /// Its kind (for an effect, the operation's name).
    pub kind: String,
    /// Its arguments.
    pub payload: Value,
    /// The effect it records, if any.
    pub effect: Option<String>,
}

/// A row a decision asked about, and the effect that held it then (`None`: none did).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRead {
    /// The row.
    pub row: RowRef,
    /// The effect without effect steps whose outcome had not arrived, if any.
    pub effect: Option<String>,
}
