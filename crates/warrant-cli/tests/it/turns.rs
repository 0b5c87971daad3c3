//! `warrant turn`, `effect-outcome`, `replay` and `demo` as processes: a process killed before
//! its commit leaves nothing behind, a repeated turn does nothing twice on both stores, and two
//! processes racing for one record on PostgreSQL end with exactly one winner.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{root, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";
const USER: &str = "yusuf_rossi_9620";
const ORDER: &str = "#W6247578";

fn request(conversation: &str, turn: &str, acts: Value, answers: Value) -> String {
    json!({
        "conversation": conversation,
        "turn": turn,
        "actor": USER,
        "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York",
        "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": acts,
        "answers": answers,
    })
    .to_string()
}

fn cancel() -> Value {
    json!([{"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}}])
}

fn turn(store: &str, body: &str) -> (Option<i32>, Value) {
    let out = warrant(&["turn", "--contract", CONTRACT, "--store", store], body);
    let text = stdout(&out);
    (
        out.status.code(),
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text} {}", crate::stderr(&out))),
    )
}

/// `warrant turn` on the retail contract with `failpoint` set, `body` on its standard input.
pub(crate) fn spawn_turn(store: &str, body: &str, failpoint: &str) -> Child {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["turn", "--contract", CONTRACT, "--store", store])
        .env("WARRANT_FAILPOINT", failpoint)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    child
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The order's status and revision, read through a read-only turn's facts.
fn order_status(store: &str, turn_key: &str) -> Value {
    let (_, response) = turn(
        store,
        &request("probe", turn_key, json!([{"op": "get_order_details", "args": {"order_id": ORDER}}]), json!([])),
    );
    response
}

pub(crate) fn sqlite_store(dir: &tempfile::TempDir) -> String {
    format!("sqlite:{}", dir.path().join("w.sqlite").display())
}

/// A PostgreSQL store in a fresh schema, dropped when the guard goes.
pub(crate) struct PgSchema {
    url: String,
    schema: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        match postgres::Client::connect(&self.url, postgres::NoTls) {
            Ok(mut client) => {
                if let Err(e) = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema)) {
                    eprintln!("cannot drop schema {}: {e}", self.schema);
                }
            }
            Err(e) => eprintln!("cannot drop schema {}: {e}", self.schema),
        }
    }
}

impl PgSchema {
    pub(crate) fn store(&self) -> String {
        format!("{}?schema={}", self.url, self.schema)
    }
}

