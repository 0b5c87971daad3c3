//! `warrant corpus run`: every case in the given files (or `.jsonl` files under the given
//! folders), each failure printed with its place, then the tally.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use warrant_core::corpus::{self, TurnFailure, TurnTally};

use crate::{Exit, load_contract};

#[derive(Debug, Subcommand)]
pub(crate) enum CorpusCommand {
    /// Runs the cases and ends with the line `N passed, N failed`; exits 1 on any failure.
    Run {
        /// The contract file.
        #[arg(long)]
        contract: PathBuf,
        /// Corpus files, or folders searched for `.jsonl` files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

pub(crate) fn run(command: &CorpusCommand) -> Result<(), Exit> {
    let CorpusCommand::Run { contract, paths } = command;
    let contract = load_contract(contract)?;
    let mut files = Vec::new();
    for path in paths {
        collect(path, &mut files)?;
    }
    let mut tally = TurnTally::default();
    for file in &files {
        let text =
            std::fs::read_to_string(file).map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", file.display())))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let place = format!("{}:{}", file.display(), i + 1);
            if crate::outbound::is_outbound_case(line) {
                // An outbound gate case (`corpus/outbound`): a draft and the basis it must go out on.
                match crate::outbound::run_corpus_case(&contract, line, &place) {
                    true => tally.passed += 1,
                    false => tally.failed += 1,
                }
                continue;
            }
            let result = corpus::parse_case(line).and_then(|case| {
                let result = corpus::run_case(&contract, &case);
                if let Err(failure) = &result {
                    println!(
                        "{place}: {failure}\n    kind: {}\n    text: {:?}\n    why: {}",
                        case.kind, case.text, case.why
                    );
                }
                result
            });
            if let Err(failure @ TurnFailure::BadCase(_)) = &result {
                println!("{place}: {failure}");
            }
            tally.count(&result);
        }
    }
    if tally.boundary > 0 {
        println!("{} boundary failures: negative controls that performed an operation", tally.boundary);
    }
    println!("{tally}");
    if tally.failed > 0 { Err(Exit::Failed) } else { Ok(()) }
}

/// Adds `path` (a file) or the `.jsonl` files under it (a folder), sorted, to `files`.
pub(crate) fn collect(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), Exit> {
    let meta = std::fs::metadata(path).map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", path.display())))?;
    if meta.is_file() {
        files.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", path.display())))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(&entry, files)?;
        } else if entry.extension().is_some_and(|e| e == "jsonl") {
            files.push(entry);
        }
    }
    Ok(())
}
