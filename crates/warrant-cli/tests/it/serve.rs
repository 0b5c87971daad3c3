//! `warrant tenant add` and `warrant serve` as processes: two servers on one PostgreSQL, given a
//! burst of duplicate and conflicting turns for the same tenant, commit every effect exactly
//! once, and answer every copy of a turn with the same response; and a server runs its model
//! checks against the endpoint the environment names, as the command line does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};

use crate::{root, stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";
const ORDER: &str = "#W6247578";

/// A `warrant serve` process, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(store: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .args(["serve", "--contract", CONTRACT, "--store", store, "--listen", "127.0.0.1:0"])
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
        Server { addr: addr.parse().unwrap(), child }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request with `Connection: close`; the status and the JSON body.
fn http(addr: SocketAddr, method: &str, path: &str, key: &str, body: &Value) -> (u16, Value) {
    http_with(addr, &format!("{method} {path}"), "", key, body)
}

/// [`http`] for `METHOD PATH`, with more header lines (each ending in `\r\n`).
pub(crate) fn http_with(addr: SocketAddr, request: &str, headers: &str, key: &str, body: &Value) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    write!(
        stream,
        "{request} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

fn request(conversation: &str, turn: &str, acts: Value, answers: Value) -> Value {
    json!({
        "conversation": conversation, "turn": turn, "actor": "yusuf_rossi_9620",
        "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": acts, "answers": answers,
    })
}

/// The registry schema and the tenant's schema, dropped when the guard goes.
struct Schemas {
    url: String,
    registry: String,
    tenant: String,
}

impl Drop for Schemas {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {} CASCADE; DROP SCHEMA IF EXISTS t_{} CASCADE",
                self.registry, self.tenant
            ));
        }
    }
}

#[test]
fn postgres_two_servers_given_duplicate_and_conflicting_turns_commit_every_effect_once() {
    let url =
        std::env::var("WARRANT_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let id = std::process::id();
    let schemas =
        Schemas { url: url.clone(), registry: format!("wsrv_cli_reg_{id}"), tenant: format!("cli_burst_{id}") };
    let store = format!("{url}?schema={}", schemas.registry);
    let out = warrant(&["tenant", "add", &schemas.tenant, "--store", &store], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let key = stdout(&out).trim().to_owned();
    let again = warrant(&["tenant", "add", &schemas.tenant, "--store", &store], "");
    assert_eq!(again.status.code(), Some(2), "a tenant is added once");

    let servers = [Server::start(&store), Server::start(&store)];
    let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
    let cancel = json!([{"op": "cancel_pending_order", "args": {"order_id": ORDER, "reason": "no longer needed"}}]);
    // Two conversations each hold a cancellation of the same order, one on each server.
    let mut confirms = Vec::new();
    for (i, conversation) in ["a", "b"].into_iter().enumerate() {
        let (status, held) =
            http(addrs[i], "POST", "/v1/turns", &key, &request(conversation, "hold", cancel.clone(), json!([])));
        assert_eq!((status, &held["acts"][0]["verdict"]), (200, &json!("hold")), "{held}");
        let interaction = held["interactions"][0]["id"].as_str().unwrap().to_owned();
        confirms.push(request(
            conversation,
            "confirm",
            json!([]),
            json!([{"interaction": interaction, "option": "confirm"}]),
        ));
    }
    // The burst: each confirmation four times, twice to each server, all at once.
    let copies = 4;
    let barrier = Arc::new(Barrier::new(confirms.len() * copies));
    let mut threads = Vec::new();
    for (c, confirm) in confirms.iter().enumerate() {
        for copy in 0..copies {
            let (barrier, key, body, addr) = (barrier.clone(), key.clone(), confirm.clone(), addrs[copy % 2]);
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                (c, http(addr, "POST", "/v1/turns", &key, &body))
            }));
        }
    }
    let mut answers: Vec<Vec<Value>> = vec![Vec::new(); confirms.len()];
    for thread in threads {
        let (c, (status, body)) = thread.join().unwrap();
        assert_eq!(status, 200, "{body}");
        answers[c].push(body);
    }
    // Every copy of a turn got the same answer, all but the one that decided it marked as
    // repeats, and exactly one conversation won the order.
    for copies in &mut answers {
        let fresh =
            copies.iter_mut().map(|a| a.as_object_mut().unwrap().remove("repeated")).filter(Option::is_none).count();
        assert_eq!(fresh, 1, "one copy decides the turn, the others repeat it: {copies:#?}");
        assert!(copies.iter().all(|a| a == &copies[0]), "copies of one turn answered differently: {copies:#?}");
    }
    let winners: Vec<&Value> = answers.iter().map(|a| &a[0]).filter(|a| a["acts"][0]["verdict"] == "commit").collect();
    assert_eq!(winners.len(), 1, "{answers:#?}");
    let loser = answers.iter().map(|a| &a[0]).find(|a| a["acts"][0]["verdict"] != "commit").unwrap();
    assert_eq!(loser["effects"], json!([]), "{loser}");

    // The store agrees: one effect, one event for it, four turns, the order at revision 2.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let count = |client: &mut postgres::Client, sql: &str| -> i64 {
        client.query_one(&sql.replace("{s}", &format!("t_{}", schemas.tenant)), &[]).unwrap().get(0)
    };
    assert_eq!(count(&mut client, "SELECT count(*) FROM {s}.effects"), 1);
    assert_eq!(count(&mut client, "SELECT count(*) FROM {s}.events WHERE effect IS NOT NULL"), 1);
    assert_eq!(count(&mut client, "SELECT count(*) FROM {s}.turns"), 4);
    let revision: i64 = client
        .query_one(
            &format!("SELECT revision FROM t_{}.records WHERE tbl = 'order' AND key = $1", schemas.tenant),
            &[&ORDER],
        )
        .unwrap()
        .get(0);
    assert_eq!(revision, 2);
    // Both servers read the same committed state.
    for addr in &addrs {
        let (_, record) = http(*addr, "GET", "/v1/records/order/%23W6247578", &key, &json!(null));
        assert_eq!((&record["revision"], &record["value"]["status"]), (&json!(2), &json!("cancelled")), "{record}");
    }
}

