//! The one way an engine is made, whoever makes it (the command line, `warrant serve`'s engine
//! pool, and later the MCP gateway and the Python package): the contract (a file, or one already
//! loaded), the store (a `sqlite:PATH` or `postgres://…?schema=NAME` URL, or a store value) and
//! where the model tasks run (the contract's `[model]` under the `WARRANT_MODEL_*` environment,
//! an endpoint, a cassette, a provider, a whole `ModelSetup`, or none). Two places setting up the
//! model in two ways is how the service once ran every semantic check without one.
//!
//! Building is two steps: [`EngineBuilder::prepare`] loads the contract and resolves the model
//! once (reading the environment, loading a cassette), and the [`EngineSetup`] it returns makes
//! as many engines as its caller needs, each over its own store.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use warrant_core::Contract;
use warrant_core::contract::ModelConfig;
use warrant_model::openai::{self, EndpointConfig, OpenAiProvider};
use warrant_model::{BudgetLimits, Provider, RecordedProvider};
use warrant_store::{AnyStore, PgStore, SqliteStore, Store};

use crate::{Engine, EngineError, ModelSetup, load_contract};

/// A cassette of recorded answers to run the model tasks from, instead of an endpoint.
pub const ENV_CASSETTE: &str = "WARRANT_MODEL_CASSETTE";
/// A turn's model calls, over the contract's `[model] turn_calls`.
pub const ENV_CALLS: &str = "WARRANT_MODEL_CALLS";
/// A turn's model tokens, over the contract's `[model] turn_tokens`.
pub const ENV_TOKENS: &str = "WARRANT_MODEL_TOKENS";
/// A turn's model deadline in milliseconds, over the contract's `[model] turn_deadline_ms`.
pub const ENV_DEADLINE_MS: &str = "WARRANT_MODEL_DEADLINE_MS";

/// What stops an engine from being made.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The builder was given no contract.
    #[error("no contract was given")]
    NoContract,
    /// The store URL is not one this builder opens.
    #[error("store `{url}`: {message}")]
    StoreUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The store cannot be opened.
    #[error("store `{url}`: {message}")]
    Store {
        /// Which store (a PostgreSQL store by its schema alone: the URL may hold a password).
        url: String,
        /// Why it cannot be opened.
        message: String,
    },
    /// The model setup is wrong (a variable that is not a number, a cassette that does not read,
    /// a client that cannot be built).
    #[error("model: {0}")]
    Model(String),
    /// The contract does not load, or the engine cannot start over the store.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Where a store is: `sqlite:PATH` or `postgres://…[?schema=NAME]` (default schema `warrant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string, and the schema to use.
    Postgres {
        /// The connection string, without `schema=`.
        conninfo: String,
        /// The schema.
        schema: String,
    },
}

impl StoreUrl {
    /// Parses `sqlite:PATH` or a PostgreSQL connection string, a URI
    /// (`postgres://…[?schema=NAME]`) or libpq keywords (`host=… dbname=… [schema=NAME]`),
    /// several hosts allowed, read by [`warrant_store::Location`]; the error says what is wrong
    /// and never repeats a connection string, which may hold a password.
    pub fn parse(text: &str) -> Result<StoreUrl, BuildError> {
        match warrant_store::Location::parse(text, "warrant") {
            Ok(warrant_store::Location::Sqlite(path)) => Ok(StoreUrl::Sqlite(path)),
            Ok(warrant_store::Location::Postgres { conninfo, schema }) => Ok(StoreUrl::Postgres { conninfo, schema }),
            Err(e) => Err(BuildError::StoreUrl { url: warrant_store::shown_location(text), message: e.to_string() }),
        }
    }

    /// Opens the store (not yet migrated: the engine made over it migrates it), creating an
    /// empty one where there is none.
    pub fn open(&self) -> Result<AnyStore, BuildError> {
        self.open_as(Opening::Create)
    }

