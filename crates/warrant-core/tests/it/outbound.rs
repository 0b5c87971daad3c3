//! The outbound gate against the retail contract: the regression corpus (seed 003 on every
//! path, unbacked drafts rewritten or replaced, backed drafts unchanged), seed 003 against every
//! answer a model could give, the rewrite composed from authored copy, the field at fault in
//! claims and requests, and the same message from the same recorded facts and answers.

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::outbound::{self, Basis, GateAnswer, GateAnswers, RecordedLedger};
use warrant_core::outbound_corpus::{self, OutboundFailure};
use warrant_core::reason::ReasonCode;
use warrant_core::records::Record;
use warrant_core::turn::{EventRecord, FactError};

use crate::root;

struct Folder;
impl ContractFiles for Folder {
    fn read(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(root().join("examples/retail").join(path)).map_err(|e| e.to_string())
    }
}

fn retail() -> Contract {
    let text = std::fs::read_to_string(root().join("examples/retail/contract.toml")).unwrap();
    Contract::load("examples/retail/contract.toml", &text, &Folder).unwrap()
}

fn cases() -> Vec<outbound_corpus::OutboundCase> {
    let text = std::fs::read_to_string(root().join("corpus/outbound/cases.jsonl")).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| outbound_corpus::parse_case(l).unwrap()).collect()
}

struct Ledger(Vec<Record>, Vec<EventRecord>);
impl outbound::LedgerFacts for Ledger {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.0.iter().find(|r| r.table == table && r.key == key).cloned())
    }
    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        Ok(self.1.iter().filter(|e| e.kind == kind).cloned().collect())
    }
}

fn request(path: &str, claims: Value) -> String {
    json!({"conversation": "c1", "actor": "u1", "path": path, "at": "2026-11-20T09:00:00Z", "locale": "en-US",
        "draft": {"text": "Your order #W1 has been cancelled.", "claims": claims}})
    .to_string()
}

fn cancelled() -> Ledger {
    let row = Record {
        table: "order".into(),
        key: "#W1".into(),
        revision: 2,
        value: json!({"status": "cancelled", "user_id": "u1"}),
    };
    Ledger(vec![row], Vec::new())
}

#[test]
fn every_outbound_case_ends_as_its_corpus_says() {
    let contract = retail();
    let cases = cases();
    assert!(cases.len() >= 14);
    for case in &cases {
        if let Err(failure) = outbound_corpus::run_case(&contract, case) {
            panic!("{}: {failure}\n    why: {}", case.name, case.why);
        }
    }
    let seed = cases.iter().filter(|c| c.name.starts_with("seed_003")).count();
    assert!(seed >= 4, "seed 003's incident is in the corpus on every path");
    for basis in [Basis::Cleared, Basis::Rewritten, Basis::Fallback] {
        assert!(cases.iter().any(|c| c.expect.basis == basis), "no case ends {basis:?}");
    }
}

#[test]
fn a_payment_link_claim_cleared_on_any_path_is_reported_as_a_leak() {
    let contract = retail();
    let mut case = cases().into_iter().find(|c| c.name == "seed_003_payment_link_nobody_created").unwrap();
    // The same draft, had a payment integration recorded the link: the runner must call it a leak.
    case.records.push(Record {
        table: "order".into(),
        key: "#W0000000".into(),
        revision: 1,
        value: json!({"user_id": "user_a", "status": "pending", "payment_link_status": "sent"}),
    });
    match outbound_corpus::run_case(&contract, &case) {
        Err(OutboundFailure::Leak { basis: Basis::Cleared, .. }) => {}
        other => panic!("expected a leak, got {other:?}"),
    }
}

#[test]
fn an_invalid_claim_names_its_field() {
    let contract = retail();
    let valid = outbound::parse_request(
        &contract,
        &request(
            "retry",
            json!([{"claim": "order_cancelled", "order": "#W1"}, {"claim": "order_cancelled", "order": 7}]),
        ),
    )
    .unwrap();
    let gate = outbound::clear(&contract, &valid.outgoing(), &cancelled(), &GateAnswers::new()).unwrap();
    let invalid = gate.message.reasons().iter().find(|r| r.code == ReasonCode::ClaimInvalid).unwrap();
    assert_eq!(invalid.field.as_deref(), Some("draft.claims[1].order"));
    // The valid claim is backed, so the rewrite states it, composed from its copy.
    assert_eq!(gate.message.basis(), Basis::Rewritten);
    assert_eq!(gate.message.text(), "Your order #W1 has been cancelled.");
    assert_eq!(gate.message.claims(), [json!({"claim": "order_cancelled", "order": "#W1"})]);
}