/// A chat-completions endpoint on 127.0.0.1 that answers by the schema asked for, as a model
/// would (`value_stated`: stated; `claims_coverage`: nothing unlisted), and counts what it was
/// asked, by schema; returns its base URL.
fn model_endpoint(asked: Arc<std::sync::Mutex<Vec<String>>>) -> String {
    model_endpoint_with(move |request| {
        let schema = request["response_format"]["json_schema"]["name"].as_str().unwrap_or("").to_owned();
        asked.lock().unwrap().push(schema);
    })
}

/// [`model_endpoint`], handing each request it is sent to `seen`.
pub(crate) fn model_endpoint_with(seen: impl Fn(&Value) + Send + 'static) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request: Value = serde_json::from_slice(&body).unwrap();
            let schema = request["response_format"]["json_schema"]["name"].as_str().unwrap_or("").to_owned();
            let content = match schema.as_str() {
                "value_stated" => r#"{"answer":"yes"}"#,
                "claims_coverage" => r#"{"unlisted_claim":"no"}"#,
                _ => "not an answer",
            };
            seen(&request);
            let reply = json!({"choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 9}})
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    base
}

/// `warrant serve` with the model the environment names (or none), its first line on standard
/// error (where it says which model it runs), killed when dropped.
fn serve_with_model(contract: &str, store: &str, base: Option<&str>) -> (Server, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_warrant"));
    for name in ["WARRANT_MODEL_BASE_URL", "WARRANT_MODEL", "WARRANT_MODEL_KEY", "WARRANT_MODEL_CASSETTE"] {
        command.env_remove(name);
    }
    if let Some(base) = base {
        command.envs([
            ("WARRANT_MODEL_BASE_URL", base),
            ("WARRANT_MODEL", "smollm2"),
            ("WARRANT_MODEL_KEY", "sk-secret"),
        ]);
    }
    let mut child = command
        .args(["serve", "--contract", contract, "--store", store, "--listen", "127.0.0.1:0"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut errors = BufReader::new(child.stderr.take().unwrap());
    errors.read_line(&mut said).unwrap();
    // The rest of standard error goes to the test's, so that nothing blocks on a full pipe.
    std::thread::spawn(move || {
        for line in errors.lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr =
        line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("unexpected: {line:?} {said}"));
    (Server { addr: addr.parse().unwrap(), child }, said)
}

/// `warrant serve` once ran every model task without a model: every semantic check failed over
/// HTTP and every reply on a path with `claims_coverage` fell back. It now sets the model up as
/// the command line does, from the contract's `[model]` and the `WARRANT_MODEL_*` environment,
/// says at start which one (never the key), and a turn's `value_stated` check and a reply's
/// coverage check are answered by the endpoint on its socket.
#[test]
fn a_served_turn_has_its_model_checks_answered_by_the_endpoint_the_environment_names() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let base = model_endpoint(Arc::clone(&asked));
    let dir = tempfile::tempdir().unwrap();
    let tenants = |name: &str| format!("sqlite:{}", dir.path().join(name).display());
    let add = |store: &str| {
        let out = warrant(&["tenant", "add", "acme", "--store", store], "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out).trim().to_owned()
    };
    let stated: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("examples/rename/turns/stated.json")).unwrap())
            .unwrap();

    // Without a model, the server says so, and the check cannot pass: the act is asked.
    let (store, key) = (tenants("bare"), add(&tenants("bare")));
    let (bare, said) = serve_with_model("examples/rename/contract.toml", &store, None);
    assert!(said.starts_with("warrant serve: no model is configured"), "{said}");
    let (status, response) = http(bare.addr, "POST", "/v1/turns", &key, &stated);
    assert_eq!((status, &response["acts"][0]["verdict"]), (200, &json!("ask")), "{response}");
    assert_eq!(response["acts"][0]["reasons"][0]["code"], "check_unfinished", "{response}");
    drop(bare);

    // With one, the same turn's check is answered over its socket, and the rename commits.
    let (store, key) = (tenants("modelled"), add(&tenants("modelled")));
    let (server, said) = serve_with_model("examples/rename/contract.toml", &store, Some(&base));
    assert_eq!(said.trim(), format!("warrant serve: model `smollm2` at {base} (with a key)"));
    let (status, response) = http(server.addr, "POST", "/v1/turns", &key, &stated);
    assert_eq!((status, &response["acts"][0]["verdict"]), (200, &json!("commit")), "{response}");
    let (_, record) = http(server.addr, "GET", "/v1/records/customer/kim", &key, &json!(null));
    assert_eq!(record["value"]["name"], "Kim Lee", "{record}");
    assert_eq!(asked.lock().unwrap().as_slice(), ["value_stated"]);
    drop(server);

    // A retail reply whose claim is backed, on the `live` path with `claims_coverage`: the
    // endpoint says it claims nothing more, and it goes out as is.
    let (store, key) = (tenants("retail"), add(&tenants("retail")));
    let (server, _) = serve_with_model(CONTRACT, &store, Some(&base));
    let mut turn = request("delivered", "t1", json!([]), json!([]));
    turn["entries"] = json!([{"kind": "user", "text": "Did my order arrive?"}]);
    turn["draft"] = json!({"text": "Yes: your order #W6679257 was delivered.",
        "claims": [{"claim": "order_delivered", "order": "#W6679257"}]});
    let (status, response) = http(server.addr, "POST", "/v1/turns", &key, &turn);
    assert_eq!(status, 200, "{response}");
    let reply = &response["reply"];
    assert_eq!(
        (&reply["basis"], &reply["text"]),
        (&json!("cleared"), &json!("Yes: your order #W6679257 was delivered.")),
        "{reply}"
    );
    assert_eq!(asked.lock().unwrap().last().map(String::as_str), Some("claims_coverage"));
}
