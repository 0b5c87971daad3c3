//! Replays the fuzz targets' kept inputs (seeds and whatever the fuzzer found) on stable Rust,
//! with the same assertions the targets make, so a regression shows up in every test run.

use crate::root;

#[path = "../../../../fuzz/checks.rs"]
mod checks;

fn replay(target: &str, check: fn(&str)) -> usize {
    let dir = root().join("fuzz/corpus").join(target);
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes) {
            check(text);
        }
        count += 1;
    }
    count
}

#[test]
fn kept_contract_inputs_load_or_are_refused_on_one_line() {
    assert!(replay("contract", checks::contract) >= 20);
}

#[test]
fn kept_gate_inputs_never_perform_beside_a_rejection() {
    assert!(replay("gate", checks::gate) >= 3);
}

#[test]
fn kept_guard_inputs_never_panic_and_never_flag_framed_or_called_announcements() {
    assert!(replay("guard", checks::guard) >= 5);
}

#[test]
fn kept_outbound_inputs_are_refused_on_one_line_or_fall_back() {
    assert!(replay("outbound", checks::outbound) >= 5);
}

#[test]
fn kept_turn_inputs_are_refused_on_one_line_or_decided_without_a_write() {
    assert!(replay("turn", checks::turn) >= 10);
}

#[test]
fn the_kept_turn_inputs_reach_the_decision_not_only_the_parser() {
    let (contract, facts) = checks::retail();
    let mut verdicts = Vec::new();
    for name in ["cancel.json", "another-users-order.json", "address-pointers.json", "draft-with-claims.json"] {
        let text = std::fs::read_to_string(root().join("fuzz/corpus/turn").join(name)).unwrap();
        let valid = warrant_core::request::parse(contract, &text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let decision = warrant_core::turn::decide(contract, &valid, facts, &Default::default());
        verdicts.push(format!("{:?}", decision.response.acts[0].verdict));
    }
    assert_eq!(verdicts, ["Hold", "Refuse", "Hold", "Commit"]);
}
