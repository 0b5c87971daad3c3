//! `warrant scheduler` as a process against a webhook on a real socket: a dispatcher killed
//! mid-delivery loses nothing and, after a restart, the receiver has applied every message
//! exactly once; failures retry with backoff into the dead letter, refusals go there at once.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warrant_store::{OutboxMessage, OutboxRow, OutboxState, PgStore, SqliteStore, Store};

use crate::receiver::{Behaviour, Webhook};
use crate::turns::{postgres_schema, sqlite_store};
use crate::{root, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";

pub(crate) fn open_store(url: &str) -> Box<dyn Store> {
    let mut store: Box<dyn Store> = match url.strip_prefix("sqlite:") {
        Some(path) => Box::new(SqliteStore::open(path.as_ref()).unwrap()),
        None => {
            let (conninfo, schema) = url.split_once("?schema=").unwrap();
            Box::new(PgStore::connect(conninfo, schema).unwrap())
        }
    };
    store.migrate().unwrap();
    store
}

fn key(n: usize) -> String {
    format!("follow-up-{n}")
}

fn body(n: usize) -> Value {
    json!({"conversation": "c1", "text": format!("Your order #{n} is on its way."), "n": n})
}

/// Stores `count` cleared messages, as the gate's sender would.
pub(crate) fn fill(store: &mut dyn Store, count: usize) {
    for n in 0..count {
        let message = OutboxMessage {
            id: format!("m{n}"),
            conversation: "c1".to_owned(),
            path: "scheduled".to_owned(),
            channel: "webhook".to_owned(),
            body: body(n),
            record: json!({"basis": "cleared"}),
            idempotency_key: key(n),
        };
        store.enqueue(&message, 0).unwrap();
    }
}

/// Starts `warrant scheduler run` as a daemon and returns once it says it is delivering (its
/// signal handlers are in place by then); its standard error goes on to the test's.
fn scheduler(store: &str, webhook: &str, extra: &[&str]) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["scheduler", "run", "--contract", CONTRACT, "--store", store, "--webhook", webhook])
        .args(extra)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (ready, started) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if line.starts_with("warrant scheduler: delivering") {
                let _ = ready.send(());
            }
        }
    });
    started.recv_timeout(Duration::from_secs(60)).expect("the scheduler starts delivering");
    child
}

