//! A SQLite store is whole at rest after every way a `warrant` process ends: its file copied
//! alone, without `-wal` and `-shm`, opens with the `sqlite3` command line, `PRAGMA
//! integrity_check` says `ok`, and every turn the test committed is in it. The ends tried: each
//! command's normal exit; SIGTERM and SIGINT to `serve` (the tenant's file and the registry),
//! to `mcp` (over stdio and over HTTP) and to `scheduler run`; a one-shot command given a
//! signal mid-turn (it finishes the turn) or two (it stops at once); a panic unwinding after a
//! commit (the engine's `panic_after_commit` failpoint); and SIGKILL, after which the next open
//! recovers the log. Before the store's last close copied the log into the file, `warrant turn`
//! left a file that alone was "malformed", and `serve` one that held none of its turns.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{root, stderr, stdout, warrant, warrant_with_env};

const CONTRACT: &str = "examples/retail/contract.toml";
const USER: &str = "yusuf_rossi_9620";
const ORDER: &str = "#W6247578";
/// Debian's `sqlite3` command line (`.ci/run` installs it where it is missing).
const SQLITE3: &str = "/usr/bin/sqlite3";

/// The file at `path` copied alone into a folder of its own and opened with the `sqlite3`
/// command line: `PRAGMA integrity_check`'s answer, then each of `queries`' one-line answers.
pub(crate) fn alone(path: &Path, queries: &[&str]) -> Vec<String> {
    assert!(
        Path::new(SQLITE3).exists(),
        "no `sqlite3` command line at {SQLITE3}: install Debian's `sqlite3` package (`.ci/run` does)"
    );
    let folder = tempfile::Builder::new().prefix("warrant-alone-").tempdir().unwrap();
    let copy = folder.path().join("copy.sqlite");
    std::fs::copy(path, &copy).unwrap();
    let out = Command::new(SQLITE3)
        .arg("-batch")
        .arg(&copy)
        .arg("PRAGMA integrity_check")
        .args(queries)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "sqlite3 could not read the file alone: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

/// The file alone's integrity and its number of turns, as `(integrity, turns)`.
fn whole(path: &Path) -> (String, u64) {
    let answers = alone(path, &["SELECT count(*) FROM turns"]);
    let [integrity, turns] = answers.as_slice() else { panic!("sqlite3 answered {answers:?}") };
    (integrity.clone(), turns.parse().unwrap())
}

fn request(conversation: &str, turn: &str, acts: Value, answers: Value) -> Value {
    json!({
        "conversation": conversation, "turn": turn, "actor": USER,
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": acts, "answers": answers,
    })
}

fn cancel() -> Value {
    json!([{"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}}])
}

/// A turn that reads only: committed as a turn, with no effect.
fn lookup(conversation: &str, turn: &str) -> Value {
    request(conversation, turn, json!([{"op": "get_order_details", "args": {"order_id": ORDER}}]), json!([]))
}

fn store_of(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// Sends `signal` (`TERM`, `INT`, `KILL`) to `child`.
fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill -{signal} failed");
}

/// Waits (at most a minute) for `child` to end.
fn ended(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the process did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn turn(store: &str, body: &Value) -> Value {
    let out = warrant(&["turn", "--contract", CONTRACT, "--store", store], &body.to_string());
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn after_each_command_s_normal_exit_the_file_alone_holds_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = store_of(&path);
    let held = turn(&store, &request("c1", "t1", cancel(), json!([])));
    assert_eq!(held["acts"][0]["verdict"], "hold");
    assert_eq!(whole(&path), ("ok".to_owned(), 1), "after `warrant turn`");
    let interaction = held["interactions"][0]["id"].as_str().unwrap();
    let confirmed =
        turn(&store, &request("c1", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}])));
    let effect = confirmed["effects"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(whole(&path), ("ok".to_owned(), 2), "after the confirming `warrant turn`");

    let out = warrant(
        &["effect-outcome", "--contract", CONTRACT, "--store", &store, "--effect", &effect, "--outcome", "done"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let outcome = format!("SELECT outcome FROM effects WHERE id = '{effect}'");
    assert_eq!(alone(&path, &["SELECT count(*) FROM turns", &outcome]), ["ok", "2", "done"], "after `effect-outcome`");

    let got = warrant(&["records", "get", "--contract", CONTRACT, "--store", &store, "order", "#W5199551"], "");
    let mut row: Value = serde_json::from_str(&stdout(&got)).unwrap();
    row["value"]["status"] = json!("delivered");
    let out = warrant(
        &["records", "put", "--contract", CONTRACT, "--store", &store, "order", "#W5199551", "--if-match", "1"],
        &row["value"].to_string(),
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let put = "SELECT revision FROM records WHERE tbl = 'order' AND key = '#W5199551'";
    assert_eq!(alone(&path, &["SELECT count(*) FROM turns", put]), ["ok", "2", "2"], "after `records put`");

    for (args, what) in [
        (vec!["replay", "--contract", CONTRACT, "--store", &store], "`replay`"),
        (vec!["store", "check", "--contract", CONTRACT, "--store", &store], "`store check`"),
        (vec!["store", "migrate", "--store", &store], "`store migrate`"),
    ] {
        let out = warrant(&args, "");
        assert_eq!(out.status.code(), Some(0), "{what}: {}{}", stdout(&out), stderr(&out));
        assert_eq!(whole(&path), ("ok".to_owned(), 2), "after {what}");
    }
    // A reader that goes away early ends the process quietly, the store closed all the same.
    let mut export = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["store", "export", "--store", &store])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(export.stdout.take());
    assert_eq!(ended(&mut export).code(), Some(0));
    assert_eq!(whole(&path), ("ok".to_owned(), 2), "after `store export` into a closed pipe");
}

#[test]
fn after_a_panic_unwinds_past_a_committed_turn_the_file_alone_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = store_of(&path);
    turn(&store, &lookup("c1", "t1"));
    let out = warrant_with_env(
        &["turn", "--contract", CONTRACT, "--store", &store],
        &lookup("c1", "t2").to_string(),
        &[("WARRANT_FAILPOINT", "panic_after_commit")],
        &[],
    );
    assert_eq!(out.status.code(), Some(101), "the process did not panic: {}", stderr(&out));
    assert!(stderr(&out).contains("failpoint `after_commit`"), "{}", stderr(&out));
    assert_eq!(whole(&path), ("ok".to_owned(), 2));
}

/// `warrant turn` with `failpoint` set, the request on its standard input (the turns tests' own).
fn spawn_turn(store: &str, body: &Value, failpoint: &str) -> Child {
    crate::turns::spawn_turn(store, &body.to_string(), failpoint)
}

#[test]
fn after_sigkill_the_next_open_recovers_the_log_and_leaves_the_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = store_of(&path);
    turn(&store, &lookup("c1", "t1"));
    let paused = dir.path().join("paused");
    let mut child = spawn_turn(&store, &lookup("c1", "t2"), &format!("pause_after_commit:{}", paused.display()));
    wait_for(&paused);
    // Committed and acknowledged to the engine, and killed before anything closes.
    signal(&child, "KILL");
    assert!(!ended(&mut child).success());
    let out = warrant(&["replay", "--contract", CONTRACT, "--store", &store], "");
    assert!(stdout(&out).contains("2 turns replayed"), "the next open did not find the turn: {}", stdout(&out));
    assert_eq!(whole(&path), ("ok".to_owned(), 2));
}

#[test]
fn a_signal_mid_turn_lets_the_turn_finish_and_two_stop_the_process_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let store = store_of(&path);
    turn(&store, &lookup("c1", "t1"));
    for (signal_name, status) in [("TERM", 143), ("INT", 130)] {
        // One signal while the turn is paused before its commit: it commits, and the process
        // exits as it would have, its store closed.
        let paused = dir.path().join(format!("paused-{signal_name}"));
        let mut child = spawn_turn(
            &store,
            &lookup("c1", &format!("one-{signal_name}")),
            &format!("pause_before_commit:{}", paused.display()),
        );
        wait_for(&paused);
        signal(&child, signal_name);
        std::fs::write(format!("{}.go", paused.display()), "").unwrap();
        let finished = ended(&mut child);
        let mut said = String::new();
        child.stdout.take().unwrap().read_to_string(&mut said).unwrap();
        assert!(finished.success(), "{finished}: {said}");
        assert!(said.contains("\"verdict\""), "the turn did not answer: {said}");
        // Two: the process ends at once, before the commit, with the signal's status.
        let paused = dir.path().join(format!("twice-{signal_name}"));
        let mut child = spawn_turn(
            &store,
            &lookup("c1", &format!("two-{signal_name}")),
            &format!("pause_before_commit:{}", paused.display()),
        );
        wait_for(&paused);
        signal(&child, signal_name);
        // Two signals sent together may arrive as one: the second goes once the first is taken.
        let mut said = BufReader::new(child.stderr.take().unwrap()).lines();
        let taken =
            said.find(|line| line.as_ref().is_ok_and(|l| l.starts_with("warrant: stopping after the current step")));
        assert!(taken.is_some(), "the process did not say it took the signal");
        signal(&child, signal_name);
        assert_eq!(ended(&mut child).code(), Some(status));
    }
    assert_eq!(whole(&path), ("ok".to_owned(), 3), "the turns finished, and only those");
}

/// A `warrant serve` process over `folder`, its address read from its first line.
fn serve(folder: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["serve", "--contract", CONTRACT, "--store", &store_of(folder), "--listen", "127.0.0.1:0"])
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

/// `POST /v1/turns` with `Connection: close`; the status.
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

fn tenant(folder: &Path, name: &str) -> String {
    let out = warrant(&["tenant", "add", name, "--store", &store_of(folder)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out).trim().to_owned()
}

#[test]
fn after_sigterm_and_sigint_to_serve_the_tenant_s_file_and_the_registry_alone_hold_everything() {
    for (signal_name, turns) in [("TERM", 6), ("INT", 4)] {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("tenants");
        let key = tenant(&folder, "acme");
        tenant(&folder, "globex");
        let (mut child, addr) = serve(&folder);
        for i in 0..turns {
            assert_eq!(post_turn(addr, &key, &lookup("c1", &format!("t{i}"))), 200);
        }
        signal(&child, signal_name);
        let status = ended(&mut child);
        assert!(status.success(), "serve ended with {status} on SIG{signal_name}");
        assert_eq!(whole(&folder.join("t_acme.sqlite")), ("ok".to_owned(), turns), "SIG{signal_name}");
        let tenants = alone(&folder.join("control.sqlite"), &["SELECT count(*) FROM tenants"]);
        assert_eq!(tenants, ["ok", "2"], "the registry after SIG{signal_name}");
    }
}

#[test]
fn after_sigterm_and_sigint_to_the_scheduler_the_file_alone_holds_every_turn_and_delivery() {
    use warrant_store::{Ledger, Outbox, OutboxMessage, SqliteStore};
    for signal_name in ["TERM", "INT"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sqlite");
        let store = store_of(&path);
        turn(&store, &lookup("c1", "t1"));
        turn(&store, &lookup("c1", "t2"));
        {
            let mut outbox = SqliteStore::open(&path).unwrap();
            outbox.migrate().unwrap();
            for n in 0..5 {
                let message = OutboxMessage {
                    id: format!("m{n}"),
                    conversation: "c1".into(),
                    path: "scheduled".into(),
                    channel: "webhook".into(),
                    body: json!({"n": n}),
                    record: json!({"basis": "cleared"}),
                    idempotency_key: format!("k{n}"),
                };
                outbox.enqueue(&message, 0).unwrap();
            }
            outbox.close().unwrap();
        }
        let webhook = crate::receiver::Webhook::start(crate::receiver::Behaviour::Answer(200));
        let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .args(["scheduler", "run", "--contract", CONTRACT, "--store", &store, "--webhook", &webhook.url()])
            .args(["--poll-ms", "20"])
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while webhook.log().applied.len() < 5 {
            assert!(Instant::now() < deadline, "the scheduler did not deliver: {:?}", webhook.log().wire);
            std::thread::sleep(Duration::from_millis(10));
        }
        // Delivered, and recorded sent by the pass that delivered it, which the signal lets end.
        signal(&child, signal_name);
        let status = ended(&mut child);
        assert!(status.success(), "the scheduler ended with {status} on SIG{signal_name}");
        let sent = "SELECT count(*) FROM outbox WHERE state = 'sent'";
        assert_eq!(alone(&path, &["SELECT count(*) FROM turns", sent]), ["ok", "2", "5"], "SIG{signal_name}");
    }
}

/// A JSON-RPC exchange with `warrant mcp` over its standard input and output.
struct Stdio2 {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Stdio2 {
    fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to request `id`, past whatever the gateway says before it.
    fn answer(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(self.out.read_line(&mut line).unwrap() > 0, "the gateway closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
        }
    }
}

const FATIMA: &str = "fatima_johnson_7581";
const FATIMAS_ORDER: &str = "#W5199551";

/// The retail downstream the gateway starts as its child, and where it logs what it performs.
fn downstream(dir: &Path) -> (Vec<String>, (String, String)) {
    let flags = vec![
        "--downstream-stdio".to_owned(),
        crate::mcp::python().display().to_string(),
        root().join("examples/retail/retail_server.py").display().to_string(),
        root().join("examples/retail/data").display().to_string(),
    ];
    (flags, ("RETAIL_DOWNSTREAM_LOG".to_owned(), dir.join("performed.jsonl").display().to_string()))
}

#[test]
fn after_sigterm_to_the_gateway_over_stdio_the_file_alone_holds_every_call_s_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let (flags, log) = downstream(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp", "--contract", CONTRACT, "--store", &store_of(&path), "--actor", FATIMA])
        .args(&flags)
        .env(&log.0, &log.1)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut gateway = Stdio2 { child, out };
    gateway.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "at-rest", "version": "0"}}}));
    assert!(gateway.answer(0).get("result").is_some());
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    const CALLS: u64 = 3;
    for id in 1..=CALLS {
        gateway.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "get_order_details", "arguments": {"order_id": FATIMAS_ORDER}}}));
        let answer = gateway.answer(id);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    // The client is still there, its standard input open: the signal alone ends the session.
    signal(&gateway.child, "TERM");
    let status = ended(&mut gateway.child);
    assert!(status.success(), "the gateway ended with {status} on SIGTERM");
    assert_eq!(whole(&path), ("ok".to_owned(), CALLS));
}

