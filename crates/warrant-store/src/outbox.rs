//! What delivery keeps: the outbox (every cleared message stored before it is sent) and the
//! scheduler's due jobs, with the one rule both backends share for a failed delivery (backoff,
//! cap, dead letter). Times are milliseconds since the Unix epoch, given by the caller: the
//! store reads no clock, and tests choose the time.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::StoreError;
use crate::settled::Settled;
use crate::storable::{check_text, storable};

/// The outbox of a store: every cleared message, stored before it is sent, with its delivery
/// state. Times are milliseconds since the Unix epoch, given by the caller.
pub trait Outbox: Send {
    /// Stores a message for delivery, `queued` and due at `now`. A message whose idempotency
    /// key is stored already is not stored again: the answer names the stored one.
    fn enqueue(&mut self, message: &OutboxMessage, now: i64) -> Result<Enqueued, StoreError>;

    /// Takes up to `limit` deliverable messages (queued and due, or `sending` under an expired
    /// lease) in the order they were stored, counts an attempt on each and leases them to
    /// `lease.holder` until `lease.until`. Two takers never get the same message while its lease
    /// holds.
    fn take_outbox(&mut self, lease: &Lease, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;

    /// Records that the channel accepted these messages, in one transaction; how many this
    /// changed (a message recorded sent before, or unknown, is not counted). The channel's
    /// acceptance is the truth, so it is recorded whoever holds the lease.
    fn mark_sent(&mut self, ids: &[String], now: i64) -> Result<usize, StoreError>;

    /// Records a failed attempt by `holder`: queued again after the policy's backoff, or dead
    /// after its last attempt or at once for a permanent refusal.
    fn mark_failed(
        &mut self,
        id: &str,
        holder: &str,
        failure: &Failure,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<FailureRecorded, StoreError>;

    /// Outbox messages in the order they were stored, of one state or all, at most `limit`.
    fn outbox(&mut self, state: Option<OutboxState>, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;
}

/// The scheduler's due jobs of a store: follow-ups composed and cleared when they are due.
pub trait Jobs: Send {
    /// Stores a due job, `pending`; whether it was new (a job id stored before is a no-op).
    fn schedule_job(&mut self, job: &NewJob) -> Result<bool, StoreError>;

    /// Takes up to `limit` jobs that are due (pending at or before `lease.now`, or taken under
    /// an expired lease), in due order, and leases them as [`Outbox::take_outbox`] does.
    fn take_due_jobs(&mut self, lease: &Lease, limit: usize) -> Result<Vec<DueJob>, StoreError>;

    /// Marks a job `holder` has taken as done with its result (the outbox message id); whether
    /// it was still held by `holder`.
    fn complete_job(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError>;

    /// A stored due job.
    fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, StoreError>;
}

/// Where a message is in its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboxState {
    /// Stored, waiting for its next attempt.
    Queued,
    /// Taken by a dispatcher under a lease; deliverable again once the lease expires.
    Sending,
    /// The channel accepted it.
    Sent,
    /// Refused for good, or out of attempts: an operator's to look at, never retried.
    Dead,
}

impl OutboxState {
    /// Every state, in the order a message goes through them.
    pub const ALL: [OutboxState; 4] = [OutboxState::Queued, OutboxState::Sending, OutboxState::Sent, OutboxState::Dead];

    /// The state as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            OutboxState::Queued => "queued",
            OutboxState::Sending => "sending",
            OutboxState::Sent => "sent",
            OutboxState::Dead => "dead",
        }
    }

    /// The state named `text`, if it is one.
    pub fn parse(text: &str) -> Option<OutboxState> {
        OutboxState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    fn stored(id: &str, text: &str) -> Result<OutboxState, StoreError> {
        OutboxState::parse(text)
            .ok_or_else(|| StoreError::Corrupt { what: format!("outbox message `{id}` has the state `{text}`") })
    }
}

/// A message to store in the outbox: what the gate cleared, ready for its channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxMessage {
    /// Unique across the outbox, chosen by the caller.
    pub id: String,
    /// The conversation it belongs to.
    pub conversation: String,
    /// The outbound path it took through the gate (`live`, `scheduled`, …).
    pub path: String,
    /// The channel it goes to, as the contract names it.
    pub channel: String,
    /// What is delivered, as is.
    pub body: Value,
    /// The gate's record of how the message was cleared.
    pub record: Value,
    /// Unique across the outbox, and sent with every attempt, so that the receiver can apply
    /// the message once however many times it arrives.
    pub idempotency_key: String,
}

/// A stored outbox message with its delivery state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxRow {
    /// The position in the order messages were stored, assigned by the store.
    pub seq: i64,
    #[serde(flatten)]
    /// The message as stored.
    pub message: OutboxMessage,
    /// Where it is in its delivery.
    pub state: OutboxState,
    /// How many times it was taken for delivery.
    pub attempts: i64,
    /// When it may be taken next.
    pub next_attempt_at: i64,
    /// Who holds it while it is `sending`.
    pub lease_holder: Option<String>,
    /// Until when the holder holds it.
    pub lease_until: Option<i64>,
    /// What the last failed attempt said.
    pub last_error: Option<String>,
    /// When it was stored.
    pub created_at: i64,
    /// When the channel accepted it.
    pub sent_at: Option<i64>,
}

