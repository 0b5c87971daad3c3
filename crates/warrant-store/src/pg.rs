//! The store for more than one process or machine: PostgreSQL, every table in one schema.
//! Commits run at READ COMMITTED and let each other through wherever they touch different
//! rows; the expected-revision UPDATE decides between two writers of the same record (the
//! second waits for the first, then finds the new revision and updates nothing). An advisory
//! lock per turn key finds a duplicate before anything else.
//!
//! A turn's sequence number comes from the table's sequence, so commits take them side by
//! side, and a number taken first may commit last, or never (a gap). Readers in order
//! (`turns`, `recent_turns`) read only up to a horizon below which nothing is still open:
//! before it takes its number, a commit holds a shared advisory lock keyed by the schema and
//! by the sequence's last value (its floor, no higher than the number it takes), which other
//! sessions see in `pg_locks`; a reader notes the last number taken, waits for every floor
//! held then, and reads no further than that number. See `turn_horizon` (`pg/ledger.rs`).
//!
//! A commit's steps go to the server in one pipeline (`pg/commit.rs`) over a connection of the
//! store's own (`pg/client.rs`).

mod client;
mod commit;
mod history;
mod ladder;
mod ledger;
mod maintenance;
mod outbox;
mod prompts;
mod records;

use std::collections::HashMap;
use std::fmt;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use client::{Client, Session, Transaction};

use crate::error::StoreError;
use crate::row_cache::RowCache;
use crate::settled::Settled;

/// The first key of warrant's advisory locks, one per purpose; the second key is a hash of
/// the schema (and of the turn, for turn claims). Two different keys that hash alike only
/// make one transaction wait for the other, never change a result.
const LOCK_CREATE_SCHEMA: i32 = 0x5741_0001;
const LOCK_MIGRATE: i32 = 0x5741_0002;
const LOCK_TURN: i32 = 0x5741_0003;
const LOCK_PROMOTION: i32 = 0x5741_0005;
// 0x5741_0004 was a per-schema lock that kept sequence numbers in commit order by letting
// one commit at a time take them; the floor locks below replaced it. A floor lock has the
// one-key form: the schema's hash in its high half, the low half of the floor in its low one.

/// PostgreSQL's limit on identifier length, in bytes.
const MAX_SCHEMA_NAME: usize = 63;

/// A connection to a PostgreSQL store, whose tables live in one schema.
pub struct PgStore {
    client: Client,
    schema: String,
    statements: Statements,
    /// The rows read, with the text they were read from: shared by every store of this process
    /// on the same schema through the same connection string.
    rows: RowCache,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore").field("schema", &self.schema).finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects without TLS (for a local server or a private network) and keeps every table
    /// in `schema`, creating the schema if it is missing. Run
    /// [`Ledger::migrate`](crate::Ledger::migrate) before using a new schema.
    pub fn connect(conninfo: &str, schema: &str) -> Result<PgStore, StoreError> {
        PgStore::connect_to(conninfo, schema, Missing::Create)
    }

    /// Connects as [`PgStore::connect`] does to a schema that exists, and refuses one that does
    /// not ([`StoreError::NoSuchSchema`]) rather than creating it: for whoever reads a store, to
    /// whom a mistyped name must not look like an empty store.
    pub fn connect_existing(conninfo: &str, schema: &str) -> Result<PgStore, StoreError> {
        PgStore::connect_to(conninfo, schema, Missing::Refuse)
    }

