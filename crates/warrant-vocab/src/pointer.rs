//! "Point, do not quote" (rule 5): the numbered rendering of a message that model tasks see, the
//! pointer a model sends back for a text value, and the resolution that slices the exact words.
//!
//! A value taken from the user's words is never the model's text. The model points at word
//! numbers; code slices the original message. The model may also copy the words, because a small
//! model copies better than it counts, but the copy can only narrow the pointer to a run of the
//! words it already holds. It never moves the pointer, never becomes the value, and is never
//! looked for anywhere else in the message. That narrowing is the one place in warrant where
//! words are compared, and it stays private: no public function here takes two natural-language
//! strings and returns a decision (rule 4).

use std::fmt::{self, Write as _};
use std::ops::Range;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

use crate::text::visible;

/// The rule a text is cut into words by: the byte ranges of its word-like segments (letters,
/// numbers, ideographs), in order, never overlapping, each on character boundaries. Spaces,
/// punctuation and symbols between them are not words, so they cannot be pointed at on their own,
/// but a span keeps whatever lies between its first and last word.
///
/// The rule travels with the [`NumberedText`] it numbered, so the message and the model's copy
/// are always cut by the same rule. warrant-core supplies warrant's one rule
/// (`warrant_core::pointer::UAX29`, UAX #29 word boundaries with ICU4X's data); this crate cuts
/// nothing itself. Two rules are told apart by their names.
#[derive(Clone, Copy)]
pub struct WordRule {
    name: &'static str,
    cut: fn(&str) -> Vec<Range<usize>>,
}

impl WordRule {
    /// The rule called `name` that `cut` applies.
    pub const fn new(name: &'static str, cut: fn(&str) -> Vec<Range<usize>>) -> WordRule {
        WordRule { name, cut }
    }

    /// The rule's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The byte ranges of the words of `text`, by this rule.
    pub fn words(&self, text: &str) -> Vec<Range<usize>> {
        (self.cut)(text)
    }
}

impl fmt::Debug for WordRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WordRule").field(&self.name).finish()
    }
}

impl PartialEq for WordRule {
    fn eq(&self, other: &WordRule) -> bool {
        self.name == other.name
    }
}

impl Eq for WordRule {}

/// A message with its words numbered from 1, as model tasks see it.
///
/// The text is kept exactly as given: slicing returns the original bytes, so the caller decides
/// what the message is (warrant hands over the NFC form from `warrant_core::text::nfc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedText<'t> {
    text: &'t str,
    /// The byte range of word `n` at index `n - 1`, in order and never overlapping.
    words: Vec<Range<usize>>,
    /// The rule the words were cut by; a copy is cut by it too.
    rule: WordRule,
}

impl<'t> NumberedText<'t> {
    /// Numbers the words of `text` as `rule` cuts them, once; every later look-up is by index.
    pub fn new(text: &'t str, rule: WordRule) -> Self {
        NumberedText { text, words: rule.words(text), rule }
    }

    /// The byte range of each word, word `n` at index `n - 1`.
    pub fn words(&self) -> &[Range<usize>] {
        &self.words
    }

    /// The rule the words were cut by.
    pub fn rule(&self) -> WordRule {
        self.rule
    }

    /// The text as given.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// How many words the text has; they are numbered `1..=len()`.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the text has no word at all, so nothing in it can be pointed at.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Word `n` (from 1), or `None` when there is no such word.
    pub fn word(&self, n: u32) -> Option<&'t str> {
        self.text.get(self.range(n)?.clone())
    }

    /// The exact original text from the start of word `from` to the end of word `to` (both from
    /// 1, inclusive), spacing and punctuation between them included; `None` when either word does
    /// not exist or `from` comes after `to`.
    pub fn slice(&self, from: u32, to: u32) -> Option<&'t str> {
        let first = self.range(from)?;
        let last = self.range(to)?;
        if first.start > last.start {
            return None;
        }
        self.text.get(first.start..last.end)
    }

    /// The text with `[n]` written before word `n` and everything else kept as it is:
    /// `[1]Change [2]the [3]name [4]to [5]Kim.`
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + 5 * self.words.len());
        let mut last = 0;
        for (n, word) in (1u64..).zip(&self.words) {
            out.push_str(self.text.get(last..word.start).unwrap_or_default());
            // Writing into a String cannot fail.
            let _ = write!(out, "[{n}]");
            out.push_str(self.text.get(word.clone()).unwrap_or_default());
            last = word.end;
        }
        out.push_str(self.text.get(last..).unwrap_or_default());
        out
    }

    /// The byte range of word `n` (from 1).
    pub fn range(&self, n: u32) -> Option<&Range<usize>> {
        let index = usize::try_from(n.checked_sub(1)?).ok()?;
        self.words.get(index)
    }

    /// The byte ranges of words `from..=to` (from 1).
    fn ranges(&self, from: u32, to: u32) -> Option<&[Range<usize>]> {
        let first = usize::try_from(from.checked_sub(1)?).ok()?;
        let last = usize::try_from(to.checked_sub(1)?).ok()?;
        self.words.get(first..=last)
    }
}

