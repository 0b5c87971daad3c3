//! The store as a whole on PostgreSQL: its schema steps, every table read whole, where every
//! effect stands, and the export in pages of rows, each page after the last key of the one
//! before, all in one read-only snapshot (REPEATABLE READ).

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::PgStore;
use super::client::Session;
use crate::error::StoreError;
use crate::maintenance::{
    EffectCensus, ExportCounts, ExportError, ExportLine, ExportSink, Integrity, Maintenance, PendingEffect,
    SchemaState, emit, raw,
};
use crate::migrations;

/// Rows an export reads at a time: what it holds at once, whatever the store's size.
const PAGE: i64 = 256;

const HAS_SCHEMA_VERSION: &str = "SELECT to_regclass('schema_version') IS NOT NULL";
const APPLIED: &str = "SELECT version FROM schema_version ORDER BY version";
const TABLES: &str = "SELECT table_name::text FROM information_schema.tables
                      WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name";

impl PgStore {
    fn applied(&mut self) -> Result<Vec<i64>, StoreError> {
        let exists: bool =
            self.query(HAS_SCHEMA_VERSION, &[])?.first().map(|r| r.try_get(0)).transpose()?.unwrap_or(false);
        if !exists {
            return Ok(Vec::new());
        }
        self.query(APPLIED, &[])?.iter().map(|row| Ok(row.try_get(0)?)).collect()
    }
}

impl Maintenance for PgStore {
    fn schema(&mut self) -> Result<SchemaState, StoreError> {
        Ok(SchemaState { applied: self.applied()?, known: migrations::POSTGRES.iter().map(|s| s.version).collect() })
    }

    fn integrity(&mut self) -> Result<Integrity, StoreError> {
        let schema = self.schema.clone();
        let tables: Vec<String> =
            self.query(TABLES, &[&schema])?.iter().map(|row| row.try_get(0)).collect::<Result<_, _>>()?;
        let mut problems = Vec::new();
        for table in tables {
            // Every row whole, its stored values read out of their compressed and out-of-line
            // storage: a page the server cannot read fails here, named. The name is the
            // catalog's, quoted.
            let read = format!(
                "SELECT count(*), sum(octet_length(t::text)) FROM \"{schema}\".\"{}\" t",
                table.replace('"', "\"\"")
            );
            if let Err(e) = self.client.batch_execute(&read) {
                problems.push(format!("table `{table}` cannot be read whole: {}", StoreError::from(e)));
            }
        }
        Ok(Integrity { method: "postgresql: every table of the schema read whole", problems })
    }

