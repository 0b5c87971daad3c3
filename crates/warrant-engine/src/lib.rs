//! Runs a turn: the pure decisions of warrant-core, the facts of warrant-store and the
//! answers of warrant-model's checks, in the order `ARCHITECTURE.md` gives. The engine owns the IO the core
//! refuses: it reads the contract's files, seeds the records, serves stored facts to the
//! decision, and commits what it decided in one transaction.

mod builder;
pub mod dispatch;
mod files;
mod guards;
mod model;
mod outbound;
pub mod outbox;
mod replay;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use warrant_core::change::RowChange;
use warrant_core::check::CheckAnswers;
use warrant_core::ladder::{PromotionRecord, Subject};
use warrant_core::outbound::{GateAnswers, LedgerFacts};
use warrant_core::reason::ReasonCode;
use warrant_core::records::{self, Record, TableSource};
use warrant_core::request::{self, RequestError, TurnRequest, ValidRequest};
use warrant_core::turn::EventRecord;
use warrant_core::turn::{self, Decision, FactError, Facts, Interaction, RecordedFacts, RowRef, TurnResponse};
use warrant_core::{Contract, ContractError};
use warrant_model::ModelCall;
use warrant_store::{
    Answer, AnyStore, Commit, CommitOutcome, DueJob, EffectRow, EventRow, FindingKind, FindingRow, InteractionRow,
    InteractionState, OutboxRow, OutboxState, OutcomeReport, OutcomeResult, RecordWrite, Store, StoreError, StoredTurn,
};

pub use builder::{
    BuildError, ENV_CALLS, ENV_CASSETTE, ENV_DEADLINE_MS, ENV_TOKENS, EngineBuilder, EngineSetup, ModelPlan,
    ModelSource, StoreUrl,
};
pub use files::{FolderFiles, load_contract};
pub use guards::{GuardError, GuardStatus, PromptStatus};
pub use model::{ModelSetup, active_prompt, prompt_subject};
pub use outbound::{OutboundRecord, OutboundResult, OutboundRun, OutboxSender, Submitted, replay_outbound, run_due};
pub use replay::{ReplayChange, ReplayReport};
pub use warrant_core::id::canonical;

/// What can stop the engine (as opposed to a verdict, which is a value).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The contract does not load.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// A file cannot be read.
    #[error("cannot read `{path}`: {message}")]
    File { path: String, message: String },
    /// A data file does not fit its table.
    #[error("{0}")]
    Data(#[from] records::DataError),
    /// The store failed; nothing was committed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Commits kept conflicting; nothing was committed.
    #[error("the turn could not be committed after {0} attempts")]
    Contention(usize),
    /// A stored value does not read back.
    #[error("stored {what} is corrupt: {message}")]
    Corrupt { what: String, message: String },
}

/// The result of one turn request.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one result per turn, returned once and never stored in bulk; boxing would only add an allocation"
)]
pub enum TurnResult {
    /// Decided and committed (or, for a repeated turn, the recorded result).
    Decided { response: TurnResponse, repeated: bool },
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
/// so that a test can kill the process there, or release several at once.
#[cfg(feature = "failpoints")]
fn failpoint(name: &str) {
    let Ok(setting) = std::env::var("WARRANT_FAILPOINT") else { return };
    if setting == name {
        std::process::abort();
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

/// The engine over one store. Made by [`Engine::builder`] (or [`Engine::new`] and
/// [`Engine::with_model`], the builder's own steps). It hands out no store: every write goes
/// through a decision, and callers read through the few methods below.
pub struct Engine<S: Store> {
    contract: Contract,
    folder: std::path::PathBuf,
    store: S,
    model: Option<ModelSetup>,
}

impl<S: Store> std::fmt::Debug for Engine<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("contract", &self.contract.origin()).finish()
    }
}

/// Serves stored facts to a decision.
struct StoreFacts<'a, S: Store> {
    store: RefCell<&'a mut S>,
}

impl<S: Store> Facts for StoreFacts<'_, S> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let found = store.record(table, key).map_err(|e| FactError(e.to_string()))?;
        Ok(found.map(|r| Record { table: r.table, key: r.key, revision: r.revision, value: r.value }))
    }

    fn interaction(&self, id: &str) -> Result<Option<Interaction>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let Some(row) = store.interaction(id).map_err(|e| FactError(e.to_string()))? else { return Ok(None) };
        let mut interaction: Interaction =
            serde_json::from_value(row.payload).map_err(|e| FactError(format!("stored interaction `{id}`: {e}")))?;
        interaction.open = matches!(row.state, InteractionState::Open);
        Ok(Some(interaction))
    }

    fn promotion(&self, subject: &Subject) -> Result<Option<PromotionRecord>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        guards::promotion_record(&mut **store, &subject.name).map_err(|e| FactError(e.to_string()))
    }

    fn events(&self, conversation: &str, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let ledger = outbound::StoreLedger { store: RefCell::new(&mut **store), conversation };
        LedgerFacts::events(&ledger, kind)
    }
}

