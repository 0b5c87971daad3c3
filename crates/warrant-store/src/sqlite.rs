//! The embedded store: one SQLite file in write-ahead-log mode, which several processes may
//! open at once. Every write transaction takes the database's write lock when it begins
//! (`BEGIN IMMEDIATE`), so writers are serialized, sequence numbers follow commit order by
//! construction, and a writer never fails to upgrade a read lock halfway through.

mod outbox;

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, ffi, params};
use serde_json::Value;

use crate::commit::{Answer, Commit, CommitOutcome, OutcomeReport, OutcomeResult, RecordWrite};
use crate::error::StoreError;
use crate::ladder::{
    self, AuditResult, AuditRow, AuditedFinding, Demotion, FindingKind, FindingRow, GuardTxn, PromotionRow,
};
use crate::migrations;
use crate::rows::{EffectRow, EventRow, InteractionRow, PromptPromotionRow, PromptRow, Record, StoredTurn};
use crate::storable::{
    check_audit, check_commit, check_demotion, check_finding, check_promotion, check_prompt, check_prompt_promotion,
    check_report, check_seed, storable,
};
use crate::txn::{self, EffectInsert, Settled, Txn};
use crate::{Ladder, Ledger, PromptRegistry};

/// How long a writer waits for another process's transaction before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Room for every statement this module prepares, so none is prepared twice.
const STATEMENT_CACHE: usize = 48;

/// A connection to a SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
}

impl SqliteStore {
    /// Opens (or creates) the store in the file at `path`, in write-ahead-log mode with full
    /// synchronous commits. Run [`Store::migrate`] before using a new file.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path)?;
        // First, so that switching the journal mode also waits for other processes.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Two connections switching a fresh file to WAL at once can get SQLITE_BUSY without the
        // busy handler being asked (SQLite's deadlock avoidance), so the switch is retried.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mode: String = loop {
            match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                other => break other?,
            }
        };
        if mode != "wal" {
            return Err(StoreError::NoWriteAheadLog { mode });
        }
        SqliteStore::configure(conn)
    }

    /// A private store in memory, gone when dropped. For unit tests only: it is not WAL, and
    /// no other connection can reach it.
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        SqliteStore::configure(Connection::open_in_memory()?)
    }

    fn configure(conn: Connection) -> Result<SqliteStore, StoreError> {
        // A commit the caller was told about survives a power cut, not only a crash.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(SqliteStore { conn })
    }

    fn begin(&mut self) -> Result<Transaction<'_>, StoreError> {
        Ok(self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
    }
}

/// Ends the transaction as the steps decided.
fn settle<T>(tx: Transaction<'_>, settled: Settled<T>) -> Result<T, StoreError> {
    match settled {
        Settled::Keep(answer) => {
            tx.commit()?;
            Ok(answer)
        }
        Settled::Discard(answer) => {
            tx.rollback()?;
            Ok(answer)
        }
    }
}

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
        let inserted = txn::seed(&mut SqliteTxn(&tx), table, rows)?;
        tx.commit()?;
        Ok(inserted)
    }

    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        let raw: Option<(i64, String)> = self
            .conn
            .prepare_cached("SELECT revision, value FROM records WHERE tbl = ?1 AND key = ?2")?
            .query_row(params![table, key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        raw.map(|(revision, value)| {
            Ok(Record {
                table: table.to_owned(),
                key: key.to_owned(),
                revision,
                value: json(&value, || format!("the value of record `{table}`/`{key}`"))?,
            })
        })
        .transpose()
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
        type Raw = (String, String, String, String, String, Option<String>);
        let raw: Option<Raw> = self
            .conn
            .prepare_cached(
                "SELECT idempotency_key, conversation, turn, op, payload, outcome
                 FROM effects WHERE id = ?1",
            )?
            .query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?)))
            .optional()?;
        let Some((idempotency_key, conversation, turn, op, payload, outcome)) = raw else {
            return Ok(None);
        };
        Ok(Some(EffectRow {
            id: id.to_owned(),
            idempotency_key,
            conversation,
            turn,
            op,
            payload: json(&payload, || format!("the payload of effect `{id}`"))?,
            outcome,
        }))
    }

    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        check_commit(commit)?;
        let tx = self.begin()?;
        let settled = txn::commit(&mut SqliteTxn(&tx), commit)?;
        if let Some(outcome) = settle(tx, settled)? {
            return Ok(outcome);
        }
        let (conversation, turn) = (&commit.turn.conversation, &commit.turn.turn);
        match read_turn(&self.conn, conversation, turn)? {
            Some(stored) => Ok(CommitOutcome::Duplicate(stored)),
            None => Err(txn::vanished(conversation, turn)),
        }
    }

    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError> {
        check_report(report)?;
        let tx = self.begin()?;
        let settled = txn::report_outcome(&mut SqliteTxn(&tx), report)?;
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
}

