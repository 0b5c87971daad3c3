//! What an operator asks of a store as a whole, rather than of one turn: which schema steps it
//! has run, whether its files or tables are sound, where every effect stands, and its ledger
//! and replay records read end to end as JSON lines ([`Maintenance::export`]). The engine's
//! `check` puts these beside a replay of every turn; `warrant store` is their command line.
//! Each backend's SQL is in `sqlite/maintenance.rs` and `pg/maintenance.rs`; the order and
//! shape of an export are here, written once.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::StoreError;

/// The schema steps a store has run, beside those this build knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaState {
    /// The steps the store records in `schema_version`, in order (none for a store never
    /// migrated).
    pub applied: Vec<i64>,
    /// The steps this build knows, in order.
    pub known: Vec<i64>,
}

impl SchemaState {
    /// The known steps the store has not run: what migrating it would run.
    pub fn pending(&self) -> Vec<i64> {
        self.known.iter().copied().filter(|step| !self.applied.contains(step)).collect()
    }

    /// The steps the store has run that this build does not know: a newer build migrated it,
    /// and this one must not write to it.
    pub fn unknown(&self) -> Vec<i64> {
        self.applied.iter().copied().filter(|step| !self.known.contains(step)).collect()
    }
}

/// What the backend found when it checked its own files or tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Integrity {
    /// How the backend checked: SQLite's `integrity_check` and `foreign_key_check`, or on
    /// PostgreSQL every table of the schema read whole.
    pub method: &'static str,
    /// Each problem found, as the backend says it; none when the store is sound.
    pub problems: Vec<String>,
}

/// An effect that has no final outcome yet: none reported, or `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingEffect {
    /// The effect.
    pub id: String,
    /// Its operation.
    pub op: String,
    /// The conversation of the turn that committed it.
    pub conversation: String,
    /// That turn.
    pub turn: String,
    /// `unknown`, or none when no outcome was reported.
    pub outcome: Option<String>,
}

/// Where every effect of a store stands: each has a final outcome (`done`, `failed`) or is
/// listed as pending; an effect that is neither, or whose turn is not stored, is a problem.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EffectCensus {
    /// Effects stored.
    pub effects: u64,
    /// Of them, those with the outcome `done` or `failed`.
    pub settled: u64,
    /// The rest, by id.
    pub pending: Vec<PendingEffect>,
    /// Effects whose turn is not stored, by id.
    pub orphaned: Vec<String>,
    /// Effects whose stored outcome is none of `done`, `failed`, `unknown`, with it.
    pub unreadable: Vec<(String, String)>,
}

/// One line of an export: a JSON object whose `kind` says what it is. JSON columns are given
/// as they are stored (their text, checked to be JSON), so an export reads back byte for byte.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportLine {
    /// The first line: the backend and the schema steps the store has run.
    Schema {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// The steps run, in order.
        steps: Vec<i64>,
    },
    /// A row of a records table, a tombstone (`deleted`) too.
    Record {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// Its revision.
        revision: i64,
        /// Whether the system of record deleted it.
        deleted: bool,
        /// The row.
        value: Box<RawValue>,
    },
    /// A committed turn with its replay record.
    Turn {
        /// Its place in commit order.
        seq: i64,
        /// The conversation.
        conversation: String,
        /// The turn's key.
        turn: String,
        /// The request as it came in.
        request: Box<RawValue>,
        /// The response as it went out.
        response: Box<RawValue>,
        /// The replay record.
        replay: Box<RawValue>,
    },
    /// An interaction a turn opened, answered or not.
    Interaction {
        /// The interaction.
        id: String,
        /// The conversation.
        conversation: String,
        /// The turn that opened it.
        turn: String,
        /// `open` or `answered`.
        state: String,
        /// The option chosen, once answered.
        answer_option: Option<String>,
        /// The turn that answered it.
        answer_turn: Option<String>,
        /// What it asks.
        payload: Box<RawValue>,
        /// The options it offers.
        options: Box<RawValue>,
    },
    /// An effect a turn committed, with its outcome once reported.
    Effect {
        /// The effect.
        id: String,
        /// The key the executor applies it once under.
        idempotency_key: String,
        /// The conversation.
        conversation: String,
        /// The turn that committed it.
        turn: String,
        /// The operation.
        op: String,
        /// Its arguments and changes.
        payload: Box<RawValue>,
        /// `done`, `failed` or `unknown`, once reported.
        outcome: Option<String>,
        /// What the executor reported with it.
        report: Option<Box<RawValue>>,
    },
    /// A row an effect holds until its outcome.
    Hold {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// The effect.
        effect: String,
    },
    /// A committed event.
    Event {
        /// Its place in commit order.
        seq: i64,
        /// The event.
        id: String,
        /// The conversation.
        conversation: String,
        /// What happened (the event's own kind).
        event: String,
        /// Its payload.
        payload: Box<RawValue>,
        /// The effect it is of, if any.
        effect: Option<String>,
    },
}

