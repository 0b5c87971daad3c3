//! The outbound gate with IO (docs/design.md §7): an outbound request's draft checked against the
//! store's records and the conversation's ledger, its coverage checks and its one rewrite run as
//! model tasks, and the cleared message returned with its replay record. Without a model, a
//! question the gate needs cannot be answered, which counts as a failed check: an unbacked draft
//! goes out as fallback copy. A replay decides again from the record alone, with no store and
//! no model, and must give the same message byte for byte.

use std::cell::RefCell;

use serde_json::Value;
use warrant_core::Contract;
use warrant_core::check::{CheckFailure, ModelTask};
use warrant_core::outbound::{
    self, ClearedMessage, GateAnswer, GateAnswers, LedgerFacts, OutboundRequest, Outgoing, Question, RecordedLedger,
    Sender, ValidOutbound,
};
use warrant_core::records::Record;
use warrant_core::request::RequestError;
use warrant_core::turn::{EventRecord, FactError, derive_id};
use warrant_model::tasks::{ClaimsCoverage, ClaimsCoverageInput, Rewrite, RewriteInput};
use warrant_model::{ModelCall, Outcome, Runner, TurnBudget};
use warrant_store::{Enqueued, Lease, NewJob, Store};

use crate::cleared::{OutboundRecord, OutboundRun};
use crate::model::ModelSetup;
use crate::outbox::{JobsRun, outbox_message, run_due_jobs};
use crate::{Engine, EngineError};

/// How many rounds of questions one message may take: the draft's coverage, the rewrite, the
/// rewrite's coverage.
pub(crate) const ROUNDS: usize = 3;

/// The result of an outbound request.
#[derive(Debug, Clone)]
#[expect(clippy::large_enum_variant, reason = "one result per message, returned once")]
pub enum OutboundResult {
    /// The gate decided what goes out.
    Cleared(OutboundRun),
    /// The request was refused whole; nothing goes out.
    Rejected(RequestError),
}

/// The store's rows and the conversation's events, for the gate.
pub(crate) struct StoreLedger<'a, S: Store + ?Sized> {
    pub(crate) store: RefCell<&'a mut S>,
    pub(crate) conversation: &'a str,
}

impl<S: Store + ?Sized> LedgerFacts for StoreLedger<'_, S> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let found = store.record(table, key).map_err(|e| FactError(e.to_string()))?;
        Ok(found.map(|r| Record { table: r.table, key: r.key, revision: r.revision, value: r.value }))
    }

    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let rows = store.events(Some(self.conversation)).map_err(|e| FactError(e.to_string()))?;
        Ok(rows
            .into_iter()
            .filter(|e| e.kind == kind)
            .map(|e| EventRecord { id: e.id, kind: e.kind, payload: e.payload, effect: e.effect })
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
            answers.insert(question.id.clone(), GateAnswer::Failed { failure: CheckFailure::Unfinished, detail });
            continue;
        };
        let runner = Runner { provider: model.provider.as_ref(), model: &model.model, budget, prompts: &model.prompts };
        let answer = match question.task {
            ModelTask::ClaimsCoverage => {
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
            ModelTask::Rewrite => {
                let run = runner.run::<Rewrite>(&RewriteInput { facts: question.facts.clone() }, Some(&question.id));
                calls.extend(run.calls);
                match run.outcome {
                    Outcome::Answered { output: Some(draft), .. } => GateAnswer::Rewritten { text: draft.text },
                    Outcome::Answered { output: None, .. } => GateAnswer::Failed {
                        failure: CheckFailure::InvalidAnswer,
                        detail: "the rewrite gave no text".into(),
                    },
                    Outcome::Failed { failure, detail } => GateAnswer::Failed { failure, detail },
                }
            }
            // The gate asks only the two questions above; a check's task answers no gate question.
            other @ (ModelTask::ValueStated
            | ModelTask::Locate
            | ModelTask::UncoveredRequest
            | ModelTask::ValueClassified) => {
                GateAnswer::Failed { failure: CheckFailure::Unfinished, detail: format!("no task answers `{other}`") }
            }
        };
        answers.insert(question.id.clone(), answer);
    }
    (answers, calls)
}

impl<S: Store> Engine<S> {
    /// Clears one outbound request (JSON text): the draft as is, its one rewrite, or the path's
    /// fallback copy, with the replay record of how. Nothing is stored or sent.
    pub fn outbound(&mut self, json: &str) -> Result<OutboundResult, EngineError> {
        let valid = match outbound::parse_request(&self.contract, json) {
            Ok(valid) => valid,
            Err(error) => return Ok(OutboundResult::Rejected(error)),
        };
        Ok(OutboundResult::Cleared(clear_valid(&self.contract, self.model.as_ref(), &mut self.store, &valid)?))
    }