impl Ladder for SqliteStore {
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError> {
        if !storable(guard) {
            return Ok(Vec::new());
        }
        type Raw = (
            (i64, String, String, String, String, String, String, String),
            (Option<String>, Option<String>, Option<String>),
        );
        let raws: Vec<Raw> = self
            .conn
            .prepare_cached(
                "SELECT f.seq, f.id, f.version, f.conversation, f.turn, f.kind, f.payload, f.at,
                        a.label, a.who, a.at
                 FROM findings f LEFT JOIN audits a ON a.finding = f.id
                 WHERE f.guard = ?1 ORDER BY f.seq",
            )?
            .query_map([guard], |row| {
                Ok((
                    (
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                        row.get(6)?,
                        row.get(7)?,
                    ),
                    (row.get(8)?, row.get(9)?, row.get(10)?),
                ))
            })?
            .collect::<Result<_, _>>()?;
        raws.into_iter()
            .map(|((seq, id, version, conversation, turn, kind, payload, at), audit)| {
                let audit = match audit {
                    (Some(label), Some(who), Some(when)) => {
                        Some(AuditRow { finding: id.clone(), label, who, at: when })
                    }
                    _ => None,
                };
                Ok(AuditedFinding {
                    finding: FindingRow {
                        seq,
                        kind: FindingKind::parse(&id, &kind)?,
                        payload: json(&payload, || format!("the payload of finding `{id}`"))?,
                        id,
                        guard: guard.to_owned(),
                        version,
                        conversation,
                        turn,
                        at,
                    },
                    audit,
                })
            })
            .collect()
    }

    fn add_samples(&mut self, samples: &[FindingRow]) -> Result<usize, StoreError> {
        for (i, sample) in samples.iter().enumerate() {
            check_finding(|| format!("samples[{i}]"), sample)?;
        }
        let tx = self.begin()?;
        let mut added = 0;
        for sample in samples {
            if SqliteTxn(&tx).insert_finding(sample)? {
                added += 1;
            }
        }
        tx.commit()?;
        Ok(added)
    }

    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError> {
        check_audit(audit)?;
        let tx = self.begin()?;
        let settled = ladder::audit(&mut SqliteTxn(&tx), audit)?;
        settle(tx, settled)
    }

    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        check_promotion(promotion)?;
        let tx = self.begin()?;
        let settled = ladder::promote(&mut SqliteTxn(&tx), promotion)?;
        settle(tx, settled)
    }

    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError> {
        if !storable(subject) {
            return Ok(None);
        }
        type Raw = (i64, String, String, String, String);
        let raw: Option<Raw> = self
            .conn
            .prepare_cached(
                "SELECT seq, version, record, promoted_by, promoted_at FROM promotions
                 WHERE subject = ?1 AND demoted_at IS NULL",
            )?
            .query_row([subject], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?)))
            .optional()?;
        raw.map(|(seq, version, record, promoted_by, promoted_at)| {
            Ok(PromotionRow {
                seq,
                subject: subject.to_owned(),
                version,
                record: json(&record, || format!("the record of promotion {seq}"))?,
                promoted_by,
                promoted_at,
                demoted: None,
            })
        })
        .transpose()
    }

    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        check_demotion(subject, demotion)?;
        let tx = self.begin()?;
        let demoted = SqliteTxn(&tx).demote_active(subject, demotion)?;
        tx.commit()?;
        Ok(demoted)
    }
}

