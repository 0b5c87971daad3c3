//! The outbound gate through the engine over a real SQLite file: seed 003 on every path, a
//! committed cancellation backing its claims (the refund only once its effect is reported done),
//! the rewrite given verified facts only, and every message replayed byte for byte from its
//! record with no store and no model.

use serde_json::{Value, json};
use warrant_core::claim::PathName;
use warrant_core::outbound::Basis;
use warrant_engine::{Engine, ModelSetup, ModelSource, OutboundResult, OutboundRun, TurnResult, replay_outbound};
use warrant_store::SqliteStore;

use crate::endpoint::{Seen, endpoint, live};
use crate::{retail_engine, retail_engine_with};

const PATHS: [&str; 5] = ["live", "retry", "scheduled", "digest", "queue"];
const LINK: &str = "Here is the payment link for your order. It's attached below.";

/// The engine with a model behind a real socket that answers each task one fixed way: the
/// coverage check `coverage` (`yes`/`no`/`unsure`), the rewrite `rewrite`; and every request
/// body the endpoint was sent.
fn with_model(
    made: impl FnOnce(ModelSource) -> (Engine<SqliteStore>, tempfile::TempDir),
    coverage: &'static str,
    rewrite: &'static str,
) -> (Engine<SqliteStore>, Seen, tempfile::TempDir) {
    let seen = Seen::default();
    let base = endpoint(
        move |name| match name {
            "claims_coverage" => format!(r#"{{"unlisted_claim":"{coverage}"}}"#),
            _ => json!({"text": rewrite}).to_string(),
        },
        Seen::clone(&seen),
    );
    let (engine, dir) = made(ModelSource::Setup(ModelSetup::new(Box::new(live(base)), "m")));
    (engine, seen, dir)
}

const YUSUF: &str = "yusuf_rossi_9620";

fn outbound(
    engine: &mut Engine<SqliteStore>,
    (conversation, actor): (&str, &str),
    path: &str,
    text: &str,
    claims: Value,
) -> OutboundRun {
    let request = json!({"conversation": conversation, "actor": actor, "path": path, "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": text, "claims": claims}});
    match engine.outbound(&request.to_string()).unwrap() {
        OutboundResult::Cleared(run) => run,
        OutboundResult::Rejected(error) => panic!("rejected: {error}"),
    }
}

fn codes(run: &OutboundRun) -> Vec<&'static str> {
    run.message.reasons().iter().map(|r| r.code.as_str()).collect()
}

fn replays_identically(engine: &Engine<SqliteStore>, run: &OutboundRun) {
    let record: warrant_engine::OutboundRecord =
        serde_json::from_str(&serde_json::to_string(&run.record).unwrap()).unwrap();
    let again = replay_outbound(engine.contract(), &record).unwrap();
    assert_eq!(serde_json::to_string(&again).unwrap(), serde_json::to_string(&run.message).unwrap());
    assert_eq!(serde_json::to_value(&again).unwrap(), record.message);
}

#[test]
fn seed_003_the_payment_link_nobody_created_goes_out_as_fallback_on_every_path() {
    let (engine, _dir) = retail_engine();
    let claims = json!([{"claim": "payment_link_sent", "order": "#W0000000"}]);
    // Without a model the rewrite cannot run; with one, its rewrite repeats the claim and the
    // coverage check of the rewrite blocks it.
    let (mut modelled, seen, _modelled_dir) =
        with_model(retail_engine_with, "yes", "Your payment link is attached below.");
    let mut engine = engine;
    for path in PATHS {
        for (engine, label) in [(&mut engine, "no model"), (&mut modelled, "model")] {
            let run = outbound(engine, ("seed003", YUSUF), path, LINK, claims.clone());
            assert_eq!(run.message.basis(), Basis::Fallback, "{path} ({label})");
            assert_eq!(
                run.message.text(),
                engine.contract().outbound().path(run.message.path()).unwrap().fallback("en-US").unwrap()
            );
            assert!(run.message.claims().is_empty());
            // No order `#W0000000` exists: no recipient may see it, so nothing can back a claim
            // about it.
            assert_eq!(codes(&run)[0], "claim_not_visible", "{path} ({label})");
            assert!(codes(&run).contains(&"fallback_sent"));
            assert!(!run.record.verdicts[0].backed);
            replays_identically(engine, &run);
        }
    }
    // The claim left unlisted: the path bounds its text by its claims, and nothing is backed.
    let run = outbound(&mut modelled, ("seed003", YUSUF), "scheduled", LINK, json!([]));
    assert_eq!(run.message.basis(), Basis::Fallback);
    assert_eq!(codes(&run), ["nothing_backed", "fallback_sent"]);
    // Nothing was backed anywhere, so the model was never asked anything.
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());
}

