//! Negative controls and positives as data: one JSON case per line, each with the operations it
//! must yield (or the input error it must raise) and why. The runner checks the class of each
//! case too: a case that must stay inert and performs anything is a boundary failure, the worst
//! kind, and is named as such.

use std::fmt;

use serde::Deserialize;

use warrant_contract::contract::Contract;
use warrant_contract::reason::ReasonCode;

/// One case as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnCase {
    /// The source kind of the text.
    pub kind: String,
    /// The text to read.
    pub text: String,
    /// The operations the text must perform, in order (empty for a negative control).
    #[serde(default)]
    pub expect: Option<Vec<String>>,
    /// The input error code the case must raise instead.
    #[serde(default)]
    pub expect_error: Option<String>,
    /// The rejection reason the case must report, where it matters.
    #[serde(default)]
    pub reason: Option<String>,
    /// What the case is for.
    pub why: String,
}

/// How a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnFailure {
    /// A negative control performed operations: the boundary has failed.
    Boundary {
        /// The operations performed, by name.
        got: Vec<String>,
    },
    /// A positive case performed other operations than expected (or none).
    WrongOperations {
        /// The operations the case names.
        expected: Vec<String>,
        /// The operations performed.
        got: Vec<String>,
        /// The reason code of the rejection, if the gate rejected the text.
        rejection: Option<String>,
    },
    /// The rejection reason differs from the expected one.
    WrongReason {
        /// The reason code the case names.
        expected: String,
        /// The reason code given, if any.
        got: Option<String>,
    },
    /// An input error was expected and the text was read instead, or the other way around.
    WrongError {
        /// The input error the case names, if any.
        expected: Option<String>,
        /// The input error raised, if any.
        got: Option<String>,
    },
    /// The case itself is malformed.
    BadCase(String),
}

impl fmt::Display for TurnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnFailure::Boundary { got } => {
                write!(f, "boundary failure: a negative control performed {got:?}")
            }
            TurnFailure::WrongOperations { expected, got, rejection } => {
                write!(f, "expected operations {expected:?}, got {got:?}")?;
                if let Some(reason) = rejection {
                    write!(f, " (rejected: {reason})")?;
                }
                Ok(())
            }
            TurnFailure::WrongReason { expected, got } => {
                write!(f, "expected rejection `{expected}`, got {}", got.as_deref().unwrap_or("none"))
            }
            TurnFailure::WrongError { expected, got } => write!(
                f,
                "expected input error {}, got {}",
                expected.as_deref().unwrap_or("none"),
                got.as_deref().unwrap_or("none")
            ),
            TurnFailure::BadCase(message) => write!(f, "malformed case: {message}"),
        }
    }
}

/// Parses one corpus line.
pub fn parse_case(line: &str) -> Result<TurnCase, TurnFailure> {
    let case: TurnCase = serde_json::from_str(line).map_err(|e| TurnFailure::BadCase(e.to_string()))?;
    match (&case.expect, &case.expect_error) {
        (Some(_), Some(_)) => Err(TurnFailure::BadCase("both `expect` and `expect_error` are set".into())),
        (None, None) => Err(TurnFailure::BadCase("one of `expect` or `expect_error` is required".into())),
        _ => {
            if let Some(reason) = &case.reason
                && ReasonCode::from_code(reason).is_none()
            {
                return Err(TurnFailure::BadCase(format!("`reason` `{reason}` is not a reason code")));
            }
            Ok(case)
        }
    }
}

/// Runs one case against the contract.
pub fn run_case(contract: &Contract, case: &TurnCase) -> Result<(), TurnFailure> {
    let Some(kind) = contract.kinds().get(&case.kind) else {
        let got = Some(ReasonCode::UnknownSourceKind.as_str().to_owned());
        return if case.expect_error == got {
            Ok(())
        } else {
            Err(TurnFailure::WrongError { expected: case.expect_error.clone(), got })
        };
    };
    let Some(expected) = &case.expect else {
        return Err(TurnFailure::WrongError { expected: case.expect_error.clone(), got: None });
    };
    let reading = contract.score().read(kind, &case.text);
    let got: Vec<String> = reading.operations.iter().map(|o| o.clause.op().to_owned()).collect();
    let rejection = reading.rejection.as_ref().map(|r| r.reason.as_str().to_owned());
    if expected.is_empty() && !got.is_empty() {
        return Err(TurnFailure::Boundary { got });
    }
    if *expected != got {
        return Err(TurnFailure::WrongOperations { expected: expected.clone(), got, rejection });
    }
    if let Some(reason) = &case.reason
        && rejection.as_deref() != Some(reason)
    {
        return Err(TurnFailure::WrongReason { expected: reason.clone(), got: rejection });
    }
    Ok(())
}

/// The tally of a corpus run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnTally {
    /// Cases that held.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Of the failures, negative controls that performed something.
    pub boundary: usize,
}

impl TurnTally {
    /// Counts one result.
    pub fn count(&mut self, result: &Result<(), TurnFailure>) {
        match result {
            Ok(()) => self.passed += 1,
            Err(failure) => {
                self.failed += 1;
                if matches!(failure, TurnFailure::Boundary { .. }) {
                    self.boundary += 1;
                }
            }
        }
    }
}

impl fmt::Display for TurnTally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)
    }
}
