//! `warrant store backup|check|export|migrate` as processes, on SQLite and PostgreSQL: a backup
//! taken while a server commits turns from several threads holds every turn committed before
//! it began, passes `store check` and opens; `check` names each failure (a replay record that
//! does not read, a verdict that changed, an effect without its turn) and exits 1; `export`
//! writes one JSON object a line, kind by kind, and stops at a signal; `migrate` upgrades a
//! store built at an older step in place and refuses one a newer build migrated; bad input
//! exits 2 with one line on stderr.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::at_rest::alone;
use crate::turns::postgres_schema;
use crate::{root, stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";
const USER: &str = "yusuf_rossi_9620";
const ORDER: &str = "#W6247578";

fn request(conversation: &str, turn: &str, acts: Value, answers: Value) -> Value {
    json!({
        "conversation": conversation, "turn": turn, "actor": USER,
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": acts, "answers": answers,
    })
}

fn lookup(conversation: &str, turn: &str) -> Value {
    request(conversation, turn, json!([{"op": "get_order_details", "args": {"order_id": ORDER}}]), json!([]))
}

fn turn(store: &str, body: &Value) -> Value {
    let out = warrant(&["turn", "--contract", CONTRACT, "--store", store], &body.to_string());
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// A store with a held cancellation, its confirmation (an effect, pending) and a lookup.
fn populated(store: &str) -> String {
    let held = turn(
        store,
        &request(
            "c1",
            "t1",
            json!([{"op": "cancel_pending_order",
        "args": {"order_id": ORDER, "reason": "no longer needed"}}]),
            json!([]),
        ),
    );
    let interaction = held["interactions"][0]["id"].as_str().unwrap();
    let confirmed =
        turn(store, &request("c1", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}])));
    turn(store, &lookup("c2", "t1"));
    confirmed["effects"][0]["id"].as_str().unwrap().to_owned()
}

fn store_cmd(args: &[&str]) -> Output {
    let mut all = vec!["store"];
    all.extend_from_slice(args);
    warrant(&all, "")
}

/// `store check`'s report, and its exit status.
fn check(store: &str) -> (Option<i32>, Value, String) {
    let out = store_cmd(&["check", "--contract", CONTRACT, "--store", store]);
    let report =
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|_| panic!("not JSON: {} {}", stdout(&out), stderr(&out)));
    (out.status.code(), report, stderr(&out))
}