pub(crate) fn postgres_schema() -> PgSchema {
    let schema =
        format!("warrant_cli_{}_{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
    let url =
        std::env::var("WARRANT_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    PgSchema { url, schema }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn repeated_turn_does_nothing_twice(store: &str) {
    let (code, held) = turn(store, &request("c", "t1", cancel(), json!([])));
    assert_eq!(code, Some(0), "{held}");
    assert_eq!(held["acts"][0]["verdict"], "hold");
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let answer = request("c", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    let (_, first) = turn(store, &answer);
    assert_eq!(first["acts"][0]["verdict"], "commit", "{first}");
    assert!(first.get("repeated").is_none(), "{first}");
    // The same request again, its keys in another order: the recorded response, marked.
    let (code, mut second) = turn(store, &reversed(&serde_json::from_str(&answer).unwrap()).to_string());
    assert_eq!(code, Some(0), "{second}");
    assert_eq!(second.as_object_mut().unwrap().remove("repeated"), Some(json!(true)));
    assert_eq!(first, second);
    // The same key with another request (another actor, another operation) does nothing.
    let mut other: Value = serde_json::from_str(&answer).unwrap();
    other["actor"] = json!("mia_garcia_4516");
    other["answers"] = json!([]);
    other["acts"] = json!([{"op": "get_user_details", "args": {"user_id": "mia_garcia_4516"}}]);
    let (code, reused) = turn(store, &other.to_string());
    assert_eq!(code, Some(2), "{reused}");
    assert_eq!((&reused["error"]["code"], &reused["error"]["field"]), (&json!("turn_key_reused"), &json!("turn")));
    let effect = first["effects"][0]["id"].as_str().unwrap().to_owned();
    let out = warrant(
        &["effect-outcome", "--contract", CONTRACT, "--store", store, "--effect", &effect, "--outcome", "done"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::stderr(&out));
    let out = warrant(
        &["effect-outcome", "--contract", CONTRACT, "--store", store, "--effect", &effect, "--outcome", "done"],
        "",
    );
    let again: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(again["recorded"], false);
    // One cancellation: proposing it again is refused because the order is no longer pending.
    let (_, third) = turn(store, &request("c", "t3", cancel(), json!([])));
    assert_eq!(third["acts"][0]["reasons"][0]["policies"], json!(["order_not_pending"]));
    let out = warrant(&["replay", "--contract", CONTRACT, "--store", store], "");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("3 turns replayed, 3 identical, 0 verdicts changed\n"), "{}", stdout(&out));
}

/// `value` with the keys of every object in reverse order.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

#[test]
fn sqlite_a_repeated_turn_does_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    repeated_turn_does_nothing_twice(&sqlite_store(&dir));
}

#[test]
fn postgres_a_repeated_turn_does_nothing_twice() {
    let pg = postgres_schema();
    repeated_turn_does_nothing_twice(&pg.store());
}

fn killed_before_commit_leaves_nothing(store: &str, marker: &Path) {
    let (_, held) = turn(store, &request("k", "t1", cancel(), json!([])));
    let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
    let answer = request("k", "t2", json!([]), json!([{"interaction": interaction, "option": "confirm"}]));
    // Aborted at the failpoint.
    let child = spawn_turn(store, &answer, "before_commit");
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    // Killed while paused between its checks and its commit.
    let mut child = spawn_turn(store, &answer, &format!("pause_before_commit:{}", marker.display()));
    wait_for(marker);
    child.kill().unwrap();
    child.wait().unwrap();
    let probe = order_status(store, "probe-1");
    assert_eq!(probe["acts"][0]["verdict"], "commit");
    // The interaction is still open, nothing was committed: the answer now commits once.
    let (_, done) = turn(store, &answer);
    assert_eq!(done["acts"][0]["verdict"], "commit", "{done}");
    let (_, again) = turn(store, &request("k", "t3", cancel(), json!([])));
    assert_eq!(again["acts"][0]["reasons"][0]["policies"], json!(["order_not_pending"]), "{again}");
}

#[test]
fn sqlite_a_process_killed_before_its_commit_leaves_no_partial_effect() {
    let dir = tempfile::tempdir().unwrap();
    killed_before_commit_leaves_nothing(&sqlite_store(&dir), &dir.path().join("paused"));
}

#[test]
fn postgres_a_process_killed_before_its_commit_leaves_no_partial_effect() {
    let dir = tempfile::tempdir().unwrap();
    let pg = postgres_schema();
    killed_before_commit_leaves_nothing(&pg.store(), &dir.path().join("paused"));
}

/// A turn paused before its commit while another request with the same key commits: when it
/// commits, the store answers that the key is taken, and it is refused as a reused key; had it
/// been the same request, it would get the recorded response.
fn a_key_taken_while_a_turn_decides(store: &str, dir: &Path) {
    let probe = |actor: &str| {
        let mut body: Value = serde_json::from_str(&request("race", "t1", json!([]), json!([]))).unwrap();
        body["actor"] = json!(actor);
        body["acts"] = json!([{"op": "get_user_details", "args": {"user_id": actor}}]);
        body.to_string()
    };
    for (round, (first, second)) in [(USER, "mia_garcia_4516"), (USER, USER)].into_iter().enumerate() {
        let first = probe(first).replace("\"race\"", &format!("\"race{round}\""));
        let second = probe(second).replace("\"race\"", &format!("\"race{round}\""));
        let marker = dir.join(format!("paused-{round}"));
        let child = spawn_turn(store, &first, &format!("pause_before_commit:{}", marker.display()));
        wait_for(&marker);
        let (code, committed) = turn(store, &second);
        assert_eq!(code, Some(0), "{committed}");
        std::fs::write(format!("{}.go", marker.display()), "").unwrap();
        let out = child.wait_with_output().unwrap();
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        if first == second {
            assert_eq!(out.status.code(), Some(0), "{answer}");
            assert_eq!(answer["repeated"], true, "{answer}");
            assert_eq!(answer["effects"], committed["effects"]);
        } else {
            assert_eq!(out.status.code(), Some(2), "{answer}");
            assert_eq!(answer["error"]["code"], "turn_key_reused", "{answer}");
        }
    }
}

#[test]
fn sqlite_a_key_taken_while_a_turn_decides_is_reused_or_repeated() {
    let dir = tempfile::tempdir().unwrap();
    a_key_taken_while_a_turn_decides(&sqlite_store(&dir), dir.path());
}

#[test]
fn postgres_a_key_taken_while_a_turn_decides_is_reused_or_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let pg = postgres_schema();
    a_key_taken_while_a_turn_decides(&pg.store(), dir.path());
}

/// A turn's first decision is made on the rows read with its lookup (one read transaction on
/// SQLite, one pipeline beside the lookup on PostgreSQL). A row the system of record changes
/// while the turn is paused after its lookup makes that decision's commit stale; the turn is
/// decided again on the row as changed, and its replay record names the conflict.
fn a_row_changed_after_the_lookup_makes_the_first_decision_stale(store: &str, dir: &Path) {
    let body = request("ahead", "t1", json!([{"op": "get_order_details", "args": {"order_id": ORDER}}]), json!([]));
    let marker = dir.join("paused-ahead");
    let child = spawn_turn(store, &body, &format!("pause_after_lookup:{}", marker.display()));
    wait_for(&marker);
    let get = warrant(&["records", "get", "order", ORDER, "--contract", CONTRACT, "--store", store], "");
    let row: Value = serde_json::from_str(&stdout(&get)).unwrap();
    let mut shipped = row["value"].clone();
    shipped["status"] = json!("delivered");
    let put = warrant(
        &["records", "put", "order", ORDER, "--if-match", "1", "--contract", CONTRACT, "--store", store],
        &shipped.to_string(),
    );
    assert_eq!(put.status.code(), Some(0), "{}", crate::stderr(&put));
    std::fs::write(format!("{}.go", marker.display()), "").unwrap();
    let out = child.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((out.status.code(), &answer["acts"][0]["verdict"]), (Some(0), &json!("commit")), "{answer}");

    let mut engine = warrant_engine::Engine::builder()
        .contract_file(root().join(CONTRACT))
        .model(warrant_engine::ModelSource::None)
        .open(store)
        .unwrap();
    let stored = engine.turns(0, 10).unwrap();
    let replay = &stored.iter().find(|t| t.conversation == "ahead").unwrap().replay;
    assert_eq!(replay["conflicts"], json!([{"table": "order", "key": ORDER}]), "{replay}");
    let read = replay["facts"]["records"].as_array().unwrap();
    let order = read.iter().find(|r| r["key"] == ORDER).unwrap();
    assert_eq!((&order["revision"], &order["value"]["status"]), (&json!(2), &json!("delivered")), "{order}");
}

#[test]
fn sqlite_a_row_changed_after_the_lookup_makes_the_first_decision_stale() {
    let dir = tempfile::tempdir().unwrap();
    a_row_changed_after_the_lookup_makes_the_first_decision_stale(&sqlite_store(&dir), dir.path());
}

#[test]
fn postgres_a_row_changed_after_the_lookup_makes_the_first_decision_stale() {
    let dir = tempfile::tempdir().unwrap();
    let pg = postgres_schema();
    a_row_changed_after_the_lookup_makes_the_first_decision_stale(&pg.store(), dir.path());
}

#[test]
fn postgres_two_processes_racing_for_one_record_have_exactly_one_winner() {
    let pg = postgres_schema();
    let store = pg.store();
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        // Two confirmations held on the same order at the same revision, in two conversations.
        let order = ["#W6247578", "#W4776164", "#W9711842"][round];
        let acts = json!([{"op": "modify_pending_order_address", "args": {
            "order_id": order, "address1": {"ptr": [1, 2]}, "address2": "", "city": {"ptr": [3, 3]},
            "state": {"ptr": [4, 4]}, "country": {"ptr": [5, 5]}, "zip": {"ptr": [6, 6]}}}]);
        let mut ids = Vec::new();
        for side in ["a", "b"] {
            let mut body: Value =
                serde_json::from_str(&request(&format!("race{round}{side}"), "hold", acts.clone(), json!([]))).unwrap();
            body["entries"][0]["text"] = json!("12 Elm Springfield IL USA 62701");
            let (_, held) = turn(&store, &body.to_string());
            if round == 2 {
                // A cancelled order cannot be changed: the race needs a pending one.
                assert_eq!(held["acts"][0]["verdict"], "refuse");
                continue;
            }
            assert_eq!(held["acts"][0]["verdict"], "hold", "{held}");
            ids.push(held["interactions"][0]["id"].as_str().unwrap().to_owned());
        }
        if round == 2 {
            continue;
        }
        let marker = |side: &str| dir.path().join(format!("paused-{round}-{side}"));
        let children: Vec<(PathBuf, Child)> = ["a", "b"]
            .iter()
            .zip(&ids)
            .map(|(side, id)| {
                let answer = request(
                    &format!("race{round}{side}"),
                    "confirm",
                    json!([]),
                    json!([{"interaction": id, "option": "confirm"}]),
                );
                (marker(side), spawn_turn(&store, &answer, &format!("pause_before_commit:{}", marker(side).display())))
            })
            .collect();
        for (path, _) in &children {
            wait_for(path);
        }
        for (path, _) in &children {
            std::fs::write(format!("{}.go", path.display()), "").unwrap();
        }
        let mut verdicts: Vec<String> = children
            .into_iter()
            .map(|(_, child)| {
                let out = child.wait_with_output().unwrap();
                let response: Value = serde_json::from_slice(&out.stdout).unwrap();
                let act = &response["acts"][0];
                format!(
                    "{} {}",
                    act["verdict"].as_str().unwrap(),
                    act["reasons"].get(0).map_or("", |r| r["code"].as_str().unwrap())
                )
            })
            .collect();
        verdicts.sort();
        assert_eq!(verdicts, ["commit ", "refuse stale_revision"], "round {round}");
    }
}

