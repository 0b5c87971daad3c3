//! The outbox and due jobs on PostgreSQL. A take locks the rows it picks with
//! `FOR UPDATE SKIP LOCKED`, so several processes taking at once each get rows no other holds,
//! and none waits for another; the lease then keeps them after the transaction ends.

use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use super::{PgStore, PgTxn, Session, settle, violated};
use crate::error::StoreError;
use crate::outbox::{
    self, DeliverySteps, DueJob, Enqueued, Failure, FailureRecorded, Jobs, Lease, MessageInsert, NewJob, Outbox,
    OutboxMessage, OutboxRow, OutboxState, RawJob, RawOutbox, RetryPolicy, job_columns, limit, outbox_columns,
};
use crate::outbox::{check_job, check_outbox_message};
use crate::storable::{check_text, storable};

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

impl Outbox for PgStore {
    fn enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError> {
        check_outbox_message(message)?;
        outbox::enqueue(&mut self.steps(), message, now)
    }

    fn take_outbox(&mut self, lease: &Lease, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        outbox::take(&mut self.steps(), lease, limit)
    }

    fn mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError> {
        outbox::mark_sent(&mut self.steps(), ids, now)
    }

    fn mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError> {
        let (mut tx, statements, schema) = self.begin()?;
        let steps = &mut PgTxn { tx: &mut tx, statements, schema };
        let settled = outbox::mark_failed(steps, id, holder, failure, policy, now)?;
        settle(tx, settled)
    }

    fn outbox(&mut self, state: Option<OutboxState>, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
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
}

impl Jobs for PgStore {
    fn schedule_job(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        check_job(job)?;
        self.steps().insert_job(job)
    }

    fn take_due_jobs(&mut self, lease: &Lease, limit: usize) -> Result<Vec<DueJob>, StoreError> {
        check_text("the lease holder", &lease.holder)?;
        outbox::take_jobs(&mut self.steps(), lease, limit)
    }

    fn complete_job(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        outbox::complete_job(&mut self.steps(), id, holder, result)
    }

    fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let row = self.query_opt(concat!("SELECT ", job_columns!(), " FROM due_jobs WHERE id = $1"), &[&id])?;
        row.as_ref().map(decode_job).transpose()
    }
}

impl<C: Session> DeliverySteps for PgTxn<'_, C> {
    fn insert_message(&mut self, message: &OutboxMessage, now: i64) -> Result<MessageInsert, StoreError> {
        // A concurrent insert of the same key makes this wait for it, then do nothing.
        let inserted = self.query(
            "INSERT INTO outbox (id, conversation, path, channel, body, record, idempotency_key, state,
                                 next_attempt_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $8)
             ON CONFLICT (idempotency_key) DO NOTHING RETURNING 1",
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
        Ok(if inserted?.is_empty() { MessageInsert::KeyTaken } else { MessageInsert::Inserted })
    }

    fn message_with_key(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        let row = self.query_opt("SELECT id FROM outbox WHERE idempotency_key = $1", &[&key])?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn lease_messages(&mut self, lease: &Lease, n: i64) -> Result<Vec<OutboxRow>, StoreError> {
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
            &[&lease.holder, &lease.until, &lease.now, &n],
        )?;
        rows.iter().map(decode_outbox).collect()
    }

    fn set_sent(&mut self, ids: &[&str], now: i64) -> Result<usize, StoreError> {
        let rows = self.query(
            "UPDATE outbox SET state = 'sent', sent_at = $2, lease_holder = NULL, lease_until = NULL
             WHERE id = ANY($1) AND state <> 'sent' RETURNING 1",
            &[&ids, &now],
        )?;
        Ok(rows.len())
    }

    fn held_attempts(&mut self, id: &str, holder: &str) -> Result<Option<i64>, StoreError> {
        let row = self.query_opt(
            "SELECT attempts FROM outbox WHERE id = $1 AND state = 'sending' AND lease_holder = $2 FOR UPDATE",
            &[&id, &holder],
        )?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    fn set_failed(&mut self, id: &str, state: OutboxState, next: i64, error: &str) -> Result<(), StoreError> {
        self.execute(
            "UPDATE outbox SET state = $2, next_attempt_at = $3, last_error = $4, lease_holder = NULL, lease_until = NULL
             WHERE id = $1",
            &[&id, &state.as_str(), &next, &error],
        )?;
        Ok(())
    }

    fn insert_job(&mut self, job: &NewJob) -> Result<bool, StoreError> {
        let rows = self.query(
            "INSERT INTO due_jobs (id, conversation, due_at, draft, state) VALUES ($1, $2, $3, $4, 'pending')
             ON CONFLICT (id) DO NOTHING RETURNING 1",
            &[&job.id, &job.conversation, &job.due_at, &job.draft],
        )?;
        Ok(!rows.is_empty())
    }

    fn lease_jobs(&mut self, lease: &Lease, n: i64) -> Result<Vec<DueJob>, StoreError> {
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
            &[&lease.holder, &lease.until, &lease.now, &n],
        )?;
        rows.iter().map(decode_job).collect()
    }

    fn set_done(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError> {
        let rows = self.query(
            "UPDATE due_jobs SET state = 'done', result = $3, lease_holder = NULL, lease_until = NULL
             WHERE id = $1 AND state = 'taken' AND lease_holder = $2 RETURNING 1",
            &[&id, &holder, &result],
        )?;
        Ok(!rows.is_empty())
    }
}