/// The export's lines, parsed, and the kinds they came in, each once, in order.
fn export(store: &str) -> (Vec<Value>, Vec<String>) {
    let out = store_cmd(&["export", "--store", store, "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut kinds: Vec<String> = lines.iter().map(|l| l["kind"].as_str().unwrap().to_owned()).collect();
    kinds.dedup();
    (lines, kinds)
}

fn the_store_commands_on(store: &str) {
    let effect = populated(store);
    let (code, report, said) = check(store);
    assert_eq!((code, &report["passed"]), (Some(0), &json!(true)), "{report} {said}");
    assert_eq!((&report["turns"], &report["identical"]), (&json!(3), &json!(3)), "{report}");
    assert_eq!(report["effects"]["pending"][0]["id"], json!(effect), "the unreported effect is listed: {report}");
    assert_eq!(report["effects"]["settled"], 0);

    let (lines, kinds) = export(store);
    assert_eq!(kinds, ["schema", "record", "turn", "interaction", "effect", "event"], "no hold in this store");
    assert_eq!(lines.iter().filter(|l| l["kind"] == "turn").count(), 3);
    let t2 = lines.iter().find(|l| l["kind"] == "turn" && l["turn"] == "t2").unwrap();
    assert_eq!(t2["response"]["effects"][0]["id"], json!(effect), "the response as stored");
    assert!(t2["replay"].is_object(), "the replay record as stored");
    assert_eq!(lines.iter().find(|l| l["kind"] == "effect").unwrap()["id"], json!(effect));

    let out = store_cmd(&["migrate", "--store", store]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let migrated: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((&migrated["migrated"], &migrated["steps"]), (&json!([]), &lines[0]["steps"]));
}

#[test]
fn sqlite_backup_check_export_and_migrate_do_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = format!("sqlite:{}", path.display());
    the_store_commands_on(&store);
    let copy = dir.path().join("copy.sqlite");
    let out = store_cmd(&["backup", "--store", &store, "--to", copy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((&said["backup"], &said["turns"]), (&json!(copy), &json!(3)), "{said}");
    assert_eq!(alone(&copy, &["SELECT count(*) FROM turns"]), ["ok", "3"]);
    let copied = format!("sqlite:{}", copy.display());
    assert_eq!(check(&copied).0, Some(0));
    assert_eq!(export(&copied).0, export(&store).0, "the copy exports as the store does");
    // A backup never replaces a file.
    let again = store_cmd(&["backup", "--store", &store, "--to", copy.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("exists") && stderr(&again).lines().count() == 1, "{}", stderr(&again));
}

#[test]
fn postgres_check_export_and_migrate_do_what_they_say_and_backup_names_pg_dump() {
    let pg = postgres_schema();
    let store = pg.store();
    the_store_commands_on(&store);
    let out = store_cmd(&["backup", "--store", &store, "--to", "/nonexistent/copy.sqlite"]);
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains("pg_dump --schema=") && said.lines().count() == 1, "{said}");
}

/// Runs `sql` on the SQLite file at `path`.
fn tamper(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
    conn.close().unwrap();
}

#[test]
fn check_names_every_failure_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = format!("sqlite:{}", path.display());
    populated(&store);
    // A replay record that no longer reads, a recorded verdict that replay does not reach, and
    // an effect whose turn is not stored.
    tamper(
        &path,
        "UPDATE turns SET replay = '{\"facts\": 7}' WHERE conversation = 'c2';
         UPDATE turns SET response = replace(response, '\"hold\"', '\"refuse\"') WHERE turn = 't1' AND conversation = 'c1';
         INSERT INTO effects (id, idempotency_key, conversation, turn, op, payload)
             VALUES ('eff_lost', 'key_lost', 'c9', 't9', 'cancel_pending_order', '{}');",
    );
    let (code, report, said) = check(&store);
    assert_eq!((code, &report["passed"]), (Some(1), &json!(false)), "{report}");
    let failures: Vec<&str> = report["failures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(failures.len(), 3, "{failures:#?}");
    assert!(failures.iter().any(|f| f.starts_with("effect `eff_lost`: its turn is not stored")), "{failures:#?}");
    assert!(failures.iter().any(|f| f.starts_with("turn `c2`/`t1` (seq 3): stored replay record")), "{failures:#?}");
    assert!(
        failures.iter().any(|f| f.starts_with("turn `c1`/`t1` act 0 `cancel_pending_order`: refuse")),
        "{failures:#?}"
    );
    assert!(said.starts_with("warrant store check: 3 failed; the first: ") && said.lines().count() == 1, "{said}");
    assert_eq!(report["turns"], 2, "the turns replayed, the unreadable one not among them: {report}");
}

#[test]
fn bad_input_and_missing_stores_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("sqlite:{}", dir.path().join("nothing.sqlite").display());
    for args in [
        vec!["export", "--store", &missing, "--format", "csv"],
        vec!["export", "--store", &missing],
        vec!["check", "--contract", CONTRACT, "--store", &missing],
        vec!["migrate", "--store", &missing],
        vec!["backup", "--store", &missing, "--to", "/tmp/never.sqlite"],
        vec!["migrate", "--store", "mysql://x"],
    ] {
        let out = store_cmd(&args);
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.starts_with("warrant: ") && said.lines().count() == 1, "{args:?}: {said}");
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    assert!(!dir.path().join("nothing.sqlite").exists(), "a store was created where there was none");
    let said = stderr(&store_cmd(&["export", "--store", &missing, "--format", "csv"]));
    assert!(said.contains("`--format csv`: give `jsonl`"), "{said}");
    let said = stderr(&store_cmd(&["migrate", "--store", &missing]));
    assert!(said.contains("there is no file"), "{said}");
    let pg = postgres_schema();
    let said = stderr(&store_cmd(&["check", "--contract", CONTRACT, "--store", &pg.store()]));
    assert!(said.contains("has no schema"), "{said}");
}

/// The numbered SQL steps of the SQLite store, as the repository holds them, up to `last`.
fn steps_to(last: i64) -> Vec<(i64, String)> {
    let folder = root().join("crates/warrant-store/migrations/sqlite");
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let step: i64 = path.file_name().unwrap().to_str().unwrap().split('_').next().unwrap().parse().unwrap();
            (step, std::fs::read_to_string(path).unwrap())
        })
        .filter(|(step, _)| *step <= last)
        .collect()
}

#[test]
fn migrate_upgrades_a_store_built_at_an_older_step_in_place_and_refuses_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY,
             applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP) STRICT;",
    )
    .unwrap();
    for (step, sql) in steps_to(7) {
        conn.execute_batch(&sql).unwrap();
        conn.execute("INSERT INTO schema_version (version) VALUES (?1)", [step]).unwrap();
    }
    conn.execute_batch(
        "INSERT INTO records (tbl, key, revision, value) VALUES ('order', '#W1', 3, '{\"status\":\"cancelled\"}');
         INSERT INTO turns (conversation, turn, request, response, replay) VALUES ('c1', 't1', '{}', '{}', '{}');
         INSERT INTO effects (id, idempotency_key, conversation, turn, op, payload)
             VALUES ('e1', 'k1', 'c1', 't1', 'cancel_pending_order', '{\"order_id\":\"#W1\"}');",
    )
    .unwrap();
    conn.close().unwrap();
    let store = format!("sqlite:{}", path.display());
    let rows = [
        "SELECT revision || ' ' || value FROM records",
        "SELECT seq || ' ' || conversation || '/' || turn FROM turns",
        "SELECT id || ' ' || payload || ' ' || coalesce(outcome, 'none') FROM effects",
    ];
    let before = alone(&path, &rows);
    // An export reads the newest columns: a store behind them is refused, naming the way on.
    let refused = store_cmd(&["export", "--store", &store]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("has not run the schema steps [8, 9, 10]: migrate it first"),
        "{}",
        stderr(&refused)
    );
    let out = store_cmd(&["migrate", "--store", &store]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let migrated: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(migrated["migrated"], json!([8, 9, 10]), "{migrated}");
    assert_eq!(before, ["ok", "3 {\"status\":\"cancelled\"}", "1 c1/t1", "e1 {\"order_id\":\"#W1\"} none"]);
    assert_eq!(alone(&path, &rows), before, "the rows read back as the older build wrote them, the file whole");
    let (after, _) = export(&store);
    assert_eq!(after[0]["steps"], json!((1..=10).collect::<Vec<_>>()));
    let effect = after.iter().find(|l| l["kind"] == "effect").unwrap();
    assert_eq!((&effect["outcome"], &effect["report"]), (&Value::Null, &Value::Null));
    assert_eq!(alone(&path, &["SELECT count(*) FROM effect_holds"]), ["ok", "0"], "step 8 ran");

    tamper(&path, "INSERT INTO schema_version (version) VALUES (99)");
    let out = store_cmd(&["migrate", "--store", &store]);
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains("migrated by a newer warrant") && said.contains("99"), "{said}");
}

