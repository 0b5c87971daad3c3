//! The rows a turn has read, with the changes its effects have made so far.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::change::{self, RowChange};
use crate::facts::{EventRecord, Facts, Interaction, RowEvent, RowRef};
use crate::reason::ReasonCode;
use crate::records::SharedRecord;
use crate::verdict::Finding;

/// The revision a row that does not exist is read at (a row created by this turn's effects
/// has it until the commit stores it): no stored row is ever at it.
pub const ABSENT_REVISION: i64 = 0;

#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The row as read from the facts (`None` when it does not exist), its value shared: the
    /// slot's `current` is this very allocation until an effect changes it (so that taking a
    /// snapshot before each act costs no copy of the rows).
    pub(crate) read: Option<SharedRecord>,
    /// The working value after this turn's effects so far, shared until an effect changes it.
    pub(crate) current: Option<Arc<Value>>,
    /// What this turn's effects have written of it since it was read (an undone change stays
    /// written: the record is of what may differ from the row as read).
    pub(crate) written: Written,
}

/// What a turn's effects have written of a row since it was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Written {
    /// Nothing: the row is as read.
    #[default]
    Nothing,
    /// Values inside these top-level fields; the others are the row's as read.
    Fields(BTreeSet<String>),
    /// The whole row (created, deleted, or replaced).
    Whole,
}

impl Written {
    /// The top-level fields written, or `None` when the whole row may differ.
    pub(crate) fn fields(&self) -> Option<&BTreeSet<String>> {
        static NONE: BTreeSet<String> = BTreeSet::new();
        match self {
            Written::Nothing => Some(&NONE),
            Written::Fields(fields) => Some(fields),
            Written::Whole => None,
        }
    }

    fn field(&mut self, name: &str) {
        match self {
            Written::Nothing => *self = Written::Fields(BTreeSet::from([name.to_owned()])),
            Written::Fields(fields) => {
                if !fields.contains(name) {
                    fields.insert(name.to_owned());
                }
            }
            Written::Whole => {}
        }
    }
}

/// A row as the turn sees it now: the revision it was read at, and its current value.
#[derive(Debug, Clone, PartialEq)]
pub struct RowView {
    /// The revision read.
    pub revision: i64,
    /// The value after this turn's effects so far.
    pub value: Arc<Value>,
    /// Whether `value` is the row as read at `revision`: no effect of this turn has changed it.
    pub unchanged: bool,
}

/// The rows a turn has read, with the changes its effects have made so far.
pub struct Workspace<'f> {
    facts: &'f dyn Facts,
    pub(crate) rows: BTreeMap<RowRef, Slot>,
    pub(crate) interactions: BTreeMap<String, Option<Interaction>>,
    pub(crate) touched: BTreeSet<RowRef>,
    /// The rows asked about for a pending effect, with what the facts answered.
    pub(crate) pending: BTreeMap<RowRef, Option<String>>,
    /// The rows this turn's own effects without steps hold, by effect.
    pub(crate) held: BTreeMap<RowRef, String>,
    /// The conversation the turn belongs to, whose committed events expressions read.
    pub(crate) conversation: String,
    /// The conversation's committed events read so far, by kind (an operation's name).
    pub(crate) events: BTreeMap<String, Vec<EventRecord>>,
    /// The events of this turn's acts committed so far, in order.
    pub(crate) turn_events: Vec<EventRecord>,
    /// The committed events of rows read so far (every conversation's), by row.
    pub(crate) history: BTreeMap<RowRef, Vec<RowEvent>>,
    /// The events of this turn's acts committed so far, each with the rows its effect changed
    /// or holds.
    pub(crate) turn_history: Vec<(Vec<RowRef>, RowEvent)>,
}

impl std::fmt::Debug for Workspace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace").field("rows", &self.rows.len()).finish()
    }
}

impl<'f> Workspace<'f> {
    pub(crate) fn new(facts: &'f dyn Facts) -> Self {
        Workspace {
            facts,
            rows: BTreeMap::new(),
            interactions: BTreeMap::new(),
            touched: BTreeSet::new(),
            pending: BTreeMap::new(),
            held: BTreeMap::new(),
            conversation: String::new(),
            events: BTreeMap::new(),
            turn_events: Vec::new(),
            history: BTreeMap::new(),
            turn_history: Vec::new(),
        }
    }

