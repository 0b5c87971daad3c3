//! `warrant score`: one reply from the arguments, or many as JSON lines.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;

use warrant_core::report::{self, InputError, ScoreRequest};

use crate::{Exit, load_contract};

#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    /// The contract file.
    #[arg(long)]
    contract: PathBuf,
    /// The source kind of TEXT.
    #[arg(long, requires = "text", conflicts_with = "jsonl")]
    kind: Option<String>,
    /// One `{"kind","text"}` object per line, from a file or `-` for standard input.
    #[arg(long, value_name = "FILE|-")]
    jsonl: Option<PathBuf>,
    /// The reply to read.
    #[arg(requires = "kind")]
    text: Option<String>,
}

pub(crate) fn run(args: &ScoreArgs) -> Result<(), Exit> {
    let (kind, text, jsonl) = match (&args.kind, &args.text, &args.jsonl) {
        (Some(kind), Some(text), None) => (kind, text, None),
        (None, None, Some(path)) => (&String::new(), &String::new(), Some(path)),
        _ => return Err(Exit::Input("give either `--kind KIND TEXT` or `--jsonl FILE|-`".into())),
    };
    let contract = load_contract(&args.contract)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match jsonl {
        None => {
            let request = ScoreRequest { kind: kind.clone(), text: text.clone() };
            let line = report::score_line(&contract, &request).map_err(|e: InputError| Exit::Input(e.message))?;
            writeln!(out, "{line}")?;
        }
        Some(path) => {
            let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
                Box::new(std::io::stdin().lock())
            } else {
                let file = std::fs::File::open(path)
                    .map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", path.display())))?;
                Box::new(std::io::BufReader::new(file))
            };
            for (i, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| Exit::Input(format!("`{}` line {}: {e}", path.display(), i + 1)))?;
                writeln!(out, "{}", report::score_jsonl_line(&contract, i + 1, &line))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
