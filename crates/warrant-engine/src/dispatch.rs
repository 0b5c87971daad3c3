//! Delivery: takes what the outbox holds due, posts each message to its channel's webhook (the
//! URL the variable of the channel's `url_env` holds, or one URL for every channel) with its
//! idempotency key, and records the answer (sent, retried after a backoff, or dead).
//!
//! Nothing is sent that was not stored first, and nothing stored is forgotten: a message is
//! taken under a lease, so when the process dies mid-delivery the lease expires and the message
//! is delivered again, with the same idempotency key. The receiver applies a key once; that is
//! what makes "at least once on the wire" into "exactly once applied".

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use warrant_core::claim::Outbound;
use warrant_store::{Failure, FailureRecorded, Lease, OutboxMessage, OutboxRow, RetryPolicy, Store, StoreError};

/// Where messages go, by the channel each was cleared for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channels {
    /// Every message to this one webhook, whatever its channel: `warrant scheduler run
    /// --webhook URL`, for tests and for a deployment with one receiver.
    Every(String),
    /// Each channel's messages to its own webhook, by channel name.
    Each(BTreeMap<String, String>),
}

impl From<&str> for Channels {
    fn from(url: &str) -> Channels {
        Channels::Every(url.to_owned())
    }
}

impl From<String> for Channels {
    fn from(url: String) -> Channels {
        Channels::Every(url)
    }
}

impl Channels {
    /// Each channel of `outbound` to the URL held by the variable its `url_env` names, read
    /// through `env`. A channel whose variable is unset or empty stops the dispatcher before it
    /// takes anything: its messages would otherwise wait, or be lost, with nobody told why.
    pub fn from_contract(outbound: &Outbound, env: &dyn Fn(&str) -> Option<String>) -> Result<Channels, DispatchError> {
        let mut each = BTreeMap::new();
        for channel in outbound.channels() {
            let url = env(&channel.url_env).filter(|url| !url.is_empty()).ok_or_else(|| {
                DispatchError::Config(format!(
                    "channel `{}`: the variable `{}` that holds its webhook URL is not set (or give one webhook for every channel)",
                    channel.name, channel.url_env
                ))
            })?;
            each.insert(channel.name.clone(), url);
        }
        if each.is_empty() {
            return Err(DispatchError::Config("the contract declares no outbound channel to deliver to".into()));
        }
        Ok(Channels::Each(each))
    }

    /// The webhook of `channel`, if there is one.
    pub fn url(&self, channel: &str) -> Option<&str> {
        match self {
            Channels::Every(url) => Some(url),
            Channels::Each(each) => each.get(channel).map(String::as_str),
        }
    }

    /// Every (channel, webhook) pair; `*` for the one webhook of every channel.
    pub fn routes(&self) -> Vec<(&str, &str)> {
        match self {
            Channels::Every(url) => vec![("*", url.as_str())],
            Channels::Each(each) => each.iter().map(|(c, u)| (c.as_str(), u.as_str())).collect(),
        }
    }
}

/// How the dispatcher delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchConfig {
    /// Where each message goes: `http://…` or `https://…` webhooks.
    pub channels: Channels,
    /// Attempts before a message is dead, and the backoff between them.
    pub retry: RetryPolicy,
    /// How long taken messages stay this dispatcher's. It must outlast a whole batch of
    /// timeouts, or another dispatcher would take a message this one is still sending.
    pub lease: Duration,
    /// The longest one delivery may take, connection included.
    pub timeout: Duration,
    /// How many messages one take leases.
    pub batch: usize,
    /// How many of a batch's messages are delivered at once.
    pub parallel: usize,
    /// Names this dispatcher in the leases it holds; unique per process.
    pub holder: String,
}

impl DispatchConfig {
    /// Defaults for `channels`: 8 attempts, backoff from 1 s doubling to 5 min, 10 s timeout,
    /// batches of 8 under a 2 min lease delivered 4 at a time, and a holder named after the
    /// process.
    pub fn new(channels: impl Into<Channels>) -> DispatchConfig {
        DispatchConfig {
            channels: channels.into(),
            retry: RetryPolicy { attempts: 8, backoff_base_ms: 1_000, backoff_cap_ms: 300_000 },
            lease: Duration::from_secs(120),
            timeout: Duration::from_secs(10),
            batch: 8,
            parallel: 4,
            holder: format!("dispatcher-{}-{}", std::process::id(), now_ms()),
        }
    }