/// A text argument as the model sends it: `{"entry":i,"ptr":[from,to],"copy":"…"}`, where
/// `from` and `to` are word numbers in the numbered rendering (from 1, inclusive) of the entry
/// the pointer names, and `entry` and `copy` are optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPointer {
    /// The index, in the turn's `entries`, of the entry the words are in; `None` (the field left
    /// out) means the latest user entry. Which entries a pointer may name is the caller's rule:
    /// this crate only carries the index.
    pub entry: Option<u32>,
    /// The first word of the value.
    pub from: u32,
    /// The last word of the value.
    pub to: u32,
    /// The words as the model copied them; they may only narrow the pointer. An absent copy and
    /// `"copy": null` are the same.
    pub copy: Option<String>,
}

impl Serialize for TextPointer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = 1 + usize::from(self.copy.is_some()) + usize::from(self.entry.is_some());
        let mut map = serializer.serialize_map(Some(fields))?;
        if let Some(entry) = self.entry {
            map.serialize_entry("entry", &entry)?;
        }
        map.serialize_entry("ptr", &[self.from, self.to])?;
        if let Some(copy) = &self.copy {
            map.serialize_entry("copy", copy)?;
        }
        map.end()
    }
}

/// Written by hand because a derived struct would also accept the fields as an array
/// (`[[1,2],"Kim"]`); the model must send exactly the object.
impl<'de> Deserialize<'de> for TextPointer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PointerVisitor)
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum PointerField {
    Entry,
    Ptr,
    Copy,
}

struct PointerVisitor;

impl<'de> Visitor<'de> for PointerVisitor {
    type Value = TextPointer;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"an object {"ptr":[from,to]} with an optional "entry" index and "copy" string"#)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextPointer, A::Error> {
        // A fixed-size array takes exactly two unsigned 32-bit integers, so `[5]`, `[1,2,3]` and
        // `[-1,2]` fail to parse instead of being read as something else.
        let mut ptr: Option<[u32; 2]> = None;
        let mut copy: Option<String> = None;
        let mut copy_seen = false;
        let mut entry: Option<u32> = None;
        while let Some(field) = map.next_key::<PointerField>()? {
            match field {
                PointerField::Entry if entry.is_some() => return Err(de::Error::duplicate_field("entry")),
                // An index, not `null`: a pointer that names no entry leaves the field out.
                PointerField::Entry => entry = Some(map.next_value()?),
                PointerField::Ptr if ptr.is_some() => {
                    return Err(de::Error::duplicate_field("ptr"));
                }
                PointerField::Ptr => ptr = Some(map.next_value()?),
                PointerField::Copy if copy_seen => return Err(de::Error::duplicate_field("copy")),
                PointerField::Copy => {
                    copy_seen = true;
                    copy = map.next_value()?;
                }
            }
        }
        let [from, to] = ptr.ok_or_else(|| de::Error::missing_field("ptr"))?;
        Ok(TextPointer { entry, from, to, copy })
    }
}

/// A pointer resolved against its message: the span of words it settled on and their exact text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved<'t> {
    /// The first word of the value (from 1).
    pub from: u32,
    /// The last word of the value (from 1, inclusive).
    pub to: u32,
    /// The original text of the span, borrowed from the message; never the model's copy.
    pub value: &'t str,
}

