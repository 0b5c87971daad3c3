//! What the fuzz targets assert, shared with the regression test that replays their findings
//! (`crates/warrant-core/tests/it/fuzz_findings.rs` includes this file).
#![allow(dead_code, reason = "each fuzz target uses one of the checks")]

use warrant_core::Contract;

const KO: &str = include_str!("../examples/score-ko/contract.toml");
const EN: &str = include_str!("../examples/score-en/contract.toml");

/// Loads `text` as a contract; a refusal must be one line, and a loaded contract must read its
/// own clauses back as its own operations.
pub fn contract(text: &str) {
    match Contract::from_toml("fuzz.toml", text) {
        Err(error) => assert!(!error.to_string().contains('\n'), "multi-line error: {error}"),
        Ok(contract) => {
            for clause in contract.score().clauses() {
                for kind_name in contract.kinds().names() {
                    let Some(kind) = contract.kinds().get(kind_name) else { continue };
                    let reading = contract.score().read(kind, clause.text());
                    if clause.from().contains(kind) {
                        assert_eq!(reading.operations.len(), 1, "clause {:?} does not read as itself", clause.text());
                    } else {
                        assert!(reading.operations.is_empty());
                    }
                }
            }
        }
    }
}

/// Reads `text` through both example scores under every kind.
pub fn gate(text: &str) {
    for source in [KO, EN] {
        let Ok(contract) = Contract::from_toml("example.toml", source) else { panic!("example does not load") };
        for kind_name in ["authored", "model_reply", "user"] {
            let Some(kind) = contract.kinds().get(kind_name) else { continue };
            let reading = contract.score().read(kind, text);
            assert!(reading.rejection.is_none() || reading.operations.is_empty());
            if text.trim().is_empty() {
                assert!(reading.rejection.is_some());
            }
        }
    }
}

/// A guard with English and Korean shapes, for the guard target.
const GUARD: &str = r#"
[sources]
kinds = ["model_reply"]

[guards.announcement]
[guards.announcement.correction]
en = "I have not done that yet."
ko = "아직 확인하지 못했어요."

[[guards.announcement.shape]]
language = "en"
order = ["subject", "verb", "object", "imminence"]
subject = ["Let me", "I'll"]
verb = ["check", "open"]
imminence = ["now"]
stop = [".", "!"]
[guards.announcement.shape.object]
read_file = ["that file"]

[[guards.announcement.shape]]
language = "ko"
order = ["subject", "imminence", "object", "verb"]
subject = ["", "제가"]
verb = ["확인해 볼게요"]
imminence = ["지금"]
stop = ["."]
[guards.announcement.shape.object]
read_file = ["그 파일을"]
"#;

/// Reads `text` through the announcement guard: never a panic, every flag a sentence of the
/// NFC text, nothing flagged once the tool is called, and nothing flagged once block-quoted.
pub fn guard(text: &str) {
    let Ok(contract) = Contract::from_toml("guard.toml", GUARD) else { panic!("the guard contract does not load") };
    let Some(guard) = contract.guards().announcement() else { panic!("no guard") };
    let nfc = warrant_core::text::nfc(text);
    for flag in guard.flags(text, std::iter::empty()) {
        assert!(nfc.get(flag.span.clone()).is_some(), "flag span {:?} is not a slice of the text", flag.span);
    }
    assert!(guard.flags(text, ["read_file"]).is_empty(), "flagged although the tool was called");
    let quoted: String = nfc.split(warrant_core::text::is_line_break).map(|line| format!("> {line}\n")).collect();
    assert!(guard.flags(&quoted, std::iter::empty()).is_empty(), "a block-quoted line was flagged: {quoted:?}");
}

const OUTBOUND: &str = r#"
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
name = "order_cancelled"
args.order = { kind = "record", table = "order" }
backed_by = { record = "order", key = "order", field = "status", values = ["cancelled"] }
[[outbound.path]]
name = "scheduled"
channel = "hook"
checks = ["claims_coverage"]
fallback = { "en-US" = "We will be in touch.", "ko-KR" = "곧 연락드릴게요." }
"#;

struct NoLedger;
impl warrant_core::outbound::LedgerFacts for NoLedger {
    fn record(&self, _: &str, _: &str) -> Result<Option<warrant_core::records::Record>, warrant_core::turn::FactError> {
        Ok(None)
    }
    fn events(&self, _: &str) -> Result<Vec<warrant_core::turn::EventRecord>, warrant_core::turn::FactError> {
        Ok(Vec::new())
    }
}

/// Parses `text` as an outbound request and clears it with nothing to back any claim.
pub fn outbound(text: &str) {
    use warrant_core::outbound::{self, Basis, GateAnswers};
    let Ok(contract) = Contract::from_toml("outbound.toml", OUTBOUND) else {
        panic!("the outbound contract does not load")
    };
    match outbound::parse_request(&contract, text) {
        Err(error) => assert!(!error.message.contains('\n'), "multi-line error: {error}"),
        Ok(valid) => {
            let gate = outbound::clear(&contract, &valid.outgoing(), &NoLedger, &GateAnswers::new())
                .unwrap_or_else(|e| panic!("a valid request has no route: {e}"));
            assert_eq!(gate.message.basis(), Basis::Fallback, "{:?}", gate.message);
            assert!(gate.message.claims().is_empty());
        }
    }
}