#[test]
fn the_demo_runs_from_any_folder_and_shows_each_rule_at_work() {
    // From a folder that is not the repository: the example is in the binary.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_warrant")).arg("demo").current_dir(elsewhere.path()).output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", crate::stderr(&out));
    let scenes: &[(&str, &[&str])] = &[
        (
            "rule 1: a question with the right words stays inert",
            &[
                r#""We can close this ticket now." -> close_ticket"#,
                r#""Can we close this ticket now?" -> nothing (unregistered_sentence: "Can we close this ticket now?")"#,
                r#""She said we can close this ticket now." -> nothing (unregistered_sentence"#,
            ],
        ),
        (
            "the acts",
            &[
                "cancel_pending_order -> hold (confirmation_required)",
                "cancel_pending_order -> commit, effect eff_",
                "a turn seen before: its recorded result comes back and nothing runs again",
                "rule order_not_pending",
                // Another customer's order is, to this one, an order that does not exist.
                "unknown_record at `args.order_id`: table `order` has no row `#W2611340`",
                "not_in_closed_set at `args.reason`",
                "pair_mismatch at `args.new_item_ids`",
                "not_a_member at `args.payment_method_id`",
                "order #W6679257 is now return requested (revision 2)",
            ],
        ),
        (
            "rule 5: a pointer sliced from the user's words",
            &[
                r#"code slices them: address1 = "12 Elm St", city = "Springfield", state = "IL", zip = "62701""#,
                "modify_pending_order_address -> refuse (declined_by_user)",
            ],
        ),
        (
            "rule 4: a value the user never gave is asked about, not written",
            &[
                "modify_pending_order_address -> ask (check_unfinished at `args.city`: check `locate`",
                "nothing is written: order #W4776164 still ships to Philadelphia (revision 1)",
            ],
        ),
        (
            "rule 2: an announcement with no call is found, in observe mode",
            &[
                r#"guard finding announcement_without_call in observe mode: "Let me check your order." announces get_order_details"#,
                r#"the reply goes out fallback (nothing_backed, fallback_sent): "Thanks for your message."#,
            ],
        ),
        (
            "rule 3: seed 003's follow-up goes out as fallback copy, a backed one as is",
            &[
                "goes out fallback (claim_unbacked, nothing_backed, fallback_sent): \"We're following up on your recent request.",
                r#"goes out cleared: "Your order #W6247578 is cancelled.""#,
            ],
        ),
        (
            "the wire format and replay",
            &["request refused whole: invalid_input at `tool`", "13 turns, 13 identical, 0 verdicts changed"],
        ),
    ];
    for (scene, lines) in scenes {
        for expected in *lines {
            assert!(text.contains(expected), "{scene}: the demo lacks `{expected}`:\n{text}");
        }
    }
    // The scenes come in the order the demo tells them.
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no `{needle}`"));
    let order = ["rule 1:", "the acts:", "rule 5:", "rule 4:", "rule 2:", "rule 3:", "replay of the stored turns"];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
    assert!(std::fs::read_dir(elsewhere.path()).unwrap().next().is_none(), "the demo wrote into the current folder");
}

