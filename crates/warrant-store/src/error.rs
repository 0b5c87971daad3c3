//! The ways the store itself can fail. Outcomes a caller must decide on (a stale revision, a
//! duplicate turn) are not here: they are values of [`crate::CommitOutcome`] and
//! [`crate::OutcomeResult`], or a [`crate::RecordConflict`] for a write from the system of
//! record.

/// A failure of the store: the database, the stored data, or input it cannot keep.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sqlite: {0}")]
    /// SQLite failed.
    Sqlite(#[from] rusqlite::Error),

    #[error("postgresql: {}", with_causes(.0))]
    /// PostgreSQL failed, or could not be reached.
    Postgres(#[from] postgres::Error),

    #[error("postgresql: the connection's runtime could not start: {0}")]
    /// The runtime that drives a PostgreSQL connection could not be built.
    PostgresRuntime(#[source] std::io::Error),

    /// What the database returned does not have the shape this crate wrote.
    #[error("stored data is corrupt: {what}")]
    Corrupt {
        /// What is not as written.
        what: String,
    },

    /// The database was migrated by a newer build; this one must not write to it.
    #[error("the schema is at version {found}, newer than version {known} that this build knows")]
    SchemaTooNew {
        /// The newest version the database has.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },

    /// The store has not run every schema step this build knows; what reads it whole needs it
    /// migrated first.
    #[error("the store has not run the schema steps {pending:?}: migrate it first")]
    SchemaBehind {
        /// The steps it has not run.
        pending: Vec<i64>,
    },

    /// SQLite did not switch to write-ahead logging, which concurrent readers and writers need.
    #[error("the database refused write-ahead logging: its journal mode is `{mode}`")]
    NoWriteAheadLog {
        /// The journal mode SQLite kept.
        mode: String,
    },

    #[error(
        "`{schema}` is not a schema name: use lowercase ASCII letters, digits and `_`, \
         starting with a letter, at most 63 bytes"
    )]
    /// A PostgreSQL schema name that is not a plain lowercase identifier.
    InvalidSchemaName {
        /// The name refused.
        schema: String,
    },

    /// PostgreSQL cannot store U+0000 in text or JSONB, so neither backend accepts it, and the
    /// two behave the same.
    #[error("{field} contains the character U+0000, which the store cannot keep")]
    NulCharacter {
        /// The field that holds it.
        field: String,
    },

    #[error("effect outcome `{outcome}` is not one of `done`, `failed`, `unknown`")]
    /// An effect's outcome that is not one of [`crate::EFFECT_OUTCOMES`].
    UnknownOutcome {
        /// The outcome refused.
        outcome: String,
    },

    /// An event names an effect that is neither stored nor part of the same commit.
    #[error("event `{event}` names the effect `{effect}`, which is not stored")]
    UnknownEffectReference {
        /// The event.
        event: String,
        /// The effect it names.
        effect: String,
    },

    /// An id the caller generated is taken; ids are not idempotency keys, so this is a bug
    /// in the caller, and the commit is rolled back.
    #[error("{kind} id `{id}` is taken")]
    IdTaken {
        /// What the id is of (`effect`, `event`, …).
        kind: &'static str,
        /// The id.
        id: String,
    },

    /// A row given to be written has an empty key.
    #[error("{} of table `{table}` has an empty key", row_name(*.row))]
    EmptyKey {
        /// The records table.
        table: String,
        /// The row's position among the rows given, when more than one was.
        row: Option<usize>,
    },

    /// A row given to be written is not a JSON object.
    #[error("{} of table `{table}` (key `{key}`) is not a JSON object", row_name(*.row))]
    NotAnObject {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// The row's position among the rows given, when more than one was.
        row: Option<usize>,
    },

    /// Rows given to be written together name the same key twice.
    #[error("the key `{key}` of table `{table}` is given twice")]
    DuplicateKey {
        /// The records table.
        table: String,
        /// The key given twice.
        key: String,
    },

    /// The transaction a commit shared with others (SQLite's group commit) could not be made
    /// durable; nothing of any commit in it was written, and each may be tried again.
    #[error("the commit's batch could not be made durable, so nothing of it was written: {why}")]
    BatchFailed {
        /// What the database said.
        why: String,
    },

    /// A PostgreSQL schema that was to hold a store does not exist.
    #[error("the database has no schema `{schema}`")]
    NoSuchSchema {
        /// The schema.
        schema: String,
    },

    /// A SQLite file that was to hold a store does not exist.
    #[error("there is no file `{path}`")]
    NoSuchFile {
        /// The file.
        path: String,
    },

    /// A backup could not be made; no file was left at its place.
    #[error("the backup to `{to}` failed: {why}")]
    Backup {
        /// Where the backup was to go.
        to: String,
        /// What went wrong.
        why: String,
    },

    /// A PostgreSQL store is backed up by the server's own tools, not by warrant.
    #[error(
        "a PostgreSQL store is backed up with the server's `pg_dump --schema={schema}` (restored with `psql`, \
         then checked with `warrant store check`), not with `warrant store backup`"
    )]
    BackupByPgDump {
        /// The store's schema.
        schema: String,
    },

    /// Concurrent writers kept creating and deleting the row while this write looked at it;
    /// nothing was written, and the write may be tried again.
    #[error("record `{table}`/`{key}` kept changing under concurrent writers; nothing was written")]
    Contended {
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
    },
}

/// A row named by its position, or as the one row of a put.
fn row_name(row: Option<usize>) -> String {
    row.map_or_else(|| "the row".to_owned(), |i| format!("row {i}"))
}

/// The client's own message says only "db error" or "error connecting to server"; what the
/// server or the socket said is in its causes.
fn with_causes(error: &postgres::Error) -> String {
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    message
}
