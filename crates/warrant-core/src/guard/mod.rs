//! The announcement guard: its compiled form is the contract's (`warrant_contract::guard`,
//! re-exported here whole); what core adds is the adversarial corpus the guard is run on.

pub use warrant_contract::guard::*;

#[cfg(feature = "corpus")]
pub mod corpus;
