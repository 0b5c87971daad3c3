//! A webhook receiver on a real socket, as a deployment runs one: it reads each HTTP/1.1
//! request (keep-alive included), records what arrived on the wire, applies each idempotency
//! key at most once, and answers. Shared by the delivery tests and the dispatch benchmark.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver as Rx, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the receiver answers.
pub enum Behaviour {
    /// Every request gets this status; a 2xx applies the message.
    Answer(u16),
    /// Request number `nth` (from 1) is applied, then held without an answer: the receiver
    /// sends its key on `held` and drops the connection only once `release` says so (or is dropped).
    /// Every other request gets 200.
    HoldNth { nth: usize, held: Sender<String>, release: Rx<()> },
}

/// What the receiver saw.
#[derive(Debug, Default, Clone)]
pub struct Log {
    /// Every request's idempotency key, in arrival order (an empty key when it had none).
    pub wire: Vec<String>,
    /// The body applied under each key: the first one that was accepted.
    pub applied: BTreeMap<String, serde_json::Value>,
}

pub struct Webhook {
    pub addr: SocketAddr,
    log: Arc<Mutex<Log>>,
}

impl Webhook {
    pub fn start(behaviour: Behaviour) -> Webhook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let shared = Arc::new(Mutex::new(behaviour));
        let thread_log = Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, behaviour) = (Arc::clone(&thread_log), Arc::clone(&shared));
                std::thread::spawn(move || serve(stream, &log, &behaviour));
            }
        });
        Webhook { addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn log(&self) -> Log {
        self.log.lock().unwrap().clone()
    }
}

/// One connection: requests until the client closes it.
fn serve(stream: TcpStream, log: &Mutex<Log>, behaviour: &Mutex<Behaviour>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    while let Some((key, body)) = read_request(&mut reader) {
        let status = {
            let mut log = log.lock().unwrap();
            log.wire.push(key.clone());
            let number = log.wire.len();
            match &*behaviour.lock().unwrap() {
                Behaviour::Answer(status) => {
                    if (200..300).contains(status) {
                        log.applied.entry(key).or_insert(body);
                    }
                    *status
                }
                Behaviour::HoldNth { nth, held, release } if *nth == number => {
                    // Applied, then the answer never comes: the sender cannot know it landed.
                    log.applied.entry(key.clone()).or_insert(body);
                    drop(log);
                    let _ = held.send(key);
                    let _ = release.recv_timeout(Duration::from_secs(60));
                    return;
                }
                Behaviour::HoldNth { .. } => {
                    log.applied.entry(key).or_insert(body);
                    200
                }
            }
        };
        let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n");
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The idempotency key and JSON body of the next request, or `None` when the connection ends.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, serde_json::Value)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    assert!(line.starts_with("POST "), "the dispatcher only POSTs: {line:?}");
    let (mut length, mut key) = (0, String::new());
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "idempotency-key" => key = value.trim().to_owned(),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((key, serde_json::from_slice(&body).unwrap()))
}