    /// Checks the configuration as a whole; the error names the setting at fault.
    pub fn validate(&self) -> Result<(), DispatchError> {
        let bad = |message: String| Err(DispatchError::Config(message));
        for (channel, webhook) in self.channels.routes() {
            let of = if channel == "*" { String::new() } else { format!(" of channel `{channel}`") };
            let url = reqwest::Url::parse(webhook)
                .map_err(|e| DispatchError::Config(format!("webhook `{webhook}`{of} is not a URL: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return bad(format!("webhook `{webhook}`{of} must be http or https"));
            }
        }
        if self.retry.attempts == 0 {
            return bad("attempts must be at least 1".to_owned());
        }
        if self.retry.backoff_base_ms < 0 || self.retry.backoff_cap_ms < self.retry.backoff_base_ms {
            return bad(format!(
                "backoff base {} ms and cap {} ms: the cap must be at least the base, both not negative",
                self.retry.backoff_base_ms, self.retry.backoff_cap_ms
            ));
        }
        if self.batch == 0 {
            return bad("batch must be at least 1".to_owned());
        }
        if self.parallel == 0 {
            return bad("parallel must be at least 1".to_owned());
        }
        if self.timeout.is_zero() {
            return bad("timeout must be more than 0".to_owned());
        }
        let batch = u32::try_from(self.batch).unwrap_or(u32::MAX);
        if self.lease <= self.timeout.saturating_mul(batch) {
            return bad(format!(
                "lease {} ms must outlast a batch of {} timeouts of {} ms",
                self.lease.as_millis(),
                self.batch,
                self.timeout.as_millis()
            ));
        }
        if self.holder.is_empty() || self.holder.contains('\0') {
            return bad("the lease holder must be a non-empty name".to_owned());
        }
        Ok(())
    }
}

/// What stops the dispatcher (a failed delivery is not here: it is recorded on the message).
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// The configuration is wrong (a webhook that is not an http or https URL, no attempts, a
    /// backoff whose cap is below its base).
    #[error("dispatch configuration: {0}")]
    Config(String),
    /// The HTTP client cannot be built.
    #[error("the webhook client cannot be built: {0}")]
    Client(String),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dispatched {
    /// Messages taken under a lease.
    pub taken: usize,
    /// Messages their channel accepted, recorded sent.
    pub sent: usize,
    /// Failed deliveries to be tried again after their backoff.
    pub retried: usize,
    /// Messages that failed for the last time (or were refused for good), now dead.
    pub dead: usize,
    /// Failed deliveries whose lease had passed to another dispatcher, so not recorded here.
    pub not_held: usize,
}

/// Delivers outbox messages to their channels' webhooks.
#[derive(Debug)]
pub struct Dispatcher {
    config: DispatchConfig,
    client: reqwest::blocking::Client,
    observer: Option<Arc<dyn DeliveryObserver>>,
}

/// Told of every delivery attempt as it ends (a trace's span of the forward): the narrow hook a
/// tracer implements, called on the delivering thread; nothing is recorded without one.
pub trait DeliveryObserver: Send + Sync + std::fmt::Debug {
    /// One attempt at delivering `delivery.message`.
    fn delivered(&self, delivery: &Delivery<'_>);
}

/// One attempt at delivering a message, as a [`DeliveryObserver`] is told of it.
#[derive(Debug)]
pub struct Delivery<'a> {
    /// The message.
    pub message: &'a OutboxMessage,
    /// Which attempt this is, from 1.
    pub attempt: i64,
    /// When it began.
    pub started: SystemTime,
    /// How long it took.
    pub elapsed: Duration,
    /// Accepted by its channel, or why not.
    pub result: Result<(), &'a Failure>,
}

impl Dispatcher {
    /// A dispatcher for `config`, once it is checked, with its webhook client.
    pub fn new(config: DispatchConfig) -> Result<Dispatcher, DispatchError> {
        config.validate()?;
        // Another part of the process may have installed a provider already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            // A redirect would send the message somewhere the deployment did not name.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| DispatchError::Client(with_causes(&e)))?;
        Ok(Dispatcher { config, client, observer: None })
    }

    /// The same dispatcher, telling `observer` of every delivery attempt.
    #[must_use]
    pub fn observed_by(mut self, observer: Arc<dyn DeliveryObserver>) -> Dispatcher {
        self.observer = Some(observer);
        self
    }

    /// Its configuration.
    pub fn config(&self) -> &DispatchConfig {
        &self.config
    }

    /// Takes one batch of due messages, delivers each and records the answer.
    pub fn dispatch_once(&self, store: &mut dyn Store) -> Result<Dispatched, DispatchError> {
        self.round(store, now_ms())
    }

    /// One batch of the messages due by `due_by`.
    fn round(&self, store: &mut dyn Store, due_by: i64) -> Result<Dispatched, DispatchError> {
        let lease_ms = i64::try_from(self.config.lease.as_millis()).unwrap_or(i64::MAX);
        let lease = Lease { holder: self.config.holder.clone(), now: due_by, until: now_ms().saturating_add(lease_ms) };
        let taken = store.take_outbox(&lease, self.config.batch)?;
        let mut round = Dispatched { taken: taken.len(), ..Dispatched::default() };
        // A message taken more often than it may be attempted lost its leases without an
        // answer each time: a dispatcher died or hung on it. Delivering it again could kill the
        // next one too, so it goes to the dead letter, where an operator sees it.
        let attempts = i64::from(self.config.retry.attempts);
        let (spent, taken): (Vec<OutboxRow>, Vec<OutboxRow>) =
            taken.into_iter().partition(|row| row.attempts > attempts);
        for row in &spent {
            let failure = Failure::Transient(format!(
                "taken {} times without a recorded answer: each lease expired mid-delivery",
                row.attempts
            ));
            self.record_failure(store, row, &failure, &mut round)?;
        }
        let mut sent = Vec::with_capacity(taken.len());
        for (row, outcome) in taken.iter().zip(self.deliver_all(&taken)) {
            match outcome {
                Ok(()) => sent.push(row.message.id.clone()),
                Err(failure) => self.record_failure(store, row, &failure, &mut round)?,
            }
        }
        if !sent.is_empty() {
            // One record for the batch: a crash before it only means these go out again, with
            // the same keys.
            store.mark_sent(&sent, now_ms())?;
            round.sent = sent.len();
        }
        Ok(round)
    }

    fn record_failure(
        &self,
        store: &mut dyn Store,
        row: &OutboxRow,
        failure: &Failure,
        round: &mut Dispatched,
    ) -> Result<(), DispatchError> {
        let recorded =
            store.mark_failed(&row.message.id, &self.config.holder, failure, &self.config.retry, now_ms())?;
        match recorded {
            FailureRecorded::Retry { .. } => round.retried += 1,
            FailureRecorded::Dead => round.dead += 1,
            FailureRecorded::NotHeld => round.not_held += 1,
        }
        Ok(())
    }

    /// Delivers a batch on up to `parallel` threads; the outcomes in the order of `rows`. A
    /// delivery whose thread died counts as a transient failure, never as sent.
    fn deliver_all(&self, rows: &[OutboxRow]) -> Vec<Result<(), Failure>> {
        let lanes = self.config.parallel.min(rows.len()).max(1);
        if lanes == 1 {
            return rows.iter().map(|row| self.deliver(row)).collect();
        }
        let mut outcomes: Vec<Option<Result<(), Failure>>> = vec![None; rows.len()];
        std::thread::scope(|scope| {
            let lanes: Vec<_> = (0..lanes)
                .map(|lane| {
                    scope.spawn(move || {
                        let mine = rows.iter().enumerate().skip(lane).step_by(lanes);
                        mine.map(|(i, row)| (i, self.deliver(row))).collect::<Vec<_>>()
                    })
                })
                .collect();
            for lane in lanes {
                for (i, outcome) in lane.join().unwrap_or_default() {
                    if let Some(slot) = outcomes.get_mut(i) {
                        *slot = Some(outcome);
                    }
                }
            }
        });
        outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err(Failure::Transient("the delivery thread died".to_owned()))))
            .collect()
    }

