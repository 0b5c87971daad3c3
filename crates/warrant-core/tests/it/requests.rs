//! Requests as they arrive on the wire, against the retail contract: read strictly (one
//! object, no repeated key at any depth, no U+0000, instants as RFC 3339 allows them), every
//! fault `invalid_input` naming its field, and the contract's `[limits]` refusing a request
//! over one of them whole, before anything of it is decided.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use warrant_core::Contract;
use warrant_core::contract::ContractFiles;
use warrant_core::limits::Limits;
use warrant_core::outbound;
use warrant_core::reason::ReasonCode;
use warrant_core::records::Record;
use warrant_core::request::{self, RequestError};
use warrant_core::turn::{self, FactError, Facts, Interaction};

use crate::root;

struct Folder;
impl ContractFiles for Folder {
    fn read(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(root().join("examples/retail").join(path)).map_err(|e| e.to_string())
    }
}

fn retail_text() -> String {
    std::fs::read_to_string(root().join("examples/retail/contract.toml")).unwrap()
}

fn retail() -> Contract {
    Contract::load("examples/retail/contract.toml", &retail_text(), &Folder).unwrap()
}

/// The retail contract with a `[limits]` section appended.
fn retail_with(limits: &str) -> Contract {
    Contract::load("retail-limits.toml", &format!("{}\n[limits]\n{limits}\n", retail_text()), &Folder).unwrap()
}

/// A good turn request as JSON text, with `fields` (raw JSON members) added at its end.
fn turn_text(fields: &str) -> String {
    let base = r#"{"conversation":"c1","turn":"t1","actor":"yusuf_rossi_9620","at":"2026-11-29T15:00:00Z",
        "time_zone":"America/New_York","locale":"en-US""#;
    if fields.is_empty() { format!("{base}}}") } else { format!("{base},{fields}}}") }
}

fn refused(contract: &Contract, json: &str) -> RequestError {
    match request::parse(contract, json) {
        Ok(_) => panic!("accepted: {json}"),
        Err(error) => error,
    }
}

fn invalid_at(json: &str) -> (String, String) {
    let error = refused(&retail(), json);
    assert_eq!(error.code, ReasonCode::InvalidInput, "{json}: {error}");
    (error.field, error.message)
}

