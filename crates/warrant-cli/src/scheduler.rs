//! `warrant scheduler`: runs what is due (follow-ups cleared through the outbound gate into the
//! outbox, then delivery of the outbox, each message to its channel's webhook) once or as a
//! daemon until SIGTERM or SIGINT, and lists the outbox for operators.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use warrant_engine::dispatch::{self, Channels, DispatchConfig, Dispatcher};
use warrant_engine::outbox::JobsRun;
use warrant_engine::{Engine, EngineSetup, StoreUrl};
use warrant_store::{Lease, OutboxState, RetryPolicy};

use crate::Exit;
use crate::engine::EngineOps;
use crate::prompt::{At, open};

#[derive(Debug, Subcommand)]
pub(crate) enum SchedulerCommand {
    /// Delivers what is due: once (`--once`), or until SIGTERM or SIGINT.
    Run(RunArgs),
    /// Lists outbox messages as JSON lines, in the order they were stored.
    Outbox(OutboxArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The contract file.
    #[arg(long)]
    contract: PathBuf,
    #[command(flatten)]
    at: At,
    /// One HTTP webhook for every channel's messages, instead of the URL in the variable each
    /// channel's `url_env` names: for tests, and for a deployment with a single receiver.
    #[arg(long)]
    webhook: Option<String>,
    /// Deliver what is due now, then exit, instead of running until a signal.
    #[arg(long)]
    once: bool,
    /// Attempts before a message is dead.
    #[arg(long, default_value_t = 8)]
    attempts: u32,
    /// The wait after the first failed attempt, doubling after each one.
    #[arg(long, default_value_t = 1_000)]
    backoff_ms: i64,
    /// The longest wait between attempts.
    #[arg(long, default_value_t = 300_000)]
    backoff_cap_ms: i64,
    /// The longest one delivery may take.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Messages taken per round.
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// How many of a batch's messages are delivered at once.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// How long taken messages stay this process's; must outlast a batch of timeouts.
    #[arg(long, default_value_t = 120_000)]
    lease_ms: u64,
    /// How often the daemon looks for due work when it found none.
    #[arg(long, default_value_t = 1_000)]
    poll_ms: u64,
}

#[derive(Debug, Args)]
pub(crate) struct OutboxArgs {
    #[command(flatten)]
    at: At,
    /// Only messages in this state: `queued`, `sending`, `sent` or `dead`.
    #[arg(long)]
    state: Option<String>,
    /// At most this many messages.
    #[arg(long, default_value_t = 1_000)]
    limit: usize,
}

pub(crate) fn run(command: &SchedulerCommand) -> Result<(), Exit> {
    match command {
        SchedulerCommand::Run(args) => run_scheduler(args),
        SchedulerCommand::Outbox(args) => list(args),
    }
}

/// The dispatcher's configuration from the flags and where the channels go, checked before any
/// store is opened.
fn config(args: &RunArgs, channels: Channels) -> Result<DispatchConfig, Exit> {
    let mut config = DispatchConfig::new(channels);
    config.retry =
        RetryPolicy { attempts: args.attempts, backoff_base_ms: args.backoff_ms, backoff_cap_ms: args.backoff_cap_ms };
    config.timeout = Duration::from_millis(args.timeout_ms);
    config.batch = args.batch;
    config.parallel = args.parallel;
    config.lease = Duration::from_millis(args.lease_ms);
    config.validate().map_err(|e| Exit::Input(e.to_string()))?;
    Ok(config)
}

/// Where each channel delivers: `--webhook` for all of them, or else the URL each channel's
/// `url_env` variable holds. A channel without one stops the scheduler here, before it takes
/// anything, with the variable's name.
fn channels(args: &RunArgs, setup: &EngineSetup) -> Result<Channels, Exit> {
    match &args.webhook {
        Some(url) => Ok(Channels::Every(url.clone())),
        None => Channels::from_contract(setup.contract().outbound(), &|name| std::env::var(name).ok())
            .map_err(|e| Exit::Input(e.to_string())),
    }
}

fn run_scheduler(args: &RunArgs) -> Result<(), Exit> {
    // First, so that a signal while the contract loads or the store opens stops the daemon
    // cleanly before it takes anything.
    let stop = if args.once {
        crate::signals::hold()?;
        None
    } else {
        Some(crate::signals::stop_flag()?)
    };
    let setup = Engine::builder().contract_file(&args.contract).prepare().map_err(|e| Exit::Input(e.to_string()))?;
    let config = config(args, channels(args, &setup)?)?;
    let mut dispatcher = Dispatcher::new(config).map_err(|e| Exit::Input(e.to_string()))?;
    if let Some(telemetry) = crate::telemetry::get() {
        dispatcher = dispatcher.observed_by(telemetry);
    }
    let url = StoreUrl::parse(&args.at.store).map_err(|e| Exit::Input(e.to_string()))?;
    let mut engine = setup.open(&url).map_err(|e| Exit::Input(e.to_string()))?;
    let engine: &mut dyn EngineOps = &mut engine;
    let Some(stop) = stop else {
        let due = follow_ups(engine, &dispatcher)?;
        let done = engine.drain(&dispatcher).map_err(failed)?;
        println!(
            "{}",
            serde_json::json!({
                "follow_ups": {
                    "taken": due.taken, "enqueued": due.enqueued,
                    "already_enqueued": due.already_enqueued, "failed": due.failed.len(),
                },
                "taken": done.taken, "sent": done.sent, "retried": done.retried, "dead": done.dead,
                "not_held": done.not_held,
            })
        );
        return Ok(());
    };
    let routes: Vec<String> = dispatcher
        .config()
        .channels
        .routes()
        .into_iter()
        .map(
            |(channel, url)| {
                if channel == "*" { format!("{url} (every channel)") } else { format!("`{channel}` to {url}") }
            },
        )
        .collect();
    // Operators and tests read this line as "ready".
    eprintln!("warrant scheduler: delivering {} as {}", routes.join(", "), dispatcher.config().holder);
    dispatch::run_until_stopped(stop, Duration::from_millis(args.poll_ms), || tick(engine, &dispatcher))
}

/// One pass over the scheduler's steps, in order; how much work they did (0: nothing due).
/// Due follow-ups go first, so that a follow-up cleared now is delivered in the same pass.
fn tick(engine: &mut dyn EngineOps, dispatcher: &Dispatcher) -> Result<usize, Exit> {
    let due = follow_ups(engine, dispatcher)?;
    Ok(due.enqueued + due.already_enqueued + engine.dispatch_once(dispatcher).map_err(failed)?.taken)
}

/// Clears the follow-ups due now through the outbound gate, against the ledger and the records
/// as they are now, into the outbox. A follow-up that cannot be cleared stays taken until its
/// lease expires, and is said on stderr.
fn follow_ups(engine: &mut dyn EngineOps, dispatcher: &Dispatcher) -> Result<JobsRun<String>, Exit> {
    let now = dispatch::now_ms();
    let lease_ms = i64::try_from(dispatcher.config().lease.as_millis()).unwrap_or(i64::MAX);
    let lease = Lease { holder: dispatcher.config().holder.clone(), now, until: now.saturating_add(lease_ms) };
    let run = engine.run_due(&lease, dispatcher.config().batch)?;
    for (job, why) in &run.failed {
        eprintln!("warrant scheduler: follow-up `{job}` was not cleared: {why}");
    }
    Ok(run)
}

fn failed(error: dispatch::DispatchError) -> Exit {
    Exit::Input(error.to_string())
}

fn list(args: &OutboxArgs) -> Result<(), Exit> {
    let state = match &args.state {
        None => None,
        Some(text) => Some(OutboxState::parse(text).ok_or_else(|| {
            Exit::Input(format!("`--state {text}`: give one of `queued`, `sending`, `sent`, `dead`"))
        })?),
    };
    let mut store = open(&args.at)?;
    let rows = store.outbox(state, args.limit).map_err(|e| Exit::Input(format!("store: {e}")))?;
    for row in rows {
        println!("{}", serde_json::to_string(&row).map_err(|e| Exit::Input(e.to_string()))?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(subcommand)]
        command: SchedulerCommand,
    }

    fn run_args(extra: &[&str]) -> RunArgs {
        let mut line = vec!["x", "run", "--contract", "c.toml", "--store", "sqlite:s.db"];
        line.extend_from_slice(extra);
        match Line::parse_from(line).command {
            SchedulerCommand::Run(args) => args,
            SchedulerCommand::Outbox(_) => unreachable!(),
        }
    }

    fn with_webhook(args: &RunArgs) -> Result<DispatchConfig, Exit> {
        config(args, Channels::Every(args.webhook.clone().unwrap_or_default()))
    }

    #[test]
    fn flags_become_a_checked_configuration() {
        let checked =
            with_webhook(&run_args(&["--webhook", "http://127.0.0.1:1/hook", "--attempts", "3", "--batch", "2"]))
                .unwrap();
        assert_eq!((checked.retry.attempts, checked.batch), (3, 2));
        let short_lease = run_args(&["--webhook", "http://127.0.0.1:1/hook", "--lease-ms", "100"]);
        assert!(matches!(with_webhook(&short_lease), Err(Exit::Input(m)) if m.contains("lease")));
        assert!(
            matches!(with_webhook(&run_args(&["--webhook", "mailto:x@y"])), Err(Exit::Input(m)) if m.contains("webhook"))
        );
        assert_eq!(run_args(&[]).webhook, None, "without `--webhook`, each channel's `url_env` names its webhook");
    }
}