    /// The committed events of `row` in every conversation, in commit order, read once per
    /// turn, then this turn's own that changed or hold it. A ledger that cannot be read refuses
    /// the act.
    pub(crate) fn row_events(&mut self, row: &RowRef) -> Result<Vec<RowEvent>, Finding> {
        if !self.history.contains_key(row) {
            let found = self.facts.row_events(row).map_err(|e| {
                Finding::refuse(ReasonCode::FactUnavailable)
                    .detail(format!("the events of row `{}` of `{}`: {e}", row.key, row.table))
            })?;
            self.history.insert(row.clone(), found);
        }
        let mut events = self.history.get(row).cloned().unwrap_or_default();
        events.extend(self.turn_history.iter().filter(|(rows, _)| rows.contains(row)).map(|(_, e)| e.clone()));
        Ok(events)
    }

    /// The conversation's committed events of `kind`, in commit order, read once per turn. A
    /// ledger that cannot be read refuses the act.
    pub(crate) fn events(&mut self, kind: &str) -> Result<&[EventRecord], Finding> {
        if !self.events.contains_key(kind) {
            let found = self
                .facts
                .events(&self.conversation, kind)
                .map_err(|e| Finding::refuse(ReasonCode::FactUnavailable).detail(format!("events of `{kind}`: {e}")))?;
            self.events.insert(kind.to_owned(), found);
        }
        Ok(self.events.get(kind).map_or(&[], Vec::as_slice))
    }

    /// The row as the turn sees it now (read revision, current value).
    pub fn row(&mut self, row: &RowRef) -> Result<Option<RowView>, Finding> {
        if !self.touched.contains(row) {
            self.touched.insert(row.clone());
        }
        if !self.rows.contains_key(row) {
            let read = self.facts.shared_record(&row.table, &row.key).map_err(|e| {
                Finding::refuse(ReasonCode::FactUnavailable)
                    .detail(format!("row `{}` of `{}`: {e}", row.key, row.table))
            })?;
            let current = read.as_ref().map(|r| r.value.clone());
            self.rows.insert(row.clone(), Slot { read, current, written: Written::Nothing });
        }
        let Some(slot) = self.rows.get(row) else { return Ok(None) };
        Ok(match (&slot.read, &slot.current) {
            (Some(read), Some(current)) => Some(RowView {
                revision: read.revision,
                value: current.clone(),
                unchanged: Arc::ptr_eq(&read.value, current),
            }),
            // Created by an effect of this turn: read as absent.
            (None, Some(current)) => {
                Some(RowView { revision: ABSENT_REVISION, value: current.clone(), unchanged: false })
            }
            _ => None,
        })
    }

    /// Creates `row` with `value`; it must not exist as the turn sees it now.
    pub fn create(&mut self, row: &RowRef, value: Value) -> Result<(), Finding> {
        if self.row(row)?.is_some() {
            return Err(Finding::refuse(ReasonCode::RecordExists).detail(format!(
                "table `{}` has a row `{}` already",
                row.table,
                crate::text::visible(&row.key)
            )));
        }
        if let Some(slot) = self.rows.get_mut(row) {
            slot.current = Some(Arc::new(value));
            slot.written = Written::Whole;
        }
        Ok(())
    }

    /// Deletes `row`, which must exist as the turn sees it now.
    pub fn delete(&mut self, row: &RowRef) -> Result<(), Finding> {
        if self.row(row)?.is_none() {
            return Err(Finding::refuse(ReasonCode::EffectInapplicable).detail(format!(
                "row `{}` of `{}` does not exist",
                crate::text::visible(&row.key),
                row.table
            )));
        }
        if let Some(slot) = self.rows.get_mut(row) {
            slot.current = None;
            slot.written = Written::Whole;
        }
        Ok(())
    }

