//! The outbound gate with IO (DESIGN.md §7): an outbound request's draft checked against the
//! store's records and the conversation's ledger, its coverage checks and its one rewrite run as
//! model tasks, and the cleared message returned with its replay record. Without a model, a
//! question the gate needs cannot be answered, which counts as a failed check: an unbacked draft
//! goes out as fallback copy. A replay decides again from the record alone, with no store and
//! no model, and must give the same message byte for byte.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

use warrant_core::Contract;
use warrant_core::check::CheckFailure;
use warrant_core::claim::CLAIMS_COVERAGE;
use warrant_core::outbound::{
    self, ClaimVerdict, ClearedMessage, GateAnswer, GateAnswers, LedgerFacts, LedgerRead,
    OutboundRequest, Outgoing, Question, REWRITE, RecordedLedger,
};
use warrant_core::records::Record;
use warrant_core::request::RequestError;
use warrant_core::turn::{EventRecord, FactError};
use warrant_model::tasks::{ClaimsCoverage, ClaimsCoverageInput, Rewrite, RewriteInput};
use warrant_model::{ModelCall, Outcome, Runner, TurnBudget};
use warrant_store::Store;

use crate::model::ModelSetup;
use crate::{Engine, EngineError};

/// How many rounds of questions one message may take: the draft's coverage, the rewrite, the
/// rewrite's coverage.
pub(crate) const ROUNDS: usize = 3;

/// Everything about one outbound message, enough to decide it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboundRecord {
    /// The hash of the contract that decided.
    pub contract: String,
    /// The request, draft included.
    pub request: OutboundRequest,
    /// Every claim's backing verdict.
    pub verdicts: Vec<ClaimVerdict>,
    /// The model questions the gate asked.
    pub questions: Vec<Question>,
    /// Their answers.
    pub answers: GateAnswers,
    /// Every model call made for them, with its prompt version, request and answer.
    pub model_calls: Vec<ModelCall>,
    /// The facts the gate read.
    pub facts: LedgerRead,
    /// The message, as sent.
    pub message: serde_json::Value,
}

/// A cleared message and its replay record.
#[derive(Debug, Clone)]
pub struct OutboundRun {
    /// What may be sent.
    pub message: ClearedMessage,
    /// Why.
    pub record: OutboundRecord,
}

/// The result of an outbound request.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one result per message, returned once"
)]
pub enum OutboundResult {
    /// The gate decided what goes out.
    Cleared(OutboundRun),
    /// The request was refused whole; nothing goes out.
    Rejected(RequestError),
}

/// The store's rows and the conversation's events, for the gate.
pub(crate) struct StoreLedger<'a, S: Store> {
    pub(crate) store: RefCell<&'a mut S>,
    pub(crate) conversation: &'a str,
}

impl<S: Store> LedgerFacts for StoreLedger<'_, S> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let mut store = self
            .store
            .try_borrow_mut()
            .map_err(|e| FactError(e.to_string()))?;
        let found = store
            .record(table, key)
            .map_err(|e| FactError(e.to_string()))?;
        Ok(found.map(|r| Record {
            table: r.table,
            key: r.key,
            revision: r.revision,
            value: r.value,
        }))
    }

    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let mut store = self
            .store
            .try_borrow_mut()
            .map_err(|e| FactError(e.to_string()))?;
        let rows = store
            .events(Some(self.conversation))
            .map_err(|e| FactError(e.to_string()))?;
        Ok(rows
            .into_iter()
            .filter(|e| e.kind == kind)
            .map(|e| EventRecord {
                id: e.id,
                kind: e.kind,
                payload: e.payload,
                effect: e.effect,
            })
            .collect())
    }
}