    /// Opens the store as [`StoreUrl::open`] does where it exists, and refuses where there is
    /// none (no file, no schema) rather than creating it: for whoever reads a store whole
    /// (`warrant store`), to whom a mistyped name must not look like an empty store.
    pub fn open_existing(&self) -> Result<AnyStore, BuildError> {
        self.open_as(Opening::Existing)
    }

    fn open_as(&self, opening: Opening) -> Result<AnyStore, BuildError> {
        match self {
            StoreUrl::Sqlite(path) => match opening {
                Opening::Create => SqliteStore::open(path),
                Opening::Existing => SqliteStore::open_existing(path),
            }
            .map(AnyStore::Sqlite)
            .map_err(|e| BuildError::Store { url: format!("sqlite:{}", path.display()), message: e.to_string() }),
            StoreUrl::Postgres { conninfo, schema } => match opening {
                Opening::Create => PgStore::connect(conninfo, schema),
                Opening::Existing => PgStore::connect_existing(conninfo, schema),
            }
            .map(|s| AnyStore::Postgres(Box::new(s)))
            // The connection string may hold a password: only the schema is named.
            .map_err(|e| BuildError::Store { url: format!("postgres schema `{schema}`"), message: e.to_string() }),
        }
    }
}

/// Whether opening a store creates it where there is none.
#[derive(Debug, Clone, Copy)]
enum Opening {
    Create,
    Existing,
}

/// Where an engine's model tasks run.
#[derive(Clone, Default)]
pub enum ModelSource {
    /// What the command line and the service use: `WARRANT_MODEL_CASSETTE` if set, else the
    /// endpoint of the contract's `[model]` section with each `WARRANT_MODEL_*` variable that
    /// is set over it, else none; the turn's budget from `[model]` with `WARRANT_MODEL_CALLS`,
    /// `WARRANT_MODEL_TOKENS` and `WARRANT_MODEL_DEADLINE_MS` over it.
    #[default]
    Environment,
    /// This OpenAI-compatible endpoint, with the contract's budget.
    Endpoint(EndpointConfig),
    /// Recorded answers from this cassette, for requests made with `model`.
    Cassette {
        /// The cassette file.
        path: PathBuf,
        /// The model name the recordings were made with.
        model: String,
    },
    /// This provider, shared by every engine made, with the contract's budget.
    Provider {
        /// The provider.
        provider: Arc<dyn Provider>,
        /// The model name sent with each request.
        model: String,
    },
    /// This setup as it is (its provider, budget, parallelism, prompts and task limits), for
    /// every engine made; each engine adds the store's active prompt versions and the contract's
    /// task limits, as with every other source.
    Setup(ModelSetup),
    /// No model: every semantic check fails as unfinished, so every act that needs one is
    /// asked, and a reply on a path with `claims_coverage` cannot be cleared as is.
    None,
}

impl fmt::Debug for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSource::Environment => f.write_str("Environment"),
            ModelSource::Endpoint(config) => f.debug_tuple("Endpoint").field(&config.base_url).finish(),
            ModelSource::Cassette { path, model } => {
                f.debug_struct("Cassette").field("path", path).field("model", model).finish()
            }
            ModelSource::Provider { model, .. } => f.debug_struct("Provider").field("model", model).finish(),
            ModelSource::Setup(setup) => f.debug_tuple("Setup").field(setup).finish(),
            ModelSource::None => f.write_str("None"),
        }
    }
}

/// The model an [`EngineSetup`] gives each engine it makes, resolved once.
#[derive(Clone)]
pub struct ModelPlan {
    /// The setup each engine gets a copy of; `None` without a model.
    setup: Option<ModelSetup>,
    /// Where it runs, for people: never the key.
    shown: String,
}

impl fmt::Debug for ModelPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelPlan").field("model", &self.shown).field("limits", &self.limits()).finish_non_exhaustive()
    }
}

/// `model `NAME` at URL`, or why there is none; never the key.
impl fmt::Display for ModelPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl ModelPlan {
    /// Whether the model tasks have somewhere to run.
    pub fn is_configured(&self) -> bool {
        self.setup.is_some()
    }

