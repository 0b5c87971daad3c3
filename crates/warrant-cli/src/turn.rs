//! `warrant turn`, `warrant effect-outcome` and `warrant replay`: the engine over a store named
//! on the command line (`sqlite:PATH` or `postgres://…`), made by the engine's one builder.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use warrant_engine::dispatch::{DispatchError, Dispatched, Dispatcher};
use warrant_engine::{Engine, OutcomeReply, OutcomeRow, TurnResult};
use warrant_store::{AnyStore, Store};
use warrant_telemetry::{Parent, Telemetry, TurnTrace};

use crate::Exit;

#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// The contract file.
    #[arg(long)]
    pub(crate) contract: PathBuf,
    /// The store: `sqlite:PATH` or `postgres://…[?schema=NAME]`.
    #[arg(long)]
    pub(crate) store: String,
}

#[derive(Debug, Args)]
pub(crate) struct TurnArgs {
    #[command(flatten)]
    pub(crate) at: StoreArgs,
    /// The turn request (JSON), or `-` for standard input.
    #[arg(long, default_value = "-")]
    pub(crate) request: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct OutcomeArgs {
    #[command(flatten)]
    pub(crate) at: StoreArgs,
    /// The effect's id.
    #[arg(long)]
    pub(crate) effect: String,
    /// `done`, `failed` or `unknown`.
    #[arg(long)]
    pub(crate) outcome: String,
    /// The rows as the system of record left them: a JSON array of `{"table","key","value"}`,
    /// from a file or `-` for standard input.
    #[arg(long)]
    pub(crate) rows: Option<PathBuf>,
}

/// An engine for the contract and store `args` name, with the model the contract's `[model]`
/// and the `WARRANT_MODEL_*` environment set up (the same builder `warrant serve` uses).
pub(crate) fn open_engine(args: &StoreArgs) -> Result<Engine<AnyStore>, Exit> {
    crate::signals::hold()?;
    Engine::builder().contract_file(&args.contract).open(&args.store).map_err(|e| Exit::Input(e.to_string()))
}

/// Runs `f` with an engine over the named store.
pub(crate) fn with_engine<T>(
    args: &StoreArgs,
    f: impl FnOnce(&mut dyn EngineOps) -> Result<T, Exit>,
) -> Result<T, Exit> {
    f(&mut open_engine(args)?)
}

/// The engine's operations, without its store type.
pub(crate) trait EngineOps {
    fn turn(&mut self, json: &str) -> Result<TurnResult, Exit>;
    /// A turn with its span exported, a child of `parent`.
    fn turn_traced(&mut self, json: &str, telemetry: &Telemetry, parent: &Parent) -> Result<TurnResult, Exit>;
    fn outcome(&mut self, effect: &str, outcome: &str, rows: &[OutcomeRow]) -> Result<OutcomeReply, Exit>;
    fn replay(&mut self) -> Result<warrant_engine::ReplayReport, Exit>;
    fn guards(&mut self) -> &mut dyn crate::guard::GuardOps;
    /// Clears the follow-ups due under `lease` into the outbox.
    fn run_due(
        &mut self,
        lease: &warrant_store::Lease,
        limit: usize,
    ) -> Result<warrant_engine::outbox::JobsRun<String>, Exit>;
    /// Delivers one batch of the outbox's due messages.
    fn dispatch_once(&mut self, dispatcher: &Dispatcher) -> Result<Dispatched, DispatchError>;
    /// Delivers what is due now, each message at most once.
    fn drain(&mut self, dispatcher: &Dispatcher) -> Result<Dispatched, DispatchError>;
}

impl<S: Store> EngineOps for Engine<S> {
    fn turn(&mut self, json: &str) -> Result<TurnResult, Exit> {
        Engine::turn(self, json).map_err(|e| Exit::Input(e.to_string()))
    }

    fn turn_traced(&mut self, json: &str, telemetry: &Telemetry, parent: &Parent) -> Result<TurnResult, Exit> {
        let (started, clock) = (std::time::SystemTime::now(), std::time::Instant::now());
        let result = Engine::turn(self, json);
        let turn = TurnTrace {
            started,
            elapsed: clock.elapsed(),
            tenant: None,
            request: json,
            result: result.as_ref(),
            tasks: self.turn_tasks(),
        };
        telemetry.turn(parent, &turn);
        result.map_err(|e| Exit::Input(e.to_string()))
    }

    fn outcome(&mut self, effect: &str, outcome: &str, rows: &[OutcomeRow]) -> Result<OutcomeReply, Exit> {
        self.report_outcome(effect, outcome, rows).map_err(|e| Exit::Input(e.to_string()))
    }