    fn effect_census(&mut self) -> Result<EffectCensus, StoreError> {
        let (mut tx, statements, _) = self.snapshot()?;
        let mut query = |sql: &'static str| -> Result<Vec<Row>, StoreError> {
            let statement = statements.get(&mut tx, sql)?;
            Ok(tx.query(&statement, &[])?)
        };
        let counts = query("SELECT count(*), count(*) FILTER (WHERE outcome IN ('done', 'failed')) FROM effects")?;
        let (effects, settled): (i64, i64) = match counts.first() {
            Some(row) => (row.try_get(0)?, row.try_get(1)?),
            None => (0, 0),
        };
        let pending = query(
            "SELECT id, op, conversation, turn, outcome FROM effects
             WHERE outcome IS NULL OR outcome = 'unknown' ORDER BY id",
        )?
        .iter()
        .map(|row| {
            Ok(PendingEffect {
                id: row.try_get(0)?,
                op: row.try_get(1)?,
                conversation: row.try_get(2)?,
                turn: row.try_get(3)?,
                outcome: row.try_get(4)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
        let orphaned = query(
            "SELECT id FROM effects e WHERE NOT EXISTS
             (SELECT 1 FROM turns t WHERE t.conversation = e.conversation AND t.turn = e.turn) ORDER BY id",
        )?
        .iter()
        .map(|row| Ok(row.try_get(0)?))
        .collect::<Result<Vec<_>, StoreError>>()?;
        let unreadable = query(
            "SELECT id, outcome FROM effects
             WHERE outcome IS NOT NULL AND outcome NOT IN ('done', 'failed', 'unknown') ORDER BY id",
        )?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
        tx.commit()?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(EffectCensus { effects: count(effects), settled: count(settled), pending, orphaned, unreadable })
    }

    fn export(&mut self, sink: &mut ExportSink<'_>) -> Result<ExportCounts, ExportError> {
        let steps = crate::maintenance::current(self.schema()?)?;
        let (mut tx, statements, _) = self.snapshot()?;
        let mut counts = ExportCounts::default();
        emit(sink, &mut counts, ExportLine::Schema { backend: "postgres", steps })?;
        let mut page = |sql: &'static str, params: &[&(dyn ToSql + Sync)]| -> Result<Vec<Row>, StoreError> {
            let statement = statements.get(&mut tx, sql)?;
            Ok(tx.query(&statement, params)?)
        };
        let mut out = Out { sink, counts: &mut counts };
        // Keys are never empty, so the empty text (and 0 for a sequence number, which starts
        // at 1) comes before every row.
        let none = || String::new();
        out.pages(
            &mut page,
            "SELECT tbl, key, revision, deleted, value::text FROM records
             WHERE (tbl, key) > ($1, $2) ORDER BY tbl, key LIMIT $3",
            vec![none(), none()],
            record,
        )?;
        out.pages(
            &mut page,
            "SELECT seq, conversation, turn, request::text, response::text, replay::text FROM turns
             WHERE seq > $1 ORDER BY seq LIMIT $2",
            vec![0i64],
            turn,
        )?;
        out.pages(
            &mut page,
            "SELECT id, conversation, turn, state, answer_option, answer_turn, payload::text, options::text
             FROM interactions WHERE id > $1 ORDER BY id LIMIT $2",
            vec![none()],
            interaction,
        )?;
        out.pages(
            &mut page,
            "SELECT id, idempotency_key, conversation, turn, op, payload::text, outcome, report::text
             FROM effects WHERE id > $1 ORDER BY id LIMIT $2",
            vec![none()],
            effect,
        )?;
        out.pages(
            &mut page,
            "SELECT tbl, key, effect FROM effect_holds
             WHERE (tbl, key, effect) > ($1, $2, $3) ORDER BY tbl, key, effect LIMIT $4",
            vec![none(), none(), none()],
            hold,
        )?;
        out.pages(
            &mut page,
            "SELECT seq, id, conversation, kind, payload::text, effect FROM events
             WHERE seq > $1 ORDER BY seq LIMIT $2",
            vec![0i64],
            event,
        )?;
        tx.commit().map_err(StoreError::from)?;
        Ok(counts)
    }
}

/// Where an export's lines go, counted.
struct Out<'s, 'k> {
    sink: &'s mut ExportSink<'k>,
    counts: &'s mut ExportCounts,
}

impl Out<'_, '_> {
    /// One kind, a page at a time: `sql` takes the key columns of the last row read, then the
    /// page's size, and `line` makes each row its key and its line, handed on before the next.
    fn pages<K: ToSql + Sync>(
        &mut self,
        page: &mut impl FnMut(&'static str, &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError>,
        sql: &'static str,
        mut after: Vec<K>,
        line: impl Fn(&Row) -> Result<(Vec<K>, ExportLine), StoreError>,
    ) -> Result<(), ExportError> {
        loop {
            let rows = {
                let mut params: Vec<&(dyn ToSql + Sync)> = after.iter().map(|k| k as &(dyn ToSql + Sync)).collect();
                params.push(&PAGE);
                page(sql, &params)?
            };
            for row in &rows {
                let (key, next) = line(row)?;
                after = key;
                emit(self.sink, self.counts, next)?;
            }
            if i64::try_from(rows.len()).unwrap_or(i64::MAX) < PAGE {
                return Ok(());
            }
        }
    }
}

fn record(row: &Row) -> Result<(Vec<String>, ExportLine), StoreError> {
    let (table, key): (String, String) = (row.try_get(0)?, row.try_get(1)?);
    let value = raw(row.try_get(4)?, || format!("record `{table}`/`{key}`"))?;
    let cursor = vec![table.clone(), key.clone()];
    Ok((cursor, ExportLine::Record { table, key, revision: row.try_get(2)?, deleted: row.try_get(3)?, value }))
}

fn hold(row: &Row) -> Result<(Vec<String>, ExportLine), StoreError> {
    let (table, key, effect): (String, String, String) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    Ok((vec![table.clone(), key.clone(), effect.clone()], ExportLine::Hold { table, key, effect }))
}

fn turn(row: &Row) -> Result<(Vec<i64>, ExportLine), StoreError> {
    let seq: i64 = row.try_get(0)?;
    let what = |column: &str| format!("`turns.{column}` of turn {seq}");
    let line = ExportLine::Turn {
        seq,
        conversation: row.try_get(1)?,
        turn: row.try_get(2)?,
        request: raw(row.try_get(3)?, || what("request"))?,
        response: raw(row.try_get(4)?, || what("response"))?,
        replay: raw(row.try_get(5)?, || what("replay"))?,
    };
    Ok((vec![seq], line))
}

fn interaction(row: &Row) -> Result<(Vec<String>, ExportLine), StoreError> {
    let id: String = row.try_get(0)?;
    let line = ExportLine::Interaction {
        id: id.clone(),
        conversation: row.try_get(1)?,
        turn: row.try_get(2)?,
        state: row.try_get(3)?,
        answer_option: row.try_get(4)?,
        answer_turn: row.try_get(5)?,
        payload: raw(row.try_get(6)?, || format!("the payload of interaction `{id}`"))?,
        options: raw(row.try_get(7)?, || format!("the options of interaction `{id}`"))?,
    };
    Ok((vec![id], line))
}

fn effect(row: &Row) -> Result<(Vec<String>, ExportLine), StoreError> {
    let id: String = row.try_get(0)?;
    let report: Option<String> = row.try_get(7)?;
    let line = ExportLine::Effect {
        id: id.clone(),
        idempotency_key: row.try_get(1)?,
        conversation: row.try_get(2)?,
        turn: row.try_get(3)?,
        op: row.try_get(4)?,
        payload: raw(row.try_get(5)?, || format!("the payload of effect `{id}`"))?,
        outcome: row.try_get(6)?,
        report: report.map(|r| raw(r, || format!("the outcome report of effect `{id}`"))).transpose()?,
    };
    Ok((vec![id], line))
}

fn event(row: &Row) -> Result<(Vec<i64>, ExportLine), StoreError> {
    let seq: i64 = row.try_get(0)?;
    let id: String = row.try_get(1)?;
    let line = ExportLine::Event {
        seq,
        conversation: row.try_get(2)?,
        event: row.try_get(3)?,
        payload: raw(row.try_get(4)?, || format!("the payload of event `{id}`"))?,
        effect: row.try_get(5)?,
        id,
    };
    Ok((vec![seq], line))
}