    /// The turn's budget each engine runs with.
    pub fn limits(&self) -> BudgetLimits {
        self.setup.as_ref().map(|setup| setup.limits).unwrap_or_default()
    }

    /// `provider` asked with `model`, within `limits`, shown as `shown`.
    fn provided(provider: Arc<dyn Provider>, model: &str, limits: BudgetLimits, shown: String) -> ModelPlan {
        let mut setup = ModelSetup::new(Box::new(provider), model);
        setup.limits = limits;
        ModelPlan { setup: Some(setup), shown }
    }

    fn none(why: &str) -> ModelPlan {
        ModelPlan {
            setup: None,
            shown: format!(
                "no model is configured ({why}): every semantic check fails, so the acts that need one are asked, and a reply on a path with `claims_coverage` goes out as fallback copy"
            ),
        }
    }

    fn endpoint(config: EndpointConfig, limits: BudgetLimits) -> Result<ModelPlan, BuildError> {
        let key = if config.key.is_some() { "with a key" } else { "without a key" };
        let shown = format!("model `{}` at {} ({key})", config.model, config.base_url);
        let model = config.model.clone();
        let provider = OpenAiProvider::new(config).map_err(|e| BuildError::Model(e.to_string()))?;
        Ok(ModelPlan::provided(Arc::new(provider), &model, limits, shown))
    }

    fn cassette(path: &Path, model: &str, limits: BudgetLimits) -> Result<ModelPlan, BuildError> {
        let provider = RecordedProvider::load(path).map_err(|e| BuildError::Model(e.to_string()))?;
        let shown = format!("model `{model}` answered from the cassette `{}`", path.display());
        Ok(ModelPlan::provided(Arc::new(provider), model, limits, shown))
    }

    /// The setup of one engine; `None` without a model.
    fn setup(&self) -> Option<ModelSetup> {
        self.setup.clone()
    }
}

/// Reads one variable of the process (or of a test's own environment).
type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

#[derive(Clone)]
enum ContractSource {
    File(PathBuf),
    Loaded { contract: Box<Contract>, folder: PathBuf },
}

/// Makes engines: say which contract, where the model runs, then [`prepare`](Self::prepare) or
/// go straight to [`open`](Self::open) a store URL or [`build`](Self::build) over a store.
#[derive(Clone)]
pub struct EngineBuilder {
    contract: Option<ContractSource>,
    model: ModelSource,
    env: Env,
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder").field("model", &self.model).finish_non_exhaustive()
    }
}

impl Default for EngineBuilder {
    fn default() -> EngineBuilder {
        EngineBuilder::new()
    }
}

impl EngineBuilder {
    /// A builder with no contract yet, the model from the environment, and the process's
    /// environment.
    pub fn new() -> EngineBuilder {
        EngineBuilder {
            contract: None,
            model: ModelSource::Environment,
            env: Arc::new(|name| std::env::var(name).ok()),
        }
    }

    /// The contract file (its companion files beside it).
    pub fn contract_file(mut self, path: impl Into<PathBuf>) -> EngineBuilder {
        self.contract = Some(ContractSource::File(path.into()));
        self
    }

    /// A contract already loaded, from `folder` (where its data files are).
    pub fn contract(mut self, contract: Contract, folder: impl Into<PathBuf>) -> EngineBuilder {
        self.contract = Some(ContractSource::Loaded { contract: Box::new(contract), folder: folder.into() });
        self
    }

    /// Where the model tasks run (by default [`ModelSource::Environment`]).
    pub fn model(mut self, source: ModelSource) -> EngineBuilder {
        self.model = source;
        self
    }

