//! "Point, do not quote" (rule 5): the numbered rendering of a message that model tasks see, the
//! pointer a model sends back for a text value, and the resolution that slices the exact words.
//! The rendering, the pointer and the resolution are data and code of `warrant_vocab::pointer`,
//! re-exported here; what this module adds is warrant's one rule for cutting a text into words,
//! [`UAX29`], which the message and the copy are both cut by.

use std::ops::Range;

use icu_segmenter::options::WordBreakInvariantOptions;
use icu_segmenter::{WordSegmenter, WordSegmenterBorrowed};
use serde::Serialize;

pub use warrant_vocab::pointer::{NumberedText, PointerError, Resolved, TextPointer, WordRule, resolve};

/// The UAX #29 word segmenter with ICU4X's compiled data, with dictionaries and LSTM models for
/// scripts written without spaces (Japanese, Chinese, Thai, Khmer, Lao, Myanmar). Constructing it
/// costs nothing.
fn segmenter() -> WordSegmenterBorrowed<'static> {
    WordSegmenter::new_auto(WordBreakInvariantOptions::default())
}

/// The byte ranges of the word-like segments of `text`: letters, numbers and ideographs. Spaces,
/// punctuation and symbols between them are not words, so they cannot be pointed at on their own,
/// but a span keeps whatever lies between its first and last word.
fn word_ranges(text: &str) -> Vec<Range<usize>> {
    let mut last = 0;
    segmenter()
        .segment_str(text)
        .iter_with_word_type()
        .filter_map(move |(end, kind)| {
            let start = std::mem::replace(&mut last, end);
            // The first boundary is always 0 and closes no segment.
            (kind.is_word_like() && start < end).then_some(start..end)
        })
        .collect()
}

/// warrant's rule for cutting a text into words: UAX #29 word boundaries, word-like segments
/// only. Every numbered rendering a model sees, and every copy a model sends, is cut by it.
pub const UAX29: WordRule = WordRule::new("uax29", word_ranges);

/// `text` with its words numbered by [`UAX29`].
pub fn numbered(text: &str) -> NumberedText<'_> {
    NumberedText::new(text, UAX29)
}

/// The numbered rendering of a text as `warrant render` and `POST /v1/render` report it: the
/// words a pointer into that text counts, each with its number, and the rendering a model task
/// is shown. An integrator builds pointers from it instead of cutting words again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rendering<'t> {
    /// The name of the rule the words were cut by ([`UAX29`]'s, `uax29`).
    pub rule: &'static str,
    /// The text exactly as given.
    pub text: &'t str,
    /// The text with `[n]` before word `n`, as model tasks see it.
    pub rendered: String,
    /// Every word in order, numbered from 1.
    pub words: Vec<RenderedWord<'t>>,
}

/// One numbered word of a [`Rendering`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedWord<'t> {
    /// Its number, as a pointer's `ptr` counts it.
    pub n: u32,
    /// The word exactly as the text has it.
    pub word: &'t str,
}