#[test]
fn a_committed_cancellation_backs_its_claim_and_the_refund_waits_for_done() {
    let (mut engine, _, _dir) = with_model(retail_engine_with, "no", "unused");
    let turn = |turn: &str, acts: Value, answers: Value| {
        json!({"conversation": "life", "turn": turn, "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
            "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please cancel it."}],
            "acts": acts, "answers": answers}).to_string()
    };
    let cancel =
        json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]);
    let TurnResult::Decided { response: held, .. } = engine.turn(&turn("t1", cancel, json!([]))).unwrap() else {
        panic!()
    };
    let confirm = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    let TurnResult::Decided { response: done, .. } = engine.turn(&turn("t2", json!([]), confirm)).unwrap() else {
        panic!()
    };
    let effect = done.effects[0].id.clone();

    let text = "Your order #W6247578 is cancelled and your refund has been issued.";
    let claims =
        json!([{"claim": "order_cancelled", "order": "#W6247578"}, {"claim": "refund_issued", "order": "#W6247578"}]);
    let before = outbound(&mut engine, ("life", YUSUF), "queue", text, claims.clone());
    assert_eq!(before.message.basis(), Basis::Rewritten, "{:?}", codes(&before));
    assert_eq!(before.message.claims(), [json!({"claim": "order_cancelled", "order": "#W6247578"})]);
    assert_eq!(before.record.verdicts[1].reason, Some(warrant_core::reason::ReasonCode::ClaimUnbacked));

    engine.report_outcome(&effect, "done", &[]).unwrap();
    let after = outbound(&mut engine, ("life", YUSUF), "queue", text, claims.clone());
    assert_eq!(after.message.basis(), Basis::Cleared, "{:?}", codes(&after));
    assert_eq!(after.message.text(), text);
    assert!(after.record.verdicts.iter().all(|v| v.backed));
    replays_identically(&engine, &after);

    // Another conversation's ledger backs nothing here.
    let elsewhere = outbound(
        &mut engine,
        ("elsewhere", YUSUF),
        "queue",
        "Your refund has been issued.",
        json!([{"claim": "refund_issued", "order": "#W6247578"}]),
    );
    assert_ne!(elsewhere.message.basis(), Basis::Cleared);
}

/// The retail contract without its claim kinds' copy: every rewrite is then the model's.
fn retail_without_copy_with(model: ModelSource) -> (Engine<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let folder = crate::retail_dir();
    let text = std::fs::read_to_string(folder.join("contract.toml")).unwrap();
    let text: String = text.lines().filter(|l| !l.starts_with("copy.")).map(|l| format!("{l}\n")).collect();
    let contract =
        warrant_core::Contract::load("retail-without-copy.toml", &text, &warrant_engine::FolderFiles::new(&folder))
            .unwrap();
    assert!(contract.outbound().claims().iter().all(|k| k.copy("en-US").is_none()));
    let store = SqliteStore::open(&dir.path().join("warrant.sqlite")).unwrap();
    (crate::build(contract, &folder, store, model), dir)
}

/// The question's data block, read back.
fn data(question: &str) -> Value {
    let inner = question.strip_prefix("<data>\n").and_then(|q| q.strip_suffix("\n</data>")).unwrap();
    serde_json::from_str(inner).unwrap()
}

