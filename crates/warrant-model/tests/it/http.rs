//! The OpenAI-compatible provider over a real socket: a tiny server on 127.0.0.1 that answers
//! one request as told, so the client's request body, timeouts and failures are real.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use warrant_core::pointer::UAX29;
use warrant_model::openai::{EndpointConfig, OpenAiProvider};
use warrant_model::tasks::{ValueStated, ValueStatedInput};
use warrant_model::{Outcome, Prompts, Runner, TurnBudget};
use warrant_vocab::check::{CheckFailure, CheckVerdict};

use crate::roomy;

/// Serves `reply` (a whole HTTP response) to each of `n` connections, or holds them open
/// without answering when `reply` is `None`; returns the base URL and the bodies received.
fn serve(n: usize, reply: Option<&'static str>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        let mut held = Vec::new();
        for _ in 0..n {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            bodies.push(String::from_utf8(body).unwrap());
            match reply {
                Some(reply) => {
                    let mut stream = stream;
                    write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}", reply.len()).unwrap();
                }
                None => held.push(stream),
            }
        }
        bodies
    });
    (base, handle)
}

fn input() -> ValueStatedInput {
    ValueStatedInput {
        op: "rename".into(),
        field: "name".into(),
        message: "the name needs changing".into(),
        ptr: [3, 4],
        value: "needs changing".into(),
        words: UAX29,
    }
}

fn provider(base: String) -> OpenAiProvider {
    OpenAiProvider::new(EndpointConfig {
        base_url: base,
        model: "smol".into(),
        key: Some("k".into()),
        connect_timeout: Duration::from_secs(2),
        format: Default::default(),
    })
    .unwrap()
}

#[test]
fn the_provider_sends_the_schema_and_reads_the_answer() {
    let (base, server) = serve(
        1,
        Some(
            r#"{"choices":[{"message":{"role":"assistant","content":"{\"answer\":\"no\"}"}}],"usage":{"prompt_tokens":40,"completion_tokens":6}}"#,
        ),
    );
    let provider = provider(base);
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "smol", budget: &budget, prompts: &prompts };
    let run = runner.run::<ValueStated>(&input(), None);
    assert!(matches!(run.outcome, Outcome::Answered { verdict: CheckVerdict::Block, .. }), "{:?}", run.outcome);
    let bodies = server.join().unwrap();
    let sent: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(sent["model"], "smol");
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["schema"]["required"][0], "answer");
    let answer = run.calls[0].result.clone().unwrap().unwrap();
    assert_eq!((answer.prompt_tokens, answer.completion_tokens), (40, 6));
}

#[test]
fn a_provider_that_does_not_answer_in_time_fails_the_check_as_a_timeout() {
    // Two connections: the first attempt and the retry in place; neither is answered.
    let (base, _server) = serve(2, None);
    let provider = provider(base);
    let mut limits = roomy();
    limits.deadline = Duration::from_millis(600);
    let budget = TurnBudget::new(limits, Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "smol", budget: &budget, prompts: &prompts };
    let run = runner.run::<ValueStated>(&input(), None);
    let Outcome::Failed { failure, detail } = run.outcome else { panic!("{:?}", run.outcome) };
    // The first attempt times out at the turn's deadline; the retry finds no time left.
    assert!(matches!(failure, CheckFailure::Timeout | CheckFailure::Budget), "{failure:?}: {detail}");
    assert!(run.calls[0].outcome.contains("did not answer within"), "{}", run.calls[0].outcome);
}

#[test]
fn an_unreachable_provider_fails_the_check() {
    // A port nobody listens on: bind one, then let it go.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let provider = provider(format!("http://127.0.0.1:{port}/v1"));
    let budget = TurnBudget::new(roomy(), Instant::now());
    let prompts = Prompts::default();
    let runner = Runner { provider: &provider, model: "smol", budget: &budget, prompts: &prompts };
    let run = runner.run::<ValueStated>(&input(), None);
    let Outcome::Failed { failure: CheckFailure::Provider, detail } = run.outcome else { panic!("{:?}", run.outcome) };
    assert!(detail.contains("cannot be reached"), "{detail}");
    assert_eq!(run.calls.len(), 2, "retried once in place");
}
