//! The HTTP API and the review page. Only this crate knows HTTP types.
//!
//! Every request of a tenant is served by an engine over that tenant's own store (its own
//! SQLite file or PostgreSQL schema), chosen by the API key alone: there is no tenant column a
//! query could forget. The synchronous engine runs on blocking threads, a few engines per
//! tenant. A request is committed whole or not at all: each one is one engine call, and the
//! engine commits a turn in one transaction.
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

mod api;
mod ladder;
mod metrics;
mod pool;
mod records;
mod request;
pub mod tenants;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use api::{ROUTES, router};
pub use pool::PoolError;
pub use tenants::{StoreLocation, TenantName, add_tenant, list_tenants, revoke_tenant, rotate_key};
pub use warrant_store::AnyStore;

/// What stops the server from starting.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration is wrong (a store location, a tenant name, a setting).
    #[error("{0}")]
    Config(String),
    /// The registry or a tenant's store failed.
    #[error("store: {0}")]
    Store(#[from] warrant_store::StoreError),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] warrant_engine::EngineError),
    /// Boxed: the builder's error is as large as the engine's, and the enum would be larger
    /// still beside the others.
    #[error(transparent)]
    Build(Box<warrant_engine::BuildError>),
    /// Input or output failed (the runtime, the socket).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The listening address cannot be bound (taken, not this machine's, not permitted).
    #[error("cannot listen on `{addr}`: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why it cannot be bound.
        source: std::io::Error,
    },
}

impl From<warrant_engine::BuildError> for ServerError {
    fn from(error: warrant_engine::BuildError) -> ServerError {
        ServerError::Build(Box::new(error))
    }
}

/// How a server is set up.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The contract file.
    pub contract: PathBuf,
    /// `sqlite:FOLDER` or `postgres://…[?schema=NAME]`.
    pub store: String,
    /// The address to listen on; port 0 picks a free one.
    pub listen: String,
    /// Engines (store connections) per tenant.
    pub engines_per_tenant: usize,
    /// The largest request body, in bytes.
    pub body_limit: usize,
    /// Where the model tasks run; by default the contract's `[model]` with the `WARRANT_MODEL_*`
    /// environment over it, as on the command line.
    pub model: warrant_engine::ModelSource,
    /// Where spans of requests and turns go; `None` exports nothing.
    pub telemetry: Option<Arc<warrant_telemetry::Telemetry>>,
}

impl ServeConfig {
    /// A configuration with the default pool size (4 engines per tenant, on either store: on
    /// SQLite too, whose commits from several engines are grouped) and body limit (1 MiB).
    pub fn new(contract: PathBuf, store: String, listen: String) -> ServeConfig {
        ServeConfig {
            contract,
            store,
            listen,
            engines_per_tenant: 4,
            body_limit: 1 << 20,
            model: warrant_engine::ModelSource::Environment,
            telemetry: None,
        }
    }
}

/// What every handler shares.
#[derive(Clone, Debug)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pools: Arc<pool::Pools>,
    /// `None` only while the state is dropped. Read on every request, never cached, so that a
    /// rotated or revoked key stops working at once.
    registry: Arc<Mutex<Option<warrant_store::Registry>>>,
    /// Whether the registry is read on the request's own thread ([`Registry::reads_without_waiting`])
    /// rather than on the blocking pool.
    ///
    /// [`Registry::reads_without_waiting`]: warrant_store::Registry::reads_without_waiting
    registry_inline: bool,
    metrics: metrics::Metrics,
    body_limit: usize,
    telemetry: Option<Arc<warrant_telemetry::Telemetry>>,
}

impl AppState {
    /// Loads the contract, resolves the model (through the engine's one builder, as the command
    /// line does) and opens the registry.
    pub fn new(config: &ServeConfig) -> Result<AppState, ServerError> {
        let location = StoreLocation::parse(&config.store)?;
        let setup =
            warrant_engine::Engine::builder().contract_file(&config.contract).model(config.model.clone()).prepare()?;
        let registry = location.registry()?;
        let registry_inline = registry.reads_without_waiting();
        Ok(AppState {
            inner: Arc::new(Inner {
                pools: Arc::new(pool::Pools::new(setup, location, config.engines_per_tenant)),
                registry: Arc::new(Mutex::new(Some(registry))),
                registry_inline,
                metrics: metrics::Metrics::default(),
                body_limit: config.body_limit,
                telemetry: config.telemetry.clone(),
            }),
        })
    }
}

impl AppState {
    /// Where the model tasks of this server's engines run.
    pub fn model(&self) -> &warrant_engine::ModelPlan {
        self.inner.pools.setup().model()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(mut registry) = self.registry.lock() {
            drop_off_runtime(registry.take());
        }
    }
}

/// Drops `value` on a thread of its own when called on an async runtime's thread: the blocking
/// PostgreSQL client runs a runtime of its own and may not be dropped on another's thread.
pub(crate) fn drop_off_runtime<T: Send + 'static>(value: T) {
    if tokio::runtime::Handle::try_current().is_ok() {
        let _ = std::thread::spawn(move || drop(value)).join();
    } else {
        drop(value);
    }
}

/// A bound server: its address, where its model runs, and the future that serves.
type Bound<F> = (SocketAddr, warrant_engine::ModelPlan, F);

/// Binds the listener and returns its address and model with the future that serves until
/// `shutdown` resolves.
pub async fn bind(
    config: &ServeConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Bound<impl std::future::Future<Output = std::io::Result<()>>>, ServerError> {
    // Opening the registry blocks (the PostgreSQL client runs a runtime of its own).
    let owned = config.clone();
    let state = tokio::task::spawn_blocking(move || AppState::new(&owned))
        .await
        .map_err(|e| ServerError::Config(format!("the registry task did not finish: {e}")))??;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|source| ServerError::Bind { addr: config.listen.clone(), source })?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        // warrant serves plain HTTP: beyond this machine, keys and turns cross the network as
        // written unless a TLS proxy sits in front.
        tracing::warn!(
            target: "warrant::serve",
            "listening on {addr} without TLS: API keys and turns cross the network in the clear; \
             serve on a loopback address behind a TLS-terminating proxy"
        );
    }
    let model = state.model().clone();
    let serving = axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).into_future();
    Ok((addr, model, serving))
}

/// Serves until interrupted (Ctrl-C or SIGTERM), calling `ready` with the bound address and
/// where the model runs first.
pub fn serve(
    config: &ServeConfig,
    ready: impl FnOnce(SocketAddr, &warrant_engine::ModelPlan),
) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let (addr, model, serving) = bind(config, interrupted()).await?;
        ready(addr, &model);
        serving.await?;
        Ok(())
    })
}

async fn interrupted() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// A server running on a thread of its own, stopped when dropped. For tests and benchmarks.
#[derive(Debug)]
pub struct Running {
    /// The address it listens on (with the port the system picked for port 0).
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

impl Running {
    /// Starts a server for `config` and returns once it listens.
    pub fn start(config: &ServeConfig) -> Result<Running, ServerError> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, address) = std::sync::mpsc::channel::<Result<SocketAddr, ServerError>>();
        let config = config.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(async move {
                match bind(&config, async move {
                    let _ = stopped.await;
                })
                .await
                {
                    Ok((addr, _, serving)) => {
                        let _ = ready.send(Ok(addr));
                        serving.await?;
                        Ok(())
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        Ok(())
                    }
                }
            })
        });
        let addr =
            address.recv().map_err(|_| ServerError::Config("the server thread ended before listening".into()))??;
        Ok(Running { addr, stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