    /// Reads the `WARRANT_MODEL_*` variables through `env` instead of the process's
    /// environment.
    pub fn environment(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> EngineBuilder {
        self.env = Arc::new(env);
        self
    }

    /// Loads the contract and resolves the model, once.
    pub fn prepare(self) -> Result<EngineSetup, BuildError> {
        let (contract, folder) = match self.contract.ok_or(BuildError::NoContract)? {
            ContractSource::File(path) => load_contract(&path)?,
            ContractSource::Loaded { contract, folder } => (*contract, folder),
        };
        let config = contract.model();
        let contract_limits = BudgetLimits::from_contract(config);
        let model = match self.model {
            ModelSource::Environment => from_environment(config, self.env.as_ref())?,
            ModelSource::Endpoint(endpoint) => ModelPlan::endpoint(endpoint, contract_limits)?,
            ModelSource::Cassette { path, model } => ModelPlan::cassette(&path, &model, contract_limits)?,
            ModelSource::Provider { provider, model } => {
                let shown = format!("model `{model}` from a provider given by the caller");
                ModelPlan::provided(provider, &model, contract_limits, shown)
            }
            ModelSource::Setup(setup) => {
                let shown = format!("model `{}` from a setup given by the caller", setup.model);
                ModelPlan { setup: Some(setup), shown }
            }
            ModelSource::None => ModelPlan::none("none was asked for"),
        };
        Ok(EngineSetup { contract: Arc::new(contract), folder, model })
    }

    /// An engine over the store `url` names.
    pub fn open(self, url: &str) -> Result<Engine<AnyStore>, BuildError> {
        let url = StoreUrl::parse(url)?;
        self.prepare()?.open(&url)
    }

    /// An engine over `store`.
    pub fn build<S: Store>(self, store: S) -> Result<Engine<S>, BuildError> {
        self.prepare()?.build(store)
    }
}

/// The model the environment names over the contract's `[model]`.
fn from_environment(
    config: &ModelConfig,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<ModelPlan, BuildError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let limits = budget_from_env(BudgetLimits::from_contract(config), &var)?;
    if let Some(path) = var(ENV_CASSETTE) {
        let model = var(openai::ENV_MODEL).unwrap_or_else(|| "default".to_owned());
        return ModelPlan::cassette(Path::new(&path), &model, limits);
    }
    match EndpointConfig::resolve(config, &|name| env(name)) {
        Some(endpoint) => ModelPlan::endpoint(endpoint, limits),
        None => Ok(ModelPlan::none(&format!(
            "neither the contract's `[model] base_url` nor `{}` names an endpoint, and `{ENV_CASSETTE}` is unset",
            openai::ENV_BASE_URL
        ))),
    }
}

/// A turn's budget: `base` (the contract's, or the defaults) with each of
/// `WARRANT_MODEL_CALLS`, `WARRANT_MODEL_TOKENS` and `WARRANT_MODEL_DEADLINE_MS` that is set over it.
fn budget_from_env(base: BudgetLimits, var: &dyn Fn(&str) -> Option<String>) -> Result<BudgetLimits, BuildError> {
    let read = |name: &str| -> Result<Option<u64>, BuildError> {
        var(name)
            .map(|text| {
                text.parse::<u64>().map_err(|_| BuildError::Model(format!("`{name}={text}` is not a whole number")))
            })
            .transpose()
    };
    let narrow = |n: u64, name: &str| u32::try_from(n).map_err(|_| BuildError::Model(format!("`{name}` is too large")));
    let mut limits = base;
    if let Some(n) = read(ENV_CALLS)? {
        limits.calls = narrow(n, ENV_CALLS)?;
    }
    if let Some(n) = read(ENV_TOKENS)? {
        limits.tokens = narrow(n, ENV_TOKENS)?;
    }
    if let Some(n) = read(ENV_DEADLINE_MS)? {
        limits.deadline = std::time::Duration::from_millis(n);
    }
    Ok(limits)
}

/// A loaded contract and a resolved model: makes engines, each over its own store, all with the
/// same model.
#[derive(Debug, Clone)]
pub struct EngineSetup {
    /// Loaded once; every engine made by this setup shares it.
    contract: Arc<Contract>,
    folder: PathBuf,
    model: ModelPlan,
}

impl EngineSetup {
    /// The contract.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Where the model tasks run.
    pub fn model(&self) -> &ModelPlan {
        &self.model
    }