/// What storing a message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// The message was stored, `queued`.
    Stored,
    /// A message with the same idempotency key was stored before, under this id; nothing new
    /// was stored.
    Duplicate {
        /// The id of the message stored before.
        id: String,
    },
}

/// Who takes rows, when, and until when they are theirs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// A name unique to the taker (a process, a thread), so that only it records the result.
    pub holder: String,
    /// The time of the take: what is due by then, or whose lease expired by then, is taken.
    pub now: i64,
    /// When the rows become deliverable again if the holder never records a result.
    pub until: i64,
}

/// How a failed delivery is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// After this many attempts a message is dead.
    pub attempts: u32,
    /// The wait after the first failure; it doubles with each failure after that.
    pub backoff_base_ms: i64,
    /// The longest wait.
    pub backoff_cap_ms: i64,
}

impl RetryPolicy {
    /// The wait after the `attempts`-th failed attempt: base × 2^(attempts − 1), at most the cap.
    pub fn backoff_ms(&self, attempts: i64) -> i64 {
        let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 62)).unwrap_or(62);
        let factor = 1_i64.checked_shl(doublings).unwrap_or(i64::MAX);
        self.backoff_base_ms.max(0).saturating_mul(factor).min(self.backoff_cap_ms.max(0))
    }
}

/// Why a delivery failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Worth another attempt: a timeout, an unreachable channel, a 5xx, 408 or 429.
    Transient(String),
    /// The channel refused the message itself (a 4xx other than 408 and 429): another attempt
    /// would be refused the same way.
    Permanent(String),
}

impl Failure {
    /// What the channel or the attempt said.
    pub fn message(&self) -> &str {
        match self {
            Failure::Transient(m) | Failure::Permanent(m) => m,
        }
    }
}

/// What recording a failure did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureRecorded {
    /// Queued again for this time.
    Retry {
        /// The time of the next attempt.
        at: i64,
    },
    /// Dead: out of attempts, or refused for good; never retried.
    Dead,
    /// The message is not in this holder's lease any more (it expired and another dispatcher
    /// took it, or it was recorded already); nothing was written.
    NotHeld,
}

/// The state a failure leaves a message in, and its next attempt time: written once here for
/// both backends.
pub(crate) fn after_failure(attempts: i64, failure: &Failure, policy: &RetryPolicy, now: i64) -> (OutboxState, i64) {
    match failure {
        Failure::Permanent(_) => (OutboxState::Dead, now),
        Failure::Transient(_) if attempts >= i64::from(policy.attempts) => (OutboxState::Dead, now),
        Failure::Transient(_) => (OutboxState::Queued, now.saturating_add(policy.backoff_ms(attempts))),
    }
}

