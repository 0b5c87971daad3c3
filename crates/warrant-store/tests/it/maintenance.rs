//! The store as a whole, on both backends: its schema steps, its integrity, where every effect
//! stands, the export of its ledger as JSON lines, and a store built at an older migration
//! step migrated in place with its data intact. SQLite's live backup under committing threads
//! is in `backup.rs`.

use std::path::PathBuf;

use serde_json::{Value, json};
use warrant_store::{
    CommitOutcome, EXPORT_KINDS, EffectHold, ExportError, ExportLine, Ledger, OutcomeResult, PendingEffect,
    Precondition, Store, StoreError,
};

use crate::build::{commit, effect, event, interaction, report, rows, write};
use crate::fixture::{Backend, Fixture, admin};

/// A store with every kind of row an export writes: records (one deleted), turns, an
/// interaction, effects with and without outcomes, a hold and events.
fn populated(store: &mut dyn Store) {
    store
        .seed_records("orders", &rows(&[("#W1", json!({"status": "pending"})), ("#W2", json!({"status": "paid"}))]))
        .unwrap();
    let mut first = commit("c1", "t1");
    first.writes.push(write("orders", "#W1", 1, json!({"status": "cancelled"})));
    first.effects.push(effect("e1", "cancel:#W1", &first));
    first.events.push(event("v1", "c1", "order_cancelled", Some("e1")));
    first.opened.push(interaction("i1", &first));
    assert!(matches!(store.commit(&first).unwrap(), CommitOutcome::Committed { .. }));
    let mut second = commit("c1", "t2");
    second.effects.push(effect("e2", "ship:#W2", &second));
    second.effects.push(effect("e3", "refund:#W2", &second));
    second.holds.push(EffectHold { effect: "e2".into(), table: "orders".into(), key: "#W2".into() });
    assert!(matches!(store.commit(&second).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(store.report_outcome(&report("e1", "done", "v2", "c1")).unwrap(), OutcomeResult::Recorded);
    assert_eq!(store.report_outcome(&report("e3", "unknown", "v3", "c1")).unwrap(), OutcomeResult::Recorded);
    store.put_record("orders", "#W3", &json!({"status": "new"}), Precondition::IfNoneMatch).unwrap();
    store.delete_record("orders", "#W3", 1).unwrap();
}

/// The export of `store` as the lines it wrote, each parsed back.
fn exported(store: &mut dyn Store) -> Vec<Value> {
    let mut lines = Vec::new();
    store
        .export(&mut |line: ExportLine| {
            lines.push(serde_json::to_string(&line).map_err(std::io::Error::other)?);
            Ok(())
        })
        .unwrap();
    lines.iter().map(|line| serde_json::from_str(line).unwrap()).collect()
}

pub fn a_migrated_store_has_run_every_step_this_build_knows(fx: &Fixture) {
    let schema = fx.open().schema().unwrap();
    assert!(!schema.known.is_empty());
    assert_eq!(schema.applied, schema.known);
    assert_eq!((schema.pending(), schema.unknown()), (vec![], vec![]));
    let bare = fx.bare_sibling();
    let never = bare.open().schema().unwrap();
    assert_eq!((never.applied.len(), never.pending()), (0, never.known.clone()));
}

pub fn a_sound_store_s_integrity_finds_nothing(fx: &Fixture) {
    let mut store = fx.open();
    populated(&mut *store);
    let integrity = store.integrity().unwrap();
    assert_eq!(integrity.problems, Vec::<String>::new(), "{}", integrity.method);
}

pub fn every_effect_is_settled_or_listed_as_pending(fx: &Fixture) {
    let mut store = fx.open();
    populated(&mut *store);
    let census = store.effect_census().unwrap();
    let pending = |id: &str, outcome: Option<&str>| PendingEffect {
        id: id.into(),
        op: "cancel_order".into(),
        conversation: "c1".into(),
        turn: "t2".into(),
        outcome: outcome.map(str::to_owned),
    };
    assert_eq!((census.effects, census.settled), (3, 1));
    assert_eq!(census.pending, [pending("e2", None), pending("e3", Some("unknown"))]);
    assert_eq!((census.orphaned.len(), census.unreadable.len()), (0, 0));
}

pub fn an_export_writes_every_row_once_kind_by_kind_with_its_json_as_stored(fx: &Fixture) {
    let mut store = fx.open();
    populated(&mut *store);
    let lines = exported(&mut *store);
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"schema"));
    // Each kind together, in the order the documentation gives.
    let mut order: Vec<&str> = kinds.clone();
    order.dedup();
    assert_eq!(order[1..], EXPORT_KINDS);
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    assert_eq!(
        [count("record"), count("turn"), count("interaction"), count("effect"), count("hold"), count("event")],
        [3, 2, 1, 3, 1, 3]
    );
    let schema = store.schema().unwrap();
    assert_eq!(lines[0]["steps"], json!(schema.applied));
    let turn = lines.iter().find(|l| l["kind"] == "turn" && l["turn"] == "t1").unwrap();
    assert_eq!(turn["replay"], commit("c1", "t1").turn.replay.to_value().unwrap());
    assert_eq!(turn["request"], commit("c1", "t1").turn.request.to_value().unwrap());
    let deleted = lines.iter().find(|l| l["kind"] == "record" && l["key"] == "#W3").unwrap();
    assert_eq!((&deleted["deleted"], &deleted["revision"]), (&json!(true), &json!(2)));
    let cancelled = lines.iter().find(|l| l["kind"] == "record" && l["key"] == "#W1").unwrap();
    assert_eq!((&cancelled["value"], &cancelled["deleted"]), (&json!({"status": "cancelled"}), &json!(false)));
    let e1 = lines.iter().find(|l| l["kind"] == "effect" && l["id"] == "e1").unwrap();
    assert_eq!((&e1["outcome"], &e1["payload"]["order"]), (&json!("done"), &json!("#W0001")));
    let reported = lines.iter().find(|l| l["kind"] == "event" && l["id"] == "v2").unwrap();
    assert_eq!((&reported["event"], &reported["effect"]), (&json!("effect_reported"), &json!("e1")));
    assert_eq!(lines.iter().find(|l| l["kind"] == "hold").unwrap()["effect"], "e2");
}

