//! `warrant store backup|check|export|migrate`: the store as a whole, for its operator. The SQL
//! is warrant-store's (`Maintenance`, `SqliteStore::backup_to`), the check's replay the
//! engine's (`Engine::check_store`); this is glue. Every subcommand opens a store that exists
//! and refuses one that does not (no file, no schema), and closes it before it says it is done.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use warrant_engine::{Engine, ModelSource, StoreUrl};
use warrant_store::{AnyStore, ExportError, ExportLine, Ledger, Maintenance};

use crate::{Exit, signals};

#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Copies a SQLite store into a new file while turns go on being committed (SQLite's online
    /// backup API); the copy is one snapshot, checked and whole. A PostgreSQL store is backed
    /// up with `pg_dump` (see docs/operations.md).
    Backup(BackupArgs),
    /// Checks the store whole: the backend's integrity check, every effect settled or listed
    /// as pending, every turn's replay record read and decided again to the same verdicts.
    /// Prints a JSON report; exit 1 when anything failed.
    Check(CheckArgs),
    /// Writes the ledger and the replay records as JSON lines, one object a line with a `kind`,
    /// as they are read.
    Export(ExportArgs),
    /// Runs the schema steps the store has not run, in place; prints the steps it ran.
    Migrate(StoreAt),
}

#[derive(Debug, Args)]
pub(crate) struct StoreAt {
    /// The store: `sqlite:PATH` or `postgres://…[?schema=NAME]`.
    #[arg(long)]
    store: String,
}

#[derive(Debug, Args)]
pub(crate) struct BackupArgs {
    #[command(flatten)]
    at: StoreAt,
    /// The new file; an existing one is never replaced.
    #[arg(long)]
    to: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The contract the turns were decided under.
    #[arg(long)]
    contract: PathBuf,
    #[command(flatten)]
    at: StoreAt,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    at: StoreAt,
    /// `jsonl`: one JSON object a line.
    #[arg(long, default_value = "jsonl")]
    format: String,
}

pub(crate) fn run(command: &StoreCommand) -> Result<(), Exit> {
    // Checked before any store is opened: what the user wrote, then what it names.
    if let StoreCommand::Export(args) = command
        && args.format != "jsonl"
    {
        return Err(Exit::Input(format!("`--format {}`: give `jsonl`", args.format)));
    }
    signals::hold()?;
    match command {
        StoreCommand::Backup(args) => backup(args),
        StoreCommand::Check(args) => check(args),
        StoreCommand::Export(args) => export(&args.at),
        StoreCommand::Migrate(at) => migrate(at),
    }
}

fn input(error: impl std::fmt::Display) -> Exit {
    Exit::Input(error.to_string())
}

fn store_error(error: impl std::fmt::Display) -> Exit {
    Exit::Input(format!("store: {error}"))
}

/// The store `at` names, which must exist.
fn open(at: &StoreAt) -> Result<AnyStore, Exit> {
    StoreUrl::parse(&at.store).and_then(|url| url.open_existing()).map_err(input)
}

/// Closes `store`: a command is done only once its store is closed whole.
fn close(store: AnyStore) -> Result<(), Exit> {
    store.close().map_err(|e| Exit::Input(format!("store: cannot close it: {e}")))
}

fn backup(args: &BackupArgs) -> Result<(), Exit> {
    let store = open(&args.at)?;
    let report = store.backup_to(&args.to).map_err(store_error)?;
    close(store)?;
    println!("{}", serde_json::json!({"backup": report.to, "turns": report.turns}));
    Ok(())
}

fn check(args: &CheckArgs) -> Result<(), Exit> {
    // No model: a replay asks none, and the store is only read (an engine attached to it is
    // neither migrated nor seeded).
    let setup = Engine::builder().contract_file(&args.contract).model(ModelSource::None).prepare().map_err(input)?;
    let engine = setup.attach(open(&args.at)?).map_err(input)?;
    let mut engine = engine;
    let found = engine.check_store(&|| signals::received().is_some());
    let found = match found {
        Err(warrant_engine::EngineError::Stopped) => return Err(signals::check().err().unwrap_or(Exit::Failed)),
        other => other.map_err(input)?,
    };
    engine.close().map_err(|e| Exit::Input(format!("store: cannot close it: {e}")))?;
    let report = serde_json::to_value(&found).map_err(input)?;
    let mut report = report;
    if let Some(fields) = report.as_object_mut() {
        fields.insert("passed".into(), found.passed().into());
    }
    println!("{report}");
    match found.failures.first() {
        None => Ok(()),
        Some(first) => {
            eprintln!("warrant store check: {} failed; the first: {first}", found.failures.len());
            Err(Exit::Failed)
        }
    }
}

fn export(at: &StoreAt) -> Result<(), Exit> {
    let mut store = open(at)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = store.export(&mut |line: ExportLine| {
        if signals::received().is_some() {
            return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "a signal asked to stop"));
        }
        // An error of the pipe keeps its kind (a reader gone is `BrokenPipe`).
        serde_json::to_writer(&mut out, &line).map_err(std::io::Error::from)?;
        out.write_all(b"\n")
    });
    let flushed = written.and_then(|counts| out.flush().map(|()| counts).map_err(ExportError::Sink));
    drop(out);
    close(store)?;
    match flushed {
        Ok(_) => Ok(()),
        Err(ExportError::Sink(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
            Err(signals::check().err().unwrap_or(Exit::Failed))
        }
        // The reader went away: whatever it read was whole lines.
        Err(ExportError::Sink(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Exit::Quiet(0)),
        Err(ExportError::Sink(e)) => Err(Exit::Input(format!("cannot write the export: {e}"))),
        Err(ExportError::Store(e)) => Err(store_error(e)),
    }
}

fn migrate(at: &StoreAt) -> Result<(), Exit> {
    let mut store = open(at)?;
    let before = store.schema().map_err(store_error)?;
    if !before.unknown().is_empty() {
        // Opening refuses it too; said here before anything is tried.
        let found = before.unknown().last().copied().unwrap_or_default();
        let known = before.known.last().copied().unwrap_or_default();
        return Err(Exit::Input(format!(
            "the store was migrated by a newer warrant: it has run step {found}, and this build knows steps up to {known}"
        )));
    }
    store.migrate().map_err(store_error)?;
    let after = store.schema().map_err(store_error)?;
    close(store)?;
    let ran: Vec<i64> = after.applied.iter().copied().filter(|step| !before.applied.contains(step)).collect();
    println!("{}", serde_json::json!({"migrated": ran, "steps": after.applied}));
    Ok(())
}
