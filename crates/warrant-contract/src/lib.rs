//! The contract of warrant, loaded and compiled: its raw TOML forms, the compilers that check
//! them, and the values they make (the score, operations, records and their schema, claims, the
//! announcement guard, limits, model sections and the sure-fit proof), with the foundations those
//! need (text, money, dates, CEL, pointers, reason codes, the strict wire read of a request's
//! parts). Deciding a turn with them is warrant-core's, above this crate.
//!
//! This crate does no IO: no clock, environment, files, network or database. A contract's
//! companion files arrive through [`contract::ContractFiles`], which the caller implements.

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod check;
pub mod claim;
pub mod confirm;
pub mod contract;
pub mod date;
pub mod error;
pub mod expr;
pub mod expressions;
pub mod guard;
pub mod id;
pub mod ladder;
pub mod limits;
pub mod money;
pub mod operation;
pub mod pointer;
pub mod policy;
mod policy_reads;
pub mod policy_schema;
pub mod reason;
pub mod records;
pub mod request;
pub mod schema;
pub mod score;
pub mod source;
pub mod sure_fit;
pub mod text;
pub mod verdict;
