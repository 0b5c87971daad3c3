//! The rows a turn has read, with the changes its effects have made so far.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::change::{self, RowChange};
use crate::facts::{EventRecord, Facts, Interaction, RowEvent, RowRef};
use warrant_contract::reason::ReasonCode;
use warrant_contract::records::SharedRecord;
use warrant_contract::verdict::Finding;

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

/// An effect on trial (`turn::effects_fit_schemas`): tried on the rows, checked, and undone.
/// The top-level fields its steps write are kept here, by row, rather than in a copy of each
/// row, so that a trial costs what its steps write, not the size of the rows they touch.
#[derive(Debug, Default)]
pub(crate) struct Trial {
    /// The top-level fields written so far, each whole, by row; the row's other fields are its
    /// current value's.
    pub(crate) fields: BTreeMap<RowRef, Map<String, Value>>,
    /// The rows copied whole during the trial (read whole after a step wrote them, created,
    /// deleted, or replaced): later steps write the copy, as outside a trial.
    copied: BTreeSet<RowRef>,
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
    /// The instant of the turn (its `at`), which the events of its acts are committed at.
    pub(crate) at: String,
    /// For each of `turn_events`, by position, the rows its effect changed or holds.
    pub(crate) turn_history: Vec<(Vec<RowRef>, usize)>,
    /// The effect on trial, while one is.
    pub(crate) trial: Option<Trial>,
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
            at: String::new(),
            turn_history: Vec::new(),
            trial: None,
        }
    }

    /// Starts trying an effect: until [`Workspace::end_trial`], the fields its steps write are
    /// kept beside the rows. Take a [`Workspace::snapshot`] first, and restore it after.
    pub(crate) fn begin_trial(&mut self) {
        self.trial = Some(Trial::default());
    }

    /// Ends the trial, dropping what its steps wrote beside the rows; [`Workspace::restore`]
    /// undoes the rest.
    pub(crate) fn end_trial(&mut self) {
        self.trial = None;
    }

    /// During a trial, the top-level `field` of `row` as the turn sees it now (`None` inside
    /// when the row has no such field), for a row some of whose fields the trial's steps have
    /// written beside it: read without copying the row. `None` for any other row: read it whole.
    /// (A row created or deleted during the trial has no fields beside it: both copy first.)
    pub(crate) fn trial_field(&self, row: &RowRef, field: &str) -> Option<Option<&Value>> {
        let written = self.trial.as_ref()?.fields.get(row)?;
        if let Some(value) = written.get(field) {
            return Some(Some(value));
        }
        let current = self.rows.get(row)?.current.as_deref()?;
        Some(current.get(field))
    }

    /// Folds the fields the trial's steps wrote beside `row` into a copy of it, which later
    /// steps then write as outside a trial. Nothing outside a trial.
    fn copy_trial_row(&mut self, row: &RowRef) {
        let Some(trial) = &mut self.trial else { return };
        if !trial.copied.insert(row.clone()) {
            return;
        }
        let Some(written) = trial.fields.remove(row) else { return };
        if let Some(Slot { current: Some(shared), .. }) = self.rows.get_mut(row)
            && let Value::Object(fields) = Arc::make_mut(shared)
        {
            fields.extend(written);
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
        let own = self.turn_history.iter().filter(|(rows, _)| rows.contains(row));
        events.extend(own.filter_map(|(_, at)| self.turn_events.get(*at)).map(|event| RowEvent {
            event: event.clone(),
            conversation: self.conversation.clone(),
            at: self.at.clone(),
            outcome: None,
        }));
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
        self.read(row)?;
        // Read whole during a trial: the fields written beside it go into a copy first.
        if self.trial.as_ref().is_some_and(|t| t.fields.contains_key(row)) {
            self.copy_trial_row(row);
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

    /// Reads `row` from the facts, once per turn; answers whether it exists as the turn sees
    /// it now.
    fn read(&mut self, row: &RowRef) -> Result<bool, Finding> {
        if !self.touched.contains(row) {
            self.touched.insert(row.clone());
        }
        if let Some(slot) = self.rows.get(row) {
            return Ok(slot.current.is_some());
        }
        let read = self.facts.shared_record(&row.table, &row.key).map_err(|e| {
            Finding::refuse(ReasonCode::FactUnavailable).detail(format!("row `{}` of `{}`: {e}", row.key, row.table))
        })?;
        let current = read.as_ref().map(|r| r.value.clone());
        let exists = current.is_some();
        self.rows.insert(row.clone(), Slot { read, current, written: Written::Nothing });
        Ok(exists)
    }

    /// Creates `row` with `value`; it must not exist as the turn sees it now.
    pub fn create(&mut self, row: &RowRef, value: Value) -> Result<(), Finding> {
        if self.row(row)?.is_some() {
            return Err(Finding::refuse(ReasonCode::RecordExists).detail(format!(
                "table `{}` has a row `{}` already",
                row.table,
                warrant_contract::text::visible(&row.key)
            )));
        }
        self.copy_trial_row(row);
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
                warrant_contract::text::visible(&row.key),
                row.table
            )));
        }
        self.copy_trial_row(row);
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
        // Read, not viewed: during a trial, viewing a row with fields written beside it copies it.
        if !self.read(row)? {
            return Err(inapplicable(format!("row `{}` of `{}` does not exist", row.key, row.table)));
        }
        // During a trial, a row not copied yet (an object, as every stored row is) is written
        // beside itself.
        let beside = self.trial.as_ref().is_some_and(|t| !t.copied.contains(row))
            && self.rows.get(row).is_some_and(|s| matches!(s.current.as_deref(), Some(Value::Object(_))));
        if beside && let Some(field) = pointer.first() {
            return self.update_on_trial(row, field, pointer, make);
        }
        self.copy_trial_row(row);
        let Some(Slot { current: Some(shared), written, .. }) = self.rows.get_mut(row) else {
            return Err(inapplicable(format!("row `{}` vanished", row.key)));
        };
        // Said before the change: a step that fails halfway may have written some of it.
        match pointer.first() {
            Some(field) => written.field(field),
            None => *written = Written::Whole,
        }
        change_at(Arc::make_mut(shared), pointer, make)
    }

    /// [`Workspace::update`] during a trial, of a row not copied: the top-level `field` the
    /// pointer starts at is copied into the trial's fields (once) and changed there.
    fn update_on_trial(
        &mut self,
        row: &RowRef,
        field: &str,
        pointer: &[String],
        make: impl Fn(Option<&Value>) -> Result<Value, Finding>,
    ) -> Result<(), Finding> {
        let inapplicable = |m: String| Finding::refuse(ReasonCode::EffectInapplicable).detail(m);
        let (Some(trial), Some(Slot { current: Some(shared), written, .. })) =
            (&mut self.trial, self.rows.get_mut(row))
        else {
            return Err(inapplicable(format!("row `{}` vanished", row.key)));
        };
        let Value::Object(own) = &**shared else {
            return Err(inapplicable(format!("`{}` is not inside an object", pointer.join("."))));
        };
        // Said before the change, as outside a trial.
        written.field(field);
        if !trial.fields.contains_key(row) {
            trial.fields.insert(row.clone(), Map::new());
        }
        let Some(fields) = trial.fields.get_mut(row) else { return Ok(()) };
        if pointer.len() == 1 {
            // The whole field is made anew: the value there is only read.
            let new = make(fields.get(field).or_else(|| own.get(field)))?;
            fields.insert(field.to_owned(), new);
            return Ok(());
        }
        if !fields.contains_key(field)
            && let Some(value) = own.get(field)
        {
            fields.insert(field.to_owned(), value.clone());
        }
        // The fields written as an object of their own: the pointer reaches into it as it would
        // into the row.
        let mut scratch = Value::Object(std::mem::take(fields));
        let changed = change_at(&mut scratch, pointer, make);
        if let Value::Object(back) = scratch {
            *fields = back;
        }
        changed
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
        // A field written beside its row during a trial changed it if it differs from the row's.
        let beside = |row: &RowRef, current: Option<&Arc<Value>>| {
            let written = self.trial.as_ref().and_then(|t| t.fields.get(row));
            written.is_some_and(|fields| {
                fields.iter().any(|(name, value)| current.and_then(|c| c.get(name)) != Some(value))
            })
        };
        self.rows
            .iter()
            .filter(|(row, slot)| {
                beside(row, slot.current.as_ref())
                    || match since.get(*row) {
                        Some(before) => !same(before.as_ref(), slot.current.as_ref()),
                        None => !same(slot.read.as_ref().map(|r| &r.value), slot.current.as_ref()),
                    }
            })
            .map(|(row, _)| row.clone())
            .collect()
    }
}

