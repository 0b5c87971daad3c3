//! The error that refuses a turn request whole.

use serde::Serialize;

use crate::reason::ReasonCode;

/// A request refused whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{code}: `{field}`: {message}")]
pub struct RequestError {
    /// The stable code.
    pub code: ReasonCode,
    /// The path of the field at fault (`acts[0].args`, `entries[2].kind`, `at`).
    pub field: String,
    /// What is wrong, on one line.
    pub message: String,
}
