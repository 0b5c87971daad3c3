//! The `[limits]` section: how much one request may ask for. A turn's acts are each decided
//! (structure, checks, policy) while the tenant's other requests wait for its commit, and every
//! finding is written to the store, so what one request may hold is bounded by the contract,
//! with defaults sound for a chat turn. A request over a limit is refused whole with
//! `limit_exceeded`, naming the limit, before anything of it is decided.

use serde::Deserialize;
use toml::Spanned;

use crate::error::{ContractError, ContractErrorKind, Locator};

/// The checked `[limits]`; every field has its default when the contract does not set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries (texts) of one turn.
    pub entries_per_turn: u32,
    /// Acts one turn proposes.
    pub acts_per_turn: u32,
    /// Answers to interactions in one turn.
    pub answers_per_turn: u32,
    /// Tool calls one turn reports.
    pub calls_per_turn: u32,
    /// Claims of one draft, in a turn or an outbound request.
    pub claims_per_draft: u32,
    /// Characters (Unicode scalar values) of one entry's text.
    pub characters_per_entry: u32,
    /// Characters of one draft's text, in a turn or an outbound request.
    pub characters_per_draft: u32,
    /// Findings the announcement guard reports for one reply; it stops at this many.
    pub findings_per_reply: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            entries_per_turn: 64,
            acts_per_turn: 32,
            answers_per_turn: 32,
            calls_per_turn: 64,
            claims_per_draft: 32,
            characters_per_entry: 16_000,
            characters_per_draft: 16_000,
            findings_per_reply: 32,
        }
    }
}

/// A request over a limit: the limit's name in the contract (`limits.acts_per_turn`), its
/// value and how much the request holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exceeded {
    /// The limit, as the contract names it.
    pub limit: &'static str,
    /// Its value.
    pub max: u32,
    /// What the request holds.
    pub given: usize,
}

impl Exceeded {
    /// The one-line message for the request's error.
    pub fn message(&self, what: &str) -> String {
        format!("{} {what}, over the contract's `{}` of {}", self.given, self.limit, self.max)
    }
}

/// `Ok` when `given` is within `max`, else the limit exceeded.
pub fn within(limit: &'static str, max: u32, given: usize) -> Result<(), Exceeded> {
    if usize::try_from(max).is_ok_and(|max| given <= max) { Ok(()) } else { Err(Exceeded { limit, max, given }) }
}

/// The `[limits]` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    entries_per_turn: Option<Spanned<u32>>,
    acts_per_turn: Option<Spanned<u32>>,
    answers_per_turn: Option<Spanned<u32>>,
    calls_per_turn: Option<Spanned<u32>>,
    claims_per_draft: Option<Spanned<u32>>,
    characters_per_entry: Option<Spanned<u32>>,
    characters_per_draft: Option<Spanned<u32>>,
    findings_per_reply: Option<Spanned<u32>>,
}

/// Checks the section: each limit given is above zero (a limit of zero would refuse every
/// request that uses the thing it bounds, which is a mistake, not a policy).
pub(crate) fn compile(at: &Locator<'_>, raw: Option<&RawLimits>) -> Result<Limits, ContractError> {
    let mut limits = Limits::default();
    let Some(raw) = raw else { return Ok(limits) };
    let fields: [(&str, &Option<Spanned<u32>>, &mut u32); 8] = [
        ("entries_per_turn", &raw.entries_per_turn, &mut limits.entries_per_turn),
        ("acts_per_turn", &raw.acts_per_turn, &mut limits.acts_per_turn),
        ("answers_per_turn", &raw.answers_per_turn, &mut limits.answers_per_turn),
        ("calls_per_turn", &raw.calls_per_turn, &mut limits.calls_per_turn),
        ("claims_per_draft", &raw.claims_per_draft, &mut limits.claims_per_draft),
        ("characters_per_entry", &raw.characters_per_entry, &mut limits.characters_per_entry),
        ("characters_per_draft", &raw.characters_per_draft, &mut limits.characters_per_draft),
        ("findings_per_reply", &raw.findings_per_reply, &mut limits.findings_per_reply),
    ];
    for (name, given, slot) in fields {
        let Some(given) = given else { continue };
        if *given.get_ref() == 0 {
            return Err(at.error(given.span().start, ContractErrorKind::BadLimit(format!("`{name}` must be above 0"))));
        }
        *slot = *given.get_ref();
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_at_its_limit_is_within_and_one_more_is_not() {
        assert_eq!(within("limits.acts_per_turn", 2, 2), Ok(()));
        let over = within("limits.acts_per_turn", 2, 3).unwrap_err();
        assert_eq!(over.message("acts"), "3 acts, over the contract's `limits.acts_per_turn` of 2");
    }
}
