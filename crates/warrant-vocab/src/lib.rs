//! The vocabulary warrant-core and warrant-model share, and nothing else: the semantic checks as
//! data (the question a decision needs answered and its answer), the model tasks by name, the
//! contract's `[model]` section, and the numbered rendering of a message with the pointer a model
//! sends back. No Cedar, no TOML and no word segmenter: the rule that cuts a text into words is
//! given by the caller ([`pointer::WordRule`]); warrant-core gives UAX #29. warrant-core
//! re-exports every item here at its old path, so `warrant_core::check::CheckRequest` and
//! `warrant_vocab::check::CheckRequest` are one type.

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod check;
pub mod id;
pub mod model;
pub mod pointer;
pub mod task;
pub mod text;

pub use check::{CheckAnswer, CheckAnswers, CheckFailure, CheckRequest, CheckVerdict};
pub use model::{ModelConfig, TaskConfig};
pub use pointer::{NumberedText, TextPointer, WordRule};
pub use task::ModelTask;
