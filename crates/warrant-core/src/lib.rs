//! warrant's pure decisions: text, the contract, the clause gate and the values and verdicts
//! built on them. This crate does no IO: no clock, environment, files, network or database.
//! Everything it needs from the world arrives as an argument, so the same inputs always give
//! the same decisions, and a replay can prove it.

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod args;
pub mod change;
#[cfg(feature = "corpus")]
pub mod corpus;
pub mod effect;
pub mod facts;
pub mod guard;
pub mod outbound;
pub mod report;
pub mod request;
pub mod tools;
pub mod turn;
pub mod visibility;
pub mod workspace;

// The contract and its foundations live in warrant-contract, below this crate; they keep the
// paths they had here, so that the crates above need not know the split.
pub use warrant_contract::request::wire;
pub use warrant_contract::{
    check, confirm, contract, date, expr, expressions, id, ladder, limits, money, operation, pointer, policy,
    policy_schema, reason, records, schema, score, source, text, verdict,
};

pub use warrant_contract::contract::{Contract, ContractError, ContractErrorKind};
pub use warrant_contract::reason::ReasonCode;
pub use warrant_contract::score::{Clause, Performed, Reading, Rejection, Score};
pub use warrant_contract::source::{KindSet, SourceKind, SourceKinds};

// The modules grouped by concern keep their old paths.
#[cfg(feature = "corpus")]
pub use guard::corpus as guard_corpus;
pub use outbound::claim;
#[cfg(feature = "corpus")]
pub use outbound::corpus as outbound_corpus;
