//! OpenTelemetry traces against a real OTLP/HTTP receiver (`tests/otlp/receiver.py`, decoding
//! every export with the official `opentelemetry-proto` classes): `warrant serve` and
//! `warrant turn` with a collector named export a span per request, per turn and per model task,
//! linked parent to child under the caller's `traceparent`, flushed when the process ends on
//! SIGTERM; by default no span carries the customer's words, and with `--trace-content` the
//! turn's span does. The receiver's Python comes from `WARRANT_OTLP_PYTHON` or
//! `target/otlp-venv` (scripts/test.sh makes it from PyPI); without it these tests fail, naming
//! that command.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::receiver::{Behaviour, Webhook};
use crate::{root, stderr, stdout, warrant, warrant_with_env};

/// The caller's trace and span, as its `traceparent` names them.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

/// The interpreter with the `opentelemetry-proto` package.
fn python() -> PathBuf {
    let path = std::env::var_os("WARRANT_OTLP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/otlp-venv/bin/python"));
    assert!(
        path.exists(),
        "no Python with the `opentelemetry-proto` package at {}: run the README's test command, scripts/test.sh (it installs crates/warrant-cli/tests/otlp/requirements.txt into target/otlp-venv), or set WARRANT_OTLP_PYTHON",
        path.display()
    );
    path
}

/// The first line a child writes to its standard output.
fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    line
}