#[test]
fn a_request_error_names_the_field() {
    let contract = retail();
    let cases = [
        (
            json!({"conversation": "c", "actor": "u1", "path": "live", "at": "2026-11-20T09:00:00Z", "locale": "en-US", "draft": {"text": "x"}, "extra": 1}),
            "extra",
        ),
        (
            json!({"conversation": "c", "actor": "", "path": "live", "at": "2026-11-20T09:00:00Z", "locale": "en-US", "draft": {"text": "x"}}),
            "actor",
        ),
        (
            json!({"conversation": "c", "actor": "u1", "path": "sms", "at": "2026-11-20T09:00:00Z", "locale": "en-US", "draft": {"text": "x"}}),
            "path",
        ),
        (
            json!({"conversation": "c", "actor": "u1", "path": "live", "at": "2026-11-20T09:00:00Z", "locale": "en-GB", "draft": {"text": "x"}}),
            "locale",
        ),
        (
            json!({"conversation": "c", "actor": "u1", "path": "live", "at": "tomorrow", "locale": "en-US", "draft": {"text": "x"}}),
            "at",
        ),
        (
            json!({"conversation": "c", "actor": "u1", "path": "live", "at": "2026-11-20T09:00:00Z", "locale": "en-US", "draft": {"text": "x", "claim": []}}),
            "draft.claim",
        ),
        (
            json!({"conversation": "c", "actor": "u1", "path": "live", "at": "2026-11-20T09:00:00Z", "locale": "en-US", "draft": {"text": "x"}, "channel": "sms"}),
            "channel",
        ),
    ];
    for (body, field) in cases {
        let error = outbound::parse_request(&contract, &body.to_string()).unwrap_err();
        assert_eq!(error.field, field, "{error}");
        assert_eq!(error.code, ReasonCode::InvalidInput);
    }
}

#[test]
fn the_same_recorded_facts_and_answers_give_the_same_message() {
    let contract = retail();
    let valid = outbound::parse_request(
        &contract,
        &request("scheduled", json!([{"claim": "order_cancelled", "order": "#W1"}])),
    )
    .unwrap();
    let live = cancelled();
    let first = outbound::clear(&contract, &valid.outgoing(), &live, &GateAnswers::new()).unwrap();
    let mut answers = GateAnswers::new();
    for q in first.unanswered(&answers) {
        answers.insert(q.id, GateAnswer::Verdict { verdict: warrant_core::check::CheckVerdict::Pass });
    }
    let gate = outbound::clear(&contract, &valid.outgoing(), &live, &answers).unwrap();
    assert_eq!(gate.message.basis(), Basis::Cleared);
    assert_eq!(gate.message.text(), "Your order #W1 has been cancelled.");
    let replayed =
        outbound::clear(&contract, &valid.outgoing(), &RecordedLedger::new(gate.facts.clone()), &answers).unwrap();
    assert_eq!(serde_json::to_string(&replayed.message).unwrap(), serde_json::to_string(&gate.message).unwrap());
    // Another instant is another message.
    let later = outbound::parse_request(
        &contract,
        &request("scheduled", json!([{"claim": "order_cancelled", "order": "#W1"}])).replace("09:00", "10:00"),
    )
    .unwrap();
    let other = outbound::clear(&contract, &later.outgoing(), &live, &answers).unwrap();
    assert_ne!(other.message.id(), gate.message.id());
    // Facts that are not on the record cannot back anything: the replay fails closed.
    let empty = outbound::clear(&contract, &valid.outgoing(), &RecordedLedger::default(), &answers).unwrap();
    assert_eq!(empty.message.basis(), Basis::Fallback);
    assert!(empty.message.reasons().iter().any(|r| r.code == ReasonCode::ClaimUnverifiable));
}

/// Every answer a model task could give a gate question: each verdict, a failure, and rewrites
/// that state what seed 003's incident stated.
fn every_answer() -> Vec<GateAnswer> {
    use warrant_core::check::{CheckFailure, CheckVerdict};
    let mut answers: Vec<GateAnswer> =
        [CheckVerdict::Pass, CheckVerdict::Block, CheckVerdict::Repair, CheckVerdict::Ask]
            .into_iter()
            .map(|verdict| GateAnswer::Verdict { verdict })
            .collect();
    answers.push(GateAnswer::Failed { failure: CheckFailure::InvalidAnswer, detail: "not JSON".into() });
    for text in [
        "Your payment link is attached and your refund of $500 has been issued.",
        "Here is the payment link for your order. It's attached below.",
        "",
    ] {
        answers.push(GateAnswer::Rewritten { text: text.into() });
    }
    answers
}

