//! Text as the gate sees it: NFC and nothing else, sentences by UAX #29 with line breaks as
//! boundaries, and the characters a clause may never hide.
//!
//! Every other module that cuts text into sentences goes through [`Sentences`], so the contract
//! loader, the clause gate and the guards cannot disagree about where a sentence ends.

use std::borrow::Cow;
use std::ops::Range;

use icu_segmenter::iterators::SentenceBreakIterator;
use icu_segmenter::options::SentenceBreakInvariantOptions;
use icu_segmenter::scaffold::Utf8;
use icu_segmenter::{SentenceSegmenter, SentenceSegmenterBorrowed};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// Normalizes `text` to Unicode NFC, borrowing it when it already is.
///
/// This is the only normalization warrant applies: no case, width, white space or punctuation
/// folding, because each of those would let two different sentences count as one clause.
pub fn nfc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    match is_nfc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        IsNormalized::No | IsNormalized::Maybe => {
            let normalized: String = text.nfc().collect();
            if normalized == text { Cow::Borrowed(text) } else { Cow::Owned(normalized) }
        }
    }
}

/// Whether `c` ends a line. A line break is always a sentence boundary, whatever the segmenter
/// would make of the text around it.
pub const fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The sentences of a text: UAX #29 sentence boundaries inside each line, each piece trimmed of
/// surrounding white space, empty pieces dropped. Items are byte ranges into the text given.
///
/// The text should already be NFC (see [`nfc`]); the iterator does not allocate.
#[derive(Debug)]
pub struct Sentences<'t> {
    text: &'t str,
    /// Start of the line not yet handed to the segmenter; `None` once the last line is taken.
    next_line: Option<usize>,
    /// The line being segmented.
    line: Option<LineCursor<'t>>,
}

#[derive(Debug)]
struct LineCursor<'t> {
    offset: usize,
    line: &'t str,
    breaks: SentenceBreakIterator<'static, 't, Utf8>,
    last: usize,
}

/// The UAX #29 sentence segmenter with ICU4X's compiled data; constructing it costs nothing.
fn segmenter() -> SentenceSegmenterBorrowed<'static> {
    SentenceSegmenter::new(SentenceBreakInvariantOptions::default())
}

impl<'t> Sentences<'t> {
    /// Starts cutting `text` into sentences.
    pub fn new(text: &'t str) -> Self {
        Sentences { text, next_line: Some(0), line: None }
    }

    /// Takes the next line of the text, or `None` after the last one.
    fn advance_line(&mut self) -> Option<LineCursor<'t>> {
        let offset = self.next_line?;
        let rest = self.text.get(offset..).unwrap_or_default();
        let line = match rest.char_indices().find(|&(_, c)| is_line_break(c)) {
            Some((at, c)) => {
                let mut consumed = at + c.len_utf8();
                if c == '\r' && rest.as_bytes().get(consumed) == Some(&b'\n') {
                    consumed += 1;
                }
                self.next_line = Some(offset + consumed);
                rest.get(..at).unwrap_or_default()
            }
            None => {
                self.next_line = None;
                rest
            }
        };
        let mut breaks = segmenter().segment_str(line);
        // The first boundary is always 0.
        let _ = breaks.next();
        Some(LineCursor { offset, line, breaks, last: 0 })
    }
}

impl Iterator for Sentences<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        loop {
            if let Some(cursor) = self.line.as_mut() {
                for end in cursor.breaks.by_ref() {
                    let start = std::mem::replace(&mut cursor.last, end);
                    let piece = cursor.line.get(start..end).unwrap_or_default();
                    let trimmed = piece.trim_start();
                    let lead = piece.len() - trimmed.len();
                    let trimmed = trimmed.trim_end();
                    if !trimmed.is_empty() {
                        let from = cursor.offset + start + lead;
                        return Some(from..from + trimmed.len());
                    }
                }
            }
            self.line = Some(self.advance_line()?);
        }
    }
}

pub use warrant_vocab::text::{is_invisible, visible};

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<&str> {
        Sentences::new(text).map(|r| &text[r]).collect()
    }

    #[test]
    fn sentences_are_trimmed_and_line_breaks_are_boundaries() {
        assert_eq!(cut("Hello there. How are you?"), ["Hello there.", "How are you?"]);
        assert_eq!(cut("  one\ntwo  \r\n\r\nthree"), ["one", "two", "three"]);
        assert_eq!(cut("Note:\nLet me check that file."), ["Note:", "Let me check that file."]);
    }

    #[test]
    fn empty_and_blank_texts_have_no_sentence() {
        assert!(cut("").is_empty());
        assert!(cut("   ").is_empty());
        assert!(cut("\n\n\r\n").is_empty());
        assert!(cut(" \u{3000} ").is_empty());
    }

    #[test]
    fn korean_sentences_split() {
        assert_eq!(cut("같이 결정해보자. 근데 아직은 아니야."), ["같이 결정해보자.", "근데 아직은 아니야."]);
    }

    #[test]
    fn a_text_ending_in_a_line_break_has_no_trailing_sentence() {
        assert_eq!(cut("one.\n"), ["one."]);
        assert_eq!(cut("\none."), ["one."]);
    }

    #[test]
    fn nfc_composes_decomposed_hangul() {
        let nfd: String = "같이".nfd().collect();
        assert_ne!(nfd, "같이");
        assert_eq!(nfc(&nfd), "같이");
        assert!(matches!(nfc("같이"), Cow::Borrowed(_)));
    }

    #[test]
    fn invisible_characters_are_named() {
        for c in ['\u{200B}', '\u{200D}', '\u{202E}', '\u{2066}', '\u{FEFF}', '\u{0007}', '\u{E0041}'] {
            assert!(is_invisible(c), "{:?}", c);
        }
        for c in ['a', '가', ' ', '.', '\u{3000}', 'é'] {
            assert!(!is_invisible(c), "{:?}", c);
        }
    }
}