    /// Hands one outbound request to warrant to send: cleared now and stored in the outbox for
    /// the dispatcher, or, for a `scheduled` request with a `due` time, stored as a due
    /// follow-up that the scheduler clears when it is due. `now` is milliseconds since the
    /// Unix epoch.
    pub fn submit(&mut self, json: &str, now: i64) -> Result<Submitted, EngineError> {
        let valid = match outbound::parse_request(&self.contract, json) {
            Ok(valid) => valid,
            Err(error) => return Ok(Submitted::Rejected(error)),
        };
        submit_valid(&self.contract, self.model.as_ref(), &mut self.store, &valid, now)
    }

    /// Clears the follow-ups due at `lease.now` (at most `limit`) through the gate, against the
    /// ledger and the records as they are now, and stores each cleared message in the outbox.
    pub fn run_due(&mut self, lease: &Lease, limit: usize) -> Result<JobsRun<String>, EngineError> {
        run_due(&self.contract, self.model.as_ref(), &mut self.store, lease, limit)
    }
}

/// What became of an outbound request handed to warrant to send.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "one result per message, returned once")]
pub enum Submitted {
    /// Cleared now and stored in the outbox (or found stored already under the same key).
    Queued {
        /// The cleared message and its record.
        run: OutboundRun,
        /// The outbox message's id.
        outbox: String,
        /// Whether the same message was stored before (nothing was stored again).
        duplicate: bool,
    },
    /// A scheduled follow-up, stored to be cleared when it is due.
    Scheduled {
        /// The due job's id.
        job: String,
        /// When it is due, milliseconds since the Unix epoch.
        due_at: i64,
        /// Whether the same follow-up was stored before (nothing was stored again).
        duplicate: bool,
    },
    /// The request was refused whole; nothing was stored.
    Rejected(RequestError),
}

/// The outbox as a [`Sender`]: the only thing it stores for delivery is a message the gate
/// cleared, with the gate's record beside it. The idempotency key is the message's content id,
/// or the due job's key for a follow-up, so the same message is stored once however often it
/// is handed over.
pub struct OutboxSender<'s, S: Store + ?Sized> {
    store: &'s mut S,
    record: Value,
    key: Option<String>,
    now: i64,
    stored: Option<Enqueued>,
}

impl<S: Store + ?Sized> std::fmt::Debug for OutboxSender<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxSender").field("key", &self.key).field("now", &self.now).finish_non_exhaustive()
    }
}

impl<'s, S: Store + ?Sized> OutboxSender<'s, S> {
    /// A sender into `store`'s outbox; `record` is the gate's record of the message it sends.
    pub fn new(store: &'s mut S, record: Value, now: i64) -> OutboxSender<'s, S> {
        OutboxSender { store, record, key: None, now, stored: None }
    }

    /// The idempotency key to store the message under instead of its content id.
    pub fn with_key(mut self, key: String) -> OutboxSender<'s, S> {
        self.key = Some(key);
        self
    }

    /// What the last send stored.
    pub fn stored(&self) -> Option<&Enqueued> {
        self.stored.as_ref()
    }
}

impl<S: Store + ?Sized> Sender for OutboxSender<'_, S> {
    type Error = EngineError;

    fn send(&mut self, message: ClearedMessage) -> Result<(), EngineError> {
        let key = self.key.clone().unwrap_or_else(|| message.id().to_owned());
        let row = outbox_message(&message, std::mem::take(&mut self.record), key)?;
        self.stored = Some(self.store.enqueue(&row, self.now)?);
        Ok(())
    }
}

/// Clears a validated request against `store` with `model`'s tasks (none: every question
/// fails, fail closed).
pub(crate) fn clear_valid<S: Store + ?Sized>(
    contract: &Contract,
    model: Option<&ModelSetup>,
    store: &mut S,
    valid: &ValidOutbound,
) -> Result<OutboundRun, EngineError> {
    let budget = model.map(ModelSetup::turn_budget);
    let mut answers = GateAnswers::new();
    let mut calls = Vec::new();
    let outgoing = valid.outgoing();
    let mut gate = clear_once(contract, store, &outgoing, &answers)?;
    for _ in 0..ROUNDS {
        let open = gate.unanswered(&answers);
        if open.is_empty() {
            break;
        }
        let (round, round_calls) = answer(model, budget.as_ref(), &open);
        answers.extend(round);
        calls.extend(round_calls);
        gate = clear_once(contract, store, &outgoing, &answers)?;
    }
    let corrupt =
        |e: serde_json::Error| EngineError::Corrupt { what: "cleared message".into(), message: e.to_string() };
    let used: GateAnswers =
        gate.questions.iter().filter_map(|q| answers.get(&q.id).map(|a| (q.id.clone(), a.clone()))).collect();
    let record = OutboundRecord {
        contract: contract.hash().to_owned(),
        request: valid.request().clone(),
        verdicts: gate.verdicts,
        questions: gate.questions,
        answers: used,
        model_calls: calls,
        facts: gate.facts,
        message: serde_json::to_value(&gate.message).map_err(corrupt)?,
    };
    Ok(OutboundRun { message: gate.message, record })
}