/// Where a due job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for its due time.
    Pending,
    /// Taken by a scheduler under a lease; due again once the lease expires.
    Taken,
    /// Run; its result is the outbox message it became.
    Done,
}

impl JobState {
    /// The state as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Taken => "taken",
            JobState::Done => "done",
        }
    }

    fn stored(id: &str, text: &str) -> Result<JobState, StoreError> {
        [JobState::Pending, JobState::Taken, JobState::Done]
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| StoreError::Corrupt { what: format!("due job `{id}` has the state `{text}`") })
    }
}

/// A follow-up to run at a time: its draft request is composed and cleared when it is due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewJob {
    /// Unique across due jobs, chosen by the caller; storing it again is a no-op.
    pub id: String,
    /// The conversation it follows up.
    pub conversation: String,
    /// When it is due.
    pub due_at: i64,
    /// The draft request composed and cleared when it is due.
    pub draft: Value,
}

/// A stored due job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DueJob {
    /// The position in the order jobs were stored, assigned by the store.
    pub seq: i64,
    #[serde(flatten)]
    /// The job as stored.
    pub job: NewJob,
    /// Where it is.
    pub state: JobState,
    /// Who holds it while it is `taken`.
    pub lease_holder: Option<String>,
    /// Until when the holder holds it.
    pub lease_until: Option<i64>,
    /// The id of the outbox message the job became, once done.
    pub result: Option<String>,
}

/// The columns of an outbox row, in the order [`RawOutbox`] reads them; a macro, so that
/// `concat!` makes each statement one static string (PostgreSQL's statement cache keys on it).
macro_rules! outbox_columns {
    () => {
        "seq, id, conversation, path, channel, body, record, idempotency_key, state, \
         attempts, next_attempt_at, lease_holder, lease_until, last_error, created_at, sent_at"
    };
}
pub(crate) use outbox_columns;

/// An outbox row as a backend read it, JSON already decoded.
pub(crate) struct RawOutbox {
    pub(crate) seq: i64,
    pub(crate) id: String,
    pub(crate) conversation: String,
    pub(crate) path: String,
    pub(crate) channel: String,
    pub(crate) body: Value,
    pub(crate) record: Value,
    pub(crate) idempotency_key: String,
    pub(crate) state: String,
    pub(crate) attempts: i64,
    pub(crate) next_attempt_at: i64,
    pub(crate) lease_holder: Option<String>,
    pub(crate) lease_until: Option<i64>,
    pub(crate) last_error: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) sent_at: Option<i64>,
}

impl RawOutbox {
    pub(crate) fn decode(self) -> Result<OutboxRow, StoreError> {
        Ok(OutboxRow {
            seq: self.seq,
            state: OutboxState::stored(&self.id, &self.state)?,
            message: OutboxMessage {
                id: self.id,
                conversation: self.conversation,
                path: self.path,
                channel: self.channel,
                body: self.body,
                record: self.record,
                idempotency_key: self.idempotency_key,
            },
            attempts: self.attempts,
            next_attempt_at: self.next_attempt_at,
            lease_holder: self.lease_holder,
            lease_until: self.lease_until,
            last_error: self.last_error,
            created_at: self.created_at,
            sent_at: self.sent_at,
        })
    }
}

/// The columns of a due job, in the order [`RawJob`] reads them.
macro_rules! job_columns {
    () => {
        "seq, id, conversation, due_at, draft, state, lease_holder, lease_until, result"
    };
}
pub(crate) use job_columns;

pub(crate) struct RawJob {
    pub(crate) seq: i64,
    pub(crate) id: String,
    pub(crate) conversation: String,
    pub(crate) due_at: i64,
    pub(crate) draft: Value,
    pub(crate) state: String,
    pub(crate) lease_holder: Option<String>,
    pub(crate) lease_until: Option<i64>,
    pub(crate) result: Option<String>,
}

impl RawJob {
    pub(crate) fn decode(self) -> Result<DueJob, StoreError> {
        Ok(DueJob {
            seq: self.seq,
            state: JobState::stored(&self.id, &self.state)?,
            job: NewJob { id: self.id, conversation: self.conversation, due_at: self.due_at, draft: self.draft },
            lease_holder: self.lease_holder,
            lease_until: self.lease_until,
            result: self.result,
        })
    }
}

