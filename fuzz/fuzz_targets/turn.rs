//! Any text as a turn request, parsed and decided against the retail contract and its data:
//! never a panic; a refusal names its field on one line; the decision is deterministic, every
//! verdict has its reason, and nothing is written without a confirmation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        warrant_fuzz_checks::turn(text);
    }
});

#[path = "../checks.rs"]
mod warrant_fuzz_checks;
