//! The replay record: what a turn's decision read and was answered, stored beside the turn so
//! that [`Engine::replay`](crate::Engine::replay) decides it again with no store and no model.
//! It is written and read through [`ReplayRecord`] alone; its JSON is the one every earlier
//! engine wrote.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use warrant_core::check::{CheckAnswers, CheckRequest};
use warrant_core::guard::FindingOut;
use warrant_core::outbound::GateAnswers;
use warrant_core::turn::{FactsRead, OutboundTrace, RecordedFacts, RowRef};
use warrant_model::ModelCall;
use warrant_store::StoredTurn;

use crate::EngineError;

/// The version of the replay record this engine writes and the newest it reads. A record
/// stored without a `version` field is version 1, and version 1 is written without one, so its
/// JSON is the one written before records were versioned.
pub const REPLAY_VERSION: u32 = 1;

/// A stored turn's replay record. `contract`, `facts` and `conflicts` are in every record; the
/// other fields came later (the guard's findings, the model checks, the outbound gate), and a
/// record written before them reads with none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// The record's version (see [`REPLAY_VERSION`]).
    #[serde(default = "first_version", skip_serializing_if = "is_first_version")]
    pub version: u32,
    /// The contract's hash, as on the response.
    pub contract: String,
    /// Every fact the decision read.
    pub facts: FactsRead,
    /// The rows whose commit conflicted before this decision, decided again as lost.
    pub conflicts: BTreeSet<RowRef>,
    /// The guard's findings, as on the response.
    #[serde(default)]
    pub findings: Vec<FindingOut>,
    /// The semantic checks the decision needed.
    #[serde(default)]
    pub checks: Vec<CheckRequest>,
    /// The answers of those checks that the decision read.
    #[serde(default)]
    pub answers: CheckAnswers,
    /// Every model call made for the turn.
    #[serde(default)]
    pub model_calls: Vec<ModelCall>,
    /// The outbound gate's questions and verdicts about the reply.
    #[serde(default)]
    pub outbound: OutboundTrace,
    /// The answers of the outbound gate's questions that the decision read.
    #[serde(default)]
    pub outbound_answers: GateAnswers,
}

fn first_version() -> u32 {
    1
}

fn is_first_version(version: &u32) -> bool {
    *version == 1
}

impl ReplayRecord {
    /// The replay record of `stored`. A missing field, a field that does not read, or a version
    /// newer than [`REPLAY_VERSION`] is [`EngineError::Corrupt`], naming the field or version.
    pub fn of(stored: &StoredTurn) -> Result<ReplayRecord, EngineError> {
        let corrupt = |message: String| EngineError::Corrupt {
            what: format!("replay record of turn `{}`", stored.turn),
            message,
        };
        let record = ReplayRecord::deserialize(&stored.replay).map_err(|e| corrupt(e.to_string()))?;
        if record.version > REPLAY_VERSION {
            return Err(corrupt(format!(
                "version {} is newer than this engine reads (up to {REPLAY_VERSION})",
                record.version
            )));
        }
        Ok(record)
    }

    /// The facts the decision read, served again.
    pub(crate) fn recorded_facts(&self) -> RecordedFacts {
        RecordedFacts::new(&self.facts)
    }
}