    /// An engine over `store`: migrated, seeded, with the model and the prompt versions the
    /// store's registry made active.
    pub fn build<S: Store>(&self, store: S) -> Result<Engine<S>, BuildError> {
        let engine = Engine::new(Arc::clone(&self.contract), &self.folder, store)?;
        self.with_model(engine)
    }

    /// Another engine over a store that [`EngineSetup::build`] of this setup has already made
    /// ready, such as a second connection to the same database: the store is not migrated or
    /// seeded again and no data file is read; only the active prompt versions are loaded.
    pub fn attach<S: Store>(&self, store: S) -> Result<Engine<S>, BuildError> {
        self.with_model(Engine::attached(Arc::clone(&self.contract), &self.folder, store))
    }

    fn with_model<S: Store>(&self, engine: Engine<S>) -> Result<Engine<S>, BuildError> {
        Ok(match self.model.setup() {
            Some(setup) => engine.with_model(setup)?,
            None => engine,
        })
    }

    /// An engine over the store `url` names.
    pub fn open(&self, url: &StoreUrl) -> Result<Engine<AnyStore>, BuildError> {
        self.build(url.open()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_parse() {
        assert_eq!(StoreUrl::parse("sqlite:/tmp/x.db").ok(), Some(StoreUrl::Sqlite("/tmp/x.db".into())));
        assert_eq!(
            StoreUrl::parse("postgres://postgres@127.0.0.1/test?schema=w1&sslmode=disable").ok(),
            Some(StoreUrl::Postgres {
                conninfo: "postgres://postgres@127.0.0.1/test?sslmode=disable".into(),
                schema: "w1".into()
            })
        );
        let error = |text: &str| StoreUrl::parse(text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error("mysql://x").contains("give `sqlite:PATH`"));
        assert!(error("postgres://x?schema=Bad-Name").contains("lowercase SQL name"));
        assert!(error("sqlite:").contains("needs a path"));
        // libpq's keyword form, several hosts; a password never shown.
        assert_eq!(
            StoreUrl::parse("host=127.0.0.1,localhost dbname=test schema=w2").ok(),
            Some(StoreUrl::Postgres { conninfo: "host=127.0.0.1,localhost dbname=test".into(), schema: "w2".into() })
        );
        let refused = error("postgres://u:hunter2@h/db?colour=blue");
        assert!(refused.contains("colour") && !refused.contains("hunter2"), "{refused}");
    }

    #[test]
    fn the_environment_names_the_model_over_the_contract_and_never_shows_the_key() {
        let contract = ModelConfig::default();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
        };
        let none = from_environment(&contract, &env(&[])).unwrap();
        assert!(!none.is_configured());
        assert!(none.to_string().starts_with("no model is configured"), "{none}");
        let set = env(&[
            ("WARRANT_MODEL_BASE_URL", "http://127.0.0.1:9/v1"),
            ("WARRANT_MODEL", "smollm2"),
            ("WARRANT_MODEL_KEY", "sk-secret"),
            ("WARRANT_MODEL_CALLS", "5"),
        ]);
        let plan = from_environment(&contract, &set).unwrap();
        assert!(plan.is_configured());
        assert_eq!(plan.to_string(), "model `smollm2` at http://127.0.0.1:9/v1 (with a key)");
        assert!(!format!("{plan} {plan:?}").contains("sk-secret"));
        assert_eq!(plan.limits().calls, 5);
        let bad = from_environment(&contract, &env(&[("WARRANT_MODEL_TOKENS", "lots")])).err().unwrap();
        assert!(bad.to_string().contains("`WARRANT_MODEL_TOKENS=lots` is not a whole number"), "{bad}");
        let missing = from_environment(&contract, &env(&[("WARRANT_MODEL_CASSETTE", "/nonexistent/c.jsonl")]));
        assert!(matches!(missing, Err(BuildError::Model(m)) if m.contains("/nonexistent/c.jsonl")));
    }
}