/// Clears `outgoing` under every way of answering each question the gate asks, one question at a
/// time (the questions asked depend on the answers before); calls `each` with every message.
fn under_every_answer(
    contract: &Contract,
    outgoing: &outbound::Outgoing<'_>,
    facts: &dyn outbound::LedgerFacts,
    answers: &GateAnswers,
    each: &mut dyn FnMut(&outbound::Gate, &GateAnswers),
) {
    let gate = outbound::clear(contract, outgoing, facts, answers).unwrap();
    let open = gate.unanswered(answers);
    let Some(next) = open.first() else {
        each(&gate, answers);
        return;
    };
    for answer in every_answer() {
        let mut more = answers.clone();
        more.insert(next.id.clone(), answer);
        under_every_answer(contract, outgoing, facts, &more, each);
    }
}

/// Seed 003 held whatever a model said: an endpoint answering `no` to the coverage question once
/// let the payment link nobody created go out rewritten. Every seed 003 case of the corpus, on
/// every path, under every combination of answers to every question the gate asks, goes out as
/// the path's fallback copy; and since none of its claims is backed, the gate asks nothing, so
/// no answer can reach the decision at all.
#[test]
fn seed_003_goes_out_as_fallback_whatever_a_model_answers() {
    let contract = retail();
    let seed: Vec<_> = cases().into_iter().filter(|c| c.name.starts_with("seed_003")).collect();
    assert!(seed.len() >= 5);
    let mut runs = 0;
    for case in &seed {
        let ledger = Ledger(case.records.clone(), case.events.clone());
        for path in warrant_core::claim::PathName::ALL {
            let outgoing = outbound::Outgoing {
                conversation: &case.conversation,
                actor: &case.actor,
                path,
                channel: None,
                locale: &case.locale,
                at: &case.at,
                draft: &case.draft,
            };
            let fallback = contract.outbound().path(path).unwrap().fallback(&case.locale).unwrap();
            under_every_answer(&contract, &outgoing, &ledger, &GateAnswers::new(), &mut |gate, answers| {
                runs += 1;
                let message = &gate.message;
                assert_eq!(message.basis(), Basis::Fallback, "{} on {path:?} under {answers:?}", case.name);
                assert_eq!(message.text(), fallback);
                assert!(message.claims().is_empty());
                assert!(gate.questions.is_empty(), "{}: a model was asked {:?}", case.name, gate.questions);
                assert!(message.reasons().iter().any(|r| r.code == ReasonCode::NothingBacked));
            });
        }
    }
    assert_eq!(runs, seed.len() * warrant_core::claim::PathName::ALL.len(), "no question, so one run each");
}

#[test]
fn the_rewrite_of_backed_claims_with_copy_is_composed_in_the_drafts_order_and_asks_no_model() {
    let contract = retail();
    let rows = vec![
        Record {
            table: "order".into(),
            key: "#W2".into(),
            revision: 1,
            value: json!({"status": "return requested", "user_id": "u1"}),
        },
        Record {
            table: "order".into(),
            key: "#W1".into(),
            revision: 1,
            value: json!({"status": "cancelled", "user_id": "u1"}),
        },
    ];
    let ledger = Ledger(rows, Vec::new());
    let claims = json!([
        {"claim": "return_requested", "order": "#W2"},
        {"claim": "refund_issued", "order": "#W1"},
        {"claim": "order_cancelled", "order": "#W1"},
        {"claim": "return_requested", "order": "#W2"}
    ]);
    for (locale, text) in [
        ("en-US", "Your return request for order #W2 has been received. Your order #W1 has been cancelled."),
        ("ko-KR", "#W2 주문의 반품 요청이 접수되었어요. #W1 주문이 취소되었어요."),
    ] {
        let body = json!({"conversation": "c1", "actor": "u1", "path": "digest", "at": "2026-11-20T09:00:00Z", "locale": locale,
            "draft": {"text": "Your return is in, your order is cancelled and your refund of $500 is on its way.", "claims": claims}});
        let valid = outbound::parse_request(&contract, &body.to_string()).unwrap();
        // Whatever a model would answer, nothing is asked: the refund is unbacked and the rest
        // has copy.
        let gate = outbound::clear(&contract, &valid.outgoing(), &ledger, &GateAnswers::new()).unwrap();
        assert!(gate.questions.is_empty(), "{:?}", gate.questions);
        assert_eq!(gate.message.basis(), Basis::Rewritten);
        assert_eq!(gate.message.text(), text);
        assert_eq!(
            gate.message.claims(),
            [json!({"claim": "return_requested", "order": "#W2"}), json!({"claim": "order_cancelled", "order": "#W1"})]
        );
        let codes: Vec<_> = gate.message.reasons().iter().map(|r| r.code).collect();
        assert_eq!(codes, [ReasonCode::ClaimUnbacked, ReasonCode::RewriteComposed]);
    }
}