impl PromptRegistry for SqliteStore {
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError> {
        check_prompt(prompt)?;
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO prompt_versions (task, version, text) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            )?
            .execute(params![prompt.task, prompt.version, prompt.text])?;
        Ok(inserted == 1)
    }

    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError> {
        if !storable(task) || !storable(version) {
            return Ok(None);
        }
        Ok(self
            .conn
            .prepare_cached("SELECT text FROM prompt_versions WHERE task = ?1 AND version = ?2")?
            .query_row(params![task, version], |row| row.get(0))
            .optional()?
            .map(|text| PromptRow { task: task.to_owned(), version: version.to_owned(), text }))
    }

    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError> {
        check_prompt_promotion(promotion)?;
        let report = promotion.report.to_string();
        let seq = self
            .conn
            .prepare_cached(
                "INSERT INTO prompt_promotions (task, version, accepted, report) VALUES (?1, ?2, ?3, ?4) RETURNING seq",
            )?
            .query_row(params![promotion.task, promotion.version, promotion.accepted, report], |row| row.get(0))?;
        Ok(seq)
    }

    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError> {
        if !storable(task) {
            return Ok(Vec::new());
        }
        let raw: Vec<(i64, String, bool, String)> = self
            .conn
            .prepare_cached(
                "SELECT seq, version, accepted, report FROM prompt_promotions WHERE task = ?1 ORDER BY seq",
            )?
            .query_map(params![task], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
            .collect::<Result<_, _>>()?;
        raw.into_iter()
            .map(|(seq, version, accepted, report)| {
                Ok(PromptPromotionRow {
                    seq,
                    task: task.to_owned(),
                    version,
                    accepted,
                    report: json(&report, || format!("the report of promotion {seq}"))?,
                })
            })
            .collect()
    }
}

