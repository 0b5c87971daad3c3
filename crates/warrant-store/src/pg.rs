//! The store for more than one process or machine: PostgreSQL, every table in one schema.
//! Commits run at READ COMMITTED and let each other through wherever they touch different
//! rows; the expected-revision UPDATE decides between two writers of the same record (the
//! second waits for the first, then finds the new revision and updates nothing). Two short
//! advisory locks do the rest: one per turn key, so that a duplicate is found before anything
//! else, and one per schema, taken last, so that sequence numbers follow commit order.

mod outbox;

use std::collections::HashMap;
use std::fmt;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, IsolationLevel, NoTls, Row, Statement, Transaction};
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

/// The first key of warrant's advisory locks, one per purpose; the second key is a hash of
/// the schema (and of the turn, for turn claims). Two different keys that hash alike only
/// make one transaction wait for the other, never change a result.
const LOCK_CREATE_SCHEMA: i32 = 0x5741_0001;
const LOCK_MIGRATE: i32 = 0x5741_0002;
const LOCK_TURN: i32 = 0x5741_0003;
const LOCK_COMMIT_ORDER: i32 = 0x5741_0004;
const LOCK_PROMOTION: i32 = 0x5741_0005;

/// PostgreSQL's limit on identifier length, in bytes.
const MAX_SCHEMA_NAME: usize = 63;

/// A connection to a PostgreSQL store, whose tables live in one schema.
pub struct PgStore {
    client: Client,
    schema: String,
    statements: Statements,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore").field("schema", &self.schema).finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects without TLS (for a local server or a private network) and keeps every table
    /// in `schema`, creating the schema if it is missing. Run [`Store::migrate`] before using a
    /// new schema.
    pub fn connect(conninfo: &str, schema: &str) -> Result<PgStore, StoreError> {
        if !schema_name(schema) {
            return Err(StoreError::InvalidSchemaName { schema: schema.to_owned() });
        }
        let mut client = Client::connect(conninfo, NoTls)?;
        let exists: bool = client
            .query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", &[&schema])?
            .try_get(0)?;
        // Only when it is missing, so that a role without CREATE on the database can use a
        // schema made for it; under a lock, because two concurrent CREATE SCHEMA IF NOT EXISTS
        // can both find it missing and one then fails.
        if !exists {
            let mut tx = client.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_CREATE_SCHEMA, &schema])?;
            tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))?;
            tx.commit()?;
        }
        client.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
        Ok(PgStore { client, schema: schema.to_owned(), statements: Statements::default() })
    }

    fn begin(&mut self) -> Result<(Transaction<'_>, &mut Statements, &str), StoreError> {
        let tx = self.client.build_transaction().isolation_level(IsolationLevel::ReadCommitted);
        Ok((tx.start()?, &mut self.statements, &self.schema))
    }

    /// The steps of a write that is one statement, on the connection.
    fn steps(&mut self) -> PgTxn<'_, Client> {
        PgTxn { tx: &mut self.client, statements: &mut self.statements, schema: &self.schema }
    }

    fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let statement = self.statements.get(&mut self.client, sql)?;
        Ok(self.client.query(&statement, params)?)
    }

    fn query_opt(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, StoreError> {
        let statement = self.statements.get(&mut self.client, sql)?;
        Ok(self.client.query_opt(&statement, params)?)
    }
}

/// Whether `schema` is a plain lowercase identifier, which needs no quoting rules to be safe
/// in the statements that name it.
pub(crate) fn schema_name(schema: &str) -> bool {
    let mut bytes = schema.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && schema.len() <= MAX_SCHEMA_NAME
}

/// The statements this connection has prepared, by their text, so each is parsed once.
#[derive(Default)]
struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    fn get(
        &mut self,
        client: &mut impl postgres::GenericClient,
        sql: &'static str,
    ) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
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

const SELECT_TURN: &str = "SELECT seq, conversation, turn, request, response, replay
     FROM turns WHERE conversation = $1 AND turn = $2";

