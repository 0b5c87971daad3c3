//! The announcement guard (rule 2, docs/design.md §8): a reply sentence that announces a tool action
//! ("Let me check that file.") when no matching call happened in the turn.
//!
//! The guard matches only the positive, anchored shape of the bad sentence. The contract
//! declares, per language, a subject, a verb of announcing, each tool's object, an optional word
//! of imminence and the stop; the loader generates the finite set of whole sentences those parts
//! make, and a reply sentence is an announcement only when it is a member of that set, exactly
//! (NFC, nothing folded). A sentence with any other freight (a condition, a habit, an offer,
//! reported speech) is simply not a member; there is no exclusion list anywhere.
//!
//! Framing is decided by structure before membership: a line introduced by a line that ends in
//! a colon, a block-quoted line and text inside quotation marks are framed, never bare
//! announcements, so the sentence splitter cannot amputate a frame (seed 002).
//!
//! The guard observes by default: [`AnnouncementGuard::observe`] reads borrowed text and returns
//! findings, and has nothing it could write to. The only code that builds a replacement reply is
//! [`Enforcing::enforce`], and an [`Enforcing`] can be made only from a [`Promotion`] for this
//! exact guard version, which only the ladder makes.

use std::collections::BTreeMap;
use std::ops::Range;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use toml::Spanned;

use crate::error::{ContractError, ContractErrorKind, Locator};
use crate::ladder::{Promotion, PromotionRecord, Refusal, Subject};
use crate::reason::ReasonCode;
use crate::request::body::Call;
use crate::source;
use crate::text::{self, Sentences};

/// The name under which the announcement guard climbs the ladder.
pub const ANNOUNCEMENT: &str = "guard:announcement";

/// How many sentences a guard's shapes may generate; more is a contract error, not a slow load.
const MAX_SENTENCES: usize = 200_000;

/// The `[guards]` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGuards {
    pub(crate) announcement: Option<RawAnnouncement>,
}

/// `[guards.announcement]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAnnouncement {
    /// `observe` (the default) or `enforce`.
    mode: Option<Spanned<String>>,
    /// The honest correction, per language.
    correction: Spanned<BTreeMap<String, Spanned<String>>>,
    #[serde(default)]
    shape: Vec<RawShape>,
}

/// One `[[guards.announcement.shape]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShape {
    language: Spanned<String>,
    /// The slots in sentence order: a permutation of subject, verb, object, imminence.
    order: Spanned<Vec<Spanned<String>>>,
    /// Subjects; `""` means the subject may be left out.
    subject: Spanned<Vec<Spanned<String>>>,
    verb: Spanned<Vec<Spanned<String>>>,
    /// Words of imminence; each sentence may also have none.
    #[serde(default)]
    imminence: Vec<Spanned<String>>,
    stop: Spanned<Vec<Spanned<String>>>,
    /// What joins the slots; a single space unless given.
    separator: Option<Spanned<String>>,
    /// Each tool's objects, by tool name.
    object: Spanned<BTreeMap<String, Vec<Spanned<String>>>>,
}

/// What the guard may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Record findings; change nothing.
    Observe,
    /// Replace the reply with the honest correction, once promoted for this exact version.
    Enforce,
}

/// The guards a contract declares, compiled.
#[derive(Debug, Clone, Default)]
pub struct Guards {
    announcement: Option<AnnouncementGuard>,
}

impl Guards {
    /// The announcement guard, if declared.
    pub fn announcement(&self) -> Option<&AnnouncementGuard> {
        self.announcement.as_ref()
    }
}

#[derive(Debug, Clone)]
struct Shape {
    language: u32,
    tools: SmallVec<[u32; 2]>,
}

/// The announcement guard: the closed set of announcement sentences, each with its language
/// and the tools whose call would make it true, and the correction copy.
#[derive(Debug, Clone)]
pub struct AnnouncementGuard {
    mode: Mode,
    version: String,
    languages: Vec<String>,
    tools: Vec<String>,
    corrections: Vec<String>,
    lookup: FxHashMap<Box<str>, Shape>,
}