    fn replay(&mut self) -> Result<warrant_engine::ReplayReport, Exit> {
        Engine::replay(self).map_err(|e| Exit::Input(e.to_string()))
    }

    fn guards(&mut self) -> &mut dyn crate::guard::GuardOps {
        self
    }

    fn run_due(
        &mut self,
        lease: &warrant_store::Lease,
        limit: usize,
    ) -> Result<warrant_engine::outbox::JobsRun<String>, Exit> {
        Engine::run_due(self, lease, limit).map_err(|e| Exit::Input(e.to_string()))
    }

    fn dispatch_once(&mut self, dispatcher: &Dispatcher) -> Result<Dispatched, DispatchError> {
        Engine::dispatch_once(self, dispatcher)
    }

    fn drain(&mut self, dispatcher: &Dispatcher) -> Result<Dispatched, DispatchError> {
        Engine::drain(self, dispatcher)
    }
}

/// Reads a request from a file or standard input. A request that is not UTF-8 is bad input like
/// any other: its error object goes to standard output, exit status 2.
pub(crate) fn read_input(path: &Path) -> Result<String, Exit> {
    let bytes = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes)?;
        bytes
    } else {
        std::fs::read(path).map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", path.display())))?
    };
    String::from_utf8(bytes).map_err(|_| {
        let error = warrant_core::request::RequestError {
            code: warrant_core::ReasonCode::InvalidInput,
            field: String::new(),
            message: "the request is not UTF-8".into(),
        };
        println!("{}", serde_json::json!({"error": error}));
        Exit::Quiet(2)
    })
}

pub(crate) fn run_turn(args: &TurnArgs) -> Result<(), Exit> {
    let json = read_input(&args.request)?;
    with_engine(&args.at, |engine| {
        let result = match crate::telemetry::get() {
            None => engine.turn(&json)?,
            Some(telemetry) => {
                // A caller that traces passes its span as `TRACEPARENT`, as tools that start
                // processes do; the turn's span is then its child.
                let traceparent = std::env::var("TRACEPARENT").unwrap_or_default();
                let parent = Parent::from_headers([("traceparent", traceparent.as_str())]);
                engine.turn_traced(&json, &telemetry, &parent)?
            }
        };
        println!("{}", result.to_json());
        match result {
            TurnResult::Decided { .. } => Ok(()),
            TurnResult::Rejected(_) => Err(Exit::Quiet(2)),
        }
    })
}

pub(crate) fn run_outcome(args: &OutcomeArgs) -> Result<(), Exit> {
    let rows = match &args.rows {
        None => Vec::new(),
        Some(path) => match warrant_engine::outcome_rows(&read_input(path)?) {
            Ok(rows) => rows,
            Err(error) => {
                // Bad input, answered as the route answers it: the error JSON, exit status 2.
                println!("{}", serde_json::json!({"error": error}));
                return Err(Exit::Quiet(2));
            }
        },
    };
    with_engine(&args.at, |engine| {
        let reply = engine.outcome(&args.effect, &args.outcome, &rows)?;
        println!("{}", serde_json::to_value(&reply).map_err(|e| Exit::Input(e.to_string()))?);
        if matches!(reply, OutcomeReply::Refused { .. }) { Err(Exit::Quiet(2)) } else { Ok(()) }
    })
}

pub(crate) fn run_replay(args: &StoreArgs) -> Result<(), Exit> {
    with_engine(args, |engine| {
        let report = engine.replay()?;
        for change in &report.changes {
            println!(
                "changed: {} {} act {} `{}`: {} -> {}",
                change.conversation, change.turn, change.act, change.op, change.before, change.after
            );
        }
        // What the effects' outcomes found: shown beside the turns, never a changed verdict.
        for found in &report.findings {
            for field in &found.finding.fields {
                let show =
                    |v: &Option<serde_json::Value>| v.as_ref().map_or_else(|| "absent".to_owned(), |v| v.to_string());
                println!(
                    "{}: {} {} effect {} `{}`: {}/{} `{}` predicted {}, reported {}",
                    found.finding.code,
                    found.conversation,
                    found.turn,
                    found.effect,
                    found.op,
                    field.table,
                    field.key,
                    field.path,
                    show(&field.predicted),
                    show(&field.reported)
                );
            }
        }
        println!(
            "{} turns replayed, {} identical, {} verdicts changed",
            report.turns,
            report.identical,
            report.changes.len()
        );
        if report.changes.is_empty() { Ok(()) } else { Err(Exit::Failed) }
    })
}