#[test]
fn the_model_rewrite_is_given_verified_facts_only_as_data() {
    let (mut engine, seen, _dir) = with_model(retail_without_copy_with, "no", "Your order #W5918442 is still pending.");
    let draft = "Good news: order #W5918442 was cancelled yesterday and is still pending.";
    let claims =
        json!([{"claim": "order_cancelled", "order": "#W5918442"}, {"claim": "order_pending", "order": "#W5918442"}]);
    let run = outbound(&mut engine, ("facts", "sofia_rossi_8776"), "digest", draft, claims);
    assert_eq!(run.message.basis(), Basis::Rewritten);
    assert_eq!(run.message.text(), "Your order #W5918442 is still pending.");
    let requests = seen.lock().unwrap();
    let rewrite = requests.iter().find(|r| r["response_format"]["json_schema"]["name"] == "rewrite").unwrap();
    let question = rewrite["messages"][1]["content"].as_str().unwrap();
    let facts = data(question)["verified_facts"].clone();
    assert_eq!(facts[0], json!({"claim": {"claim": "order_pending", "order": "#W5918442"}}), "{question}");
    assert_eq!(
        (facts[1]["record"]["table"].as_str(), facts[1]["record"]["key"].as_str()),
        (Some("order"), Some("#W5918442"))
    );
    assert_eq!(facts.as_array().unwrap().len(), 2);
    assert!(
        !question.contains("order_cancelled") && !question.contains("Good news"),
        "the draft never reaches the rewrite: {question}"
    );
    let calls: Vec<&str> = run.record.model_calls.iter().map(|c| c.task.as_str()).collect();
    assert_eq!(calls, ["rewrite", "claims_coverage"]);
    assert!(run.record.model_calls.iter().all(|c| c.prompt_version.len() == 12 && c.result.is_some()));
    replays_identically(&engine, &run);
}

/// Before: a message in one customer's conversation could state another customer's order
/// facts as `cleared`, and the rewrite was given that order's row.
#[test]
fn another_customers_order_is_never_claimed_to_its_recipient_nor_given_to_a_model() {
    // Without copy the rewrite is the model's, so what it is given can be seen.
    let (mut engine, seen, _dir) = with_model(retail_without_copy_with, "no", "Your order #W5918442 is still pending.");
    // `#W3220387` is a cancelled order of another customer than Sofia, the recipient.
    let draft = "Your order #W5918442 is pending and your order #W3220387 has been cancelled.";
    let claims =
        json!([{"claim": "order_pending", "order": "#W5918442"}, {"claim": "order_cancelled", "order": "#W3220387"}]);
    let run = outbound(&mut engine, ("facts", "sofia_rossi_8776"), "digest", draft, claims.clone());
    assert_eq!(run.message.basis(), Basis::Rewritten, "{:?}", codes(&run));
    assert_eq!(run.record.verdicts[1].reason, Some(warrant_core::reason::ReasonCode::ClaimNotVisible));
    assert!(!run.record.verdicts[1].backed);
    assert_eq!(run.message.claims(), [json!({"claim": "order_pending", "order": "#W5918442"})]);
    // The model was given the recipient's row and claim, and nothing of the other order.
    let requests = seen.lock().unwrap();
    assert!(!requests.is_empty());
    for request in requests.iter() {
        assert!(!request.to_string().contains("W3220387"), "another customer's order reached the model: {request}");
    }
    let rewrite = requests.iter().find(|r| r["response_format"]["json_schema"]["name"] == "rewrite").unwrap();
    let facts = data(rewrite["messages"][1]["content"].as_str().unwrap())["verified_facts"].clone();
    assert_eq!(facts[0], json!({"claim": {"claim": "order_pending", "order": "#W5918442"}}));
    assert_eq!(facts[1]["record"]["key"].as_str(), Some("#W5918442"));
    assert_eq!(facts.as_array().unwrap().len(), 2);
    drop(requests);
    // To the owner of `#W3220387` the same claim is backed.
    let owner = crate::data().orders["#W3220387"]["user_id"].clone();
    let theirs = outbound(
        &mut engine,
        ("theirs", owner.as_str().unwrap()),
        "digest",
        "Your order #W3220387 has been cancelled.",
        json!([{"claim": "order_cancelled", "order": "#W3220387"}]),
    );
    assert!(theirs.record.verdicts[0].backed, "{:?}", theirs.record.verdicts);
    replays_identically(&engine, &run);
    // With copy the rewrite is composed by code, from the recipient's claim alone.
    let (mut composing, _, _dir) = with_model(retail_engine_with, "no", "unused");
    let composed = outbound(&mut composing, ("facts", "sofia_rossi_8776"), "digest", draft, claims);
    assert_eq!(codes(&composed), ["claim_not_visible", "rewrite_composed"]);
    assert_eq!(composed.message.text(), "Your order #W5918442 is pending.");
}