impl Ledger for PgStore {
    fn migrate(&mut self) -> Result<(), StoreError> {
        let (mut tx, statements, schema) = self.begin()?;
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_MIGRATE, &schema])?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_version (
                version    bigint      NOT NULL PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )",
        )?;
        let applied: std::collections::BTreeSet<i64> = tx
            .query("SELECT version FROM schema_version", &[])?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
        let steps = migrations::pending(migrations::POSTGRES, &applied)?;
        for step in &steps {
            tx.batch_execute(step.sql)?;
            tx.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&step.version])?;
        }
        tx.commit()?;
        // A prepared statement may describe a table as it was before the steps.
        if !steps.is_empty() {
            statements.0.clear();
        }
        Ok(())
    }

    fn seed_records(&mut self, table: &str, rows: &[(String, Value)]) -> Result<usize, StoreError> {
        check_seed(table, rows)?;
        let (mut tx, statements, schema) = self.begin()?;
        let inserted = txn::seed(&mut PgTxn { tx: &mut tx, statements, schema }, table, rows)?;
        tx.commit()?;
        Ok(inserted)
    }

    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        let row = self.query_opt("SELECT revision, value FROM records WHERE tbl = $1 AND key = $2", &[&table, &key])?;
        row.map(|row| {
            Ok(Record {
                table: table.to_owned(),
                key: key.to_owned(),
                revision: row.try_get(0)?,
                value: row.try_get(1)?,
            })
        })
        .transpose()
    }

    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        if !storable(conversation) || !storable(turn) {
            return Ok(None);
        }
        self.query_opt(SELECT_TURN, &[&conversation, &turn])?.map(|row| decode_turn(&row)).transpose()
    }

    fn interaction(&mut self, id: &str) -> Result<Option<InteractionRow>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let Some(row) = self.query_opt(
            "SELECT conversation, turn, payload, options, state, answer_option, answer_turn
             FROM interactions WHERE id = $1",
            &[&id],
        )?
        else {
            return Ok(None);
        };
        let state: String = row.try_get(4)?;
        Ok(Some(InteractionRow {
            id: id.to_owned(),
            conversation: row.try_get(0)?,
            turn: row.try_get(1)?,
            payload: row.try_get(2)?,
            options: txn::interaction_options(id, row.try_get(3)?)?,
            state: txn::interaction_state(id, &state, row.try_get(5)?, row.try_get(6)?)?,
        }))
    }

    fn effect(&mut self, id: &str) -> Result<Option<EffectRow>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let Some(row) = self.query_opt(
            "SELECT idempotency_key, conversation, turn, op, payload, outcome
             FROM effects WHERE id = $1",
            &[&id],
        )?
        else {
            return Ok(None);
        };
        Ok(Some(EffectRow {
            id: id.to_owned(),
            idempotency_key: row.try_get(0)?,
            conversation: row.try_get(1)?,
            turn: row.try_get(2)?,
            op: row.try_get(3)?,
            payload: row.try_get(4)?,
            outcome: row.try_get(5)?,
        }))
    }

    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        check_commit(commit)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = txn::commit(&mut PgTxn { tx: &mut tx, statements, schema }, commit)?;
        if let Some(outcome) = settle(tx, settled)? {
            return Ok(outcome);
        }
        let (conversation, turn) = (&commit.turn.conversation, &commit.turn.turn);
        match self.query_opt(SELECT_TURN, &[conversation, turn])? {
            Some(row) => Ok(CommitOutcome::Duplicate(decode_turn(&row)?)),
            None => Err(txn::vanished(conversation, turn)),
        }
    }

    fn report_outcome(&mut self, report: &OutcomeReport) -> Result<OutcomeResult, StoreError> {
        check_report(report)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = txn::report_outcome(&mut PgTxn { tx: &mut tx, statements, schema }, report)?;
        settle(tx, settled)
    }

    fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.query(
            "SELECT seq, conversation, turn, request, response, replay
             FROM turns WHERE seq > $1 ORDER BY seq LIMIT $2",
            &[&after, &limit],
        )?
        .iter()
        .map(decode_turn)
        .collect()
    }

    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        let (before, limit) = (before.unwrap_or(i64::MAX), i64::try_from(limit).unwrap_or(i64::MAX));
        self.query(
            "SELECT seq, conversation, turn, request, response, replay
             FROM turns WHERE seq < $1 ORDER BY seq DESC LIMIT $2",
            &[&before, &limit],
        )?
        .iter()
        .map(decode_turn)
        .collect()
    }

    fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, StoreError> {
        let rows = match conversation {
            Some(conversation) if !storable(conversation) => Vec::new(),
            Some(conversation) => self.query(
                "SELECT seq, id, conversation, kind, payload, effect
                 FROM events WHERE conversation = $1 ORDER BY seq",
                &[&conversation],
            )?,
            None => self.query("SELECT seq, id, conversation, kind, payload, effect FROM events ORDER BY seq", &[])?,
        };
        rows.iter()
            .map(|row| {
                Ok(EventRow {
                    seq: row.try_get(0)?,
                    id: row.try_get(1)?,
                    conversation: row.try_get(2)?,
                    kind: row.try_get(3)?,
                    payload: row.try_get(4)?,
                    effect: row.try_get(5)?,
                })
            })
            .collect()
    }
}