    /// Delivers rounds until nothing that was due when it began is left. A message that
    /// fails waits out its backoff past that time, so each is attempted at most once per drain.
    pub fn drain(&self, store: &mut dyn Store) -> Result<Dispatched, DispatchError> {
        let start = now_ms();
        let mut total = Dispatched::default();
        loop {
            let round = self.round(store, start)?;
            if round.taken == 0 {
                return Ok(total);
            }
            total.taken += round.taken;
            total.sent += round.sent;
            total.retried += round.retried;
            total.dead += round.dead;
            total.not_held += round.not_held;
        }
    }

    /// One POST of the message's body with its idempotency key, to its channel's webhook. A
    /// channel this dispatcher has no webhook for (a contract changed after the message was
    /// stored) is a transient failure: the message waits, visible, for a dispatcher that has one.
    fn deliver(&self, row: &OutboxRow) -> Result<(), Failure> {
        let Some(observer) = &self.observer else { return self.post(row) };
        let (started, clock) = (SystemTime::now(), Instant::now());
        let result = self.post(row);
        let delivery = Delivery {
            message: &row.message,
            attempt: row.attempts,
            started,
            elapsed: clock.elapsed(),
            result: result.as_ref().map(|_| ()),
        };
        observer.delivered(&delivery);
        result
    }

