//! `warrant turn`, `warrant effect-outcome` and `warrant replay`, each run on the engine over
//! the store named on the command line (opened in `engine.rs`).

use std::path::PathBuf;

use clap::Args;

use warrant_engine::{OutcomeReply, TurnResult};
use warrant_telemetry::Parent;

use crate::Exit;
use crate::engine::{StoreArgs, read_input, with_engine};

#[derive(Debug, Args)]
pub(crate) struct TurnArgs {
    #[command(flatten)]
    pub(crate) at: StoreArgs,
    /// The turn request (JSON), or `-` for standard input.
    #[arg(long, default_value = "-")]
    pub(crate) request: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct OutcomeArgs {
    #[command(flatten)]
    pub(crate) at: StoreArgs,
    /// The effect's id.
    #[arg(long)]
    pub(crate) effect: String,
    /// `done`, `failed` or `unknown`.
    #[arg(long)]
    pub(crate) outcome: String,
    /// The rows as the system of record left them: a JSON array of `{"table","key","value"}`,
    /// from a file or `-` for standard input.
    #[arg(long)]
    pub(crate) rows: Option<PathBuf>,
}

pub(crate) fn run_turn(args: &TurnArgs) -> Result<(), Exit> {
    let json = read_input(&args.request)?;
    with_engine(&args.at, |engine| {
        let result = match crate::telemetry::get() {
            None => engine.turn(&json)?,
            Some(telemetry) => {
                // A caller that traces passes its span as `TRACEPARENT`, as tools that start
                // processes do; the turn's span is then its child.
                let traceparent = std::env::var("TRACEPARENT").unwrap_or_default();
                let parent = Parent::from_headers([("traceparent", traceparent.as_str())]);
                engine.turn_traced(&json, &telemetry, &parent)?
            }
        };
        println!("{}", result.to_json());
        match result {
            TurnResult::Decided { .. } => Ok(()),
            TurnResult::Rejected(_) => Err(Exit::Quiet(2)),
        }
    })
}

pub(crate) fn run_outcome(args: &OutcomeArgs) -> Result<(), Exit> {
    let rows = match &args.rows {
        None => Vec::new(),
        Some(path) => match warrant_engine::outcome_rows(&read_input(path)?) {
            Ok(rows) => rows,
            Err(error) => {
                // Bad input, answered as the route answers it: the error JSON, exit status 2.
                println!("{}", serde_json::json!({"error": error}));
                return Err(Exit::Quiet(2));
            }
        },
    };
    with_engine(&args.at, |engine| {
        let reply = engine.outcome(&args.effect, &args.outcome, &rows)?;
        println!("{}", serde_json::to_value(&reply).map_err(|e| Exit::Input(e.to_string()))?);
        if matches!(reply, OutcomeReply::Refused { .. }) { Err(Exit::Quiet(2)) } else { Ok(()) }
    })
}

pub(crate) fn run_replay(args: &StoreArgs) -> Result<(), Exit> {
    with_engine(args, |engine| {
        let report = engine.replay()?;
        for change in &report.changes {
            println!(
                "changed: {} {} act {} `{}`: {} -> {}",
                change.conversation, change.turn, change.act, change.op, change.before, change.after
            );
        }
        // What the effects' outcomes found: shown beside the turns, never a changed verdict.
        for found in &report.findings {
            for field in &found.finding.fields {
                let show =
                    |v: &Option<serde_json::Value>| v.as_ref().map_or_else(|| "absent".to_owned(), |v| v.to_string());
                println!(
                    "{}: {} {} effect {} `{}`: {}/{} `{}` predicted {}, reported {}",
                    found.finding.code,
                    found.conversation,
                    found.turn,
                    found.effect,
                    found.op,
                    field.table,
                    field.key,
                    field.path,
                    show(&field.predicted),
                    show(&field.reported)
                );
            }
        }
        println!(
            "{} turns replayed, {} identical, {} verdicts changed",
            report.turns,
            report.identical,
            report.changes.len()
        );
        if report.changes.is_empty() { Ok(()) } else { Err(Exit::Failed) }
    })
}
