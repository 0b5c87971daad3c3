//! The turn request's parts as they arrive on the wire, read with [`crate::request::wire`]'s strict readers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A turn as the agent sends it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    /// The conversation the turn belongs to.
    pub conversation: String,
    /// The turn's idempotency key: a turn seen before returns its recorded result.
    pub turn: String,
    /// The authenticated actor (for the retail example, a user id).
    pub actor: String,
    /// The turn's instant, RFC 3339.
    pub at: String,
    /// The IANA time zone the actor is in.
    pub time_zone: String,
    /// The BCP 47 locale.
    pub locale: String,
    /// Texts of the turn, each with its source kind.
    #[serde(default, deserialize_with = "crate::request::wire::objects")]
    pub entries: Vec<Entry>,
    /// Operations the model proposes.
    #[serde(default, deserialize_with = "crate::request::wire::objects")]
    pub acts: Vec<ActRequest>,
    /// Answers to pending interactions, by option id.
    #[serde(default, deserialize_with = "crate::request::wire::objects")]
    pub answers: Vec<AnswerRequest>,
    /// Tool calls the agent made in the turn.
    #[serde(default, deserialize_with = "crate::request::wire::objects")]
    pub calls: Vec<Call>,
    /// The reply the agent wants to send.
    #[serde(default, deserialize_with = "crate::request::wire::optional_object")]
    pub draft: Option<Draft>,
}

/// One text with its source kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The source kind, from the contract's closed set.
    pub kind: String,
    /// The text.
    pub text: String,
}

/// An operation the model proposes.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActRequest {
    /// The operation.
    pub op: String,
    /// Its arguments, by name.
    #[serde(default, deserialize_with = "crate::request::wire::strict_map")]
    pub args: Map<String, Value>,
    /// The source kind proposing it; defaults to the contract's `sources.acts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// An answer to an interaction.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The interaction's id, as the server issued it.
    pub interaction: String,
    /// The option id chosen.
    pub option: String,
}

/// A tool call the agent made.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    #[serde(default, deserialize_with = "crate::request::wire::strict_map")]
    pub args: Map<String, Value>,
}

/// A draft reply with its typed claims.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    /// The text.
    pub text: String,
    /// The claims it makes.
    #[serde(default, deserialize_with = "crate::request::wire::strict_values")]
    pub claims: Vec<Value>,
}
