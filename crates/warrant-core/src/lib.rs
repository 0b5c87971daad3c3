//! warrant's pure decisions: text, the contract, the clause gate and the values and verdicts
//! built on them. This crate does no IO: no clock, environment, files, network or database.
//! Everything it needs from the world arrives as an argument, so the same inputs always give
//! the same decisions, and a replay can prove it.

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod args;
pub mod change;
pub mod check;
pub mod confirm;
pub mod contract;
#[cfg(feature = "corpus")]
pub mod corpus;
pub mod date;
pub mod effect;
pub mod expr;
pub mod expressions;
pub mod facts;
pub mod guard;
pub mod id;
pub mod ladder;
pub mod limits;
pub mod money;
pub mod operation;
pub mod outbound;
pub mod pointer;
pub mod policy;
mod policy_reads;
pub mod policy_schema;
pub mod reason;
pub mod records;
pub mod report;
pub mod request;
pub mod schema;
pub mod score;
pub mod source;
mod sure_fit;
pub mod text;
pub mod tools;
pub mod turn;
pub mod verdict;
pub mod visibility;
pub mod wire;
pub mod workspace;

pub use contract::{Contract, ContractError, ContractErrorKind};
pub use reason::ReasonCode;
pub use score::{Clause, Performed, Reading, Rejection, Score};
pub use source::{KindSet, SourceKind, SourceKinds};

// The modules grouped by concern keep their old paths.
#[cfg(feature = "corpus")]
pub use guard::corpus as guard_corpus;
pub use outbound::claim;
#[cfg(feature = "corpus")]
pub use outbound::corpus as outbound_corpus;
