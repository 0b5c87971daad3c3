//! A few engines per tenant, each with its own store connection, so that requests of one tenant
//! run side by side while the synchronous engine stays off the async threads. Engines are made
//! on first use and kept; one whose store failed is dropped, not reused. The contract is loaded
//! once for every tenant, and a tenant's store is migrated and seeded once, by its first engine:
//! each later engine is only another connection to it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use warrant_core::Contract;
use warrant_engine::{BuildError, Engine, EngineError, EngineSetup};

use crate::tenants::{StoreLocation, TenantName};
use warrant_store::AnyStore;

/// What a pooled call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The tenant's engine cannot be made.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The tenant's store cannot be opened.
    #[error("store: {0}")]
    Store(#[from] warrant_store::StoreError),
    /// The blocking task did not finish (it panicked or the runtime is shutting down).
    #[error("the engine task did not finish: {0}")]
    Task(String),
    /// The pool cannot be used: its lock was poisoned by a panic, or its permits were closed.
    #[error("the engine pool is closed")]
    Closed,
}

/// One tenant's engines.
struct TenantPool {
    idle: Mutex<Vec<Engine<AnyStore>>>,
    permits: Arc<Semaphore>,
    /// Whether the tenant's store has been made ready (migrated and seeded), held while the
    /// first engine does it so that no second one does it too.
    ready: Mutex<bool>,
    /// Store connections opened, and of them those that made the store ready.
    opened: AtomicUsize,
    readied: AtomicUsize,
}

impl TenantPool {
    /// A new engine over another connection to the tenant's store; the first one makes the
    /// store ready, the rest attach to it.
    fn open(&self, pools: &Pools, tenant: &TenantName) -> Result<Engine<AnyStore>, PoolError> {
        let mut ready = self.ready.lock().map_err(|_| PoolError::Closed)?;
        let store = pools.location.tenant_store(tenant)?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        if *ready {
            drop(ready);
            return Ok(pools.setup.attach(store)?);
        }
        let engine = pools.setup.build(store)?;
        self.readied.fetch_add(1, Ordering::Relaxed);
        *ready = true;
        Ok(engine)
    }
}

impl Drop for TenantPool {
    fn drop(&mut self) {
        if let Ok(mut idle) = self.idle.lock() {
            crate::drop_off_runtime(std::mem::take(&mut *idle));
        }
    }
}

/// Every tenant's engines, made on first use, each by the one engine setup (the contract and the
/// model resolved once when the server started).
pub(crate) struct Pools {
    setup: EngineSetup,
    location: StoreLocation,
    per_tenant: usize,
    tenants: Mutex<BTreeMap<TenantName, Arc<TenantPool>>>,
}

impl std::fmt::Debug for Pools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pools")
            .field("location", &self.location)
            .field("per_tenant", &self.per_tenant)
            .finish_non_exhaustive()
    }
}

impl Pools {
    pub(crate) fn new(setup: EngineSetup, location: StoreLocation, per_tenant: usize) -> Pools {
        Pools { setup, location, per_tenant: per_tenant.max(1), tenants: Mutex::new(BTreeMap::new()) }
    }

    pub(crate) fn contract(&self) -> &Contract {
        self.setup.contract()
    }

    pub(crate) fn setup(&self) -> &EngineSetup {
        &self.setup
    }

    fn pool(&self, tenant: &TenantName) -> Result<Arc<TenantPool>, PoolError> {
        let mut tenants = self.tenants.lock().map_err(|_| PoolError::Closed)?;
        Ok(tenants
            .entry(tenant.clone())
            .or_insert_with(|| {
                Arc::new(TenantPool {
                    idle: Mutex::new(Vec::new()),
                    permits: Arc::new(Semaphore::new(self.per_tenant)),
                    ready: Mutex::new(false),
                    opened: AtomicUsize::new(0),
                    readied: AtomicUsize::new(0),
                })
            })
            .clone())
    }

    /// How many store connections the pool has opened, over every tenant, and how many of them
    /// made their tenant's store ready (migrated and seeded it): for `/metrics`.
    pub(crate) fn opened(&self) -> (usize, usize) {
        let Ok(tenants) = self.tenants.lock() else { return (0, 0) };
        tenants.values().fold((0, 0), |(opened, readied), pool| {
            (opened + pool.opened.load(Ordering::Relaxed), readied + pool.readied.load(Ordering::Relaxed))
        })
    }

    /// Runs `f` with one of `tenant`'s engines on a blocking thread, waiting for a free engine
    /// when all of them are busy.
    pub(crate) async fn with_engine<T: Send + 'static>(
        self: &Arc<Self>,
        tenant: &TenantName,
        f: impl FnOnce(&mut Engine<AnyStore>) -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, PoolError> {
        let pool = self.pool(tenant)?;
        let permit = pool.permits.clone().acquire_owned().await.map_err(|_| PoolError::Closed)?;
        let this = Arc::clone(self);
        let tenant = tenant.clone();
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let reused = pool.idle.lock().map_err(|_| PoolError::Closed)?.pop();
            let mut engine = match reused {
                Some(engine) => engine,
                None => pool.open(&this, &tenant)?,
            };
            let result = f(&mut engine);
            // An engine whose store failed may hold a broken connection: let it go.
            if !matches!(result, Err(EngineError::Store(_))) {
                pool.idle.lock().map_err(|_| PoolError::Closed)?.push(engine);
            }
            result.map_err(PoolError::from)
        });
        task.await.map_err(|e| PoolError::Task(e.to_string()))?
    }
}
