//! Writes from the system of record on PostgreSQL: the statements of a put, a delete and an
//! import (`records.rs` decides what they do), and the read of a whole table. A write locks the
//! row it finds (`FOR UPDATE`); a row that is not there is created with `ON CONFLICT DO
//! NOTHING`, so of two writers creating one row the second finds the first's row and looks
//! again.

use serde_json::Value;

use super::{PgStore, PgTxn, Session, settle};
use crate::error::StoreError;
use crate::records::{self, Current, Imported, Precondition, RecordDifference, RecordError, Records, RecordsTxn};
use crate::rows::Record;
use crate::storable::{check_seed, storable};

impl Records for PgStore {
    fn put_record(
        &mut self,
        table: &str,
        key: &str,
        value: &Value,
        precondition: Precondition,
    ) -> Result<i64, RecordError> {
        records::check_rows(table, &[(key, value)], false)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = records::put(&mut PgTxn { tx: &mut tx, statements, schema }, table, key, value, precondition)?;
        Ok(settle(tx, settled)??)
    }

    fn delete_record(&mut self, table: &str, key: &str, revision: i64) -> Result<(), RecordError> {
        crate::storable::check_text("the table name", table)?;
        crate::storable::check_text("the key", key)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = records::delete(&mut PgTxn { tx: &mut tx, statements, schema }, table, key, revision)?;
        Ok(settle(tx, settled)??)
    }

    fn import_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<Imported, StoreError> {
        let given: Vec<(&str, &Value)> = rows.iter().map(|(key, value)| (key.as_str(), value)).collect();
        records::check_rows(table, &given, true)?;
        let (mut tx, statements, schema) = self.begin()?;
        // Dropped without a commit on any error, which rolls every row back.
        let imported = records::import(&mut PgTxn { tx: &mut tx, statements, schema }, table, rows)?;
        tx.commit()?;
        Ok(imported)
    }

    fn table_records(&mut self, table: &str) -> Result<Vec<Record>, StoreError> {
        if !storable(table) {
            return Ok(Vec::new());
        }
        // Ordered by code point, as SQLite orders text and as a Rust string compares.
        self.query(
            "SELECT key, revision, value FROM records WHERE tbl = $1 AND NOT deleted ORDER BY key COLLATE \"C\"",
            &[&table],
        )?
        .iter()
        .map(|row| {
            Ok(Record {
                table: table.to_owned(),
                key: row.try_get(0)?,
                revision: row.try_get(1)?,
                value: row.try_get(2)?,
            })
        })
        .collect()
    }

    fn differing_records(
        &mut self,
        table: &str,
        rows: &[(String, Value)],
    ) -> Result<Vec<RecordDifference>, StoreError> {
        check_seed(table, rows)?;
        Ok(records::differences(self.table_records(table)?, rows))
    }
}

impl<C: Session> RecordsTxn for PgTxn<'_, C> {
    fn insert_record_if_absent(
        &mut self,
        table: &str,
        key: &str,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError> {
        let inserted = self.execute(
            "INSERT INTO records (tbl, key, revision, value) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tbl, key) DO NOTHING",
            &[&table, &key, &revision, value],
        )?;
        Ok(inserted == 1)
    }

    fn lock_record(&mut self, table: &str, key: &str) -> Result<Current, StoreError> {
        let row = self.query_opt(
            "SELECT revision, deleted FROM records WHERE tbl = $1 AND key = $2 FOR UPDATE",
            &[&table, &key],
        )?;
        let Some(row) = row else {
            return Ok(Current::Missing);
        };
        let (revision, deleted): (i64, bool) = (row.try_get(0)?, row.try_get(1)?);
        Ok(if deleted { Current::Deleted(revision) } else { Current::Live(revision) })
    }

    fn replace_record(
        &mut self,
        table: &str,
        key: &str,
        expected: i64,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError> {
        let updated = self.execute(
            "UPDATE records SET value = $4, revision = $5, deleted = false
             WHERE tbl = $1 AND key = $2 AND revision = $3",
            &[&table, &key, &expected, value, &revision],
        )?;
        Ok(updated == 1)
    }

    fn delete_record(&mut self, table: &str, key: &str, expected: i64, revision: i64) -> Result<bool, StoreError> {
        let updated = self.execute(
            "UPDATE records SET value = 'null', revision = $4, deleted = true
             WHERE tbl = $1 AND key = $2 AND revision = $3 AND NOT deleted",
            &[&table, &key, &expected, &revision],
        )?;
        Ok(updated == 1)
    }
}