/// The numbered rendering of `text` by [`UAX29`].
pub fn rendering(text: &str) -> Rendering<'_> {
    let numbered = numbered(text);
    let words = (1u32..).map_while(|n| numbered.word(n).map(|word| RenderedWord { n, word })).collect();
    Rendering { rule: UAX29.name(), text, rendered: numbered.render(), words }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pointer(from: u32, to: u32, copy: Option<&str>) -> TextPointer {
        TextPointer { entry: None, from, to, copy: copy.map(str::to_owned) }
    }

    /// The span and value a pointer resolves to in `text`, owned so that tests can compare it.
    fn resolved(text: &str, from: u32, to: u32, copy: Option<&str>) -> Result<(u32, u32, String), PointerError> {
        let numbered = NumberedText::new(text, UAX29);
        resolve(&numbered, &pointer(from, to, copy)).map(|r| (r.from, r.to, r.value.to_owned()))
    }

    /// The error code a resolution fails with.
    fn code(result: Result<(u32, u32, String), PointerError>) -> Result<(u32, u32, String), &'static str> {
        result.map_err(|err| err.code())
    }

    fn ok(from: u32, to: u32, value: &str) -> Result<(u32, u32, String), PointerError> {
        Ok((from, to, value.to_owned()))
    }

    fn words<'t>(numbered: &NumberedText<'t>) -> Vec<&'t str> {
        (1..).map_while(|n| numbered.word(n)).collect()
    }

    /// The word number of index `i`.
    fn number(i: usize) -> u32 {
        u32::try_from(i + 1).unwrap_or(u32::MAX)
    }

    /// Where `part` starts inside `text`, when it is a borrow of `text`.
    fn offset_in(text: &str, part: &str) -> Option<usize> {
        let offset = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        (offset + part.len() <= text.len()).then_some(offset)
    }

    #[test]
    fn rendering_numbers_each_word_and_keeps_everything_else() {
        let numbered = NumberedText::new("Change the name to Kim.", UAX29);
        assert_eq!(numbered.render(), "[1]Change [2]the [3]name [4]to [5]Kim.");
        assert_eq!(numbered.len(), 5);
        assert_eq!(numbered.word(1), Some("Change"));
        assert_eq!(numbered.word(5), Some("Kim"));
        assert_eq!(numbered.word(0), None);
        assert_eq!(numbered.word(6), None);
        assert_eq!(NumberedText::new("  Hi,\n  you!  ", UAX29).render(), "  [1]Hi,\n  [2]you!  ");
    }

    #[test]
    fn the_rendering_reports_each_word_with_the_number_a_pointer_counts() {
        let text = "Ship it to Dana Reyes.";
        let rendering = rendering(text);
        assert_eq!(rendering.rule, "uax29");
        assert_eq!(rendering.rendered, NumberedText::new(text, UAX29).render());
        let words: Vec<(u32, &str)> = rendering.words.iter().map(|w| (w.n, w.word)).collect();
        assert_eq!(words, [(1, "Ship"), (2, "it"), (3, "to"), (4, "Dana"), (5, "Reyes")]);
        assert_eq!(resolved(text, 4, 5, Some("Dana Reyes")), ok(4, 5, "Dana Reyes"));
    }

    #[test]
    fn a_text_without_words_renders_as_itself() {
        for text in ["", "   ", "?!", " 🇺🇸 ❤️ "] {
            let numbered = NumberedText::new(text, UAX29);
            assert!(numbered.is_empty(), "{text:?}");
            assert_eq!(numbered.render(), text);
        }
    }

    #[test]
    fn korean_words_are_numbered_and_sliced() {
        let text = "이름을 김으로 바꿔 주세요.";
        let numbered = NumberedText::new(text, UAX29);
        assert_eq!(words(&numbered), ["이름을", "김으로", "바꿔", "주세요"]);
        assert_eq!(numbered.render(), "[1]이름을 [2]김으로 [3]바꿔 [4]주세요.");
        assert_eq!(resolved(text, 2, 2, None), ok(2, 2, "김으로"));
        assert_eq!(resolved(text, 3, 4, None), ok(3, 4, "바꿔 주세요"));
    }

    #[test]
    fn japanese_without_spaces_has_several_words() {
        let text = "明日の午後に東京へ行きます。";
        let numbered = NumberedText::new(text, UAX29);
        assert!(numbered.len() > 1, "{:?}", words(&numbered));
        assert_eq!(words(&numbered).concat(), "明日の午後に東京へ行きます");
        let tokyo = (1..).take_while(|&n| numbered.word(n).is_some()).find(|&n| numbered.word(n) == Some("東京"));
        assert!(tokyo.is_some(), "東京 is not a word of its own: {:?}", words(&numbered));
        let last = u32::try_from(numbered.len()).unwrap_or_default();
        if let Some(n) = tokyo {
            assert_eq!(resolved(text, n, n, None), ok(n, n, "東京"));
            assert_eq!(resolved(text, 1, last, Some("東京")), ok(n, n, "東京"));
        }
    }

    #[test]
    fn thai_without_spaces_has_several_words() {
        let numbered = NumberedText::new("ทุกสองสัปดาห์", UAX29);
        assert!(numbered.len() > 1, "{:?}", words(&numbered));
        assert_eq!(words(&numbered).concat(), "ทุกสองสัปดาห์");
    }

    #[test]
    fn a_span_slices_exactly_with_the_punctuation_inside_it() {
        let text = "Send it to 12 Main St., Apt 4";
        let numbered = NumberedText::new(text, UAX29);
        assert_eq!(numbered.render(), "[1]Send [2]it [3]to [4]12 [5]Main [6]St., [7]Apt [8]4");
        assert_eq!(resolved(text, 4, 8, None), ok(4, 8, "12 Main St., Apt 4"));
        assert_eq!(numbered.slice(5, 6), Some("Main St"));
        assert_eq!(numbered.slice(6, 5), None);
    }

    /// Seed 004: asked «the name needs changing», a model can take "needs changing" as the name.
    /// The pointer holds words of the message, so structure alone admits it, with or without a
    /// copy; this is exactly why the value must still pass a semantic model task, which can take
    /// it away.
    #[test]
    fn carrier_words_resolve_structurally_and_need_a_semantic_check() {
        let text = "the name needs changing";
        assert_eq!(NumberedText::new(text, UAX29).render(), "[1]the [2]name [3]needs [4]changing");
        assert_eq!(resolved(text, 3, 4, None), ok(3, 4, "needs changing"));
        assert_eq!(resolved(text, 3, 4, Some("needs changing")), ok(3, 4, "needs changing"));
    }

    const KIM_LEE: &str = "Change the name to Kim Lee";

    #[test]
    fn a_copy_narrows_the_pointer_to_the_words_it_holds() {
        assert_eq!(NumberedText::new(KIM_LEE, UAX29).render(), "[1]Change [2]the [3]name [4]to [5]Kim [6]Lee");
        assert_eq!(resolved(KIM_LEE, 5, 6, Some("kim")), ok(5, 5, "Kim"));
        assert_eq!(resolved(KIM_LEE, 5, 6, Some("LEE")), ok(6, 6, "Lee"));
        assert_eq!(resolved(KIM_LEE, 5, 6, Some("Kim Lee")), ok(5, 6, "Kim Lee"));
        assert_eq!(resolved(KIM_LEE, 1, 6, Some("to  kim")), ok(4, 5, "to Kim"));
    }

    #[test]
    fn the_value_is_the_message_text_never_the_copy() {
        // One binding, so that the borrow can be located in it (two uses of a constant need not
        // share an address).
        let text: &str = KIM_LEE;
        let numbered = NumberedText::new(text, UAX29);
        let got = resolve(&numbered, &pointer(5, 6, Some("KIM!")));
        assert_eq!(got.as_ref().map(|r| r.value), Ok("Kim"));
        assert_eq!(got.ok().and_then(|r| offset_in(text, r.value)), text.find("Kim"));
    }

    #[test]
    fn edge_punctuation_of_the_copy_is_ignored() {
        assert_eq!(resolved(KIM_LEE, 5, 6, Some("Kim.")), ok(5, 5, "Kim"));
        assert_eq!(resolved(KIM_LEE, 5, 6, Some("«Kim»")), ok(5, 5, "Kim"));
        // Connector punctuation can sit at the edge of a word itself.
        assert_eq!(resolved("call _kim_ now", 1, 3, Some("kim")), ok(2, 2, "_kim_"));
    }

    #[test]
    fn a_copy_the_pointer_does_not_hold_asks_for_a_repair() {
        assert_eq!(
            resolved(KIM_LEE, 5, 6, Some("Park")),
            Err(PointerError::CopyNotHeld { from: 5, to: 6, copy: "Park".to_owned() })
        );
        // Words match whole and in order; a part of a word is not held.
        assert_eq!(code(resolved(KIM_LEE, 5, 6, Some("Ki"))), Err("copy_not_held"));
        assert_eq!(code(resolved(KIM_LEE, 5, 6, Some("Lee Kim"))), Err("copy_not_held"));
    }

    #[test]
    fn a_copy_never_moves_the_pointer_to_words_elsewhere_in_the_message() {
        assert_eq!(
            resolved(KIM_LEE, 1, 4, Some("Kim")),
            Err(PointerError::CopyNotHeld { from: 1, to: 4, copy: "Kim".to_owned() })
        );
        // A copy longer than the pointer cannot be held by it either.
        assert_eq!(code(resolved(KIM_LEE, 5, 5, Some("Kim Lee"))), Err("copy_not_held"));
    }

    #[test]
    fn a_copy_matching_two_runs_is_ambiguous() {
        let text = "Kim said Kim";
        assert_eq!(
            resolved(text, 1, 3, Some("kim")),
            Err(PointerError::CopyAmbiguous { from: 1, to: 3, copy: "kim".to_owned(), runs: 2 })
        );
        // Narrowing the pointer first removes the ambiguity.
        assert_eq!(resolved(text, 2, 3, Some("kim")), ok(3, 3, "Kim"));
        // Overlapping runs count too.
        assert_eq!(code(resolved("la la la", 1, 3, Some("la la"))), Err("copy_ambiguous"));
    }

    #[test]
    fn a_copy_without_words_is_refused() {
        for copy in ["", "   ", "...", "❤️"] {
            assert_eq!(resolved(KIM_LEE, 5, 6, Some(copy)), Err(PointerError::EmptyCopy { copy: copy.to_owned() }));
        }
    }

    #[test]
    fn a_korean_copy_narrows_to_whole_words() {
        let text = "이름을 김으로 바꿔 주세요.";
        assert_eq!(resolved(text, 1, 4, Some("김으로")), ok(2, 2, "김으로"));
        // A particle belongs to its word, so the bare name is not a run of held words.
        assert_eq!(code(resolved(text, 1, 4, Some("김"))), Err("copy_not_held"));
    }

    #[test]
    fn pointers_outside_the_words_are_refused() {
        for (from, to) in [(0, 1), (0, 0), (1, 7), (7, 7), (7, 3), (u32::MAX, u32::MAX)] {
            assert_eq!(resolved(KIM_LEE, from, to, None), Err(PointerError::OutOfRange { from, to, words: 6 }));
        }
        assert_eq!(resolved(KIM_LEE, 4, 3, None), Err(PointerError::Reversed { from: 4, to: 3 }));
        // The range is checked before the copy is looked at.
        assert_eq!(code(resolved(KIM_LEE, 4, 3, Some("Kim"))), Err("pointer_reversed"));
    }

    #[test]
    fn a_message_without_words_holds_no_pointer() {
        for (text, copy) in [("", None), (" ... ", None), ("", Some("Kim"))] {
            assert_eq!(resolved(text, 1, 1, copy), Err(PointerError::EmptyMessage));
        }
    }

    #[test]
    fn error_codes_are_stable() {
        let cases = [
            (PointerError::EmptyMessage, "pointer_empty_message"),
            (PointerError::OutOfRange { from: 0, to: 1, words: 1 }, "pointer_out_of_range"),
            (PointerError::Reversed { from: 2, to: 1 }, "pointer_reversed"),
            (PointerError::CopyNotHeld { from: 1, to: 1, copy: String::new() }, "copy_not_held"),
            (PointerError::CopyAmbiguous { from: 1, to: 2, copy: String::new(), runs: 2 }, "copy_ambiguous"),
            (PointerError::EmptyCopy { copy: String::new() }, "copy_empty"),
        ];
        for (err, code) in cases {
            assert_eq!(err.code(), code);
        }
    }

    #[test]
    fn error_messages_are_lowercase_and_name_the_pointer() {
        let message = |from, to, copy| resolved(KIM_LEE, from, to, copy).map_err(|e| e.to_string());
        assert_eq!(
            message(1, 4, Some("Kim\u{200B}")),
            Err("copy `Kim\\u{200b}` is not a run of the words pointer `[1, 4]` holds".to_owned())
        );
        assert_eq!(message(0, 2, None), Err("pointer `[0, 2]` is outside the message's words 1 to 6".to_owned()));
    }

    #[test]
    fn the_pointer_parses_from_its_wire_shape() {
        let parse = |json| serde_json::from_str::<TextPointer>(json).map_err(|e| e.to_string());
        assert_eq!(parse(r#"{"ptr":[5,6],"copy":"Kim"}"#), Ok(pointer(5, 6, Some("Kim"))));
        assert_eq!(parse(r#"{"copy":"Kim","ptr":[5,6]}"#), Ok(pointer(5, 6, Some("Kim"))));
        assert_eq!(parse(r#"{"ptr":[1,2]}"#), Ok(pointer(1, 2, None)));
        let write = |p: &TextPointer| serde_json::to_string(p).map_err(|e| e.to_string());
        assert_eq!(write(&pointer(5, 6, Some("Kim"))), Ok(r#"{"ptr":[5,6],"copy":"Kim"}"#.to_owned()));
        assert_eq!(write(&pointer(1, 2, None)), Ok(r#"{"ptr":[1,2]}"#.to_owned()));
    }

    #[test]
    fn malformed_pointers_do_not_parse() {
        for json in [
            r#"{"ptr":[5]}"#,
            r#"{"ptr":[1,2,3]}"#,
            r#"{"ptr":[-1,2]}"#,
            r#"{"ptr":[1.5,2]}"#,
            r#"{"ptr":[1,4294967296]}"#,
            r#"{"ptr":["1","2"]}"#,
            r#"{"ptr":{"from":1,"to":2}}"#,
            r#"{"ptr":[1,2],"extra":1}"#,
            r#"{"ptr":[1,2],"copy":3}"#,
            r#"{"ptr":[1,2],"ptr":[3,4]}"#,
            r#"{"ptr":[1,2],"copy":"a","copy":"b"}"#,
            r#"{"copy":"Kim"}"#,
            r#"[[1,2],"Kim"]"#,
        ] {
            assert!(serde_json::from_str::<TextPointer>(json).is_err(), "{json} parsed");
        }
    }

    /// Texts that mix spaced scripts, scripts without spaces, numbers, punctuation and symbols.
    fn any_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[A-Za-z]{1,8}",
            "[0-9]{1,4}([.,][0-9]{1,3})?",
            Just("이름을".to_owned()),
            Just("김으로".to_owned()),
            Just("明日の午後に東京へ".to_owned()),
            Just("ทุกสองสัปดาห์".to_owned()),
            Just("_kim_".to_owned()),
            Just("Kim's".to_owned()),
            "\\PC{1,6}",
        ];
        let separator = prop_oneof![
            Just(" ".to_owned()),
            Just(", ".to_owned()),
            Just("\n".to_owned()),
            Just(String::new()),
            "[ .,;:!?()\\[\\]\"'-]{0,3}",
        ];
        proptest::collection::vec((piece, separator), 0..10)
            .prop_map(|parts| parts.into_iter().flat_map(|(p, s)| [p, s]).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn a_valid_pointer_slices_the_exact_bytes_of_its_words(
            text in any_text(),
            a in any::<prop::sample::Index>(),
            b in any::<prop::sample::Index>(),
        ) {
            let numbered = NumberedText::new(&text, UAX29);
            prop_assume!(!numbered.is_empty());
            let (i, j) = (a.index(numbered.len()), b.index(numbered.len()));
            let (i, j) = (i.min(j), i.max(j));
            let (from, to) = (number(i), number(j));
            let got = resolve(&numbered, &pointer(from, to, None));
            prop_assert!(got.is_ok(), "{got:?}");
            let got = got.map(|r| (r.from, r.to, r.value)).unwrap_or_default();
            let start = numbered.words().get(i).map(|w| w.start);
            let end = numbered.words().get(j).map(|w| w.end);
            prop_assert_eq!((got.0, got.1), (from, to));
            prop_assert_eq!(offset_in(&text, got.2), start);
            prop_assert_eq!(Some(got.2), start.zip(end).and_then(|(s, e)| text.get(s..e)));
        }

        #[test]
        fn the_rendering_is_the_text_with_a_number_before_each_word(text in any_text()) {
            let numbered = NumberedText::new(&text, UAX29);
            let rendered = numbered.render();
            let mut rest = rendered.as_str();
            let mut last = 0;
            for (n, word) in (1..).zip(numbered.words()) {
                let before = text.get(last..word.start).unwrap_or("\u{FFFD}missing");
                let marked = format!("{before}[{n}]{}", text.get(word.clone()).unwrap_or_default());
                prop_assert!(rest.starts_with(&marked), "{rest:?} does not start with {marked:?}");
                rest = rest.get(marked.len()..).unwrap_or_default();
                last = word.end;
            }
            prop_assert_eq!(Some(rest), text.get(last..));
        }

        #[test]
        fn resolution_never_panics_and_never_leaves_the_pointer(
            text in any_text(),
            from in 0u32..14,
            to in 0u32..14,
            copy in proptest::option::of(any_text()),
        ) {
            let numbered = NumberedText::new(&text, UAX29);
            if let Ok(got) = resolve(&numbered, &pointer(from, to, copy.as_deref())) {
                prop_assert!(from <= got.from && got.from <= got.to && got.to <= to);
                prop_assert_eq!(Some(got.value), numbered.slice(got.from, got.to));
                let start = numbered.range(got.from).map(|w| w.start);
                prop_assert_eq!(offset_in(&text, got.value), start);
                if copy.is_none() {
                    prop_assert_eq!((got.from, got.to), (from, to));
                }
            }
        }

        #[test]
        fn a_verbatim_copy_of_held_words_is_held(
            text in "([A-Za-z0-9]{1,5}[ .,!?'-]{1,2}){1,12}",
            ends in proptest::array::uniform4(any::<prop::sample::Index>()),
        ) {
            let numbered = NumberedText::new(&text, UAX29);
            prop_assume!(!numbered.is_empty());
            let mut ends = ends.map(|x| number(x.index(numbered.len())));
            ends.sort_unstable();
            let [from, copy_from, copy_to, to] = ends;
            let copy = numbered.slice(copy_from, copy_to);
            prop_assert!(copy.is_some());
            match resolve(&numbered, &pointer(from, to, copy)) {
                Ok(got) => prop_assert!(from <= got.from && got.to <= to),
                Err(err) => prop_assert_eq!(err.code(), "copy_ambiguous"),
            }
        }
    }
}
