//! The clause gate (rule 1): a reply performs operations only when every one of its sentences
//! is an authored clause or a passive clause. One unregistered sentence anywhere, and the reply
//! performs nothing.
//!
//! Membership is exact equality of a whole NFC sentence with a whole authored clause. That is a
//! structural check on a closed set, not an inference about meaning; no part of a sentence is
//! ever compared with anything.

use std::borrow::Cow;
use std::ops::Range;

use rustc_hash::FxHashMap;
use serde::Deserialize;
use smallvec::SmallVec;
use toml::Spanned;

use crate::error::{ContractError, ContractErrorKind, Locator};
use crate::reason::ReasonCode;
use crate::source::{self, KindSet, SourceKind, SourceKinds};
use crate::text::{self, Sentences};

/// An authored clause mapped to one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    text: Box<str>,
    op: Box<str>,
    from: KindSet,
    line: u32,
}

impl Clause {
    /// The clause as authored, in NFC.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The operation the clause performs.
    pub fn op(&self) -> &str {
        &self.op
    }

    /// The source kinds whose texts may perform this clause.
    pub fn from(&self) -> KindSet {
        self.from
    }

    /// The contract line the clause was written on.
    pub fn line(&self) -> u32 {
        self.line
    }
}

/// What an authored sentence is in the score's lookup: a scored clause (by index) or passive.
#[derive(Debug, Clone, Copy)]
enum Authored {
    Scored(u32),
    Passive,
}

/// The closed map of authored clauses to operations, plus the passive set. Built once when the
/// contract loads; the gate only looks sentences up in it.
#[derive(Debug, Clone, Default)]
pub struct Score {
    clauses: Vec<Clause>,
    passive: Vec<Box<str>>,
    lookup: FxHashMap<Box<str>, Authored>,
}

/// One operation a reply performs, with its evidence: the clause a sentence equals. (The
/// operation as the contract declares it is [`crate::operation::Operation`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Performed<'c> {
    /// The clause the sentence equals.
    pub clause: &'c Clause,
    /// The index of the sentence among the reply's sentences.
    pub sentence: u32,
}

/// Why a reply performs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The stable reason code.
    pub reason: ReasonCode,
    /// The index of the sentence at fault, where one is.
    pub sentence: Option<u32>,
    /// The sentence at fault, as a byte range into the NFC text.
    pub span: Option<Range<usize>>,
}

/// What the clause gate decided for one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading<'c, 't> {
    /// The source kind of the text.
    pub kind: SourceKind,
    /// The text in NFC (borrowed when the input already was).
    pub text: Cow<'t, str>,
    /// The operations performed, in sentence order; empty whenever `rejection` is set.
    pub operations: SmallVec<[Performed<'c>; 4]>,
    /// Why nothing is performed, if a sentence broke the rule or the reply was empty.
    pub rejection: Option<Rejection>,
}

impl Reading<'_, '_> {
    /// The sentence a rejection points at, in NFC.
    pub fn rejected_sentence(&self) -> Option<&str> {
        let span = self.rejection.as_ref()?.span.clone()?;
        self.text.get(span)
    }
}

impl Score {
    /// The scored clauses, in contract order.
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// The passive clauses, in contract order.
    pub fn passive(&self) -> impl Iterator<Item = &str> {
        self.passive.iter().map(|p| &**p)
    }

    /// Whether some clause may be performed by texts of `kind`, so that the turn reads entries
    /// of that kind through the gate.
    pub fn reads_kind(&self, kind: SourceKind) -> bool {
        self.clauses.iter().any(|c| c.from.contains(kind))
    }

    /// Reads `text` of source kind `kind` through the gate.
    pub fn read<'c, 't>(&'c self, kind: SourceKind, text: &'t str) -> Reading<'c, 't> {
        let text = text::nfc(text);
        let mut operations = SmallVec::new();
        let mut rejection = None;
        let mut count: u32 = 0;
        for span in Sentences::new(&text) {
            let index = count;
            count = count.saturating_add(1);
            let sentence = text.get(span.clone()).unwrap_or_default();
            let reason = match self.lookup.get(sentence) {
                Some(Authored::Passive) => continue,
                Some(&Authored::Scored(i)) => match self.clauses.get(i as usize) {
                    Some(clause) if clause.from.contains(kind) => {
                        operations.push(Performed { clause, sentence: index });
                        continue;
                    }
                    _ => ReasonCode::ClauseNotPermittedForSource,
                },
                None => ReasonCode::UnregisteredSentence,
            };
            rejection = Some(Rejection { reason, sentence: Some(index), span: Some(span) });
            break;
        }
        if rejection.is_none() && count == 0 {
            rejection = Some(Rejection { reason: ReasonCode::EmptyResponse, sentence: None, span: None });
        }
        if rejection.is_some() {
            operations.clear();
        }
        Reading { kind, text, operations, rejection }
    }
}

/// The `[score]` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScore {
    #[serde(default)]
    pub(crate) clause: Vec<RawClause>,
    #[serde(default)]
    pub(crate) passive: Vec<RawPassive>,
}

/// One `[[score.clause]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClause {
    pub(crate) text: Spanned<String>,
    pub(crate) op: Spanned<String>,
    pub(crate) from: Option<Spanned<Vec<Spanned<String>>>>,
}

/// One `[[score.passive]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPassive {
    pub(crate) text: Spanned<String>,
}

