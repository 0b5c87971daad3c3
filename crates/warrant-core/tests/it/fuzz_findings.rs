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
