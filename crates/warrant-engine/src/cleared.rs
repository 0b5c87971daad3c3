//! What the outbound gate hands on: a cleared message with its replay record, the one form in
//! which a message reaches the outbox (through the scheduler's step or the outbox sender).

use serde::{Deserialize, Serialize};
use warrant_core::outbound::{ClaimVerdict, ClearedMessage, GateAnswers, LedgerRead, OutboundRequest, Question};
use warrant_model::ModelCall;

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