/// Ends a daemon as an operator would, with SIGTERM, and checks that it exits cleanly.
fn terminate(mut child: Child) {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the scheduler ended with {status} on SIGTERM");
            return;
        }
        assert!(Instant::now() < deadline, "the scheduler did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls the store until `done` holds of its outbox, for at most 30 s.
fn wait_for_outbox(store: &mut dyn Store, what: &str, done: impl Fn(&[OutboxRow]) -> bool) -> Vec<OutboxRow> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = store.outbox(None, 10_000).unwrap();
        if done(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}: {rows:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn in_state(rows: &[OutboxRow], state: OutboxState) -> usize {
    rows.iter().filter(|r| r.state == state).count()
}

/// How the killed dispatcher runs: `--batch`, `--parallel`, `--timeout-ms`, `--lease-ms`.
struct Shape {
    batch: &'static str,
    parallel: &'static str,
    timeout_ms: &'static str,
    lease_ms: &'static str,
}

/// One message per lease, and a lease just longer than one timeout, so that the held message
/// comes due again soon after the process that held it died.
const ONE_AT_A_TIME: Shape = Shape { batch: "1", parallel: "1", timeout_ms: "3000", lease_ms: "3500" };

/// Batches delivered on several threads: the dead process's whole last batch stays leased,
/// since a batch is recorded sent together.
const BATCHED: Shape = Shape { batch: "3", parallel: "3", timeout_ms: "1500", lease_ms: "5000" };

fn killed_mid_delivery_then_restarted(store: &str, shape: &Shape) {
    const COUNT: usize = 20;
    const HELD: usize = 7;
    let mut db = open_store(store);
    fill(&mut *db, COUNT);
    let (held_tx, held) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let hook = Webhook::start(Behaviour::HoldNth { nth: HELD, held: held_tx, release: release_rx });
    let flags = [
        "--batch",
        shape.batch,
        "--parallel",
        shape.parallel,
        "--timeout-ms",
        shape.timeout_ms,
        "--lease-ms",
        shape.lease_ms,
        "--poll-ms",
        "20",
    ];

    let mut first = scheduler(store, &hook.url(), &flags);
    let held_key = held.recv_timeout(Duration::from_secs(30)).expect("the held request arrives");
    first.kill().unwrap(); // SIGKILL: no chance to record anything
    first.wait().unwrap();
    release.send(()).unwrap();

    // Nothing is lost: the message in flight (and its batch) stays leased to the dead process.
    let rows = db.outbox(None, 100).unwrap();
    assert_eq!(rows.len(), COUNT);
    assert!(in_state(&rows, OutboxState::Dead) == 0, "{rows:#?}");
    let in_flight: BTreeSet<String> =
        rows.iter().filter(|r| r.state == OutboxState::Sending).map(|r| r.message.idempotency_key.clone()).collect();
    assert!(in_flight.contains(&held_key), "{rows:#?}");

    let second = scheduler(store, &hook.url(), &flags);
    let rows = wait_for_outbox(&mut *db, "every message is sent", |rows| in_state(rows, OutboxState::Sent) == COUNT);
    terminate(second);

    let log = hook.log();
    // Exactly once applied: every key, each with the body that was stored under it.
    let expected: BTreeMap<String, Value> = (0..COUNT).map(|n| (key(n), body(n))).collect();
    assert_eq!(log.applied, expected);
    // On the wire, the message in flight when the process died arrived twice with the same key
    // (once to the dead process, whose answer never came, once after its lease expired), and
    // so may the others of its batch that were delivered but not yet recorded; every other
    // message arrived once. The receiver applied no key twice.
    let mut arrivals: BTreeMap<&str, usize> = BTreeMap::new();
    for k in &log.wire {
        *arrivals.entry(k.as_str()).or_default() += 1;
    }
    assert_eq!(arrivals.len(), COUNT);
    assert!(arrivals.values().all(|n| (1..=2).contains(n)), "{arrivals:?}");
    let twice: BTreeSet<String> = arrivals.iter().filter(|(_, n)| **n == 2).map(|(k, _)| (*k).to_owned()).collect();
    assert!(twice.contains(&held_key));
    assert!(twice.is_subset(&in_flight), "only a message in flight at the kill arrives twice: {twice:?}");
    for row in &rows {
        let expected = if in_flight.contains(&row.message.idempotency_key) { 2 } else { 1 };
        assert_eq!(row.attempts, expected, "{row:?}");
    }
}

#[test]
fn sqlite_a_dispatcher_killed_mid_delivery_loses_nothing_and_the_receiver_applies_each_once() {
    let dir = tempfile::tempdir().unwrap();
    killed_mid_delivery_then_restarted(&sqlite_store(&dir), &ONE_AT_A_TIME);
}

#[test]
fn postgres_a_dispatcher_killed_mid_delivery_loses_nothing_and_the_receiver_applies_each_once() {
    let pg = postgres_schema();
    killed_mid_delivery_then_restarted(&pg.store(), &ONE_AT_A_TIME);
}

#[test]
fn sqlite_a_dispatcher_killed_mid_batch_loses_nothing_and_the_receiver_applies_each_once() {
    let dir = tempfile::tempdir().unwrap();
    killed_mid_delivery_then_restarted(&sqlite_store(&dir), &BATCHED);
}

#[test]
fn postgres_a_dispatcher_killed_mid_batch_loses_nothing_and_the_receiver_applies_each_once() {
    let pg = postgres_schema();
    killed_mid_delivery_then_restarted(&pg.store(), &BATCHED);
}

#[test]
fn a_receiver_answering_500_gets_retries_then_the_message_is_dead() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir);
    let mut db = open_store(&store);
    fill(&mut *db, 3);
    let hook = Webhook::start(Behaviour::Answer(500));
    let flags = ["--attempts", "3", "--backoff-ms", "10", "--backoff-cap-ms", "20", "--poll-ms", "10"];
    let daemon = scheduler(&store, &hook.url(), &flags);
    let rows = wait_for_outbox(&mut *db, "every message is dead", |rows| in_state(rows, OutboxState::Dead) == 3);
    terminate(daemon);
    for row in &rows {
        assert_eq!(row.attempts, 3);
        assert!(row.last_error.as_deref().unwrap_or_default().starts_with("HTTP 500"), "{row:?}");
    }
    let log = hook.log();
    assert_eq!(log.wire.len(), 9, "three attempts each");
    assert!(log.applied.is_empty());
}