impl Ladder for PgStore {
    fn findings(&mut self, guard: &str) -> Result<Vec<AuditedFinding>, StoreError> {
        if !storable(guard) {
            return Ok(Vec::new());
        }
        let rows = self.query(
            "SELECT f.seq, f.id, f.version, f.conversation, f.turn, f.kind, f.payload, f.at,
                    a.label, a.who, a.at
             FROM findings f LEFT JOIN audits a ON a.finding = f.id
             WHERE f.guard = $1 ORDER BY f.seq",
            &[&guard],
        )?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(1)?;
                let kind: String = row.try_get(5)?;
                let audit = match (row.try_get(8)?, row.try_get(9)?, row.try_get(10)?) {
                    (Some(label), Some(who), Some(at)) => Some(AuditRow { finding: id.clone(), label, who, at }),
                    _ => None,
                };
                Ok(AuditedFinding {
                    finding: FindingRow {
                        seq: row.try_get(0)?,
                        kind: FindingKind::parse(&id, &kind)?,
                        id,
                        guard: guard.to_owned(),
                        version: row.try_get(2)?,
                        conversation: row.try_get(3)?,
                        turn: row.try_get(4)?,
                        payload: row.try_get(6)?,
                        at: row.try_get(7)?,
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
        let (mut tx, statements, schema) = self.begin()?;
        let mut added = 0;
        for sample in samples {
            if (PgTxn { tx: &mut tx, statements: &mut *statements, schema }).insert_finding(sample)? {
                added += 1;
            }
        }
        tx.commit()?;
        Ok(added)
    }

    fn audit(&mut self, audit: &AuditRow) -> Result<AuditResult, StoreError> {
        check_audit(audit)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = ladder::audit(&mut PgTxn { tx: &mut tx, statements, schema }, audit)?;
        settle(tx, settled)
    }

    fn promote(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        check_promotion(promotion)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = ladder::promote(&mut PgTxn { tx: &mut tx, statements, schema }, promotion)?;
        settle(tx, settled)
    }

    fn promotion(&mut self, subject: &str) -> Result<Option<PromotionRow>, StoreError> {
        if !storable(subject) {
            return Ok(None);
        }
        let row = self.query_opt(
            "SELECT seq, version, record, promoted_by, promoted_at FROM promotions
             WHERE subject = $1 AND demoted_at IS NULL",
            &[&subject],
        )?;
        row.map(|row| {
            Ok(PromotionRow {
                seq: row.try_get(0)?,
                subject: subject.to_owned(),
                version: row.try_get(1)?,
                record: row.try_get(2)?,
                promoted_by: row.try_get(3)?,
                promoted_at: row.try_get(4)?,
                demoted: None,
            })
        })
        .transpose()
    }

    fn demote(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        check_demotion(subject, demotion)?;
        let (mut tx, statements, schema) = self.begin()?;
        let demoted = PgTxn { tx: &mut tx, statements, schema }.demote_active(subject, demotion)?;
        tx.commit()?;
        Ok(demoted)
    }
}

impl PromptRegistry for PgStore {
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError> {
        check_prompt(prompt)?;
        let rows = self.query(
            "INSERT INTO prompt_versions (task, version, text) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1",
            &[&prompt.task, &prompt.version, &prompt.text],
        )?;
        Ok(!rows.is_empty())
    }

    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError> {
        if !storable(task) || !storable(version) {
            return Ok(None);
        }
        let row =
            self.query_opt("SELECT text FROM prompt_versions WHERE task = $1 AND version = $2", &[&task, &version])?;
        row.map(|row| Ok(PromptRow { task: task.to_owned(), version: version.to_owned(), text: row.try_get(0)? }))
            .transpose()
    }

    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError> {
        check_prompt_promotion(promotion)?;
        let row = self.query_opt(
            "INSERT INTO prompt_promotions (task, version, accepted, report) VALUES ($1, $2, $3, $4) RETURNING seq",
            &[&promotion.task, &promotion.version, &promotion.accepted, &promotion.report],
        )?;
        let row = row.ok_or_else(|| StoreError::Corrupt { what: "a promotion insert returned no row".into() })?;
        Ok(row.try_get(0)?)
    }

    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError> {
        if !storable(task) {
            return Ok(Vec::new());
        }
        self.query(
            "SELECT seq, version, accepted, report FROM prompt_promotions WHERE task = $1 ORDER BY seq",
            &[&task],
        )?
        .iter()
        .map(|row| {
            Ok(PromptPromotionRow {
                seq: row.try_get(0)?,
                task: task.to_owned(),
                version: row.try_get(1)?,
                accepted: row.try_get(2)?,
                report: row.try_get(3)?,
            })
        })
        .collect()
    }
}

impl<C: GenericClient> GuardTxn for PgTxn<'_, C> {
    fn finding_kind(&mut self, id: &str) -> Result<Option<FindingKind>, StoreError> {
        let row = self.query_opt("SELECT kind FROM findings WHERE id = $1", &[&id])?;
        row.map(|row| {
            let kind: String = row.try_get(0)?;
            FindingKind::parse(id, &kind)
        })
        .transpose()
    }

    fn audit_label(&mut self, id: &str) -> Result<Option<String>, StoreError> {
        // Locks the finding, so two concurrent audits of it are decided one after the other.
        self.query_opt("SELECT 1 FROM findings WHERE id = $1 FOR UPDATE", &[&id])?;
        let row = self.query_opt("SELECT label FROM audits WHERE finding = $1", &[&id])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn insert_audit(&mut self, audit: &AuditRow) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO audits (finding, label, who, at) VALUES ($1, $2, $3, $4)",
            &[&audit.finding, &audit.label, &audit.who, &audit.at],
        )?;
        Ok(())
    }

    fn demote_active(&mut self, subject: &str, demotion: &Demotion) -> Result<usize, StoreError> {
        // One promotion change per subject at a time: the partial unique index would otherwise
        // fail the second of two concurrent promotions instead of letting it supersede.
        let schema = self.schema;
        self.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2::text || '/' || $3::text))",
            &[&LOCK_PROMOTION, &schema, &subject],
        )?;
        let demoted = self.execute(
            "UPDATE promotions SET demoted_by = $2, demoted_at = $3, demoted_reason = $4
             WHERE subject = $1 AND demoted_at IS NULL",
            &[&subject, &demotion.who, &demotion.at, &demotion.reason],
        )?;
        Ok(usize::try_from(demoted).unwrap_or(usize::MAX))
    }

    fn insert_promotion(&mut self, promotion: &PromotionRow) -> Result<i64, StoreError> {
        let row = self.query_one(
            "INSERT INTO promotions (subject, version, record, promoted_by, promoted_at)
             VALUES ($1, $2, $3, $4, $5) RETURNING seq",
            &[
                &promotion.subject,
                &promotion.version,
                &promotion.record,
                &promotion.promoted_by,
                &promotion.promoted_at,
            ],
        )?;
        Ok(row.try_get(0)?)
    }
}