#[test]
fn an_export_stops_at_a_signal_between_lines_and_leaves_the_store_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = format!("sqlite:{}", path.display());
    populated(&store);
    let (all, _) = export(&store);
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["store", "export", "--store", &store])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The retail records alone are several times what a pipe holds: the export is still
    // writing, blocked on the pipe, when the signal comes.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let sent = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "the export was not stopped by the signal");
    let lines: Vec<&str> = std::iter::once(first.trim_end()).chain(rest.lines()).collect();
    assert!(lines.len() < all.len(), "the whole export was written: {} lines", lines.len());
    for line in &lines {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("a line cut short: {e}: {line}"));
    }
    assert_eq!(alone(&path, &["SELECT count(*) FROM turns"]), ["ok", "3"]);
}

/// A `warrant serve` process over `folder`, its address read from its first line.
fn serve(folder: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["serve", "--contract", CONTRACT, "--store", &format!("sqlite:{}", folder.display())])
        .args(["--listen", "127.0.0.1:0"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("first line: {line:?}"));
    (child, addr.parse().unwrap())
}

fn post_turn(addr: SocketAddr, key: &str, body: &Value) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST /v1/turns HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split(' ').nth(1).unwrap().parse().unwrap()
}

/// Clients committing turns at once while the backup runs.
const CLIENTS: usize = 4;
/// Turns committed before the backup begins, at the least.
const BEFORE: usize = 120;

#[test]
fn a_backup_taken_while_clients_commit_turns_holds_every_turn_committed_before_it_began() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("tenants");
    let out = warrant(&["tenant", "add", "acme", "--store", &format!("sqlite:{}", folder.display())], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let key = stdout(&out).trim().to_owned();
    let (mut server, addr) = serve(&folder);
    let acknowledged: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let tenant = folder.join("t_acme.sqlite");
    let copy = dir.path().join("backup.sqlite");
    let (before, backup, during) = std::thread::scope(|s| {
        for client in 0..CLIENTS {
            let (acknowledged, stop, key) = (&acknowledged, &stop, &key);
            s.spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let conversation = format!("load{client}");
                    let turn = format!("t{i}");
                    assert_eq!(post_turn(addr, key, &lookup(&conversation, &turn)), 200);
                    acknowledged.lock().unwrap().push(format!("{conversation}/{turn}"));
                    i += 1;
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while acknowledged.lock().unwrap().len() < BEFORE {
            assert!(Instant::now() < deadline, "the clients stalled");
            std::thread::sleep(Duration::from_millis(5));
        }
        let before: BTreeSet<String> = acknowledged.lock().unwrap().iter().cloned().collect();
        let backup =
            store_cmd(&["backup", "--store", &format!("sqlite:{}", tenant.display()), "--to", copy.to_str().unwrap()]);
        let during = acknowledged.lock().unwrap().len() - before.len();
        stop.store(true, Ordering::SeqCst);
        (before, backup, during)
    });
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(backup.status.code(), Some(0), "{}", stderr(&backup));
    let said: Value = serde_json::from_str(&stdout(&backup)).unwrap();
    let (code, report, _) = check(&format!("sqlite:{}", copy.display()));
    assert_eq!((code, &report["passed"]), (Some(0), &json!(true)), "{report}");
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let copied: BTreeSet<String> = conn
        .prepare("SELECT conversation || '/' || turn FROM turns")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(conn);
    let missing: Vec<&String> = before.difference(&copied).collect();
    assert!(missing.is_empty(), "turns committed before the backup began are not in it: {missing:?}");
    let total = acknowledged.lock().unwrap().len();
    assert!(copied.len() <= total && said["turns"] == json!(copied.len()), "{said}");
    eprintln!(
        "backup under {CLIENTS} clients of `warrant serve`: {} turns committed before it began, {} in the copy \
         (checked, {} replayed), {during} more acknowledged while it ran, {total} in all",
        before.len(),
        copied.len(),
        report["turns"]
    );
}