/// A sentence the guard flags: it announces a tool action and no matching call happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The sentence's index among the reply's sentences.
    pub sentence: u32,
    /// Its byte range in the NFC reply.
    pub span: Range<usize>,
    /// The language of the shape it matched.
    pub language: String,
    /// The tools it announces.
    pub tools: Vec<String>,
}

/// A finding as the response and the replay record carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingOut {
    /// The guard (`guard:announcement`).
    pub guard: String,
    /// The guard's version.
    pub version: String,
    /// Why (`announcement_without_call`).
    pub reason: ReasonCode,
    /// The mode the guard ran in for this turn.
    pub mode: Mode,
    /// The sentence index in the reply.
    pub sentence: u32,
    /// The sentence, in NFC.
    pub text: String,
    /// The language of the shape it matched.
    pub language: String,
    /// The tools it announces, none of which was called.
    pub tools: Vec<String>,
    /// In enforce mode only: the whole reply with the announcement replaced by the correction,
    /// for the outbound gate to take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

impl AnnouncementGuard {
    /// The mode the contract declares.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The version: a hash of the shapes and the correction copy.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What the ladder promotes: this guard at this version.
    pub fn subject(&self) -> Subject {
        Subject { name: ANNOUNCEMENT.to_owned(), version: self.version.clone() }
    }

    /// How many sentences the shapes generate.
    pub fn sentences(&self) -> usize {
        self.lookup.len()
    }

    /// The tools the guard knows objects for.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// The announcements in `reply` with no matching call among `calls`. Framed sentences are
    /// never announcements.
    pub fn flags<'c>(&self, reply: &str, calls: impl IntoIterator<Item = &'c str> + Clone) -> Vec<Flag> {
        let reply = text::nfc(reply);
        let mut flags = Vec::new();
        for (index, span, framed) in framed_sentences(&reply) {
            if framed {
                continue;
            }
            let Some(sentence) = reply.get(span.clone()) else { continue };
            let Some(shape) = self.lookup.get(sentence) else { continue };
            let tools: Vec<&str> =
                shape.tools.iter().filter_map(|&t| self.tools.get(t as usize).map(String::as_str)).collect();
            if calls.clone().into_iter().any(|call| tools.contains(&call)) {
                continue;
            }
            flags.push(Flag {
                sentence: index,
                span,
                language: self.languages.get(shape.language as usize).cloned().unwrap_or_default(),
                tools: tools.into_iter().map(str::to_owned).collect(),
            });
        }
        flags
    }

    /// Observes `reply`: the findings, and nothing else. The reply is borrowed and no
    /// replacement exists on this path.
    pub fn observe(&self, reply: &str, calls: &[Call]) -> Vec<FindingOut> {
        let nfc = text::nfc(reply);
        self.flags(&nfc, calls.iter().map(|c| c.tool.as_str()))
            .into_iter()
            .map(|flag| self.finding(&nfc, flag, Mode::Observe))
            .collect()
    }

    fn finding(&self, nfc: &str, flag: Flag, mode: Mode) -> FindingOut {
        FindingOut {
            guard: ANNOUNCEMENT.to_owned(),
            version: self.version.clone(),
            reason: ReasonCode::AnnouncementWithoutCall,
            mode,
            sentence: flag.sentence,
            text: nfc.get(flag.span).unwrap_or_default().to_owned(),
            language: flag.language,
            tools: flag.tools,
            replacement: None,
        }
    }

    fn correction(&self, language: &str) -> Option<&str> {
        let index = self.languages.iter().position(|l| l == language)?;
        self.corrections.get(index).map(String::as_str)
    }
}

/// The announcement guard with authority: made only from a [`Promotion`] for this exact
/// version, so the replacing branch cannot be reached without one.
///
/// ```compile_fail
/// use warrant_contract::guard::{AnnouncementGuard, Enforcing};
/// fn forge(guard: &AnnouncementGuard) -> Enforcing<'_> {
///     Enforcing { guard }
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Enforcing<'g> {
    guard: &'g AnnouncementGuard,
}