    /// Changes the value at `pointer` (object fields and list indexes) inside a row.
    pub fn update(
        &mut self,
        row: &RowRef,
        pointer: &[String],
        make: impl Fn(Option<&Value>) -> Result<Value, Finding>,
    ) -> Result<(), Finding> {
        let inapplicable = |m: String| Finding::refuse(ReasonCode::EffectInapplicable).detail(m);
        if self.row(row)?.is_none() {
            return Err(inapplicable(format!("row `{}` of `{}` does not exist", row.key, row.table)));
        }
        let Some(Slot { current: Some(shared), written, .. }) = self.rows.get_mut(row) else {
            return Err(inapplicable(format!("row `{}` vanished", row.key)));
        };
        // Said before the change: a step that fails halfway may have written some of it.
        match pointer.first() {
            Some(field) => written.field(field),
            None => *written = Written::Whole,
        }
        let value = Arc::make_mut(shared);
        let Some((last, parents)) = pointer.split_last() else {
            *value = make(Some(value))?;
            return Ok(());
        };
        let mut target = value;
        for part in parents {
            target = match target {
                Value::Object(map) => map.get_mut(part),
                Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
                _ => None,
            }
            .ok_or_else(|| inapplicable(format!("`{}` has no `{part}`", pointer.join("."))))?;
        }
        match target {
            Value::Object(map) => {
                let new = make(map.get(last))?;
                map.insert(last.clone(), new);
            }
            Value::Array(items) => {
                let slot = last
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get_mut(i))
                    .ok_or_else(|| inapplicable(format!("`{}` is out of range", pointer.join("."))))?;
                *slot = make(Some(slot))?;
            }
            _ => return Err(inapplicable(format!("`{}` is not inside an object", pointer.join(".")))),
        }
        Ok(())
    }

    pub(crate) fn interaction(&mut self, id: &str) -> Result<Option<Interaction>, Finding> {
        if !self.interactions.contains_key(id) {
            let found = self
                .facts
                .interaction(id)
                .map_err(|e| Finding::refuse(ReasonCode::FactUnavailable).detail(format!("interaction `{id}`: {e}")))?;
            self.interactions.insert(id.to_owned(), found);
        }
        Ok(self.interactions.get(id).cloned().flatten())
    }

    /// The effect that holds `row`: one of this turn's own, or a stored one whose outcome has
    /// not arrived. A fact that cannot be read refuses the act.
    pub(crate) fn pending_effect(&mut self, row: &RowRef) -> Result<Option<String>, Finding> {
        if let Some(effect) = self.held.get(row) {
            return Ok(Some(effect.clone()));
        }
        if !self.pending.contains_key(row) {
            let found = self.facts.pending_effect(row).map_err(|e| {
                Finding::refuse(ReasonCode::FactUnavailable)
                    .detail(format!("pending effects on row `{}` of `{}`: {e}", row.key, row.table))
            })?;
            self.pending.insert(row.clone(), found);
        }
        Ok(self.pending.get(row).cloned().flatten())
    }

    pub(crate) fn snapshot(&self) -> BTreeMap<RowRef, Option<Arc<Value>>> {
        self.rows.iter().map(|(k, s)| (k.clone(), s.current.clone())).collect()
    }

    /// Every row back as it was at `snapshot`; a row first read since is back as read, so a
    /// refused act's changes to it are undone too.
    pub(crate) fn restore(&mut self, mut snapshot: BTreeMap<RowRef, Option<Arc<Value>>>) {
        for (row, slot) in &mut self.rows {
            match snapshot.remove(row) {
                Some(current) => slot.current = current,
                None => slot.current = slot.read.as_ref().map(|r| r.value.clone()),
            }
        }
    }

    /// What changed in each of `rows` since `since`, field by field.
    pub(crate) fn changes(&self, since: &BTreeMap<RowRef, Option<Arc<Value>>>, rows: &[RowRef]) -> Vec<RowChange> {
        rows.iter()
            .filter_map(|row| {
                let slot = self.rows.get(row)?;
                let before = match since.get(row) {
                    Some(before) => before.as_deref(),
                    None => slot.read.as_ref().map(|r| &*r.value),
                };
                let after = slot.current.as_deref();
                let fields = match (before, after) {
                    // A row created or deleted changed whole: absent before, or after.
                    (None, _) | (_, None) => {
                        vec![change::FieldChange { path: Vec::new(), before: before.cloned(), after: after.cloned() }]
                    }
                    (Some(before), Some(after)) => change::diff(before, after),
                };
                Some(RowChange { row: row.clone(), fields })
            })
            .collect()
    }

    pub(crate) fn changed_rows(&self, since: &BTreeMap<RowRef, Option<Arc<Value>>>) -> Vec<RowRef> {
        let same = |a: Option<&Arc<Value>>, b: Option<&Arc<Value>>| match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (None, None) => true,
            _ => false,
        };
        self.rows
            .iter()
            .filter(|(row, slot)| match since.get(*row) {
                Some(before) => !same(before.as_ref(), slot.current.as_ref()),
                None => !same(slot.read.as_ref().map(|r| &r.value), slot.current.as_ref()),
            })
            .map(|(row, _)| row.clone())
            .collect()
    }
}