/// Whether a new message went in, or its idempotency key was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageInsert {
    Inserted,
    KeyTaken,
}

/// The statements of delivery, as one backend performs them: inside the transaction the
/// backend opened for the step, or on the connection where the step is one statement. The
/// rules (which rows a take may lease, the backoff, what an unknown id means) are the
/// functions below, written once for both backends.
pub(crate) trait DeliverySteps {
    /// Inserts the message, `queued` and due at `now`, unless its idempotency key is stored.
    /// An id stored already is [`StoreError::IdTaken`].
    fn insert_message(&mut self, message: &OutboxMessage, now: i64) -> Result<MessageInsert, StoreError>;

    /// The id of the message stored under `key`.
    fn message_with_key(&mut self, key: &str) -> Result<Option<String>, StoreError>;

    /// Leases up to `limit` deliverable messages (queued and due at `lease.now`, or `sending`
    /// under a lease expired by then), oldest first, counting an attempt on each; in any order.
    fn lease_messages(&mut self, lease: &Lease, limit: i64) -> Result<Vec<OutboxRow>, StoreError>;

    /// Marks these messages sent unless they are; how many it marked.
    fn set_sent(&mut self, ids: &[&str], now: i64) -> Result<usize, StoreError>;

    /// The attempts of the message while `holder` holds it (`sending` under its lease), locking
    /// it against a concurrent record; `None` when it is not held by `holder`.
    fn held_attempts(&mut self, id: &str, holder: &str) -> Result<Option<i64>, StoreError>;

    /// Ends the lease of a message with the state a failure left it in.
    fn set_failed(&mut self, id: &str, state: OutboxState, next_attempt_at: i64, error: &str)
    -> Result<(), StoreError>;

    /// Inserts a job, `pending`, unless its id is stored; whether it did.
    fn insert_job(&mut self, job: &NewJob) -> Result<bool, StoreError>;

    /// Leases up to `limit` due jobs (pending and due at `lease.now`, or taken under a lease
    /// expired by then), earliest due first; in any order.
    fn lease_jobs(&mut self, lease: &Lease, limit: i64) -> Result<Vec<DueJob>, StoreError>;

    /// Marks the job done with `result` if `holder` holds it; whether it did.
    fn set_done(&mut self, id: &str, holder: &str, result: &str) -> Result<bool, StoreError>;
}

/// A count as the `LIMIT` of a statement.
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Stores a message, or names the one stored under its idempotency key.
pub(crate) fn enqueue(
    steps: &mut impl DeliverySteps,
    message: &OutboxMessage,
    now: i64,
) -> Result<Enqueued, StoreError> {
    match steps.insert_message(message, now)? {
        MessageInsert::Inserted => Ok(Enqueued::Stored),
        MessageInsert::KeyTaken => match steps.message_with_key(&message.idempotency_key)? {
            Some(id) => Ok(Enqueued::Duplicate { id }),
            None => Err(StoreError::Corrupt {
                what: format!("the outbox message with key `{}` conflicted but is not stored", message.idempotency_key),
            }),
        },
    }
}

/// Leases deliverable messages, answered in the order they were stored.
pub(crate) fn take(steps: &mut impl DeliverySteps, lease: &Lease, n: usize) -> Result<Vec<OutboxRow>, StoreError> {
    let mut rows = steps.lease_messages(lease, limit(n))?;
    // RETURNING keeps no order.
    rows.sort_by_key(|r| r.seq);
    Ok(rows)
}

/// Marks messages sent; an id that cannot be stored names no message.
pub(crate) fn mark_sent(steps: &mut impl DeliverySteps, ids: &[String], now: i64) -> Result<usize, StoreError> {
    let ids: Vec<&str> = ids.iter().map(String::as_str).filter(|id| storable(id)).collect();
    steps.set_sent(&ids, now)
}