/// The features warrant-engine is built with for the `warrant` binary, as `cargo tree` resolves
/// them: with the test targets' dev-dependencies, or for the binary alone (`no-dev`), which is
/// what `cargo build --release -p warrant-cli` builds.
fn engine_features(edges: &str) -> String {
    features_of("warrant-engine", edges)
}

/// The features of `krate` in warrant-cli's tree along `edges`.
fn features_of(krate: &str, edges: &str) -> String {
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["tree", "--locked", "--offline", "-p", "warrant-cli", "-i", krate, "-e", edges])
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_release_build_of_warrant_has_no_failpoint() {
    // The test build has it (the kill tests above stop there), through the dev-dependency
    // alone; the binary's own dependency tree does not turn it on.
    assert!(engine_features("features").contains(r#"warrant-engine feature "failpoints""#));
    let release = engine_features("features,no-dev");
    assert!(release.contains(r#"warrant-engine feature "default""#), "{release}");
    assert!(!release.contains("failpoints"), "a release build of warrant compiles the failpoint:\n{release}");
    // So with the MCP gateway's failpoints (between a commit and its forward).
    assert!(features_of("warrant-mcp", "features").contains(r#"warrant-mcp feature "failpoints""#));
    let release = features_of("warrant-mcp", "features,no-dev");
    assert!(!release.contains("failpoints"), "a release build of warrant compiles the gateway's failpoint:\n{release}");
}
