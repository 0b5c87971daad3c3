//! The standard streams as a shell pipeline uses them: a reader that stops early ends the
//! process quietly.

use std::process::{Command, Stdio};

use crate::root;

/// Runs `warrant` with standard output a pipe whose reading end is already closed, as it is
/// for `warrant … | head -1` once `head` has its line: every write fails with a broken pipe.
fn with_stdout_closed(args: &[&str], stdin: &str) -> (Option<i32>, String) {
    use std::io::Write;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The process may end at its first write, before it has read all of its input.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn warrant_reasons_piped_into_head_ends_quietly() {
    let (code, stderr) = with_stdout_closed(&["reasons"], "");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "", "nothing is said on stderr, least of all a panic");
}

#[test]
fn a_closed_stdout_ends_every_kind_of_output_quietly() {
    // Lines printed one by one (check, the guard corpus) and through a buffered writer (score).
    let score = ["score", "--contract", "examples/score-en/contract.toml", "--jsonl", "-"];
    let lines = "{\"kind\":\"model_reply\",\"text\":\"Thanks.\"}\n".repeat(2000);
    for (args, stdin) in [
        (&["check", "--contract", "examples/retail/contract.toml"][..], ""),
        (&score[..], lines.as_str()),
        (&["guard", "corpus", "--contract", "examples/retail/contract.toml", "corpus/guards"][..], ""),
    ] {
        let (code, stderr) = with_stdout_closed(args, stdin);
        assert_eq!((code, stderr.as_str()), (Some(0), ""), "{args:?}");
    }
}
