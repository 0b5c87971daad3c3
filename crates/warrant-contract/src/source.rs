//! Source kinds: the closed set of places a text may come from (`user`, `model_reply`,
//! `authored`, …), as the contract declares them. A kind outside the set is an input error.

use rustc_hash::FxHashMap;

/// The most source kinds one contract may declare; kind sets are bit sets of this width.
pub const MAX_SOURCE_KINDS: usize = 64;

/// A declared source kind, by its position in the contract's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceKind(u8);

impl SourceKind {
    /// The position of the kind in the contract's `sources.kinds` list.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A set of source kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KindSet(u64);

impl KindSet {
    /// The empty set.
    pub const EMPTY: KindSet = KindSet(0);

    /// Every kind of a contract that declares `count` kinds.
    pub const fn all(count: usize) -> KindSet {
        if count >= MAX_SOURCE_KINDS { KindSet(u64::MAX) } else { KindSet((1u64 << count) - 1) }
    }

    /// Adds `kind` to the set.
    pub fn insert(&mut self, kind: SourceKind) {
        self.0 |= 1u64 << kind.0;
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: SourceKind) -> bool {
        self.0 & (1u64 << kind.0) != 0
    }
}

/// The contract's closed set of source kinds.
#[derive(Debug, Clone)]
pub struct SourceKinds {
    names: Vec<Box<str>>,
    index: FxHashMap<Box<str>, SourceKind>,
}

impl SourceKinds {
    /// Builds the set from names already checked to be distinct, well formed and at most
    /// [`MAX_SOURCE_KINDS`].
    pub(crate) fn new(names: Vec<Box<str>>) -> SourceKinds {
        let index = names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), SourceKind(u8::try_from(i).unwrap_or(u8::MAX))))
            .collect();
        SourceKinds { names, index }
    }

    /// The kind named `name`, if the contract declares it.
    pub fn get(&self, name: &str) -> Option<SourceKind> {
        self.index.get(name).copied()
    }

    /// The name of `kind`.
    pub fn name(&self, kind: SourceKind) -> &str {
        self.names.get(kind.index()).map_or("", |n| n)
    }

    /// The declared names, in the contract's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// How many kinds are declared.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no kind is declared (a loaded contract always declares one).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Whether `name` is a well-formed identifier for a source kind, an operation or any other
/// closed-set member the contract names: ASCII lowercase letters, digits and `_`, starting with
/// a letter.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
