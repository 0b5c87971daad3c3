//! Seed 003 against a model endpoint on a real socket that answers every question every way it
//! can: each verdict of each schema, malformed JSON, text that is no JSON at all, and a rewrite
//! that says the payment link is attached. Once, an endpoint answering `no` to the coverage
//! question let the seed-003 draft out `rewritten`: "Your payment link is attached and your
//! refund of $500 has been issued." Now it goes out as the path's fallback copy every time, on
//! every path: `live` through a turn, `retry`, `digest` and `queue` through the outbox, and
//! `scheduled` through a due job the scheduler clears.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use warrant_core::claim::PathName;
use warrant_engine::{Engine, ModelSetup, ModelSource, Submitted, TurnResult};
use warrant_store::{Lease, SqliteStore};

use crate::endpoint::{Seen, endpoint, live};

/// The rewrite the incident sent.
const INJECTED: &str = "Your payment link is attached and your refund of $500 has been issued.";

/// Every answer to the coverage question: each of its verdicts, and each way of not answering.
fn coverage_answers() -> Vec<String> {
    let mut answers: Vec<String> =
        ["yes", "no", "unsure"].iter().map(|v| json!({"unlisted_claim": v}).to_string()).collect();
    answers.push(r#"{"unlisted_claim": "no""#.to_owned());
    answers.push("Sure! The message only says what it may.".to_owned());
    answers.push(json!({"text": INJECTED}).to_string());
    answers
}

/// Every answer to the rewrite: the incident's text, seed 003's own words, and each way of not
/// answering.
fn rewrite_answers() -> Vec<String> {
    vec![
        json!({"text": INJECTED}).to_string(),
        json!({"text": "Here is the payment link for your order. It's attached below."}).to_string(),
        r#"{"text": "#.to_owned(),
        "Your payment link is attached.".to_owned(),
        json!({"unlisted_claim": "no"}).to_string(),
    ]
}

/// The answers the endpoint gives now, by schema name; any other task gets each verdict too.
#[derive(Debug, Clone, Default)]
struct Policy {
    coverage: String,
    rewrite: String,
}

/// The seed-003 drafts: each seed-003 case of the outbound corpus, and the draft of the incident
/// about an order that exists (pending) but has no link.
fn drafts() -> Vec<Value> {
    let root = crate::retail_dir().join("../..");
    let text = std::fs::read_to_string(root.join("corpus/outbound/cases.jsonl")).unwrap();
    let mut drafts: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|case| case["name"].as_str().unwrap().starts_with("seed_003"))
        .map(|case| case["draft"].clone())
        .collect();
    assert!(drafts.len() >= 5, "the corpus's seed-003 cases");
    drafts.push(json!({"text": "Here is the payment link for your order #W6247578. It's attached below.",
        "claims": [{"claim": "payment_link_sent", "order": "#W6247578"}]}));
    drafts
}

fn fallback(engine: &Engine<SqliteStore>, path: PathName) -> String {
    engine.contract().outbound().path(path).unwrap().fallback("en-US").unwrap().to_owned()
}

fn outgoing(conversation: &str, path: &str, draft: &Value) -> Value {
    json!({"conversation": conversation, "actor": "yusuf_rossi_9620", "path": path, "at": "2026-11-29T16:00:00Z",
        "locale": "en-US", "draft": draft})
}