#[test]
fn after_sigint_to_the_gateway_over_http_the_file_alone_holds_every_call_s_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let keys = dir.path().join("keys");
    let key = tenant(&keys, FATIMA);
    let (flags, log) = downstream(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["mcp", "--contract", CONTRACT, "--store", &store_of(&path), "--listen", "127.0.0.1:0"])
        .args(["--keys", &store_of(&keys)])
        .args(&flags)
        .env(&log.0, &log.1)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
    let call = json!({"name": "get_order_details", "arguments": {"order_id": FATIMAS_ORDER}});
    let session = json!({"url": url.trim(), "headers": {"Authorization": format!("Bearer {key}")},
                         "decision": "confirm", "calls": [call, call]});
    let outs = crate::mcp::run_client(dir.path(), &[session]);
    let results = outs[0]["results"].as_array().unwrap_or_else(|| panic!("{}", outs[0]));
    assert!(results.iter().all(|r| r["is_error"] == false), "{results:?}");
    signal(&child, "INT");
    let status = ended(&mut child);
    assert!(status.success(), "the gateway ended with {status} on SIGINT");
    assert_eq!(whole(&path), ("ok".to_owned(), 2));
    assert_eq!(alone(&keys.join("control.sqlite"), &["SELECT count(*) FROM tenants"]), ["ok", "1"]);
}
