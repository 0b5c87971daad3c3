//! `warrant render`: the numbered rendering of a text, the words and numbers a pointer into it
//! counts, as one JSON line.

use std::io::Read;

use clap::Args;

use warrant_core::report;

use crate::Exit;

#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// The text to render; without it, standard input is read to its end, exactly as given.
    #[arg(long)]
    text: Option<String>,
}

pub(crate) fn run(args: &RenderArgs) -> Result<(), Exit> {
    let text = match &args.text {
        Some(text) => text.clone(),
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Exit::Input(format!("standard input is not UTF-8 text: {e}")))?;
            text
        }
    };
    println!("{}", report::render_json(&text));
    Ok(())
}
