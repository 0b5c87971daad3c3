//! The store as a whole on SQLite: its schema steps, SQLite's own checks of the file, where
//! every effect stands, the export read through one cursor per table in one read
//! transaction, and a live backup through SQLite's online backup API.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, backup};

use super::SqliteStore;
use crate::error::StoreError;
use crate::maintenance::{
    EffectCensus, ExportCounts, ExportError, ExportLine, ExportSink, Integrity, Maintenance, PendingEffect,
    SchemaState, emit, raw,
};
use crate::migrations;

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BackupReport {
    /// The copy.
    pub to: PathBuf,
    /// Its pages.
    pub pages: i64,
    /// The turns it holds.
    pub turns: i64,
}

impl SqliteStore {
    /// Copies the store into a new file at `to` while other connections and processes go on
    /// committing, through SQLite's online backup API. The copy is one snapshot: every commit
    /// made before the backup began is in it, none is in it in part. The copy is written
    /// beside `to` (`to` with `.partial` added), checked (`quick_check`), closed whole (no log
    /// beside it) and only then renamed to `to`, so that a file at `to` is always a whole
    /// backup. A file already at `to` is refused, never replaced.
    pub fn backup_to(&self, to: &Path) -> Result<BackupReport, StoreError> {
        let refused = |why: String| StoreError::Backup { to: to.display().to_string(), why };
        if to.exists() {
            return Err(refused("the file exists; a backup never replaces one".into()));
        }
        let mut partial = to.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        // A copy left by a backup that died is no backup.
        remove_with_log(&partial).map_err(|e| refused(format!("cannot remove `{}`: {e}", partial.display())))?;
        let made = copy_into(&self.conn, &partial).and_then(|()| verified(&partial));
        let report = match made {
            Ok(report) => report,
            Err(e) => {
                let _ = remove_with_log(&partial);
                return Err(e);
            }
        };
        std::fs::rename(&partial, to).map_err(|e| refused(format!("cannot rename the copy into place: {e}")))?;
        // The rename is durable once the folder is synced.
        if let Some(folder) = to.parent().filter(|f| !f.as_os_str().is_empty()) {
            let _ = std::fs::File::open(folder).and_then(|f| f.sync_all());
        }
        Ok(BackupReport { to: to.to_owned(), ..report })
    }
}

