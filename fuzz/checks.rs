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

/// The retail example, as its files sit in `examples/retail`.
const RETAIL: &str = include_str!("../examples/retail/contract.toml");
const RETAIL_POLICIES: &str = include_str!("../examples/retail/policies.cedar");
const RETAIL_DATA: [(&str, &str); 3] = [
    ("data/users.json", include_str!("../examples/retail/data/users.json")),
    ("data/orders.json", include_str!("../examples/retail/data/orders.json")),
    ("data/products.json", include_str!("../examples/retail/data/products.json")),
];

/// The retail contract's companion files, in memory.
struct RetailFiles;
impl warrant_core::contract::ContractFiles for RetailFiles {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "policies.cedar" { Ok(RETAIL_POLICIES.to_owned()) } else { Err(format!("no `{path}`")) }
    }
}

/// The retail data as facts in memory: every row of every table at revision 1, no interaction.
pub struct RetailFacts(std::collections::BTreeMap<(String, String), warrant_core::records::Record>);
impl warrant_core::turn::Facts for RetailFacts {
    fn record(
        &self,
        table: &str,
        key: &str,
    ) -> Result<Option<warrant_core::records::Record>, warrant_core::turn::FactError> {
        Ok(self.0.get(&(table.to_owned(), key.to_owned())).cloned())
    }
    fn interaction(&self, _: &str) -> Result<Option<warrant_core::turn::Interaction>, warrant_core::turn::FactError> {
        Ok(None)
    }
}

/// The retail contract and its data, loaded once per process.
pub fn retail() -> &'static (Contract, RetailFacts) {
    use warrant_core::records::{self, Record, TableSource};
    static RETAIL_LOADED: std::sync::OnceLock<(Contract, RetailFacts)> = std::sync::OnceLock::new();
    RETAIL_LOADED.get_or_init(|| {
        let Ok(contract) = Contract::load("retail.toml", RETAIL, &RetailFiles) else { panic!("retail does not load") };
        let mut rows = std::collections::BTreeMap::new();
        let mut loaded: Vec<(String, Vec<(String, serde_json::Value)>)> = Vec::new();
        for table in contract.tables() {
            let table_rows = match &table.source {
                TableSource::File(file) => {
                    let Some((_, text)) = RETAIL_DATA.iter().find(|(name, _)| name == file) else {
                        panic!("no {file}")
                    };
                    let Ok(data) = serde_json::from_str(text) else { panic!("{file} is not JSON") };
                    let Ok(rows) = records::rows_from_file(table, data, contract.currency()) else { panic!("{file}") };
                    rows
                }
                TableSource::Nested { table: parent, path, parent_field } => {
                    let Some((_, parent_rows)) = loaded.iter().find(|(name, _)| name == parent) else { panic!() };
                    let Ok(rows) =
                        records::rows_from_parent(table, parent_rows, path, parent_field, contract.currency())
                    else {
                        panic!("nested rows of {}", table.name)
                    };
                    rows
                }
            };
            for (key, value) in &table_rows {
                let record = Record { table: table.name.clone(), key: key.clone(), revision: 1, value: value.clone() };
                rows.insert((table.name.clone(), key.clone()), record);
            }
            loaded.push((table.name.clone(), table_rows));
        }
        (contract, RetailFacts(rows))
    })
}

/// Parses `text` as a turn request against the retail contract and decides it against the retail
/// data with no interaction stored and no model answer: never a panic; a refusal names its field
/// on one line; the same request decides the same way twice; an act commits only with an
/// effect and is refused, held or asked only with a reason; and no write commits, because every
/// retail write needs a confirmation and there is no interaction to confirm.
pub fn turn(text: &str) {
    use std::collections::BTreeSet;
    use warrant_core::turn::{self, Verdict};
    let (contract, facts) = retail();
    match warrant_core::request::parse(contract, text) {
        Err(error) => {
            assert!(!error.message.contains('\n'), "multi-line error: {error:?}");
            assert!(!error.code.as_str().is_empty());
        }
        Ok(valid) => {
            let decision = turn::decide(contract, &valid, facts, &BTreeSet::new());
            assert_eq!(decision, turn::decide(contract, &valid, facts, &BTreeSet::new()), "not deterministic");
            for act in &decision.response.acts {
                match act.verdict {
                    Verdict::Commit => assert!(act.effect.is_some(), "a commit without an effect: {act:?}"),
                    _ => {
                        assert!(act.effect.is_none(), "an effect without a commit: {act:?}");
                        assert!(!act.reasons.is_empty(), "a verdict without a reason: {act:?}");
                    }
                }
            }
            assert!(decision.writes.is_empty(), "a write committed without a confirmation: {:?}", decision.writes);
            assert!(decision.answered.is_empty(), "an answer to an interaction that does not exist");
            for record in &decision.facts.records {
                let known = facts.0.get(&(record.table.clone(), record.key.clone()));
                assert_eq!(known.map_or(0, |r| r.revision), record.revision, "a fact read at another revision");
            }
            assert!(serde_json::to_string(&decision.response).is_ok());
        }
    }
}
