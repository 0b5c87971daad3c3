//! `warrant records get|put|delete|import`: the records routes as commands, printing the same
//! JSON. A write the row's revision refuses (`stale_revision`) or a row that does not exist
//! (`unknown_record`) prints the error JSON and exits 1; bad input (an unknown table, a row that
//! does not fit its table, an unreadable import) exits 2 with one line on stderr.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use warrant_engine::EngineError;
use warrant_store::{Precondition, RecordConflict};

use crate::Exit;
use crate::engine::{StoreArgs, open_engine, read_input};

#[derive(Debug, Subcommand)]
pub(crate) enum RecordsCommand {
    /// Prints a row with its revision.
    Get {
        #[command(flatten)]
        at: StoreArgs,
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
    },
    /// Writes a row (JSON on standard input) from the system of record; prints its new revision.
    Put(PutArgs),
    /// Deletes a row at its revision.
    Delete {
        #[command(flatten)]
        at: StoreArgs,
        /// The records table.
        table: String,
        /// The row's key.
        key: String,
        /// The revision the row must be at.
        #[arg(long)]
        if_match: i64,
    },
    /// Imports JSON lines, one `{"KEY": ROW}` each, all or nothing; prints the new revisions.
    Import {
        #[command(flatten)]
        at: StoreArgs,
        /// The records table.
        table: String,
        /// The JSON lines file, or `-` for standard input.
        file: PathBuf,
    },
}

#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    at: StoreArgs,
    /// The records table.
    table: String,
    /// The row's key.
    key: String,
    /// Replaces the row only at this revision.
    #[arg(long, conflicts_with = "if_none_match")]
    if_match: Option<i64>,
    /// Creates the row only if it does not exist.
    #[arg(long)]
    if_none_match: bool,
}

pub(crate) fn run(command: &RecordsCommand) -> Result<(), Exit> {
    let answer = match command {
        RecordsCommand::Get { at, table, key } => match open_engine(at)?.record(table, key).map_err(refused)? {
            Some(r) => json!({"table": r.table, "key": r.key, "revision": r.revision, "value": r.value}),
            None => return failed("unknown_record", "key", &format!("no record `{key}` in `{table}`")),
        },
        RecordsCommand::Put(args) => put(args)?,
        RecordsCommand::Delete { at, table, key, if_match } => {
            open_engine(at)?.delete_record(table, key, *if_match).map_err(refused)?;
            json!({"table": table, "key": key, "deleted": if_match})
        }
        RecordsCommand::Import { at, table, file } => {
            let lines = read_input(file)?;
            json!(open_engine(at)?.import_records(table, &lines).map_err(refused)?)
        }
    };
    println!("{answer}");
    Ok(())
}

fn put(args: &PutArgs) -> Result<Value, Exit> {
    let text = read_input(&PathBuf::from("-"))?;
    warrant_core::wire::check(&text).map_err(|e| Exit::Input(format!("the row: {}", e.message)))?;
    let row: Value = serde_json::from_str(&text).map_err(|e| Exit::Input(format!("the row: {e}")))?;
    let precondition = match (args.if_match, args.if_none_match) {
        (Some(revision), _) => Precondition::IfMatch(revision),
        (None, true) => Precondition::IfNoneMatch,
        (None, false) => Precondition::Any,
    };
    let written = open_engine(&args.at)?.put_record(&args.table, &args.key, &row, precondition).map_err(refused)?;
    Ok(json!(written))
}

/// A refused records call: a row not as the write requires prints the error JSON the route
/// answers with and exits 1; anything else is bad input.
fn refused(error: EngineError) -> Exit {
    let message = error.to_string();
    match &error {
        EngineError::Conflict(RecordConflict::Absent { .. }) => failed_exit("unknown_record", "key", &message),
        EngineError::Conflict(RecordConflict::Present { .. }) => {
            failed_exit("stale_revision", "if-none-match", &message)
        }
        EngineError::Conflict(RecordConflict::Revision { .. }) => failed_exit("stale_revision", "if-match", &message),
        _ => Exit::Input(message),
    }
}

fn failed_exit(code: &str, field: &str, message: &str) -> Exit {
    println!("{}", json!({"error": {"code": code, "field": field, "message": message}}));
    Exit::Quiet(1)
}

fn failed(code: &str, field: &str, message: &str) -> Result<(), Exit> {
    Err(failed_exit(code, field, message))
}
