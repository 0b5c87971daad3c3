//! Any text of any kind through the gates of the two example scores, and through a contract
//! made from the input itself: never a panic, and never an operation beside a rejection.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        warrant_fuzz_checks::gate(text);
    }
});

#[path = "../checks.rs"]
mod warrant_fuzz_checks;
