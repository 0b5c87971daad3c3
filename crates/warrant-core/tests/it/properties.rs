//! The invariants of rule 1, over generated replies: registered clauses yield their operations
//! in order; an unregistered sentence anywhere yields none; the result depends on nothing but
//! (contract, kind, text).

use proptest::prelude::*;
use warrant_core::{Contract, ReasonCode};

use crate::load;

/// A registered sentence: a scored clause (with its op) or a passive one (`None`).
fn registered(contract: &Contract) -> Vec<(String, Option<String>)> {
    let mut all: Vec<(String, Option<String>)> =
        contract.score().clauses().iter().map(|c| (c.text().to_owned(), Some(c.op().to_owned()))).collect();
    all.extend(contract.score().passive().map(|p| (p.to_owned(), None)));
    all
}

/// White space and line breaks between sentences.
fn separator() -> impl Strategy<Value = String> {
    prop_oneof![Just(" "), Just("  "), Just("\n"), Just("\r\n"), Just("\n\n"), Just(" \t\n "), Just("\u{3000}")]
        .prop_map(str::to_owned)
}

/// A sentence no clause can equal: it always holds a digit, which no clause of the examples
/// contains, so whatever sentence it ends up in under segmentation is unregistered.
fn unregistered() -> impl Strategy<Value = String> {
    ("[a-zA-Z가-힣 ,?!.\"'“”:>]{0,30}", 0u32..10, "[a-zA-Z가-힣 ,?!.]{0,10}").prop_map(|(a, d, b)| format!("{a}{d}{b}"))
}

fn reply_strategy(contract: &Contract) -> impl Strategy<Value = (Vec<usize>, Vec<String>)> + use<> {
    let n = registered(contract).len();
    (1usize..8)
        .prop_flat_map(move |len| (proptest::collection::vec(0..n, len), proptest::collection::vec(separator(), len)))
}

fn join(pieces: &[String], seps: &[String]) -> String {
    let mut text = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            text.push_str(&seps[i % seps.len()]);
        }
        text.push_str(piece);
    }
    text
}

fn check_both(f: impl Fn(&Contract)) {
    f(&load("examples/score-ko/contract.toml"));
    f(&load("examples/score-en/contract.toml"));
}

#[test]
fn registered_clauses_yield_their_operations_in_order() {
    check_both(|contract| {
        let sentences = registered(contract);
        let kind = contract.kinds().get("model_reply").unwrap();
        proptest!(ProptestConfig::with_cases(300), |((picks, seps) in reply_strategy(contract))| {
            let pieces: Vec<String> = picks.iter().map(|&i| sentences[i].0.clone()).collect();
            let expected: Vec<String> = picks.iter().filter_map(|&i| sentences[i].1.clone()).collect();
            let text = join(&pieces, &seps);
            let reading = contract.score().read(kind, &text);
            let got: Vec<String> = reading.operations.iter().map(|o| o.clause.op().to_owned()).collect();
            prop_assert_eq!(got, expected);
            prop_assert!(reading.rejection.is_none());
        });
    });
}

#[test]
fn an_unregistered_sentence_anywhere_yields_no_operation() {
    check_both(|contract| {
        let sentences = registered(contract);
        let kind = contract.kinds().get("model_reply").unwrap();
        proptest!(ProptestConfig::with_cases(300), |((picks, seps) in reply_strategy(contract), extra in unregistered(), at in any::<prop::sample::Index>())| {
            let mut pieces: Vec<String> = picks.iter().map(|&i| sentences[i].0.clone()).collect();
            let at = at.index(pieces.len() + 1);
            pieces.insert(at, extra);
            let text = join(&pieces, &seps);
            let reading = contract.score().read(kind, &text);
            prop_assert!(reading.operations.is_empty(), "{:?} performed {:?}", text, reading.operations);
            prop_assert_eq!(reading.rejection.map(|r| r.reason), Some(ReasonCode::UnregisteredSentence));
        });
    });
}

#[test]
fn the_result_depends_only_on_contract_kind_and_text() {
    let first = load("examples/score-ko/contract.toml");
    let second = load("examples/score-ko/contract.toml");
    let kinds = ["authored", "model_reply", "user"];
    proptest!(ProptestConfig::with_cases(300), |(texts in proptest::collection::vec(".{0,60}", 1..6), k in 0usize..3)| {
        let kind = first.kinds().get(kinds[k]).unwrap();
        // Reading other texts in between, in another order, on another loaded copy of the same
        // contract, changes nothing.
        let before: Vec<String> = texts.iter().map(|t| format!("{:?}", first.score().read(kind, t))).collect();
        for t in texts.iter().rev() {
            let _ = second.score().read(kind, t);
        }
        let after: Vec<String> = texts.iter().map(|t| format!("{:?}", second.score().read(kind, t))).collect();
        prop_assert_eq!(before, after);
    });
}

#[test]
fn no_text_panics_the_gate() {
    let contract = load("examples/score-en/contract.toml");
    let kind = contract.kinds().get("model_reply").unwrap();
    proptest!(ProptestConfig::with_cases(1000), |(text in "\\PC*")| {
        let reading = contract.score().read(kind, &text);
        prop_assert!(reading.rejection.is_some() || !text.trim().is_empty());
    });
}
