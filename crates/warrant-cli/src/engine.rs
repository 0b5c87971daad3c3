//! The engine over a store named on the command line (`sqlite:PATH` or `postgres://…`), made
//! by the engine's one builder, and its operations without its store type, for the commands
//! that run on it (turns, guards, records, the scheduler, the outbound gate).

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use warrant_core::ladder::{Bars, CorpusRun, Label};
use warrant_engine::dispatch::{DispatchError, Dispatched, Dispatcher};
use warrant_engine::{Engine, GuardError, GuardStatus, OutcomeReply, OutcomeRow, TurnResult};
use warrant_store::{AnyStore, AuditResult, AuditedFinding, Store};
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
    fn guards(&mut self) -> &mut dyn GuardOps;
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

    fn guards(&mut self) -> &mut dyn GuardOps {
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

/// The ladder's operations, without the store's type.
pub(crate) trait GuardOps {
    fn findings(&mut self) -> Result<Vec<AuditedFinding>, GuardError>;
    fn audit(&mut self, finding: &str, label: Label, who: &str, at: &str) -> Result<AuditResult, GuardError>;
    fn status(&mut self) -> Result<GuardStatus, GuardError>;
    fn sample(&mut self, count: usize, at: &str) -> Result<usize, GuardError>;
    fn promote(
        &mut self,
        corpus: CorpusRun,
        bars: Bars,
        who: &str,
        at: &str,
    ) -> Result<Result<serde_json::Value, (String, String)>, GuardError>;
    fn demote(&mut self, who: &str, at: &str, reason: &str) -> Result<usize, GuardError>;
}

impl<S: Store> GuardOps for Engine<S> {
    fn findings(&mut self) -> Result<Vec<AuditedFinding>, GuardError> {
        self.guard_findings()
    }

    fn audit(&mut self, finding: &str, label: Label, who: &str, at: &str) -> Result<AuditResult, GuardError> {
        self.guard_audit(finding, label, who, at)
    }

    fn status(&mut self) -> Result<GuardStatus, GuardError> {
        self.guard_status()
    }

    fn sample(&mut self, count: usize, at: &str) -> Result<usize, GuardError> {
        self.guard_sample(count, at)
    }

    fn promote(
        &mut self,
        corpus: CorpusRun,
        bars: Bars,
        who: &str,
        at: &str,
    ) -> Result<Result<serde_json::Value, (String, String)>, GuardError> {
        Ok(match self.guard_promote(corpus, bars, who, at)? {
            Ok(record) => Ok(serde_json::to_value(record).unwrap_or_default()),
            Err(refusal) => Err((refusal.code().as_str().to_owned(), refusal.to_string())),
        })
    }

    fn demote(&mut self, who: &str, at: &str, reason: &str) -> Result<usize, GuardError> {
        self.guard_demote(who, at, reason)
    }
}