impl GuardTxn for SqliteTxn<'_> {
    fn finding_kind(&mut self, id: &str) -> Result<Option<FindingKind>, StoreError> {
        let kind: Option<String> = self
            .0
            .prepare_cached("SELECT kind FROM findings WHERE id = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()?;
        kind.map(|k| FindingKind::parse(id, &k)).transpose()
    }

    fn audit_label(&mut self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .0
            .prepare_cached("SELECT label FROM audits WHERE finding = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()?)
    }

    fn insert_audit(&mut self, audit: &AuditRow) -> Result<(), StoreError> {
        self.0
            .prepare_cached("INSERT INTO audits (finding, label, who, at) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![audit.finding, audit.label, audit.who, audit.at])?;
        Ok(())
    }

    fn demote_active(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        Ok(self
            .0
            .prepare_cached(
                "UPDATE promotions SET demoted_by = ?2, demoted_at = ?3, demoted_reason = ?4
                 WHERE subject = ?1 AND demoted_at IS NULL",
            )?
            .execute(params![subject, demotion.who, demotion.at, demotion.reason])?)
    }

    fn insert_promotion(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        Ok(self
            .0
            .prepare_cached(
                "INSERT INTO promotions (subject, version, record, promoted_by, promoted_at)
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
            )?
            .query_row(
                params![
                    promotion.subject,
                    promotion.version,
                    promotion.record.to_string(),
                    promotion.promoted_by,
                    promotion.promoted_at
                ],
                |row| row.get(0),
            )?)
    }
}

/// The steps of a commit inside one SQLite write transaction.
struct SqliteTxn<'a>(&'a Connection);

impl Txn for SqliteTxn<'_> {
    fn claim_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        // Nothing to wait for: this transaction holds the write lock since it began.
        read_turn(self.0, conversation, turn)
    }

    fn insert_record_if_absent(&mut self, table: &str, key: &str, value: &Value) -> Result<bool, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO records (tbl, key, revision, value) VALUES (?1, ?2, 1, ?3)
                 ON CONFLICT (tbl, key) DO NOTHING",
            )?
            .execute(params![table, key, value.to_string()])?;
        Ok(inserted == 1)
    }

    fn update_record(&mut self, write: &RecordWrite) -> Result<bool, StoreError> {
        let updated = self
            .0
            .prepare_cached(
                "UPDATE records SET value = ?4, revision = revision + 1
                 WHERE tbl = ?1 AND key = ?2 AND revision = ?3",
            )?
            .execute(params![write.table, write.key, write.expected_revision, write.value.to_string()])?;
        Ok(updated == 1)
    }

    fn record_revision(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .0
            .prepare_cached("SELECT revision FROM records WHERE tbl = ?1 AND key = ?2")?
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

    fn lock_commit_order(&mut self) -> Result<(), StoreError> {
        // Held since the transaction began: BEGIN IMMEDIATE took the write lock.
        Ok(())
    }

    fn insert_turn(&mut self, turn: &StoredTurn) -> Result<Option<i64>, StoreError> {
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
                    turn.request.to_string(),
                    turn.response.to_string(),
                    turn.replay.to_string()
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

    fn set_outcome(&mut self, effect: &str, outcome: &str) -> Result<(), StoreError> {
        self.0.prepare_cached("UPDATE effects SET outcome = ?2 WHERE id = ?1")?.execute([effect, outcome])?;
        Ok(())
    }

    fn insert_finding(&mut self, finding: &FindingRow) -> Result<bool, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO findings (id, guard, version, conversation, turn, kind, payload, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![
                finding.id,
                finding.guard,
                finding.version,
                finding.conversation,
                finding.turn,
                finding.kind.as_str(),
                finding.payload.to_string(),
                finding.at
            ])?;
        Ok(inserted == 1)
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

fn read_turn(conn: &Connection, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
    conn.prepare_cached(
        "SELECT seq, conversation, turn, request, response, replay
         FROM turns WHERE conversation = ?1 AND turn = ?2",
    )?
    .query_row([conversation, turn], raw_turn)
    .optional()?
    .map(decode_turn)
    .transpose()
}

/// A JSON column, which this module always writes as JSON text.
fn json(text: &str, what: impl FnOnce() -> String) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt { what: format!("{} is not JSON: {e}", what()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_in_memory_store_migrates_and_commits() -> Result<(), StoreError> {
        let mut store = SqliteStore::open_in_memory()?;
        store.migrate()?;
        store.migrate()?;
        assert_eq!(store.seed_records("orders", &[("#1".to_owned(), json!({"n": 1}))])?, 1);
        let turn = StoredTurn {
            seq: 0,
            conversation: "c".to_owned(),
            turn: "t".to_owned(),
            request: json!({}),
            response: json!(null),
            replay: json!([]),
        };
        let commit = Commit {
            turn,
            writes: vec![RecordWrite {
                table: "orders".to_owned(),
                key: "#1".to_owned(),
                expected_revision: 1,
                value: json!({"n": 2}),
            }],
            effects: vec![],
            events: vec![],
            opened: vec![],
            answered: vec![],
            findings: vec![],
        };
        assert!(matches!(store.commit(&commit)?, CommitOutcome::Committed { .. }));
        assert!(matches!(store.commit(&commit)?, CommitOutcome::Duplicate(_)));
        assert_eq!(store.record("orders", "#1")?.map(|r| r.revision), Some(2));
        Ok(())
    }
}
