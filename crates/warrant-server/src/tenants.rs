//! Tenants and their API keys: names that are safe as schema and file names, keys that are
//! high-entropy random strings stored only as SHA-256 hashes, and where each tenant's own store
//! lives. A tenant's store is separate from every other's, so isolation does not rest on every
//! query remembering a tenant column.

use std::path::PathBuf;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use warrant_store::{Added, PgStore, Registry, SqliteStore, StoreError, TenantEntry};

use crate::ServerError;
use warrant_store::AnyStore;

/// The longest tenant name: `t_` and the name must fit PostgreSQL's 63-byte identifiers.
const MAX_TENANT_NAME: usize = 40;

/// Bytes of randomness in a key.
const KEY_BYTES: usize = 32;

/// A key begins with this, so that a leaked key is recognizable.
const KEY_PREFIX: &str = "wrt_";

/// Where the registry and the tenants' stores are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A folder: `control.sqlite` holds the registry, `t_<tenant>.sqlite` each tenant's store.
    Sqlite(PathBuf),
    /// One PostgreSQL database: the registry in `schema`, each tenant in schema `t_<tenant>`.
    Postgres {
        /// The connection string, without `schema=`.
        conninfo: String,
        /// The registry's schema.
        schema: String,
    },
}

impl StoreLocation {
    /// Parses `sqlite:FOLDER` or a PostgreSQL connection string, a URI or libpq keywords
    /// (`schema` names the registry's schema, default `warrant_control`), read by
    /// [`warrant_store::Location`]; the error never repeats a connection string.
    pub fn parse(text: &str) -> Result<StoreLocation, ServerError> {
        match warrant_store::Location::parse(text, "warrant_control") {
            Ok(warrant_store::Location::Sqlite(folder)) => Ok(StoreLocation::Sqlite(folder)),
            Ok(warrant_store::Location::Postgres { conninfo, schema }) => {
                Ok(StoreLocation::Postgres { conninfo, schema })
            }
            Err(warrant_store::LocationError::EmptyPath) => {
                Err(ServerError::Config("`--store sqlite:` needs a folder".into()))
            }
            Err(e) => Err(ServerError::Config(format!("`--store`: {e}"))),
        }
    }

    /// Opens the registry.
    pub fn registry(&self) -> Result<Registry, StoreError> {
        match self {
            StoreLocation::Sqlite(folder) => {
                std::fs::create_dir_all(folder)
                    .map_err(|e| StoreError::Corrupt { what: format!("cannot create `{}`: {e}", folder.display()) })?;
                Registry::open_sqlite(&folder.join("control.sqlite"))
            }
            StoreLocation::Postgres { conninfo, schema } => Registry::connect_postgres(conninfo, schema),
        }
    }

    /// Opens the store of `tenant` (a checked name), a connection of its own.
    pub fn tenant_store(&self, tenant: &TenantName) -> Result<AnyStore, StoreError> {
        match self {
            StoreLocation::Sqlite(folder) => {
                Ok(AnyStore::Sqlite(SqliteStore::open(&folder.join(format!("t_{}.sqlite", tenant.as_str())))?))
            }
            StoreLocation::Postgres { conninfo, .. } => {
                Ok(AnyStore::Postgres(Box::new(PgStore::connect(conninfo, &format!("t_{}", tenant.as_str()))?)))
            }
        }
    }
}

/// A tenant's name: lowercase ASCII letters, digits and `_`, starting with a letter, at most
/// 40 bytes, so that it is safe inside a schema or file name without quoting.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TenantName(String);

