//! The typed replay record against records written before it was typed: fixtures captured from
//! the engine of the time, over SQLite (`warrant demo`'s thirteen retail turns, and the rename
//! example's two turns with their model checks, answered by a stand-in endpoint). Each reads
//! back through `ReplayRecord` to the same JSON, byte for byte, and replays identically; the
//! retail turns, played again, are recorded as they were.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use warrant_engine::{EngineError, ModelSource, REPLAY_VERSION, ReplayRecord, TurnResult, load_contract};
use warrant_store::prelude::*;
use warrant_store::{Commit, CommitOutcome, SqliteStore, StoredTurn, TurnRow};

use crate::retail_dir;

/// A stored turn of a fixture, with its replay record's text as it was stored.
struct Fixture {
    stored: StoredTurn,
    request: String,
    response: String,
    replay: String,
}

fn fixture(name: &str) -> Vec<Fixture> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures").join(name);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let fields: Value = serde_json::from_str(line).unwrap();
            let field = |name: &str| fields[name].as_str().unwrap().to_owned();
            let parse = |name: &str| -> Value { serde_json::from_str(&field(name)).unwrap() };
            Fixture {
                stored: StoredTurn {
                    seq: 0,
                    conversation: field("conversation"),
                    turn: field("turn"),
                    request: parse("request"),
                    response: parse("response"),
                    replay: parse("replay"),
                },
                request: field("request"),
                response: field("response"),
                replay: field("replay"),
            }
        })
        .collect()
}

/// Every record of `name` reads back to its own text, and, stored as it was, replays
/// identically against `contract`.
fn reads_back_and_replays(contract: &Path, name: &str) {
    let turns = fixture(name);
    for turn in &turns {
        let record = ReplayRecord::of(&turn.stored).unwrap();
        assert_eq!(record.version, 1, "a record without a version is version 1");
        assert_eq!(serde_json::to_string(&record).unwrap(), turn.replay, "turn {}", turn.stored.turn);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    store.migrate().unwrap();
    for turn in &turns {
        let commit = Commit {
            turn: TurnRow {
                conversation: turn.stored.conversation.clone(),
                turn: turn.stored.turn.clone(),
                request: (&turn.stored.request).into(),
                response: (&turn.stored.response).into(),
                replay: (&turn.stored.replay).into(),
            },
            writes: Vec::new(),
            effects: Vec::new(),
            events: Vec::new(),
            opened: Vec::new(),
            answered: Vec::new(),
            findings: Vec::new(),
            reads: Vec::new(),
            holds: Vec::new(),
        };
        assert!(matches!(store.commit(&commit).unwrap(), CommitOutcome::Committed { .. }));
    }
    let (contract, folder) = load_contract(contract).unwrap();
    let mut engine = crate::build(contract, &folder, store, ModelSource::None);
    let report = engine.replay().unwrap();
    assert_eq!((report.turns, report.identical, report.changes.len()), (turns.len(), turns.len(), 0), "{report:?}");
}

#[test]
fn records_written_before_the_typed_record_read_back_byte_for_byte_and_replay() {
    assert_eq!(REPLAY_VERSION, 1);
    reads_back_and_replays(&retail_dir().join("contract.toml"), "replay-v1-retail.jsonl");
    let rename = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rename/contract.toml");
    reads_back_and_replays(&rename, "replay-v1-rename.jsonl");
}

/// The demo's turns ran with no model: played again on a fresh store, each is recorded as it
/// was, its response and its replay record byte for byte.
#[test]
fn the_retail_turns_played_again_are_recorded_as_before() {
    let (mut engine, _dir) = crate::retail_engine();
    for turn in fixture("replay-v1-retail.jsonl") {
        let TurnResult::Decided { repeated: false, .. } = engine.turn(&turn.request).unwrap() else {
            panic!("turn {} was not decided", turn.stored.turn)
        };
        let stored = engine.turns(0, 100).unwrap().pop().unwrap();
        assert_eq!(stored.turn, turn.stored.turn);
        assert_eq!(stored.response.to_string(), turn.response, "turn {}", turn.stored.turn);
        assert_eq!(stored.replay.to_string(), turn.replay, "turn {}", turn.stored.turn);
    }
}

#[test]
fn a_record_missing_a_field_or_from_a_newer_engine_is_corrupt_and_says_which() {
    let base = fixture("replay-v1-rename.jsonl").remove(0).stored;
    let corrupt = |replay: Value| {
        let stored = StoredTurn { replay, ..base.clone() };
        match ReplayRecord::of(&stored) {
            Err(EngineError::Corrupt { what, message }) => format!("{what}: {message}"),
            other => panic!("not corrupt: {other:?}"),
        }
    };
    for field in ["contract", "facts", "conflicts"] {
        let mut replay = base.replay.clone();
        replay.as_object_mut().unwrap().remove(field);
        let error = corrupt(replay);
        assert!(error.contains(&format!("missing field `{field}`")), "{error}");
        assert!(error.starts_with("replay record of turn `t1`"), "{error}");
    }
    let mut replay = base.replay.clone();
    replay["facts"] = json!("none");
    assert!(corrupt(replay).contains("invalid type"));
    let mut newer = base.replay.clone();
    newer["version"] = json!(2);
    let error = corrupt(newer);
    assert!(error.contains("version 2 is newer than this engine reads (up to 1)"), "{error}");

    // Version 1 named is version 1, written as before: without the field.
    let mut named = base.replay.clone();
    named["version"] = json!(1);
    let record = ReplayRecord::of(&StoredTurn { replay: named, ..base.clone() }).unwrap();
    assert_eq!(serde_json::to_value(&record).unwrap(), base.replay);
    // A record from before the checks, the guards and the outbound gate reads with none.
    let first = json!({"contract": "c", "facts": base.replay["facts"], "conflicts": []});
    let record = ReplayRecord::of(&StoredTurn { replay: first, ..base }).unwrap();
    assert!(record.checks.is_empty() && record.answers.is_empty() && record.model_calls.is_empty());
    assert!(record.findings.is_empty() && record.outbound_answers.is_empty());
}
