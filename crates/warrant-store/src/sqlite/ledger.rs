//! The ledger on SQLite: the statements of a commit (`txn.rs` decides their order) and the
//! reads of records, turns, effects, interactions and events.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, ffi, params};
use serde_json::Value;

use super::{SqliteStore, SqliteTxn, json, settle};
use crate::commit::{Answer, Commit, CommitOutcome, EffectHold, OutcomeReport, OutcomeResult, RecordWrite};
use crate::commit::{check_commit, check_report};
use crate::error::StoreError;
use crate::ledger::Ledger;
use crate::migrations;
use crate::rows::{EffectRow, EventRow, InteractionRow, Record, RowEventRow, SharedRecord, StoredTurn, TurnRow};
use crate::storable::{check_seed, storable};
use crate::txn::{self, EffectInsert, Txn};

impl Ledger for SqliteStore {
    fn migrate(&mut self) -> Result<(), StoreError> {
        let tx = self.begin()?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_version (
                version    INTEGER NOT NULL PRIMARY KEY,
                applied_at TEXT    NOT NULL DEFAULT CURRENT_TIMESTAMP
            ) STRICT",
        )?;
        let applied: std::collections::BTreeSet<i64> = tx
            .prepare("SELECT version FROM schema_version")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        for step in migrations::pending(migrations::SQLITE, &applied)? {
            tx.execute_batch(step.sql)?;
            tx.execute("INSERT INTO schema_version (version) VALUES (?1)", [step.version])?;
        }
        tx.commit()?;
        Ok(())
    }

    fn seed_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<usize, StoreError> {
        check_seed(table, rows)?;
        let tx = self.begin()?;
        let inserted = txn::seed(&mut SqliteTxn::on(&tx), table, rows)?;
        tx.commit()?;
        Ok(inserted)
    }

    fn seeded_from(&mut self, table: &str) -> Result<Option<String>, StoreError> {
        if !storable(table) {
            return Ok(None);
        }
        Ok(self
            .conn
            .prepare_cached("SELECT source FROM seeds WHERE tbl = ?1")?
            .query_row(params![table], |row| row.get(0))
            .optional()?)
    }

    fn mark_seeded(&mut self, table: &str, mark: &str) -> Result<(), StoreError> {
        crate::storable::check_text("the table name", table)?;
        crate::storable::check_text("the seed mark", mark)?;
        self.conn
            .prepare_cached(
                "INSERT INTO seeds (tbl, source) VALUES (?1, ?2) ON CONFLICT (tbl) DO UPDATE SET source = excluded.source",
            )?
            .execute(params![table, mark])?;
        Ok(())
    }

    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError> {
        // One read of a row: the kept value, copied, or the row read and kept.
        Ok(self.shared_record(table, key)?.map(|r| Record {
            table: r.table,
            key: r.key,
            revision: r.revision,
            value: Arc::unwrap_or_clone(r.value),
        }))
    }

    fn shared_record(&mut self, table: &str, key: &str) -> Result<Option<SharedRecord>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        let SqliteStore { conn, rows, .. } = &*self;
        let read: Option<(i64, Result<Arc<Value>, StoreError>)> = conn
            .prepare_cached("SELECT revision, value FROM records WHERE tbl = ?1 AND key = ?2 AND deleted = 0")?
            .query_row(params![table, key], |row| {
                let text = row.get_ref(1)?.as_str()?;
                Ok((row.get(0)?, rows.value(table, key, text)))
            })
            .optional()?;
        let Some((revision, value)) = read else { return Ok(None) };
        Ok(Some(SharedRecord { table: table.to_owned(), key: key.to_owned(), revision, value: value? }))
    }

    fn begin_reads(&mut self) -> Result<(), StoreError> {
        self.end_span()?;
        // Deferred: the snapshot is taken by the span's first read.
        super::control(&self.conn, "BEGIN DEFERRED")?;
        Ok(())
    }

    fn end_reads(&mut self) -> Result<(), StoreError> {
        self.end_span()
    }

    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        if !storable(conversation) || !storable(turn) {
            return Ok(None);
        }
        read_turn(&self.conn, conversation, turn)
    }

    fn interaction(&mut self, id: &str) -> Result<Option<InteractionRow>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        type Raw = (String, String, String, String, String, Option<String>, Option<String>);
        let raw: Option<Raw> = self
            .conn
            .prepare_cached(
                "SELECT conversation, turn, payload, options, state, answer_option, answer_turn
                 FROM interactions WHERE id = ?1",
            )?
            .query_row([id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?))
            })
            .optional()?;
        let Some((conversation, turn, payload, options, state, option, answer_turn)) = raw else {
            return Ok(None);
        };
        let options = json(&options, || format!("the options of interaction `{id}`"))?;
        Ok(Some(InteractionRow {
            id: id.to_owned(),
            conversation,
            turn,
            payload: json(&payload, || format!("the payload of interaction `{id}`"))?,
            options: txn::interaction_options(id, options)?,
            state: txn::interaction_state(id, &state, option, answer_turn)?,
        }))
    }

    fn effect(&mut self, id: &str) -> Result<Option<EffectRow>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let raw: Option<RawEffect> = self
            .conn
            .prepare_cached(
                "SELECT id, idempotency_key, conversation, turn, op, payload, outcome, report
                 FROM effects WHERE id = ?1",
            )?
            .query_row([id], raw_effect)
            .optional()?;
        raw.map(decode_effect).transpose()
    }

    fn pending_effect(&mut self, table: &str, key: &str) -> Result<Option<String>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        Ok(self
            .conn
            .prepare_cached(
                "SELECT h.effect FROM effect_holds h JOIN effects e ON e.id = h.effect
                 WHERE h.tbl = ?1 AND h.key = ?2 AND (e.outcome IS NULL OR e.outcome = 'unknown')
                 ORDER BY h.effect LIMIT 1",
            )?
            .query_row([table, key], |row| row.get(0))
            .optional()?)
    }

    fn turn_effects(&mut self, conversation: &str, turn: &str) -> Result<Vec<EffectRow>, StoreError> {
        if !storable(conversation) || !storable(turn) {
            return Ok(Vec::new());
        }
        let raws = self
            .conn
            .prepare_cached(
                "SELECT id, idempotency_key, conversation, turn, op, payload, outcome, report
                 FROM effects WHERE conversation = ?1 AND turn = ?2 ORDER BY id",
            )?
            .query_map([conversation, turn], raw_effect)?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter().map(decode_effect).collect()
    }

    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        check_commit(commit)?;
        if let Some(group) = &self.group {
            return group.commit(commit);
        }
        let tx = self.begin()?;
        let settled = txn::commit(&mut SqliteTxn::on(&tx), commit)?;
        if let Some(outcome) = settle(tx, settled)? {
            return Ok(outcome);
        }
        duplicate(&self.conn, commit)
    }

    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError> {
        check_report(report)?;
        let tx = self.begin()?;
        let settled = txn::report_outcome(&mut SqliteTxn::on(&tx), report)?;
        settle(tx, settled)
    }

    fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let raws = self
            .conn
            .prepare_cached(
                "SELECT seq, conversation, turn, request, response, replay
                 FROM turns WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?
            .query_map(params![after, limit], raw_turn)?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter().map(decode_turn).collect()
    }

    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        let (before, limit) = (before.unwrap_or(i64::MAX), i64::try_from(limit).unwrap_or(i64::MAX));
        let raws = self
            .conn
            .prepare_cached(
                "SELECT seq, conversation, turn, request, response, replay
                 FROM turns WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2",
            )?
            .query_map(params![before, limit], raw_turn)?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter().map(decode_turn).collect()
    }

    fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, StoreError> {
        type Raw = (i64, String, String, String, String, Option<String>);
        let raw = |row: &rusqlite::Row<'_>| -> rusqlite::Result<Raw> {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
        };
        let raws = match conversation {
            Some(conversation) if !storable(conversation) => Vec::new(),
            Some(conversation) => self
                .conn
                .prepare_cached(
                    "SELECT seq, id, conversation, kind, payload, effect
                     FROM events WHERE conversation = ?1 ORDER BY seq",
                )?
                .query_map([conversation], raw)?
                .collect::<Result<Vec<_>, _>>()?,
            None => self
                .conn
                .prepare_cached("SELECT seq, id, conversation, kind, payload, effect FROM events ORDER BY seq")?
                .query_map([], raw)?
                .collect::<Result<Vec<_>, _>>()?,
        };
        raws.into_iter()
            .map(|(seq, id, conversation, kind, payload, effect)| {
                let payload = json(&payload, || format!("the payload of event `{id}`"))?;
                Ok(EventRow { seq, id, conversation, kind, payload, effect })
            })
            .collect()
    }

    fn row_events(&mut self, table: &str, key: &str) -> Result<Vec<RowEventRow>, StoreError> {
        self.read_row_events(table, key)
    }
}

