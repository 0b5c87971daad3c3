//! `warrant serve` as an operator sees it: one log line per request on stderr, a warning when
//! it listens beyond loopback without TLS, the address named when it cannot bind; and
//! `warrant tenant list`, `rotate` and `revoke` against a server that keeps running.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{root, stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";

/// A `warrant serve` process whose stderr lines arrive on a channel; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: Receiver<String>,
}

impl Server {
    fn start(store: &str, listen: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warrant"))
            .args(["serve", "--contract", CONTRACT, "--store", store, "--listen", listen])
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (send, log) = std::sync::mpsc::channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("first line: {line:?}"));
        Server { addr: addr.parse().unwrap(), child, log }
    }

    /// Log lines until one contains every one of `words`, or ten seconds have passed.
    fn wait_for(&self, words: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if words.iter().all(|w| line.contains(w)) => return line,
                Ok(line) => seen.push(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    panic!("no log line with {words:?}; the log was:\n{}", seen.join("\n"))
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `GET` with `Connection: close`, over a real socket; the status.
fn get(addr: SocketAddr, path: &str, key: Option<&str>) -> u16 {
    let connect = if addr.ip().is_unspecified() { SocketAddr::from(([127, 0, 0, 1], addr.port())) } else { addr };
    let mut stream = TcpStream::connect(connect).unwrap();
    let auth = key.map(|k| format!("Authorization: bearer {k}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split(' ').nth(1).unwrap().parse().unwrap()
}

fn tenant(args: &[&str]) -> String {
    let out = warrant(&[&["tenant"], args].concat(), "");
    assert_eq!(out.status.code(), Some(0), "warrant tenant {args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn serve_logs_one_line_per_request_with_its_route_status_duration_and_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().display());
    let key = tenant(&["add", "acme", "--store", &store]).trim().to_owned();
    let server = Server::start(&store, "127.0.0.1:0");
    assert_eq!(get(server.addr, "/health", None), 200);
    let line = server.wait_for(&["method=GET", "route=/health", "status=200"]);
    assert!(line.contains("duration_ms=") && line.contains("tenant=-"), "{line}");
    assert_eq!(get(server.addr, "/v1/records/order/%23W6247578", Some(&key)), 200);
    // The route's template, not the path with its ids; the tenant whose key was accepted.
    let line = server.wait_for(&["route=/v1/records/{table}/{key}", "status=200"]);
    assert!(line.contains("tenant=acme") && !line.contains("W6247578"), "{line}");
    assert_eq!(get(server.addr, "/v1/turns", Some("wrt_acme.nope")), 401);
    let line = server.wait_for(&["route=/v1/turns", "status=401"]);
    assert!(line.contains("tenant=-"), "a refused key names no tenant: {line}");
    assert_eq!(get(server.addr, "/nowhere", None), 404);
    server.wait_for(&["route=-", "status=404"]);
}

#[test]
fn serve_warns_when_it_listens_beyond_loopback_without_tls() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().display());
    let server = Server::start(&store, "0.0.0.0:0");
    let line = server.wait_for(&["WARN", "without TLS"]);
    assert!(line.contains(&format!("0.0.0.0:{}", server.addr.port())), "{line}");
    // Loopback gets no such warning: its first log line is its first request.
    let local = Server::start(&store, "127.0.0.1:0");
    assert_eq!(get(local.addr, "/health", None), 200);
    let first = local.wait_for(&["warrant::"]);
    assert!(first.contains("route=/health"), "{first}");
}

#[test]
fn serve_names_the_address_it_cannot_bind() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().display());
    let out = warrant(&["serve", "--contract", CONTRACT, "--store", &store, "--listen", &addr], "");
    assert_eq!(out.status.code(), Some(2));
    let message = stderr(&out);
    assert!(message.contains(&format!("cannot listen on `{addr}`")), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn a_key_rotated_or_revoked_while_the_server_runs_stops_working_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().display());
    let old = tenant(&["add", "acme", "--store", &store]).trim().to_owned();
    tenant(&["add", "bolt", "--store", &store]);
    let server = Server::start(&store, "127.0.0.1:0");
    let order = "/v1/records/order/%23W6247578";
    assert_eq!(get(server.addr, order, Some(&old)), 200);

    let new = tenant(&["rotate", "acme", "--store", &store]).trim().to_owned();
    assert!(new.starts_with("wrt_acme.") && new != old, "{new}");
    assert_eq!(get(server.addr, order, Some(&old)), 401, "the old key works after rotate");
    assert_eq!(get(server.addr, order, Some(&new)), 200);

    let revoked: Value = serde_json::from_str(&tenant(&["revoke", "acme", "--store", &store])).unwrap();
    assert_eq!((&revoked["tenant"], &revoked["state"]), (&"acme".into(), &"revoked".into()));
    assert_eq!(get(server.addr, order, Some(&new)), 401, "a revoked tenant's key works");
    let list: Vec<Value> =
        tenant(&["list", "--store", &store]).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(list.len(), 2);
    assert_eq!((&list[0]["tenant"], &list[0]["state"]), (&"acme".into(), &"revoked".into()));
    assert_eq!(list[0]["revoked_at"], revoked["revoked_at"]);
    assert_eq!((&list[1]["tenant"], &list[1]["state"]), (&"bolt".into(), &"active".into()));

    let unknown = warrant(&["tenant", "rotate", "nobody", "--store", &store], "");
    assert_eq!((unknown.status.code(), stderr(&unknown).trim()), (Some(2), "warrant: no tenant `nobody`"));
    let unknown = warrant(&["tenant", "revoke", "nobody", "--store", &store], "");
    assert_eq!(unknown.status.code(), Some(2));
}
