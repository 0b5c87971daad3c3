//! `warrant outbound`: one outbound request (a draft for a path) through the outbound gate
//! against a store; prints the cleared message, and on request writes its replay record.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use warrant_engine::dispatch::now_ms;
use warrant_engine::{Engine, OutboundResult, OutboundRun, Submitted};
use warrant_store::AnyStore;

use crate::Exit;
use crate::engine::{StoreArgs, open_engine, read_input};

#[derive(Debug, Args)]
pub(crate) struct OutboundArgs {
    /// The contract file.
    #[arg(long)]
    contract: PathBuf,
    /// The store: `sqlite:PATH` or `postgres://…[?schema=NAME]`.
    #[arg(long)]
    store: String,
    /// Writes the message's replay record (draft, claim verdicts, model calls) to this file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Stores the cleared message in the outbox for `warrant scheduler run` to deliver (a
    /// `scheduled` request with a `due` time is stored as a follow-up, cleared when due).
    #[arg(long)]
    send: bool,
    /// The outbound request (JSON), or `-` for standard input.
    #[arg(default_value = "-")]
    request: PathBuf,
}

pub(crate) fn run(args: &OutboundArgs) -> Result<(), Exit> {
    let json = read_input(&args.request)?;
    let mut engine = open_engine(&StoreArgs { contract: args.contract.clone(), store: args.store.clone() })?;
    clear(&mut engine, &json, args)
}

fn clear(engine: &mut Engine<AnyStore>, json: &str, args: &OutboundArgs) -> Result<(), Exit> {
    let text = |e: serde_json::Error| Exit::Input(format!("cannot write JSON: {e}"));
    let result = if args.send {
        match engine.submit(json, now_ms()).map_err(|e| Exit::Input(e.to_string()))? {
            Submitted::Queued { run, outbox, duplicate } => {
                let mut message = serde_json::to_value(&run.message).map_err(text)?;
                if let Some(fields) = message.as_object_mut() {
                    fields.insert("outbox".into(), json!({"id": outbox, "duplicate": duplicate}));
                }
                write_record(args, &run)?;
                println!("{message}");
                return Ok(());
            }
            Submitted::Scheduled { job, due_at, duplicate } => {
                println!("{}", json!({"scheduled": {"job": job, "due_at_ms": due_at, "duplicate": duplicate}}));
                return Ok(());
            }
            Submitted::Rejected(error) => OutboundResult::Rejected(error),
        }
    } else {
        engine.outbound(json).map_err(|e| Exit::Input(e.to_string()))?
    };
    match result {
        OutboundResult::Cleared(run) => {
            write_record(args, &run)?;
            println!("{}", serde_json::to_string(&run.message).map_err(text)?);
            Ok(())
        }
        OutboundResult::Rejected(error) => {
            println!("{}", json!({"error": error}));
            Err(Exit::Quiet(2))
        }
    }
}

fn write_record(args: &OutboundArgs, run: &OutboundRun) -> Result<(), Exit> {
    let Some(path) = &args.record else { return Ok(()) };
    let record =
        serde_json::to_string_pretty(&run.record).map_err(|e| Exit::Input(format!("cannot write JSON: {e}")))?;
    std::fs::write(path, record + "\n").map_err(|e| Exit::Input(format!("cannot write `{}`: {e}", path.display())))
}

/// Whether a corpus line is an outbound gate case: an object with a `draft`.
pub(crate) fn is_outbound_case(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.get("draft").is_some())
}

/// Runs one outbound case, printing its failure with its place; whether it held.
pub(crate) fn run_corpus_case(contract: &warrant_core::Contract, line: &str, place: &str) -> bool {
    use warrant_core::outbound_corpus;
    let result = outbound_corpus::parse_case(line).and_then(|case| {
        outbound_corpus::run_case(contract, &case).inspect_err(|failure| {
            println!("{place}: {failure}\n    name: {}\n    why: {}", case.name, case.why);
        })
    });
    if let Err(failure @ outbound_corpus::OutboundFailure::BadCase(_)) = &result {
        println!("{place}: {failure}");
    }
    result.is_ok()
}
