//! The outbound gate through the engine over a real SQLite file: seed 003 on every path, a
//! committed cancellation backing its claims (the refund only once its effect is reported done),
//! the rewrite given verified facts only, and every message replayed byte for byte from its
//! record with no store and no model.

use std::time::Duration;

use serde_json::{Value, json};
use warrant_core::outbound::Basis;
use warrant_engine::{
    Engine, ModelSetup, OutboundResult, OutboundRun, TurnResult, replay_outbound,
};
use warrant_model::{ChatAnswer, ChatRequest, Provider, ProviderError};
use warrant_store::{SqliteStore, Store};

use crate::retail_engine;

const PATHS: [&str; 5] = ["live", "retry", "scheduled", "digest", "queue"];
const LINK: &str = "Here is the payment link for your order. It's attached below.";

/// Answers each task one fixed way, and keeps every request it was sent.
struct ByTask {
    coverage: &'static str,
    rewrite: &'static str,
    seen: std::sync::Arc<std::sync::Mutex<Vec<ChatRequest>>>,
}

impl Provider for ByTask {
    fn complete(&self, request: &ChatRequest, _: Duration) -> Result<ChatAnswer, ProviderError> {
        self.seen.lock().unwrap().push(request.clone());
        let content = match request.schema_name.as_str() {
            "claims_coverage" => format!(r#"{{"unlisted_claim":"{}"}}"#, self.coverage),
            _ => json!({"text": self.rewrite}).to_string(),
        };
        Ok(ChatAnswer {
            content,
            prompt_tokens: 40,
            completion_tokens: 8,
        })
    }
}

fn with_model(
    engine: Engine<SqliteStore>,
    coverage: &'static str,
    rewrite: &'static str,
) -> (
    Engine<SqliteStore>,
    std::sync::Arc<std::sync::Mutex<Vec<ChatRequest>>>,
) {
    let seen = std::sync::Arc::default();
    let provider = ByTask {
        coverage,
        rewrite,
        seen: std::sync::Arc::clone(&seen),
    };
    (
        engine
            .with_model(ModelSetup::new(Box::new(provider), "test-model"))
            .unwrap(),
        seen,
    )
}

fn outbound(
    engine: &mut Engine<SqliteStore>,
    conversation: &str,
    path: &str,
    text: &str,
    claims: Value,
) -> OutboundRun {
    let request = json!({"conversation": conversation, "path": path, "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": text, "claims": claims}});
    match engine.outbound(&request.to_string()).unwrap() {
        OutboundResult::Cleared(run) => run,
        OutboundResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

fn codes(run: &OutboundRun) -> Vec<&'static str> {
    run.message
        .reasons()
        .iter()
        .map(|r| r.code.as_str())
        .collect()
}

fn replays_identically(engine: &Engine<SqliteStore>, run: &OutboundRun) {
    let record: warrant_engine::OutboundRecord =
        serde_json::from_str(&serde_json::to_string(&run.record).unwrap()).unwrap();
    let again = replay_outbound(engine.contract(), &record).unwrap();
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&run.message).unwrap()
    );
    assert_eq!(serde_json::to_value(&again).unwrap(), record.message);
}

#[test]
fn seed_003_the_payment_link_nobody_created_goes_out_as_fallback_on_every_path() {
    let (engine, _dir) = retail_engine();
    let claims = json!([{"claim": "payment_link_sent", "order": "#W0000000"}]);
    // Without a model the rewrite cannot run; with one, its rewrite repeats the claim and the
    // coverage check of the rewrite blocks it.
    let (mut modelled, seen) = with_model(
        retail_engine().0,
        "yes",
        "Your payment link is attached below.",
    );
    let mut engine = engine;
    for path in PATHS {
        for (engine, label) in [(&mut engine, "no model"), (&mut modelled, "model")] {
            let run = outbound(engine, "seed003", path, LINK, claims.clone());
            assert_eq!(run.message.basis(), Basis::Fallback, "{path} ({label})");
            assert_eq!(
                run.message.text(),
                engine
                    .contract()
                    .outbound()
                    .path(run.message.path())
                    .unwrap()
                    .fallback("en-US")
                    .unwrap()
            );
            assert!(run.message.claims().is_empty());
            assert_eq!(codes(&run)[0], "claim_unbacked", "{path} ({label})");
            assert!(codes(&run).contains(&"fallback_sent"));
            assert!(!run.record.verdicts[0].backed);
            replays_identically(engine, &run);
        }
    }
    // The claim left unlisted: only the coverage check sees it, and it can only take away.
    let run = outbound(&mut modelled, "seed003", "scheduled", LINK, json!([]));
    assert_eq!(run.message.basis(), Basis::Fallback);
    assert_eq!(
        codes(&run),
        ["coverage_blocked", "rewrite_unbacked", "fallback_sent"]
    );
    assert!(!seen.lock().unwrap().is_empty());
}

