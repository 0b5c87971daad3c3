//! Writes from the system of record: a row put under a precondition, deleted at a revision, a
//! table imported all or nothing, and a row read with its revision. Each write names a table
//! the contract declares, and each row is checked as seeding checks a data file's rows
//! ([`records::check_row`]), before the store's rules for revisions apply.

use serde::Serialize;
use serde_json::Value;

use warrant_core::records::{self, Table};
use warrant_store::{Imported, Precondition, Record, RecordError, Store};

use crate::{Engine, EngineError};

/// What a put left: the row's table and key and its new revision, as the records route and
/// `warrant records put` print it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordWritten {
    /// The records table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// The row's new revision.
    pub revision: i64,
}

impl<S: Store> Engine<S> {
    /// The table `name` as the contract declares it, or [`EngineError::UnknownTable`].
    fn table(&self, name: &str) -> Result<&Table, EngineError> {
        self.contract.tables().iter().find(|t| t.name == name).ok_or_else(|| EngineError::UnknownTable(name.to_owned()))
    }

    /// Checks `value` as the row `key` of `table`, as every seeded row is checked.
    fn check_row(&self, table: &str, key: &str, value: &Value) -> Result<(), EngineError> {
        let table = self.table(table)?;
        records::check_row(table, key, value, self.contract.currency())
            .map_err(|e| EngineError::InvalidRow(Box::new(e)))
    }

    /// The row `key` of the declared table `table` as stored now, with its revision; `None`
    /// when the row does not exist or was deleted.
    pub fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, EngineError> {
        self.table(table)?;
        Ok(self.store.record(table, key)?)
    }

    /// Stores `value` as the row `key` of `table` if the row is as `precondition` requires,
    /// at a new revision, so a decision made against the row as it was is stale.
    pub fn put_record(
        &mut self,
        table: &str,
        key: &str,
        value: &Value,
        precondition: Precondition,
    ) -> Result<RecordWritten, EngineError> {
        self.check_row(table, key, value)?;
        let revision = self.store.put_record(table, key, value, precondition).map_err(record_error)?;
        Ok(RecordWritten { table: table.to_owned(), key: key.to_owned(), revision })
    }

    /// Deletes the row `key` of `table` if it is at `revision`.
    pub fn delete_record(&mut self, table: &str, key: &str, revision: i64) -> Result<(), EngineError> {
        self.table(table)?;
        self.store.delete_record(table, key, revision).map_err(record_error)
    }

    /// Creates or replaces the rows of `lines` in `table`, all of them or none. Each line that
    /// is not blank is one JSON object with one entry, the row's key and the row, as a data
    /// file holds it: `{"KEY": {…}}`.
    pub fn import_records(&mut self, table: &str, lines: &str) -> Result<Imported, EngineError> {
        self.table(table)?;
        let mut rows: Vec<(String, Value)> = Vec::new();
        for (number, line) in lines.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let (key, value) = import_line(line).map_err(|message| EngineError::InvalidImport {
                table: table.to_owned(),
                line: number + 1,
                message,
            })?;
            self.check_row(table, &key, &value)?;
            if rows.iter().any(|(k, _)| *k == key) {
                let message = format!("the key `{key}` comes twice");
                return Err(EngineError::InvalidImport { table: table.to_owned(), line: number + 1, message });
            }
            rows.push((key, value));
        }
        Ok(self.store.import_records(table, &rows)?)
    }
}

/// One line of an import: a JSON object with exactly one entry, read strictly.
fn import_line(line: &str) -> Result<(String, Value), String> {
    warrant_core::wire::check(line).map_err(|e| e.message)?;
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
        return Err("the line is not a JSON object".into());
    };
    let mut entries = map.into_iter();
    match (entries.next(), entries.next()) {
        (Some(entry), None) => Ok(entry),
        _ => Err("the line must hold one entry, `{\"KEY\": ROW}`".into()),
    }
}

/// A refused write as the engine names it: a precondition that failed is a conflict, the rest
/// the store's.
fn record_error(error: RecordError) -> EngineError {
    match error {
        RecordError::Conflict(conflict) => EngineError::Conflict(conflict),
        RecordError::Store(store) => EngineError::Store(store),
    }
}