/// Records a failed attempt by the message's holder: the rule of [`after_failure`], applied
/// only while `holder` holds the message (an id or holder that cannot be stored holds nothing).
pub(crate) fn mark_failed(
    steps: &mut impl DeliverySteps,
    id: &str,
    holder: &str,
    failure: &Failure,
    policy: &RetryPolicy,
    now: i64,
) -> Result<Settled<FailureRecorded>, StoreError> {
    if !storable(id) || !storable(holder) {
        return Ok(Settled::Discard(FailureRecorded::NotHeld));
    }
    let Some(attempts) = steps.held_attempts(id, holder)? else {
        return Ok(Settled::Discard(FailureRecorded::NotHeld));
    };
    let (state, next) = after_failure(attempts, failure, policy, now);
    steps.set_failed(id, state, next, &failure.message().replace('\0', "\u{FFFD}"))?;
    Ok(Settled::Keep(if state == OutboxState::Dead {
        FailureRecorded::Dead
    } else {
        FailureRecorded::Retry { at: next }
    }))
}

/// Leases due jobs, answered in due order.
pub(crate) fn take_jobs(steps: &mut impl DeliverySteps, lease: &Lease, n: usize) -> Result<Vec<DueJob>, StoreError> {
    let mut jobs = steps.lease_jobs(lease, limit(n))?;
    jobs.sort_by_key(|j| (j.job.due_at, j.seq));
    Ok(jobs)
}

/// Marks a held job done; an id or holder that cannot be stored holds nothing.
pub(crate) fn complete_job(
    steps: &mut impl DeliverySteps,
    id: &str,
    holder: &str,
    result: &str,
) -> Result<bool, StoreError> {
    if !storable(id) || !storable(holder) {
        return Ok(false);
    }
    check_text("the job's result", result)?;
    steps.set_done(id, holder, result)
}

pub(crate) fn check_outbox_message(message: &OutboxMessage) -> Result<(), StoreError> {
    for (name, value) in [
        ("id", &message.id),
        ("conversation", &message.conversation),
        ("path", &message.path),
        ("channel", &message.channel),
        ("idempotency_key", &message.idempotency_key),
    ] {
        crate::storable::text(|| format!("`{name}`"), value)?;
    }
    crate::storable::json(|| "`body`".to_owned(), &message.body)?;
    crate::storable::json(|| "`record`".to_owned(), &message.record)
}

pub(crate) fn check_job(job: &NewJob) -> Result<(), StoreError> {
    crate::storable::text(|| "`id`".to_owned(), &job.id)?;
    crate::storable::text(|| "`conversation`".to_owned(), &job.conversation)?;
    crate::storable::json(|| "`draft`".to_owned(), &job.draft)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy = RetryPolicy { attempts: 4, backoff_base_ms: 100, backoff_cap_ms: 350 };

    #[test]
    fn backoff_doubles_from_the_base_up_to_the_cap() {
        let waits: Vec<i64> = (1..=5).map(|a| POLICY.backoff_ms(a)).collect();
        assert_eq!(waits, [100, 200, 350, 350, 350]);
        assert_eq!(POLICY.backoff_ms(i64::MAX), 350);
        assert_eq!(POLICY.backoff_ms(0), 100);
    }

    #[test]
    fn the_last_attempt_and_a_permanent_refusal_are_dead() {
        let transient = Failure::Transient("503".into());
        assert_eq!(after_failure(1, &transient, &POLICY, 1000), (OutboxState::Queued, 1100));
        assert_eq!(after_failure(3, &transient, &POLICY, 1000), (OutboxState::Queued, 1350));
        assert_eq!(after_failure(4, &transient, &POLICY, 1000), (OutboxState::Dead, 1000));
        assert_eq!(after_failure(1, &Failure::Permanent("400".into()), &POLICY, 1000), (OutboxState::Dead, 1000));
    }

    #[test]
    fn states_read_back_as_written() {
        for state in OutboxState::ALL {
            assert_eq!(OutboxState::parse(state.as_str()), Some(state));
        }
        assert_eq!(OutboxState::parse("Sent"), None);
    }
}