#[test]
fn a_committed_cancellation_backs_its_claim_and_the_refund_waits_for_done() {
    let (engine, _dir) = retail_engine();
    let (mut engine, _) = with_model(engine, "no", "unused");
    let turn = |turn: &str, acts: Value, answers: Value| {
        json!({"conversation": "life", "turn": turn, "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
            "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please cancel it."}],
            "acts": acts, "answers": answers}).to_string()
    };
    let cancel = json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]);
    let TurnResult::Decided { response: held, .. } =
        engine.turn(&turn("t1", cancel, json!([]))).unwrap()
    else {
        panic!()
    };
    let confirm = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    let TurnResult::Decided { response: done, .. } =
        engine.turn(&turn("t2", json!([]), confirm)).unwrap()
    else {
        panic!()
    };
    let effect = done.effects[0].id.clone();

    let text = "Your order #W6247578 is cancelled and your refund has been issued.";
    let claims = json!([{"claim": "order_cancelled", "order": "#W6247578"}, {"claim": "refund_issued", "order": "#W6247578"}]);
    let before = outbound(&mut engine, "life", "queue", text, claims.clone());
    assert_eq!(
        before.message.basis(),
        Basis::Rewritten,
        "{:?}",
        codes(&before)
    );
    assert_eq!(
        before.message.claims(),
        [json!({"claim": "order_cancelled", "order": "#W6247578"})]
    );
    assert_eq!(
        before.record.verdicts[1].reason,
        Some(warrant_core::reason::ReasonCode::ClaimUnbacked)
    );

    engine.report_outcome(&effect, "done").unwrap();
    let after = outbound(&mut engine, "life", "queue", text, claims.clone());
    assert_eq!(after.message.basis(), Basis::Cleared, "{:?}", codes(&after));
    assert_eq!(after.message.text(), text);
    assert!(after.record.verdicts.iter().all(|v| v.backed));
    replays_identically(&engine, &after);

    // Another conversation's ledger backs nothing here.
    let elsewhere = outbound(
        &mut engine,
        "elsewhere",
        "queue",
        "Your refund has been issued.",
        json!([{"claim": "refund_issued", "order": "#W6247578"}]),
    );
    assert_ne!(elsewhere.message.basis(), Basis::Cleared);
}

