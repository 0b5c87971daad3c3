//! The contract: the TOML file a deployment writes, parsed all or nothing and checked when
//! loaded, so that nothing downstream meets a malformed clause.
//!
//! Parsing is two steps. `serde` reads the file into raw sections that keep the span of every
//! value (unknown fields are errors); then each section is compiled into its checked form, and
//! every error names the line and column of the value at fault. A later section (operations,
//! records, claims, guards, tasks) adds a raw field here and a compile step beside the score's.

use serde::Deserialize;
use toml::Spanned;

use crate::score::{self, Score};
use crate::source::{self, MAX_SOURCE_KINDS, SourceKinds};
use crate::text;

/// A loaded, checked contract.
#[derive(Debug, Clone)]
pub struct Contract {
    origin: String,
    kinds: SourceKinds,
    score: Score,
}

impl Contract {
    /// Parses and checks the contract in `text`. `origin` names the file in error messages.
    pub fn from_toml(origin: &str, text: &str) -> Result<Contract, ContractError> {
        let at = Locator { origin, text };
        let raw: RawContract = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            at.error(span.start, ContractErrorKind::Syntax(e.message().trim().replace('\n', " ")))
        })?;
        let Some(sources) = raw.sources else {
            return Err(at.error(0, ContractErrorKind::MissingSection("sources")));
        };
        let kinds = compile_kinds(&at, &sources.kinds)?;
        let score = score::compile(&at, &kinds, &raw.score)?;
        Ok(Contract { origin: origin.to_owned(), kinds, score })
    }

    /// The name the contract was loaded under (usually its path).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The declared source kinds.
    pub fn kinds(&self) -> &SourceKinds {
        &self.kinds
    }

    /// The score: scored clauses and the passive set.
    pub fn score(&self) -> &Score {
        &self.score
    }
}

fn compile_kinds(
    at: &Locator<'_>,
    kinds: &Spanned<Vec<Spanned<String>>>,
) -> Result<SourceKinds, ContractError> {
    if kinds.get_ref().is_empty() {
        return Err(at.error(kinds.span().start, ContractErrorKind::EmptyKinds));
    }
    if kinds.get_ref().len() > MAX_SOURCE_KINDS {
        return Err(at.error(kinds.span().start, ContractErrorKind::TooManyKinds));
    }
    let mut names: Vec<Box<str>> = Vec::with_capacity(kinds.get_ref().len());
    for kind in kinds.get_ref() {
        let name = kind.get_ref();
        if !source::is_identifier(name) {
            return Err(at.error(kind.span().start, ContractErrorKind::BadName(text::visible(name))));
        }
        if names.iter().any(|n| **n == **name) {
            return Err(at.error(kind.span().start, ContractErrorKind::DuplicateKind(text::visible(name))));
        }
        names.push(name.as_str().into());
    }
    Ok(SourceKinds::new(names))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContract {
    sources: Option<RawSources>,
    #[serde(default)]
    score: RawScore,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSources {
    kinds: Spanned<Vec<Spanned<String>>>,
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

/// Turns byte offsets in the contract text into line and column for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Locator<'a> {
    pub(crate) origin: &'a str,
    pub(crate) text: &'a str,
}

impl Locator<'_> {
    /// The 1-based line and column (in characters) of byte `offset`.
    pub(crate) fn line_column(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let before = self.text.get(..offset).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before.get(line_start..).unwrap_or_default().chars().count() + 1;
        (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX))
    }

    pub(crate) fn error(&self, offset: usize, kind: ContractErrorKind) -> ContractError {
        let (line, column) = self.line_column(offset);
        ContractError { origin: self.origin.to_owned(), line, column, kind }
    }
}

/// A contract that does not load, with the place at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}:{column}: {kind}")]
pub struct ContractError {
    /// The file (as given to the loader).
    pub origin: String,
    /// 1-based line of the value at fault.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// What is wrong.
    pub kind: ContractErrorKind,
}

/// What is wrong with a contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContractErrorKind {
    /// The TOML does not parse, or a field is unknown, missing or of the wrong type.
    #[error("{0}")]
    Syntax(String),
    /// A required section is absent.
    #[error("the `[{0}]` section is missing")]
    MissingSection(&'static str),
    /// `sources.kinds` is empty.
    #[error("`sources.kinds` is empty; declare at least one source kind")]
    EmptyKinds,
    /// More kinds than a kind set can hold.
    #[error("`sources.kinds` declares more than 64 source kinds")]
    TooManyKinds,
    /// A name is not an identifier.
    #[error("`{0}` is not a name: use lowercase ASCII letters, digits and `_`, starting with a letter")]
    BadName(String),
    /// A source kind is declared twice.
    #[error("source kind `{0}` is declared twice")]
    DuplicateKind(String),
    /// A clause's `from` names a kind not in `sources.kinds`.
    #[error("clause `{clause}` names the undeclared source kind `{kind}`")]
    UndeclaredKind { clause: String, kind: String },
    /// A clause's `from` is an empty list, which would make it unusable.
    #[error("clause `{0}` has an empty `from` list; omit `from` to allow every kind")]
    EmptyFrom(String),
    /// A clause's text is empty.
    #[error("a clause is empty")]
    EmptyClause,
    /// A clause is the same text (after NFC) as an earlier scored or passive clause.
    #[error("clause `{clause}` repeats the clause at line {first_line}")]
    DuplicateClause { clause: String, first_line: u32 },
    /// A clause is not exactly one sentence under the segmenter.
    #[error("clause `{clause}` is {sentences} sentences under the segmenter; a clause must be exactly one sentence")]
    NotOneSentence { clause: String, sentences: usize },
    /// A clause starts or ends with white space, so no trimmed sentence could ever equal it.
    #[error("clause `{0}` starts or ends with white space")]
    SurroundingWhiteSpace(String),
    /// A clause contains a control, zero-width, bidirectional or other invisible character.
    #[error("clause `{clause}` contains the invisible or control character U+{code:04X}")]
    InvisibleCharacter { clause: String, code: u32 },
}
