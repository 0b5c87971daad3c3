//! `docs/records.md` is true: its console examples run in order against a fresh SQLite store,
//! each printing exactly what the page shows, every JSON block of it parses, and every TOML
//! block loads as a contract.

use std::process::Command;

use crate::root;

/// The store the page names, replaced by a temporary one.
const PAGE_STORE: &str = "sqlite:/tmp/records.db";

/// The fenced blocks of a Markdown text: (language, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => open = Some((language.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => found.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is not closed");
    found
}

#[test]
fn the_records_page_s_examples_run_as_shown() {
    let text = std::fs::read_to_string(root().join("docs/records.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("records.db").display());
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_warrant"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let (mut commands, mut json, mut toml) = (0, 0, 0);
    for (language, body) in blocks(&text) {
        match language.as_str() {
            "json" => {
                serde_json::from_str::<serde_json::Value>(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
                json += 1;
            }
            "console" => {
                let mut steps: Vec<(String, String)> = Vec::new();
                for line in body.lines() {
                    match (line.strip_prefix("$ "), steps.last_mut()) {
                        (Some(command), _) => steps.push((command.to_owned(), String::new())),
                        (None, Some((_, expected))) => {
                            expected.push_str(line);
                            expected.push('\n');
                        }
                        (None, None) => panic!("output before any command: {line}"),
                    }
                }
                for (command, expected) in steps {
                    let run = command.replace(PAGE_STORE, &store);
                    let out =
                        Command::new("sh").args(["-c", &run]).env("PATH", &path).current_dir(root()).output().unwrap();
                    let stdout = String::from_utf8(out.stdout).unwrap();
                    assert!(
                        out.status.success(),
                        "`{command}` failed: {stdout}{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    assert_eq!(stdout, expected, "`{command}` printed otherwise than the page shows");
                    commands += 1;
                }
            }
            "toml" => {
                // A contract as the page shows it: it loads.
                warrant_core::Contract::from_toml("docs/records.md", &body).unwrap_or_else(|e| panic!("{e}: {body}"));
                toml += 1;
            }
            other => panic!("a block in {other:?}: the page holds only console, json and toml blocks"),
        }
    }
    assert_eq!((commands, json, toml), (11, 3, 1), "every example ran");
}