/// Answers the gate's questions through the model; without one, each fails as unfinished.
pub(crate) fn answer(
    model: Option<&ModelSetup>,
    budget: Option<&TurnBudget>,
    questions: &[Question],
) -> (GateAnswers, Vec<ModelCall>) {
    let mut answers = GateAnswers::new();
    let mut calls = Vec::new();
    for question in questions {
        let (Some(model), Some(budget)) = (model, budget) else {
            let detail = "no model provider is configured".to_owned();
            answers.insert(
                question.id.clone(),
                GateAnswer::Failed {
                    failure: CheckFailure::Unfinished,
                    detail,
                },
            );
            continue;
        };
        let runner = Runner {
            provider: model.provider.as_ref(),
            model: &model.model,
            budget,
            prompts: &model.prompts,
        };
        let answer = match question.task.as_str() {
            CLAIMS_COVERAGE => {
                let input = ClaimsCoverageInput {
                    text: question.text.clone().unwrap_or_default(),
                    claims: question.claims.clone(),
                };
                let run = runner.run::<ClaimsCoverage>(&input, Some(&question.id));
                calls.extend(run.calls);
                match run.outcome {
                    Outcome::Answered { verdict, .. } => GateAnswer::Verdict { verdict },
                    Outcome::Failed { failure, detail } => GateAnswer::Failed { failure, detail },
                }
            }
            REWRITE => {
                let run = runner.run::<Rewrite>(
                    &RewriteInput {
                        facts: question.facts.clone(),
                    },
                    Some(&question.id),
                );
                calls.extend(run.calls);
                match run.outcome {
                    Outcome::Answered {
                        output: Some(draft),
                        ..
                    } => GateAnswer::Rewritten { text: draft.text },
                    Outcome::Answered { output: None, .. } => GateAnswer::Failed {
                        failure: CheckFailure::InvalidAnswer,
                        detail: "the rewrite gave no text".into(),
                    },
                    Outcome::Failed { failure, detail } => GateAnswer::Failed { failure, detail },
                }
            }
            other => GateAnswer::Failed {
                failure: CheckFailure::Unfinished,
                detail: format!("no task answers `{other}`"),
            },
        };
        answers.insert(question.id.clone(), answer);
    }
    (answers, calls)
}

impl<S: Store> Engine<S> {
    /// Clears one outbound request (JSON text): the draft as is, its one rewrite, or the path's
    /// fallback copy, with the replay record of how.
    pub fn outbound(&mut self, json: &str) -> Result<OutboundResult, EngineError> {
        let valid = match outbound::parse_request(&self.contract, json) {
            Ok(valid) => valid,
            Err(error) => return Ok(OutboundResult::Rejected(error)),
        };
        let budget = self.model.as_ref().map(ModelSetup::turn_budget);
        let mut answers = GateAnswers::new();
        let mut calls = Vec::new();
        let outgoing = valid.outgoing();
        let mut gate = self.clear(&outgoing, &answers)?;
        for _ in 0..ROUNDS {
            let open = gate.unanswered(&answers);
            if open.is_empty() {
                break;
            }
            let (round, round_calls) = answer(self.model.as_ref(), budget.as_ref(), &open);
            answers.extend(round);
            calls.extend(round_calls);
            gate = self.clear(&outgoing, &answers)?;
        }
        let corrupt = |e: serde_json::Error| EngineError::Corrupt {
            what: "cleared message".into(),
            message: e.to_string(),
        };
        let used: GateAnswers = gate
            .questions
            .iter()
            .filter_map(|q| answers.get(&q.id).map(|a| (q.id.clone(), a.clone())))
            .collect();
        let record = OutboundRecord {
            contract: self.contract.hash().to_owned(),
            request: valid.request.clone(),
            verdicts: gate.verdicts,
            questions: gate.questions,
            answers: used,
            model_calls: calls,
            facts: gate.facts,
            message: serde_json::to_value(&gate.message).map_err(corrupt)?,
        };
        Ok(OutboundResult::Cleared(OutboundRun {
            message: gate.message,
            record,
        }))
    }

    fn clear(
        &mut self,
        outgoing: &Outgoing<'_>,
        answers: &GateAnswers,
    ) -> Result<outbound::Gate, EngineError> {
        let ledger = StoreLedger {
            store: RefCell::new(&mut self.store),
            conversation: outgoing.conversation,
        };
        outbound::clear(&self.contract, outgoing, &ledger, answers).map_err(|e| {
            EngineError::Corrupt {
                what: "outbound request".into(),
                message: e.to_string(),
            }
        })
    }
}

/// Decides a recorded message again from its record alone: the facts it read and the answers
/// it got. Pure; with the same contract the message is byte-identical to the recorded one.
pub fn replay_outbound(
    contract: &Contract,
    record: &OutboundRecord,
) -> Result<ClearedMessage, RequestError> {
    let valid = outbound::validate_request(contract, record.request.clone())?;
    let ledger = RecordedLedger::new(record.facts.clone());
    Ok(outbound::clear(contract, &valid.outgoing(), &ledger, &record.answers)?.message)
}