/// Why a pointer does not resolve. Each is a structural mistake the model is asked to repair;
/// none is ever guessed around.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PointerError {
    /// The message has no word, so no pointer into it can hold a value.
    #[error("the message has no words to point at")]
    EmptyMessage,
    /// A word number of the pointer is 0 or past the last word.
    #[error("pointer `[{from}, {to}]` is outside the message's words 1 to {words}")]
    OutOfRange {
        /// The first word the model sent.
        from: u32,
        /// The last word the model sent.
        to: u32,
        /// How many words the message has.
        words: u32,
    },
    /// The pointer starts after it ends.
    #[error("pointer `[{from}, {to}]` starts after it ends")]
    Reversed {
        /// The first word the model sent.
        from: u32,
        /// The last word the model sent.
        to: u32,
    },
    /// The copy is not a run of the words the pointer holds. The copy is not looked for anywhere
    /// else: the model is asked to repair its pointer or its copy.
    #[error("copy `{}` is not a run of the words pointer `[{from}, {to}]` holds", visible(.copy))]
    CopyNotHeld {
        /// The first word the model sent.
        from: u32,
        /// The last word the model sent.
        to: u32,
        /// The copy the model sent.
        copy: String,
    },
    /// The copy is more than one run of the words the pointer holds, so it cannot say which.
    #[error("copy `{}` matches {runs} runs of the words pointer `[{from}, {to}]` holds", visible(.copy))]
    CopyAmbiguous {
        /// The first word the model sent.
        from: u32,
        /// The last word the model sent.
        to: u32,
        /// The copy the model sent.
        copy: String,
        /// How many runs it matches.
        runs: u32,
    },
    /// The copy has no word (it is empty, or only spaces, punctuation or symbols).
    #[error("copy `{}` has no words", visible(.copy))]
    EmptyCopy {
        /// The copy the model sent.
        copy: String,
    },
}

impl PointerError {
    /// The stable `snake_case` code of the error.
    pub fn code(&self) -> &'static str {
        match self {
            PointerError::EmptyMessage => "pointer_empty_message",
            PointerError::OutOfRange { .. } => "pointer_out_of_range",
            PointerError::Reversed { .. } => "pointer_reversed",
            PointerError::CopyNotHeld { .. } => "copy_not_held",
            PointerError::CopyAmbiguous { .. } => "copy_ambiguous",
            PointerError::EmptyCopy { .. } => "copy_empty",
        }
    }
}

/// Resolves `pointer` against `text`: checks that it lies inside the numbered words, narrows it
/// by its copy where it has one, and slices the exact original words.
///
/// A word number outside `1..=len` is [`PointerError::OutOfRange`] even when the pointer is also
/// reversed, since the model then has the message wrong, not just the order.
///
/// The result is structural only. A pointer that holds words of the message resolves whatever
/// those words mean: «the name needs changing» pointed at "needs changing" resolves. Whether the
/// words are the value the user gave is a model task's question, and it can only take away.
pub fn resolve<'t>(text: &NumberedText<'t>, pointer: &TextPointer) -> Result<Resolved<'t>, PointerError> {
    let TextPointer { from, to, ref copy, .. } = *pointer;
    if text.is_empty() {
        return Err(PointerError::EmptyMessage);
    }
    // A message of more than u32::MAX words cannot be pointed at past that word anyway.
    let words = u32::try_from(text.len()).unwrap_or(u32::MAX);
    let out_of_range = PointerError::OutOfRange { from, to, words };
    if from == 0 || to == 0 || from > words || to > words {
        return Err(out_of_range);
    }
    if from > to {
        return Err(PointerError::Reversed { from, to });
    }
    let (first, last) = match copy {
        None => (from, to),
        Some(copy) => narrow(text, from, to, copy)?,
    };
    // Both ends were checked above and narrowing stays inside them, so this always slices; if it
    // ever did not, the pointer fails closed.
    let value = text.slice(first, last).ok_or(out_of_range)?;
    Ok(Resolved { from: first, to: last, value })
}

