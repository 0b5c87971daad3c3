//! The price of the clause gate: replies of 1, 3 and 20 sentences, Korean and English, read
//! through the real gate (NFC, UAX #29, whole-reply rule) and, in the same run, through a naive
//! baseline that splits on `". "` and looks the pieces up. Time per iteration is per reply;
//! the item counter is sentences; the allocation profiler counts allocations per reply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_types,
    reason = "a benchmark stops at the first surprise; its baseline is the naive version"
)]

use std::collections::HashMap;
use std::hint::black_box;

use divan::{AllocProfiler, Bencher, counter::ItemsCount};
use warrant_core::Contract;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

const KO: &str = include_str!("../../../examples/score-ko/contract.toml");
const EN: &str = include_str!("../../../examples/score-en/contract.toml");

const KO_SENTENCES: [&str; 4] = ["고마워.", "같이 결정해보자.", "좋아.", "마지막 방향은 네가 정해도 돼."];
const EN_SENTENCES: [&str; 4] =
    ["Thank you.", "I'll pass this to a colleague who can help.", "I understand.", "We can close this ticket now."];

fn reply(sentences: &[&str], n: usize) -> String {
    (0..n).map(|i| sentences[i % sentences.len()]).collect::<Vec<_>>().join(" ")
}

fn fixture(lang: &str, n: usize) -> (Contract, String) {
    let (source, sentences) = if lang == "ko" { (KO, &KO_SENTENCES) } else { (EN, &EN_SENTENCES) };
    let contract = Contract::from_toml(lang, source).expect("example contract loads");
    (contract, reply(sentences, n))
}

#[divan::bench(args = ["ko", "en"], consts = [1, 3, 20])]
fn gate<const N: usize>(bencher: Bencher, lang: &str) {
    let (contract, text) = fixture(lang, N);
    let kind = contract.kinds().get("model_reply").expect("declared kind");
    let score = contract.score();
    assert_eq!(score.read(kind, &text).operations.len(), N / 2);
    bencher.counter(ItemsCount::new(N)).bench(|| black_box(score.read(kind, black_box(&text)).operations.len()));
}

/// The naive reader of seed 000's first binding, made whole-reply: split on `". "`, look each
/// piece up. Wrong (no NFC, no UAX #29, no line breaks), and here only to price correctness.
#[divan::bench(args = ["ko", "en"], consts = [1, 3, 20])]
fn naive_baseline<const N: usize>(bencher: Bencher, lang: &str) {
    let (contract, text) = fixture(lang, N);
    let mut table: HashMap<String, Option<String>> = HashMap::new();
    for clause in contract.score().clauses() {
        table.insert(clause.text().trim_end_matches('.').to_owned(), Some(clause.op().to_owned()));
    }
    for passive in contract.score().passive() {
        table.insert(passive.trim_end_matches('.').to_owned(), None);
    }
    bencher.counter(ItemsCount::new(N)).bench(|| {
        let mut ops: Vec<&str> = Vec::new();
        for piece in black_box(&text).split(". ") {
            match table.get(piece.trim_end_matches('.')) {
                Some(Some(op)) => ops.push(op),
                Some(None) => {}
                None => return 0,
            }
        }
        black_box(ops.len())
    });
}
