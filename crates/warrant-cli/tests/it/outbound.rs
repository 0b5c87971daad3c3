//! `warrant outbound` as a process over a SQLite file: seed 003's draft goes out as fallback
//! copy with its record, a malformed request names its field and exits 2, and the outbound
//! corpus runs under `warrant corpus run`.

use serde_json::{Value, json};

use crate::{stderr, stdout, warrant};

const CONTRACT: &str = "examples/retail/contract.toml";

fn store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("w.sqlite").display());
    (dir, store)
}

#[test]
fn the_payment_link_draft_goes_out_as_fallback_copy_with_its_record() {
    let (dir, store) = store();
    let record = dir.path().join("record.json");
    let request = json!({"conversation": "seed003", "path": "scheduled", "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": "Your payment link is attached.", "claims": [{"claim": "payment_link_sent", "order": "#W0000000"}]}});
    let out = warrant(
        &["outbound", "--contract", CONTRACT, "--store", &store, "--record", record.to_str().unwrap(), "-"],
        &request.to_string(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let message: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(message["basis"], "fallback");
    assert_eq!(message["path"], "scheduled");
    assert_eq!(message["channel"], "support_webhook");
    assert_eq!(message["claims"], json!([]));
    assert!(message["text"].as_str().unwrap().starts_with("We're following up"));
    assert_eq!(message["reasons"][0]["code"], "claim_unbacked");
    assert_eq!(message["reasons"][0]["field"], "draft.claims[0]");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(record["request"]["draft"]["text"], "Your payment link is attached.");
    assert_eq!(record["verdicts"][0]["backed"], false);
    assert_eq!(record["message"], message);
    // Nothing is backed, so no model was asked anything: there are no questions to answer.
    assert_eq!(message["reasons"][1]["code"], "nothing_backed");
    assert_eq!((record["questions"].clone(), record["model_calls"].clone()), (json!([]), json!([])));
}

#[test]
fn a_malformed_outbound_request_names_its_field_and_exits_2() {
    let (_dir, store) = store();
    let request = json!({"conversation": "c", "path": "cron", "at": "2026-11-29T16:00:00Z", "locale": "en-US", "draft": {"text": "x"}});
    let out = warrant(&["outbound", "--contract", CONTRACT, "--store", &store], &request.to_string());
    assert_eq!(out.status.code(), Some(2));
    let error: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(error["error"]["field"], "path");
    assert_eq!(error["error"]["code"], "invalid_input");
}

#[test]
fn the_outbound_corpus_runs_under_corpus_run_and_a_leak_fails_it() {
    let out = warrant(&["corpus", "run", "--contract", CONTRACT, "corpus/outbound"], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap();
    let passed: usize = last.strip_suffix(" passed, 0 failed").unwrap().parse().unwrap();
    assert!(passed >= 14, "{last}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leak.jsonl");
    let original = std::fs::read_to_string(crate::root().join("corpus/outbound/cases.jsonl")).unwrap();
    let mut case: Value = serde_json::from_str(original.lines().next().unwrap()).unwrap();
    case["records"] =
        json!([{"table": "order", "key": "#W0000000", "revision": 1, "value": {"payment_link_status": "sent"}}]);
    std::fs::write(&file, format!("{case}\n")).unwrap();
    let out = warrant(&["corpus", "run", "--contract", CONTRACT, file.to_str().unwrap()], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("leak: on path `live`"), "{text}");
    assert!(text.ends_with("0 passed, 1 failed\n"), "{text}");
}

/// Seed 003 end to end, as processes: the follow-up agent hands warrant its draft for later
/// (`warrant outbound --send` with a `due` time), and `warrant scheduler run` clears it when it
/// is due and delivers what the gate let out to the deployment's webhook on a real socket. The
/// customer receives the path's fallback copy, once, and never the claim that a link is attached.
#[test]
fn seed_003_as_a_scheduled_follow_up_reaches_the_webhook_as_fallback_copy_once() {
    use crate::receiver::{Behaviour, Webhook};

    let (_dir, store) = store();
    let send = |request: &Value| {
        let out =
            warrant(&["outbound", "--contract", CONTRACT, "--store", &store, "--send", "-"], &request.to_string());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let follow_up = json!({"conversation": "seed003", "path": "scheduled", "at": "2026-11-29T16:00:00Z",
        "due": "2026-11-29T16:30:00Z", "locale": "en-US",
        "draft": {"text": "Great news! Your payment link is attached below.",
                  "claims": [{"claim": "payment_link_sent", "order": "#W0000000"}]}});
    let scheduled = send(&follow_up);
    assert_eq!(scheduled["scheduled"]["duplicate"], false, "{scheduled}");
    // The follow-up job runs again (a retry of the agent's call): it is stored once.
    assert_eq!(send(&follow_up)["scheduled"]["duplicate"], true);
    // A due time on another path is refused, with its field.
    let mut wrong = follow_up.clone();
    wrong["path"] = json!("queue");
    let out = warrant(&["outbound", "--contract", CONTRACT, "--store", &store, "--send", "-"], &wrong.to_string());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(serde_json::from_str::<Value>(&stdout(&out)).unwrap()["error"]["field"], "due");

    let webhook = Webhook::start(Behaviour::Answer(200));
    let run = |store: &str| {
        let out = warrant(
            &["scheduler", "run", "--contract", CONTRACT, "--store", store, "--webhook", &webhook.url(), "--once"],
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let first = run(&store);
    assert_eq!(first["follow_ups"]["enqueued"], 1, "{first}");
    assert_eq!(first["sent"], 1, "{first}");
    let again = run(&store);
    assert_eq!((again["follow_ups"]["taken"].clone(), again["taken"].clone()), (json!(0), json!(0)), "{again}");

    let log = webhook.log();
    assert_eq!(log.wire.len(), 1, "{:?}", log.wire);
    let delivered = log.applied.values().next().unwrap();
    assert_eq!(delivered["basis"], "fallback", "{delivered}");
    assert_eq!(delivered["path"], "scheduled");
    assert_eq!(delivered["claims"], json!([]));
    let text = delivered["text"].as_str().unwrap();
    assert!(!text.contains("attached"), "{text}");
    // The delivered copy is the contract's fallback for the path, and the outbox keeps the
    // gate's record beside it.
    let contract = warrant_engine::load_contract(&crate::root().join(CONTRACT)).unwrap().0;
    let fallback =
        contract.outbound().path(warrant_core::claim::PathName::Scheduled).unwrap().fallback("en-US").unwrap();
    assert_eq!(text, fallback);
    let out = warrant(&["scheduler", "outbox", "--store", &store, "--state", "sent"], "");
    let row: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(row["record"]["verdicts"][0]["backed"], false, "{row}");
}
