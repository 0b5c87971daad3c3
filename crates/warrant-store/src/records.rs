//! Writes from the system of record: a row put under a precondition, deleted at a revision, or
//! a table's rows imported all or nothing; and a data file compared with the store. The rules
//! (what a precondition admits, what revision a write leaves, the order rows are locked in) are
//! written once here, over the statements a backend supplies ([`RecordsTxn`]); a row written
//! here gets the revision that a commit decided against the old row finds stale.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::StoreError;
use crate::rows::Record;
use crate::settled::Settled;

/// The revision a row has when it is first stored.
pub(crate) const FIRST_REVISION: i64 = 1;

/// The revision a write leaves on a row at `revision`; `None` past the last one.
pub(crate) fn next_revision(revision: i64) -> Option<i64> {
    revision.checked_add(1)
}

/// What a put requires of the row it replaces, as HTTP's conditional headers say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "precondition", content = "revision", rename_all = "snake_case")]
pub enum Precondition {
    /// Neither header: the row is created, or replaced whatever its revision.
    Any,
    /// `If-Match`: the row exists at exactly this revision, and is replaced.
    IfMatch(i64),
    /// `If-None-Match: *`: the row does not exist, and is created.
    IfNoneMatch,
}

/// A write refused because the row is not as its precondition requires; nothing was written.
/// The HTTP layer answers each one `409 stale_revision`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "conflict", rename_all = "snake_case")]
pub enum RecordConflict {
    /// The write named a revision of a row that does not exist (or was deleted).
    #[error("record `{table}`/`{key}` does not exist; expected revision {expected}")]
    Absent {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// The revision the write named.
        expected: i64,
    },
    /// The write was to create the row, and the row exists.
    #[error("record `{table}`/`{key}` exists at revision {revision}")]
    Present {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// The revision stored.
        revision: i64,
    },
    /// The write named another revision than the one stored.
    #[error("record `{table}`/`{key}` is at revision {current}, not {expected}")]
    Revision {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// The revision the write named.
        expected: i64,
        /// The revision stored.
        current: i64,
    },
}

/// Why a put or a delete wrote nothing: the row is not as required, or the store refused or
/// failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The row is not as the precondition requires.
    #[error(transparent)]
    Conflict(#[from] RecordConflict),
    /// The input cannot be kept (an empty key, a row that is not an object, U+0000), or the
    /// store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A key and the revision a write left on its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRevision {
    /// The row's key.
    pub key: String,
    /// Its new revision.
    pub revision: i64,
}

/// What an import wrote: every row, each at its new revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Imported {
    /// How many rows were written.
    pub count: usize,
    /// Each row's key with its new revision, in the order the rows were given.
    pub revisions: Vec<KeyRevision>,
}

/// A row of a data file that the store does not hold as the file has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordDifference {
    /// The row's key.
    pub key: String,
    /// The row as stored; `None` when the store has no such row (never seeded, or deleted by
    /// the system of record).
    pub stored: Option<Record>,
    /// The row as the file has it.
    pub file: Value,
}

/// Writes from the system of record to the records, and the comparison of a data file with
/// them. Reading one row is [`Ledger::record`](crate::Ledger::record); inserting a file's
/// missing rows is [`Ledger::seed_records`](crate::Ledger::seed_records).
///
/// Every write leaves the row at a new revision, so a commit decided against the row as it was
/// finds it stale. A deleted row keeps counting revisions: created again, it does not come back
/// at a revision any decision could have read. Which tables exist is the caller's concern.
pub trait Records: Send {
    /// Stores `value` as the row `key` of `table` if the row is as `precondition` requires;
    /// answers the row's new revision. The value must be a JSON object, the key not empty.
    fn put_record(
        &mut self,
        table: &str,
        key: &str,
        value: &Value,
        precondition: Precondition,
    ) -> Result<i64, RecordError>;

    /// Deletes the row `key` of `table` if it is at `revision`. A row that does not exist
    /// ([`RecordConflict::Absent`]) and one at another revision ([`RecordConflict::Revision`])
    /// are refused apart.
    fn delete_record(&mut self, table: &str, key: &str, revision: i64) -> Result<(), RecordError>;

    /// Creates or replaces every row of `rows` in `table`, in one transaction: all of them, or
    /// none when anything fails. Each row must be a JSON object under a key that is not empty,
    /// and no key may come twice.
    fn import_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<Imported, StoreError>;

    /// Every row of `table`, in key order.
    fn table_records(&mut self, table: &str) -> Result<Vec<Record>, StoreError>;

    /// The rows of `rows` (a data file's) that the store does not hold with equal JSON, in the
    /// order given; rows the store holds and the file does not are not differences. Writes
    /// nothing.
    fn differing_records(&mut self, table: &str, rows: &[(String, Value)])
    -> Result<Vec<RecordDifference>, StoreError>;
}

