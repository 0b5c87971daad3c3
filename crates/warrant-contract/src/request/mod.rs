//! A turn request's parts as values: the body's shapes, the error that refuses a request whole,
//! and the strict wire read both are read with. Checking a request against a contract is
//! warrant-core's (`warrant_core::request`).

pub mod body;
pub mod error;
pub mod wire;

pub use body::{ActRequest, AnswerRequest, Call, Draft, Entry, TurnRequest};
pub use error::RequestError;