    fn connect_to(conninfo: &str, schema: &str, missing: Missing) -> Result<PgStore, StoreError> {
        if !schema_name(schema) {
            return Err(StoreError::InvalidSchemaName { schema: schema.to_owned() });
        }
        let mut client = Client::connect(conninfo)?;
        let exists: bool = client
            .query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", &[&schema])?
            .try_get(0)?;
        // Only when it is missing, so that a role without CREATE on the database can use a
        // schema made for it; under a lock, because two concurrent CREATE SCHEMA IF NOT EXISTS
        // can both find it missing and one then fails.
        if !exists && missing == Missing::Refuse {
            return Err(StoreError::NoSuchSchema { schema: schema.to_owned() });
        }
        if !exists {
            let mut tx = client.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_CREATE_SCHEMA, &schema])?;
            tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))?;
            tx.commit()?;
        }
        client.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
        let rows = RowCache::shared(&format!("postgres {schema} {conninfo}"));
        Ok(PgStore { client, schema: schema.to_owned(), statements: Statements::default(), rows })
    }

    /// The schema the store's tables are in.
    pub(crate) fn named_schema(&self) -> &str {
        &self.schema
    }

    /// Closes the connection, saying what failed; dropping the store ends it too, without
    /// telling the server. Nothing is left open: every write was committed or rolled back.
    pub fn close(self) -> Result<(), StoreError> {
        Ok(self.client.close()?)
    }

    /// A read-only transaction over one snapshot ([`Client::snapshot`]), with the statements.
    fn snapshot(&mut self) -> Result<(Transaction<'_>, &mut Statements, &str), StoreError> {
        Ok((self.client.snapshot()?, &mut self.statements, &self.schema))
    }

    fn begin(&mut self) -> Result<(Transaction<'_>, &mut Statements, &str), StoreError> {
        Ok((self.client.transaction()?, &mut self.statements, &self.schema))
    }

    /// The steps of a write that is one statement, on the connection.
    fn steps(&mut self) -> PgTxn<'_, Client> {
        PgTxn { tx: &mut self.client, statements: &mut self.statements, schema: &self.schema }
    }

    fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let statement = self.statements.get(&mut self.client, sql)?;
        Ok(self.client.query(&statement, params)?)
    }

    fn query_opt(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, StoreError> {
        let statement = self.statements.get(&mut self.client, sql)?;
        Ok(self.client.query_opt(&statement, params)?)
    }
}

/// What connecting does about a schema that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    Create,
    Refuse,
}

/// Whether `schema` is a plain lowercase identifier, which needs no quoting rules to be safe
/// in the statements that name it.
pub(crate) fn schema_name(schema: &str) -> bool {
    let mut bytes = schema.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && schema.len() <= MAX_SCHEMA_NAME
}

/// The statements this connection has prepared, by their text, so each is parsed once.
#[derive(Default)]
struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    fn get(&mut self, client: &mut impl Session, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Ends the transaction as the steps decided.
fn settle<T>(tx: Transaction<'_>, settled: Settled<T>) -> Result<T, StoreError> {
    match settled {
        Settled::Keep(answer) => {
            tx.commit()?;
            Ok(answer)
        }
        Settled::Discard(answer) => {
            tx.rollback()?;
            Ok(answer)
        }
    }
}

/// The steps of a write inside one PostgreSQL transaction (`C` is a [`Transaction`]), or on the
/// connection itself where the step is one statement (`C` is the [`Client`]).
struct PgTxn<'a, C: Session> {
    tx: &'a mut C,
    statements: &'a mut Statements,
    schema: &'a str,
}

impl<C: Session> PgTxn<'_, C> {
    fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.query(&statement, params)
    }

    fn execute(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, tokio_postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.execute(&statement, params)
    }

    fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.query_opt(&statement, params)
    }

    fn query_one(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, tokio_postgres::Error> {
        let statement = self.prepared(sql)?;
        self.tx.query_one(&statement, params)
    }

    fn prepared(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        self.statements.get(self.tx, sql)
    }
}

/// The constraint a statement violated, when it failed with `state`.
fn violated<'e, T>(result: &'e Result<T, tokio_postgres::Error>, state: &SqlState) -> Option<&'e str> {
    let db = result.as_ref().err()?.as_db_error()?;
    if db.code() == state { db.constraint() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_lowercase_identifiers() {
        assert!(schema_name("warrant"));
        assert!(schema_name("t_12_ab"));
        assert!(!schema_name(""));
        assert!(!schema_name("1abc"));
        assert!(!schema_name("Warrant"));
        assert!(!schema_name("a\"; DROP SCHEMA public; --"));
        assert!(!schema_name(&"a".repeat(64)));
    }
}