#[test]
fn with_authored_copy_the_rewrite_is_composed_and_no_model_is_asked() {
    let (mut engine, seen, _dir) =
        with_model(retail_engine_with, "no", "Your payment link is attached and your refund of $500 has been issued.");
    let draft = "Good news: order #W5918442 was cancelled yesterday and is still pending.";
    let claims =
        json!([{"claim": "order_cancelled", "order": "#W5918442"}, {"claim": "order_pending", "order": "#W5918442"}]);
    let run = outbound(&mut engine, ("facts", "sofia_rossi_8776"), "digest", draft, claims);
    assert_eq!((run.message.basis(), run.message.text()), (Basis::Rewritten, "Your order #W5918442 is pending."));
    assert_eq!(codes(&run), ["claim_unbacked", "rewrite_composed"]);
    assert!(seen.lock().unwrap().is_empty(), "no model is asked");
    assert!(run.record.model_calls.is_empty() && run.record.questions.is_empty());
    replays_identically(&engine, &run);
}

#[test]
fn a_bad_outbound_request_is_refused_with_its_field() {
    let (mut engine, _dir) = retail_engine();
    let body = json!({"conversation": "c", "actor": YUSUF, "path": "live", "at": "2026-11-29T16:00:00Z", "locale": "en-US", "draft": {"text": "x", "claims": "none"}});
    match engine.outbound(&body.to_string()).unwrap() {
        OutboundResult::Rejected(error) => assert_eq!(error.field, "draft.claims"),
        OutboundResult::Cleared(_) => panic!("a malformed request cleared a message"),
    }
}

#[test]
fn the_live_reply_is_cleared_against_the_records_as_the_turn_leaves_them() {
    let (mut engine, _, _dir) = with_model(retail_engine_with, "no", "We will follow up shortly.");
    let turn = |turn: &str, acts: Value, answers: Value, text: &str, claims: Value| {
        json!({"conversation": "live", "turn": turn, "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
            "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please cancel it."}],
            "acts": acts, "answers": answers, "draft": {"text": text, "claims": claims}}).to_string()
    };
    let claims = json!([{"claim": "order_cancelled", "order": "#W6247578"}]);
    let cancel =
        json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]);
    // Held, not committed: the order is still pending, so the claim is unbacked; nothing else
    // is claimed, so no rewrite is asked and the reply is the path's fallback copy.
    let early = "Your order #W6247578 is cancelled.";
    let TurnResult::Decided { response: held, .. } =
        engine.turn(&turn("t1", cancel, json!([]), early, claims.clone())).unwrap()
    else {
        panic!()
    };
    let fallback = engine.contract().outbound().path(PathName::Live).unwrap().fallback("en-US").unwrap().to_owned();
    assert_eq!(held.reply.as_ref().unwrap()["basis"], "fallback", "{:?}", held.reply);
    assert_eq!(held.reply.as_ref().unwrap()["text"], fallback.as_str());
    assert_eq!(held.reply.as_ref().unwrap()["reasons"][0]["code"], "claim_unbacked");
    assert_eq!(held.reply.as_ref().unwrap()["reasons"][1]["code"], "nothing_backed");
    // Confirmed in this turn: the turn's own writes back the claim, and the draft goes out as is.
    let confirm = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    let TurnResult::Decided { response: done, .. } =
        engine.turn(&turn("t2", json!([]), confirm, early, claims)).unwrap()
    else {
        panic!()
    };
    let reply = done.reply.as_ref().unwrap();
    assert_eq!(reply["basis"], "cleared", "{reply}");
    assert_eq!(reply["text"], early);
    assert_eq!(reply["path"], "live");
    // Seed 003 on the live path.
    let link = json!([{"claim": "payment_link_sent", "order": "#W6247578"}]);
    let TurnResult::Decided { response: seed, .. } =
        engine.turn(&turn("t3", json!([]), json!([]), LINK, link)).unwrap()
    else {
        panic!()
    };
    assert_ne!(seed.reply.as_ref().unwrap()["basis"], "cleared");
    // The replies are on the record, and a replay gives them again byte for byte.
    let stored = engine.turns(0, 10).unwrap();
    assert_eq!(stored[1].response["reply"], *reply);
    assert_eq!(stored[1].replay["outbound"]["verdicts"][0]["backed"], true);
    let report = engine.replay().unwrap();
    assert_eq!((report.turns, report.identical), (3, 3), "{:?}", report.changes);
}