/// The kinds of line an export writes after the schema, in the order it writes them.
pub const EXPORT_KINDS: [&str; 6] = ["record", "turn", "interaction", "effect", "hold", "event"];

/// How many lines of each kind an export wrote, in [`EXPORT_KINDS`] order after the schema line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ExportCounts {
    /// Rows of records tables (tombstones too).
    pub records: u64,
    /// Turns.
    pub turns: u64,
    /// Interactions.
    pub interactions: u64,
    /// Effects.
    pub effects: u64,
    /// Holds.
    pub holds: u64,
    /// Events.
    pub events: u64,
}

impl ExportCounts {
    pub(crate) fn count(&mut self, line: &ExportLine) {
        match line {
            ExportLine::Schema { .. } => {}
            ExportLine::Record { .. } => self.records += 1,
            ExportLine::Turn { .. } => self.turns += 1,
            ExportLine::Interaction { .. } => self.interactions += 1,
            ExportLine::Effect { .. } => self.effects += 1,
            ExportLine::Hold { .. } => self.holds += 1,
            ExportLine::Event { .. } => self.events += 1,
        }
    }
}

/// Why an export stopped: the store failed, or whoever took the lines did.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store failed, or a stored value is not JSON.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The sink refused a line (a closed pipe, a full disk, a stop asked for).
    #[error("the export's output failed: {0}")]
    Sink(#[source] std::io::Error),
}

/// Where an export's lines go, one at a time, as they are read.
pub type ExportSink<'a> = dyn FnMut(ExportLine) -> std::io::Result<()> + 'a;

/// A store as a whole, for its operator.
pub trait Maintenance: Send {
    /// The schema steps the store has run, beside those this build knows. Reads only: a store
    /// never migrated has run none.
    fn schema(&mut self) -> Result<SchemaState, StoreError>;

    /// Checks the backend's own files or tables; the problems it finds are values, not errors.
    fn integrity(&mut self) -> Result<Integrity, StoreError>;

    /// Where every effect stands ([`EffectCensus`]).
    fn effect_census(&mut self) -> Result<EffectCensus, StoreError>;

    /// Writes the ledger and the replay records to `sink`, a line at a time as they are read
    /// (a cursor on SQLite, pages of rows on PostgreSQL), in one snapshot of the store: the
    /// schema line, then every record, turn, interaction, effect, hold and event, each kind in
    /// its key's order. What it holds at once is a line or a page, whatever the store's size.
    /// A store that has not run every schema step this build knows, or has run one it does not
    /// know, is refused before anything is written.
    fn export(&mut self, sink: &mut ExportSink<'_>) -> Result<ExportCounts, ExportError>;
}

/// The schema's steps, when they are exactly those this build knows: an export reads every
/// column of the newest step, and one of a store behind it or ahead of it would misread.
pub(crate) fn current(schema: SchemaState) -> Result<Vec<i64>, StoreError> {
    if let Some(found) = schema.unknown().last() {
        return Err(StoreError::SchemaTooNew { found: *found, known: schema.known.last().copied().unwrap_or(0) });
    }
    let pending = schema.pending();
    if !pending.is_empty() {
        return Err(StoreError::SchemaBehind { pending });
    }
    Ok(schema.applied)
}

/// A JSON column's text as a raw value, checked to be JSON; `what` names the column and row.
pub(crate) fn raw(text: String, what: impl FnOnce() -> String) -> Result<Box<RawValue>, StoreError> {
    RawValue::from_string(text).map_err(|e| StoreError::Corrupt { what: format!("{} is not JSON: {e}", what()) })
}

/// Hands `line` to the sink, counted.
pub(crate) fn emit(sink: &mut ExportSink<'_>, counts: &mut ExportCounts, line: ExportLine) -> Result<(), ExportError> {
    counts.count(&line);
    sink(line).map_err(ExportError::Sink)
}