impl Engine<AnyStore> {
    /// The one way the command line and the service make engines: see [`EngineBuilder`].
    pub fn builder() -> EngineBuilder {
        EngineBuilder::new()
    }
}

/// How many times a turn is decided again after a commit conflict.
const MAX_ATTEMPTS: usize = 4;

impl<S: Store> Engine<S> {
    /// An engine for `contract` (loaded from `folder`) over `store`, migrated and seeded.
    pub fn new(contract: Contract, folder: &Path, store: S) -> Result<Engine<S>, EngineError> {
        let mut engine = Engine { contract, folder: folder.to_owned(), store, model: None };
        engine.store.migrate()?;
        engine.seed()?;
        Ok(engine)
    }

    /// Runs the turn's semantic checks through `model`, with the prompt versions the store's
    /// registry has made active. Without a model, every check fails (`check_unfinished`), so
    /// every act that needs one is asked instead.
    pub fn with_model(mut self, mut model: ModelSetup) -> Result<Engine<S>, EngineError> {
        model::load_active_prompts(&mut self.store, &mut model)?;
        for (task, limits) in warrant_model::budget::task_limits_from_contract(self.contract.model()) {
            model.task_limits.entry(task).or_insert(limits);
        }
        self.model = Some(model);
        Ok(self)
    }

    /// The contract.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// The row `key` of `table` as stored now, with its revision.
    pub fn record(&mut self, table: &str, key: &str) -> Result<Option<warrant_store::Record>, EngineError> {
        Ok(self.store.record(table, key)?)
    }

    /// Stored turns after sequence number `after`, oldest first, at most `limit`.
    pub fn turns(&mut self, after: i64, limit: usize) -> Result<Vec<StoredTurn>, EngineError> {
        Ok(self.store.turns(after, limit)?)
    }

    /// Stored turns before sequence number `before` (or the newest), newest first, at most
    /// `limit`: the review page's list.
    pub fn recent_turns(&mut self, before: Option<i64>, limit: usize) -> Result<Vec<StoredTurn>, EngineError> {
        Ok(self.store.recent_turns(before, limit)?)
    }

    /// The committed events of `conversation` (of every conversation with `None`), in commit
    /// order.
    pub fn events(&mut self, conversation: Option<&str>) -> Result<Vec<EventRow>, EngineError> {
        Ok(self.store.events(conversation)?)
    }

    /// Outbox messages (in `state`, or all), in the order they were stored, at most `limit`.
    pub fn outbox(&mut self, state: Option<OutboxState>, limit: usize) -> Result<Vec<OutboxRow>, EngineError> {
        Ok(self.store.outbox(state, limit)?)
    }

    /// The due job `id`.
    pub fn due_job(&mut self, id: &str) -> Result<Option<DueJob>, EngineError> {
        Ok(self.store.due_job(id)?)
    }

    /// Delivers one batch of the outbox's due messages through `dispatcher`.
    pub fn dispatch_once(
        &mut self,
        dispatcher: &dispatch::Dispatcher,
    ) -> Result<dispatch::Dispatched, dispatch::DispatchError> {
        dispatcher.dispatch_once(&mut self.store)
    }

    /// Delivers what is due now through `dispatcher`, round after round, each message at most
    /// once.
    pub fn drain(
        &mut self,
        dispatcher: &dispatch::Dispatcher,
    ) -> Result<dispatch::Dispatched, dispatch::DispatchError> {
        dispatcher.drain(&mut self.store)
    }