/// Before: a reply in Yusuf's turn could state another customer's cancelled order as
/// `cleared`, since the records back it.
#[test]
fn a_live_reply_cannot_state_another_customers_order_to_the_turns_actor() {
    let (mut engine, seen, _dir) = with_model(retail_engine_with, "no", "We will follow up shortly.");
    let text = "Your order #W3220387 has been cancelled.";
    let request = json!({"conversation": "live", "turn": "t1", "actor": YUSUF, "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Is it cancelled?"}],
        "draft": {"text": text, "claims": [{"claim": "order_cancelled", "order": "#W3220387"}]}});
    let TurnResult::Decided { response, .. } = engine.turn(&request.to_string()).unwrap() else { panic!() };
    let reply = response.reply.unwrap();
    assert_ne!(reply["basis"], "cleared", "{reply}");
    assert_ne!(reply["text"], text);
    assert_eq!(reply["actor"], YUSUF, "the reply names its recipient");
    assert_eq!(reply["reasons"][0]["code"], "claim_not_visible", "{reply}");
    assert!(seen.lock().unwrap().iter().all(|r| !r.to_string().contains("W3220387")));
    let report = engine.replay().unwrap();
    assert_eq!((report.turns, report.identical), (1, 1), "{:?}", report.changes);
}

#[test]
fn without_a_model_a_live_draft_cannot_be_cleared() {
    let (mut engine, _dir) = retail_engine();
    let request = json!({"conversation": "nomodel", "turn": "t1", "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Hi."}],
        "draft": {"text": "Hello! How can I help?", "claims": []}});
    let TurnResult::Decided { response, .. } = engine.turn(&request.to_string()).unwrap() else { panic!() };
    let reply = response.reply.unwrap();
    assert_eq!(reply["basis"], "fallback");
    let codes: Vec<&str> = reply["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["nothing_backed", "fallback_sent"]);
    // A backed claim with a coverage check that cannot run: its copy goes out, composed by code.
    let request = json!({"conversation": "nomodel", "turn": "t2", "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
        "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Where is it?"}],
        "draft": {"text": "Your order #W6679257 was delivered, and a gift is on its way!",
            "claims": [{"claim": "order_delivered", "order": "#W6679257"}]}});
    let TurnResult::Decided { response, .. } = engine.turn(&request.to_string()).unwrap() else { panic!() };
    let reply = response.reply.unwrap();
    assert_eq!(
        (reply["basis"].as_str(), reply["text"].as_str()),
        (Some("rewritten"), Some("Your order #W6679257 has been delivered."))
    );
    let codes: Vec<&str> = reply["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["coverage_failed", "rewrite_composed"]);
}