/// The receiver, killed when dropped; what it received is in `dir`.
pub(crate) struct Receiver {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Receiver {
    pub(crate) fn start() -> Receiver {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(python())
            .arg(root().join("crates/warrant-cli/tests/otlp/receiver.py"))
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let line = first_line(&mut child);
        let port = line.trim().parse().unwrap_or_else(|_| panic!("the receiver said {line:?}"));
        Receiver { child, dir, port }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("spans.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// Every byte of every export received so far, as sent.
    fn raw(&self) -> Vec<u8> {
        std::fs::read(self.dir.path().join("raw.bin")).unwrap_or_default()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `warrant serve` with a model endpoint and a collector, stopped with SIGTERM by [`stop`].
fn serve(store: &str, model: &str, extra: &[&str], env: &[(&str, &str)]) -> (Child, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_warrant"));
    for name in ["WARRANT_MODEL_CASSETTE", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] {
        command.env_remove(name);
    }
    let mut child = command
        .envs([("WARRANT_MODEL_BASE_URL", model), ("WARRANT_MODEL", "smollm2"), ("WARRANT_MODEL_KEY", "sk-x")])
        .envs(env.iter().copied())
        .args(["serve", "--contract", "examples/rename/contract.toml", "--store", store, "--listen", "127.0.0.1:0"])
        .args(extra)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let line = first_line(&mut child);
    let addr = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("unexpected: {line:?}"));
    (child, addr.parse().unwrap())
}

/// SIGTERM, then the process's end: what it exported is at the receiver by then.
fn stop(mut child: Child) {
    let sent = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "`warrant serve` did not end after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// POST /v1/turns with a `traceparent`; the status and the JSON body.
fn post_turn(addr: SocketAddr, key: &str, body: &Value) -> (u16, Value) {
    let traceparent = format!("traceparent: 00-{TRACE}-{CALLER}-01\r\n");
    crate::serve::http_with(addr, "POST /v1/turns", &traceparent, key, body)
}

fn add_tenant(store: &str) -> String {
    let out = warrant(&["tenant", "add", "acme", "--store", store], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// The rename turn whose `value_stated` check the model endpoint answers.
fn stated() -> Value {
    let path = root().join("examples/rename/turns/stated.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The customer's words in [`stated`]: the user's message and the argument's text.
const WORDS: [&str; 2] = ["please change the name to Kim Lee", "Kim Lee"];

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn model() -> String {
    crate::serve::model_endpoint_with(|_| {})
}

/// A served turn: the request's span is the caller's child (same trace, its span the parent),
/// the turn's span the request's child, the model task's span the turn's child, each with the
/// operation, verdicts, reasons, outcome, latency, tenant and turn key; flushed on SIGTERM
/// although the batch would have waited five seconds more; no customer words anywhere in what
/// was sent.
#[test]
fn a_served_turn_is_traced_under_the_caller_s_traceparent_without_the_customer_s_words() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().display());
    let key = add_tenant(&store);
    let (server, addr) = serve(&store, &model(), &["--otlp-endpoint", &receiver.endpoint()], &[]);
    let (status, response) = post_turn(addr, &key, &stated());
    assert_eq!((status, &response["acts"][0]["verdict"]), (200, &json!("commit")), "{response}");
    stop(server);

    let spans = receiver.spans();
    let [request] = named(&spans, "POST /v1/turns")[..] else { panic!("one request span: {spans:#?}") };
    let [turn] = named(&spans, "warrant.turn")[..] else { panic!("one turn span: {spans:#?}") };
    let [task] = named(&spans, "warrant.model_task")[..] else { panic!("one task span: {spans:#?}") };
    for span in [request, turn, task] {
        assert_eq!(span["trace_id"], TRACE, "every span is in the caller's trace: {span}");
        assert_eq!(span["resource"]["service.name"], "warrant", "{span}");
        assert!(span["end"].as_u64() >= span["start"].as_u64(), "{span}");
    }
    assert_eq!(request["parent_span_id"], CALLER, "{request}");
    assert_eq!(turn["parent_span_id"], request["span_id"], "{turn}");
    assert_eq!(task["parent_span_id"], turn["span_id"], "{task}");

    let attributes = &request["attributes"];
    assert_eq!((&attributes["http.request.method"], &attributes["http.route"]), (&json!("POST"), &json!("/v1/turns")));
    assert_eq!(
        (&attributes["http.response.status_code"], &attributes["warrant.tenant"]),
        (&json!(200), &json!("acme"))
    );
    let attributes = &turn["attributes"];
    assert_eq!(attributes["warrant.tenant"], "acme");
    assert_eq!((&attributes["warrant.conversation"], &attributes["warrant.turn"]), (&json!("c1"), &json!("t2")));
    assert_eq!(attributes["warrant.outcome"], "decided");
    assert_eq!(attributes["warrant.operations"], json!(["rename"]));
    assert_eq!(attributes["warrant.verdicts"], json!(["commit"]));
    assert_eq!(attributes["warrant.effects"], 1);
    assert!(attributes["warrant.latency_ms"].as_f64().is_some(), "{turn}");
    let act = &turn["events"][0];
    assert_eq!((&act["name"], &act["attributes"]["warrant.operation"]), (&json!("warrant.act"), &json!("rename")));
    assert_eq!(act["attributes"]["warrant.verdict"], "commit");
    let attributes = &task["attributes"];
    assert_eq!((&attributes["warrant.task"], &attributes["warrant.outcome"]), (&json!("value_stated"), &json!("pass")));
    assert_eq!(attributes["warrant.calls"], 1);

    let raw = receiver.raw();
    assert!(!raw.is_empty());
    for words in WORDS {
        assert!(!contains(&raw, words), "the customer's words `{words}` were exported: {spans:#?}");
    }
    assert!(turn["attributes"].get("warrant.request").is_none(), "{turn}");
}

/// `warrant turn` under the standard variables (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_SERVICE_NAME`) and a `TRACEPARENT`, opted in to the customer's words: its turn's span is
/// the caller's child, named for the service the variable names, and carries the request and its
/// words; a refused request's span carries its reason code.
#[test]
fn a_command_line_turn_is_traced_from_the_standard_variables_with_its_words_when_opted_in() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("rename.sqlite").display());
    let traces = format!("{}/v1/traces", receiver.endpoint());
    let base = model();
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.as_str()),
        ("OTEL_SERVICE_NAME", "agents-gate"),
        ("TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ("WARRANT_MODEL_BASE_URL", base.as_str()),
        ("WARRANT_MODEL", "smollm2"),
        ("WARRANT_MODEL_KEY", "sk-x"),
    ];
    let args = ["turn", "--trace-content", "--contract", "examples/rename/contract.toml", "--store", &store];
    let out = warrant_with_env(&args, &stated().to_string(), &env, &["OTEL_EXPORTER_OTLP_ENDPOINT"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = warrant_with_env(&args, "{\"conversation\": 1}", &env, &["OTEL_EXPORTER_OTLP_ENDPOINT"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));

    // Each process flushed as it ended: both are there now, without waiting.
    let spans = receiver.spans();
    let turns = named(&spans, "warrant.turn");
    let [decided, rejected] = turns[..] else { panic!("two turn spans: {spans:#?}") };
    let [task] = named(&spans, "warrant.model_task")[..] else { panic!("one task span: {spans:#?}") };
    assert_eq!((&decided["trace_id"], &decided["parent_span_id"]), (&json!(TRACE), &json!(CALLER)), "{decided}");
    assert_eq!(task["parent_span_id"], decided["span_id"], "{task}");
    assert_eq!(decided["resource"]["service.name"], "agents-gate");
    let request = decided["attributes"]["warrant.request"].as_str().unwrap();
    for words in WORDS {
        assert!(request.contains(words), "opted in, the request is on the turn's span: {decided}");
    }
    assert_eq!(rejected["attributes"]["warrant.outcome"], "rejected", "{rejected}");
    assert_eq!(rejected["attributes"]["warrant.reasons"], json!(["invalid_input"]), "{rejected}");
}

/// Without a collector named, nothing is exported and a turn answers as before: the receiver,
/// listening, gets no request.
#[test]
fn without_an_endpoint_nothing_is_exported() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("rename.sqlite").display());
    let unset = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"];
    let args = ["turn", "--contract", "examples/rename/contract.toml", "--store", &store];
    let out = warrant_with_env(&args, &stated().to_string(), &[], &unset);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // And with the SDK turned off by its standard variable, an endpoint named is not used.
    let off = [("OTEL_SDK_DISABLED", "true"), ("OTEL_EXPORTER_OTLP_ENDPOINT", &*receiver.endpoint())];
    let out = warrant_with_env(&args, &stated().to_string().replace("\"t2\"", "\"t3\""), &off, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(receiver.raw().is_empty(), "something was exported: {:#?}", receiver.spans());
}

/// `warrant scheduler run` exports a forward's span per delivery: the channel, path, message,
/// idempotency key, attempt and outcome (sent, or a refusal with the channel's answer as its
/// status), and never the message's body.
#[test]
fn each_delivery_of_the_outbox_is_a_forward_s_span_without_the_message_s_words() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let store = crate::turns::sqlite_store(&dir);
    crate::delivery::fill(&mut *crate::delivery::open_store(&store), 2);
    let hook = Webhook::start(Behaviour::Answer(422));
    let (url, endpoint) = (hook.url(), receiver.endpoint());
    let contract = "examples/retail/contract.toml";
    let args = ["scheduler", "run", "--contract", contract, "--store", &store, "--webhook", &url, "--once"];
    let out = warrant(&[&args[..], &["--otlp-endpoint", &endpoint]].concat(), "");
    assert!(out.status.success(), "{}", stderr(&out));

    let spans = receiver.spans();
    let forwards = named(&spans, "warrant.forward");
    assert_eq!(forwards.len(), 2, "{spans:#?}");
    let mut keys: Vec<_> = forwards.iter().map(|s| s["attributes"]["warrant.idempotency_key"].clone()).collect();
    keys.sort_by_key(Value::to_string);
    assert_eq!(keys, [json!("follow-up-0"), json!("follow-up-1")]);
    for span in forwards {
        let attributes = &span["attributes"];
        assert_eq!(
            (&attributes["warrant.channel"], &attributes["warrant.path"]),
            (&json!("webhook"), &json!("scheduled"))
        );
        assert_eq!((&attributes["warrant.outcome"], &attributes["warrant.attempt"]), (&json!("permanent"), &json!(1)));
        assert_eq!(span["status"]["code"], 2, "an error, with the channel's answer: {span}");
        assert!(span["status"]["message"].as_str().unwrap().starts_with("HTTP 422"), "{span}");
    }
    assert!(!contains(&receiver.raw(), "is on its way"), "a message's body was exported: {spans:#?}");
}
