//! The tenant registry: which tenants exist, the hash of each one's API key and which are
//! revoked, in a small control store of its own (a SQLite file, or one PostgreSQL schema).
//! Tenants' records never live here; each tenant has a store of its own, so no query can reach
//! another's rows. A key is rotated by replacing its hash, so the old key stops working at once
//! for every server that reads the registry.

use postgres::{Client, NoTls};
use rusqlite::{Connection, OptionalExtension};

use crate::error::StoreError;

/// The registry's table, the same text for both backends. Separate from the store's numbered
/// migrations: the registry is owned by the server and changes on its own schedule.
const TENANTS: &str = include_str!("../migrations/registry/0001_tenants.sql");
/// Revoked tenants; created the same way, after the first.
const REVOCATIONS: &str = include_str!("../migrations/registry/0002_revocations.sql");

/// The advisory lock under which a registry schema is created, so that two processes starting
/// at once do not both try.
const LOCK_CREATE_REGISTRY: i32 = 0x5741_0010;

/// Whether a tenant was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// The tenant was added.
    Added,
    /// A tenant of that name exists; nothing changed.
    Exists,
}

/// A tenant as `warrant tenant list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantEntry {
    /// The tenant's name.
    pub name: String,
    /// When its keys were revoked (as the caller's clock said), if they are.
    pub revoked_at: Option<String>,
}

/// A connection to the tenant registry.
pub enum Registry {
    /// A registry in a SQLite file.
    Sqlite(Connection),
    /// A registry in a PostgreSQL schema.
    Postgres(Client),
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Registry::Sqlite(_) => f.write_str("Registry::Sqlite"),
            Registry::Postgres(_) => f.write_str("Registry::Postgres"),
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // The file whole at rest, as a store's: a drop cannot say what failed; `close` does.
        if let Registry::Sqlite(conn) = self {
            let _ = crate::sqlite::checkpoint_whole(conn);
        }
    }
}

impl Registry {
    /// Closes the registry, saying what failed; dropping it does the same and cannot say. A
    /// SQLite registry's log is copied into its file and emptied first, so that the file alone
    /// holds every tenant (where another process has it open, that process's end does).
    pub fn close(mut self) -> Result<(), StoreError> {
        match &mut self {
            Registry::Sqlite(conn) => crate::sqlite::checkpoint_whole(conn),
            Registry::Postgres(_) => Ok(()),
        }
    }

    /// Opens (or creates) the registry in the SQLite file at `path`, in WAL mode: a server
    /// reads it on every request, and in WAL mode a read never waits for a writer (`warrant
    /// tenant rotate` in another process), so it is quick enough to run on the request's own
    /// thread.
    pub fn open_sqlite(path: &std::path::Path) -> Result<Registry, StoreError> {
        let conn = Connection::open(path)?;
        crate::sqlite::write_ahead_log(&conn)?;
        conn.execute_batch(TENANTS)?;
        conn.execute_batch(REVOCATIONS)?;
        Ok(Registry::Sqlite(conn))
    }

    /// Whether a read of this registry never waits: on a SQLite file in WAL mode, a read waits
    /// neither for a writer nor on a network, so a server may make it on an async thread; a
    /// PostgreSQL read is a round trip.
    pub fn reads_without_waiting(&self) -> bool {
        matches!(self, Registry::Sqlite(_))
    }

