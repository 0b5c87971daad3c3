//! The outbox and due jobs on SQLite. Every write is one `BEGIN IMMEDIATE` transaction, which
//! holds the database's write lock from its first statement, so two takers (threads or
//! processes) are serialized and the second finds the first one's lease.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{SqliteStore, SqliteTxn, json, settle};
use crate::error::StoreError;
use crate::outbox::{
    self, DeliverySteps, DueJob, Enqueued, Failure, FailureRecorded, Jobs, Lease, MessageInsert, NewJob, Outbox,
    OutboxMessage, OutboxRow, OutboxState, RawJob, RawOutbox, RetryPolicy, job_columns, limit, outbox_columns,
};
use crate::outbox::{check_job, check_outbox_message};
use crate::storable::{check_text, storable};

fn raw_outbox(row: &rusqlite::Row<'_>) -> rusqlite::Result<(RawOutbox, String, String)> {
    let raw = RawOutbox {
        seq: row.get(0)?,
        id: row.get(1)?,
        conversation: row.get(2)?,
        path: row.get(3)?,
        channel: row.get(4)?,
        body: Value::Null,
        record: Value::Null,
        idempotency_key: row.get(7)?,
        state: row.get(8)?,
        attempts: row.get(9)?,
        next_attempt_at: row.get(10)?,
        lease_holder: row.get(11)?,
        lease_until: row.get(12)?,
        last_error: row.get(13)?,
        created_at: row.get(14)?,
        sent_at: row.get(15)?,
    };
    Ok((raw, row.get(5)?, row.get(6)?))
}

fn decode_outbox((mut raw, body, record): (RawOutbox, String, String)) -> Result<OutboxRow, StoreError> {
    raw.body = json(&body, || format!("the body of outbox message `{}`", raw.id))?;
    raw.record = json(&record, || format!("the record of outbox message `{}`", raw.id))?;
    raw.decode()
}

fn raw_job(row: &rusqlite::Row<'_>) -> rusqlite::Result<(RawJob, String)> {
    let raw = RawJob {
        seq: row.get(0)?,
        id: row.get(1)?,
        conversation: row.get(2)?,
        due_at: row.get(3)?,
        draft: Value::Null,
        state: row.get(5)?,
        lease_holder: row.get(6)?,
        lease_until: row.get(7)?,
        result: row.get(8)?,
    };
    Ok((raw, row.get(4)?))
}

fn decode_job((mut raw, draft): (RawJob, String)) -> Result<DueJob, StoreError> {
    raw.draft = json(&draft, || format!("the draft of due job `{}`", raw.id))?;
    raw.decode()
}

impl Outbox for SqliteStore {
    fn enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError> {
        check_outbox_message(message)?;
        let tx = self.begin()?;
        let enqueued = outbox::enqueue(&mut SqliteTxn::on(&tx), message, now)?;
        tx.commit()?;
        Ok(enqueued)
    }

    fn take_outbox(&mut self, lease: &Lease, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        let tx = self.begin()?;
        let rows = outbox::take(&mut SqliteTxn::on(&tx), lease, limit)?;
        tx.commit()?;
        Ok(rows)
    }

    fn mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError> {
        // One transaction, so a batch costs one synchronous commit, not one per message.
        let tx = self.begin()?;
        let updated = outbox::mark_sent(&mut SqliteTxn::on(&tx), ids, now)?;
        tx.commit()?;
        Ok(updated)
    }

    fn mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError> {
        let tx = self.begin()?;
        let settled = outbox::mark_failed(&mut SqliteTxn::on(&tx), id, holder, failure, policy, now)?;
        settle(tx, settled)
    }

    fn outbox(&mut self, state: Option<OutboxState>, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let sql =
            concat!("SELECT ", outbox_columns!(), " FROM outbox WHERE ?1 IS NULL OR state = ?1 ORDER BY seq LIMIT ?2");
        let raws = self
            .conn
            .prepare_cached(sql)?
            .query_map(params![state.map(OutboxState::as_str), limit(n)], raw_outbox)?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter().map(decode_outbox).collect()
    }
}

impl Jobs for SqliteStore {
    fn schedule_job(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        check_job(job)?;
        SqliteTxn::on(&self.conn).insert_job(job)
    }

    fn take_due_jobs(&mut self, lease: &Lease, limit: usize) -> Result<Vec<DueJob>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        let tx = self.begin()?;
        let jobs = outbox::take_jobs(&mut SqliteTxn::on(&tx), lease, limit)?;
        tx.commit()?;
        Ok(jobs)
    }

    fn complete_job(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        outbox::complete_job(&mut SqliteTxn::on(&self.conn), id, holder, result)
    }

    fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let sql = concat!("SELECT ", job_columns!(), " FROM due_jobs WHERE id = ?1");
        let raw = self.conn.prepare_cached(sql)?.query_row([id], raw_job).optional()?;
        raw.map(decode_job).transpose()
    }
}