/// Compiles the `[score]` section, checking every clause.
pub(crate) fn compile(at: &Locator<'_>, kinds: &SourceKinds, raw: &RawScore) -> Result<Score, ContractError> {
    let mut score = Score::default();
    let mut lines: FxHashMap<Box<str>, u32> = FxHashMap::default();
    let mut admit = |text: &toml::Spanned<String>, entry: Authored| -> Result<Box<str>, ContractError> {
        let offset = text.span().start;
        let clause = check_clause(text.get_ref()).map_err(|kind| at.error(offset, kind))?;
        let (line, _) = at.line_column(offset);
        if let Some(&first_line) = lines.get(&clause) {
            return Err(at.error(offset, ContractErrorKind::DuplicateClause { clause: clause.into(), first_line }));
        }
        lines.insert(clause.clone(), line);
        score.lookup.insert(clause.clone(), entry);
        Ok(clause)
    };
    let mut clauses = Vec::with_capacity(raw.clause.len());
    for (i, raw_clause) in raw.clause.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let text = admit(&raw_clause.text, Authored::Scored(index))?;
        let op = raw_clause.op.get_ref();
        if !source::is_identifier(op) {
            return Err(at.error(raw_clause.op.span().start, ContractErrorKind::BadName(text::visible(op))));
        }
        let from = match &raw_clause.from {
            None => KindSet::all(kinds.len()),
            Some(list) => {
                if list.get_ref().is_empty() {
                    return Err(at.error(list.span().start, ContractErrorKind::EmptyFrom(text.into())));
                }
                let mut set = KindSet::EMPTY;
                for name in list.get_ref() {
                    let kind = kinds.get(name.get_ref()).ok_or_else(|| {
                        at.error(
                            name.span().start,
                            ContractErrorKind::UndeclaredKind {
                                clause: text.to_string(),
                                kind: text::visible(name.get_ref()),
                            },
                        )
                    })?;
                    set.insert(kind);
                }
                set
            }
        };
        let (line, _) = at.line_column(raw_clause.text.span().start);
        clauses.push(Clause { text, op: op.as_str().into(), from, line });
    }
    for raw_passive in &raw.passive {
        let text = admit(&raw_passive.text, Authored::Passive)?;
        score.passive.push(text);
    }
    score.clauses = clauses;
    Ok(score)
}

/// Checks one clause as written and returns it in NFC.
fn check_clause(written: &str) -> Result<Box<str>, ContractErrorKind> {
    let clause = text::nfc(written);
    if clause.is_empty() {
        return Err(ContractErrorKind::EmptyClause);
    }
    if let Some(c) = clause.chars().find(|&c| text::is_invisible(c)) {
        return Err(ContractErrorKind::InvisibleCharacter { clause: text::visible(&clause), code: u32::from(c) });
    }
    if clause.trim() != clause {
        return Err(ContractErrorKind::SurroundingWhiteSpace(clause.into_owned()));
    }
    let sentences = Sentences::new(&clause).count();
    if sentences != 1 {
        return Err(ContractErrorKind::NotOneSentence { clause: clause.into_owned(), sentences });
    }
    Ok(clause.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Contract;

    const KO: &str = r#"
[sources]
kinds = ["authored", "model_reply", "user"]

[[score.clause]]
text = "같이 결정해보자."
op = "join"
from = ["model_reply"]

[[score.clause]]
text = "마지막 방향은 네가 정해도 돼."
op = "delegate"

[[score.passive]]
text = "고마워."
"#;

    fn read(text: &str, kind: &str) -> (Vec<String>, Option<(ReasonCode, Option<u32>)>) {
        let contract = Contract::from_toml("ko.toml", KO).unwrap();
        let kind = contract.kinds().get(kind).unwrap();
        let reading = contract.score().read(kind, text);
        (
            reading.operations.iter().map(|o| o.clause.op().to_owned()).collect(),
            reading.rejection.map(|r| (r.reason, r.sentence)),
        )
    }

    #[test]
    fn registered_sentences_perform_their_operations_in_order() {
        let (ops, rejection) = read("고마워. 마지막 방향은 네가 정해도 돼.\n같이 결정해보자.", "model_reply");
        assert_eq!(ops, ["delegate", "join"]);
        assert_eq!(rejection, None);
    }

    #[test]
    fn a_question_with_the_right_words_stays_inert() {
        let (ops, rejection) = read("같이 결정해볼까?", "model_reply");
        assert!(ops.is_empty());
        assert_eq!(rejection, Some((ReasonCode::UnregisteredSentence, Some(0))));
    }

    #[test]
    fn one_unregistered_sentence_anywhere_empties_the_reply() {
        let (ops, rejection) = read("같이 결정해보자. 근데 아직은 아니야.", "model_reply");
        assert!(ops.is_empty());
        assert_eq!(rejection, Some((ReasonCode::UnregisteredSentence, Some(1))));
    }

    #[test]
    fn a_clause_from_another_source_kind_performs_nothing() {
        let (ops, rejection) = read("같이 결정해보자.", "user");
        assert!(ops.is_empty());
        assert_eq!(rejection, Some((ReasonCode::ClauseNotPermittedForSource, Some(0))));
    }

    #[test]
    fn an_empty_reply_is_rejected_as_empty() {
        for text in ["", " \n\t "] {
            let (ops, rejection) = read(text, "model_reply");
            assert!(ops.is_empty());
            assert_eq!(rejection, Some((ReasonCode::EmptyResponse, None)));
        }
    }

    #[test]
    fn passive_only_replies_perform_nothing_without_rejection() {
        assert_eq!(read("고마워.", "user"), (vec![], None));
    }
}