#[test]
fn u0000_in_a_text_an_id_or_an_arg_key_is_invalid_input_naming_the_field() {
    let contract = retail();
    assert!(request::parse(&contract, &turn_text("")).is_ok());
    let (field, message) = invalid_at(&turn_text(r#""entries":[{"kind":"user","text":"cancel\u0000it"}]"#));
    assert_eq!(field, "entries[0].text");
    assert!(message.contains("U+0000"), "{message}");
    let id = turn_text("").replace(r#""turn":"t1""#, r#""turn":"t\u00001""#);
    assert_eq!(invalid_at(&id).0, "turn");
    let key = turn_text(r#""acts":[{"op":"get_order_details","args":{"order\u0000_id":"W1"}}]"#);
    assert_eq!(invalid_at(&key).0, "acts[0].args.order\\u{0000}_id");
    let claim = turn_text(r#""draft":{"text":"Done.","claims":[{"claim":"order_cancelled","order":"W\u00001"}]}"#);
    assert_eq!(invalid_at(&claim).0, "draft.claims[0].order");
}

#[test]
fn a_repeated_key_at_any_depth_is_refused_naming_the_field_not_read_last_wins() {
    let cases = [
        (r#""acts":[{"op":"get_order_details","args":{"order_id":"W1","order_id":"W2"}}]"#, "acts[0].args.order_id"),
        (
            r#""acts":[{"op":"modify_pending_order_address","args":{"address1":{"ptr":[1,2],"ptr":[3,4]}}}]"#,
            "acts[0].args.address1.ptr",
        ),
        (
            r#""acts":[{"op":"x","args":{"deposit":{"amount":"1.00","currency":"USD","amount":"900.00"}}}]"#,
            "acts[0].args.deposit.amount",
        ),
        (
            r#""draft":{"text":"Done.","claims":[{"claim":"order_cancelled","order":"W1","order":"W2"}]}"#,
            "draft.claims[0].order",
        ),
        (r#""answers":[{"interaction":"int_1","option":"decline","option":"confirm"}]"#, "answers[0].option"),
        (r#""acts":[{"op":"get_order_details","op":"cancel_pending_order"}]"#, "acts[0].op"),
    ];
    for (fields, field) in cases {
        let (at, message) = invalid_at(&turn_text(fields));
        assert_eq!(at, field, "{fields}");
        assert!(message.contains("appears twice"), "{fields}: {message}");
    }
    // The top level too: a second `actor` does not replace the first.
    let twice = turn_text(r#""actor":"someone_else""#);
    assert_eq!(invalid_at(&twice).0, "actor");
}

#[test]
fn a_json_array_is_not_a_request() {
    let request: Value = serde_json::from_str(&turn_text("")).unwrap();
    let fields: Vec<Value> = request.as_object().unwrap().values().cloned().collect();
    let (field, message) = invalid_at(&Value::Array(fields).to_string());
    assert_eq!(field, "");
    assert!(message.contains("not an array"), "{message}");
    // Nor is an array a part of one that is an object.
    let (field, message) = invalid_at(&turn_text(r#""entries":[["user","hello"]]"#));
    assert_eq!(field, "entries[0]");
    assert!(message.contains("expected an object"), "{message}");
    assert_eq!(invalid_at(&turn_text(r#""draft":["Done.",[]]"#)).0, "draft");
}

#[test]
fn a_missing_field_is_named() {
    let missing = turn_text("").replace(r#""conversation":"c1","#, "");
    let (field, message) = invalid_at(&missing);
    assert_eq!(field, "conversation");
    assert!(message.contains("missing field `conversation`"), "{message}");
    assert_eq!(invalid_at(&turn_text(r#""acts":[{"args":{}}]"#)).0, "acts[0].op");
    assert_eq!(invalid_at(&turn_text(r#""answers":[{"interaction":"int_1"}]"#)).0, "answers[0].option");
}

#[test]
fn an_offset_of_25_hours_is_not_an_rfc_3339_instant() {
    let at = turn_text("").replace("2026-11-29T15:00:00Z", "2026-11-29T15:00:00+25:00");
    assert_eq!(invalid_at(&at).0, "at");
    let contract = retail();
    let outbound_at = json!({"conversation": "c1", "path": "scheduled", "at": "2026-11-20T09:00:00+25:00",
        "locale": "en-US", "draft": {"text": "Hello.", "claims": []}});
    assert_eq!(outbound::parse_request(&contract, &outbound_at.to_string()).unwrap_err().field, "at");
    let due = json!({"conversation": "c1", "path": "scheduled", "at": "2026-11-20T09:00:00Z",
        "due": "2026-11-21T09:00:00-25:00", "locale": "en-US", "draft": {"text": "Hello.", "claims": []}});
    assert_eq!(outbound::parse_request(&contract, &due.to_string()).unwrap_err().field, "due");
}

#[test]
fn a_far_due_that_the_date_library_can_represent_is_accepted() {
    let contract = retail();
    for due in ["9999-12-30T21:59:59Z", "9999-12-30T22:00:00.999999999Z", "0001-01-01T00:00:00Z"] {
        let request = json!({"conversation": "c1", "path": "scheduled", "at": "2026-11-20T09:00:00Z",
            "due": due, "locale": "en-US", "draft": {"text": "Hello.", "claims": []}});
        let valid = outbound::parse_request(&contract, &request.to_string()).unwrap_or_else(|e| panic!("{due}: {e}"));
        assert_eq!(valid.request().due.as_deref(), Some(due));
    }
}

#[test]
fn the_outbound_request_is_read_as_strictly_as_a_turn() {
    let contract = retail();
    let base = r#"{"conversation":"c1","path":"scheduled","at":"2026-11-20T09:00:00Z","locale":"en-US","#;
    let cases = [
        (
            r#""draft":{"text":"Hi.","claims":[{"claim":"order_cancelled","order":"W1","order":"W2"}]}}"#,
            "draft.claims[0].order",
        ),
        (r#""draft":{"text":"Hi\u0000."}}"#, "draft.text"),
        (r#""draft":["Hi.",[]]}"#, "draft"),
        (r#""draft":{"text":"Hi."},"path":"live"}"#, "path"),
    ];
    for (rest, field) in cases {
        let error = outbound::parse_request(&contract, &format!("{base}{rest}")).unwrap_err();
        assert_eq!((error.code, error.field.as_str()), (ReasonCode::InvalidInput, field), "{rest}: {error}");
    }
    let array = outbound::parse_request(&contract, r#"["c1","scheduled"]"#).unwrap_err();
    assert_eq!((array.code, array.field.as_str()), (ReasonCode::InvalidInput, ""));
    let missing = outbound::parse_request(&contract, &format!("{base}\"channel\":\"support_webhook\"}}")).unwrap_err();
    assert_eq!(missing.field, "draft");
}

/// A fact source that counts what the decision read: a refused request reads nothing.
struct Untouched(std::cell::Cell<usize>);
impl Facts for Untouched {
    fn record(&self, _: &str, _: &str) -> Result<Option<Record>, FactError> {
        self.0.set(self.0.get() + 1);
        Ok(None)
    }
    fn interaction(&self, _: &str) -> Result<Option<Interaction>, FactError> {
        self.0.set(self.0.get() + 1);
        Ok(None)
    }
}

#[test]
fn fifteen_thousand_acts_are_refused_whole_naming_the_limit() {
    let contract = retail();
    let act = json!({"op": "get_order_details", "args": {"order_id": "#W6247578"}});
    let mut request: Value = serde_json::from_str(&turn_text("")).unwrap();
    request["acts"] = Value::Array(vec![act.clone(); 15_000]);
    let error = refused(&contract, &request.to_string());
    assert_eq!((error.code, error.field.as_str()), (ReasonCode::LimitExceeded, "acts"));
    assert!(error.message.contains("`limits.acts_per_turn`"), "{}", error.message);
    assert!(error.message.contains("15000"), "{}", error.message);
    // At the limit, the turn is decided.
    let limit = Limits::default().acts_per_turn as usize;
    request["acts"] = Value::Array(vec![act; limit]);
    let valid = request::parse(&contract, &request.to_string()).unwrap();
    let facts = Untouched(std::cell::Cell::new(0));
    let decision = turn::decide(&contract, &valid, &facts, &BTreeSet::new());
    assert_eq!(decision.response.acts.len(), limit);
}

#[test]
fn a_one_megabyte_draft_is_refused_whole_naming_the_limit() {
    let contract = retail();
    let text = "Let me check your order now. ".repeat(36_000);
    assert!(text.len() > 1_000_000);
    let mut request: Value = serde_json::from_str(&turn_text("")).unwrap();
    request["draft"] = json!({"text": text});
    let error = refused(&contract, &request.to_string());
    assert_eq!((error.code, error.field.as_str()), (ReasonCode::LimitExceeded, "draft.text"));
    assert!(error.message.contains("`limits.characters_per_draft`"), "{}", error.message);
    // The outbound gate holds its drafts to the same limits.
    let outgoing = json!({"conversation": "c1", "path": "scheduled", "at": "2026-11-20T09:00:00Z",
        "locale": "en-US", "draft": {"text": request["draft"]["text"], "claims": []}});
    let error = outbound::parse_request(&contract, &outgoing.to_string()).unwrap_err();
    assert_eq!((error.code, error.field.as_str()), (ReasonCode::LimitExceeded, "draft.text"));
    let claims = vec![json!({"claim": "order_cancelled", "order": "#W1"}); 33];
    let outgoing = json!({"conversation": "c1", "path": "scheduled", "at": "2026-11-20T09:00:00Z",
        "locale": "en-US", "draft": {"text": "Cancelled.", "claims": claims}});
    let error = outbound::parse_request(&contract, &outgoing.to_string()).unwrap_err();
    assert_eq!((error.code, error.field.as_str()), (ReasonCode::LimitExceeded, "draft.claims"));
    assert!(error.message.contains("`limits.claims_per_draft`"), "{}", error.message);
}

#[test]
fn every_limit_names_itself_and_the_field_over_it() {
    let contract = retail_with(
        "entries_per_turn = 1\nanswers_per_turn = 1\ncalls_per_turn = 1\nclaims_per_draft = 1\ncharacters_per_entry = 5",
    );
    let cases = [
        (r#""entries":[{"kind":"user","text":"a"},{"kind":"user","text":"b"}]"#, "entries", "entries_per_turn"),
        (
            r#""answers":[{"interaction":"a","option":"confirm"},{"interaction":"b","option":"confirm"}]"#,
            "answers",
            "answers_per_turn",
        ),
        (r#""calls":[{"tool":"a"},{"tool":"b"}]"#, "calls", "calls_per_turn"),
        (r#""draft":{"text":"x","claims":[{"claim":"a"},{"claim":"b"}]}"#, "draft.claims", "claims_per_draft"),
        (r#""entries":[{"kind":"user","text":"ＡＢＣＤＥＦ"}]"#, "entries[0].text", "characters_per_entry"),
    ];
    for (fields, field, limit) in cases {
        let error = refused(&contract, &turn_text(fields));
        assert_eq!((error.code, error.field.as_str()), (ReasonCode::LimitExceeded, field), "{fields}");
        assert!(error.message.contains(&format!("`limits.{limit}`")), "{}", error.message);
    }
    // Characters are counted, not bytes: five wide characters are within five.
    assert!(request::parse(&contract, &turn_text(r#""entries":[{"kind":"user","text":"ＡＢＣＤＥ"}]"#)).is_ok());
}

#[test]
fn the_default_limits_hold_without_a_limits_section_and_a_contract_can_raise_or_lower_them() {
    assert_eq!(retail().limits(), &Limits::default());
    let act = json!({"op": "get_order_details", "args": {"order_id": "#W6247578"}});
    let with_acts = |n: usize| {
        let mut request: Value = serde_json::from_str(&turn_text("")).unwrap();
        request["acts"] = Value::Array(vec![act.clone(); n]);
        request.to_string()
    };
    let default = Limits::default().acts_per_turn as usize;
    assert!(request::parse(&retail(), &with_acts(default)).is_ok());
    assert_eq!(refused(&retail(), &with_acts(default + 1)).code, ReasonCode::LimitExceeded);
    let raised = retail_with("acts_per_turn = 100");
    assert_eq!(raised.limits().acts_per_turn, 100);
    assert_eq!(raised.limits().entries_per_turn, Limits::default().entries_per_turn, "the rest keep their defaults");
    assert!(request::parse(&raised, &with_acts(100)).is_ok());
    assert_eq!(refused(&raised, &with_acts(101)).code, ReasonCode::LimitExceeded);
    let lowered = retail_with("acts_per_turn = 2");
    assert!(request::parse(&lowered, &with_acts(2)).is_ok());
    let error = refused(&lowered, &with_acts(3));
    assert!(error.message.contains("`limits.acts_per_turn` of 2"), "{}", error.message);
}

#[test]
fn the_guard_reports_at_most_the_findings_a_reply_may_have() {
    let contract = retail_with("findings_per_reply = 3\ncharacters_per_draft = 1000000");
    let text = "Let me check your order now. ".repeat(2_000);
    let mut request: Value = serde_json::from_str(&turn_text("")).unwrap();
    request["draft"] = json!({"text": text});
    let valid = request::parse(&contract, &request.to_string()).unwrap();
    let facts = Untouched(std::cell::Cell::new(0));
    let decision = turn::decide(&contract, &valid, &facts, &BTreeSet::new());
    assert_eq!(decision.response.findings.len(), 3);
    let sentences: Vec<u32> = decision.response.findings.iter().map(|f| f.sentence).collect();
    assert_eq!(sentences, [0, 1, 2], "the first findings are kept");
}
