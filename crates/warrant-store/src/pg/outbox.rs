//! The outbox and due jobs on PostgreSQL. A take locks the rows it picks with
//! `FOR UPDATE SKIP LOCKED`, so several processes taking at once each get rows no other holds,
//! and none waits for another; the lease then keeps them after the transaction ends.

use postgres::Row;
use postgres::error::SqlState;

use super::{PgStore, violated};
use crate::error::StoreError;
use crate::outbox::{
    self, DueJob, Enqueued, Failure, FailureRecorded, Lease, NewJob, OutboxMessage, OutboxRow, OutboxState, RawJob,
    RawOutbox, RetryPolicy, job_columns, outbox_columns,
};
use crate::storable::{check_job, check_outbox_message, check_text, storable};

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn decode_outbox(row: &Row) -> Result<OutboxRow, StoreError> {
    RawOutbox {
        seq: row.try_get(0)?,
        id: row.try_get(1)?,
        conversation: row.try_get(2)?,
        path: row.try_get(3)?,
        channel: row.try_get(4)?,
        body: row.try_get(5)?,
        record: row.try_get(6)?,
        idempotency_key: row.try_get(7)?,
        state: row.try_get(8)?,
        attempts: row.try_get(9)?,
        next_attempt_at: row.try_get(10)?,
        lease_holder: row.try_get(11)?,
        lease_until: row.try_get(12)?,
        last_error: row.try_get(13)?,
        created_at: row.try_get(14)?,
        sent_at: row.try_get(15)?,
    }
    .decode()
}

fn decode_job(row: &Row) -> Result<DueJob, StoreError> {
    RawJob {
        seq: row.try_get(0)?,
        id: row.try_get(1)?,
        conversation: row.try_get(2)?,
        due_at: row.try_get(3)?,
        draft: row.try_get(4)?,
        state: row.try_get(5)?,
        lease_holder: row.try_get(6)?,
        lease_until: row.try_get(7)?,
        result: row.try_get(8)?,
    }
    .decode()
}