#[test]
fn a_receiver_refusing_with_a_4xx_sends_the_message_to_the_dead_letter_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir);
    let mut db = open_store(&store);
    fill(&mut *db, 2);
    let hook = Webhook::start(Behaviour::Answer(422));
    let url = hook.url();
    let once =
        warrant(&["scheduler", "run", "--contract", CONTRACT, "--store", &store, "--webhook", &url, "--once"], "");
    assert!(once.status.success());
    let summary: Value = serde_json::from_str(stdout(&once).trim()).unwrap();
    assert_eq!(
        summary,
        json!({"follow_ups": {"taken": 0, "enqueued": 0, "already_enqueued": 0, "failed": 0}, "taken": 2, "sent": 0, "retried": 0, "dead": 2, "not_held": 0})
    );
    assert_eq!(hook.log().wire.len(), 2, "no second attempt");
    // Operators find them with `warrant scheduler outbox --state dead`.
    let dead = warrant(&["scheduler", "outbox", "--store", &store, "--state", "dead"], "");
    assert!(dead.status.success());
    let lines: Vec<Value> = stdout(&dead).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!((line["state"].as_str(), line["attempts"].as_i64()), (Some("dead"), Some(1)));
    }
    let sent = warrant(&["scheduler", "outbox", "--store", &store, "--state", "sent"], "");
    assert_eq!(stdout(&sent), "");
    let bad = warrant(&["scheduler", "outbox", "--store", &store, "--state", "lost"], "");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn an_unreachable_webhook_is_retried_and_the_message_is_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir);
    let mut db = open_store(&store);
    fill(&mut *db, 2);
    // A port nothing listens on any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let nowhere = format!("http://{closed}/hook");
    let flags = ["--once", "--backoff-ms", "10", "--backoff-cap-ms", "20", "--timeout-ms", "2000"];
    let mut args = vec!["scheduler", "run", "--contract", CONTRACT, "--store", &store, "--webhook", &nowhere];
    args.extend_from_slice(&flags);
    let once = warrant(&args, "");
    assert!(once.status.success());
    let rows = db.outbox(None, 10).unwrap();
    for row in &rows {
        assert_eq!((row.state, row.attempts), (OutboxState::Queued, 1));
        assert!(row.last_error.as_deref().unwrap_or_default().starts_with("unreachable"), "{row:?}");
    }
    // The channel comes back: the same messages go out, each applied once.
    let hook = Webhook::start(Behaviour::Answer(200));
    let daemon = scheduler(&store, &hook.url(), &["--backoff-ms", "10", "--poll-ms", "10"]);
    wait_for_outbox(&mut *db, "both are sent", |rows| in_state(rows, OutboxState::Sent) == 2);
    terminate(daemon);
    assert_eq!(hook.log().applied.keys().cloned().collect::<Vec<_>>(), [key(0), key(1)]);
}

#[test]
fn postgres_two_schedulers_on_one_store_deliver_each_message_once_on_the_wire() {
    const COUNT: usize = 60;
    let pg = postgres_schema();
    let store = pg.store();
    let mut db = open_store(&store);
    fill(&mut *db, COUNT);
    let hook = Webhook::start(Behaviour::Answer(200));
    let flags = ["--batch", "4", "--parallel", "2", "--poll-ms", "10"];
    let daemons = [scheduler(&store, &hook.url(), &flags), scheduler(&store, &hook.url(), &flags)];
    wait_for_outbox(&mut *db, "every message is sent", |rows| in_state(rows, OutboxState::Sent) == COUNT);
    for daemon in daemons {
        terminate(daemon);
    }
    // Neither died, so no lease expired: each message was taken by one of them, once.
    let log = hook.log();
    let keys: BTreeSet<&String> = log.wire.iter().collect();
    assert_eq!((log.wire.len(), keys.len(), log.applied.len()), (COUNT, COUNT, COUNT));
}

