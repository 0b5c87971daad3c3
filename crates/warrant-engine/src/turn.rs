//! The turn loop: a request parsed and validated, a turn seen before answered from the store,
//! then decided, its checks and the outbound gate's questions answered a round at a time and
//! decided again with the answers, and committed; on a stale revision decided again, refusing the
//! acts that lost.

use std::collections::BTreeSet;
use std::time::Instant;

use serde_json::{Value, json};

use warrant_core::check::CheckAnswers;
use warrant_core::facts::FactsMemo;
use warrant_core::outbound::GateAnswers;
use warrant_core::reason::ReasonCode;
use warrant_core::records::SharedRecord;
use warrant_core::request::{self, RequestError, TurnRequest, ValidRequest};
use warrant_core::turn::{Decision, Foreseen, RowRef, TurnResponse};
use warrant_model::ModelCall;
use warrant_store::{Commit, CommitOutcome, ReadAhead, Store, StoredTurn, TurnAhead};

use crate::commit::{Decided, to_commit};
use crate::facts::StoreFacts;
use crate::model::{self, ModelSetup};
use crate::trace::{self, TaskRun};
use crate::{Engine, EngineError, outbound};

mod deferred;
pub use deferred::{Deciding, DeferredTurn};

/// The result of one turn request.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one result per turn, returned once and never stored in bulk; boxing would only add an allocation"
)]
pub enum TurnResult {
    /// Decided and committed (or, for a repeated turn, the recorded result).
    Decided {
        /// The response, as committed.
        response: TurnResponse,
        /// Whether this is the recorded response of a turn decided before.
        repeated: bool,
    },
    /// The request was refused whole; nothing was committed.
    Rejected(RequestError),
}

impl TurnResult {
    /// The JSON answer: the response, or `{"error":{code,field,message}}`.
    pub fn to_json(&self) -> Value {
        match self {
            TurnResult::Decided { response, repeated } => {
                let mut answer = serde_json::to_value(response).unwrap_or(Value::Null);
                // A repeat is the recorded response, marked so that a client can tell it did
                // nothing this time; a first decision carries no mark.
                if let (true, Some(fields)) = (*repeated, answer.as_object_mut()) {
                    fields.insert("repeated".into(), Value::Bool(true));
                }
                answer
            }
            TurnResult::Rejected(error) => json!({"error": error}),
        }
    }
}