/// A row as a write finds it, locked against other writers until the transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Current {
    /// Never stored.
    Missing,
    /// Deleted at this revision.
    Deleted(i64),
    /// Stored at this revision.
    Live(i64),
}

/// The statements of a write from the system of record, as one backend performs them inside
/// one open transaction (besides the commit's, which it shares).
pub(crate) trait RecordsTxn {
    /// Inserts a record at `revision` unless one with its key exists (deleted or not); whether
    /// it did.
    fn insert_record_if_absent(
        &mut self,
        table: &str,
        key: &str,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError>;

    /// The row as stored, locked until the transaction ends.
    fn lock_record(&mut self, table: &str, key: &str) -> Result<Current, StoreError>;

    /// Stores the value and the revision on a row at `expected` (deleted or not), which is
    /// stored again; whether it did.
    fn replace_record(
        &mut self,
        table: &str,
        key: &str,
        expected: i64,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError>;

    /// Marks a row at `expected` deleted, at `revision`, keeping nothing of its value; whether
    /// it did.
    fn delete_record(&mut self, table: &str, key: &str, expected: i64, revision: i64) -> Result<bool, StoreError>;
}

/// How often a write looks again at a row that a concurrent writer created under it. Each look
/// follows another transaction's commit; on SQLite the first always decides.
const ATTEMPTS: usize = 4;

/// Whether `precondition` admits a write to the row as it is.
fn admit(table: &str, key: &str, precondition: Precondition, current: Current) -> Result<(), RecordConflict> {
    let (table, key) = (table.to_owned(), key.to_owned());
    match (precondition, current) {
        (Precondition::Any, _) | (Precondition::IfNoneMatch, Current::Missing | Current::Deleted(_)) => Ok(()),
        (Precondition::IfNoneMatch, Current::Live(revision)) => Err(RecordConflict::Present { table, key, revision }),
        (Precondition::IfMatch(expected), Current::Live(current)) if current == expected => Ok(()),
        (Precondition::IfMatch(expected), Current::Live(current)) => {
            Err(RecordConflict::Revision { table, key, expected, current })
        }
        (Precondition::IfMatch(expected), Current::Missing | Current::Deleted(_)) => {
            Err(RecordConflict::Absent { table, key, expected })
        }
    }
}

fn exhausted(table: &str, key: &str) -> StoreError {
    StoreError::Corrupt { what: format!("record `{table}`/`{key}` is at the last revision there is") }
}

/// One row written under its precondition; its new revision, or why not.
pub(crate) fn write(
    tx: &mut impl RecordsTxn,
    table: &str,
    key: &str,
    value: &Value,
    precondition: Precondition,
) -> Result<Result<i64, RecordConflict>, StoreError> {
    for _ in 0..ATTEMPTS {
        let current = tx.lock_record(table, key)?;
        if let Err(conflict) = admit(table, key, precondition, current) {
            return Ok(Err(conflict));
        }
        let written = match current {
            Current::Missing => {
                tx.insert_record_if_absent(table, key, FIRST_REVISION, value)?.then_some(FIRST_REVISION)
            }
            Current::Live(revision) | Current::Deleted(revision) => {
                let next = next_revision(revision).ok_or_else(|| exhausted(table, key))?;
                tx.replace_record(table, key, revision, next, value)?.then_some(next)
            }
        };
        if let Some(revision) = written {
            return Ok(Ok(revision));
        }
    }
    Err(StoreError::Contended { table: table.to_owned(), key: key.to_owned() })
}

/// The steps of a put.
pub(crate) fn put(
    tx: &mut impl RecordsTxn,
    table: &str,
    key: &str,
    value: &Value,
    precondition: Precondition,
) -> Result<Settled<Result<i64, RecordConflict>>, StoreError> {
    Ok(match write(tx, table, key, value, precondition)? {
        Ok(revision) => Settled::Keep(Ok(revision)),
        Err(conflict) => Settled::Discard(Err(conflict)),
    })
}

/// The steps of a delete: the row must be stored at `expected`.
pub(crate) fn delete(
    tx: &mut impl RecordsTxn,
    table: &str,
    key: &str,
    expected: i64,
) -> Result<Settled<Result<(), RecordConflict>>, StoreError> {
    let current = tx.lock_record(table, key)?;
    if let Err(conflict) = admit(table, key, Precondition::IfMatch(expected), current) {
        return Ok(Settled::Discard(Err(conflict)));
    }
    let next = next_revision(expected).ok_or_else(|| exhausted(table, key))?;
    if !tx.delete_record(table, key, expected, next)? {
        return Err(StoreError::Corrupt { what: format!("record `{table}`/`{key}` changed while locked") });
    }
    Ok(Settled::Keep(Ok(())))
}

/// The steps of an import: every row created or replaced, in key order, so that two imports
/// (or an import and a commit) lock the rows they share in the same order.
pub(crate) fn import(tx: &mut impl RecordsTxn, table: &str, rows: &[(String, Value)]) -> Result<Imported, StoreError> {
    let mut order: Vec<(usize, &(String, Value))> = rows.iter().enumerate().collect();
    order.sort_by(|(_, a), (_, b)| a.0.cmp(&b.0));
    let mut revisions = vec![0; rows.len()];
    for (i, (key, value)) in order {
        let revision = write(tx, table, key, value, Precondition::Any)?.map_err(|conflict| StoreError::Corrupt {
            what: format!("an unconditional write was refused: {conflict}"),
        })?;
        if let Some(slot) = revisions.get_mut(i) {
            *slot = revision;
        }
    }
    let revisions = rows.iter().zip(revisions).map(|((key, _), revision)| KeyRevision { key: key.clone(), revision });
    Ok(Imported { count: rows.len(), revisions: revisions.collect() })
}

/// The rows of a file that `stored` (every row of the table) does not hold with equal JSON.
pub(crate) fn differences(stored: Vec<Record>, rows: &[(String, Value)]) -> Vec<RecordDifference> {
    let stored: std::collections::BTreeMap<String, Record> =
        stored.into_iter().map(|record| (record.key.clone(), record)).collect();
    rows.iter()
        .filter_map(|(key, file)| match stored.get(key) {
            Some(record) if record.value == *file => None,
            stored => Some(RecordDifference { key: key.clone(), stored: stored.cloned(), file: file.clone() }),
        })
        .collect()
}

/// Refuses rows a put or an import must not store: an empty key, a value that is not an
/// object, a key given twice; and what neither backend can keep. With `positions`, an error
/// names the row by its position among those given.
pub(crate) fn check_rows(table: &str, rows: &[(&str, &Value)], positions: bool) -> Result<(), StoreError> {
    crate::storable::check_text("the table name", table)?;
    let mut seen = std::collections::BTreeSet::new();
    for (i, (key, value)) in rows.iter().enumerate() {
        let row = positions.then_some(i);
        if key.is_empty() {
            return Err(StoreError::EmptyKey { table: table.to_owned(), row });
        }
        let of = if positions { format!(" of row {i}") } else { String::new() };
        crate::storable::check_text(&format!("the key{of}"), key)?;
        if !value.is_object() {
            return Err(StoreError::NotAnObject { table: table.to_owned(), key: (*key).to_owned(), row });
        }
        crate::storable::check_json(&format!("the value{of} (`{}`)", key.escape_debug()), value)?;
        if !seen.insert(*key) {
            return Err(StoreError::DuplicateKey { table: table.to_owned(), key: (*key).to_owned() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_precondition_admits_only_the_row_it_names() {
        let ok = |p, c| admit("t", "k", p, c).is_ok();
        assert!(ok(Precondition::Any, Current::Missing));
        assert!(ok(Precondition::Any, Current::Live(3)));
        assert!(ok(Precondition::Any, Current::Deleted(3)));
        assert!(ok(Precondition::IfNoneMatch, Current::Missing));
        assert!(ok(Precondition::IfNoneMatch, Current::Deleted(3)));
        assert!(ok(Precondition::IfMatch(3), Current::Live(3)));
        assert!(matches!(
            admit("t", "k", Precondition::IfNoneMatch, Current::Live(3)),
            Err(RecordConflict::Present { revision: 3, .. })
        ));
        assert!(matches!(
            admit("t", "k", Precondition::IfMatch(2), Current::Live(3)),
            Err(RecordConflict::Revision { expected: 2, current: 3, .. })
        ));
        for current in [Current::Missing, Current::Deleted(3)] {
            assert!(matches!(
                admit("t", "k", Precondition::IfMatch(3), current),
                Err(RecordConflict::Absent { expected: 3, .. })
            ));
        }
    }

    #[test]
    fn the_last_revision_has_no_next() {
        assert_eq!(next_revision(FIRST_REVISION), Some(2));
        assert_eq!(next_revision(i64::MAX), None);
    }

    #[test]
    fn a_difference_is_a_file_row_the_store_does_not_hold_as_written() {
        let record = |key: &str, value: Value| Record { table: "t".into(), key: key.into(), revision: 1, value };
        let stored = vec![record("a", json!({"n": 1})), record("b", json!({"n": 2})), record("z", json!({}))];
        let rows =
            vec![("a".to_owned(), json!({"n": 1})), ("b".to_owned(), json!({"n": 3})), ("c".to_owned(), json!({}))];
        let found = differences(stored, &rows);
        let keys: Vec<(&str, bool)> = found.iter().map(|d| (d.key.as_str(), d.stored.is_some())).collect();
        assert_eq!(keys, [("b", true), ("c", false)]);
    }
}