#[test]
fn seed_003_goes_out_as_fallback_on_every_path_whatever_the_model_endpoint_answers() {
    let policy = Arc::new(Mutex::new(Policy::default()));
    let seen = Seen::default();
    let answering = Arc::clone(&policy);
    let base = endpoint(
        move |schema| {
            let policy = answering.lock().unwrap();
            match schema {
                "claims_coverage" => policy.coverage.clone(),
                "rewrite" => policy.rewrite.clone(),
                // No other task is asked on these paths; were one asked, it gets an answer too.
                _ => policy.coverage.clone(),
            }
        },
        Seen::clone(&seen),
    );
    let (mut engine, _dir) = crate::retail_engine_with(ModelSource::Setup(ModelSetup::new(Box::new(live(base)), "m")));
    let drafts = drafts();
    let mut messages = 0;
    let mut controls = 0;
    for (p, coverage) in coverage_answers().into_iter().enumerate() {
        for (r, rewrite) in rewrite_answers().into_iter().enumerate() {
            *policy.lock().unwrap() = Policy { coverage: coverage.clone(), rewrite: rewrite.clone() };
            let under = format!("coverage {coverage} / rewrite {rewrite}");
            let mut jobs = 0;
            for (d, draft) in drafts.iter().enumerate() {
                let conversation = format!("seed003-{p}-{r}-{d}");
                // `live`: the draft as a turn's reply.
                let turn = json!({"conversation": conversation, "turn": "t1", "actor": "yusuf_rossi_9620",
                    "at": "2026-11-29T15:00:00Z", "time_zone": "America/New_York", "locale": "en-US",
                    "entries": [{"kind": "user", "text": "Can you send me the payment link?"}], "draft": draft});
                let TurnResult::Decided { response, .. } = engine.turn(&turn.to_string()).unwrap() else {
                    panic!("turn refused")
                };
                let reply = response.reply.unwrap();
                assert_eq!(reply["basis"], "fallback", "live, draft {d}, {under}: {reply}");
                assert_eq!(reply["text"], fallback(&engine, PathName::Live).as_str());
                messages += 1;
                // `retry`, `digest`, `queue`: cleared and stored in the outbox.
                for path in ["retry", "digest", "queue"] {
                    let request = outgoing(&conversation, path, draft).to_string();
                    let Submitted::Queued { run, .. } = engine.submit(&request, 0).unwrap() else {
                        panic!("not queued")
                    };
                    assert_eq!(
                        run.message.basis(),
                        warrant_core::outbound::Basis::Fallback,
                        "{path}, draft {d}, {under}"
                    );
                    assert_eq!(run.message.text(), fallback(&engine, run.message.path()));
                    assert!(run.message.claims().is_empty());
                    messages += 1;
                }
                // `scheduled`: stored as a due job, cleared by the scheduler when it is due.
                let mut request = outgoing(&conversation, "scheduled", draft);
                request["due"] = json!("2026-11-29T18:00:00Z");
                let Submitted::Scheduled { .. } = engine.submit(&request.to_string(), 0).unwrap() else {
                    panic!("not scheduled")
                };
                jobs += 1;
            }
            let lease =
                Lease { holder: format!("scheduler-{p}-{r}"), now: 1_795_975_200_000, until: 1_795_975_260_000 };
            let due = engine.run_due(&lease, 100).unwrap();
            assert_eq!((due.taken, due.enqueued, due.failed.len()), (jobs, jobs, 0), "{under}");
            messages += jobs;

            // The control: a draft whose one claim is backed (the order was delivered) does reach
            // the model, so the answers above were the endpoint's to give. Its text is the
            // draft's only when the coverage check answered a clear `no`; otherwise the claim's
            // copy, composed by code.
            let asked = seen.lock().unwrap().len();
            let control = json!({"text": "Your order #W6679257 was delivered on Friday.",
                "claims": [{"claim": "order_delivered", "order": "#W6679257"}]});
            let Submitted::Queued { run, .. } =
                engine.submit(&outgoing(&format!("control-{p}-{r}"), "queue", &control).to_string(), 0).unwrap()
            else {
                panic!("not queued")
            };
            assert!(seen.lock().unwrap().len() > asked, "the control reached the endpoint");
            let (basis, text) = if p == 1 {
                ("cleared", "Your order #W6679257 was delivered on Friday.")
            } else {
                ("rewritten", "Your order #W6679257 has been delivered.")
            };
            assert_eq!(serde_json::to_value(run.message.basis()).unwrap(), basis, "control, {under}");
            assert_eq!(run.message.text(), text, "control, {under}");
            controls += 1;
        }
    }
    // Every seed-003 message went out on every path under every pair of answers, and the
    // outbox holds each (the controls included) once.
    let policies = coverage_answers().len() * rewrite_answers().len();
    assert_eq!(messages, policies * drafts.len() * PathName::ALL.len());
    let outbox = engine.outbox(None, 10_000).unwrap();
    assert_eq!(outbox.len(), policies * drafts.len() * 4 + controls, "every message but the live replies, once");
    for row in &outbox {
        if row.message.conversation.starts_with("seed003") {
            assert_eq!(row.message.body["basis"], "fallback", "{}", row.message.body);
            assert!(!row.message.body["text"].as_str().unwrap().contains("attached"));
        }
    }
    // No seed-003 draft ever reached the model: each request the endpoint got was a control's.
    for request in seen.lock().unwrap().iter() {
        let question = request["messages"][1]["content"].as_str().unwrap();
        assert!(question.contains("#W6679257") && !question.contains("payment link"), "{question}");
    }
}