    fn post(&self, row: &OutboxRow) -> Result<(), Failure> {
        let channel = &row.message.channel;
        let webhook = self.config.channels.url(channel).ok_or_else(|| {
            Failure::Transient(format!("channel `{channel}` has no webhook here: it is not a channel of the contract"))
        })?;
        let sent = self
            .client
            .post(webhook)
            .header("content-type", "application/json")
            .header("idempotency-key", &row.message.idempotency_key)
            .body(row.message.body.to_string())
            .send()
            .map_err(|e| Failure::Transient(transport(&e)))?;
        let status = sent.status();
        if status.is_success() {
            return Ok(());
        }
        // The excerpt is for the operator reading the dead letter; reading it may fail.
        let excerpt: String = sent.text().unwrap_or_default().chars().take(200).collect();
        let message = format!("HTTP {status}: {excerpt}");
        Err(classify(status.as_u16(), message))
    }
}

/// A refusal of the message itself is permanent; a timeout (408), throttling (429) and
/// everything else may pass on another attempt.
pub fn classify(status: u16, message: String) -> Failure {
    match status {
        408 | 429 => Failure::Transient(message),
        400..=499 => Failure::Permanent(message),
        _ => Failure::Transient(message),
    }
}

fn transport(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "unreachable"
    } else {
        "transport"
    };
    format!("{kind}: {}", with_causes(error))
}

/// The error and each of its causes: reqwest's own message does not say what the socket said.
fn with_causes(error: &dyn std::error::Error) -> String {
    let chain = std::iter::successors(Some(error), |e| e.source());
    chain.map(ToString::to_string).collect::<Vec<_>>().join(": ")
}

/// Milliseconds since the Unix epoch, the store's time.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs `tick` until `stop` is set. A tick that did work runs again at once; one that found
/// nothing waits until the next poll is due, looking at `stop` every few milliseconds, so that a
/// signal ends the loop promptly and nothing ever sleeps past its deadline.
pub fn run_until_stopped<E>(
    stop: &AtomicBool,
    poll: Duration,
    mut tick: impl FnMut() -> Result<usize, E>,
) -> Result<(), E> {
    const GLANCE: Duration = Duration::from_millis(10);
    while !stop.load(Ordering::SeqCst) {
        if tick()? > 0 {
            continue;
        }
        let next = Instant::now() + poll;
        while !stop.load(Ordering::SeqCst) {
            let left = next.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(GLANCE));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_the_message_is_permanent_and_the_rest_transient() {
        for status in [400, 401, 403, 404, 409, 410, 413, 422] {
            assert!(matches!(classify(status, String::new()), Failure::Permanent(_)), "{status}");
        }
        for status in [408, 429, 500, 502, 503, 504, 301, 302] {
            assert!(matches!(classify(status, String::new()), Failure::Transient(_)), "{status}");
        }
    }

    #[test]
    fn a_configuration_is_checked_as_a_whole() {
        let good = DispatchConfig::new("http://127.0.0.1:9/hook");
        assert!(good.validate().is_ok());
        let check = |change: fn(&mut DispatchConfig), words: &str| {
            let mut config = good.clone();
            change(&mut config);
            let error = config.validate().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains(words), "`{error}` should mention `{words}`");
        };
        check(|c| c.channels = "ftp://x/y".into(), "http or https");
        check(|c| c.channels = "not a url".into(), "not a URL");
        check(
            |c| c.channels = Channels::Each([("sms".to_owned(), "mailto:x@y".to_owned())].into()),
            "of channel `sms` must be http or https",
        );
        check(|c| c.retry.attempts = 0, "attempts");
        check(|c| c.retry.backoff_cap_ms = 1, "cap");
        check(|c| c.batch = 0, "batch");
        check(|c| c.parallel = 0, "parallel");
        check(|c| c.lease = Duration::from_secs(1), "lease");
        check(|c| c.holder = String::new(), "holder");
    }

    #[test]
    fn the_loop_ends_when_stopped_and_runs_a_busy_tick_again_at_once() {
        let stop = AtomicBool::new(false);
        let mut ticks = 0;
        let result: Result<(), ()> = run_until_stopped(&stop, Duration::from_secs(3600), || {
            ticks += 1;
            if ticks == 3 {
                stop.store(true, Ordering::SeqCst);
                return Ok(0);
            }
            Ok(1)
        });
        assert_eq!((result, ticks), (Ok(()), 3));
    }
}