/// Removes `path` and the log and shared-memory files SQLite may have left beside it.
fn remove_with_log(path: &Path) -> std::io::Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(PathBuf::from(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The store behind `source` copied into a new file at `to`, in one step: the step reads the
/// source in one read transaction, so the copy is one snapshot however many commits land
/// meanwhile (in write-ahead-log mode a reader holds up no writer). Copied in smaller steps,
/// each commit by another connection between two of them would start the copy again.
fn copy_into(source: &Connection, to: &Path) -> Result<(), StoreError> {
    let mut copy = Connection::open(to)?;
    copy.busy_timeout(super::BUSY_TIMEOUT)?;
    {
        let backup = backup::Backup::new(source, &mut copy)?;
        let deadline = std::time::Instant::now() + super::BUSY_TIMEOUT;
        loop {
            match backup.step(-1)? {
                backup::StepResult::Done => break,
                // Another connection held a lock the step needed: again, within the timeout.
                backup::StepResult::Busy | backup::StepResult::Locked | backup::StepResult::More
                    if std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => {
                    return Err(StoreError::Backup {
                        to: to.display().to_string(),
                        why: format!("the copy did not finish in time ({other:?})"),
                    });
                }
            }
        }
    }
    copy.close().map_err(|(_, e)| StoreError::from(e))
}

/// The copy at `path` opened again, checked, counted and closed whole.
fn verified(path: &Path) -> Result<BackupReport, StoreError> {
    let conn = Connection::open(path)?;
    let check: String = conn.query_row("PRAGMA quick_check", [], |row| row.get(0))?;
    if check != "ok" {
        return Err(StoreError::Backup {
            to: path.display().to_string(),
            why: format!("the copy is unsound: {check}"),
        });
    }
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    let turns: i64 = conn.query_row("SELECT count(*) FROM turns", [], |row| row.get(0))?;
    super::checkpoint_whole(&conn)?;
    conn.close().map_err(|(_, e)| StoreError::from(e))?;
    Ok(BackupReport { to: path.to_owned(), pages, turns })
}

/// The steps `conn`'s file has run; none where it was never migrated.
fn applied(conn: &Connection) -> Result<Vec<i64>, StoreError> {
    let exists: Option<i64> = conn
        .query_row("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'", [], |row| row.get(0))
        .optional()?;
    if exists.is_none() {
        return Ok(Vec::new());
    }
    Ok(conn
        .prepare("SELECT version FROM schema_version ORDER BY version")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?)
}

impl Maintenance for SqliteStore {
    fn schema(&mut self) -> Result<SchemaState, StoreError> {
        self.end_span()?;
        Ok(SchemaState { applied: applied(&self.conn)?, known: migrations::SQLITE.iter().map(|s| s.version).collect() })
    }

    fn integrity(&mut self) -> Result<Integrity, StoreError> {
        self.end_span()?;
        let mut problems: Vec<String> = self
            .conn
            .prepare("PRAGMA integrity_check")?
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|line| line != "ok")
            .collect();
        let orphans = self
            .conn
            .prepare("PRAGMA foreign_key_check")?
            .query_map([], |row| {
                Ok(format!(
                    "row {} of `{}` names a row of `{}` that is not there",
                    row.get::<_, Option<i64>>(1)?.map_or_else(|| "?".to_owned(), |r| r.to_string()),
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(2)?
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        problems.extend(orphans);
        Ok(Integrity { method: "sqlite integrity_check and foreign_key_check", problems })
    }

    fn effect_census(&mut self) -> Result<EffectCensus, StoreError> {
        self.end_span()?;
        // One snapshot for every count and list.
        let tx = self.conn.transaction()?;
        let (effects, settled): (i64, i64) = tx.query_row(
            "SELECT count(*), count(*) FILTER (WHERE outcome IN ('done', 'failed')) FROM effects",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let pending = tx
            .prepare(
                "SELECT id, op, conversation, turn, outcome FROM effects
                 WHERE outcome IS NULL OR outcome = 'unknown' ORDER BY id",
            )?
            .query_map([], |row| {
                Ok(PendingEffect {
                    id: row.get(0)?,
                    op: row.get(1)?,
                    conversation: row.get(2)?,
                    turn: row.get(3)?,
                    outcome: row.get(4)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let orphaned = tx
            .prepare(
                "SELECT id FROM effects e WHERE NOT EXISTS
                 (SELECT 1 FROM turns t WHERE t.conversation = e.conversation AND t.turn = e.turn) ORDER BY id",
            )?
            .query_map([], |row| row.get(0))?
            .collect::<Result<Vec<_>, _>>()?;
        let unreadable = tx
            .prepare(
                "SELECT id, outcome FROM effects
                 WHERE outcome IS NOT NULL AND outcome NOT IN ('done', 'failed', 'unknown') ORDER BY id",
            )?
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit()?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(EffectCensus { effects: count(effects), settled: count(settled), pending, orphaned, unreadable })
    }

    fn export(&mut self, sink: &mut ExportSink<'_>) -> Result<ExportCounts, ExportError> {
        let steps = crate::maintenance::current(self.schema()?)?;
        let tx = self.conn.transaction().map_err(StoreError::from)?;
        let mut counts = ExportCounts::default();
        emit(sink, &mut counts, ExportLine::Schema { backend: "sqlite", steps })?;
        export_tables(&tx, sink, &mut counts)?;
        tx.commit().map_err(StoreError::from)?;
        Ok(counts)
    }
}

/// Every table of an export, each through one cursor, its rows handed on as they are read.
fn export_tables(conn: &Connection, sink: &mut ExportSink<'_>, counts: &mut ExportCounts) -> Result<(), ExportError> {
    each(conn, "SELECT tbl, key, revision, deleted, value FROM records ORDER BY tbl, key", |row| {
        let (table, key): (String, String) = (row.get(0)?, row.get(1)?);
        let value = raw(row.get(4)?, || format!("record `{table}`/`{key}`"))?;
        Ok(ExportLine::Record { revision: row.get(2)?, deleted: row.get::<_, i64>(3)? != 0, value, table, key })
    })
    .and_then(|lines| lines.run(sink, counts))?;
    each(conn, "SELECT seq, conversation, turn, request, response, replay FROM turns ORDER BY seq", |row| {
        let seq: i64 = row.get(0)?;
        let what = |column: &str| format!("`turns.{column}` of turn {seq}");
        Ok(ExportLine::Turn {
            seq,
            conversation: row.get(1)?,
            turn: row.get(2)?,
            request: raw(row.get(3)?, || what("request"))?,
            response: raw(row.get(4)?, || what("response"))?,
            replay: raw(row.get(5)?, || what("replay"))?,
        })
    })
    .and_then(|lines| lines.run(sink, counts))?;
    each(
        conn,
        "SELECT id, conversation, turn, state, answer_option, answer_turn, payload, options
         FROM interactions ORDER BY id",
        |row| {
            let id: String = row.get(0)?;
            Ok(ExportLine::Interaction {
                conversation: row.get(1)?,
                turn: row.get(2)?,
                state: row.get(3)?,
                answer_option: row.get(4)?,
                answer_turn: row.get(5)?,
                payload: raw(row.get(6)?, || format!("the payload of interaction `{id}`"))?,
                options: raw(row.get(7)?, || format!("the options of interaction `{id}`"))?,
                id,
            })
        },
    )
    .and_then(|lines| lines.run(sink, counts))?;
    each(
        conn,
        "SELECT id, idempotency_key, conversation, turn, op, payload, outcome, report FROM effects ORDER BY id",
        |row| {
            let id: String = row.get(0)?;
            let report: Option<String> = row.get(7)?;
            Ok(ExportLine::Effect {
                idempotency_key: row.get(1)?,
                conversation: row.get(2)?,
                turn: row.get(3)?,
                op: row.get(4)?,
                payload: raw(row.get(5)?, || format!("the payload of effect `{id}`"))?,
                outcome: row.get(6)?,
                report: report.map(|r| raw(r, || format!("the outcome report of effect `{id}`"))).transpose()?,
                id,
            })
        },
    )
    .and_then(|lines| lines.run(sink, counts))?;
    each(conn, "SELECT tbl, key, effect FROM effect_holds ORDER BY tbl, key, effect", |row| {
        Ok(ExportLine::Hold { table: row.get(0)?, key: row.get(1)?, effect: row.get(2)? })
    })
    .and_then(|lines| lines.run(sink, counts))?;
    each(conn, "SELECT seq, id, conversation, kind, payload, effect FROM events ORDER BY seq", |row| {
        let id: String = row.get(1)?;
        Ok(ExportLine::Event {
            seq: row.get(0)?,
            conversation: row.get(2)?,
            event: row.get(3)?,
            payload: raw(row.get(4)?, || format!("the payload of event `{id}`"))?,
            effect: row.get(5)?,
            id,
        })
    })
    .and_then(|lines| lines.run(sink, counts))
}

/// A statement of an export and how each of its rows becomes a line.
struct Lines<'c, F> {
    statement: rusqlite::Statement<'c>,
    line: F,
}

fn each<'c, F>(conn: &'c Connection, sql: &str, line: F) -> Result<Lines<'c, F>, ExportError>
where
    F: FnMut(&rusqlite::Row<'_>) -> Result<ExportLine, StoreError>,
{
    Ok(Lines { statement: conn.prepare(sql).map_err(StoreError::from)?, line })
}

impl<F> Lines<'_, F>
where
    F: FnMut(&rusqlite::Row<'_>) -> Result<ExportLine, StoreError>,
{
    /// Steps the cursor, handing each row on as its line before reading the next.
    fn run(mut self, sink: &mut ExportSink<'_>, counts: &mut ExportCounts) -> Result<(), ExportError> {
        let mut rows = self.statement.query([]).map_err(StoreError::from)?;
        while let Some(row) = rows.next().map_err(StoreError::from)? {
            let line = (self.line)(row)?;
            emit(sink, counts, line)?;
        }
        Ok(())
    }
}