/// Changes the value at `pointer` (object fields and list indexes) inside `value` to what
/// `make` makes of the value there.
fn change_at(
    value: &mut Value,
    pointer: &[String],
    make: impl Fn(Option<&Value>) -> Result<Value, Finding>,
) -> Result<(), Finding> {
    let inapplicable = |m: String| Finding::refuse(ReasonCode::EffectInapplicable).detail(m);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::FactError;
    use serde_json::json;
    use warrant_contract::records::Record;

    /// One row, `order/o1`, shared by every read of it.
    struct OneRow(SharedRecord);
    impl Facts for OneRow {
        fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
            Ok(self.shared_record(table, key)?.map(|r| r.to_record()))
        }
        fn shared_record(&self, table: &str, key: &str) -> Result<Option<SharedRecord>, FactError> {
            Ok((table == "order" && key == "o1").then(|| self.0.clone()))
        }
        fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
            Ok(None)
        }
    }

    fn order() -> OneRow {
        let value = json!({"id": "o1", "status": "pending", "items": [{"price": 10}, {"price": 5}],
                           "payments": {"gift": {"balance": 3}}});
        OneRow(Record { table: "order".into(), key: "o1".into(), revision: 4, value }.into())
    }

    fn o1() -> RowRef {
        RowRef { table: "order".into(), key: "o1".into() }
    }

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| (*p).to_owned()).collect()
    }

    /// The steps of an effect: a top-level field set, a new field, a nested change, a list
    /// element, and a failing step (a field the row does not have).
    fn steps(work: &mut Workspace<'_>) -> Vec<Result<(), Finding>> {
        let row = o1();
        vec![
            work.update(&row, &path(&["status"]), |_| Ok(json!("cancelled"))),
            work.update(&row, &path(&["reason"]), |old| Ok(json!(old.is_none()))),
            work.update(&row, &path(&["payments", "gift", "balance"]), |old| {
                Ok(json!(old.and_then(Value::as_i64).unwrap_or_default() + 15))
            }),
            work.update(&row, &path(&["items", "1", "price"]), |_| Ok(json!(6))),
            work.update(&row, &path(&["refunds", "0"]), |_| Ok(json!(1))),
        ]
    }

    #[test]
    fn an_effect_on_trial_writes_beside_the_row_and_reads_as_it_would_outside_one() {
        let facts = order();
        // Outside a trial: the row is copied and written.
        let mut plain = Workspace::new(&facts);
        let plain_results = steps(&mut plain);
        let plain_row = plain.row(&o1()).unwrap().unwrap();

        let mut work = Workspace::new(&facts);
        let before = work.snapshot();
        work.begin_trial();
        let results = steps(&mut work);
        assert_eq!(results, plain_results);
        assert!(results[4].is_err(), "{results:?}");
        // Nothing was copied: the slot still holds the row as read, the writes are beside it.
        let slot = &work.rows[&o1()];
        assert!(Arc::ptr_eq(slot.current.as_ref().unwrap(), &facts.0.value));
        assert_eq!(slot.written, plain.rows[&o1()].written);
        assert_eq!(work.trial_field(&o1(), "status"), Some(Some(&json!("cancelled"))));
        assert_eq!(work.trial_field(&o1(), "id"), Some(Some(&json!("o1"))));
        assert_eq!(work.trial_field(&o1(), "missing"), Some(None));
        assert_eq!(work.changed_rows(&before), vec![o1()]);
        // Read whole, the row is the one the same steps make outside a trial, field order too.
        let seen = work.row(&o1()).unwrap().unwrap();
        assert_eq!(seen.value, plain_row.value);
        assert_eq!(seen.value.to_string(), plain_row.value.to_string());
        assert!(!seen.unchanged);
        // Later steps write the copy; the trial's fields are gone into it.
        work.update(&o1(), &path(&["status"]), |_| Ok(json!("refunded"))).unwrap();
        assert_eq!(work.trial_field(&o1(), "status"), None);
        assert_eq!(work.row(&o1()).unwrap().unwrap().value["status"], "refunded");
        work.end_trial();
        work.restore(before);
        // Undone: the row as read, never changed in place.
        let after = work.row(&o1()).unwrap().unwrap();
        assert!(after.unchanged && Arc::ptr_eq(&after.value, &facts.0.value));
        assert_eq!(facts.0.value["status"], "pending");
        assert!(work.changed_rows(&work.snapshot()).is_empty());
    }

    #[test]
    fn a_trial_that_writes_what_the_row_holds_changes_no_row() {
        let facts = order();
        let mut work = Workspace::new(&facts);
        let before = work.snapshot();
        work.begin_trial();
        work.update(&o1(), &path(&["status"]), |old| Ok(old.cloned().unwrap_or_default())).unwrap();
        assert!(work.trial.as_ref().is_some_and(|t| t.fields.contains_key(&o1())));
        assert!(work.changed_rows(&before).is_empty());
        // Deleted during the trial: gone, and nothing is left beside it.
        work.delete(&o1()).unwrap();
        assert_eq!(work.row(&o1()).unwrap(), None);
        assert_eq!(work.trial_field(&o1(), "status"), None);
        assert_eq!(work.changed_rows(&before), vec![o1()]);
        work.end_trial();
        work.restore(before);
        assert!(work.row(&o1()).unwrap().is_some_and(|r| r.unchanged));
    }
}
