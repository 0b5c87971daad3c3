//! What the gate decides for an act, and why: the vocabulary every check shares.

use serde::{Deserialize, Serialize};

use crate::reason::ReasonCode;

/// What the gate decided for an act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Authorized: an effect is committed.
    Commit,
    /// Waits for the user's confirmation (an interaction).
    Hold,
    /// A question to the user (or a repair) instead.
    Ask,
    /// Refused.
    Refuse,
}

/// Why, with the field and rule at fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// The stable code.
    pub code: ReasonCode,
    /// The request field at fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The policy rules that forbade, by `@id`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<String>,
    /// A one-line explanation for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A check that took something away: the verdict it forces and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `Ask` or `Refuse`.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
}

impl Finding {
    /// A refusal for `code`.
    pub fn refuse(code: ReasonCode) -> Finding {
        Finding { verdict: Verdict::Refuse, reason: Reason { code, field: None, policies: Vec::new(), detail: None } }
    }

    /// A question for `code`.
    pub fn ask(code: ReasonCode) -> Finding {
        Finding { verdict: Verdict::Ask, reason: Reason { code, field: None, policies: Vec::new(), detail: None } }
    }

    /// With the field at fault.
    pub fn field(mut self, field: String) -> Finding {
        self.reason.field = Some(field);
        self
    }

    /// With the field at fault, unless one is already named.
    pub fn field_if_absent(mut self, field: String) -> Finding {
        if self.reason.field.is_none() {
            self.reason.field = Some(field);
        }
        self
    }

    /// With an explanation.
    pub fn detail(mut self, detail: String) -> Finding {
        self.reason.detail = Some(detail.replace('\n', " "));
        self
    }
}