/// A contract whose `pending` kind has copy in English only, and whose `shipped` kind has none.
const PARTLY_COPIED: &str = r#"
[sources]
kinds = ["user"]

[records]
[[records.table]]
name = "order"
file = "orders.json"
entity = "Order"

[outbound]
locales = ["en-US", "ko-KR"]

[[outbound.channel]]
name = "hook"
kind = "webhook"
url_env = "HOOK_URL"

[[outbound.claim]]
name = "pending"
args.order = { kind = "record", table = "order" }
backed_by = { record = "order", key = "order", field = "status", values = ["pending"] }
copy."en-US" = "Order {order} is {{still}} pending."

[[outbound.claim]]
name = "shipped"
args.order = { kind = "record", table = "order" }
backed_by = { record = "order", key = "order", field = "status", values = ["shipped"] }

[[outbound.path]]
name = "queue"
channel = "hook"
checks = ["claims_coverage"]
fallback."en-US" = "We will be in touch."
fallback."ko-KR" = "곧 연락드릴게요."
"#;

#[test]
fn a_claim_kind_without_copy_for_the_locale_goes_to_the_model_rewrite_checked_again() {
    let contract = Contract::from_toml("partly.toml", PARTLY_COPIED).unwrap();
    let rows = vec![
        Record { table: "order".into(), key: "#W1".into(), revision: 1, value: json!({"status": "pending"}) },
        Record { table: "order".into(), key: "#W2".into(), revision: 1, value: json!({"status": "shipped"}) },
    ];
    let ledger = Ledger(rows, Vec::new());
    let clear = |locale: &str, claims: Value, answers: &GateAnswers| {
        let body = json!({"conversation": "c1", "actor": "u1", "path": "queue", "at": "2026-11-20T09:00:00Z", "locale": locale,
            "draft": {"text": "Order #W1 is pending. A voucher is attached.", "claims": claims}});
        let valid = outbound::parse_request(&contract, &body.to_string()).unwrap();
        outbound::clear(&contract, &valid.outgoing(), &ledger, answers).unwrap()
    };
    let block = |gate: &outbound::Gate| {
        let mut answers = GateAnswers::new();
        for q in gate.unanswered(&answers) {
            answers.insert(q.id, GateAnswer::Verdict { verdict: warrant_core::check::CheckVerdict::Block });
        }
        answers
    };
    let pending = json!([{"claim": "pending", "order": "#W1"}]);
    // English has copy: the coverage check blocked the draft, and the rewrite is composed, with
    // `{{` and `}}` read as braces.
    let first = clear("en-US", pending.clone(), &GateAnswers::new());
    let composed = clear("en-US", pending.clone(), &block(&first));
    assert_eq!(composed.message.text(), "Order #W1 is {still} pending.");
    assert!(composed.questions.iter().all(|q| q.task != outbound::REWRITE));
    // Korean has none: the model is asked, given the backed claim and its row as JSON facts, and
    // its text is checked again.
    for (locale, claims) in [("ko-KR", pending), ("en-US", json!([{"claim": "shipped", "order": "#W2"}]))] {
        let first = clear(locale, claims.clone(), &GateAnswers::new());
        let mut answers = block(&first);
        let asked = clear(locale, claims.clone(), &answers);
        let rewrite = asked.questions.iter().find(|q| q.task == outbound::REWRITE).unwrap();
        let facts: Vec<Value> = rewrite.facts.iter().map(|f| serde_json::from_str(f).unwrap()).collect();
        assert_eq!(facts[0], json!({"claim": claims[0]}));
        assert_eq!(facts[1]["record"]["table"], "order");
        answers.insert(rewrite.id.clone(), GateAnswer::Rewritten { text: "Your order is on its way.".into() });
        let checked = clear(locale, claims.clone(), &answers);
        let again = checked.unanswered(&answers);
        assert_eq!(again.len(), 1, "the rewrite's coverage check");
        assert_eq!(again[0].text.as_deref(), Some("Your order is on its way."));
        answers.insert(again[0].id.clone(), GateAnswer::Verdict { verdict: warrant_core::check::CheckVerdict::Pass });
        let sent = clear(locale, claims, &answers);
        assert_eq!((sent.message.basis(), sent.message.text()), (Basis::Rewritten, "Your order is on its way."));
        assert!(sent.message.reasons().iter().all(|r| r.code != ReasonCode::RewriteComposed));
    }
}