/// The one run of words in `from..=to` that equals the copy's words, compared by [`fold`]. Only
/// the words the pointer holds are looked at, so the result always lies inside the pointer.
fn narrow(text: &NumberedText<'_>, from: u32, to: u32, copy: &str) -> Result<(u32, u32), PointerError> {
    let wanted: SmallVec<[String; 4]> =
        text.rule.words(copy).into_iter().filter_map(|range| copy.get(range)).map(fold).collect();
    let Some(span) = u32::try_from(wanted.len()).ok().filter(|&n| n > 0) else {
        return Err(PointerError::EmptyCopy { copy: copy.to_owned() });
    };
    // Word ranges come from the rule and fall on character boundaries; mapping each
    // to a key, rather than filtering, keeps the index of every word anyway.
    let held: Vec<String> = text
        .ranges(from, to)
        .unwrap_or_default()
        .iter()
        .map(|range| fold(text.text.get(range.clone()).unwrap_or_default()))
        .collect();
    // `windows` needs a size above zero, which the empty copy's early return guarantees.
    let runs: SmallVec<[u32; 2]> = held
        .windows(wanted.len())
        .zip(from..)
        .filter(|(window, _)| *window == wanted.as_slice())
        .map(|(_, start)| start)
        .collect();
    match runs.as_slice() {
        [start] => Ok((*start, start.saturating_add(span - 1))),
        [] => Err(PointerError::CopyNotHeld { from, to, copy: copy.to_owned() }),
        more => Err(PointerError::CopyAmbiguous {
            from,
            to,
            copy: copy.to_owned(),
            runs: u32::try_from(more.len()).unwrap_or(u32::MAX),
        }),
    }
}

/// A word as the copy comparison sees it: without the punctuation at its edges and in Unicode
/// lowercase. This loose form serves only to narrow a pointer the model already gave; it never
/// decides what a word means or whether a value was stated.
fn fold(word: &str) -> String {
    word.trim_matches(is_punctuation).to_lowercase()
}

