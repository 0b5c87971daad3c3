//! Effects the contract shows will fit their rows: before a consequential act is held, its
//! effect is tried on the turn's rows and every row it changed is checked against its table
//! (`turn::effects_fit_schemas`). For an effect whose every step writes a declared field of a
//! typed table with a value that fits it by construction (an amount into a money field) or by
//! one check of the value written (a literal, an argument, a derived value), the trial's answer
//! is known without the trial, once the rows it writes fit as read. [`SureFit`] is what the
//! contract shows when it loads (`operation`); what is left is checked when an act is decided
//! (`turn`). Where that does not hold, the effect is tried as before: the shortcut answers
//! only where the trial would answer the same, "fits".

use serde_json::Value;

use crate::schema::Field;

/// An effect whose steps the contract shows will leave its rows fitting, given the values left
/// to check when the act is decided.
#[derive(Debug, Clone, PartialEq)]
pub struct SureFit {
    /// Where the rows the steps write are named: `actor`, or a record or records argument.
    pub roots: Vec<String>,
    /// The values the steps write that only the act gives, each with the field it is written to.
    pub values: Vec<(Source, Field)>,
}

/// A value a step writes, as it will be written.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A literal of the contract.
    Literal(Value),
    /// An argument's checked value, as a row holds it.
    Arg(String),
    /// An argument's checked value as the act gives it (`set` with `args` writes it so).
    ArgAsGiven(String),
    /// A derived quantity, as is.
    Derived(String),
}