fn decode_turn(row: &Row) -> Result<StoredTurn, StoreError> {
    Ok(StoredTurn {
        seq: row.try_get(0)?,
        conversation: row.try_get(1)?,
        turn: row.try_get(2)?,
        request: row.try_get(3)?,
        response: row.try_get(4)?,
        replay: row.try_get(5)?,
    })
}

/// The steps of a write inside one PostgreSQL transaction (`C` is a [`Transaction`]), or on the
/// connection itself where the step is one statement (`C` is the [`Client`]).
struct PgTxn<'a, C: GenericClient> {
    tx: &'a mut C,
    statements: &'a mut Statements,
    schema: &'a str,
}

impl<C: GenericClient> PgTxn<'_, C> {
    fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.query(&statement, params)
    }

    fn execute(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.execute(&statement, params)
    }

    fn query_opt(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.query_opt(&statement, params)
    }

    fn query_one(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.query_one(&statement, params)
    }

    fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        self.statements.get(self.tx, sql)
    }
}

impl<C: GenericClient> Txn for PgTxn<'_, C> {
    fn claim_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        // Waits for a concurrent commit of the same turn to end. The lookup must be a
        // statement of its own: at READ COMMITTED each statement sees what was committed when
        // it began, and this one begins after the wait.
        let schema = self.schema;
        self.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2::text || '/' || $3::text || '/' || $4::text))",
            &[&LOCK_TURN, &schema, &conversation, &turn],
        )?;
        self.query_opt(SELECT_TURN, &[&conversation, &turn])?.map(|row| decode_turn(&row)).transpose()
    }

    fn insert_record_if_absent(&mut self, table: &str, key: &str, value: &Value) -> Result<bool, StoreError> {
        let inserted = self.execute(
            "INSERT INTO records (tbl, key, revision, value) VALUES ($1, $2, 1, $3)
             ON CONFLICT (tbl, key) DO NOTHING",
            &[&table, &key, value],
        )?;
        Ok(inserted == 1)
    }

    fn update_record(&mut self, write: &RecordWrite) -> Result<bool, StoreError> {
        let updated = self.execute(
            "UPDATE records SET value = $4, revision = revision + 1
             WHERE tbl = $1 AND key = $2 AND revision = $3",
            &[&write.table, &write.key, &write.expected_revision, &write.value],
        )?;
        Ok(updated == 1)
    }

    fn record_revision(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError> {
        let row = self.query_opt("SELECT revision FROM records WHERE tbl = $1 AND key = $2", &[&table, &key])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn insert_effect(&mut self, effect: &EffectRow) -> Result<EffectInsert, StoreError> {
        // A concurrent commit of the same idempotency key makes this wait until it ends, then
        // fail on the constraint, so the key is decided here and nowhere else.
        let inserted = self.execute(
            "INSERT INTO effects (id, idempotency_key, conversation, turn, op, payload)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[&effect.id, &effect.idempotency_key, &effect.conversation, &effect.turn, &effect.op, &effect.payload],
        );
        match violated(&inserted, &SqlState::UNIQUE_VIOLATION) {
            Some("effects_idempotency_key_key") => Ok(EffectInsert::KeyTaken),
            Some("effects_pkey") => Err(StoreError::IdTaken { kind: "effect", id: effect.id.clone() }),
            _ => {
                inserted?;
                Ok(EffectInsert::Inserted)
            }
        }
    }

    fn insert_interaction(&mut self, interaction: &InteractionRow) -> Result<(), StoreError> {
        let inserted = self.execute(
            "INSERT INTO interactions (id, conversation, turn, payload, options, state)
             VALUES ($1, $2, $3, $4, $5, 'open')",
            &[
                &interaction.id,
                &interaction.conversation,
                &interaction.turn,
                &interaction.payload,
                &txn::options_json(&interaction.options),
            ],
        );
        if violated(&inserted, &SqlState::UNIQUE_VIOLATION) == Some("interactions_pkey") {
            return Err(StoreError::IdTaken { kind: "interaction", id: interaction.id.clone() });
        }
        inserted?;
        Ok(())
    }

    fn answer(&mut self, answer: &Answer, turn: &str) -> Result<bool, StoreError> {
        // A concurrent answer makes this wait, then check `state` again on the answered row.
        let updated = self.execute(
            "UPDATE interactions SET state = 'answered', answer_option = $2, answer_turn = $3
             WHERE id = $1 AND state = 'open'",
            &[&answer.interaction, &answer.option, &turn],
        )?;
        Ok(updated == 1)
    }

    fn lock_commit_order(&mut self) -> Result<(), StoreError> {
        // Held until the transaction ends, so the next holder takes higher sequence numbers
        // only once these rows are visible.
        let schema = self.schema;
        self.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_COMMIT_ORDER, &schema])?;
        Ok(())
    }

    fn insert_turn(&mut self, turn: &StoredTurn) -> Result<Option<i64>, StoreError> {
        let row = self.query_one(
            "INSERT INTO turns (conversation, turn, request, response, replay)
             VALUES ($1, $2, $3, $4, $5) RETURNING seq",
            &[&turn.conversation, &turn.turn, &turn.request, &turn.response, &turn.replay],
        );
        if violated(&row, &SqlState::UNIQUE_VIOLATION) == Some("turns_conversation_turn_key") {
            return Ok(None);
        }
        Ok(Some(row?.try_get(0)?))
    }

    fn insert_event(&mut self, event: &EventRow) -> Result<i64, StoreError> {
        let row = self.query_one(
            "INSERT INTO events (id, conversation, kind, payload, effect)
             VALUES ($1, $2, $3, $4, $5) RETURNING seq",
            &[&event.id, &event.conversation, &event.kind, &event.payload, &event.effect],
        );
        if violated(&row, &SqlState::UNIQUE_VIOLATION) == Some("events_id_key") {
            return Err(StoreError::IdTaken { kind: "event", id: event.id.clone() });
        }
        if violated(&row, &SqlState::FOREIGN_KEY_VIOLATION) == Some("events_effect_fkey") {
            return Err(StoreError::UnknownEffectReference {
                event: event.id.clone(),
                effect: event.effect.clone().unwrap_or_default(),
            });
        }
        Ok(row?.try_get(0)?)
    }

    fn lock_effect_outcome(&mut self, effect: &str) -> Result<Option<Option<String>>, StoreError> {
        // NO KEY UPDATE, not UPDATE: a commit whose event names this effect takes a KEY SHARE
        // lock on it while it holds the commit-order lock, and must not wait for this report,
        // which itself waits for the commit-order lock.
        let row = self.query_opt("SELECT outcome FROM effects WHERE id = $1 FOR NO KEY UPDATE", &[&effect])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn set_outcome(&mut self, effect: &str, outcome: &str) -> Result<(), StoreError> {
        self.execute("UPDATE effects SET outcome = $2 WHERE id = $1", &[&effect, &outcome])?;
        Ok(())
    }

    fn insert_finding(&mut self, finding: &FindingRow) -> Result<bool, StoreError> {
        let inserted = self.execute(
            "INSERT INTO findings (id, guard, version, conversation, turn, kind, payload, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
            &[
                &finding.id,
                &finding.guard,
                &finding.version,
                &finding.conversation,
                &finding.turn,
                &finding.kind.as_str(),
                &finding.payload,
                &finding.at,
            ],
        )?;
        Ok(inserted == 1)
    }
}

/// The constraint a statement violated, when it failed with `state`.
fn violated<'e, T>(result: &'e Result<T, postgres::Error>, state: &SqlState) -> Option<&'e str> {
    let db = result.as_ref().err()?.as_db_error()?;
    if db.code() == state { db.constraint() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_lowercase_identifiers() {
        assert!(schema_name("warrant"));
        assert!(schema_name("t_12_ab"));
        assert!(!schema_name(""));
        assert!(!schema_name("1abc"));
        assert!(!schema_name("Warrant"));
        assert!(!schema_name("a\"; DROP SCHEMA public; --"));
        assert!(!schema_name(&"a".repeat(64)));
    }
}
