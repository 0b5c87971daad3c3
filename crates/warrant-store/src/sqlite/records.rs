//! Writes from the system of record on SQLite: the statements of a put, a delete and an import
//! (`records.rs` decides what they do), and the read of a whole table.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{SqliteStore, SqliteTxn, json, settle};
use crate::error::StoreError;
use crate::records::{self, Current, Imported, Precondition, RecordDifference, RecordError, Records, RecordsTxn};
use crate::rows::Record;
use crate::storable::{check_seed, storable};

impl Records for SqliteStore {
    fn put_record(
        &mut self,
        table: &str,
        key: &str,
        value: &Value,
        precondition: Precondition,
    ) -> Result<i64, RecordError> {
        records::check_rows(table, &[(key, value)], false)?;
        let tx = self.begin()?;
        let settled = records::put(&mut SqliteTxn::on(&tx), table, key, value, precondition)?;
        Ok(settle(tx, settled)??)
    }

    fn delete_record(&mut self, table: &str, key: &str, revision: i64) -> Result<(), RecordError> {
        crate::storable::check_text("the table name", table)?;
        crate::storable::check_text("the key", key)?;
        let tx = self.begin()?;
        let settled = records::delete(&mut SqliteTxn::on(&tx), table, key, revision)?;
        Ok(settle(tx, settled)??)
    }

    fn import_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<Imported, StoreError> {
        let given: Vec<(&str, &Value)> = rows.iter().map(|(key, value)| (key.as_str(), value)).collect();
        records::check_rows(table, &given, true)?;
        let tx = self.begin()?;
        // Dropped without a commit on any error, which rolls every row back.
        let imported = records::import(&mut SqliteTxn::on(&tx), table, rows)?;
        tx.commit()?;
        Ok(imported)
    }

    fn table_records(&mut self, table: &str) -> Result<Vec<Record>, StoreError> {
        if !storable(table) {
            return Ok(Vec::new());
        }
        let raws: Vec<(String, i64, String)> = self
            .conn
            .prepare_cached("SELECT key, revision, value FROM records WHERE tbl = ?1 AND deleted = 0 ORDER BY key")?
            .query_map([table], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
            .collect::<Result<_, _>>()?;
        raws.into_iter()
            .map(|(key, revision, value)| {
                let value = json(&value, || format!("the value of record `{table}`/`{key}`"))?;
                Ok(Record { table: table.to_owned(), key, revision, value })
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

impl RecordsTxn for SqliteTxn<'_> {
    fn insert_record_if_absent(
        &mut self,
        table: &str,
        key: &str,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO records (tbl, key, revision, value) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (tbl, key) DO NOTHING",
            )?
            .execute(params![table, key, revision, value.to_string()])?;
        Ok(inserted == 1)
    }

    fn lock_record(&mut self, table: &str, key: &str) -> Result<Current, StoreError> {
        // Locked already: this transaction holds the write lock since it began.
        let row: Option<(i64, bool)> = self
            .0
            .prepare_cached("SELECT revision, deleted FROM records WHERE tbl = ?1 AND key = ?2")?
            .query_row(params![table, key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        Ok(match row {
            None => Current::Missing,
            Some((revision, true)) => Current::Deleted(revision),
            Some((revision, false)) => Current::Live(revision),
        })
    }

    fn replace_record(
        &mut self,
        table: &str,
        key: &str,
        expected: i64,
        revision: i64,
        value: &Value,
    ) -> Result<bool, StoreError> {
        let updated = self
            .0
            .prepare_cached(
                "UPDATE records SET value = ?4, revision = ?5, deleted = 0
                 WHERE tbl = ?1 AND key = ?2 AND revision = ?3",
            )?
            .execute(params![table, key, expected, value.to_string(), revision])?;
        Ok(updated == 1)
    }

    fn delete_record(&mut self, table: &str, key: &str, expected: i64, revision: i64) -> Result<bool, StoreError> {
        let updated = self
            .0
            .prepare_cached(
                "UPDATE records SET value = 'null', revision = ?4, deleted = 1
                 WHERE tbl = ?1 AND key = ?2 AND revision = ?3 AND deleted = 0",
            )?
            .execute(params![table, key, expected, revision])?;
        Ok(updated == 1)
    }
}