fn clear_once<S: Store + ?Sized>(
    contract: &Contract,
    store: &mut S,
    outgoing: &Outgoing<'_>,
    answers: &GateAnswers,
) -> Result<outbound::Gate, EngineError> {
    let ledger = StoreLedger { store: RefCell::new(store), conversation: outgoing.conversation };
    outbound::clear(contract, outgoing, &ledger, answers)
        .map_err(|e| EngineError::Corrupt { what: "outbound request".into(), message: e.to_string() })
}

fn submit_valid<S: Store + ?Sized>(
    contract: &Contract,
    model: Option<&ModelSetup>,
    store: &mut S,
    valid: &ValidOutbound,
    now: i64,
) -> Result<Submitted, EngineError> {
    let request = valid.request();
    if let Some(due) = &request.due {
        let corrupt = |message: String| EngineError::Corrupt { what: "outbound request".into(), message };
        let due_at = warrant_core::date::parse_instant(due).map_err(|e| corrupt(e.to_string()))?.as_millisecond();
        let draft = serde_json::to_value(request).map_err(|e| corrupt(e.to_string()))?;
        let job = derive_id("job", &[&request.conversation, &warrant_core::id::canonical(&draft)]);
        let new = store.schedule_job(&NewJob {
            id: job.clone(),
            conversation: request.conversation.clone(),
            due_at,
            draft,
        })?;
        return Ok(Submitted::Scheduled { job, due_at, duplicate: !new });
    }
    let run = clear_valid(contract, model, store, valid)?;
    let record = serde_json::to_value(&run.record)
        .map_err(|e| EngineError::Corrupt { what: "outbound record".into(), message: e.to_string() })?;
    let mut sender = OutboxSender::new(store, record, now);
    sender.send(run.message.clone())?;
    let (outbox, duplicate) = match sender.stored() {
        Some(Enqueued::Stored) | None => (derive_id("out", &[run.message.id()]), false),
        Some(Enqueued::Duplicate { id }) => (id.clone(), true),
    };
    Ok(Submitted::Queued { run, outbox, duplicate })
}

/// The scheduler's step before delivery. Each due follow-up's stored request is cleared with
/// `at` set to the lease's instant, so its claims are checked against the ledger and the
/// records as they are when it is sent, not as they were when it was drafted; the cleared
/// message goes into the outbox under the job's key (see [`crate::outbox::run_due_jobs`]). A
/// stored request that no longer parses against the contract is sent as nothing: the job
/// stays taken and the failure is reported.
pub fn run_due(
    contract: &Contract,
    model: Option<&ModelSetup>,
    store: &mut dyn Store,
    lease: &Lease,
    limit: usize,
) -> Result<JobsRun<String>, EngineError> {
    let at = jiff::Timestamp::from_millisecond(lease.now)
        .map_err(|e| EngineError::Corrupt { what: "scheduler clock".into(), message: e.to_string() })?
        .to_string();
    let mut broken: Option<EngineError> = None;
    let run = run_due_jobs(store, lease, limit, |store, job| {
        let request: OutboundRequest = serde_json::from_value(job.job.draft.clone())
            .map_err(|e| format!("the stored request does not parse: {e}"))?;
        let request = OutboundRequest { at: at.clone(), due: None, ..request };
        let valid = outbound::validate_request(contract, request).map_err(|e| format!("{}: {}", e.field, e.message))?;
        clear_valid(contract, model, store, &valid).map_err(|e| {
            let why = e.to_string();
            broken.get_or_insert(e);
            why
        })
    })?;
    // A store that fails under the gate fails the step, as it would any other; a request the
    // contract no longer accepts is that job's failure alone.
    if let Some(error) = broken {
        return Err(error);
    }
    Ok(run)
}

/// Decides a recorded message again from its record alone: the facts it read and the answers
/// it got. Pure; with the same contract the message is byte-identical to the recorded one.
pub fn replay_outbound(contract: &Contract, record: &OutboundRecord) -> Result<ClearedMessage, RequestError> {
    let valid = outbound::validate_request(contract, record.request.clone())?;
    let ledger = RecordedLedger::new(record.facts.clone());
    Ok(outbound::clear(contract, &valid.outgoing(), &ledger, &record.answers)?.message)
}
