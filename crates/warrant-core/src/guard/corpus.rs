//! The guard's adversarial corpus as data: one JSON case per line, a reply, the tools called in
//! its turn, whether the announcement guard must flag it, its class and why. A case that must
//! stay clear and is flagged is an overreach, the failure that would put words in the model's
//! mouth, and is named as such.
//!
//! Its tally is counted, never stated (as the ladder's evidence, `warrant_contract::ladder`):
//!
//! ```compile_fail
//! use warrant_core::guard_corpus::GuardTally;
//! let tally = GuardTally { passed: 138, ..GuardTally::default() };
//! ```

use std::fmt;

use serde::Deserialize;

use warrant_contract::guard::AnnouncementGuard;
use warrant_contract::ladder::CorpusRun;

/// What a case expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardExpect {
    /// At least one sentence must be flagged.
    Flag,
    /// Nothing may be flagged.
    Clear,
}

/// One case as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardCase {
    /// The reply.
    pub text: String,
    /// The tools called in the turn.
    #[serde(default)]
    pub calls: Vec<String>,
    /// Whether it must flag.
    pub expect: GuardExpect,
    /// Its class (`bare`, `habit`, `offer`, `deferral`, `condition`, `reported`, `quotation`,
    /// `called`, `unknown_tool`, …).
    pub class: String,
    /// What the case is for.
    pub why: String,
}

/// How a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardFailure {
    /// A case that must stay clear was flagged.
    Overreach {
        /// The sentences the guard flagged.
        sentences: Vec<String>,
    },
    /// A case that must flag was not.
    Missed,
    /// The case is malformed.
    BadCase(String),
}

impl fmt::Display for GuardFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardFailure::Overreach { sentences } => {
                write!(f, "overreach: a case that must stay clear flagged {sentences:?}")
            }
            GuardFailure::Missed => f.write_str("missed: a case that must flag was not flagged"),
            GuardFailure::BadCase(message) => write!(f, "malformed case: {message}"),
        }
    }
}

/// Parses one line.
pub fn parse_case(line: &str) -> Result<GuardCase, GuardFailure> {
    let case: GuardCase = serde_json::from_str(line).map_err(|e| GuardFailure::BadCase(e.to_string()))?;
    if case.why.trim().is_empty() || case.class.trim().is_empty() {
        return Err(GuardFailure::BadCase("`why` and `class` must say something".into()));
    }
    Ok(case)
}

/// Runs one case.
pub fn run_case(guard: &AnnouncementGuard, case: &GuardCase) -> Result<(), GuardFailure> {
    let flags = guard.flags(&case.text, case.calls.iter().map(String::as_str));
    match (case.expect, flags.is_empty()) {
        (GuardExpect::Flag, false) | (GuardExpect::Clear, true) => Ok(()),
        (GuardExpect::Flag, true) => Err(GuardFailure::Missed),
        (GuardExpect::Clear, false) => {
            let nfc = warrant_contract::text::nfc(&case.text);
            Err(GuardFailure::Overreach {
                sentences: flags.iter().filter_map(|f| nfc.get(f.span.clone()).map(str::to_owned)).collect(),
            })
        }
    }
}

/// The tally of a run. Its counts are only what [`run_text`] counted, so the [`CorpusRun`] it
/// hands to the ladder is evidence of a run, not a number someone wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuardTally {
    passed: u64,
    failed: u64,
    overreach: u64,
    must_flag: u64,
    must_clear: u64,
}

impl GuardTally {
    /// Cases passed.
    pub fn passed(&self) -> u64 {
        self.passed
    }

    /// Cases failed (any kind).
    pub fn failed(&self) -> u64 {
        self.failed
    }

    /// Of those, overreaches.
    pub fn overreach(&self) -> u64 {
        self.overreach
    }

    /// Cases expecting a flag.
    pub fn must_flag(&self) -> u64 {
        self.must_flag
    }

    /// Cases expecting none.
    pub fn must_clear(&self) -> u64 {
        self.must_clear
    }

    /// Adds the tally of another file of the same run.
    pub fn add(&mut self, other: GuardTally) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.overreach += other.overreach;
        self.must_flag += other.must_flag;
        self.must_clear += other.must_clear;
    }

    /// Counts one case's result.
    fn count(&mut self, case: Option<&GuardCase>, result: &Result<(), GuardFailure>) {
        match case.map(|c| c.expect) {
            Some(GuardExpect::Flag) => self.must_flag += 1,
            Some(GuardExpect::Clear) => self.must_clear += 1,
            None => {}
        }
        match result {
            Ok(()) => self.passed += 1,
            Err(failure) => {
                self.failed += 1;
                if matches!(failure, GuardFailure::Overreach { .. }) {
                    self.overreach += 1;
                }
            }
        }
    }

    /// The run as the ladder takes it.
    pub fn run(&self) -> CorpusRun {
        CorpusRun::counted(self.passed, self.failed)
    }
}

impl fmt::Display for GuardTally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)
    }
}

/// Runs every case of a corpus text (JSON lines), calling `report` with each failure and its
/// 1-based line number.
pub fn run_text(
    guard: &AnnouncementGuard,
    text: &str,
    mut report: impl FnMut(usize, Option<&GuardCase>, &GuardFailure),
) -> GuardTally {
    let mut tally = GuardTally::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (case, result) = match parse_case(line) {
            Ok(case) => {
                let result = run_case(guard, &case);
                (Some(case), result)
            }
            Err(failure) => (None, Err(failure)),
        };
        if let Err(failure) = &result {
            report(i + 1, case.as_ref(), failure);
        }
        tally.count(case.as_ref(), &result);
    }
    tally
}
