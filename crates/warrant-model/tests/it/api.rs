//! Rule 4's enforcement: no public function of warrant-core or warrant-model takes two
//! natural-language strings and returns a decision. A scan of every `pub fn` signature (no
//! parser, so it also sees functions behind macros' plain text) counts the string parameters
//! and reads the return type; an exception must be listed here, with why it is not a judgement
//! of meaning.

use std::path::{Path, PathBuf};

/// Types a decision comes back as.
const DECISIONS: &[&str] =
    &["bool", "Verdict", "CheckVerdict", "Decision", "Finding", "Outcome", "PolicyDecision", "Reading", "CheckAnswer"];

/// `file:function` and why its two strings are not two natural-language texts compared.
const ALLOWED: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Splits a parameter list at its top-level commas.
fn params(list: &str) -> Vec<String> {
    let (mut depth, mut current, mut all) = (0i32, String::new(), Vec::new());
    for c in list.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                all.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    all.push(current);
    all.into_iter().map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect()
}

fn is_text(param: &str) -> bool {
    let Some((_, ty)) = param.split_once(':') else { return false };
    let ty: String = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    let ty = ty.trim_start_matches('&').trim();
    let ty = if ty.starts_with('\'') { ty.split_once(' ').map_or(ty, |(_, rest)| rest) } else { ty };
    matches!(ty, "str" | "String" | "impl Into<String>" | "impl AsRef<str>" | "Cow<'_, str>" | "Cow<str>")
}

/// Every `pub fn` signature in `text`: (name, parameters, return type).
fn signatures(text: &str) -> Vec<(String, Vec<String>, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("pub fn ") {
        let after = &rest[at + 7..];
        let end = after.find(['{', ';']).unwrap_or(after.len());
        let signature = &after[..end];
        rest = &after[end..];
        let Some(open) = signature.find('(') else { continue };
        let name = signature[..open].split('<').next().unwrap_or("").trim().to_owned();
        let mut depth = 0;
        let mut close = None;
        for (i, c) in signature[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        let ret = signature[close + 1..]
            .split("where")
            .next()
            .unwrap_or("")
            .trim()
            .trim_start_matches("->")
            .trim()
            .to_owned();
        found.push((name, params(&signature[open + 1..close]), ret));
    }
    found
}

fn violations(roots: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    for root in roots {
        rust_files(root, &mut files);
    }
    files.sort();
    let mut bad = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let short = file.file_name().unwrap().to_string_lossy().into_owned();
        for (name, params, ret) in signatures(&text) {
            let texts = params.iter().filter(|p| is_text(p)).count();
            let decides =
                DECISIONS.iter().any(|d| ret.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == *d));
            let key = format!("{short}:{name}");
            if texts >= 2 && decides && !ALLOWED.iter().any(|(k, _)| *k == key) {
                bad.push(format!("{key}({}) -> {ret}", params.join(", ")));
            }
        }
    }
    bad
}

#[test]
fn no_public_function_takes_two_texts_and_returns_a_decision() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let roots = [crates.join("warrant-core/src"), crates.join("warrant-vocab/src"), crates.join("warrant-model/src")];
    let bad = violations(&roots);
    assert!(bad.is_empty(), "public functions that would judge meaning from two strings:\n{}", bad.join("\n"));
}

#[test]
fn the_scan_finds_such_a_function() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("judge.rs"),
        "pub fn same_meaning(said: &str, value: &'a str) -> bool { said == value }\n\
         pub fn verdict_of(\n    reply: String,\n    expected: impl Into<String>,\n) -> Option<Verdict>;\n\
         pub fn harmless(id: &str, n: u32) -> bool { true }\n\
         pub fn slice<'t>(text: &'t str, from: u32) -> &'t str { text }\n",
    )
    .unwrap();
    let bad = violations(&[dir.path().to_owned()]);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].starts_with("judge.rs:same_meaning"));
    assert!(bad[1].starts_with("judge.rs:verdict_of"));
}
