//! A message rendered with numbered words, and a pointer a model might send back resolved by
//! code to the user's own words. The word rule here cuts at whitespace; warrant-core gives the
//! UAX #29 rule it uses in production.
//!
//! Run: `cargo run -p warrant-vocab --example numbered`

// An example prints; the crate itself does no IO (its clippy.toml).
#![allow(clippy::disallowed_macros)]

use std::ops::Range;

use warrant_vocab::pointer::{self, NumberedText, TextPointer, WordRule};

/// Each run of non-whitespace characters is one word.
fn whitespace_words(text: &str) -> Vec<Range<usize>> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(from)) => {
                words.push(from..at);
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(from) = start {
        words.push(from..text.len());
    }
    words
}

const WHITESPACE: WordRule = WordRule::new("whitespace", whitespace_words);

fn main() {
    let message = "Please change the name on my account to Dana Reyes";
    let numbered = NumberedText::new(message, WHITESPACE);
    println!("{}", numbered.render());

    // The model points at words 9 and 10 and copies them; code takes the span from the message.
    let answer = TextPointer { entry: None, from: 9, to: 10, copy: Some("Dana Reyes".to_owned()) };
    match pointer::resolve(&numbered, &answer) {
        Ok(resolved) => println!("resolved: words {}..={}: {:?}", resolved.from, resolved.to, resolved.value),
        Err(error) => println!("refused: {}", error.code()),
    }

    // A pointer past the end is a structural mistake, refused rather than guessed around.
    let past_end = TextPointer { entry: None, from: 11, to: 12, copy: None };
    match pointer::resolve(&numbered, &past_end) {
        Ok(resolved) => println!("resolved: {:?}", resolved.value),
        Err(error) => println!("refused: {}", error.code()),
    }
}