/// A contract with two channels, each with its own `url_env`: `queue` messages leave by
/// `email`, `digest` messages by `sms`. Neither path checks coverage, so a draft without claims
/// goes out as is.
const TWO_CHANNELS: &str = r#"
[sources]
kinds = ["user"]

[outbound]
locales = ["en-US"]

[[outbound.channel]]
name = "email"
kind = "webhook"
url_env = "WARRANT_TEST_EMAIL_URL"

[[outbound.channel]]
name = "sms"
kind = "webhook"
url_env = "WARRANT_TEST_SMS_URL"

[[outbound.path]]
name = "queue"
channel = "email"
fallback."en-US" = "We will be in touch."

[[outbound.path]]
name = "digest"
channel = "sms"
fallback."en-US" = "There are updates for you."
"#;

/// Channels were once parsed and ignored: every message went to the one `--webhook`. Each
/// channel now delivers to the URL its own `url_env` names, so two channels reach two
/// receivers; and a channel whose variable is unset stops the scheduler at start, naming the
/// variable, with every message still in the outbox.
#[test]
fn each_channel_delivers_to_the_webhook_its_url_env_names() {
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("contract.toml");
    std::fs::write(&contract, TWO_CHANNELS).unwrap();
    let contract = contract.to_str().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.sqlite").display());
    let send = |path: &str, text: &str, channel: Option<&str>| {
        let mut request = json!({"conversation": "c", "actor": "u1", "path": path, "at": "2026-11-29T16:00:00Z", "locale": "en-US",
            "draft": {"text": text, "claims": []}});
        if let Some(channel) = channel {
            request["channel"] = json!(channel);
        }
        let out =
            warrant(&["outbound", "--contract", contract, "--store", &store, "--send", "-"], &request.to_string());
        assert_eq!(out.status.code(), Some(0), "{}", crate::stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    assert_eq!(send("queue", "Your parcel left the depot.", None)["channel"], "email");
    assert_eq!(send("digest", "Two updates today.", None)["channel"], "sms");
    assert_eq!(send("queue", "Reply STOP to stop.", Some("sms"))["channel"], "sms");

    let (email, sms) = (Webhook::start(Behaviour::Answer(200)), Webhook::start(Behaviour::Answer(200)));
    let run = |set: &[(&str, &str)], unset: &[&str]| {
        crate::warrant_with_env(
            &["scheduler", "run", "--contract", contract, "--store", &store, "--once"],
            "",
            set,
            unset,
        )
    };
    let (email_url, sms_url) = (email.url(), sms.url());
    // The SMS channel's variable is unset: nothing is taken, and the error names it.
    let missing = run(&[("WARRANT_TEST_EMAIL_URL", &email_url)], &["WARRANT_TEST_SMS_URL"]);
    assert_eq!(missing.status.code(), Some(2));
    let said = crate::stderr(&missing);
    assert!(said.contains("channel `sms`") && said.contains("`WARRANT_TEST_SMS_URL`"), "{said}");
    let out = warrant(&["scheduler", "outbox", "--store", &store, "--state", "queued"], "");
    let rows: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 3, "every message is still queued");
    // Each outbox row carries the channel its message was cleared for.
    let channels: Vec<&str> = rows.iter().map(|row| row["channel"].as_str().unwrap()).collect();
    assert_eq!(channels, ["email", "sms", "sms"], "{rows:?}");
    assert!(email.log().wire.is_empty() && sms.log().wire.is_empty());

    let out = run(&[("WARRANT_TEST_EMAIL_URL", &email_url), ("WARRANT_TEST_SMS_URL", &sms_url)], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::stderr(&out));
    assert_eq!(serde_json::from_str::<Value>(&stdout(&out)).unwrap()["sent"], 3);
    let texts = |hook: &Webhook| -> BTreeSet<String> {
        let log = hook.log();
        assert_eq!(log.wire.len(), log.applied.len(), "each message once");
        log.applied.values().map(|body| body["text"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(texts(&email), BTreeSet::from(["Your parcel left the depot.".to_owned()]));
    assert_eq!(texts(&sms), BTreeSet::from(["Reply STOP to stop.".to_owned(), "Two updates today.".to_owned()]));
    for (hook, channel) in [(&email, "email"), (&sms, "sms")] {
        assert!(hook.log().applied.values().all(|body| body["channel"] == channel));
    }
}