impl<'g> Enforcing<'g> {
    /// The guard with authority, if `promotion` was earned by this guard's exact version.
    pub fn new(guard: &'g AnnouncementGuard, promotion: &Promotion) -> Result<Enforcing<'g>, Refusal> {
        let subject = guard.subject();
        if promotion.record().subject != subject {
            return Err(Refusal::VersionMismatch {
                promoted: promotion.record().subject.version.clone(),
                current: subject.version,
            });
        }
        Ok(Enforcing { guard })
    }

    /// The findings, each carrying the reply with every flagged announcement replaced by the
    /// correction copy of its language. This is the only place a replacement reply is made.
    pub fn enforce(&self, reply: &str, calls: &[Call]) -> Vec<FindingOut> {
        let nfc = text::nfc(reply);
        let flags = self.guard.flags(&nfc, calls.iter().map(|c| c.tool.as_str()));
        if flags.is_empty() {
            return Vec::new();
        }
        let mut replacement = String::with_capacity(nfc.len());
        let mut at = 0;
        for flag in &flags {
            replacement.push_str(nfc.get(at..flag.span.start).unwrap_or_default());
            replacement.push_str(self.guard.correction(&flag.language).unwrap_or_default());
            at = flag.span.end;
        }
        replacement.push_str(nfc.get(at..).unwrap_or_default());
        flags
            .into_iter()
            .map(|flag| FindingOut {
                replacement: Some(replacement.clone()),
                ..self.guard.finding(&nfc, flag, Mode::Enforce)
            })
            .collect()
    }
}

/// Runs the contract's announcement guard over a turn's draft. It enforces only when the
/// contract asks for enforcement and `promotion` is a stored promotion record that the ladder
/// admits for this exact version; otherwise it observes.
pub fn review(
    guard: &AnnouncementGuard,
    draft: &str,
    calls: &[Call],
    promotion: Option<&PromotionRecord>,
) -> Vec<FindingOut> {
    if guard.mode() == Mode::Enforce
        && let Some(record) = promotion
        && let Ok(promotion) = Promotion::admit(record, &guard.subject())
        && let Ok(enforcing) = Enforcing::new(guard, &promotion)
    {
        return enforcing.enforce(draft, calls);
    }
    guard.observe(draft, calls)
}

/// Quotation characters that open a quotation (and are never apostrophes).
const OPENERS: [char; 7] = ['“', '‘', '「', '『', '«', '‹', '〝'];
/// Their closers. `’` closes only an open `‘`: elsewhere it is an apostrophe.
const CLOSERS: [char; 7] = ['”', '’', '」', '』', '»', '›', '〞'];

/// Whether a shape part may contain `c`: no quotation mark, since quoted text is framed.
/// `’` is allowed, because it is the apostrophe of "I’ll".
fn is_quotation_mark(c: char) -> bool {
    c == '"' || OPENERS.contains(&c) || (CLOSERS.contains(&c) && c != '’')
}

/// Every sentence of an NFC text with its index and whether it is framed.
fn framed_sentences(text: &str) -> Vec<(u32, Range<usize>, bool)> {
    // Lines: framed when block-quoted, or after a line ending in a colon until a blank line.
    let mut lines: Vec<(usize, bool)> = Vec::new();
    let mut introduced = false;
    for (start, piece) in lines_of(text) {
        let trimmed = piece.trim();
        if trimmed.is_empty() {
            introduced = false;
            continue;
        }
        let quoted = trimmed.starts_with('>') || trimmed.starts_with('＞');
        lines.push((start, introduced || quoted));
        if trimmed.ends_with(':') || trimmed.ends_with('：') {
            introduced = true;
        }
    }
    let mut quotes = Quotes::default();
    let mut scanned = 0;
    let mut out = Vec::new();
    for (index, span) in Sentences::new(text).enumerate() {
        quotes.scan(text.get(scanned..span.start).unwrap_or_default());
        let inside = quotes.open();
        let body = text.get(span.clone()).unwrap_or_default();
        let marked = body.chars().any(is_quotation_mark);
        quotes.scan(body);
        scanned = span.end;
        let line_framed = lines.iter().rev().find(|(s, _)| *s <= span.start).is_some_and(|(_, f)| *f);
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        out.push((index, span, line_framed || inside || marked));
    }
    out
}

/// The lines of a text with their byte offsets; `\r\n` is one break, as in [`Sentences`].
fn lines_of(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if text::is_line_break(c) {
            lines.push((start, text.get(start..at).unwrap_or_default()));
            let mut next = at + c.len_utf8();
            if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
                chars.next();
                next += 1;
            }
            start = next;
        }
    }
    lines.push((start, text.get(start..).unwrap_or_default()));
    lines
}

