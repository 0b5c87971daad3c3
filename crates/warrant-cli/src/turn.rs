//! `warrant turn`, `warrant effect-outcome` and `warrant replay`: the engine over a store named
//! on the command line (`sqlite:PATH` or `postgres://…`).

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use warrant_engine::{Engine, ModelSetup, TurnResult, load_contract};
use warrant_model::openai::{EndpointConfig, OpenAiProvider};
use warrant_model::{BudgetLimits, RecordedProvider};
use warrant_store::{PgStore, SqliteStore, Store};

use crate::Exit;

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string, and the schema to use.
    Postgres { conninfo: String, schema: String },
}

impl StoreUrl {
    /// Parses `sqlite:PATH` or `postgres://…[?schema=NAME]` (default schema `warrant`).
    pub(crate) fn parse(text: &str) -> Result<StoreUrl, Exit> {
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(Exit::Input("`--store sqlite:` needs a path".into()));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            let (base, query) = text.split_once('?').unwrap_or((text, ""));
            let mut schema = String::from("warrant");
            let mut rest = Vec::new();
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                match pair.strip_prefix("schema=") {
                    Some(name) => schema = name.to_owned(),
                    None => rest.push(pair),
                }
            }
            if schema.is_empty() || !schema.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                return Err(Exit::Input(format!("`schema={schema}` is not a lowercase SQL name")));
            }
            let conninfo = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
            return Ok(StoreUrl::Postgres { conninfo, schema });
        }
        Err(Exit::Input(format!("`--store {text}`: give `sqlite:PATH` or `postgres://…`")))
    }
}

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
}

/// Runs `f` with an engine over the named store.
pub(crate) fn with_engine<T>(
    args: &StoreArgs,
    f: impl FnOnce(&mut dyn EngineOps) -> Result<T, Exit>,
) -> Result<T, Exit> {
    let url = StoreUrl::parse(&args.store)?;
    let (contract, folder) = load_contract(&args.contract).map_err(|e| Exit::Input(e.to_string()))?;
    match url {
        StoreUrl::Sqlite(path) => {
            let store =
                SqliteStore::open(&path).map_err(|e| Exit::Input(format!("store `{}`: {e}", path.display())))?;
            let engine = Engine::new(contract, &folder, store).map_err(|e| Exit::Input(e.to_string()))?;
            f(&mut with_model(engine)?)
        }
        StoreUrl::Postgres { conninfo, schema } => {
            let store = PgStore::connect(&conninfo, &schema).map_err(|e| Exit::Input(format!("store: {e}")))?;
            let engine = Engine::new(contract, &folder, store).map_err(|e| Exit::Input(e.to_string()))?;
            f(&mut with_model(engine)?)
        }
    }
}

/// A cassette to answer model checks from, instead of a live endpoint.
pub(crate) const ENV_CASSETTE: &str = "WARRANT_MODEL_CASSETTE";

/// The model the environment names: a cassette (`WARRANT_MODEL_CASSETTE`), or an
/// OpenAI-compatible endpoint (`WARRANT_MODEL_BASE_URL`, `WARRANT_MODEL`, `WARRANT_MODEL_KEY`),
/// each over what the contract's `[model]` section says. Without either, every check fails as
/// unfinished and the acts that need one are asked.
pub(crate) fn model_from_env(config: &warrant_core::contract::ModelConfig) -> Result<Option<ModelSetup>, Exit> {
    if let Some(path) = std::env::var_os(ENV_CASSETTE).filter(|p| !p.is_empty()) {
        let provider = RecordedProvider::load(Path::new(&path)).map_err(|e| Exit::Input(e.to_string()))?;
        let model = std::env::var(warrant_model::openai::ENV_MODEL).unwrap_or_else(|_| "default".to_owned());
        return Ok(Some(ModelSetup::new(Box::new(provider), &model)));
    }
    let Some(config) = EndpointConfig::resolve(config, &|name| std::env::var(name).ok()) else { return Ok(None) };
    let model = config.model.clone();
    let provider = OpenAiProvider::new(config).map_err(|e| Exit::Input(e.to_string()))?;
    Ok(Some(ModelSetup::new(Box::new(provider), &model)))
}

