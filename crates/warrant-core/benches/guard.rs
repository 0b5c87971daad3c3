//! The price of the announcement guard on a 3-sentence reply, English and Korean: framing, UAX
//! #29 sentences and a hash lookup per sentence over the retail example's generated set. The
//! baseline, measured in the same run, is the naive keyword scan the guard replaced (wrong by
//! design: it flags habits, offers and quotations alike), to price correctness.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a benchmark stops at the first surprise"
)]

use std::hint::black_box;

use divan::{AllocProfiler, Bencher};
use warrant_core::Contract;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

/// The retail contract's `[guards]` section, without the operations that need policy files.
fn contract() -> Contract {
    let retail = include_str!("../../../examples/retail/contract.toml");
    let guards = &retail[retail.find("[guards.announcement]").unwrap()..];
    Contract::from_toml("bench.toml", &format!("[sources]\nkinds = [\"model_reply\"]\n\n{guards}")).unwrap()
}

fn reply(lang: &str) -> &'static str {
    if lang == "ko" {
        "알겠습니다. 지금 주문을 확인해 볼게요. 잠시만 기다려 주세요."
    } else {
        "Thanks for waiting. Let me check your order. It should not take long."
    }
}

#[divan::bench(args = ["ko", "en"])]
fn guard(bencher: Bencher, lang: &str) {
    let contract = contract();
    let guard = contract.guards().announcement().unwrap();
    let text = reply(lang);
    assert_eq!(guard.flags(text, std::iter::empty()).len(), 1);
    bencher.bench(|| black_box(guard.flags(black_box(text), std::iter::empty()).len()));
}

/// What the first designs did: any reply that holds an announce-ish word is flagged.
#[divan::bench(args = ["ko", "en"])]
fn naive_keyword_baseline(bencher: Bencher, lang: &str) {
    let words = ["check", "look up", "pull up", "확인", "조회"];
    let text = reply(lang);
    bencher.bench(|| black_box(words.iter().any(|w| black_box(text).contains(w))));
}
