//! `warrant guard …`: the ladder from the command line. Findings to read and audit, samples of
//! unflagged replies, the audited record with its exact bound, promotion (which runs the
//! adversarial corpus itself) and demotion, and the corpus runner.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;

use warrant_core::guard::AnnouncementGuard;
use warrant_core::guard_corpus::{self, GuardTally};
use warrant_core::ladder::{Bars, Label};
use warrant_engine::GuardError;
use warrant_store::AuditResult;

use crate::engine::{StoreArgs, with_engine};
use crate::{Exit, load_contract};

#[derive(Debug, Subcommand)]
pub(crate) enum GuardCommand {
    /// Prints every finding of the announcement guard, one JSON object per line.
    Findings(StoreArgs),
    /// Labels a finding: `true_positive` or `false_positive` for a flag, `miss` or `clean` for
    /// a sample. The time is taken from the clock.
    Audit {
        #[command(flatten)]
        at: StoreArgs,
        /// The finding's id.
        #[arg(long)]
        finding: String,
        /// `true_positive`, `false_positive`, `miss` or `clean`.
        #[arg(long)]
        label: String,
        /// Who audited it.
        #[arg(long)]
        who: String,
    },
    /// Prints the guard's version, the mode in force and its audited record (one JSON object).
    Status(StoreArgs),
    /// Samples stored replies the guard did not flag, for audit as `miss` or `clean`.
    Sample {
        #[command(flatten)]
        at: StoreArgs,
        /// How many to sample.
        #[arg(long, default_value_t = 20)]
        count: usize,
    },
    /// Promotes the guard version in force, if its record and a fresh corpus run clear the bars.
    Promote {
        #[command(flatten)]
        at: StoreArgs,
        /// Who promotes it.
        #[arg(long)]
        who: String,
        /// The adversarial corpus: files, or folders searched for `.jsonl` files.
        #[arg(long, default_value = "corpus/guards")]
        corpus: Vec<PathBuf>,
        /// Bar: at least this many audited findings.
        #[arg(long, default_value_t = 50)]
        min_audited: u64,
        /// Bar: the false-positive rate must be under this.
        #[arg(long, default_value_t = 0.02)]
        max_fp_rate: f64,
        /// Bar: the corpus may fail at most this many cases.
        #[arg(long, default_value_t = 0)]
        max_corpus_failures: u64,
    },
    /// Demotes the active promotion: the guard observes again.
    Demote {
        #[command(flatten)]
        at: StoreArgs,
        /// Who demotes it.
        #[arg(long)]
        who: String,
        /// Why.
        #[arg(long)]
        reason: String,
    },
    /// Runs the adversarial corpus; ends with `N passed, N failed` and exits 1 on any failure.
    Corpus {
        /// The contract file.
        #[arg(long)]
        contract: PathBuf,
        /// Corpus files, or folders searched for `.jsonl` files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn failed(error: GuardError) -> Exit {
    Exit::Input(error.to_string())
}

pub(crate) fn run(command: &GuardCommand) -> Result<(), Exit> {
    match command {
        GuardCommand::Findings(at) => with_engine(at, |engine| {
            for found in engine.guards().findings().map_err(failed)? {
                println!("{}", json!({"finding": found.finding, "audit": found.audit}));
            }
            Ok(())
        }),
        GuardCommand::Audit { at, finding, label, who } => {
            let label = Label::parse(label).ok_or_else(|| {
                Exit::Input(format!("`--label {label}`: give true_positive, false_positive, miss or clean"))
            })?;
            if who.trim().is_empty() {
                return Err(Exit::Input("`--who` is empty".into()));
            }
            with_engine(at, |engine| {
                let result = engine.guards().audit(finding, label, who, &now()).map_err(failed)?;
                println!("{}", serde_json::to_value(&result).unwrap_or_default());
                if result == AuditResult::Recorded { Ok(()) } else { Err(Exit::Quiet(1)) }
            })
        }
        GuardCommand::Status(at) => with_engine(at, |engine| {
            let status = engine.guards().status().map_err(failed)?;
            println!("{}", serde_json::to_value(&status).unwrap_or_default());
            Ok(())
        }),
        GuardCommand::Sample { at, count } => with_engine(at, |engine| {
            let added = engine.guards().sample(*count, &now()).map_err(failed)?;
            println!("{added} replies sampled for audit");
            Ok(())
        }),
        GuardCommand::Promote { at, who, corpus, min_audited, max_fp_rate, max_corpus_failures } => {
            if !(0.0..=1.0).contains(max_fp_rate) {
                return Err(Exit::Input(format!("`--max-fp-rate {max_fp_rate}` is not between 0 and 1")));
            }
            if who.trim().is_empty() {
                return Err(Exit::Input("`--who` is empty".into()));
            }
            let bars = Bars {
                min_audited: *min_audited,
                max_false_positive_rate: *max_fp_rate,
                max_corpus_failures: *max_corpus_failures,
                audits_required: true,
            };
            let contract = load_contract(&at.contract)?;
            let guard = contract.guards().announcement().ok_or_else(|| Exit::Input(GuardError::NoGuard.to_string()))?;
            let tally = run_corpus(guard, corpus)?;
            with_engine(at, |engine| match engine.guards().promote(tally.run(), bars, who, &now()).map_err(failed)? {
                Ok(record) => {
                    println!("{}", json!({"promoted": record}));
                    Ok(())
                }
                Err((code, message)) => {
                    println!("{}", json!({"refused": {"code": code, "message": message}}));
                    Err(Exit::Quiet(1))
                }
            })
        }
        GuardCommand::Demote { at, who, reason } => with_engine(at, |engine| {
            let demoted = engine.guards().demote(who, &now(), reason).map_err(failed)?;
            println!("{demoted} promotions demoted");
            Ok(())
        }),
        GuardCommand::Corpus { contract, paths } => {
            let contract = load_contract(contract)?;
            let guard = contract.guards().announcement().ok_or_else(|| Exit::Input(GuardError::NoGuard.to_string()))?;
            let tally = run_corpus(guard, paths)?;
            if tally.failed() > 0 { Err(Exit::Failed) } else { Ok(()) }
        }
    }
}

/// Runs every case under `paths`, printing each failure, the overreach count and the tally.
fn run_corpus(guard: &AnnouncementGuard, paths: &[PathBuf]) -> Result<GuardTally, Exit> {
    let mut files = Vec::new();
    for path in paths {
        crate::corpus::collect(path, &mut files)?;
    }
    let mut total = GuardTally::default();
    for file in &files {
        let text =
            std::fs::read_to_string(file).map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", file.display())))?;
        let tally = guard_corpus::run_text(guard, &text, |line, case, failure| report(file, line, case, failure));
        total.add(tally);
    }
    if total.overreach() > 0 {
        println!("{} overreaches: cases that must stay clear were flagged", total.overreach());
    }
    println!("{total}");
    Ok(total)
}

fn report(file: &Path, line: usize, case: Option<&guard_corpus::GuardCase>, failure: &guard_corpus::GuardFailure) {
    match case {
        Some(case) => {
            println!("{}:{line}: {failure}\n    text: {:?}\n    why: {}", file.display(), case.text, case.why)
        }
        None => println!("{}:{line}: {failure}", file.display()),
    }
}
