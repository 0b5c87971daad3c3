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
