//! Any text through the announcement guard: never a panic, never a flag outside the text,
//! never a flag once the announced tool was called or the text is block-quoted.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        warrant_fuzz_checks::guard(text);
    }
});

#[path = "../checks.rs"]
mod warrant_fuzz_checks;