pub fn an_export_whose_output_fails_stops_there_and_leaves_the_store_usable(fx: &Fixture) {
    let mut store = fx.open();
    populated(&mut *store);
    let mut taken = 0;
    let stopped = store.export(&mut |_line| {
        taken += 1;
        if taken == 3 { Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "stop")) } else { Ok(()) }
    });
    assert!(matches!(stopped, Err(ExportError::Sink(e)) if e.kind() == std::io::ErrorKind::Interrupted));
    assert_eq!(taken, 3, "lines were taken after the sink failed");
    // The export's snapshot is over: the store commits, and a second export sees the commit.
    assert!(matches!(store.commit(&commit("c2", "t1")).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(exported(&mut *store).iter().filter(|l| l["kind"] == "turn").count(), 3);
}

/// The numbered SQL steps of a backend, as the repository holds them: (step, text).
fn steps(backend: &str) -> Vec<(i64, String)> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("migrations").join(backend);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let step: i64 = name.split('_').next().unwrap().parse().unwrap();
            (step, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// The last step the older store is built at: before outcome reports and holds (0008), the
/// effects-by-turn index (0009) and PostgreSQL's lz4 (0010).
const OLDER: i64 = 7;

/// The store of `bare` built as a build that knew steps 1 to [`OLDER`] left it, with one row in
/// each table those steps made that a turn writes, as that build wrote them.
fn build_older(bare: &Fixture) {
    let data =
        "INSERT INTO records (tbl, key, revision, value) VALUES ('orders', '#W1', 2, '{\"status\":\"cancelled\"}');
        INSERT INTO turns (conversation, turn, request, response, replay)
            VALUES ('c1', 't1', '{\"turn\":\"t1\"}', '{\"acts\":[]}', '{\"facts\":[]}');
        INSERT INTO effects (id, idempotency_key, conversation, turn, op, payload)
            VALUES ('e1', 'cancel:#W1', 'c1', 't1', 'cancel_order', '{\"order\":\"#W1\"}');
        INSERT INTO events (id, conversation, kind, payload, effect)
            VALUES ('v1', 'c1', 'order_cancelled', '{\"order\":\"#W1\"}', 'e1');";
    match &bare.backend {
        Backend::Sqlite { path, .. } => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY,
                     applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP) STRICT;",
            )
            .unwrap();
            for (step, sql) in steps("sqlite").into_iter().filter(|(step, _)| *step <= OLDER) {
                conn.execute_batch(&sql).unwrap();
                conn.execute("INSERT INTO schema_version (version) VALUES (?1)", [step]).unwrap();
            }
            conn.execute_batch(data).unwrap();
        }
        Backend::Postgres { conninfo, schema } => {
            // The store makes its schema when it connects; the steps then run in it.
            drop(bare.open());
            let mut client = admin(conninfo);
            client
                .batch_execute(&format!(
                    "SET search_path TO {schema};
                     CREATE TABLE schema_version (version bigint NOT NULL PRIMARY KEY,
                         applied_at timestamptz NOT NULL DEFAULT now());"
                ))
                .unwrap();
            for (step, sql) in steps("postgres").into_iter().filter(|(step, _)| *step <= OLDER) {
                client.batch_execute(&sql).unwrap();
                client.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&step]).unwrap();
            }
            client.batch_execute(data).unwrap();
        }
    }
}