impl Txn for SqliteTxn<'_> {
    fn claim_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        // Nothing to wait for: this transaction holds the write lock since it began.
        read_turn(self.0, conversation, turn)
    }

    fn update_record(&mut self, write: &RecordWrite, revision: i64) -> Result<bool, StoreError> {
        let updated = self
            .0
            .prepare_cached(
                "UPDATE records SET value = ?4, revision = ?5
                 WHERE tbl = ?1 AND key = ?2 AND revision = ?3 AND deleted = 0",
            )?
            .execute(params![write.table, write.key, write.expected_revision, write.value.to_string(), revision])?;
        Ok(updated == 1)
    }

    fn lock_read(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError> {
        // Locked already: this transaction holds the write lock since it began.
        self.record_revision(table, key)
    }

    fn record_revision(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .0
            .prepare_cached("SELECT revision FROM records WHERE tbl = ?1 AND key = ?2 AND deleted = 0")?
            .query_row(params![table, key], |row| row.get(0))
            .optional()?)
    }

    fn insert_effect(&mut self, effect: &EffectRow) -> Result<EffectInsert, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO effects (id, idempotency_key, conversation, turn, op, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                effect.id,
                effect.idempotency_key,
                effect.conversation,
                effect.turn,
                effect.op,
                effect.payload.to_string()
            ]);
        match violation(&inserted) {
            // The idempotency key is the only UNIQUE constraint of the table.
            Some(Violation::Unique) => Ok(EffectInsert::KeyTaken),
            Some(Violation::PrimaryKey) => Err(StoreError::IdTaken { kind: "effect", id: effect.id.clone() }),
            _ => {
                inserted?;
                Ok(EffectInsert::Inserted)
            }
        }
    }

    fn insert_hold(&mut self, hold: &EffectHold) -> Result<(), StoreError> {
        self.0.prepare_cached("INSERT INTO effect_holds (tbl, key, effect) VALUES (?1, ?2, ?3)")?.execute([
            &hold.table,
            &hold.key,
            &hold.effect,
        ])?;
        Ok(())
    }

    fn insert_interaction(&mut self, interaction: &InteractionRow) -> Result<(), StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO interactions (id, conversation, turn, payload, options, state)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'open')",
            )?
            .execute(params![
                interaction.id,
                interaction.conversation,
                interaction.turn,
                interaction.payload.to_string(),
                txn::options_json(&interaction.options).to_string()
            ]);
        if violation(&inserted) == Some(Violation::PrimaryKey) {
            return Err(StoreError::IdTaken { kind: "interaction", id: interaction.id.clone() });
        }
        inserted?;
        Ok(())
    }

    fn answer(&mut self, answer: &Answer, turn: &str) -> Result<bool, StoreError> {
        let updated = self
            .0
            .prepare_cached(
                "UPDATE interactions SET state = 'answered', answer_option = ?2, answer_turn = ?3
                 WHERE id = ?1 AND state = 'open'",
            )?
            .execute(params![answer.interaction, answer.option, turn])?;
        Ok(updated == 1)
    }

    fn insert_turn(&mut self, turn: &TurnRow) -> Result<Option<i64>, StoreError> {
        let seq = self
            .0
            .prepare_cached(
                "INSERT INTO turns (conversation, turn, request, response, replay)
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
            )?
            .query_row(
                params![
                    turn.conversation,
                    turn.turn,
                    turn.request.as_str(),
                    turn.response.as_str(),
                    turn.replay.as_str()
                ],
                |row| row.get(0),
            );
        // (conversation, turn) is the only UNIQUE constraint of the table.
        if violation(&seq) == Some(Violation::Unique) {
            return Ok(None);
        }
        Ok(Some(seq?))
    }

    fn insert_event(&mut self, event: &EventRow) -> Result<i64, StoreError> {
        let seq = self
            .0
            .prepare_cached(
                "INSERT INTO events (id, conversation, kind, payload, effect)
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
            )?
            .query_row(
                params![event.id, event.conversation, event.kind, event.payload.to_string(), event.effect],
                |row| row.get(0),
            );
        match violation(&seq) {
            Some(Violation::Unique) => Err(StoreError::IdTaken { kind: "event", id: event.id.clone() }),
            Some(Violation::ForeignKey) => Err(StoreError::UnknownEffectReference {
                event: event.id.clone(),
                effect: event.effect.clone().unwrap_or_default(),
            }),
            _ => Ok(seq?),
        }
    }

    fn lock_effect_outcome(&mut self, effect: &str) -> Result<Option<Option<String>>, StoreError> {
        // The write lock is held already, so reading is enough.
        Ok(self
            .0
            .prepare_cached("SELECT outcome FROM effects WHERE id = ?1")?
            .query_row([effect], |row| row.get(0))
            .optional()?)
    }

    fn set_outcome(&mut self, effect: &str, outcome: &str, report: Option<&Value>) -> Result<(), StoreError> {
        self.0.prepare_cached("UPDATE effects SET outcome = ?2, report = ?3 WHERE id = ?1")?.execute(params![
            effect,
            outcome,
            report.map(Value::to_string)
        ])?;
        Ok(())
    }
}

