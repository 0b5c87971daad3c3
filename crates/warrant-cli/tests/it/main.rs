//! The `warrant` binary as users' tools see it: its JSON, its exit statuses, its corpus runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod at_rest;
mod check;
// The engine's conformance harness and retail cases, shared so that the gateway's tests play
// the same mutations; not every helper of theirs is used here.
#[path = "../../../warrant-engine/tests/it/conformance.rs"]
#[allow(dead_code, reason = "the engine's harness, of which the gateway's tests use a part")]
mod conformance;
mod corpus;
mod delivery;
mod docs;
mod guards;
mod input;
mod mcp;
mod mcp_conformance;
mod outbound;
mod outcomes;
mod prompts;
mod receiver;
mod records;
mod render;
#[path = "../../../warrant-engine/tests/it/retail_cases.rs"]
#[allow(dead_code, reason = "the engine's retail cases, of which the gateway's tests use a part")]
mod retail_cases;
mod score;
mod serve;
mod service;
mod store;
mod streams;
mod traces;
mod turns;
mod version;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `warrant` with `args` in the repository root, feeding `stdin`.
pub fn warrant(args: &[&str], stdin: &str) -> Output {
    warrant_with_env(args, stdin, &[], &[])
}

/// Runs `warrant` as [`warrant`] does, with the variables `set` set and those in `unset` unset.
pub fn warrant_with_env(args: &[&str], stdin: &str, set: &[(&str, &str)], unset: &[&str]) -> Output {
    use std::io::Write;
    let mut command = Command::new(env!("CARGO_BIN_EXE_warrant"));
    for name in unset {
        command.env_remove(name);
    }
    let mut child = command
        .envs(set.iter().copied())
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}
