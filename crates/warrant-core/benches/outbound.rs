//! The price of the outbound gate on the retail contract: a draft with two backed claims checked
//! against facts in memory, with its coverage answer supplied, from the request's JSON to the
//! cleared message. The baseline, measured in the same run, is parsing and validating the same
//! request alone, so the figure beside it is what checking the claims adds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::hint::black_box;

use divan::Bencher;
use serde_json::json;
use warrant_core::Contract;
use warrant_core::check::CheckVerdict;
use warrant_core::contract::ContractFiles;
use warrant_core::outbound::{self, Basis, GateAnswer, GateAnswers, LedgerFacts};
use warrant_core::records::Record;
use warrant_core::turn::{EventRecord, FactError};

fn main() {
    divan::main();
}

struct Policies;
impl ContractFiles for Policies {
    fn read(&self, _: &str) -> Result<String, String> {
        Ok(include_str!("../../../examples/retail/policies.cedar").to_owned())
    }
}

struct Memory(Vec<Record>, Vec<EventRecord>);
impl LedgerFacts for Memory {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.0.iter().find(|r| r.table == table && r.key == key).cloned())
    }
    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        Ok(self.1.iter().filter(|e| e.kind == kind).cloned().collect())
    }
}

fn setup() -> (Contract, Memory, String) {
    let contract = Contract::load("retail", include_str!("../../../examples/retail/contract.toml"), &Policies).unwrap();
    let row = Record { table: "order".into(), key: "#W1".into(), revision: 3, value: json!({"status": "cancelled"}) };
    let event = EventRecord {
        id: "evt_1".into(),
        kind: "modify_pending_order_address".into(),
        payload: json!({"actor": "u", "args": {"order_id": "#W2"}}),
        effect: Some("eff_1".into()),
    };
    let request = json!({"conversation": "c", "path": "scheduled", "at": "2026-11-20T09:00:00Z", "locale": "en-US",
        "draft": {"text": "Your order #W1 is cancelled and the address of #W2 is updated.",
            "claims": [{"claim": "order_cancelled", "order": "#W1"}, {"claim": "address_changed", "order": "#W2"}]}})
    .to_string();
    (contract, Memory(vec![row], vec![event]), request)
}

#[divan::bench]
fn gate(bencher: Bencher) {
    let (contract, memory, request) = setup();
    let valid = outbound::parse_request(&contract, &request).unwrap();
    let first = outbound::clear(&contract, &valid.outgoing(), &memory, &GateAnswers::new()).unwrap();
    let answers: GateAnswers =
        first.questions.iter().map(|q| (q.id.clone(), GateAnswer::Verdict { verdict: CheckVerdict::Pass })).collect();
    assert_eq!(
        outbound::clear(&contract, &valid.outgoing(), &memory, &answers).unwrap().message.basis(),
        Basis::Cleared
    );
    bencher.bench(|| {
        let valid = outbound::parse_request(&contract, black_box(&request)).unwrap();
        black_box(outbound::clear(&contract, &valid.outgoing(), &memory, &answers).unwrap().message.basis())
    });
}

#[divan::bench]
fn baseline_parse_only(bencher: Bencher) {
    let (contract, _, request) = setup();
    bencher.bench(|| black_box(outbound::parse_request(&contract, black_box(&request)).unwrap().path()));
}
