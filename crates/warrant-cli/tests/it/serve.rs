//! `warrant tenant add` and `warrant serve` as processes: two servers on one PostgreSQL, given a
//! burst of duplicate and conflicting turns for the same tenant, commit every effect exactly
//! once, and answer every copy of a turn with the same response.

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
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
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
