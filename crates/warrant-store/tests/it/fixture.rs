//! A fresh, migrated, empty store per test, and more connections to the same one for the
//! concurrency tests. Each test gets its own SQLite file or its own PostgreSQL schema, which
//! is removed when the fixture drops, also when the test fails.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use warrant_store::{PgStore, SqliteStore, Store};

/// The PostgreSQL the tests use when `WARRANT_TEST_POSTGRES` is not set.
const DEFAULT_POSTGRES: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Which database a fixture stands for.
#[derive(Debug)]
pub enum Backend {
    Sqlite { _dir: tempfile::TempDir, path: PathBuf },
    Postgres { conninfo: String, schema: String },
}

/// One test's store.
#[derive(Debug)]
pub struct Fixture {
    pub backend: Backend,
}

pub fn postgres_conninfo() -> String {
    std::env::var("WARRANT_TEST_POSTGRES").unwrap_or_else(|_| DEFAULT_POSTGRES.to_owned())
}

impl Fixture {
    pub fn sqlite() -> Fixture {
        Fixture::bare_sqlite().migrated()
    }

    pub fn postgres() -> Fixture {
        Fixture::bare_postgres().migrated()
    }

    /// Another store of the same backend, not even migrated yet.
    pub fn bare_sibling(&self) -> Fixture {
        match self.backend {
            Backend::Sqlite { .. } => Fixture::bare_sqlite(),
            Backend::Postgres { .. } => Fixture::bare_postgres(),
        }
    }

    fn migrated(self) -> Fixture {
        self.open().migrate().unwrap();
        self
    }

    fn bare_sqlite() -> Fixture {
        let dir = tempfile::Builder::new().prefix("warrant-store-").tempdir().unwrap();
        let path = dir.path().join("store.db");
        Fixture { backend: Backend::Sqlite { _dir: dir, path } }
    }

    /// A schema name no other test uses; the store creates the schema when it connects.
    fn bare_postgres() -> Fixture {
        let conninfo = postgres_conninfo();
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let schema = format!("warrant_test_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        // A schema left by an earlier run that died with the same name would not be fresh.
        admin(&conninfo).batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
        Fixture { backend: Backend::Postgres { conninfo, schema } }
    }

    /// A new connection to this fixture's store.
    pub fn open(&self) -> Box<dyn Store> {
        match &self.backend {
            Backend::Sqlite { path, .. } => Box::new(SqliteStore::open(path).unwrap()),
            Backend::Postgres { conninfo, schema } => {
                Box::new(PgStore::connect(conninfo, schema).unwrap_or_else(|e| {
                    panic!(
                        "the store cannot connect to PostgreSQL at `{conninfo}` (is it running? \
                         WARRANT_TEST_POSTGRES names another server): {e}"
                    )
                }))
            }
        }
    }
}

/// A plain client, for what the tests do outside the store: create and drop schemas.
pub fn admin(conninfo: &str) -> postgres::Client {
    postgres::Client::connect(conninfo, postgres::NoTls).unwrap_or_else(|e| {
        panic!(
            "PostgreSQL is not reachable at `{conninfo}` (set WARRANT_TEST_POSTGRES to another \
             server): {}",
            warrant_store::StoreError::from(e)
        )
    })
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // The SQLite directory removes itself.
        // A failed drop leaves a schema behind; it must not hide the test's own result.
        if let Backend::Postgres { conninfo, schema } = &self.backend
            && let Ok(mut client) = postgres::Client::connect(conninfo, postgres::NoTls)
        {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}