/// A turn's model budget from `WARRANT_MODEL_CALLS`, `WARRANT_MODEL_TOKENS` and
/// `WARRANT_MODEL_DEADLINE_MS`, each defaulting to `base`'s (the contract's, or the defaults).
pub(crate) fn budget_from_env(base: BudgetLimits) -> Result<BudgetLimits, Exit> {
    let read = |name: &str| -> Result<Option<u64>, Exit> {
        match std::env::var(name) {
            Ok(text) if !text.is_empty() => {
                text.parse::<u64>().map(Some).map_err(|_| Exit::Input(format!("`{name}={text}` is not a whole number")))
            }
            _ => Ok(None),
        }
    };
    let mut limits = base;
    let narrow = |n: u64, name: &str| u32::try_from(n).map_err(|_| Exit::Input(format!("`{name}` is too large")));
    if let Some(n) = read("WARRANT_MODEL_CALLS")? {
        limits.calls = narrow(n, "WARRANT_MODEL_CALLS")?;
    }
    if let Some(n) = read("WARRANT_MODEL_TOKENS")? {
        limits.tokens = narrow(n, "WARRANT_MODEL_TOKENS")?;
    }
    if let Some(n) = read("WARRANT_MODEL_DEADLINE_MS")? {
        limits.deadline = std::time::Duration::from_millis(n);
    }
    Ok(limits)
}

pub(crate) fn with_model<S: Store>(engine: Engine<S>) -> Result<Engine<S>, Exit> {
    let config = engine.contract().model().clone();
    match model_from_env(&config)? {
        Some(mut model) => {
            model.limits = budget_from_env(BudgetLimits::from_contract(&config))?;
            engine.with_model(model).map_err(|e| Exit::Input(e.to_string()))
        }
        None => Ok(engine),
    }
}

/// The engine's operations, without its store type.
pub(crate) trait EngineOps {
    fn turn(&mut self, json: &str) -> Result<TurnResult, Exit>;
    fn outcome(&mut self, effect: &str, outcome: &str) -> Result<serde_json::Value, Exit>;
    fn replay(&mut self) -> Result<warrant_engine::ReplayReport, Exit>;
    fn guards(&mut self) -> &mut dyn crate::guard::GuardOps;
    /// Clears the follow-ups due under `lease` into the outbox.
    fn run_due(
        &mut self,
        lease: &warrant_store::Lease,
        limit: usize,
    ) -> Result<warrant_engine::outbox::JobsRun<String>, Exit>;
    /// The store, for the dispatcher.
    fn store(&mut self) -> &mut dyn Store;
}

impl<S: Store> EngineOps for Engine<S> {
    fn turn(&mut self, json: &str) -> Result<TurnResult, Exit> {
        Engine::turn(self, json).map_err(|e| Exit::Input(e.to_string()))
    }

    fn outcome(&mut self, effect: &str, outcome: &str) -> Result<serde_json::Value, Exit> {
        self.report_outcome(effect, outcome).map_err(|e| Exit::Input(e.to_string()))
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

    fn store(&mut self) -> &mut dyn Store {
        self.store_mut()
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
        let result = engine.turn(&json)?;
        println!("{}", result.to_json());
        match result {
            TurnResult::Decided { .. } => Ok(()),
            TurnResult::Rejected(_) => Err(Exit::Quiet(2)),
        }
    })
}

pub(crate) fn run_outcome(args: &OutcomeArgs) -> Result<(), Exit> {
    with_engine(&args.at, |engine| {
        let result = engine.outcome(&args.effect, &args.outcome)?;
        println!("{result}");
        if result.get("error").is_some() { Err(Exit::Quiet(2)) } else { Ok(()) }
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
        println!(
            "{} turns replayed, {} identical, {} verdicts changed",
            report.turns,
            report.identical,
            report.changes.len()
        );
        if report.changes.is_empty() { Ok(()) } else { Err(Exit::Failed) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_parse() {
        assert_eq!(StoreUrl::parse("sqlite:/tmp/x.db").ok(), Some(StoreUrl::Sqlite("/tmp/x.db".into())));
        assert_eq!(
            StoreUrl::parse("postgres://postgres@127.0.0.1/test?schema=w1").ok(),
            Some(StoreUrl::Postgres { conninfo: "postgres://postgres@127.0.0.1/test".into(), schema: "w1".into() })
        );
        assert!(StoreUrl::parse("mysql://x").is_err());
        assert!(StoreUrl::parse("postgres://x?schema=Bad-Name").is_err());
    }
}