    /// Loads every records table's data into the store; rows already there are kept as they
    /// are, so seeding again never undoes a committed change.
    pub fn seed(&mut self) -> Result<usize, EngineError> {
        let currency = self.contract.currency();
        let mut loaded: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        let mut inserted = 0;
        for table in self.contract.tables() {
            let rows = match &table.source {
                TableSource::File(file) => {
                    let path = self.folder.join(file);
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| EngineError::File { path: path.display().to_string(), message: e.to_string() })?;
                    let data: Value = serde_json::from_str(&text)
                        .map_err(|e| EngineError::File { path: path.display().to_string(), message: e.to_string() })?;
                    records::rows_from_file(table, data, currency)?
                }
                TableSource::Nested { table: parent, path, parent_field } => {
                    let parent_rows =
                        loaded.iter().find(|(name, _)| name == parent).map(|(_, rows)| rows.as_slice()).unwrap_or(&[]);
                    records::rows_from_parent(table, parent_rows, path, parent_field, currency)?
                }
            };
            if let Some((first, _)) = rows.first()
                && self.store.record(&table.name, first)?.is_none()
            {
                inserted += self.store.seed_records(&table.name, &rows)?;
            }
            loaded.push((table.name.clone(), rows));
        }
        Ok(inserted)
    }

    /// Runs one turn request (JSON text).
    pub fn turn(&mut self, json: &str) -> Result<TurnResult, EngineError> {
        let valid = match request::parse(&self.contract, json) {
            Ok(valid) => valid,
            Err(error) => return Ok(TurnResult::Rejected(error)),
        };
        self.turn_valid(&valid)
    }

    /// Runs one validated turn.
    pub fn turn_valid(&mut self, valid: &ValidRequest) -> Result<TurnResult, EngineError> {
        let request = valid.request();
        if let Some(stored) = self.store.turn(&request.conversation, &request.turn)? {
            return repeat(valid, &stored);
        }
        let mut conflicts: BTreeSet<RowRef> = BTreeSet::new();
        let mut answers = CheckAnswers::new();
        let mut gate_answers = GateAnswers::new();
        let mut calls: Vec<ModelCall> = Vec::new();
        let budget = self.model.as_ref().map(ModelSetup::turn_budget);
        for _ in 0..MAX_ATTEMPTS {
            let mut decision = self.decide(valid, &conflicts, (&answers, &gate_answers));
            // Step 4: the checks the acts that passed structure need, run at once; deciding
            // again with their answers can only take away. An act whose effects came only
            // with an answer may need checks of its own, hence the few rounds; what is still
            // unanswered after them counts as failed.
            for _ in 0..model::ROUNDS {
                let missing: Vec<_> =
                    decision.checks.iter().filter(|c| !answers.contains_key(&c.id)).cloned().collect();
                if missing.is_empty() {
                    break;
                }
                let round = model::run(self.model.as_ref(), budget.as_ref(), &missing);
                answers.extend(round.answers);
                calls.extend(round.calls);
                decision = self.decide(valid, &conflicts, (&answers, &gate_answers));
            }
            // Step 7: the outbound gate's questions about the reply (its coverage checks, its
            // one rewrite), answered one round at a time; what stays unanswered has failed.
            for _ in 0..outbound::ROUNDS {
                let open: Vec<_> =
                    decision.outbound.questions.iter().filter(|q| !gate_answers.contains_key(&q.id)).cloned().collect();
                if open.is_empty() {
                    break;
                }
                let (round, round_calls) = outbound::answer(self.model.as_ref(), budget.as_ref(), &open);
                gate_answers.extend(round);
                calls.extend(round_calls);
                decision = self.decide(valid, &conflicts, (&answers, &gate_answers));
            }
            let commit = to_commit(valid, &decision, &conflicts, (&answers, &gate_answers, &calls))?;
            failpoint("before_commit");
            match self.store.commit(&commit)? {
                CommitOutcome::Committed { .. } => {
                    return Ok(TurnResult::Decided { response: decision.response, repeated: false });
                }
                CommitOutcome::Duplicate(stored) => return repeat(valid, &stored),
                CommitOutcome::StaleRevision { table, key, .. } => {
                    conflicts.insert(RowRef { table, key });
                }
                CommitOutcome::InteractionClosed { .. } | CommitOutcome::DuplicateEffect { .. } => {
                    // Another process answered the same interaction or committed the same
                    // effect first: decide again, and the fresh facts will say so.
                }
            }
        }
        Err(EngineError::Contention(MAX_ATTEMPTS))
    }

    fn decide(
        &mut self,
        valid: &ValidRequest,
        conflicts: &BTreeSet<RowRef>,
        answers: (&CheckAnswers, &GateAnswers),
    ) -> Decision {
        let facts = StoreFacts { store: RefCell::new(&mut self.store) };
        turn::decide_answered(&self.contract, valid, &facts, conflicts, answers.0, answers.1)
    }

    /// Records an effect's outcome as the executor reports it. A failed effect's own field
    /// changes are undone, each row's only where it still holds what the effect left there; if
    /// any of them was written since (by another effect of the same turn or by a later
    /// commit), the outcome is recorded and no row is touched.
    pub fn report_outcome(&mut self, effect_id: &str, outcome: &str) -> Result<Value, EngineError> {
        if !matches!(outcome, "done" | "failed" | "unknown") {
            return Ok(
                json!({"error": {"code": ReasonCode::InvalidInput, "field": "outcome", "message": format!("`{outcome}` is not one of done, failed, unknown")}}),
            );
        }
        let Some(effect) = self.store.effect(effect_id)? else {
            return Ok(
                json!({"error": {"code": ReasonCode::UnknownEffect, "field": "effect", "message": format!("no effect `{effect_id}`")}}),
            );
        };
        let writes = if outcome == "failed" && effect.outcome.is_none() {
            self.reverts(effect_id, &effect.payload)?
        } else {
            Vec::new()
        };
        let event = |reverted: bool| EventRow {
            seq: 0,
            id: turn::derive_id("evt", &[effect_id, "outcome"]),
            conversation: effect.conversation.clone(),
            kind: format!("effect_{outcome}"),
            payload: json!({"effect": effect_id, "op": effect.op, "outcome": outcome, "reverted": reverted}),
            effect: Some(effect_id.to_owned()),
        };
        let reverting = !writes.is_empty();
        let report = OutcomeReport {
            effect: effect_id.to_owned(),
            outcome: outcome.to_owned(),
            event: event(reverting),
            writes,
        };
        let result = match self.store.report_outcome(&report)? {
            OutcomeResult::StaleRevision { .. } => {
                // A later commit moved the rows: record the outcome, leave the rows alone.
                let report = OutcomeReport { writes: Vec::new(), event: event(false), ..report };
                self.store.report_outcome(&report)?
            }
            other => other,
        };
        Ok(match result {
            OutcomeResult::Recorded => {
                json!({"effect": effect_id, "outcome": outcome, "recorded": true, "reverted": reverting})
            }
            OutcomeResult::AlreadyRecorded { outcome: stored } => {
                json!({"effect": effect_id, "outcome": stored, "recorded": false})
            }
            OutcomeResult::UnknownEffect => {
                json!({"error": {"code": ReasonCode::UnknownEffect, "field": "effect", "message": format!("no effect `{effect_id}`")}})
            }
            OutcomeResult::StaleRevision { .. } => json!({"effect": effect_id, "outcome": outcome, "recorded": false}),
        })
    }

    /// The writes that undo a failed effect's own changes on the rows as they are now; none
    /// when any changed field has been written since. An effect stored before effects kept
    /// their own changes has none to undo, and is not reverted.
    fn reverts(&mut self, effect_id: &str, payload: &Value) -> Result<Vec<RecordWrite>, EngineError> {
        let changes: Vec<RowChange> =
            serde_json::from_value(payload.get("changes").cloned().unwrap_or(Value::Array(vec![])))
                .map_err(|e| EngineError::Corrupt { what: format!("effect `{effect_id}`"), message: e.to_string() })?;
        let mut writes = Vec::with_capacity(changes.len());
        for change in changes {
            let Some(current) = self.store.record(&change.row.table, &change.row.key)? else { return Ok(Vec::new()) };
            let Some(value) = warrant_core::change::revert(&current.value, &change.fields) else {
                return Ok(Vec::new());
            };
            // The revision read now: a commit between this read and the write makes the
            // write stale, and the outcome is then recorded without it.
            writes.push(RecordWrite {
                table: change.row.table,
                key: change.row.key,
                expected_revision: current.revision,
                value,
            });
        }
        Ok(writes)
    }

    /// Re-decides every stored turn from its recorded inputs and facts, and reports every
    /// verdict that changed.
    pub fn replay(&mut self) -> Result<ReplayReport, EngineError> {
        replay::replay(&self.contract, &mut self.store)
    }
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