/// A take: an `UPDATE … RETURNING` whose parameters are the lease and the limit.
fn lease<R>(
    conn: &rusqlite::Connection,
    sql: &str,
    lease: &Lease,
    n: i64,
    read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<R>,
) -> Result<Vec<R>, StoreError> {
    Ok(conn
        .prepare_cached(sql)?
        .query_map(params![lease.holder, lease.until, lease.now, n], read)?
        .collect::<Result<Vec<_>, _>>()?)
}

impl DeliverySteps for SqliteTxn<'_> {
    fn insert_message(&mut self, message: &OutboxMessage, now: i64) -> Result<MessageInsert, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO outbox (id, conversation, path, channel, body, record, idempotency_key, state,
                                     next_attempt_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8, ?8)
                 ON CONFLICT (idempotency_key) DO NOTHING",
            )?
            .execute(params![
                message.id,
                message.conversation,
                message.path,
                message.channel,
                message.body.to_string(),
                message.record.to_string(),
                message.idempotency_key,
                now
            ]);
        match inserted {
            Ok(1) => Ok(MessageInsert::Inserted),
            Ok(_) => Ok(MessageInsert::KeyTaken),
            // The key did not conflict, so the id did.
            Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::ConstraintViolation => {
                Err(StoreError::IdTaken { kind: "outbox message", id: message.id.clone() })
            }
            Err(e) => Err(e.into()),
        }
    }

    fn message_with_key(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .0
            .prepare_cached("SELECT id FROM outbox WHERE idempotency_key = ?1")?
            .query_row([key], |row| row.get(0))
            .optional()?)
    }

    fn lease_messages(&mut self, lease: &Lease, n: i64) -> Result<Vec<OutboxRow>, StoreError> {
        let sql = concat!(
            "UPDATE outbox SET state = 'sending', attempts = attempts + 1, lease_holder = ?1, lease_until = ?2
             WHERE seq IN (
                 SELECT seq FROM outbox
                 WHERE (state = 'queued' AND next_attempt_at <= ?3) OR (state = 'sending' AND lease_until <= ?3)
                 ORDER BY seq LIMIT ?4)
             RETURNING ",
            outbox_columns!()
        );
        self::lease(self.0, sql, lease, n, raw_outbox)?.into_iter().map(decode_outbox).collect()
    }

    fn set_sent(&mut self, ids: &[&str], now: i64) -> Result<usize, StoreError> {
        let mut update = self.0.prepare_cached(
            "UPDATE outbox SET state = 'sent', sent_at = ?2, lease_holder = NULL, lease_until = NULL
             WHERE id = ?1 AND state <> 'sent'",
        )?;
        let mut updated = 0;
        for id in ids {
            updated += update.execute(params![id, now])?;
        }
        Ok(updated)
    }

    fn held_attempts(&mut self, id: &str, holder: &str) -> Result<Option<i64>, StoreError> {
        // The write lock is held already, so reading is enough.
        Ok(self
            .0
            .prepare_cached("SELECT attempts FROM outbox WHERE id = ?1 AND state = 'sending' AND lease_holder = ?2")?
            .query_row(params![id, holder], |row| row.get(0))
            .optional()?)
    }

    fn set_failed(&mut self, id: &str, state: OutboxState, next: i64, error: &str) -> Result<(), StoreError> {
        self.0
            .prepare_cached(
                "UPDATE outbox SET state = ?2, next_attempt_at = ?3, last_error = ?4, lease_holder = NULL,
                                   lease_until = NULL
                 WHERE id = ?1",
            )?
            .execute(params![id, state.as_str(), next, error])?;
        Ok(())
    }

    fn insert_job(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        let inserted = self
            .0
            .prepare_cached(
                "INSERT INTO due_jobs (id, conversation, due_at, draft, state) VALUES (?1, ?2, ?3, ?4, 'pending')
                 ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![job.id, job.conversation, job.due_at, job.draft.to_string()])?;
        Ok(inserted == 1)
    }

    fn lease_jobs(&mut self, lease: &Lease, n: i64) -> Result<Vec<DueJob>, StoreError> {
        let sql = concat!(
            "UPDATE due_jobs SET state = 'taken', lease_holder = ?1, lease_until = ?2
             WHERE seq IN (
                 SELECT seq FROM due_jobs
                 WHERE (state = 'pending' AND due_at <= ?3) OR (state = 'taken' AND lease_until <= ?3)
                 ORDER BY due_at, seq LIMIT ?4)
             RETURNING ",
            job_columns!()
        );
        self::lease(self.0, sql, lease, n, raw_job)?.into_iter().map(decode_job).collect()
    }

    fn set_done(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        let updated = self
            .0
            .prepare_cached(
                "UPDATE due_jobs SET state = 'done', result = ?3, lease_holder = NULL, lease_until = NULL
                 WHERE id = ?1 AND state = 'taken' AND lease_holder = ?2",
            )?
            .execute(params![id, holder, result])?;
        Ok(updated == 1)
    }
}