/// A point where a test may stop the engine, to prove that nothing half-commits. Compiled only
/// with the `failpoints` feature, which only test builds turn on. Set with the environment
/// variable `WARRANT_FAILPOINT`: `before_commit` aborts the process there;
/// `pause_before_commit:PATH` creates `PATH` and waits (up to a minute) until `PATH.go` exists,
/// so that a test can kill the process there, or release several at once; `panic_after_commit`
/// panics once the turn is committed, so that a test sees the process unwind with it held
/// (`after_lookup` and `after_commit` take the same three forms).
#[cfg(feature = "failpoints")]
#[allow(clippy::panic, reason = "a test asks for the panic, to see the process unwind")]
fn failpoint(name: &str) {
    let Ok(setting) = std::env::var("WARRANT_FAILPOINT") else { return };
    if setting == name {
        std::process::abort();
    }
    if setting.strip_prefix("panic_") == Some(name) {
        panic!("failpoint `{name}`");
    }
    if let Some(path) = setting.strip_prefix(&format!("pause_{name}:")) {
        let go = format!("{path}.go");
        let _ = std::fs::write(path, std::process::id().to_string());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !std::path::Path::new(&go).exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Without the `failpoints` feature there is no failpoint: the environment is not even read.
#[cfg(not(feature = "failpoints"))]
fn failpoint(_name: &str) {}

/// Where a decision's reads happen: in the span its caller opened (the turn's lookup and its
/// first decision share one), or in one it begins itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    Open,
    Begin,
}

/// How many times a turn is decided again after a commit conflict.
const MAX_ATTEMPTS: usize = 4;

/// What one attempt at a turn has gathered: the rows that lost a commit, and the answers and
/// model calls so far. Answers are kept across attempts, so a turn decided again after a
/// conflict asks the model nothing twice.
#[derive(Default)]
struct Gathered {
    conflicts: BTreeSet<RowRef>,
    answers: CheckAnswers,
    gate_answers: GateAnswers,
    calls: Vec<ModelCall>,
}

impl<S: Store> Engine<S> {
    /// Runs one turn request (JSON text).
    pub fn turn(&mut self, json: &str) -> Result<TurnResult, EngineError> {
        self.tasks.clear();
        let valid = match request::parse(&self.contract, json) {
            Ok(valid) => valid,
            Err(error) => return Ok(TurnResult::Rejected(error)),
        };
        self.turn_valid(&valid)
    }

    /// Runs one validated turn.
    pub fn turn_valid(&mut self, valid: &ValidRequest) -> Result<TurnResult, EngineError> {
        self.tasks.clear();
        let request = valid.request();
        // The lookup and the first decision read one snapshot of the store: the span opened here
        // is the first decision's (a store whose readers pay for what other connections wrote
        // since pays once for both).
        self.store.begin_reads()?;
        // The facts the first decision is foreseen to read are asked beside the lookup: a store
        // that pays a round trip for each read sends them together.
        let foreseen = warrant_core::turn::foreseen(&self.contract, valid);
        let (rows, pending) = (pairs(&foreseen.rows), pairs(&foreseen.pending));
        let seen =
            self.store.turn_ahead(&request.conversation, &request.turn, ReadAhead { rows: &rows, pending: &pending });
        if !matches!(seen, Ok(TurnAhead { turn: None, .. })) {
            self.store.end_reads()?;
        }
        let ahead = seen?;
        if let Some(stored) = &ahead.turn {
            return repeat(valid, stored);
        }
        failpoint("after_lookup");
        let mut first = Some(read_ahead(&foreseen, ahead));
        let mut gathered = Gathered::default();
        let budget = self.model.as_ref().map(ModelSetup::turn_budget);
        for attempt in 0..MAX_ATTEMPTS {
            // Each attempt reads the store afresh: one after a conflict sees what the commit
            // found. The first starts from what was read beside the lookup.
            let memo = first.take().unwrap_or_default();
            let reads = if attempt == 0 { Reads::Open } else { Reads::Begin };
            let decision = self.decide_answering(valid, &mut gathered, budget.as_ref(), &memo, reads)?;
            let commit = commit_of(valid, &decision, &gathered)?;
            failpoint("before_commit");
            match self.store.commit(&commit)? {
                CommitOutcome::Committed { .. } => {
                    failpoint("after_commit");
                    return Ok(TurnResult::Decided { response: decision.response, repeated: false });
                }
                CommitOutcome::Duplicate(stored) => return repeat(valid, &stored),
                CommitOutcome::StaleRevision { table, key, .. } => {
                    gathered.conflicts.insert(RowRef { table, key });
                }
                CommitOutcome::InteractionClosed { .. } | CommitOutcome::DuplicateEffect { .. } => {
                    // Another process answered the same interaction or committed the same
                    // effect first: decide again, and the fresh facts will say so.
                }
            }
        }
        Err(EngineError::Contention(MAX_ATTEMPTS))
    }

    /// Decides the turn, then decides it again with the answers of the checks and of the
    /// outbound gate's questions it needs, a round at a time, each decision after the first
    /// served from `memo` the facts the ones before it read. The first decision reads in the
    /// span `reads` says; every later one opens its own.
    fn decide_answering(
        &mut self,
        valid: &ValidRequest,
        gathered: &mut Gathered,
        budget: Option<&warrant_model::TurnBudget>,
        memo: &FactsMemo,
        reads: Reads,
    ) -> Result<Decision, EngineError> {
        let mut decision = self.decide(valid, gathered, memo, reads)?;
        // Step 4: the checks the acts that passed structure need, run at once; deciding
        // again with their answers can only take away. An act whose effects came only
        // with an answer may need checks of its own, hence the few rounds; what is still
        // unanswered after them counts as failed.
        for _ in 0..model::ROUNDS {
            let missing: Vec<_> =
                decision.checks.iter().filter(|c| !gathered.answers.contains_key(&c.id)).cloned().collect();
            if missing.is_empty() {
                break;
            }
            let round = model::run(self.model.as_ref(), budget, &missing);
            for (check, timing) in missing.iter().zip(&round.timings) {
                let outcome = trace::check_outcome(round.answers.get(&check.id));
                let at = (timing.started, timing.elapsed);
                self.tasks.push(TaskRun::new(check.task, &check.id, at, outcome, &round.calls));
            }
            gathered.answers.extend(round.answers);
            gathered.calls.extend(round.calls);
            decision = self.decide(valid, gathered, memo, Reads::Begin)?;
        }
        // Step 7: the outbound gate's questions about the reply (its coverage checks, its
        // one rewrite), answered one round at a time; what stays unanswered has failed.
        for _ in 0..outbound::ROUNDS {
            let open: Vec<_> = decision
                .outbound
                .questions
                .iter()
                .filter(|q| !gathered.gate_answers.contains_key(&q.id))
                .cloned()
                .collect();
            if open.is_empty() {
                break;
            }
            // One question at a time, as `answer` takes them anyway, so that each is timed.
            for question in &open {
                let started = Instant::now();
                let (round, calls) = outbound::answer(self.model.as_ref(), budget, std::slice::from_ref(question));
                let outcome = trace::gate_outcome(round.get(&question.id));
                let at = (started, started.elapsed());
                self.tasks.push(TaskRun::new(question.task, &question.id, at, outcome, &calls));
                gathered.gate_answers.extend(round);
                gathered.calls.extend(calls);
            }
            decision = self.decide(valid, gathered, memo, Reads::Begin)?;
        }
        Ok(decision)
    }

    /// One decision over the stored facts (those read before through `memo`) with the answers
    /// gathered so far. The facts it reads from the store are read as one snapshot: the store's
    /// read span is open while it decides, and only then (never across a model call).
    fn decide(
        &mut self,
        valid: &ValidRequest,
        gathered: &Gathered,
        memo: &FactsMemo,
        reads: Reads,
    ) -> Result<Decision, EngineError> {
        if reads == Reads::Begin {
            self.store.begin_reads()?;
        }
        let store = StoreFacts::new(&mut self.store);
        let decision = warrant_core::turn::decide_answered(
            &self.contract,
            valid,
            &memo.over(&store),
            &gathered.conflicts,
            &gathered.answers,
            &gathered.gate_answers,
        );
        self.store.end_reads()?;
        Ok(decision)
    }
}

/// The commit of a decision with what its turn gathered.
fn commit_of(valid: &ValidRequest, decision: &Decision, gathered: &Gathered) -> Result<Commit, EngineError> {
    to_commit(&Decided {
        valid,
        decision,
        conflicts: &gathered.conflicts,
        answers: &gathered.answers,
        gate_answers: &gathered.gate_answers,
        calls: &gathered.calls,
    })
}

/// Rows as the store names them, by table and key.
fn pairs(rows: &[RowRef]) -> Vec<(&str, &str)> {
    rows.iter().map(|r| (r.table.as_str(), r.key.as_str())).collect()
}

/// A memo that holds what the store read ahead of the first decision, as if it had read it.
fn read_ahead(foreseen: &Foreseen, ahead: TurnAhead) -> FactsMemo {
    let memo = FactsMemo::default();
    for (row, found) in foreseen.rows.iter().zip(ahead.rows) {
        if let Some(found) = found {
            let found =
                found.map(|r| SharedRecord { table: r.table, key: r.key, revision: r.revision, value: r.value });
            memo.keep_record(row.clone(), found);
        }
    }
    for (row, found) in foreseen.pending.iter().zip(ahead.pending) {
        if let Some(effect) = found {
            memo.keep_pending(row.clone(), effect);
        }
    }
    memo
}

/// The answer to a turn whose key the store already holds: its recorded response when the
/// request is the one recorded, and `turn_key_reused` when it is another. The requests are
/// compared as values (object keys in any order, numbers by value), so a store that keeps the
/// recorded request in another form (PostgreSQL's JSONB) still recognises it.
fn repeat(valid: &ValidRequest, stored: &StoredTurn) -> Result<TurnResult, EngineError> {
    let recorded: TurnRequest = serde_json::from_value(stored.request.clone())
        .map_err(|e| EngineError::Corrupt { what: format!("turn `{}`", stored.turn), message: e.to_string() })?;
    if recorded != *valid.request() {
        return Ok(TurnResult::Rejected(RequestError {
            code: ReasonCode::TurnKeyReused,
            field: "turn".into(),
            message: format!(
                "turn `{}` of conversation `{}` was decided for another request; a new request needs a new `turn` key",
                warrant_core::text::visible(&stored.turn),
                warrant_core::text::visible(&stored.conversation)
            ),
        }));
    }
    Ok(TurnResult::Decided { response: stored_response(stored)?, repeated: true })
}

/// The response recorded for `stored`.
pub(crate) fn stored_response(stored: &StoredTurn) -> Result<TurnResponse, EngineError> {
    serde_json::from_value(stored.response.clone())
        .map_err(|e| EngineError::Corrupt { what: format!("turn `{}`", stored.turn), message: e.to_string() })
}