fn stored_response(stored: &StoredTurn) -> Result<TurnResponse, EngineError> {
    serde_json::from_value(stored.response.clone())
        .map_err(|e| EngineError::Corrupt { what: format!("turn `{}`", stored.turn), message: e.to_string() })
}

fn to_commit(
    valid: &ValidRequest,
    decision: &Decision,
    conflicts: &BTreeSet<RowRef>,
    (answers, gate_answers, calls): (&CheckAnswers, &GateAnswers, &[ModelCall]),
) -> Result<Commit, EngineError> {
    let request = valid.request();
    let corrupt = |e: serde_json::Error| EngineError::Corrupt { what: "decision".into(), message: e.to_string() };
    let response = serde_json::to_value(&decision.response).map_err(corrupt)?;
    let request_json = serde_json::to_value(request).map_err(corrupt)?;
    // The answers the decision read (those of the checks it needed), and every model call
    // made for them: a replay decides again from these answers and needs no model.
    let used: CheckAnswers =
        decision.checks.iter().filter_map(|c| answers.get(&c.id).map(|a| (c.id.clone(), a.clone()))).collect();
    let used_gate: GateAnswers = decision
        .outbound
        .questions
        .iter()
        .filter_map(|q| gate_answers.get(&q.id).map(|a| (q.id.clone(), a.clone())))
        .collect();
    let replay = json!({
        "contract": decision.response.contract,
        "facts": decision.facts,
        "conflicts": conflicts,
        "findings": decision.response.findings,
        "checks": decision.checks,
        "answers": used,
        "model_calls": calls,
        "outbound": decision.outbound,
        "outbound_answers": used_gate,
    });
    let mut effects = Vec::new();
    for record in &decision.effects {
        // Each effect keeps its own field changes, not the turn's write of a row it shares
        // with other effects: a failed one is undone alone (`report_outcome`).
        effects.push(EffectRow {
            id: record.effect.id.clone(),
            idempotency_key: record.effect.idempotency_key.clone(),
            conversation: request.conversation.clone(),
            turn: request.turn.clone(),
            op: record.effect.op.clone(),
            payload: json!({"args": record.effect.args, "changes": record.changes}),
            outcome: None,
        });
    }
    Ok(Commit {
        turn: StoredTurn {
            seq: 0,
            conversation: request.conversation.clone(),
            turn: request.turn.clone(),
            request: request_json,
            response,
            replay,
        },
        writes: decision
            .writes
            .iter()
            .map(|w| RecordWrite {
                table: w.row.table.clone(),
                key: w.row.key.clone(),
                expected_revision: w.expected_revision,
                value: w.value.clone(),
            })
            .collect(),
        effects,
        events: decision
            .events
            .iter()
            .map(|e| EventRow {
                seq: 0,
                id: e.id.clone(),
                conversation: request.conversation.clone(),
                kind: e.kind.clone(),
                payload: e.payload.clone(),
                effect: e.effect.clone(),
            })
            .collect(),
        opened: decision
            .opened
            .iter()
            .map(|it| -> Result<InteractionRow, EngineError> {
                Ok(InteractionRow {
                    id: it.id.clone(),
                    conversation: it.conversation.clone(),
                    turn: request.turn.clone(),
                    payload: serde_json::to_value(it).map_err(corrupt)?,
                    options: it.options.clone(),
                    state: InteractionState::Open,
                })
            })
            .collect::<Result<_, _>>()?,
        answered: decision
            .answered
            .iter()
            .map(|(id, option)| Answer { interaction: id.clone(), option: option.clone() })
            .collect(),
        findings: decision
            .response
            .findings
            .iter()
            .enumerate()
            .map(|(n, finding)| -> Result<FindingRow, EngineError> {
                Ok(FindingRow {
                    seq: 0,
                    id: turn::derive_id("fnd", &[&request.conversation, &request.turn, "finding", &n.to_string()]),
                    guard: finding.guard.clone(),
                    version: finding.version.clone(),
                    conversation: request.conversation.clone(),
                    turn: request.turn.clone(),
                    kind: FindingKind::Flag,
                    payload: serde_json::to_value(finding).map_err(corrupt)?,
                    at: request.at.clone(),
                })
            })
            .collect::<Result<_, _>>()?,
    })
}

/// Facts served from a stored turn's replay record.
pub(crate) fn recorded_facts(
    stored: &StoredTurn,
) -> Result<(RecordedFacts, BTreeSet<RowRef>, CheckAnswers, GateAnswers), EngineError> {
    let corrupt = |e: serde_json::Error| EngineError::Corrupt {
        what: format!("replay record of turn `{}`", stored.turn),
        message: e.to_string(),
    };
    let facts: turn::FactsRead =
        serde_json::from_value(stored.replay.get("facts").cloned().unwrap_or(Value::Null)).map_err(corrupt)?;
    let conflicts: BTreeSet<RowRef> =
        serde_json::from_value(stored.replay.get("conflicts").cloned().unwrap_or(Value::Array(vec![])))
            .map_err(corrupt)?;
    let answers: CheckAnswers =
        serde_json::from_value(stored.replay.get("answers").cloned().unwrap_or(Value::Object(Default::default())))
            .map_err(corrupt)?;
    let gate_answers: GateAnswers = serde_json::from_value(
        stored.replay.get("outbound_answers").cloned().unwrap_or(Value::Object(Default::default())),
    )
    .map_err(corrupt)?;
    Ok((RecordedFacts::new(&facts), conflicts, answers, gate_answers))
}