/// The kinds of constraint violation this module turns into outcomes or named errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Violation {
    Unique,
    PrimaryKey,
    ForeignKey,
}

fn violation<T>(result: &rusqlite::Result<T>) -> Option<Violation> {
    let Err(rusqlite::Error::SqliteFailure(error, _)) = result else {
        return None;
    };
    match error.extended_code {
        ffi::SQLITE_CONSTRAINT_UNIQUE => Some(Violation::Unique),
        ffi::SQLITE_CONSTRAINT_PRIMARYKEY => Some(Violation::PrimaryKey),
        ffi::SQLITE_CONSTRAINT_FOREIGNKEY => Some(Violation::ForeignKey),
        _ => None,
    }
}

type RawTurn = (i64, String, String, String, String, String);

fn raw_turn(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawTurn> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
}

fn decode_turn(raw: RawTurn) -> Result<StoredTurn, StoreError> {
    let (seq, conversation, turn, request, response, replay) = raw;
    let what = |column: &str| format!("`turns.{column}` of turn {seq}");
    Ok(StoredTurn {
        seq,
        request: json(&request, || what("request"))?,
        response: json(&response, || what("response"))?,
        replay: json(&replay, || what("replay"))?,
        conversation,
        turn,
    })
}

/// A commit whose turn is already stored (its unique constraint fired): the stored turn, read
/// back, or an error if it is not there after all.
pub(super) fn duplicate(conn: &Connection, commit: &Commit) -> Result<CommitOutcome, StoreError> {
    let (conversation, turn) = (&commit.turn.conversation, &commit.turn.turn);
    read_turn(conn, conversation, turn)?.map(CommitOutcome::Duplicate).ok_or_else(|| txn::vanished(conversation, turn))
}

pub(super) fn read_turn(conn: &Connection, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
    conn.prepare_cached(
        "SELECT seq, conversation, turn, request, response, replay
         FROM turns WHERE conversation = ?1 AND turn = ?2",
    )?
    .query_row([conversation, turn], raw_turn)
    .optional()?
    .map(decode_turn)
    .transpose()
}

/// An effect's columns as SQLite returns them.
type RawEffect = (String, String, String, String, String, String, Option<String>, Option<String>);

fn raw_effect(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawEffect> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?))
}

fn decode_effect(raw: RawEffect) -> Result<EffectRow, StoreError> {
    let (id, idempotency_key, conversation, turn, op, payload, outcome, report) = raw;
    let payload = json(&payload, || format!("the payload of effect `{id}`"))?;
    let report = report.map(|r| json(&r, || format!("the outcome report of effect `{id}`"))).transpose()?;
    Ok(EffectRow { id, idempotency_key, conversation, turn, op, payload, outcome, report })
}