pub fn a_store_built_at_an_older_step_migrates_in_place_with_its_data_intact(fx: &Fixture) {
    let bare = fx.bare_sibling();
    build_older(&bare);
    let mut store = bare.open();
    let before = store.schema().unwrap();
    assert_eq!(before.applied, (1..=OLDER).collect::<Vec<_>>());
    assert_eq!(before.pending(), before.known.iter().copied().filter(|s| *s > OLDER).collect::<Vec<_>>());
    store.migrate().unwrap();
    let after = store.schema().unwrap();
    assert_eq!((after.applied.clone(), after.pending()), (after.known.clone(), vec![]));

    // What the older build wrote reads back as it wrote it.
    let record = store.record("orders", "#W1").unwrap().unwrap();
    assert_eq!((record.revision, record.value), (2, json!({"status": "cancelled"})));
    let turn = store.turn("c1", "t1").unwrap().unwrap();
    assert_eq!((turn.request, turn.replay), (json!({"turn": "t1"}), json!({"facts": []})));
    let e1 = store.effect("e1").unwrap().unwrap();
    assert_eq!((e1.outcome, e1.report, e1.payload), (None, None, json!({"order": "#W1"})));
    assert_eq!(store.events(Some("c1")).unwrap().iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["v1"]);
    // And what the newer steps added works on it: an outcome with its report, a hold.
    assert_eq!(store.report_outcome(&report("e1", "done", "v2", "c1")).unwrap(), OutcomeResult::Recorded);
    let mut next = commit("c1", "t2");
    next.effects.push(effect("e2", "ship:#W1", &next));
    next.holds.push(EffectHold { effect: "e2".into(), table: "orders".into(), key: "#W1".into() });
    assert!(matches!(store.commit(&next).unwrap(), CommitOutcome::Committed { .. }));
    assert_eq!(store.pending_effect("orders", "#W1").unwrap().as_deref(), Some("e2"));
    assert_eq!(store.integrity().unwrap().problems, Vec::<String>::new());
}

pub fn a_store_migrated_by_a_newer_build_is_refused_and_named(fx: &Fixture) {
    let mut store = fx.open();
    match &fx.backend {
        Backend::Sqlite { path, .. } => {
            rusqlite::Connection::open(path)
                .unwrap()
                .execute("INSERT INTO schema_version (version) VALUES (99)", [])
                .unwrap();
        }
        Backend::Postgres { conninfo, schema } => {
            admin(conninfo)
                .batch_execute(&format!("INSERT INTO {schema}.schema_version (version) VALUES (99)"))
                .unwrap();
        }
    }
    assert_eq!(store.schema().unwrap().unknown(), [99]);
    assert!(matches!(store.migrate(), Err(StoreError::SchemaTooNew { found: 99, .. })));
}