/// Open quotations at a point of the text.
#[derive(Debug, Default)]
struct Quotes {
    straight: bool,
    open: u32,
    single: u32,
}

impl Quotes {
    fn open(&self) -> bool {
        self.straight || self.open > 0 || self.single > 0
    }

    fn scan(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '"' => self.straight = !self.straight,
                '‘' => self.single += 1,
                '’' => self.single = self.single.saturating_sub(1),
                c if OPENERS.contains(&c) => self.open += 1,
                c if CLOSERS.contains(&c) => self.open = self.open.saturating_sub(1),
                _ => {}
            }
        }
    }
}

/// Compiles the `[guards]` section.
pub(crate) fn compile(at: &Locator<'_>, raw: &RawGuards) -> Result<Guards, ContractError> {
    let Some(raw) = &raw.announcement else { return Ok(Guards::default()) };
    let bad = |offset: usize, message: String| bad_guard(at, offset, message);
    let mode = guard_mode(at, raw)?;
    if raw.shape.is_empty() {
        return Err(bad(raw.correction.span().start, "declare at least one `[[guards.announcement.shape]]`".into()));
    }
    let mut hasher = Hasher::default();
    let mut languages: Vec<String> = Vec::new();
    let mut corrections: Vec<String> = Vec::new();
    for (language, copy) in raw.correction.get_ref() {
        let checked = check_part(copy.get_ref(), false)
            .map_err(|m| bad(copy.span().start, format!("correction `{language}`: {m}")))?;
        hasher.add(&["correction", language, &checked]);
        languages.push(language.clone());
        corrections.push(checked);
    }
    let mut set = ShapeSet { hasher, tools: Vec::new(), lookup: FxHashMap::default() };
    for shape in &raw.shape {
        add_shape(at, shape, &languages, &mut set)?;
    }
    Ok(Guards {
        announcement: Some(AnnouncementGuard {
            mode,
            version: set.hasher.finish(),
            languages,
            tools: set.tools,
            corrections,
            lookup: set.lookup,
        }),
    })
}

/// The guard's closed set as the shapes build it: the version's hasher, the tools, the sentences.
struct ShapeSet {
    hasher: Hasher,
    tools: Vec<String>,
    lookup: FxHashMap<Box<str>, Shape>,
}

