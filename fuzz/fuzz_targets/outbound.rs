//! Any text as an outbound request: never a panic; a refusal names its field on one line; a
//! request that parses, with no facts and no model answers, goes out only as fallback copy.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        warrant_fuzz_checks::outbound(text);
    }
});

#[path = "../checks.rs"]
mod warrant_fuzz_checks;