#[test]
fn the_rewrite_is_given_verified_facts_only() {
    let (engine, _dir) = retail_engine();
    let (mut engine, seen) = with_model(engine, "no", "Your order #W5918442 is still pending.");
    let draft = "Good news: order #W5918442 was cancelled yesterday and is still pending.";
    let claims = json!([{"claim": "order_cancelled", "order": "#W5918442"}, {"claim": "order_pending", "order": "#W5918442"}]);
    let run = outbound(&mut engine, "facts", "digest", draft, claims);
    assert_eq!(run.message.basis(), Basis::Rewritten);
    assert_eq!(run.message.text(), "Your order #W5918442 is still pending.");
    let requests = seen.lock().unwrap();
    let rewrite = requests
        .iter()
        .find(|r| r.schema_name == "rewrite")
        .unwrap();
    let question = &rewrite.messages[1].content;
    assert!(
        question.contains(r##"claim {"claim":"order_pending","order":"#W5918442"}"##),
        "{question}"
    );
    assert!(question.contains("record order #W5918442: "), "{question}");
    assert!(
        !question.contains("order_cancelled") && !question.contains("Good news"),
        "the draft never reaches the rewrite: {question}"
    );
    let calls: Vec<&str> = run
        .record
        .model_calls
        .iter()
        .map(|c| c.task.as_str())
        .collect();
    assert_eq!(calls, ["rewrite", "claims_coverage"]);
    assert!(
        run.record
            .model_calls
            .iter()
            .all(|c| c.prompt_version.len() == 12 && c.result.is_some())
    );
    replays_identically(&engine, &run);
}

#[test]
fn a_bad_outbound_request_is_refused_with_its_field() {
    let (mut engine, _dir) = retail_engine();
    let body = json!({"conversation": "c", "path": "live", "at": "2026-11-29T16:00:00Z", "locale": "en-US", "draft": {"text": "x", "claims": "none"}});
    match engine.outbound(&body.to_string()).unwrap() {
        OutboundResult::Rejected(error) => assert_eq!(error.field, "draft.claims"),
        OutboundResult::Cleared(_) => panic!("a malformed request cleared a message"),
    }
}

#[test]
fn the_live_reply_is_cleared_against_the_records_as_the_turn_leaves_them() {
    let (engine, _dir) = retail_engine();
    let (mut engine, _) = with_model(engine, "no", "We will follow up shortly.");
    let turn = |turn: &str, acts: Value, answers: Value, text: &str, claims: Value| {
        json!({"conversation": "live", "turn": turn, "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
            "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please cancel it."}],
            "acts": acts, "answers": answers, "draft": {"text": text, "claims": claims}}).to_string()
    };
    let claims = json!([{"claim": "order_cancelled", "order": "#W6247578"}]);
    let cancel = json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]);
    // Held, not committed: the order is still pending, so the claim is unbacked and the reply
    // is the rewrite from verified facts (none).
    let early = "Your order #W6247578 is cancelled.";
    let TurnResult::Decided { response: held, .. } = engine
        .turn(&turn("t1", cancel, json!([]), early, claims.clone()))
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        held.reply.as_ref().unwrap()["basis"],
        "rewritten",
        "{:?}",
        held.reply
    );
    assert_eq!(
        held.reply.as_ref().unwrap()["text"],
        "We will follow up shortly."
    );
    assert_eq!(
        held.reply.as_ref().unwrap()["reasons"][0]["code"],
        "claim_unbacked"
    );
    // Confirmed in this turn: the turn's own writes back the claim, and the draft goes out as is.
    let confirm = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    let TurnResult::Decided { response: done, .. } = engine
        .turn(&turn("t2", json!([]), confirm, early, claims))
        .unwrap()
    else {
        panic!()
    };
    let reply = done.reply.as_ref().unwrap();
    assert_eq!(reply["basis"], "cleared", "{reply}");
    assert_eq!(reply["text"], early);
    assert_eq!(reply["path"], "live");
    // Seed 003 on the live path.
    let link = json!([{"claim": "payment_link_sent", "order": "#W6247578"}]);
    let TurnResult::Decided { response: seed, .. } = engine
        .turn(&turn("t3", json!([]), json!([]), LINK, link))
        .unwrap()
    else {
        panic!()
    };
    assert_ne!(seed.reply.as_ref().unwrap()["basis"], "cleared");
    // The replies are on the record, and a replay gives them again byte for byte.
    let stored = engine.store_mut().turns(0, 10).unwrap();
    assert_eq!(stored[1].response["reply"], *reply);
    assert_eq!(stored[1].replay["outbound"]["verdicts"][0]["backed"], true);
    let report = engine.replay().unwrap();
    assert_eq!(
        (report.turns, report.identical),
        (3, 3),
        "{:?}",
        report.changes
    );
}

#[test]
fn without_a_model_a_live_draft_cannot_be_cleared() {
    let (mut engine, _dir) = retail_engine();
    let request = json!({"conversation": "nomodel", "turn": "t1", "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Hi."}],
        "draft": {"text": "Hello! How can I help?", "claims": []}});
    let TurnResult::Decided { response, .. } = engine.turn(&request.to_string()).unwrap() else {
        panic!()
    };
    let reply = response.reply.unwrap();
    assert_eq!(reply["basis"], "fallback");
    let codes: Vec<&str> = reply["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["coverage_failed", "rewrite_failed", "fallback_sent"]
    );
}