/// Adds one `[[guards.announcement.shape]]`: its slots checked, hashed into the version, and
/// every sentence it makes added to the set.
fn add_shape(
    at: &Locator<'_>,
    shape: &RawShape,
    languages: &[String],
    set: &mut ShapeSet,
) -> Result<(), ContractError> {
    let bad = |offset: usize, message: String| bad_guard(at, offset, message);
    let language = shape.language.get_ref();
    let Some(language_index) = languages.iter().position(|l| l == language) else {
        return Err(bad(
            shape.language.span().start,
            format!(
                "language `{}` has no correction copy in `[guards.announcement.correction]`",
                text::visible(language)
            ),
        ));
    };
    let language_index = u32::try_from(language_index).unwrap_or(u32::MAX);
    let separator = shape_separator(at, shape)?;
    let order = shape_order(at, shape)?;
    let subjects = slot_parts(at, shape.subject.get_ref(), true, "subject")?;
    let verbs = slot_parts(at, shape.verb.get_ref(), false, "verb")?;
    let mut imminence = vec![String::new()];
    imminence.extend(slot_parts(at, &shape.imminence, false, "imminence")?);
    let stops = slot_parts(at, shape.stop.get_ref(), false, "stop")?;
    for (list, span, slot) in [
        (&subjects, shape.subject.span(), "subject"),
        (&verbs, shape.verb.span(), "verb"),
        (&stops, shape.stop.span(), "stop"),
    ] {
        if list.is_empty() {
            return Err(bad(span.start, format!("`{slot}` is empty")));
        }
    }
    if shape.object.get_ref().is_empty() {
        return Err(bad(shape.object.span().start, "`object` names no tool".into()));
    }
    set.hasher.add(&["shape", language, separator]);
    set.hasher.add(&order);
    for (slot, list) in [("subject", &subjects), ("verb", &verbs), ("imminence", &imminence), ("stop", &stops)] {
        set.hasher.add(&[slot]);
        set.hasher.add(&list.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for (tool, objects) in shape.object.get_ref() {
        if !source::is_identifier(tool) {
            return Err(bad(shape.object.span().start, format!("tool `{}` is not a name", text::visible(tool))));
        }
        let objects = slot_parts(at, objects, false, "object")?;
        if objects.is_empty() {
            return Err(bad(shape.object.span().start, format!("tool `{tool}` has no object")));
        }
        set.hasher.add(&["object", tool]);
        set.hasher.add(&objects.iter().map(String::as_str).collect::<Vec<_>>());
        let tool_index = match set.tools.iter().position(|t| t == tool) {
            Some(i) => i,
            None => {
                set.tools.push(tool.clone());
                set.tools.len() - 1
            }
        };
        let tool_index = u32::try_from(tool_index).unwrap_or(u32::MAX);
        let words = ShapeWords {
            order: &order,
            subjects: &subjects,
            verbs: &verbs,
            imminence: &imminence,
            stops: &stops,
            separator,
        };
        add_sentences(
            at,
            shape,
            &words,
            &objects,
            Indexes { language: language_index, tool: tool_index },
            &mut set.lookup,
        )?;
    }
    Ok(())
}

/// The guard's `mode`: `observe` (the default) or `enforce`.
fn guard_mode(at: &Locator<'_>, raw: &RawAnnouncement) -> Result<Mode, ContractError> {
    let bad = |offset: usize, message: String| bad_guard(at, offset, message);
    let mode = match &raw.mode {
        None => Mode::Observe,
        Some(m) if m.get_ref() == "observe" => Mode::Observe,
        Some(m) if m.get_ref() == "enforce" => Mode::Enforce,
        Some(m) => {
            return Err(bad(
                m.span().start,
                format!("`mode` is `{}`; give `observe` or `enforce`", text::visible(m.get_ref())),
            ));
        }
    };
    Ok(mode)
}

/// A shape's `order`: subject, verb, object and imminence, each once.
fn shape_order<'s>(at: &Locator<'_>, shape: &'s RawShape) -> Result<Vec<&'s str>, ContractError> {
    let bad = |offset: usize, message: String| bad_guard(at, offset, message);
    let mut order: Vec<&str> = Vec::new();
    for slot in shape.order.get_ref() {
        let name = slot.get_ref().as_str();
        if !matches!(name, "subject" | "verb" | "object" | "imminence") || order.contains(&name) {
            return Err(bad(
                slot.span().start,
                format!("`order` slot `{}` is unknown or repeated", text::visible(name)),
            ));
        }
        order.push(name);
    }
    if order.len() != 4 {
        return Err(bad(
            shape.order.span().start,
            "`order` must name subject, verb, object and imminence once each".into(),
        ));
    }
    Ok(order)
}

/// The words of a shape's slots, checked, in the order its sentences put them.
struct ShapeWords<'w> {
    order: &'w [&'w str],
    subjects: &'w [String],
    verbs: &'w [String],
    imminence: &'w [String],
    stops: &'w [String],
    separator: &'w str,
}

