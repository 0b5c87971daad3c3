//! A chat-completions endpoint on 127.0.0.1 for the tests that need a model: it answers each
//! request by the name of the schema it asks for, keeps every request body it was sent, and
//! serves until the test process ends. The engine reaches it through the real OpenAI-compatible
//! provider, over a real socket.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use warrant_model::openai::{EndpointConfig, OpenAiProvider};

/// Request bodies, in the order they arrived.
pub type Seen = Arc<Mutex<Vec<Value>>>;

/// Starts an endpoint whose answer to a request for schema `name` is `answer(name)` (the
/// model's JSON text); returns its base URL.
pub fn endpoint(answer: impl Fn(&str) -> String + Send + 'static, seen: Seen) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
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
            let content = answer(request["response_format"]["json_schema"]["name"].as_str().unwrap_or(""));
            seen.lock().unwrap().push(request);
            let reply = json!({"choices": [{"message": {"role": "assistant", "content": content}}], "usage": {"prompt_tokens": 40, "completion_tokens": 9}}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    base
}

/// The OpenAI-compatible provider for the endpoint at `base`.
pub fn live(base: String) -> OpenAiProvider {
    OpenAiProvider::new(EndpointConfig {
        base_url: base,
        model: "m".into(),
        key: None,
        connect_timeout: Duration::from_secs(2),
        format: Default::default(),
    })
    .unwrap()
}