    /// Connects to the registry in `schema` of the PostgreSQL database at `conninfo`,
    /// creating the schema and its table if they are missing.
    pub fn connect_postgres(conninfo: &str, schema: &str) -> Result<Registry, StoreError> {
        if !crate::pg::schema_name(schema) {
            return Err(StoreError::InvalidSchemaName { schema: schema.to_owned() });
        }
        let mut client = Client::connect(conninfo, NoTls)?;
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_CREATE_REGISTRY, &schema])?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; SET LOCAL search_path TO \"{schema}\"; {TENANTS} {REVOCATIONS}"
        ))?;
        tx.commit()?;
        client.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
        Ok(Registry::Postgres(client))
    }

    /// Adds a tenant with the hash of its key.
    pub fn add(&mut self, name: &str, key_hash: &str) -> Result<Added, StoreError> {
        let inserted = match self {
            Registry::Sqlite(conn) => conn.execute(
                "INSERT INTO tenants (name, key_hash) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
                [name, key_hash],
            )? as u64,
            Registry::Postgres(client) => client.execute(
                "INSERT INTO tenants (name, key_hash) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[&name, &key_hash],
            )?,
        };
        Ok(if inserted == 1 { Added::Added } else { Added::Exists })
    }

    /// The key hash of the tenant `name`, if it exists and is not revoked.
    pub fn key_hash(&mut self, name: &str) -> Result<Option<String>, StoreError> {
        const SQLITE: &str = "SELECT key_hash FROM tenants WHERE name = ?1 \
                              AND NOT EXISTS (SELECT 1 FROM revocations WHERE revocations.name = tenants.name)";
        const PG: &str = "SELECT key_hash FROM tenants WHERE name = $1 \
                          AND NOT EXISTS (SELECT 1 FROM revocations WHERE revocations.name = tenants.name)";
        // Read on every request: the statement is prepared once per SQLite connection, and on
        // PostgreSQL sent with its parameter's type, one round trip without a prepare.
        Ok(match self {
            Registry::Sqlite(conn) => conn.prepare_cached(SQLITE)?.query_row([name], |row| row.get(0)).optional()?,
            Registry::Postgres(client) => {
                client.query_typed_opt(PG, &[(&name, postgres::types::Type::TEXT)])?.map(|row| row.get(0))
            }
        })
    }

    /// Replaces the key hash of the tenant `name` with `key_hash`, and lifts a revocation: the
    /// old key stops working and the new one works. `false` when there is no such tenant.
    pub fn rotate(&mut self, name: &str, key_hash: &str) -> Result<bool, StoreError> {
        Ok(match self {
            Registry::Sqlite(conn) => {
                let tx = conn.transaction()?;
                let updated = tx.execute("UPDATE tenants SET key_hash = ?1 WHERE name = ?2", [key_hash, name])?;
                tx.execute("DELETE FROM revocations WHERE name = ?1", [name])?;
                tx.commit()?;
                updated == 1
            }
            Registry::Postgres(client) => {
                let mut tx = client.transaction()?;
                let updated = tx.execute("UPDATE tenants SET key_hash = $1 WHERE name = $2", &[&key_hash, &name])?;
                tx.execute("DELETE FROM revocations WHERE name = $1", &[&name])?;
                tx.commit()?;
                updated == 1
            }
        })
    }

    /// Revokes the tenant `name`: every key of it is refused until it is rotated. Revoking
    /// again keeps the first time. `false` when there is no such tenant.
    pub fn revoke(&mut self, name: &str, at: &str) -> Result<bool, StoreError> {
        const SQLITE: &str = "INSERT INTO revocations (name, revoked_at) SELECT name, ?2 FROM tenants \
                              WHERE name = ?1 ON CONFLICT (name) DO NOTHING";
        const PG: &str = "INSERT INTO revocations (name, revoked_at) SELECT name, $2 FROM tenants \
                          WHERE name = $1 ON CONFLICT (name) DO NOTHING";
        if self.list()?.iter().all(|t| t.name != name) {
            return Ok(false);
        }
        match self {
            Registry::Sqlite(conn) => conn.execute(SQLITE, [name, at])?,
            Registry::Postgres(client) => usize::try_from(client.execute(PG, &[&name, &at])?).unwrap_or(usize::MAX),
        };
        Ok(true)
    }

    /// Every tenant's name, in order.
    pub fn names(&mut self) -> Result<Vec<String>, StoreError> {
        Ok(self.list()?.into_iter().map(|t| t.name).collect())
    }

    /// Every tenant, in order of name, with its revocation if it has one.
    pub fn list(&mut self) -> Result<Vec<TenantEntry>, StoreError> {
        const LIST: &str = "SELECT tenants.name, revocations.revoked_at FROM tenants \
                            LEFT JOIN revocations ON revocations.name = tenants.name ORDER BY tenants.name";
        Ok(match self {
            Registry::Sqlite(conn) => {
                let mut statement = conn.prepare(LIST)?;
                statement
                    .query_map([], |row| Ok(TenantEntry { name: row.get(0)?, revoked_at: row.get(1)? }))?
                    .collect::<Result<Vec<_>, _>>()?
            }
            Registry::Postgres(client) => client
                .query(LIST, &[])?
                .iter()
                .map(|row| TenantEntry { name: row.get(0), revoked_at: row.get(1) })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_tenant_is_added_once_and_its_hash_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::open_sqlite(&dir.path().join("control.sqlite")).unwrap();
        assert_eq!(registry.add("acme", "aa").unwrap(), Added::Added);
        assert_eq!(registry.add("acme", "bb").unwrap(), Added::Exists);
        assert_eq!(registry.key_hash("acme").unwrap().as_deref(), Some("aa"));
        assert_eq!(registry.key_hash("other").unwrap(), None);
        assert_eq!(registry.names().unwrap(), vec!["acme".to_owned()]);
    }
}