/// The guards test's contract with a `live` path that runs no coverage check.
const LIVE: &str = r#"
[outbound]
locales = ["en-US"]

[[outbound.channel]]
name = "hook"
kind = "webhook"
url_env = "HOOK_URL"

[[outbound.path]]
name = "live"
channel = "hook"
fallback."en-US" = "We will be in touch."
"#;

#[test]
fn an_enforcing_guards_correction_is_the_draft_the_gate_clears() {
    use crate::guards::{CONTRACT, Promoted, promotion};
    let contract = Contract::from_toml("guarded.toml", &format!("{CONTRACT}{LIVE}")).unwrap();
    let body = json!({"conversation": "c", "turn": "t", "actor": "kim", "at": "2026-11-30T03:00:00Z",
        "time_zone": "UTC", "locale": "en-US", "draft": {"text": "Okay. Let me check that file."}});
    let valid = warrant_core::request::parse(&contract, &body.to_string()).unwrap();
    let none = std::collections::BTreeSet::new();
    // Observing: the draft itself is what the gate checks (no claims, no coverage check here).
    let observed = warrant_core::turn::decide(&contract, &valid, &Promoted(None), &none);
    let reply = observed.response.reply.unwrap();
    assert_eq!(
        (reply["text"].as_str(), reply["basis"].as_str()),
        (Some("Okay. Let me check that file."), Some("cleared"))
    );
    // Enforcing: the correction replaces the draft before the gate.
    let subject = contract.guards().announcement().unwrap().subject();
    let enforced = warrant_core::turn::decide(&contract, &valid, &Promoted(Some(promotion(subject))), &none);
    let reply = enforced.response.reply.unwrap();
    assert_eq!(
        (reply["text"].as_str(), reply["path"].as_str()),
        (Some("Okay. I have not opened it yet."), Some("live"))
    );
    // A contract without an outbound section has no path to send on: no reply at all.
    let plain = Contract::from_toml("plain.toml", CONTRACT).unwrap();
    let valid = warrant_core::request::parse(&plain, &body.to_string()).unwrap();
    assert_eq!(warrant_core::turn::decide(&plain, &valid, &Promoted(None), &none).response.reply, None);
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use warrant_core::claim::PathName;
    use warrant_core::outbound::{self, Basis, GateAnswers, Outgoing};
    use warrant_core::request::Draft;

    fn claim() -> impl Strategy<Value = Value> {
        let kinds = prop::sample::select(vec![
            "order_cancelled",
            "refund_issued",
            "payment_link_sent",
            "address_changed",
            "nope",
        ]);
        let arg =
            prop_oneof![Just(json!("#W1")), Just(json!(7)), Just(json!(null)), "\\PC{0,12}".prop_map(Value::String)];
        (kinds, prop::sample::select(vec!["order", "user", "claim", "x"]), arg).prop_map(|(k, name, v)| {
            let mut object = serde_json::Map::new();
            object.insert("claim".into(), json!(k));
            object.insert(name.into(), v);
            Value::Object(object)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// With no model answers and no facts, nothing the generator writes is ever sent as is
        /// or rewritten on any retail path: it is the fallback copy, and no input panics.
        #[test]
        fn without_answers_every_draft_falls_back(text in "\\PC{0,60}", claims in prop::collection::vec(claim(), 0..4), path in prop::sample::select(PathName::ALL.to_vec())) {
            static RETAIL: std::sync::OnceLock<warrant_core::Contract> = std::sync::OnceLock::new();
            let contract = RETAIL.get_or_init(super::retail);
            let draft = Draft { text, claims };
            let outgoing = Outgoing { conversation: "c", actor: "u1", path, channel: None, locale: "en-US", at: "2026-11-20T09:00:00Z", draft: &draft };
            let gate = outbound::clear(contract, &outgoing, &super::Ledger(Vec::new(), Vec::new()), &GateAnswers::new()).unwrap();
            prop_assert_eq!(gate.message.basis(), Basis::Fallback);
            prop_assert!(gate.message.claims().is_empty());
        }
    }
}
