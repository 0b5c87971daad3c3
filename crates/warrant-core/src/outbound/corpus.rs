//! The outbound gate's regression cases as data (`corpus/outbound`): a draft, the ledger and
//! records it is checked against, the model answers recorded for its questions (a question the
//! gate does not ask is never answered), and the basis it must go out on, on each of the paths
//! listed. Seed 003's incident is one of them: a case that
//! must go out as fallback copy and is cleared or rewritten is a leak, named as such.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use crate::facts::{EventRecord, FactError};
use crate::outbound::{self, Basis, GateAnswer, GateAnswers, LedgerFacts, Outgoing};
use crate::request::Draft;
use warrant_contract::check::{CheckFailure, CheckVerdict, ModelTask};
use warrant_contract::claim::PathName;
use warrant_contract::contract::Contract;
use warrant_contract::records::Record;

/// A recorded answer of the coverage check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageAnswer {
    /// The text claims nothing beyond its list.
    Pass,
    /// It claims more.
    Block,
    /// The model cannot tell.
    Unsure,
    /// The check could not run.
    Failed,
}

/// The model answers a case recorded, by the role of the question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseAnswers {
    /// The coverage check of the draft.
    pub draft_coverage: Option<CoverageAnswer>,
    /// The rewrite's text.
    pub rewrite: Option<String>,
    /// The coverage check of the rewrite.
    pub rewrite_coverage: Option<CoverageAnswer>,
}

/// What a case expects.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundExpect {
    /// The basis it goes out on.
    pub basis: Basis,
    /// Reason codes the message must carry, in order (others may come between them).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// The exact text that must go out, where the case pins it (a rewrite composed by code).
    #[serde(default)]
    pub text: Option<String>,
}

/// One case as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundCase {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub why: String,
    /// The paths it runs on; each must give the expected basis.
    pub paths: Vec<PathName>,
    /// The locale.
    pub locale: String,
    /// The conversation.
    pub conversation: String,
    /// The recipient.
    pub actor: String,
    /// The instant.
    pub at: String,
    /// The rows of the authoritative record at send time.
    #[serde(default)]
    pub records: Vec<Record>,
    /// The conversation's committed events.
    #[serde(default)]
    pub events: Vec<EventRecord>,
    /// The draft.
    pub draft: Draft,
    /// The recorded model answers; a question without one counts as failed.
    #[serde(default)]
    pub answers: CaseAnswers,
    /// What must go out.
    pub expect: OutboundExpect,
}

/// How a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboundFailure {
    /// A case that must go out as fallback copy went out as the draft or a rewrite.
    Leak {
        /// The path the case ran on.
        path: PathName,
        /// The basis it went out on.
        basis: Basis,
        /// The text that went out.
        text: String,
    },
    /// It went out on another basis than expected.
    Basis {
        /// The path the case ran on.
        path: PathName,
        /// The basis the case names.
        expected: Basis,
        /// The basis it went out on.
        got: Basis,
        /// The reason codes the gate gave.
        reasons: Vec<String>,
    },
    /// An expected reason is missing.
    Reasons {
        /// The path the case ran on.
        path: PathName,
        /// The reason codes the case names.
        expected: Vec<String>,
        /// The reason codes the gate gave.
        got: Vec<String>,
    },
    /// It went out with another text than the case pins.
    Text {
        /// The path the case ran on.
        path: PathName,
        /// The text the case pins.
        expected: String,
        /// The text that went out.
        got: String,
    },
    /// The case is malformed.
    BadCase(String),
}

impl fmt::Display for OutboundFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboundFailure::Leak { path, basis, text } => {
                write!(f, "leak: on path `{}` a draft that must fall back went out {basis:?}: {text:?}", path.as_str())
            }
            OutboundFailure::Basis { path, expected, got, reasons } => {
                write!(f, "on path `{}` expected {expected:?}, got {got:?} ({})", path.as_str(), reasons.join(", "))
            }
            OutboundFailure::Reasons { path, expected, got } => {
                write!(f, "on path `{}` expected reasons {expected:?} in order, got {got:?}", path.as_str())
            }
            OutboundFailure::Text { path, expected, got } => {
                write!(f, "on path `{}` expected the text {expected:?}, got {got:?}", path.as_str())
            }
            OutboundFailure::BadCase(message) => write!(f, "malformed case: {message}"),
        }
    }
}