impl TenantName {
    /// Checks `name`.
    pub fn parse(name: &str) -> Option<TenantName> {
        let mut bytes = name.bytes();
        let first = bytes.next()?;
        let ok = first.is_ascii_lowercase()
            && name.len() <= MAX_TENANT_NAME
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        ok.then(|| TenantName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A new API key for `tenant`: `wrt_<tenant>.<64 hex digits>`. The tenant's name is part of the
/// key so that the server finds the one hash to compare against without scanning.
pub fn new_key(tenant: &TenantName) -> Result<String, ServerError> {
    let mut random = [0u8; KEY_BYTES];
    getrandom::fill(&mut random).map_err(|e| ServerError::Config(format!("no randomness for a key: {e}")))?;
    Ok(format!("{KEY_PREFIX}{}.{}", tenant.as_str(), hex::encode(random)))
}

/// The hex SHA-256 of a key, as the registry keeps it.
pub fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The tenant a key claims to belong to, if it has a key's shape.
pub fn claimed_tenant(key: &str) -> Option<TenantName> {
    let rest = key.strip_prefix(KEY_PREFIX)?;
    let (tenant, random) = rest.split_once('.')?;
    if random.len() != 2 * KEY_BYTES || !random.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    TenantName::parse(tenant)
}

/// Whether `key` hashes to `stored` (hex), compared in constant time.
pub fn key_matches(key: &str, stored: &str) -> bool {
    #[cfg(test)]
    COMPARED.with(|n| n.set(n.get() + 1));
    let Ok(stored) = hex::decode(stored) else { return false };
    let computed = Sha256::digest(key.as_bytes());
    bool::from(computed.as_slice().ct_eq(stored.as_slice()))
}

/// The hash a key is compared with when its tenant is unknown or revoked: a SHA-256 no key is
/// known to have, so that such a key takes the same work as a wrong secret and fails the same way.
const NO_TENANT: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Whether `key` opens the tenant whose stored hash is `stored` (`None`: no such tenant, or one
/// revoked). Every key is hashed and compared once, against a stand-in hash when there is none,
/// so an unknown tenant is refused by the same work as a wrong secret.
pub fn key_opens(key: &str, stored: Option<&str>) -> bool {
    let matched = key_matches(key, stored.unwrap_or(NO_TENANT));
    matched & stored.is_some()
}

#[cfg(test)]
thread_local! {
    /// How many keys this thread has compared with a hash, for the tests of one path.
    static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Adds the tenant `name` to the registry at `location` and returns its
/// new key (shown once; only its hash is kept). The tenant's store is made on first use.
pub fn add_tenant(location: &StoreLocation, name: &str) -> Result<String, ServerError> {
    let tenant = TenantName::parse(name).ok_or_else(|| {
        ServerError::Config(format!(
            "`{name}` is not a tenant name: use lowercase ASCII letters, digits and `_`, starting with a letter, at most {MAX_TENANT_NAME} bytes"
        ))
    })?;
    let key = new_key(&tenant)?;
    let mut registry = location.registry()?;
    match registry.add(tenant.as_str(), &key_hash(&key))? {
        Added::Added => Ok(key),
        Added::Exists => Err(ServerError::Config(format!("tenant `{name}` exists"))),
    }
}

/// Gives the tenant `name` a new key and returns it (shown once): the old key stops working at
/// once, in every server that reads this registry, and a revoked tenant is reinstated.
pub fn rotate_key(location: &StoreLocation, name: &str) -> Result<String, ServerError> {
    let tenant = TenantName::parse(name).ok_or_else(|| unknown_tenant(name))?;
    let key = new_key(&tenant)?;
    let mut registry = location.registry()?;
    if registry.rotate(tenant.as_str(), &key_hash(&key))? { Ok(key) } else { Err(unknown_tenant(name)) }
}

/// Revokes the tenant `name` at `at`: every key of it is refused until it is rotated.
pub fn revoke_tenant(location: &StoreLocation, name: &str, at: &str) -> Result<(), ServerError> {
    let mut registry = location.registry()?;
    if registry.revoke(name, at)? { Ok(()) } else { Err(unknown_tenant(name)) }
}

/// Every tenant of the registry at `location`, with its revocation if it has one.
pub fn list_tenants(location: &StoreLocation) -> Result<Vec<TenantEntry>, ServerError> {
    Ok(location.registry()?.list()?)
}

fn unknown_tenant(name: &str) -> ServerError {
    ServerError::Config(format!("no tenant `{}`", warrant_core::text::visible(name)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_key_names_its_tenant_and_matches_only_its_hash() {
        let tenant = TenantName::parse("acme_2").unwrap();
        let key = new_key(&tenant).unwrap();
        assert_eq!(claimed_tenant(&key), Some(tenant));
        let hash = key_hash(&key);
        assert!(key_matches(&key, &hash));
        let other = new_key(&TenantName::parse("acme_2").unwrap()).unwrap();
        assert!(!key_matches(&other, &hash));
        assert!(!key_matches(&key, "zz"));
    }

    #[test]
    fn an_unknown_tenant_and_a_wrong_secret_are_refused_by_the_same_work() {
        let tenant = TenantName::parse("acme").unwrap();
        let key = new_key(&tenant).unwrap();
        let hash = key_hash(&key);
        let wrong = new_key(&tenant).unwrap();
        let compared = |key: &str, stored: Option<&str>| {
            let before = COMPARED.with(std::cell::Cell::get);
            let opens = key_opens(key, stored);
            (opens, COMPARED.with(std::cell::Cell::get) - before)
        };
        assert_eq!(compared(&key, Some(&hash)), (true, 1));
        assert_eq!(compared(&wrong, Some(&hash)), (false, 1), "a wrong secret: one compare");
        assert_eq!(compared(&key, None), (false, 1), "an unknown tenant: one compare too");
        // Not even a key whose hash is the stand-in's would open a tenant that is not there.
        assert!(!key_opens("", None) && !key_opens(&key, Some(NO_TENANT)));
    }

    #[test]
    fn tenant_names_are_plain_identifiers() {
        for bad in ["", "Acme", "1a", "a-b", "a.b", "a b", &"a".repeat(41)] {
            assert_eq!(TenantName::parse(bad), None, "{bad}");
        }
        assert!(TenantName::parse("a_1").is_some());
        assert_eq!(claimed_tenant("wrt_acme.short"), None);
        assert_eq!(claimed_tenant("Bearer x"), None);
    }

    #[test]
    fn store_locations_parse() {
        assert_eq!(StoreLocation::parse("sqlite:/tmp/w").ok(), Some(StoreLocation::Sqlite("/tmp/w".into())));
        assert_eq!(
            StoreLocation::parse("postgres://p@h/test?schema=c1").ok(),
            Some(StoreLocation::Postgres { conninfo: "postgres://p@h/test".into(), schema: "c1".into() })
        );
        assert!(StoreLocation::parse("mysql://x").is_err());
    }
}
