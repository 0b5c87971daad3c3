//! Stored facts as the core sees them: rows by key, interactions, committed events, the
//! [`Facts`] trait through which the engine (or a replay) supplies them, and [`FactsMemo`], which
//! serves a turn's later decisions what its first one read.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use warrant_contract::ladder::{PromotionRecord, Subject};
use warrant_contract::records::{Record, SharedRecord};

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

    /// The row as [`Facts::record`] answers it, its value shared: a source that keeps its rows
    /// in memory hands out the value it keeps rather than a copy. By default, `record`'s answer.
    fn shared_record(&self, table: &str, key: &str) -> Result<Option<SharedRecord>, FactError> {
        Ok(self.record(table, key)?.map(SharedRecord::from))
    }

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

/// The facts one decision read, kept to serve the decisions of the same turn after it: a turn
/// decided again with the answers of its checks (a round at a time) reads each fact from its
/// source once. Only facts read without error are kept; a source's error is asked again.
///
/// Keep one only while the source cannot have changed for the turn: a turn decided again after
/// a commit conflict starts a new one, so that it reads what the commit found.
#[derive(Debug, Default)]
pub struct FactsMemo {
    records: RefCell<BTreeMap<(String, String), Option<SharedRecord>>>,
    interactions: RefCell<BTreeMap<String, Option<Interaction>>>,
    promotions: RefCell<BTreeMap<Subject, Option<PromotionRecord>>>,
    pending: RefCell<BTreeMap<RowRef, Option<String>>>,
    events: RefCell<BTreeMap<(String, String), Vec<EventRecord>>>,
    row_events: RefCell<BTreeMap<RowRef, Vec<RowEvent>>>,
}

impl FactsMemo {
    /// `source`'s facts, each read once and then served from this memo.
    pub fn over<'a>(&'a self, source: &'a dyn Facts) -> MemoFacts<'a> {
        MemoFacts { memo: self, source }
    }

    /// Keeps `record` as what the row `row` reads, as if a decision had read it from its source:
    /// a source that read ahead what a decision will ask for serves it from here. A row already
    /// kept stays as it was read first.
    pub fn keep_record(&self, row: RowRef, record: Option<SharedRecord>) {
        self.records.borrow_mut().entry((row.table, row.key)).or_insert(record);
    }

    /// Keeps `effect` as the effect that holds `row` ([`Facts::pending_effect`]), as
    /// [`FactsMemo::keep_record`] keeps a row.
    pub fn keep_pending(&self, row: RowRef, effect: Option<String>) {
        self.pending.borrow_mut().entry(row).or_insert(effect);
    }
}

/// A source of facts seen through a [`FactsMemo`] ([`FactsMemo::over`]).
pub struct MemoFacts<'a> {
    memo: &'a FactsMemo,
    source: &'a dyn Facts,
}

impl std::fmt::Debug for MemoFacts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoFacts").field("memo", self.memo).finish_non_exhaustive()
    }
}

/// The kept answer for `key`, or the source's, kept if it is one.
fn kept<K: Ord, V: Clone>(
    memo: &RefCell<BTreeMap<K, V>>,
    key: K,
    read: impl FnOnce() -> Result<V, FactError>,
) -> Result<V, FactError> {
    if let Some(found) = memo.borrow().get(&key) {
        return Ok(found.clone());
    }
    let found = read()?;
    memo.borrow_mut().insert(key, found.clone());
    Ok(found)
}

impl Facts for MemoFacts<'_> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.shared_record(table, key)?.map(|r| r.to_record()))
    }

    fn shared_record(&self, table: &str, key: &str) -> Result<Option<SharedRecord>, FactError> {
        kept(&self.memo.records, (table.to_owned(), key.to_owned()), || self.source.shared_record(table, key))
    }

    fn interaction(&self, id: &str) -> Result<Option<Interaction>, FactError> {
        kept(&self.memo.interactions, id.to_owned(), || self.source.interaction(id))
    }

    fn promotion(&self, subject: &Subject) -> Result<Option<PromotionRecord>, FactError> {
        kept(&self.memo.promotions, subject.clone(), || self.source.promotion(subject))
    }

    fn pending_effect(&self, row: &RowRef) -> Result<Option<String>, FactError> {
        kept(&self.memo.pending, row.clone(), || self.source.pending_effect(row))
    }

    fn events(&self, conversation: &str, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        kept(&self.memo.events, (conversation.to_owned(), kind.to_owned()), || self.source.events(conversation, kind))
    }

    fn row_events(&self, row: &RowRef) -> Result<Vec<RowEvent>, FactError> {
        kept(&self.memo.row_events, row.clone(), || self.source.row_events(row))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use serde_json::json;

    use super::*;

    /// A source that counts its reads and fails the first read of `flaky`.
    struct Counting {
        reads: Cell<usize>,
        flaky: Cell<bool>,
    }

    impl Facts for Counting {
        fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
            self.reads.set(self.reads.get() + 1);
            if key == "flaky" && self.flaky.replace(false) {
                return Err(FactError("not now".into()));
            }
            let value = json!({"read": self.reads.get()});
            Ok((key != "none").then(|| Record { table: table.into(), key: key.into(), revision: 1, value }))
        }
        fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
            self.reads.set(self.reads.get() + 1);
            Ok(None)
        }
        fn events(&self, _: &str, kind: &str) -> Result<Vec<EventRecord>, FactError> {
            self.reads.set(self.reads.get() + 1);
            Ok(vec![EventRecord { id: "e".into(), kind: kind.into(), payload: json!({}), effect: None }])
        }
    }

    #[test]
    fn each_fact_is_read_once_and_served_as_it_was_read() {
        let source = Counting { reads: Cell::new(0), flaky: Cell::new(true) };
        let memo = FactsMemo::default();
        let first = memo.over(&source).record("order", "a").unwrap();
        // A later decision, through a new view of the same memo, gets the first read again.
        let again = memo.over(&source).record("order", "a").unwrap();
        assert_eq!(first, again);
        assert_eq!(source.reads.get(), 1);
        // A row that does not exist is kept as absent; other facts are kept by their own keys.
        let view = memo.over(&source);
        assert_eq!(view.record("order", "none").unwrap(), None);
        assert_eq!(view.record("order", "none").unwrap(), None);
        assert_eq!(view.interaction("i").unwrap(), None);
        assert_eq!(view.interaction("i").unwrap(), None);
        assert_eq!(view.events("c", "k").unwrap(), view.events("c", "k").unwrap());
        assert_eq!(view.events("c", "other").unwrap()[0].kind, "other");
        assert_eq!(source.reads.get(), 5);
        // A different row of the same table is its own read.
        assert_ne!(view.record("user", "a").unwrap(), first);
        assert_eq!(source.reads.get(), 6);
    }

    #[test]
    fn a_fact_that_could_not_be_read_is_asked_again() {
        let source = Counting { reads: Cell::new(0), flaky: Cell::new(true) };
        let memo = FactsMemo::default();
        assert!(memo.over(&source).record("order", "flaky").is_err());
        assert!(memo.over(&source).record("order", "flaky").unwrap().is_some());
        assert_eq!(source.reads.get(), 2);
    }
}