/// Parses one line.
pub fn parse_case(line: &str) -> Result<OutboundCase, OutboundFailure> {
    let case: OutboundCase = serde_json::from_str(line).map_err(|e| OutboundFailure::BadCase(e.to_string()))?;
    if case.why.trim().is_empty() || case.name.trim().is_empty() || case.paths.is_empty() {
        return Err(OutboundFailure::BadCase("`name`, `why` and `paths` must say something".into()));
    }
    Ok(case)
}

struct CaseLedger<'c>(&'c OutboundCase);

impl LedgerFacts for CaseLedger<'_> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.0.records.iter().find(|r| r.table == table && r.key == key).cloned())
    }

    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        Ok(self.0.events.iter().filter(|e| e.kind == kind).cloned().collect())
    }
}

fn coverage(answer: Option<CoverageAnswer>) -> Option<GateAnswer> {
    let verdict = match answer? {
        CoverageAnswer::Pass => CheckVerdict::Pass,
        CoverageAnswer::Block => CheckVerdict::Block,
        CoverageAnswer::Unsure => CheckVerdict::Ask,
        CoverageAnswer::Failed => {
            return Some(GateAnswer::Failed { failure: CheckFailure::Provider, detail: "recorded as failed".into() });
        }
    };
    Some(GateAnswer::Verdict { verdict })
}

/// The gate's answers for `case`, found by asking the gate until it asks nothing new.
fn answers(contract: &Contract, case: &OutboundCase, outgoing: &Outgoing<'_>) -> Result<GateAnswers, OutboundFailure> {
    let mut answers = GateAnswers::new();
    let mut skipped: BTreeMap<String, ()> = BTreeMap::new();
    for _ in 0..4 {
        let gate = outbound::clear(contract, outgoing, &CaseLedger(case), &answers)
            .map_err(|e| OutboundFailure::BadCase(e.to_string()))?;
        let open: Vec<_> = gate.unanswered(&answers).into_iter().filter(|q| !skipped.contains_key(&q.id)).collect();
        if open.is_empty() {
            break;
        }
        for question in open {
            let answer = match (question.task, &question.text) {
                (ModelTask::Rewrite, _) => case.answers.rewrite.clone().map(|text| GateAnswer::Rewritten { text }),
                (_, Some(text)) if *text == case.draft.text => coverage(case.answers.draft_coverage),
                _ => coverage(case.answers.rewrite_coverage),
            };
            match answer {
                Some(answer) => {
                    answers.insert(question.id, answer);
                }
                None => {
                    skipped.insert(question.id, ());
                }
            }
        }
    }
    Ok(answers)
}

/// Runs `case` on each of its paths.
pub fn run_case(contract: &Contract, case: &OutboundCase) -> Result<(), OutboundFailure> {
    for path in &case.paths {
        let outgoing = Outgoing {
            conversation: &case.conversation,
            actor: &case.actor,
            path: *path,
            channel: None,
            locale: &case.locale,
            at: &case.at,
            draft: &case.draft,
        };
        let answers = answers(contract, case, &outgoing)?;
        let gate = outbound::clear(contract, &outgoing, &CaseLedger(case), &answers)
            .map_err(|e| OutboundFailure::BadCase(e.to_string()))?;
        let message = &gate.message;
        let got: Vec<String> = message.reasons().iter().map(|r| r.code.as_str().to_owned()).collect();
        if case.expect.basis == Basis::Fallback && message.basis() != Basis::Fallback {
            return Err(OutboundFailure::Leak { path: *path, basis: message.basis(), text: message.text().to_owned() });
        }
        if message.basis() != case.expect.basis {
            return Err(OutboundFailure::Basis {
                path: *path,
                expected: case.expect.basis,
                got: message.basis(),
                reasons: got,
            });
        }
        let mut rest = got.iter();
        if !case.expect.reasons.iter().all(|want| rest.any(|g| g == want)) {
            return Err(OutboundFailure::Reasons { path: *path, expected: case.expect.reasons.clone(), got });
        }
        if let Some(text) = case.expect.text.as_ref().filter(|t| *t != message.text()) {
            return Err(OutboundFailure::Text { path: *path, expected: text.clone(), got: message.text().to_owned() });
        }
    }
    Ok(())
}
