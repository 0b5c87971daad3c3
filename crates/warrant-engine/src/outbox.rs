//! The scheduler's step before delivery: due follow-ups become outbox messages. What a job's
//! draft becomes is the caller's to decide (the outbound gate composes and clears it); this
//! module makes the step safe to repeat. A job taken again after its scheduler died enqueues
//! under the same idempotency key, derived from the job's id, so it is stored once however
//! often it runs, and the job completes with the id of the one stored message.
//!
//! What the caller composes is an [`OutboundRun`], the gate's cleared message with its record,
//! never an outbox row: the only ways this crate puts a message in the outbox are this step and
//! [`OutboxSender`](crate::OutboxSender), and both take only what `outbound::clear` returned.
//! A composition that hands over a row of its own does not compile:
//!
//! ```compile_fail
//! use warrant_engine::outbox::run_due_jobs;
//! use warrant_store::{Lease, OutboxMessage, SqliteStore, Store};
//! fn forge(store: &mut SqliteStore, lease: &Lease, row: OutboxMessage) {
//!     run_due_jobs(store, lease, 10, |_, _| Ok::<_, String>(row.clone()));
//! }
//! ```
//!
//! The raw [`Outbox::enqueue`](warrant_store::Outbox::enqueue) is the store's own primitive,
//! for warrant-store and its tests: code above the store reaches the outbox through the engine
//! (a test scans the service and the CLI for any other call).

use serde_json::Value;
use warrant_core::outbound::ClearedMessage;
use warrant_core::turn::derive_id;
use warrant_store::{DueJob, Enqueued, Lease, OutboxMessage, Store};

use crate::EngineError;
use crate::cleared::OutboundRun;

/// The idempotency key of the message a due job becomes.
pub fn job_key(job: &str) -> String {
    format!("due-job:{job}")
}

/// What one pass over the due jobs did.
#[derive(Debug)]
pub struct JobsRun<E> {
    /// Due jobs taken under a lease by this pass.
    pub taken: usize,
    /// Jobs whose message was stored by this pass.
    pub enqueued: usize,
    /// Jobs whose message an earlier, interrupted pass had stored already.
    pub already_enqueued: usize,
    /// Jobs that could not be turned into a message, with why; each stays taken until its
    /// lease expires, and is taken again then.
    pub failed: Vec<(String, E)>,
}

/// Takes the jobs due under `lease` (at most `limit`), has `compose` clear each through the
/// outbound gate (it may read the store), stores the cleared message in the outbox under
/// [`job_key`] and completes the job with the stored message's id.
pub fn run_due_jobs<E>(
    store: &mut dyn Store,
    lease: &Lease,
    limit: usize,
    mut compose: impl FnMut(&mut dyn Store, &DueJob) -> Result<OutboundRun, E>,
) -> Result<JobsRun<E>, EngineError> {
    let jobs = store.take_due_jobs(lease, limit)?;
    let mut run = JobsRun { taken: jobs.len(), enqueued: 0, already_enqueued: 0, failed: Vec::new() };
    for job in &jobs {
        let cleared = match compose(&mut *store, job) {
            Ok(cleared) => cleared,
            Err(error) => {
                run.failed.push((job.job.id.clone(), error));
                continue;
            }
        };
        let record = serde_json::to_value(&cleared.record)
            .map_err(|e| EngineError::Corrupt { what: "outbound record".into(), message: e.to_string() })?;
        let message = outbox_message(&cleared.message, record, job_key(&job.job.id))?;
        let stored = match store.enqueue(&message, lease.now)? {
            Enqueued::Stored => {
                run.enqueued += 1;
                message.id
            }
            Enqueued::Duplicate { id } => {
                run.already_enqueued += 1;
                id
            }
        };
        // Not holding the job any more means another scheduler took it after this lease
        // expired; it will find the message stored under the same key and complete the job.
        store.complete_job(&job.job.id, &lease.holder, &stored)?;
    }
    Ok(run)
}

/// The outbox row of a cleared message: its body is the message as the gate cleared it, its
/// id follows from its idempotency key.
pub(crate) fn outbox_message(
    message: &ClearedMessage,
    record: Value,
    key: String,
) -> Result<OutboxMessage, EngineError> {
    let body = serde_json::to_value(message)
        .map_err(|e| EngineError::Corrupt { what: "cleared message".into(), message: e.to_string() })?;
    Ok(OutboxMessage {
        id: derive_id("out", &[&key]),
        conversation: message.conversation().to_owned(),
        path: message.path().as_str().to_owned(),
        channel: message.channel().to_owned(),
        body,
        record,
        idempotency_key: key,
    })
}
