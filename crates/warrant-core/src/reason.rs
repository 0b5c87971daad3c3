//! The one list of reason codes. Every verdict, rejection and input error warrant reports names
//! its cause with one of these stable `snake_case` codes; users' tools match on them, so a code
//! is never renamed or reused, only added.
//!
//! `warrant reasons` prints this list with the documentation of each code.

use serde::{Serialize, Serializer};

macro_rules! reason_codes {
    ($( $(#[doc = $doc:literal])+ $variant:ident => $code:literal, )+) => {
        /// A stable reason code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum ReasonCode {
            $( $(#[doc = $doc])+ $variant, )+
        }

        impl ReasonCode {
            /// Every code, in the order of this list.
            pub const ALL: &'static [ReasonCode] = &[ $( ReasonCode::$variant, )+ ];

            /// The code as it appears on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $( ReasonCode::$variant => $code, )+ }
            }

            /// What the code means, as documented here.
            pub fn description(self) -> &'static str {
                match self { $( ReasonCode::$variant => concat!($($doc, "\n"),+).trim(), )+ }
            }

            /// The code whose wire form is `code`.
            pub fn from_code(code: &str) -> Option<ReasonCode> {
                match code { $( $code => Some(ReasonCode::$variant), )+ _ => None }
            }
        }
    };
}

reason_codes! {
    /// A sentence of the reply is neither a scored clause nor a passive clause, so the reply
    /// performs no operation at all (rule 1).
    UnregisteredSentence => "unregistered_sentence",
    /// A sentence is a scored clause that the contract limits to other source kinds, so the
    /// reply performs no operation.
    ClauseNotPermittedForSource => "clause_not_permitted_for_source",
    /// The reply has no sentence (empty or only white space), so it performs no operation.
    EmptyResponse => "empty_response",
    /// The entry names a source kind the contract does not declare; an input error, never a
    /// guess.
    UnknownSourceKind => "unknown_source_kind",
    /// A line of JSON input could not be parsed, or has a missing, unknown or mistyped field.
    InvalidInput => "invalid_input",
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ReasonCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(
                s.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{s} is not snake_case"
            );
            assert_eq!(ReasonCode::from_code(s), Some(*code));
            assert!(!code.description().is_empty(), "{s} is undocumented");
        }
    }
}
