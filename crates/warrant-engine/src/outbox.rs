//! The scheduler's step before delivery: due follow-ups become outbox messages. What a job's
//! draft becomes is the caller's to decide (the outbound gate composes and clears it); this
//! module makes the step safe to repeat. A job taken again after its scheduler died enqueues
//! under the same idempotency key, derived from the job's id, so it is stored once however
//! often it runs, and the job completes with the id of the one stored message.

use warrant_store::{DueJob, Enqueued, Lease, OutboxMessage, Store, StoreError};

/// The idempotency key of the message a due job becomes.
pub fn job_key(job: &str) -> String {
    format!("due-job:{job}")
}

/// What one pass over the due jobs did.
#[derive(Debug)]
pub struct JobsRun<E> {
    pub taken: usize,
    /// Jobs whose message was stored by this pass.
    pub enqueued: usize,
    /// Jobs whose message an earlier, interrupted pass had stored already.
    pub already_enqueued: usize,
    /// Jobs that could not be turned into a message, with why; each stays taken until its
    /// lease expires, and is taken again then.
    pub failed: Vec<(String, E)>,
}

/// Takes the jobs due under `lease` (at most `limit`), turns each into a message with
/// `compose` (which may read the store), stores it in the outbox and completes the job with its id. `compose` chooses
/// everything but the idempotency key, which is [`job_key`].
pub fn run_due_jobs<E>(
    store: &mut dyn Store,
    lease: &Lease,
    limit: usize,
    mut compose: impl FnMut(&mut dyn Store, &DueJob) -> Result<OutboxMessage, E>,
) -> Result<JobsRun<E>, StoreError> {
    let jobs = store.take_due_jobs(lease, limit)?;
    let mut run = JobsRun { taken: jobs.len(), enqueued: 0, already_enqueued: 0, failed: Vec::new() };
    for job in &jobs {
        let mut message = match compose(&mut *store, job) {
            Ok(message) => message,
            Err(error) => {
                run.failed.push((job.job.id.clone(), error));
                continue;
            }
        };
        message.idempotency_key = job_key(&job.job.id);
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
