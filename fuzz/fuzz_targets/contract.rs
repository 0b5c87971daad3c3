//! Any bytes as a contract: it loads or is refused with a one-line error, and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        warrant_fuzz_checks::contract(text);
    }
});

#[path = "../checks.rs"]
mod warrant_fuzz_checks;