/// Whether `c` has the Unicode general category Punctuation (Pc, Pd, Ps, Pe, Pi, Pf or Po).
fn is_punctuation(c: char) -> bool {
    let c = u32::from(c);
    PUNCTUATION
        .binary_search_by(|&(start, end)| {
            if end < c {
                std::cmp::Ordering::Less
            } else if start > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The code point ranges of general category P in the Unicode Character Database 16.0.0, sorted
/// and disjoint. A table, because `char` only knows ASCII punctuation.
#[rustfmt::skip]
const PUNCTUATION: &[(u32, u32)] = &[
    (0x0021, 0x0023), (0x0025, 0x002A), (0x002C, 0x002F), (0x003A, 0x003B),
    (0x003F, 0x0040), (0x005B, 0x005D), (0x005F, 0x005F), (0x007B, 0x007B),
    (0x007D, 0x007D), (0x00A1, 0x00A1), (0x00A7, 0x00A7), (0x00AB, 0x00AB),
    (0x00B6, 0x00B7), (0x00BB, 0x00BB), (0x00BF, 0x00BF), (0x037E, 0x037E),
    (0x0387, 0x0387), (0x055A, 0x055F), (0x0589, 0x058A), (0x05BE, 0x05BE),
    (0x05C0, 0x05C0), (0x05C3, 0x05C3), (0x05C6, 0x05C6), (0x05F3, 0x05F4),
    (0x0609, 0x060A), (0x060C, 0x060D), (0x061B, 0x061B), (0x061D, 0x061F),
    (0x066A, 0x066D), (0x06D4, 0x06D4), (0x0700, 0x070D), (0x07F7, 0x07F9),
    (0x0830, 0x083E), (0x085E, 0x085E), (0x0964, 0x0965), (0x0970, 0x0970),
    (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0AF0, 0x0AF0), (0x0C77, 0x0C77),
    (0x0C84, 0x0C84), (0x0DF4, 0x0DF4), (0x0E4F, 0x0E4F), (0x0E5A, 0x0E5B),
    (0x0F04, 0x0F12), (0x0F14, 0x0F14), (0x0F3A, 0x0F3D), (0x0F85, 0x0F85),
    (0x0FD0, 0x0FD4), (0x0FD9, 0x0FDA), (0x104A, 0x104F), (0x10FB, 0x10FB),
    (0x1360, 0x1368), (0x1400, 0x1400), (0x166E, 0x166E), (0x169B, 0x169C),
    (0x16EB, 0x16ED), (0x1735, 0x1736), (0x17D4, 0x17D6), (0x17D8, 0x17DA),
    (0x1800, 0x180A), (0x1944, 0x1945), (0x1A1E, 0x1A1F), (0x1AA0, 0x1AA6),
    (0x1AA8, 0x1AAD), (0x1B4E, 0x1B4F), (0x1B5A, 0x1B60), (0x1B7D, 0x1B7F),
    (0x1BFC, 0x1BFF), (0x1C3B, 0x1C3F), (0x1C7E, 0x1C7F), (0x1CC0, 0x1CC7),
    (0x1CD3, 0x1CD3), (0x2010, 0x2027), (0x2030, 0x2043), (0x2045, 0x2051),
    (0x2053, 0x205E), (0x207D, 0x207E), (0x208D, 0x208E), (0x2308, 0x230B),
    (0x2329, 0x232A), (0x2768, 0x2775), (0x27C5, 0x27C6), (0x27E6, 0x27EF),
    (0x2983, 0x2998), (0x29D8, 0x29DB), (0x29FC, 0x29FD), (0x2CF9, 0x2CFC),
    (0x2CFE, 0x2CFF), (0x2D70, 0x2D70), (0x2E00, 0x2E2E), (0x2E30, 0x2E4F),
    (0x2E52, 0x2E5D), (0x3001, 0x3003), (0x3008, 0x3011), (0x3014, 0x301F),
    (0x3030, 0x3030), (0x303D, 0x303D), (0x30A0, 0x30A0), (0x30FB, 0x30FB),
    (0xA4FE, 0xA4FF), (0xA60D, 0xA60F), (0xA673, 0xA673), (0xA67E, 0xA67E),
    (0xA6F2, 0xA6F7), (0xA874, 0xA877), (0xA8CE, 0xA8CF), (0xA8F8, 0xA8FA),
    (0xA8FC, 0xA8FC), (0xA92E, 0xA92F), (0xA95F, 0xA95F), (0xA9C1, 0xA9CD),
    (0xA9DE, 0xA9DF), (0xAA5C, 0xAA5F), (0xAADE, 0xAADF), (0xAAF0, 0xAAF1),
    (0xABEB, 0xABEB), (0xFD3E, 0xFD3F), (0xFE10, 0xFE19), (0xFE30, 0xFE52),
    (0xFE54, 0xFE61), (0xFE63, 0xFE63), (0xFE68, 0xFE68), (0xFE6A, 0xFE6B),
    (0xFF01, 0xFF03), (0xFF05, 0xFF0A), (0xFF0C, 0xFF0F), (0xFF1A, 0xFF1B),
    (0xFF1F, 0xFF20), (0xFF3B, 0xFF3D), (0xFF3F, 0xFF3F), (0xFF5B, 0xFF5B),
    (0xFF5D, 0xFF5D), (0xFF5F, 0xFF65), (0x10100, 0x10102), (0x1039F, 0x1039F),
    (0x103D0, 0x103D0), (0x1056F, 0x1056F), (0x10857, 0x10857), (0x1091F, 0x1091F),
    (0x1093F, 0x1093F), (0x10A50, 0x10A58), (0x10A7F, 0x10A7F), (0x10AF0, 0x10AF6),
    (0x10B39, 0x10B3F), (0x10B99, 0x10B9C), (0x10D6E, 0x10D6E), (0x10EAD, 0x10EAD),
    (0x10F55, 0x10F59), (0x10F86, 0x10F89), (0x11047, 0x1104D), (0x110BB, 0x110BC),
    (0x110BE, 0x110C1), (0x11140, 0x11143), (0x11174, 0x11175), (0x111C5, 0x111C8),
    (0x111CD, 0x111CD), (0x111DB, 0x111DB), (0x111DD, 0x111DF), (0x11238, 0x1123D),
    (0x112A9, 0x112A9), (0x113D4, 0x113D5), (0x113D7, 0x113D8), (0x1144B, 0x1144F),
    (0x1145A, 0x1145B), (0x1145D, 0x1145D), (0x114C6, 0x114C6), (0x115C1, 0x115D7),
    (0x11641, 0x11643), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1173C, 0x1173E),
    (0x1183B, 0x1183B), (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46),
    (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2), (0x11B00, 0x11B09), (0x11BE1, 0x11BE1),
    (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11F43, 0x11F4F),
    (0x11FFF, 0x11FFF), (0x12470, 0x12474), (0x12FF1, 0x12FF2), (0x16A6E, 0x16A6F),
    (0x16AF5, 0x16AF5), (0x16B37, 0x16B3B), (0x16B44, 0x16B44), (0x16D6D, 0x16D6F),
    (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1BC9F, 0x1BC9F), (0x1DA87, 0x1DA8B),
    (0x1E5FF, 0x1E5FF), (0x1E95E, 0x1E95F),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Words as runs of ASCII letters and digits: enough to test what does not depend on the rule.
    fn ascii(text: &str) -> Vec<Range<usize>> {
        let mut words = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
            match (c.is_ascii_alphanumeric(), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    words.push(s..i);
                    start = None;
                }
                _ => {}
            }
        }
        words
    }

    const ASCII: WordRule = WordRule::new("ascii", ascii);

    #[test]
    fn the_rendering_and_the_copy_follow_the_rule_given() {
        let numbered = NumberedText::new("Change the name to Kim Lee.", ASCII);
        assert_eq!(numbered.render(), "[1]Change [2]the [3]name [4]to [5]Kim [6]Lee.");
        assert_eq!(numbered.rule(), ASCII);
        let pointer = TextPointer { entry: None, from: 5, to: 6, copy: Some("kim!".to_owned()) };
        assert_eq!(resolve(&numbered, &pointer), Ok(Resolved { from: 5, to: 5, value: "Kim" }));
    }

    #[test]
    fn a_pointer_names_its_entry_only_when_it_has_one() {
        let latest: TextPointer = serde_json::from_str(r#"{"ptr":[1,2]}"#).unwrap();
        assert_eq!(latest, TextPointer { entry: None, from: 1, to: 2, copy: None });
        assert_eq!(serde_json::to_string(&latest).unwrap(), r#"{"ptr":[1,2]}"#);
        let earlier: TextPointer = serde_json::from_str(r#"{"ptr":[3,3],"entry":0,"copy":"Kim"}"#).unwrap();
        assert_eq!(earlier, TextPointer { entry: Some(0), from: 3, to: 3, copy: Some("Kim".to_owned()) });
        assert_eq!(serde_json::to_string(&earlier).unwrap(), r#"{"entry":0,"ptr":[3,3],"copy":"Kim"}"#);
        for bad in [
            r#"{"ptr":[1,1],"entry":-1}"#,
            r#"{"ptr":[1,1],"entry":null}"#,
            r#"{"ptr":[1,1],"entry":"0"}"#,
            r#"{"ptr":[1,1],"entry":0,"entry":1}"#,
            r#"{"ptr":[1,1],"turn":0}"#,
        ] {
            assert!(serde_json::from_str::<TextPointer>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rules_are_told_apart_by_name() {
        assert_eq!(format!("{ASCII:?}"), r#"WordRule("ascii")"#);
        assert_ne!(ASCII, WordRule::new("other", ascii));
    }

    #[test]
    fn punctuation_is_the_unicode_general_category() {
        for c in ['.', ',', '_', '-', '!', '«', '»', '「', '。', '・', '\u{2019}', '\u{11F43}'] {
            assert!(is_punctuation(c), "{c:?}");
        }
        for c in ['a', '1', '$', '+', '~', '^', ' ', '김', '\u{0E2F}', '\u{1F600}'] {
            assert!(!is_punctuation(c), "{c:?}");
        }
        // Sorted and disjoint, or the binary search would miss.
        assert!(PUNCTUATION.iter().all(|&(start, end)| start <= end));
        assert!(PUNCTUATION.iter().zip(PUNCTUATION.iter().skip(1)).all(|(a, b)| a.1 < b.0));
    }
}