impl PgStore {
    pub(super) fn outbox_enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError> {
        check_outbox_message(message)?;
        // A concurrent insert of the same key makes this wait for it, then do nothing.
        let statement = self.statements.get(
            &mut self.client,
            "INSERT INTO outbox (id, conversation, path, channel, body, record, idempotency_key, state,
                                 next_attempt_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $8)
             ON CONFLICT (idempotency_key) DO NOTHING RETURNING 1",
        )?;
        let inserted = self.client.query(
            &statement,
            &[
                &message.id,
                &message.conversation,
                &message.path,
                &message.channel,
                &message.body,
                &message.record,
                &message.idempotency_key,
                &now,
            ],
        );
        if violated(&inserted, &SqlState::UNIQUE_VIOLATION) == Some("outbox_id_key") {
            return Err(StoreError::IdTaken { kind: "outbox message", id: message.id.clone() });
        }
        if !inserted?.is_empty() {
            return Ok(Enqueued::Stored);
        }
        let row = self.query_opt("SELECT id FROM outbox WHERE idempotency_key = $1", &[&message.idempotency_key])?;
        let row = row.ok_or_else(|| StoreError::Corrupt {
            what: format!("the outbox message with key `{}` conflicted but is not stored", message.idempotency_key),
        })?;
        Ok(Enqueued::Duplicate { id: row.try_get(0)? })
    }

    pub(super) fn outbox_take(&mut self, lease: &Lease, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        let rows = self.query(
            concat!(
                "UPDATE outbox SET state = 'sending', attempts = attempts + 1, lease_holder = $1, lease_until = $2
                 WHERE seq IN (
                     SELECT seq FROM outbox
                     WHERE (state = 'queued' AND next_attempt_at <= $3) OR (state = 'sending' AND lease_until <= $3)
                     ORDER BY seq LIMIT $4
                     FOR UPDATE SKIP LOCKED)
                 RETURNING ",
                outbox_columns!()
            ),
            &[&lease.holder, &lease.until, &lease.now, &limit(n)],
        )?;
        let rows = rows.iter().map(decode_outbox).collect::<Result<Vec<_>, _>>()?;
        Ok(outbox::in_order(rows, |r| r.seq))
    }

    pub(super) fn outbox_mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError> {
        let ids: Vec<&str> = ids.iter().map(String::as_str).filter(|id| storable(id)).collect();
        let rows = self.query(
            "UPDATE outbox SET state = 'sent', sent_at = $2, lease_holder = NULL, lease_until = NULL
             WHERE id = ANY($1) AND state <> 'sent' RETURNING 1",
            &[&ids, &now],
        )?;
        Ok(rows.len())
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
        let (mut tx, statements, _) = self.begin()?;
        let select = statements.get(
            &mut tx,
            "SELECT attempts FROM outbox WHERE id = $1 AND state = 'sending' AND lease_holder = $2 FOR UPDATE",
        )?;
        let Some(row) = tx.query_opt(&select, &[&id, &holder])? else {
            return Ok(FailureRecorded::NotHeld);
        };
        let attempts: i64 = row.try_get(0)?;
        let (state, next) = outbox::after_failure(attempts, failure, policy, now);
        let update = statements.get(
            &mut tx,
            "UPDATE outbox SET state = $2, next_attempt_at = $3, last_error = $4, lease_holder = NULL, lease_until = NULL
             WHERE id = $1",
        )?;
        let error = failure.message().replace('\0', "\u{FFFD}");
        tx.execute(&update, &[&id, &state.as_str(), &next, &error])?;
        tx.commit()?;
        Ok(if state == OutboxState::Dead { FailureRecorded::Dead } else { FailureRecorded::Retry { at: next } })
    }

    pub(super) fn outbox_list(&mut self, state: Option<OutboxState>, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let rows = self.query(
            concat!(
                "SELECT ",
                outbox_columns!(),
                " FROM outbox WHERE $1::text IS NULL OR state = $1 ORDER BY seq LIMIT $2"
            ),
            &[&state.map(OutboxState::as_str), &limit(n)],
        )?;
        rows.iter().map(decode_outbox).collect()
    }

    pub(super) fn jobs_schedule(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        check_job(job)?;
        let rows = self.query(
            "INSERT INTO due_jobs (id, conversation, due_at, draft, state) VALUES ($1, $2, $3, $4, 'pending')
             ON CONFLICT (id) DO NOTHING RETURNING 1",
            &[&job.id, &job.conversation, &job.due_at, &job.draft],
        )?;
        Ok(!rows.is_empty())
    }

    pub(super) fn jobs_take(&mut self, lease: &Lease, n: usize) -> Result<Vec<DueJob>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        let rows = self.query(
            concat!(
                "UPDATE due_jobs SET state = 'taken', lease_holder = $1, lease_until = $2
                 WHERE seq IN (
                     SELECT seq FROM due_jobs
                     WHERE (state = 'pending' AND due_at <= $3) OR (state = 'taken' AND lease_until <= $3)
                     ORDER BY due_at, seq LIMIT $4
                     FOR UPDATE SKIP LOCKED)
                 RETURNING ",
                job_columns!()
            ),
            &[&lease.holder, &lease.until, &lease.now, &limit(n)],
        )?;
        let mut jobs = rows.iter().map(decode_job).collect::<Result<Vec<_>, _>>()?;
        jobs.sort_by_key(|j| (j.job.due_at, j.seq));
        Ok(jobs)
    }

    pub(super) fn jobs_complete(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        if !storable(id) || !storable(holder) {
            return Ok(false);
        }
        check_text("the job's result", result)?;
        let rows = self.query(
            "UPDATE due_jobs SET state = 'done', result = $3, lease_holder = NULL, lease_until = NULL
             WHERE id = $1 AND state = 'taken' AND lease_holder = $2 RETURNING 1",
            &[&id, &holder, &result],
        )?;
        Ok(!rows.is_empty())
    }

    pub(super) fn jobs_get(&mut self, id: &str) -> Result<Option<DueJob>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let row = self.query_opt(concat!("SELECT ", job_columns!(), " FROM due_jobs WHERE id = $1"), &[&id])?;
        row.as_ref().map(decode_job).transpose()
    }
}
