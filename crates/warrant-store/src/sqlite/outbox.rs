//! The outbox and due jobs on SQLite. Every write is one `BEGIN IMMEDIATE` transaction, which
//! holds the database's write lock from its first statement, so two takers (threads or
//! processes) are serialized and the second finds the first one's lease.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{SqliteStore, json};
use crate::error::StoreError;
use crate::outbox::{
    self, DueJob, Enqueued, Failure, FailureRecorded, Lease, NewJob, OutboxMessage, OutboxRow, OutboxState, RawJob,
    RawOutbox, RetryPolicy, job_columns, outbox_columns,
};
use crate::storable::{check_job, check_outbox_message, check_text, storable};

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

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

impl SqliteStore {
    /// Runs a take (an `UPDATE … RETURNING` whose parameters are the lease and the limit) in
    /// one write transaction.
    fn take<R>(
        &mut self,
        sql: &str,
        lease: &Lease,
        n: usize,
        read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<R>,
    ) -> Result<Vec<R>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        let tx = self.begin()?;
        let raws = tx
            .prepare_cached(sql)?
            .query_map(params![lease.holder, lease.until, lease.now, limit(n)], read)?
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit()?;
        Ok(raws)
    }

    pub(super) fn outbox_enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError> {
        check_outbox_message(message)?;
        let tx = self.begin()?;
        let inserted = tx
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
        let enqueued = match inserted {
            Ok(1) => Enqueued::Stored,
            Ok(_) => {
                let id: String = tx
                    .prepare_cached("SELECT id FROM outbox WHERE idempotency_key = ?1")?
                    .query_row([&message.idempotency_key], |row| row.get(0))?;
                Enqueued::Duplicate { id }
            }
            // The key did not conflict, so the id did.
            Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::ConstraintViolation => {
                return Err(StoreError::IdTaken { kind: "outbox message", id: message.id.clone() });
            }
            Err(e) => return Err(e.into()),
        };
        tx.commit()?;
        Ok(enqueued)
    }

    pub(super) fn outbox_take(&mut self, lease: &Lease, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let sql = concat!(
            "UPDATE outbox SET state = 'sending', attempts = attempts + 1, lease_holder = ?1, lease_until = ?2
             WHERE seq IN (
                 SELECT seq FROM outbox
                 WHERE (state = 'queued' AND next_attempt_at <= ?3) OR (state = 'sending' AND lease_until <= ?3)
                 ORDER BY seq LIMIT ?4)
             RETURNING ",
            outbox_columns!()
        );
        let rows =
            self.take(sql, lease, n, raw_outbox)?.into_iter().map(decode_outbox).collect::<Result<Vec<_>, _>>()?;
        Ok(outbox::in_order(rows, |r| r.seq))
    }

    pub(super) fn outbox_mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError> {
        // One transaction, so a batch costs one synchronous commit, not one per message.
        let tx = self.begin()?;
        let mut updated = 0;
        {
            let mut update = tx.prepare_cached(
                "UPDATE outbox SET state = 'sent', sent_at = ?2, lease_holder = NULL, lease_until = NULL
                 WHERE id = ?1 AND state <> 'sent'",
            )?;
            for id in ids.iter().filter(|id| storable(id)) {
                updated += update.execute(params![id, now])?;
            }
        }
        tx.commit()?;
        Ok(updated)
    }

    pub(super) fn outbox_mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError> {
        if !storable(id) || !storable(holder) {
            return Ok(FailureRecorded::NotHeld);
        }
        let tx = self.begin()?;
        let attempts: Option<i64> = tx
            .prepare_cached("SELECT attempts FROM outbox WHERE id = ?1 AND state = 'sending' AND lease_holder = ?2")?
            .query_row(params![id, holder], |row| row.get(0))
            .optional()?;
        let Some(attempts) = attempts else {
            return Ok(FailureRecorded::NotHeld);
        };
        let (state, next) = outbox::after_failure(attempts, failure, policy, now);
        tx.prepare_cached(
            "UPDATE outbox SET state = ?2, next_attempt_at = ?3, last_error = ?4, lease_holder = NULL, lease_until = NULL
             WHERE id = ?1",
        )?
        .execute(params![id, state.as_str(), next, failure.message().replace('\0', "\u{FFFD}")])?;
        tx.commit()?;
        Ok(if state == OutboxState::Dead { FailureRecorded::Dead } else { FailureRecorded::Retry { at: next } })
    }

    pub(super) fn outbox_list(&mut self, state: Option<OutboxState>, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let sql =
            concat!("SELECT ", outbox_columns!(), " FROM outbox WHERE ?1 IS NULL OR state = ?1 ORDER BY seq LIMIT ?2");
        let raws = self
            .conn
            .prepare_cached(sql)?
            .query_map(params![state.map(OutboxState::as_str), limit(n)], raw_outbox)?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter().map(decode_outbox).collect()
    }

    pub(super) fn jobs_schedule(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        check_job(job)?;
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO due_jobs (id, conversation, due_at, draft, state) VALUES (?1, ?2, ?3, ?4, 'pending')
                 ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![job.id, job.conversation, job.due_at, job.draft.to_string()])?;
        Ok(inserted == 1)
    }

    pub(super) fn jobs_take(&mut self, lease: &Lease, n: usize) -> Result<Vec<DueJob>, StoreError> {
        let sql = concat!(
            "UPDATE due_jobs SET state = 'taken', lease_holder = ?1, lease_until = ?2
             WHERE seq IN (
                 SELECT seq FROM due_jobs
                 WHERE (state = 'pending' AND due_at <= ?3) OR (state = 'taken' AND lease_until <= ?3)
                 ORDER BY due_at, seq LIMIT ?4)
             RETURNING ",
            job_columns!()
        );
        let mut jobs = self.take(sql, lease, n, raw_job)?.into_iter().map(decode_job).collect::<Result<Vec<_>, _>>()?;
        jobs.sort_by_key(|j| (j.job.due_at, j.seq));
        Ok(jobs)
    }

    pub(super) fn jobs_complete(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        if !storable(id) || !storable(holder) {
            return Ok(false);
        }
        check_text("the job's result", result)?;
        let updated = self
            .conn
            .prepare_cached(
                "UPDATE due_jobs SET state = 'done', result = ?3, lease_holder = NULL, lease_until = NULL
                 WHERE id = ?1 AND state = 'taken' AND lease_holder = ?2",
            )?
            .execute(params![id, holder, result])?;
        Ok(updated == 1)
    }

    pub(super) fn jobs_get(&mut self, id: &str) -> Result<Option<DueJob>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let sql = concat!("SELECT ", job_columns!(), " FROM due_jobs WHERE id = ?1");
        let raw = self.conn.prepare_cached(sql)?.query_row([id], raw_job).optional()?;
        raw.map(decode_job).transpose()
    }
}
