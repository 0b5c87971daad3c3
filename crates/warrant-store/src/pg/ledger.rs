//! The ledger on PostgreSQL: the statements of a commit (`txn.rs` decides their order) and
//! the reads of records, turns, effects, interactions and events.

use serde_json::Value;
use tokio_postgres::Row;

use super::commit::{self, decode_turn};
use super::{LOCK_MIGRATE, PgStore, PgTxn, Session, settle};
use crate::commit::{Answer, Commit, CommitOutcome, EffectHold, OutcomeReport, OutcomeResult, RecordWrite};
use crate::commit::{check_commit, check_report};
use crate::error::StoreError;
use crate::ledger::{Ledger, ReadAhead, TurnAhead};
use crate::migrations;
use crate::rows::{EffectRow, EventRow, InteractionRow, Record, RowEventRow, SharedRecord, StoredTurn, TurnRow};
use crate::storable::{check_seed, storable};
use crate::txn::{self, Action, EffectInsert, Found, Txn};

/// The last sequence number a turn has taken, committed or not; 0 before the first.
const LAST_TAKEN: &str = "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM turns_seq_seq";

/// Waits for every commit of this schema that holds a floor lock (it may hold a sequence
/// number and still be open), by asking for each floor exclusively, in key order so that two
/// readers cannot wait for each other. One statement, outside a transaction: the locks it
/// takes end with it.
const WAIT_FOR_FLOORS: &str = "SELECT pg_advisory_xact_lock(k) FROM (
         SELECT DISTINCT (hashtext($1)::bigint << 32) | objid::bigint AS k FROM pg_locks
         WHERE locktype = 'advisory' AND objsubid = 1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND classid::bigint = (hashtext($1)::bigint & 4294967295)
         ORDER BY k
     ) floors";

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

    fn seeded_from(&mut self, table: &str) -> Result<Option<String>, StoreError> {
        if !storable(table) {
            return Ok(None);
        }
        let row = self.query_opt("SELECT source FROM seeds WHERE tbl = $1", &[&table])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn mark_seeded(&mut self, table: &str, mark: &str) -> Result<(), StoreError> {
        crate::storable::check_text("the table name", table)?;
        crate::storable::check_text("the seed mark", mark)?;
        self.steps().execute(
            "INSERT INTO seeds (tbl, source) VALUES ($1, $2) ON CONFLICT (tbl) DO UPDATE SET source = excluded.source",
            &[&table, &mark],
        )?;
        Ok(())
    }

    fn record(&mut self, table: &str, key: &str) -> Result<Option<Record>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        let rows = self.query(commit::SELECT_RECORD, &[&table, &key])?;
        Ok(commit::found_record(table, key, &rows)?)
    }

    fn shared_record(&mut self, table: &str, key: &str) -> Result<Option<SharedRecord>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        let found = self.query(commit::SELECT_SHARED_RECORD, &[&table, &key])?;
        commit::found_shared(table, key, &found, &self.rows)
    }

    fn turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        if !storable(conversation) || !storable(turn) {
            return Ok(None);
        }
        self.query_opt(commit::SELECT_TURN, &[&conversation, &turn])?.map(|row| decode_turn(&row)).transpose()
    }

    /// The lookup and every foreseen read in one pipeline: one round trip where each read
    /// alone would take its own. Each statement runs on its own (outside a transaction), as
    /// each read alone would.
    fn turn_ahead(&mut self, conversation: &str, turn: &str, ahead: ReadAhead<'_>) -> Result<TurnAhead, StoreError> {
        if !storable(conversation) || !storable(turn) {
            return Ok(TurnAhead::default());
        }
        // What cannot be stored is not, as each read alone answers without asking.
        let asked = |(table, key): &&(&str, &str)| storable(table) && storable(key);
        let mut requests = vec![commit::select_turn(conversation, turn)];
        requests.extend(ahead.rows.iter().filter(asked).map(|(table, key)| commit::select_shared_record(table, key)));
        requests.extend(ahead.pending.iter().filter(asked).map(|(table, key)| commit::select_pending(table, key)));
        let mut answers = self.steps().run_all(&requests)?.into_iter();
        let found = answers.next().ok_or_else(|| StoreError::Corrupt {
            what: "a pipeline of reads: no answer to the turn's lookup".into(),
        })??;
        let turn = found.first().map(decode_turn).transpose()?;
        let mut next = |row: &(&str, &str)| if asked(&row) { answers.next().map(Some) } else { Some(None) };
        let rows = ahead
            .rows
            .iter()
            .map(|row @ (table, key)| match next(row) {
                Some(Some(Ok(found))) => commit::found_shared(table, key, &found, &self.rows).ok(),
                Some(Some(Err(_))) | None => None,
                Some(None) => Some(None),
            })
            .collect();
        let pending = ahead
            .pending
            .iter()
            .map(|row| match next(row) {
                Some(Some(Ok(found))) => commit::found_pending(&found).ok(),
                Some(Some(Err(_))) | None => None,
                Some(None) => Some(None),
            })
            .collect();
        Ok(TurnAhead { turn, rows, pending })
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
        self.query_opt(
            "SELECT id, idempotency_key, conversation, turn, op, payload, outcome, report
             FROM effects WHERE id = $1",
            &[&id],
        )?
        .map(|row| decode_effect(&row))
        .transpose()
    }

    fn pending_effect(&mut self, table: &str, key: &str) -> Result<Option<String>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(None);
        }
        let rows = self.query(commit::SELECT_PENDING, &[&table, &key])?;
        Ok(commit::found_pending(&rows)?)
    }

    fn turn_effects(&mut self, conversation: &str, turn: &str) -> Result<Vec<EffectRow>, StoreError> {
        if !storable(conversation) || !storable(turn) {
            return Ok(Vec::new());
        }
        self.query(
            "SELECT id, idempotency_key, conversation, turn, op, payload, outcome, report
             FROM effects WHERE conversation = $1 AND turn = $2 ORDER BY id",
            &[&conversation, &turn],
        )?
        .iter()
        .map(decode_effect)
        .collect()
    }

    fn commit(&mut self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        check_commit(commit)?;
        let (mut tx, statements, schema) = self.begin()?;
        let settled = txn::commit(&mut PgTxn { tx: &mut tx, statements, schema }, commit)?;
        if let Some(outcome) = settle(tx, settled)? {
            return Ok(outcome);
        }
        let (conversation, turn) = (&commit.turn.conversation, &commit.turn.turn);
        match self.query_opt(commit::SELECT_TURN, &[conversation, turn])? {
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
        let horizon = self.turn_horizon()?;
        self.query(
            "SELECT seq, conversation, turn, request, response, replay
             FROM turns WHERE seq > $1 AND seq <= $3 ORDER BY seq LIMIT $2",
            &[&after, &limit, &horizon],
        )?
        .iter()
        .map(decode_turn)
        .collect()
    }

    fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, StoreError> {
        let (before, limit) = (before.unwrap_or(i64::MAX), i64::try_from(limit).unwrap_or(i64::MAX));
        // Below the horizon too: a turn still open there would later appear on a page already
        // read past, not at the top of the newest one.
        let horizon = self.turn_horizon()?;
        self.query(
            "SELECT seq, conversation, turn, request, response, replay
             FROM turns WHERE seq < $1 AND seq <= $3 ORDER BY seq DESC LIMIT $2",
            &[&before, &limit, &horizon],
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

    fn row_events(&mut self, table: &str, key: &str) -> Result<Vec<RowEventRow>, StoreError> {
        self.read_row_events(table, key)
    }
}

impl PgStore {
    /// The horizon of the turns: a sequence number at or below which every turn has committed
    /// (and the next statement on this connection sees it) or rolled back, so a reader that
    /// reads only up to it never skips a turn that commits later with a lower number.
    ///
    /// The last number taken is read first; a commit that took one at or below it held its
    /// floor lock before taking it, so it is in `pg_locks` now unless it has ended, and the
    /// reader waits for each floor held. Waiting ends once those commits end, which are short;
    /// a commit that starts meanwhile takes a higher number.
    pub(crate) fn turn_horizon(&mut self) -> Result<i64, StoreError> {
        let taken: i64 = self.query_opt(LAST_TAKEN, &[])?.map(|row| row.try_get(0)).transpose()?.unwrap_or(0);
        let statement = self.statements.get(&mut self.client, WAIT_FOR_FLOORS)?;
        self.client.execute(&statement, &[&self.schema])?;
        Ok(taken)
    }
}

impl<C: Session> Txn for PgTxn<'_, C> {
    fn perform(&mut self, actions: &[Action<'_>]) -> Vec<Result<Found, StoreError>> {
        self.pipelined(actions)
    }

    fn claim_turn(&mut self, conversation: &str, turn: &str) -> Result<Option<StoredTurn>, StoreError> {
        let schema = self.schema;
        self.run(&commit::claim(schema, conversation, turn))?;
        commit::found_turn(&self.run(&commit::select_turn(conversation, turn))?)
    }

    fn update_record(&mut self, write: &RecordWrite, revision: i64) -> Result<bool, StoreError> {
        Ok(commit::wrote_one(&self.run(&commit::update_record(write, revision))?))
    }

    fn lock_read(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError> {
        commit::found_revision(&self.run(&commit::lock_read(table, key))?)
    }

    fn record_revision(&mut self, table: &str, key: &str) -> Result<Option<i64>, StoreError> {
        commit::found_revision(&self.run(&commit::record_revision(table, key))?)
    }

    fn insert_effect(&mut self, effect: &EffectRow) -> Result<EffectInsert, StoreError> {
        let inserted = self.run(&commit::insert_effect(effect));
        commit::effect_inserted(inserted, effect)
    }

    fn insert_interaction(&mut self, interaction: &InteractionRow) -> Result<(), StoreError> {
        let inserted = self.run(&commit::insert_interaction(interaction));
        commit::interaction_inserted(inserted, interaction)
    }

    fn answer(&mut self, answer: &Answer, turn: &str) -> Result<bool, StoreError> {
        Ok(commit::wrote_one(&self.run(&commit::answer(answer, turn))?))
    }

    fn insert_turn(&mut self, turn: &TurnRow) -> Result<Option<i64>, StoreError> {
        let schema = self.schema;
        let inserted = self.run(&commit::insert_turn(turn, schema));
        commit::turn_inserted(inserted)
    }

    fn insert_event(&mut self, event: &EventRow) -> Result<i64, StoreError> {
        let inserted = self.run(&commit::insert_event(event));
        commit::event_inserted(inserted, event)
    }

    fn lock_effect_outcome(&mut self, effect: &str) -> Result<Option<Option<String>>, StoreError> {
        // NO KEY UPDATE, not UPDATE: a commit whose event names this effect takes a KEY SHARE
        // lock on it while it holds its floor lock, and need not wait for this report.
        let row = self.query_opt("SELECT outcome FROM effects WHERE id = $1 FOR NO KEY UPDATE", &[&effect])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn insert_hold(&mut self, hold: &EffectHold) -> Result<(), StoreError> {
        self.run(&commit::insert_hold(hold))?;
        Ok(())
    }

    fn set_outcome(&mut self, effect: &str, outcome: &str, report: Option<&Value>) -> Result<(), StoreError> {
        self.execute("UPDATE effects SET outcome = $2, report = $3 WHERE id = $1", &[&effect, &outcome, &report])?;
        Ok(())
    }
}

fn decode_effect(row: &Row) -> Result<EffectRow, StoreError> {
    Ok(EffectRow {
        id: row.try_get(0)?,
        idempotency_key: row.try_get(1)?,
        conversation: row.try_get(2)?,
        turn: row.try_get(3)?,
        op: row.try_get(4)?,
        payload: row.try_get(5)?,
        outcome: row.try_get(6)?,
        report: row.try_get(7)?,
    })
}