/// A scheduled follow-up is stored, not cleared, until it is due; then the gate reads the
/// ledger and the records as they are at send time. A follow-up drafted before the order was
/// cancelled, which claims the cancellation, goes out as is once the cancellation is committed;
/// seed 003's link, which nothing ever created, never goes out. Each is stored in
/// the outbox once, under its job's key, with the gate's record beside it.
#[test]
fn a_scheduled_follow_up_is_cleared_when_due_against_the_record_as_it_is_then() {
    use warrant_engine::Submitted;
    use warrant_store::{JobState, Lease};

    let (mut engine, _, _dir) = with_model(retail_engine_with, "no", "unused");
    let follow_up = |conversation: &str, text: &str, claims: Value| {
        json!({"conversation": conversation, "actor": YUSUF, "path": "scheduled", "at": "2026-11-29T14:00:00Z",
            "due": "2026-11-29T18:00:00Z", "locale": "en-US", "draft": {"text": text, "claims": claims}})
        .to_string()
    };
    let mut jobs = Vec::new();
    for (conversation, text, claims) in [
        ("seed003", LINK, json!([{"claim": "payment_link_sent", "order": "#W0000000"}])),
        ("life", "Your order #W6247578 is cancelled.", json!([{"claim": "order_cancelled", "order": "#W6247578"}])),
    ] {
        match engine.submit(&follow_up(conversation, text, claims), 0).unwrap() {
            Submitted::Scheduled { job, due_at, duplicate } => {
                assert!(!duplicate);
                assert_eq!(due_at, 1_795_975_200_000);
                jobs.push(job);
            }
            other => panic!("not scheduled: {other:?}"),
        }
    }
    assert!(engine.outbox(None, 10).unwrap().is_empty(), "nothing is cleared before it is due");
    let lease = |now: i64| Lease { holder: "scheduler".to_owned(), now, until: now + 60_000 };
    let early = engine.run_due(&lease(1_795_975_199_999), 10).unwrap();
    assert_eq!(early.taken, 0);

    // The order is cancelled after the follow-up was drafted, before it is due.
    let turn = |turn: &str, acts: Value, answers: Value| {
        json!({"conversation": "life", "turn": turn, "actor": "yusuf_rossi_9620", "at": "2026-11-29T15:00:00Z",
            "time_zone": "America/New_York", "locale": "en-US", "entries": [{"kind": "user", "text": "Please cancel it."}],
            "acts": acts, "answers": answers}).to_string()
    };
    let cancel =
        json!([{"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}]);
    let TurnResult::Decided { response: held, .. } = engine.turn(&turn("t1", cancel, json!([]))).unwrap() else {
        panic!()
    };
    let confirm = json!([{"interaction": held.interactions[0].id, "option": "confirm"}]);
    engine.turn(&turn("t2", json!([]), confirm)).unwrap();

    let due = engine.run_due(&lease(1_795_975_200_000), 10).unwrap();
    assert_eq!((due.taken, due.enqueued, due.failed.len()), (2, 2, 0));
    let outbox = engine.outbox(None, 10).unwrap();
    let body = |conversation: &str| {
        outbox.iter().find(|row| row.message.conversation == conversation).map(|row| row.message.clone()).unwrap()
    };
    // The link claim is backed by nothing, so neither the draft nor any rewrite goes out, whatever
    // the model would say: the path's fallback copy does.
    let link = body("seed003");
    assert_eq!(link.body["basis"], "fallback", "{}", link.body);
    assert_eq!(link.body["claims"], json!([]));
    assert_ne!(link.body["text"], LINK);
    assert_eq!(link.body["at"], "2026-11-29T18:00:00Z", "cleared at send time");
    assert_eq!(link.idempotency_key, warrant_engine::outbox::job_key(&jobs[0]));
    let cancelled = body("life");
    assert_eq!(cancelled.body["basis"], "cleared", "{}", cancelled.body);
    assert_eq!(cancelled.body["text"], "Your order #W6247578 is cancelled.");
    assert_eq!(cancelled.record["verdicts"][0]["backed"], true, "{}", cancelled.record);
    for job in &jobs {
        assert_eq!(engine.due_job(job).unwrap().unwrap().state, JobState::Done);
    }
    // Nothing is due any more, and nothing is stored twice.
    assert_eq!(engine.run_due(&lease(1_795_975_300_000), 10).unwrap().taken, 0);
    assert_eq!(engine.outbox(None, 10).unwrap().len(), 2);
    // The record of each replays to the message delivered, byte for byte, with no store.
    for row in &outbox {
        let record: warrant_engine::OutboundRecord = serde_json::from_value(row.message.record.clone()).unwrap();
        let again = replay_outbound(engine.contract(), &record).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), row.message.body);
    }
}

/// A message handed over to send now is stored in the outbox once: handing the same request
/// over again finds it stored.
#[test]
fn a_message_submitted_twice_is_stored_once() {
    use warrant_engine::Submitted;

    let (mut engine, _dir) = retail_engine();
    let request =
        json!({"conversation": "c", "actor": YUSUF, "path": "retry", "at": "2026-11-29T16:00:00Z", "locale": "en-US",
        "draft": {"text": LINK, "claims": [{"claim": "payment_link_sent", "order": "#W0000000"}]}})
        .to_string();
    let Submitted::Queued { run, outbox, duplicate: false } = engine.submit(&request, 5).unwrap() else {
        panic!("not queued")
    };
    assert_eq!(run.message.basis(), Basis::Fallback);
    let Submitted::Queued { outbox: again, duplicate: true, .. } = engine.submit(&request, 6).unwrap() else {
        panic!("stored twice")
    };
    assert_eq!(outbox, again);
    let rows = engine.outbox(None, 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].message.body, serde_json::to_value(&run.message).unwrap());
    let Submitted::Rejected(error) = engine.submit(&request.replace("\"retry\"", "\"later\""), 7).unwrap() else {
        panic!()
    };
    assert_eq!(error.field, "path");
}