/// The language and the tool a generated sentence is an announcement in and of.
#[derive(Clone, Copy)]
struct Indexes {
    language: u32,
    tool: u32,
}

/// Adds every sentence the shape makes for one tool's objects to the closed set.
fn add_sentences(
    at: &Locator<'_>,
    shape: &RawShape,
    words: &ShapeWords<'_>,
    objects: &[String],
    indexes: Indexes,
    lookup: &mut FxHashMap<Box<str>, Shape>,
) -> Result<(), ContractError> {
    let bad = |offset: usize, message: String| bad_guard(at, offset, message);
    for object in objects {
        for subject in words.subjects {
            for verb in words.verbs {
                for soon in words.imminence {
                    let parts: Vec<&str> = words
                        .order
                        .iter()
                        .map(|slot| match *slot {
                            "subject" => subject.as_str(),
                            "verb" => verb.as_str(),
                            "object" => object.as_str(),
                            _ => soon.as_str(),
                        })
                        .filter(|w| !w.is_empty())
                        .collect();
                    let body = parts.join(words.separator);
                    for stop in words.stops {
                        let sentence = format!("{body}{stop}");
                        if Sentences::new(&sentence).count() != 1 || sentence.trim() != sentence {
                            return Err(bad(
                                shape.language.span().start,
                                format!("the shape makes `{sentence}`, which is not one sentence under the segmenter"),
                            ));
                        }
                        let entry = lookup
                            .entry(sentence.into_boxed_str())
                            .or_insert_with(|| Shape { language: indexes.language, tools: SmallVec::new() });
                        if !entry.tools.contains(&indexes.tool) {
                            entry.tools.push(indexes.tool);
                        }
                        if lookup.len() > MAX_SENTENCES {
                            return Err(bad(
                                shape.language.span().start,
                                format!("the shapes make more than {MAX_SENTENCES} sentences"),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The parts of one slot of a shape, each checked and in NFC.
fn slot_parts(
    at: &Locator<'_>,
    list: &[Spanned<String>],
    may_be_empty: bool,
    slot: &str,
) -> Result<Vec<String>, ContractError> {
    list.iter()
        .map(|p| {
            check_part(p.get_ref(), may_be_empty)
                .map_err(|m| bad_guard(at, p.span().start, format!("{slot} `{}`: {m}", text::visible(p.get_ref()))))
        })
        .collect()
}

/// A shape's separator (a space unless given), with no invisible character or quotation mark.
fn shape_separator<'s>(at: &Locator<'_>, shape: &'s RawShape) -> Result<&'s str, ContractError> {
    let separator = shape.separator.as_ref().map_or(" ", |s| s.get_ref().as_str());
    if separator.chars().any(|c| text::is_invisible(c) || is_quotation_mark(c)) {
        let offset = shape.separator.as_ref().map_or(0, |s| s.span().start);
        return Err(bad_guard(at, offset, "the separator contains an invisible character or a quotation mark".into()));
    }
    Ok(separator)
}

fn bad_guard(at: &Locator<'_>, offset: usize, message: String) -> ContractError {
    at.error(offset, ContractErrorKind::BadGuard { guard: "announcement".into(), message })
}

/// Checks one shape part or correction and returns it in NFC.
fn check_part(written: &str, may_be_empty: bool) -> Result<String, String> {
    let part = text::nfc(written).into_owned();
    if part.is_empty() {
        return if may_be_empty { Ok(part) } else { Err("is empty".into()) };
    }
    if part.chars().any(text::is_invisible) {
        return Err("contains an invisible or control character".into());
    }
    if part.trim() != part {
        return Err("starts or ends with white space".into());
    }
    if part.chars().any(is_quotation_mark) {
        return Err("contains a quotation mark; quoted text is framed and never an announcement".into());
    }
    Ok(part)
}

/// The guard's version: SHA-256 over every part, in declaration order, with separators.
#[derive(Default)]
struct Hasher(sha2::Sha256);

impl Hasher {
    fn add(&mut self, parts: &[&str]) {
        use sha2::Digest;
        for part in parts {
            self.0.update(part.as_bytes());
            self.0.update([0u8]);
        }
        self.0.update([1u8]);
    }

    fn finish(self) -> String {
        use sha2::Digest;
        self.0.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Contract;
    use crate::ladder::{AuditSummary, Bars, CorpusRun, Label, Ladder};

    pub(crate) const CONTRACT: &str = r#"
[sources]
kinds = ["model_reply"]

[guards.announcement]
mode = "enforce"

[guards.announcement.correction]
en = "I have not done that yet."
ko = "아직 확인하지 않았어요."

[[guards.announcement.shape]]
language = "en"
order = ["subject", "verb", "object", "imminence"]
subject = ["Let me", "I'll", "I’ll"]
verb = ["check", "open"]
imminence = ["now"]
stop = ["."]

[guards.announcement.shape.object]
read_file = ["that file", "the file"]
get_order_details = ["your order"]

[[guards.announcement.shape]]
language = "ko"
order = ["subject", "imminence", "object", "verb"]
subject = ["", "제가"]
verb = ["확인해 볼게요", "열어 볼게요"]
imminence = ["지금"]
stop = ["."]

[guards.announcement.shape.object]
read_file = ["그 파일을"]
"#;

    fn guard(source: &str) -> AnnouncementGuard {
        Contract::from_toml("t.toml", source).unwrap().guards().announcement().unwrap().clone()
    }

    fn call(tool: &str) -> Call {
        Call { tool: tool.into(), args: serde_json::Map::new() }
    }

    fn flagged(reply: &str, calls: &[&str]) -> Vec<u32> {
        guard(CONTRACT).flags(reply, calls.iter().copied()).into_iter().map(|f| f.sentence).collect()
    }

    #[test]
    fn a_bare_announcement_without_its_call_is_flagged() {
        assert_eq!(flagged("Let me check that file.", &[]), [0]);
        assert_eq!(flagged("Sure. I’ll open the file now.", &[]), [1]);
        assert_eq!(flagged("지금 그 파일을 확인해 볼게요.", &[]), [0]);
        assert_eq!(flagged("제가 지금 그 파일을 열어 볼게요.", &[]), [0]);
    }

    #[test]
    fn an_announcement_with_its_call_is_not_flagged() {
        assert!(flagged("Let me check that file.", &["read_file"]).is_empty());
        // Another tool's call does not make it true.
        assert_eq!(flagged("Let me check that file.", &["get_order_details"]), [0]);
    }

    #[test]
    fn seed_002_a_quoted_announcement_after_a_colon_is_not_flagged() {
        let reply = "Last week I made a mistake. I wrote this and never ran the tool:\nLet me check that file.\nThat was wrong of me.";
        assert!(flagged(reply, &[]).is_empty());
        let reply = "Here is what I said:\n\nLet me check that file.";
        // A blank line ends the introduction: the announcement stands alone again.
        assert_eq!(flagged(reply, &[]), [1]);
    }

    #[test]
    fn a_crlf_after_a_colon_line_does_not_end_the_introduction() {
        // Splitting on each break character made `\r\n` look like a blank line between the
        // colon line and the quote, which ended the introduction.
        assert!(flagged("I wrote:\r\nLet me check that file.", &[]).is_empty());
        assert!(flagged("I wrote:\u{2028}Let me check that file.", &[]).is_empty());
        assert_eq!(flagged("I wrote:\r\n\r\nLet me check that file.", &[]), [1]);
    }

    #[test]
    fn framed_text_is_never_a_bare_announcement() {
        for reply in [
            "> Let me check that file.",
            "She wrote \"Let me check that file.\" and left.",
            "“Let me check that file.” is what I said.",
            "「지금 그 파일을 확인해 볼게요.」",
            "He said: \"Let me check that file.\"",
            "\"Let me check that file. I'll open the file now.\"",
        ] {
            assert!(flagged(reply, &[]).is_empty(), "{reply}");
        }
    }

    #[test]
    fn freight_of_any_kind_does_not_match() {
        for reply in [
            "I check that file most nights.",
            "If you want, let me check that file.",
            "Let me check that file tomorrow.",
            "let me check that file.",
            "Let me check that file",
            "Let me  check that file.",
            "I told you I'd check that file.",
        ] {
            assert!(flagged(reply, &[]).is_empty(), "{reply}");
        }
    }

    #[test]
    fn observe_cannot_alter_a_reply() {
        let g = guard(CONTRACT);
        let reply = String::from("Let me check that file.");
        let findings = g.observe(&reply, &[]);
        assert_eq!(findings.len(), 1);
        assert!(findings.iter().all(|f| f.replacement.is_none() && f.mode == Mode::Observe));
        assert_eq!(reply, "Let me check that file.");
        assert!(g.observe(&reply, &[call("read_file")]).is_empty());
        // Declared `enforce`, but with no promotion record the guard only observes.
        let reviewed = review(&g, &reply, &[], None);
        assert!(reviewed.iter().all(|f| f.replacement.is_none() && f.mode == Mode::Observe));
    }

    fn promotion_for(g: &AnnouncementGuard) -> PromotionRecord {
        let audits = AuditSummary::of([Label::TruePositive; 50]);
        Ladder::promote(g.subject(), audits, CorpusRun::counted(10, 0), Bars::default(), "ana".into(), "t".into())
            .unwrap()
            .record()
            .clone()
    }

    #[test]
    fn enforce_replaces_the_announcement_only_with_a_promotion_for_this_version() {
        let g = guard(CONTRACT);
        let record = promotion_for(&g);
        let findings = review(&g, "Sure. Let me check that file. Bye.", &[], Some(&record));
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].replacement.as_deref(), Some("Sure. I have not done that yet. Bye."));
        assert_eq!(findings[0].mode, Mode::Enforce);
        // A change to the shapes is a new version: the old record no longer admits it.
        let changed = guard(&CONTRACT.replace("\"check\", \"open\"", "\"check\", \"open\", \"read\""));
        assert_ne!(changed.version(), g.version());
        let findings = review(&changed, "Let me check that file.", &[], Some(&record));
        assert_eq!(findings[0].mode, Mode::Observe);
        assert!(findings[0].replacement.is_none());
    }

    #[test]
    fn the_version_covers_the_correction_copy() {
        let changed = guard(&CONTRACT.replace("I have not done that yet.", "Not yet."));
        assert_ne!(changed.version(), guard(CONTRACT).version());
        assert_eq!(guard(CONTRACT).version(), guard(CONTRACT).version());
    }

    #[test]
    fn bad_shapes_do_not_load_and_name_the_line() {
        let err = Contract::from_toml("t.toml", &CONTRACT.replace("\"Let me\"", "\"Let “me\"")).unwrap_err();
        assert!(err.to_string().contains("quotation mark"), "{err}");
        assert_eq!(err.line, 15);
        let err = Contract::from_toml(
            "t.toml",
            &CONTRACT.replace(
                "stop = [\".\"]\n\n[guards.announcement.shape.object]\nread_file = [\"that",
                "stop = [\". Now.\"]\n\n[guards.announcement.shape.object]\nread_file = [\"that",
            ),
        )
        .unwrap_err();
        assert!(err.to_string().contains("not one sentence"), "{err}");
        let err =
            Contract::from_toml("t.toml", &CONTRACT.replace("mode = \"enforce\"", "mode = \"loud\"")).unwrap_err();
        assert!(err.to_string().contains("`mode`"), "{err}");
        let err = Contract::from_toml("t.toml", &CONTRACT.replace("ko = \"아직", "jp = \"아직")).unwrap_err();
        assert!(err.to_string().contains("no correction copy"), "{err}");
        let err = Contract::from_toml(
            "t.toml",
            &CONTRACT.replace("imminence = [\"now\"]", "imminence = [\"now\"]\nwhen = 1"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
