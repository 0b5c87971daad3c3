//! Invariants that the types cannot hold alone, checked over the source: the outbox is reached
//! above the store only through the gate's cleared messages.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `Store::enqueue` is the store's primitive. Above the store, the only callers are the two
/// that take a `ClearedMessage` (`OutboxSender::send` and `outbox::run_due_jobs`, whose caller
/// composes an `OutboundRun`). `AnyStore`, which forwards the trait to its backend, is
/// warrant-store's own and not scanned; tests and benchmarks seed the outbox through the raw
/// store and are not scanned either.
#[test]
fn only_the_gate_s_cleared_messages_are_enqueued_above_the_store() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let allowed = ["warrant-engine/src/outbound.rs", "warrant-engine/src/outbox.rs"];
    let mut files = Vec::new();
    for name in ["warrant-engine", "warrant-server", "warrant-cli", "warrant-model", "warrant-core"] {
        sources(&crates.join(name).join("src"), &mut files);
    }
    assert!(files.len() > 20, "only {} files scanned", files.len());
    let mut callers = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&crates).unwrap().to_string_lossy().replace('\\', "/");
        for (n, line) in text.lines().enumerate() {
            if line.contains(".enqueue(") && !line.trim_start().starts_with("//") {
                callers.push((shown.clone(), n + 1));
            }
        }
    }
    let outside: Vec<_> = callers.iter().filter(|(file, _)| !allowed.contains(&file.as_str())).collect();
    assert!(outside.is_empty(), "the outbox is written around the gate at {outside:?}");
    assert_eq!(callers.len(), 2, "{callers:?}");
}
