//! The errors of a contract that does not load, each with the place at fault.

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
    UndeclaredKind {
        /// The clause's text.
        clause: String,
        /// The kind it names.
        kind: String,
    },
    /// A clause's `from` is an empty list, which would make it unusable.
    #[error("clause `{0}` has an empty `from` list; omit `from` to allow every kind")]
    EmptyFrom(String),
    /// A clause's text is empty.
    #[error("a clause is empty")]
    EmptyClause,
    /// A clause is the same text (after NFC) as an earlier scored or passive clause.
    #[error("clause `{clause}` repeats the clause at line {first_line}")]
    DuplicateClause {
        /// The repeated text.
        clause: String,
        /// The line of its first occurrence.
        first_line: u32,
    },
    /// A clause is not exactly one sentence under the segmenter.
    #[error("clause `{clause}` is {sentences} sentences under the segmenter; a clause must be exactly one sentence")]
    NotOneSentence {
        /// The clause's text.
        clause: String,
        /// How many sentences the segmenter finds in it.
        sentences: usize,
    },
    /// A clause starts or ends with white space, so no trimmed sentence could ever equal it.
    #[error("clause `{0}` starts or ends with white space")]
    SurroundingWhiteSpace(String),
    /// `sources.acts` names a kind not in `sources.kinds`.
    #[error("`sources.acts` names the undeclared source kind `{0}`")]
    UndeclaredActKind(String),
    /// `mcp.source` names a kind not in `sources.kinds`.
    #[error("`mcp.source` names the undeclared source kind `{0}`")]
    UndeclaredMcpKind(String),
    /// Two operations share a name.
    #[error("operation `{0}` is declared twice")]
    DuplicateOperation(String),
    /// An operation's `from` names a kind not in `sources.kinds`.
    #[error("operation `{op}` names the undeclared source kind `{kind}`")]
    UndeclaredOperationKind {
        /// The operation's name.
        op: String,
        /// The kind it names.
        kind: String,
    },
    /// An operation's arguments, derived quantities or effects are inconsistent.
    #[error("operation `{op}`: {message}")]
    BadOperation {
        /// The operation's name.
        op: String,
        /// What is inconsistent.
        message: String,
    },
    /// A records table is declared wrongly.
    #[error("table `{table}`: {message}")]
    BadTable {
        /// The table's name.
        table: String,
        /// What is wrong with it.
        message: String,
    },
    /// A currency code outside ISO 4217.
    #[error("`{0}` is not an ISO 4217 currency code with minor units")]
    UnknownCurrency(String),
    /// A policy file cannot be read or does not parse.
    #[error("policy file `{file}`: {message}")]
    BadPolicy {
        /// The policy file, as the contract names it.
        file: String,
        /// The reader's or Cedar's error.
        message: String,
    },
    /// A guard's shapes or correction copy are declared wrongly.
    #[error("guard `{guard}`: {message}")]
    BadGuard {
        /// The guard's name.
        guard: String,
        /// What is wrong with it.
        message: String,
    },
    /// A clause contains a control, zero-width, bidirectional or other invisible character.
    #[error("clause `{clause}` contains the invisible or control character U+{code:04X}")]
    InvisibleCharacter {
        /// The clause's text.
        clause: String,
        /// The character's code point.
        code: u32,
    },
    /// The `[model]` section is declared wrongly.
    #[error("`[model]`: {0}")]
    BadModel(String),
    /// The `[outbound]` section (claims, paths, channels, locales) is declared wrongly.
    #[error("outbound {what}: {message}")]
    BadOutbound {
        /// The part at fault: a claim, path, channel or locale, by name.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// The `[limits]` section is declared wrongly.
    #[error("`[limits]`: {0}")]
    BadLimit(String),
}
