//! The turn as a pure decision (docs/design.md §3): given a valid request, the contract and a source
//! of stored facts, it decides every act in order (clauses, structure, policy, confirmation) and
//! returns what to commit: record writes with the revisions they expect, effects, events,
//! interactions, and the response. It reads facts through the [`Facts`] trait and records each
//! one it read, so a replay can decide again from exactly the same facts.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use crate::args::{self, ArgContext, Checked, UserWords};
use crate::change::RowChange;
use crate::effect::Eval;
use crate::outbound::{self, GateAnswers, LedgerFacts};
use crate::request::Draft;
use crate::request::{TurnRequest, ValidRequest};
use warrant_contract::check::{self, CheckAnswers, CheckRequest, ModelTask};
use warrant_contract::claim::PathName;
use warrant_contract::contract::Contract;
use warrant_contract::guard::{self, FindingOut};
use warrant_contract::ladder::{PromotionRecord, Subject};
use warrant_contract::operation::ArgKind;
use warrant_contract::pointer::{self, TextPointer};
use warrant_contract::policy::{Policies, PolicyDecision, RequestEntities, RowEntity};
use warrant_contract::reason::ReasonCode;
use warrant_contract::records::{Record, SharedRecord, cedar_attrs};
use warrant_contract::sure_fit::{Source, SureFit};

/// Ids are derived in [`warrant_contract::id`]; the turn's are hashes of (conversation, turn, position).
pub use warrant_contract::id::derive_id;

pub use crate::facts::{EventRecord, FactError, Facts, Interaction, PendingRead, RowEvent, RowHistory, RowRef};
use crate::workspace::{ABSENT_REVISION, Slot};
pub use crate::workspace::{RowView, Workspace};
pub use warrant_contract::verdict::{Finding, Reason, Verdict};

/// The option ids of a confirmation.
pub const CONFIRM: &str = "confirm";
/// The option id that declines a confirmation.
pub const DECLINE: &str = "decline";

/// Where an act came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActSource {
    /// An answer to an interaction.
    Answer,
    /// The request's `acts`.
    Act,
    /// A scored clause of an entry.
    Clause,
}

/// The verdict on one act.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActOut {
    /// Where it came from.
    pub source: ActSource,
    /// Its index in its source list (answers, acts, or entries for clauses).
    pub index: usize,
    /// The operation.
    pub op: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Why (empty only for a plain commit).
    pub reasons: Vec<Reason>,
    /// The interaction created (hold) or answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<String>,
    /// The effect authorized (commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

/// An interaction created in the turn, as the agent sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractionOut {
    /// Its id.
    pub id: String,
    /// The held operation.
    pub op: String,
    /// Its arguments as proposed.
    pub args: Map<String, Value>,
    /// The option ids to answer with.
    pub options: Vec<String>,
}

/// An effect authorized in the turn, for the executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectOut {
    /// Its id.
    pub id: String,
    /// The key the executor must use so the effect happens at most once.
    pub idempotency_key: String,
    /// The operation.
    pub op: String,
    /// Its checked arguments.
    pub args: Value,
}

/// The clause gate's reading of one entry, as evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadingOut {
    /// The entry's index.
    pub entry: usize,
    /// Its source kind.
    pub kind: String,
    /// The operations its clauses perform (each also appears as an act).
    pub operations: Vec<ClauseOut>,
    /// Why it performs nothing, if so.
    pub rejection: Option<Value>,
}

/// A performed clause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClauseOut {
    /// The operation.
    pub op: String,
    /// The authored clause.
    pub clause: String,
    /// The sentence index.
    pub sentence: u32,
}

/// The response to a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnResponse {
    /// The conversation.
    pub conversation: String,
    /// The turn's idempotency key.
    pub turn: String,
    /// The hash of the contract that decided.
    pub contract: String,
    /// The clause gate's readings of the entries it read.
    pub readings: Vec<ReadingOut>,
    /// Every act's verdict, answers first, then acts, then clauses.
    pub acts: Vec<ActOut>,
    /// Interactions created.
    pub interactions: Vec<InteractionOut>,
    /// Effects authorized.
    pub effects: Vec<EffectOut>,
    /// The cleared reply: the draft (or an enforcing guard's correction of it) as the outbound
    /// gate let it out on the `live` path, as is, rewritten or as fallback copy. `null` when
    /// the turn has no draft or the contract declares no `live` path for its locale: a draft is
    /// never passed through unchecked.
    pub reply: Option<Value>,
    /// What the guards found in the draft. In enforce mode a finding carries the corrected
    /// reply for the outbound gate; the guards never set `reply` themselves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<FindingOut>,
}

/// A row write to commit: the new value, and the revision it was decided against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowWrite {
    /// The row.
    pub row: RowRef,
    /// The revision read; the commit fails with `stale_revision` if the row moved since.
    /// [`ABSENT_REVISION`] for a row an effect created, which must still not exist.
    pub expected_revision: i64,
    /// The value before the turn (for reverting a failed effect); `null` for a created row.
    pub before: Value,
    /// The new value; `null` for a row an effect deleted.
    pub value: Value,
}

/// An effect to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRecord {
    /// What the executor sees.
    pub effect: EffectOut,
    /// The rows it changed.
    pub rows: Vec<RowRef>,
    /// What it changed in each of those rows, field by field: reverting a failed effect undoes
    /// these fields alone, never another effect's of the same turn.
    #[serde(default)]
    pub changes: Vec<RowChange>,
    /// For an operation without effect steps, the rows it names (its record arguments, and its
    /// resource): each is held, every later consequential act naming it asked
    /// (`effect_pending`), until the effect's outcome arrives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holds: Vec<RowRef>,
}

/// The facts a decision read, for the replay record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FactsRead {
    /// Rows read (`null` value with revision 0 marks a row that did not exist).
    pub records: Vec<SharedRecord>,
    /// Interactions read.
    pub interactions: Vec<Interaction>,
    /// Interaction ids looked up and not found.
    pub missing_interactions: Vec<String>,
    /// Promotion records the guards read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promotions: Vec<PromotionRecord>,
    /// Committed events the outbound gate read, by kind (the turn's own events are not among
    /// them: a replay makes those again).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub events: BTreeMap<String, Vec<EventRecord>>,
    /// The rows a consequential act named that an effect without steps held, its outcome not
    /// arrived, with that effect. A row found free is not listed: to a replay, a row not here
    /// is free.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingRead>,
    /// The committed events of rows that expressions read through `history`, of every
    /// conversation (the turn's own are not among them: a replay makes those again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<RowHistory>,
}

/// Everything a turn decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The response.
    pub response: TurnResponse,
    /// Row writes, one per changed row.
    pub writes: Vec<RowWrite>,
    /// Effects authorized.
    pub effects: Vec<EffectRecord>,
    /// Events to append.
    pub events: Vec<EventRecord>,
    /// Interactions opened.
    pub opened: Vec<Interaction>,
    /// Interactions answered: (id, option).
    pub answered: Vec<(String, String)>,
    /// The facts read.
    pub facts: FactsRead,
    /// The semantic checks the acts that passed structure needed, each once, in the order
    /// first needed; the answers the decision read are the supplied ones with these ids.
    pub checks: Vec<CheckRequest>,
    /// The outbound gate's questions for the reply, and its verdict on every claim.
    pub outbound: OutboundTrace,
}

/// What the outbound gate needed and decided for a turn's reply, for the replay record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutboundTrace {
    /// The model questions it asked; the answers it read are the supplied ones with these ids.
    pub questions: Vec<outbound::Question>,
    /// Every claim's verdict.
    pub verdicts: Vec<outbound::ClaimVerdict>,
}

struct Proposal<'a> {
    source: ActSource,
    index: usize,
    op: String,
    /// Its arguments, borrowed from the request or the interaction confirmed.
    args: std::borrow::Cow<'a, Map<String, Value>>,
    from: String,
    /// The user entries its text pointers point into.
    words: Rc<UserWords>,
    /// For a confirmed answer: the interaction and the revisions it saw.
    confirmed: Option<&'a Interaction>,
}

/// Decides a turn. `conflicts` names rows a previous commit attempt found stale: an act whose
/// effect would write one is refused with `stale_revision` instead.
///
/// No semantic check is answered: an act that needs one is asked (`check_unfinished`), and
/// [`Decision::checks`] names what to run before deciding again with [`decide_checked`].
pub fn decide(contract: &Contract, valid: &ValidRequest, facts: &dyn Facts, conflicts: &BTreeSet<RowRef>) -> Decision {
    decide_checked(contract, valid, facts, conflicts, &CheckAnswers::new())
}

/// Decides a turn with the answers of its semantic checks (docs/design.md §3 step 4), by check id.
/// An answer can only take away: an act needing a check that is missing, failed or not passing
/// is asked instead; a passing one lets the act go on to policy.
pub fn decide_checked(
    contract: &Contract,
    valid: &ValidRequest,
    facts: &dyn Facts,
    conflicts: &BTreeSet<RowRef>,
    answers: &CheckAnswers,
) -> Decision {
    decide_answered(contract, valid, facts, conflicts, answers, &GateAnswers::new())
}

/// Decides a turn with the answers of its semantic checks and of the outbound gate's questions
/// about its reply (docs/design.md §3 step 7). A gate question without an answer counts as failed:
/// the reply goes out as the rewrite or the fallback copy, never unchecked.
///
/// The stages, in order: the answers to earlier interactions, the proposals (confirmed answers,
/// the request's acts, the operations of scored clauses), the turn-level check, each proposal
/// decided, the announcement guard on the draft, the outbound gate on the reply, and what the
/// decision read and writes.
pub fn decide_answered(
    contract: &Contract,
    valid: &ValidRequest,
    facts: &dyn Facts,
    conflicts: &BTreeSet<RowRef>,
    answers: &CheckAnswers,
    gate_answers: &GateAnswers,
) -> Decision {
    let request = valid.request();
    let input = TurnInput {
        contract,
        valid,
        request,
        facts,
        conflicts,
        answers,
        gate_answers,
        words: Rc::new(UserWords::of_entries(&request.entries)),
        actor_row: contract.actor_table().map(|table| RowRef { table: table.to_owned(), key: request.actor.clone() }),
    };
    let mut state = TurnState::new(&input);
    let held = resolve_answers(&input, &mut state);
    let proposals = proposals(&input, &held, &mut state.response);
    let uncovered = uncovered_request(&input, &proposals);
    for proposal in &proposals {
        decide_proposal(&input, &mut state, proposal, uncovered.as_ref());
    }
    review_draft(&input, &mut state);
    clear_reply(&input, &mut state);
    state.finish()
}

/// What a turn is decided from.
struct TurnInput<'a> {
    contract: &'a Contract,
    valid: &'a ValidRequest,
    request: &'a TurnRequest,
    facts: &'a dyn Facts,
    /// Rows a previous commit attempt found stale.
    conflicts: &'a BTreeSet<RowRef>,
    /// The answers of the semantic checks, by check id.
    answers: &'a CheckAnswers,
    /// The answers of the outbound gate's questions about the reply.
    gate_answers: &'a GateAnswers,
    /// The request's entries that text pointers may point into: the request's acts and the
    /// clauses' operations point into them.
    words: Rc<UserWords>,
    /// The actor's row, when the contract names an actor table.
    actor_row: Option<RowRef>,
}

/// What the stages of a turn have decided so far.
struct TurnState<'f> {
    work: Workspace<'f>,
    response: TurnResponse,
    /// The semantic checks needed, each once, in the order first needed.
    needed: Vec<CheckRequest>,
    effects: Vec<EffectRecord>,
    events: Vec<EventRecord>,
    opened: Vec<Interaction>,
    answered: Vec<(String, String)>,
    facts_read: FactsRead,
    trace: OutboundTrace,
}

impl<'f> TurnState<'f> {
    fn new(input: &TurnInput<'f>) -> Self {
        let request = input.request;
        let mut work = Workspace::new(input.facts);
        work.conversation.clone_from(&request.conversation);
        work.at.clone_from(&request.at);
        TurnState {
            work,
            response: TurnResponse {
                conversation: request.conversation.clone(),
                turn: request.turn.clone(),
                contract: input.contract.hash().to_owned(),
                readings: Vec::new(),
                acts: Vec::new(),
                interactions: Vec::new(),
                effects: Vec::new(),
                reply: None,
                findings: Vec::new(),
            },
            needed: Vec::new(),
            effects: Vec::new(),
            events: Vec::new(),
            opened: Vec::new(),
            answered: Vec::new(),
            facts_read: FactsRead::default(),
            trace: OutboundTrace::default(),
        }
    }

    /// The last stage: the rows to write with the revisions they were read at, and every fact
    /// the decision read.
    fn finish(self) -> Decision {
        let TurnState { mut work, response, needed, effects, events, opened, answered, mut facts_read, trace } = self;
        let mut writes = Vec::new();
        for (row, slot) in std::mem::take(&mut work.rows) {
            let Slot { read, current, .. } = slot;
            match read {
                Some(read) => {
                    let unchanged = match &current {
                        Some(after) => Arc::ptr_eq(after, &read.value) || **after == *read.value,
                        None => read.value.is_null(),
                    };
                    if !unchanged {
                        // A row an effect deleted is written as `null`.
                        let after = current.as_deref().cloned().unwrap_or(Value::Null);
                        writes.push(RowWrite {
                            row: row.clone(),
                            expected_revision: read.revision,
                            before: (*read.value).clone(),
                            value: after,
                        });
                    }
                    // The value read, shared with the facts that answered it.
                    facts_read.records.push(read);
                }
                None => {
                    facts_read.records.push(SharedRecord {
                        table: row.table.clone(),
                        key: row.key.clone(),
                        revision: ABSENT_REVISION,
                        value: Arc::new(Value::Null),
                    });
                    // A row an effect created: written expecting it absent still.
                    if let Some(created) = current {
                        writes.push(RowWrite {
                            row,
                            expected_revision: ABSENT_REVISION,
                            before: Value::Null,
                            value: Arc::unwrap_or_clone(created),
                        });
                    }
                }
            }
        }
        // The events expressions read (the outbound gate's, read from the same ledger, are
        // already there).
        for (kind, read) in &work.events {
            facts_read.events.entry(kind.clone()).or_insert_with(|| read.clone());
        }
        facts_read.history =
            work.history.iter().map(|(row, events)| RowHistory { row: row.clone(), events: events.clone() }).collect();
        // Only the rows found held: a row not on the record is free to a replay, as it was.
        for (row, effect) in &work.pending {
            if effect.is_some() {
                facts_read.pending.push(PendingRead { row: row.clone(), effect: effect.clone() });
            }
        }
        for (id, found) in &work.interactions {
            match found {
                Some(it) => facts_read.interactions.push(it.clone()),
                None => facts_read.missing_interactions.push(id.clone()),
            }
        }
        Decision {
            response,
            writes,
            effects,
            events,
            opened,
            answered,
            facts: facts_read,
            checks: needed,
            outbound: trace,
        }
    }
}

/// An answer that confirms a held interaction: its index among the answers, and the interaction.
struct Confirmed {
    index: usize,
    interaction: Interaction,
}

/// Answers first: they resolve what earlier turns held. A declined or refused answer is an act
/// of its own in the response; a confirmation becomes a proposal, decided again.
fn resolve_answers(input: &TurnInput<'_>, state: &mut TurnState<'_>) -> Vec<Confirmed> {
    let request = input.request;
    let mut held = Vec::new();
    for (i, answer) in request.answers.iter().enumerate() {
        let mut out = ActOut {
            source: ActSource::Answer,
            index: i,
            op: String::new(),
            verdict: Verdict::Refuse,
            reasons: Vec::new(),
            interaction: Some(answer.interaction.clone()),
            effect: None,
        };
        let found = match state.work.interaction(&answer.interaction) {
            Ok(found) => found,
            Err(finding) => {
                out.reasons.push(finding.reason);
                state.response.acts.push(out);
                continue;
            }
        };
        let field = format!("answers[{i}]");
        // An interaction of another conversation or another actor is, to this answer, one that
        // does not exist: the same refusal, and nothing of it (not its operation) in the act.
        let found = found.filter(|it| it.conversation == request.conversation && it.actor == request.actor);
        let refusal = match &found {
            None => Some(Finding::refuse(ReasonCode::UnknownInteraction).field(field.clone())),
            Some(it) if !it.open => Some(Finding::refuse(ReasonCode::InteractionClosed).field(field.clone())),
            Some(it) if !it.options.contains(&answer.option) => {
                Some(Finding::refuse(ReasonCode::UnknownOption).field(format!("{field}.option")))
            }
            Some(_) => None,
        };
        if let Some(it) = &found {
            out.op = it.op.clone();
        }
        match (refusal, found) {
            (Some(finding), _) => {
                out.reasons.push(finding.reason);
                state.response.acts.push(out);
            }
            (None, Some(it)) => {
                state.answered.push((it.id.clone(), answer.option.clone()));
                if answer.option == CONFIRM {
                    held.push(Confirmed { index: i, interaction: it });
                } else {
                    out.reasons.push(Finding::refuse(ReasonCode::DeclinedByUser).reason);
                    state.response.acts.push(out);
                }
            }
            (None, None) => {}
        }
    }
    held
}

/// The turn's proposals in the order they are decided: confirmed answers, the request's acts,
/// then the operations of the scored clauses of each entry (whose readings go on the response).
fn proposals<'h>(input: &TurnInput<'h>, held: &'h [Confirmed], response: &mut TurnResponse) -> Vec<Proposal<'h>> {
    let (contract, request) = (input.contract, input.request);
    let mut proposals: Vec<Proposal<'h>> = held
        .iter()
        .map(|Confirmed { index, interaction: it }| Proposal {
            source: ActSource::Answer,
            index: *index,
            op: it.op.clone(),
            args: std::borrow::Cow::Borrowed(&it.args),
            from: it.from.clone(),
            words: Rc::new(UserWords {
                latest: it.user_text.clone(),
                entries: it
                    .entries
                    .iter()
                    .map(|(i, text)| (*i, (crate::args::USER_KIND.to_owned(), text.clone())))
                    .collect(),
            }),
            confirmed: Some(it),
        })
        .collect();
    for (i, act) in request.acts.iter().enumerate() {
        let from = act.from.clone().or_else(|| contract.act_kind().map(str::to_owned)).unwrap_or_default();
        proposals.push(Proposal {
            source: ActSource::Act,
            index: i,
            op: act.op.clone(),
            args: std::borrow::Cow::Borrowed(&act.args),
            from,
            words: Rc::clone(&input.words),
            confirmed: None,
        });
    }
    for (i, entry) in request.entries.iter().enumerate() {
        let Some(kind) = contract.kinds().get(&entry.kind) else { continue };
        if !contract.score().reads_kind(kind) {
            continue;
        }
        let reading = contract.score().read(kind, &entry.text);
        response.readings.push(ReadingOut {
            entry: i,
            kind: entry.kind.clone(),
            operations: reading
                .operations
                .iter()
                .map(|o| ClauseOut {
                    op: o.clause.op().to_owned(),
                    clause: o.clause.text().to_owned(),
                    sentence: o.sentence,
                })
                .collect(),
            rejection: reading
                .rejection
                .as_ref()
                .map(|r| json!({"reason": r.reason, "sentence": r.sentence, "text": reading.rejected_sentence()})),
        });
        for operation in &reading.operations {
            proposals.push(Proposal {
                source: ActSource::Clause,
                index: i,
                op: operation.clause.op().to_owned(),
                args: std::borrow::Cow::Owned(Map::new()),
                from: entry.kind.clone(),
                words: Rc::clone(&input.words),
                confirmed: None,
            });
        }
    }
    proposals
}

/// Step 4, once per turn: a request in the user's words that no proposed act covers takes
/// away every act that would commit or be held. Named whenever the turn proposes anything,
/// so that it runs in the first round beside the acts' own checks.
fn uncovered_request(input: &TurnInput<'_>, proposals: &[Proposal<'_>]) -> Option<CheckRequest> {
    match &input.words.latest {
        Some(message) if !proposals.is_empty() && input.contract.model().runs(check::UNCOVERED_REQUEST) => {
            // Arguments in canonical form: the question, and so its id, is the same for a
            // request whose store kept its keys in another order.
            let acts = proposals
                .iter()
                .map(|p| {
                    format!("{} {}", p.op, warrant_contract::id::canonical(&Value::Object(p.args.as_ref().clone())))
                })
                .collect();
            Some(CheckRequest::uncovered(message, acts))
        }
        _ => None,
    }
}

/// Decides one proposal and records what it decided: a refusal or question (its working
/// changes undone), an interaction held for confirmation, or an effect with its event.
fn decide_proposal(
    input: &TurnInput<'_>,
    state: &mut TurnState<'_>,
    proposal: &Proposal<'_>,
    uncovered: Option<&CheckRequest>,
) {
    let mut out = ActOut {
        source: proposal.source,
        index: proposal.index,
        op: proposal.op.clone(),
        verdict: Verdict::Commit,
        reasons: Vec::new(),
        interaction: proposal.confirmed.map(|it| it.id.clone()),
        effect: None,
    };
    let before = state.work.snapshot();
    state.work.touched.clear();
    let ctx = ArgContext {
        contract: input.contract,
        clock: input.valid.clock(),
        actor_row: input.actor_row.clone(),
        words: &proposal.words,
        currency: input.contract.currency(),
    };
    let checks = ActChecks { answers: input.answers, needed: &mut state.needed, uncovered };
    match decide_act(input, &ctx, &mut state.work, proposal, checks) {
        Err(finding) => {
            state.work.restore(before);
            out.verdict = finding.verdict;
            out.reasons.push(finding.reason);
        }
        Ok(ActOutcome::Hold { args }) => {
            let id = hold(input, state, proposal, args);
            out.verdict = Verdict::Hold;
            out.reasons.push(Finding::ask(ReasonCode::ConfirmationRequired).reason);
            out.interaction = Some(id);
        }
        Ok(ActOutcome::Commit { args, holds }) => {
            let changed = state.work.changed_rows(&before);
            let changes = state.work.changes(&before, &changed);
            let id = commit(input, state, proposal, args, Changed { rows: changed, changes, holds: holds.clone() });
            for row in holds {
                state.work.held.insert(row, id.clone());
            }
            out.effect = Some(id);
        }
    }
    state.response.acts.push(out);
}

/// Opens the interaction that holds `proposal` for the user's confirmation, with the revision
/// of every row its checks read; returns its id.
fn hold(input: &TurnInput<'_>, state: &mut TurnState<'_>, proposal: &Proposal<'_>, args: Map<String, Value>) -> String {
    let request = input.request;
    let n = state.opened.len().to_string();
    let id = derive_id("int", &[&request.conversation, &request.turn, "interaction", &n]);
    let op_entries =
        input.contract.operation(&proposal.op).map(|op| proposal.words.named_by(op, &args)).unwrap_or_default();
    let mut revisions = BTreeMap::new();
    for row in &state.work.touched {
        if let Some(Slot { read: Some(record), .. }) = state.work.rows.get(row) {
            revisions.insert(format!("{}/{}", row.table, row.key), record.revision);
        }
    }
    let interaction = Interaction {
        id: id.clone(),
        conversation: request.conversation.clone(),
        actor: request.actor.clone(),
        op: proposal.op.clone(),
        // With any located pointer in place of the plain value: the confirmation
        // checks the same pointer again and never asks `locate` twice.
        args,
        from: proposal.from.clone(),
        options: vec![CONFIRM.to_owned(), DECLINE.to_owned()],
        revisions,
        user_text: proposal.words.latest.clone(),
        entries: op_entries,
        open: true,
    };
    state.response.interactions.push(InteractionOut {
        id: id.clone(),
        op: interaction.op.clone(),
        args: interaction.args.clone(),
        options: interaction.options.clone(),
    });
    state.opened.push(interaction);
    id
}

/// The rows an effect changed, what it changed in each, and the rows it holds.
struct Changed {
    rows: Vec<RowRef>,
    changes: Vec<RowChange>,
    holds: Vec<RowRef>,
}

/// Records the effect of a committed proposal and its event; returns the effect's id.
fn commit(
    input: &TurnInput<'_>,
    state: &mut TurnState<'_>,
    proposal: &Proposal<'_>,
    checked: Value,
    changed: Changed,
) -> String {
    let request = input.request;
    let n = state.effects.len().to_string();
    let id = derive_id("eff", &[&request.conversation, &request.turn, "effect", &n]);
    // Derived like the id, from the same unambiguous parts: the executor's key of
    // one effect can be no other effect's.
    let idempotency_key = derive_id("key", &[&request.conversation, &request.turn, "effect", &n]);
    let effect = EffectOut { id: id.clone(), idempotency_key, op: proposal.op.clone(), args: checked.clone() };
    let event = EventRecord {
        id: derive_id("evt", &[&request.conversation, &request.turn, "event", &n]),
        kind: proposal.op.clone(),
        payload: json!({"actor": request.actor, "args": checked}),
        effect: Some(id.clone()),
    };
    // Later acts of the turn read it in the ledger, and in the history of each row it changed
    // or holds.
    state.work.turn_events.push(event.clone());
    let touched = changed.rows.iter().chain(&changed.holds).cloned().collect();
    state.work.turn_history.push((touched, state.work.turn_events.len() - 1));
    state.events.push(event);
    state.response.effects.push(effect.clone());
    state.effects.push(EffectRecord { effect, rows: changed.rows, changes: changed.changes, holds: changed.holds });
    id
}

/// The announcement guard reads the draft and the turn's calls; its findings go on the response.
fn review_draft(input: &TurnInput<'_>, state: &mut TurnState<'_>) {
    let contract = input.contract;
    if let (Some(guard), Some(draft)) = (contract.guards().announcement(), &input.request.draft) {
        // A promotion that cannot be read leaves the guard observing: it fails towards less
        // authority, never more.
        let promotion = input.facts.promotion(&guard.subject()).ok().flatten();
        state.response.findings = guard::review(guard, &draft.text, &input.request.calls, promotion.as_ref());
        // Every finding is written with the turn: the guard reports at most the contract's
        // `limits.findings_per_reply`, the first ones (whose correction an enforcing guard
        // would send), so a reply full of announcements cannot fill the store.
        state.response.findings.truncate(usize::try_from(contract.limits().findings_per_reply).unwrap_or(usize::MAX));
        state.facts_read.promotions.extend(promotion);
    }
}

/// The draft (or an enforcing guard's correction) through the outbound gate on the `live`
/// path, against the rows as the turn leaves them and the ledger with the turn's events.
fn clear_reply<'f>(input: &TurnInput<'f>, state: &mut TurnState<'f>) {
    let request = input.request;
    let Some(draft) = &request.draft else { return };
    // An enforcing guard's correction is the draft the gate checks; the guard itself
    // never sets the reply.
    let corrected = state.response.findings.iter().find_map(|f| f.replacement.clone());
    let checked = Draft { text: corrected.unwrap_or_else(|| draft.text.clone()), claims: draft.claims.clone() };
    let ledger = TurnLedger {
        work: RefCell::new(&mut state.work),
        facts: input.facts,
        conversation: &request.conversation,
        turn_events: &state.events,
        read: RefCell::new(BTreeMap::new()),
    };
    let outgoing = outbound::Outgoing {
        conversation: &request.conversation,
        // The live reply goes to the turn's actor: it may state only what they may see.
        actor: &request.actor,
        path: PathName::Live,
        channel: None,
        locale: &request.locale,
        at: &request.at,
        draft: &checked,
    };
    // A contract without a `live` path for this locale has nothing to send it with.
    if let Ok(gate) = outbound::clear(input.contract, &outgoing, &ledger, input.gate_answers) {
        state.response.reply = serde_json::to_value(&gate.message).ok();
        state.trace = OutboundTrace { questions: gate.questions, verdicts: gate.verdicts };
    }
    state.facts_read.events = ledger.read.into_inner();
}

/// What an act that passed every check becomes.
enum ActOutcome {
    /// Held for a confirmation, with the arguments the confirmation will check again.
    Hold { args: Map<String, Value> },
    /// Committed, with the rows its effect holds (for an operation without effect steps).
    Commit { args: Value, holds: Vec<RowRef> },
}

/// The semantic checks an act reads and names: the supplied answers, the checks needed so far
/// (this act's are added), and the turn-level check, if it runs.
struct ActChecks<'a> {
    answers: &'a CheckAnswers,
    needed: &'a mut Vec<CheckRequest>,
    uncovered: Option<&'a CheckRequest>,
}

fn decide_act(
    input: &TurnInput<'_>,
    ctx: &ArgContext<'_>,
    work: &mut Workspace<'_>,
    proposal: &Proposal<'_>,
    checks: ActChecks<'_>,
) -> Result<ActOutcome, Finding> {
    let contract = input.contract;
    let ActChecks { answers, needed, uncovered } = checks;
    let op = contract.operation(&proposal.op).ok_or_else(|| {
        Finding::refuse(ReasonCode::UnknownOperation)
            .field("op".into())
            .detail(format!("`{}` is not an operation of the contract", warrant_contract::text::visible(&proposal.op)))
    })?;
    let kind = contract.kinds().get(&proposal.from).ok_or_else(|| Finding::refuse(ReasonCode::OperationNotOffered))?;
    if !op.from.contains(kind) {
        return Err(Finding::refuse(ReasonCode::OperationNotOffered)
            .detail(format!("`{}` may not propose `{}`", proposal.from, op.name)));
    }
    if let Some(request) = uncovered
        && !needed.iter().any(|r| r.id == request.id)
    {
        needed.push(request.clone());
    }
    if let Some(it) = proposal.confirmed {
        unchanged_since_confirmation(work, it)?;
    }
    let actor_record = match &ctx.actor_row {
        Some(row) => Some(work.row(row)?.ok_or_else(|| Finding::refuse(ReasonCode::UnknownActor))?),
        None => None,
    };
    let located = locate_plain_values(op, proposal, answers, needed)?;
    let checked = args::check_args(ctx, work, op, &located.args)?;
    semantic_checks(op, &checked, proposal, &located, answers, needed)?;
    // Only an operation that mints keys reads the seed.
    let seed = if op.keys.is_empty() { String::new() } else { mint_seed(input, proposal) };
    let mut eval = Eval::new(contract, ctx.actor_row.clone(), &checked, ctx.clock, seed);
    eval.derive_all(work, op)?;
    let actor = ActorRecord { row: ctx.actor_row.as_ref(), record: actor_record.as_ref() };
    decide_policy(contract, work, op, actor, &eval)?;

    if let Some(request) = uncovered
        && let Some(finding) = check::turn_finding(request, answers.get(&request.id))
    {
        return Err(finding);
    }
    let named = if op.consequential { named_rows(op, &checked, ctx.actor_row.as_ref()) } else { Vec::new() };
    for row in &named {
        if let Some(effect) = work.pending_effect(row)? {
            return Err(Finding::ask(ReasonCode::EffectPending).detail(format!(
                "row `{}` of `{}` waits for the outcome of effect `{effect}`, whose operation has no effect steps",
                row.key, row.table
            )));
        }
    }
    if op.consequential && proposal.confirmed.is_none() {
        effects_fit_schemas(contract, work, op, &eval)?;
        return Ok(ActOutcome::Hold { args: located.args.into_owned() });
    }
    let before = work.snapshot();
    eval.apply(work, op)?;
    rows_fit_schemas(contract, work, &before)?;
    if work.changed_rows(&before).iter().any(|row| input.conflicts.contains(row)) {
        return Err(
            Finding::refuse(ReasonCode::StaleRevision).detail("another commit changed a row this effect writes".into())
        );
    }
    let args_json: Map<String, Value> =
        checked.iter().filter(|(_, v)| !matches!(v, Checked::Absent)).map(|(k, v)| (k.clone(), v.to_json())).collect();
    // Only the executor knows what an operation without effect steps changes: it holds the
    // rows it names until its outcome arrives.
    let holds = if op.effects.is_empty() { named } else { Vec::new() };
    Ok(ActOutcome::Commit { args: Value::Object(args_json), holds })
}

/// What an act's minted keys are derived from: its conversation, turn, and place in the turn
/// (which list it came from, at which index), so that a replay mints the same keys.
fn mint_seed(input: &TurnInput<'_>, proposal: &Proposal<'_>) -> String {
    let place = serde_json::to_string(&proposal.source).unwrap_or_default();
    derive_id("mint", &[&input.request.conversation, &input.request.turn, &place, &proposal.index.to_string()])
}

/// The rows a consequential act names: those of its record and records arguments, and its
/// resource (the actor's row when the operation declares none), in order, each once.
fn named_rows(
    op: &warrant_contract::operation::Operation,
    checked: &BTreeMap<String, Checked>,
    actor_row: Option<&RowRef>,
) -> Vec<RowRef> {
    let mut rows = BTreeSet::new();
    for value in checked.values() {
        match value {
            Checked::Record(row) => {
                rows.insert(row.clone());
            }
            Checked::Records(named) => rows.extend(named.iter().cloned()),
            _ => {}
        }
    }
    if op.resource.is_none()
        && let Some(actor) = actor_row
    {
        rows.insert(actor.clone());
    }
    rows.into_iter().collect()
}

/// What a turn's first decision is foreseen to read, from the request alone: the rows it reads
/// ([`Facts::record`]) and those whose pending effect it asks ([`Facts::pending_effect`]).
/// A source that pays a round trip for each read may read them together before the decision
/// and keep them in its [`crate::facts::FactsMemo`]; the decision still reads what it asks for,
/// foreseen or not, and a foreseen fact it does not ask for is read for nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Foreseen {
    /// Rows read: the actor's, and those the acts' record arguments name by a plain id.
    pub rows: Vec<RowRef>,
    /// Rows whose pending effect a consequential act asks: those it names.
    pub pending: Vec<RowRef>,
}

/// The facts the first decision of `valid` is foreseen to read ([`Foreseen`]), each once: an
/// act's rows are named as its decision would name them once its arguments passed their checks
/// (as `named_rows` does), and an act the contract does not offer, or an argument in another form
/// than an id (a list of ids for `records`), foresees nothing.
#[must_use]
pub fn foreseen(contract: &Contract, valid: &ValidRequest) -> Foreseen {
    let request = valid.request();
    let actor = contract.actor_table().map(|table| RowRef { table: table.to_owned(), key: request.actor.clone() });
    let mut rows: BTreeSet<RowRef> = actor.iter().cloned().collect();
    let mut pending = BTreeSet::new();
    for act in &request.acts {
        let Some(op) = contract.operation(&act.op) else { continue };
        let mut named = Vec::new();
        for arg in &op.args {
            let Some(value) = act.args.get(&arg.name) else { continue };
            match &arg.kind {
                ArgKind::Record { table } => {
                    let key = match value {
                        Value::String(key) => Some(key.as_str()),
                        Value::Object(map) => map.get("id").and_then(Value::as_str),
                        _ => None,
                    };
                    named.extend(key.map(|key| RowRef { table: table.clone(), key: key.to_owned() }));
                }
                ArgKind::Records { table, .. } => {
                    let Value::Array(items) = value else { continue };
                    named.extend(
                        items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|key| RowRef { table: table.clone(), key: key.to_owned() }),
                    );
                }
                _ => {}
            }
        }
        rows.extend(named.iter().cloned());
        if op.consequential {
            pending.extend(named);
            if op.resource.is_none() {
                pending.extend(actor.iter().cloned());
            }
        }
    }
    Foreseen { rows: rows.into_iter().collect(), pending: pending.into_iter().collect() }
}

/// Before a consequential act is held, its effect is tried on the working copies and undone:
/// an effect whose rows would break their schemas is refused now rather than after the user
/// confirms. A step that cannot apply here is left to the confirmation, which decides again.
/// An effect the contract shows will fit (`warrant_contract::sure_fit`) is not tried where what is left
/// to check holds: the trial's answer would be that it fits.
fn effects_fit_schemas(
    contract: &Contract,
    work: &mut Workspace<'_>,
    op: &warrant_contract::operation::Operation,
    eval: &Eval<'_>,
) -> Result<(), Finding> {
    if let Some(sure) = &op.sure_fit
        && sure_fit_holds(contract, work, sure, eval)
    {
        return Ok(());
    }
    let (before, touched) = (work.snapshot(), work.touched.clone());
    // On trial, the fields the steps write are kept beside the rows, not in copies of them.
    work.begin_trial();
    let fits = match eval.apply(work, op) {
        Ok(()) => rows_fit_schemas(contract, work, &before),
        Err(_) => Ok(()),
    };
    work.end_trial();
    work.restore(before);
    work.touched = touched;
    fits
}

/// Whether an effect the contract shows will fit does fit here: every row its steps may write
/// has been read this turn, is as read, and fits its table (so its fields no step writes still
/// fit), and every value left to check fits the field it is written to, as the steps would write
/// it. `false` says nothing of the effect: it is tried.
fn sure_fit_holds(contract: &Contract, work: &Workspace<'_>, sure: &SureFit, eval: &Eval<'_>) -> bool {
    let currency = contract.currency();
    let row_fits = |row: &RowRef| {
        let (Some(table), Some(slot)) = (contract.table(&row.table), work.rows.get(row)) else { return false };
        match (&slot.read, &slot.current) {
            (Some(read), Some(current)) => {
                Arc::ptr_eq(&read.value, current) && contract.fits().fits(table, read, currency)
            }
            _ => false,
        }
    };
    let rows_fit = sure.roots.iter().all(|root| match (root.as_str(), eval.args.get(root)) {
        ("actor", _) => eval.actor.as_ref().is_some_and(row_fits),
        (_, Some(Checked::Record(row))) => row_fits(row),
        (_, Some(Checked::Records(rows))) => rows.iter().all(row_fits),
        (_, Some(Checked::Member(m))) => row_fits(&m.row),
        (_, Some(Checked::Members(ms))) => ms.iter().all(|m| row_fits(&m.row)),
        (_, Some(Checked::Absent)) => true,
        _ => false,
    });
    rows_fit
        && sure.values.iter().all(|(source, field)| {
            let value = match source {
                Source::Literal(v) => std::borrow::Cow::Borrowed(v),
                Source::Arg(arg) => {
                    std::borrow::Cow::Owned(eval.args.get(arg).map_or(Value::Null, |c| c.to_row_json(currency)))
                }
                Source::ArgAsGiven(arg) => {
                    std::borrow::Cow::Owned(eval.args.get(arg).map_or(Value::Null, Checked::to_json))
                }
                Source::Derived(name) => {
                    std::borrow::Cow::Owned(eval.derived.get(name).map_or(Value::Null, crate::effect::Derived::to_json))
                }
            };
            match &*value {
                Value::Null => field.optional,
                value => warrant_contract::schema::check_value(field, "", value, currency).is_ok(),
            }
        })
}

/// Every row an effect changed must still fit its table: an effect whose result breaks the
/// schema fails closed, naming the row and the field.
fn rows_fit_schemas(
    contract: &Contract,
    work: &mut Workspace<'_>,
    before: &BTreeMap<RowRef, Option<std::sync::Arc<Value>>>,
) -> Result<(), Finding> {
    let currency = contract.currency();
    for row in work.changed_rows(before) {
        let Some(table) = contract.table(&row.table) else { continue };
        // A changed row has been read: its slot is there. One deleted has nothing to check.
        let Some(slot) = work.rows.get(&row) else { continue };
        let Some(value) = &slot.current else { continue };
        // During a trial, the fields its steps wrote beside the row are read in place of its own.
        let beside = work.trial.as_ref().and_then(|t| t.fields.get(&row));
        // A row whose value as read fits is checked on the fields its effects wrote alone.
        let written = match (&slot.read, slot.written.fields()) {
            (Some(read), Some(fields)) if contract.fits().fits(table, read, currency) => Some(fields),
            _ => None,
        };
        let checked = match written {
            Some(fields) => {
                warrant_contract::records::check_row_fields(table, &row.key, value, beside, currency, &|field| {
                    fields.contains(field)
                })
            }
            None => warrant_contract::records::check_row_fields(table, &row.key, value, beside, currency, &|_| true),
        };
        if let Err(e) = checked {
            return Err(Finding::refuse(ReasonCode::EffectBreaksSchema).detail(e.to_string()));
        }
    }
    Ok(())
}

/// A confirmed act is decided again only if no row its checks read has moved since the
/// confirmation was asked.
fn unchanged_since_confirmation(work: &mut Workspace<'_>, it: &Interaction) -> Result<(), Finding> {
    for (row, revision) in &it.revisions {
        let Some((table, key)) = row.split_once('/') else { continue };
        let current = work.row(&RowRef { table: table.to_owned(), key: key.to_owned() })?;
        if current.map(|r| r.revision) != Some(*revision) {
            return Err(Finding::refuse(ReasonCode::StaleRevision)
                .detail(format!("`{row}` changed after the confirmation was asked; ask again")));
        }
    }
    Ok(())
}

/// The actor as the policy sees it: their row and the record read for it.
#[derive(Clone, Copy)]
struct ActorRecord<'a> {
    row: Option<&'a RowRef>,
    record: Option<&'a RowView>,
}

/// The principal and the resource (`None`: the principal itself) as Cedar entities; an entity
/// Cedar refuses is the inner error, a resource that cannot be read the outer one.
fn policy_entities(
    contract: &Contract,
    work: &mut Workspace<'_>,
    op: &warrant_contract::operation::Operation,
    actor: ActorRecord<'_>,
    checked: &BTreeMap<String, Checked>,
) -> Result<Result<RequestEntities, String>, Finding> {
    let currency = contract.currency();
    // A row as Cedar reads it: its typed instants and dates as datetimes.
    let policy_attrs = |table: &warrant_contract::records::Table, key: &str, value: &Value| {
        let mut attrs = cedar_attrs(table, key, value, currency);
        warrant_contract::records::cedar_datetimes(table, &mut attrs);
        attrs
    };
    let policies = contract.policies();
    // Built once per row revision and reused (`Policies::row_entity`).
    let entity_of = |table: &warrant_contract::records::Table, key: &str, view: &RowView| {
        let row = RowEntity {
            table: &table.name,
            entity_type: &table.entity,
            key,
            value: &view.value,
            stored: view.unchanged.then_some(view.revision),
        };
        policies.row_entity(&row, || policy_attrs(table, key, &view.value))
    };
    let actor_table = contract.actor_table().and_then(|t| contract.table(t));
    let principal_uid = match (actor.record, actor_table, actor.row) {
        (Some(_), Some(table), Some(row)) => (table.entity.as_str(), row.key.as_str()),
        _ => ("Actor", ""),
    };
    // The resource's row, unless it is the principal itself.
    let resource = match op.resource.as_ref().and_then(|r| checked.get(r)) {
        Some(Checked::Record(row)) => {
            let record = work.row(row)?.ok_or_else(|| Finding::refuse(ReasonCode::UnknownRecord))?;
            let table = contract.table(&row.table).ok_or_else(|| Finding::refuse(ReasonCode::UnknownRecord))?;
            (principal_uid != (table.entity.as_str(), row.key.as_str())).then_some((table, row, record))
        }
        _ => None,
    };
    let principal = match (actor.record, actor_table, actor.row) {
        (Some(record), Some(table), Some(row)) => entity_of(table, &row.key, record),
        _ => Policies::plain_entity("Actor", "", &json!({})),
    };
    let entities = principal.and_then(|principal| match &resource {
        Some((table, row, record)) => {
            Ok(RequestEntities { principal, resource: Some(entity_of(table, &row.key, record)?) })
        }
        None => Ok(RequestEntities { principal, resource: None }),
    });
    Ok(entities)
}

/// Policy: the principal, the resource and the context (arguments, derived quantities, members,
/// the turn's clock) given to Cedar; anything but a permit takes the act away.
fn decide_policy(
    contract: &Contract,
    work: &mut Workspace<'_>,
    op: &warrant_contract::operation::Operation,
    actor: ActorRecord<'_>,
    eval: &Eval<'_>,
) -> Result<(), Finding> {
    let currency = contract.currency();
    let checked = eval.args;
    let policies = contract.policies();
    let entities = policy_entities(contract, work, op, actor, checked)?;
    // Only what a policy of the action can read is built: Cedar is handed no more.
    let reads = |path: &[&str]| policies.reads_context_at(&op.name, path);
    let mut context_args = Map::new();
    let mut members = Map::new();
    for (name, value) in checked {
        if !matches!(value, Checked::Absent) && reads(&["args", name]) {
            context_args.insert(name.clone(), value.to_json());
        }
        if !reads(&["members", name]) {
            continue;
        }
        let member_attrs = |work: &mut Workspace<'_>, m: &args::MemberRef| -> Result<Value, Finding> {
            let element = args::member_value(work, m)?;
            let table = contract.table(&m.row.table).ok_or_else(|| Finding::refuse(ReasonCode::UnknownRecord))?;
            let mut prefix = vec![m.path.as_str()];
            if m.position.is_none() {
                prefix.push(&m.id);
            }
            Ok(warrant_contract::records::cedar_value_at(table, &prefix, &element, currency))
        };
        match value {
            Checked::Member(m) => {
                members.insert(name.clone(), member_attrs(work, m)?);
            }
            Checked::Members(ms) => {
                let all: Vec<Value> = ms.iter().map(|m| member_attrs(work, m)).collect::<Result<_, _>>()?;
                members.insert(name.clone(), Value::Array(all));
            }
            _ => {}
        }
    }
    let clock = eval.clock;
    // Built in place (no value copied through serde), and the clock only when a policy of the
    // action can read it.
    let mut context = Map::new();
    context.insert("args".into(), Value::Object(context_args));
    if reads(&["derived"]) {
        context.insert("derived".into(), Value::Object(policy_derived(op, eval)));
    }
    context.insert("members".into(), Value::Object(members));
    if reads(&["now"]) {
        let now =
            warrant_contract::date::cedar_datetime(clock.at).map_or(Value::Null, warrant_contract::policy::datetime);
        context.insert("now".into(), now);
    }
    if reads(&["today"]) {
        context.insert("today".into(), warrant_contract::policy::datetime(clock.today().to_string()));
    }
    if reads(&["time_zone"]) {
        let time_zone = clock.time_zone.iana_name().unwrap_or("UTC");
        context.insert("time_zone".into(), Value::String(time_zone.to_owned()));
    }
    let context = Value::Object(context);
    // An entity Cedar refuses errs, as it did when Cedar was handed the rows with the context.
    let entities = match entities {
        Ok(built) => built,
        Err(message) => return Err(Finding::refuse(ReasonCode::PolicyError).detail(message)),
    };
    match policies.decide_entities(entities, &op.name, context) {
        PolicyDecision::Permit => Ok(()),
        PolicyDecision::Forbid(policies) => {
            let mut finding = Finding::refuse(ReasonCode::ForbiddenByPolicy);
            finding.reason.policies = policies;
            Err(finding)
        }
        PolicyDecision::NoPermit => Err(Finding::refuse(ReasonCode::NoPolicyPermits)),
        PolicyDecision::Error(message) => Err(Finding::refuse(ReasonCode::PolicyError).detail(message)),
    }
}

/// The derived quantities as Cedar reads them: a CEL quantity of type `instant` a `datetime`,
/// every other one as its JSON.
fn policy_derived(op: &warrant_contract::operation::Operation, eval: &Eval<'_>) -> Map<String, Value> {
    use warrant_contract::expressions::ValueType;
    let instant = |name: &str| {
        op.derive.iter().any(|(n, e)| {
            n == name && matches!(e, warrant_contract::operation::Expr::Cel(v) if v.ty == Some(ValueType::Instant))
        })
    };
    eval.derived
        .iter()
        .map(|(name, value)| {
            let json = value.to_json();
            let cedar = match json.as_str().filter(|_| instant(name)).map(warrant_contract::date::parse_instant) {
                Some(Ok(at)) => {
                    warrant_contract::date::cedar_datetime(at).map_or(Value::Null, warrant_contract::policy::datetime)
                }
                _ => json,
            };
            (name.clone(), cedar)
        })
        .collect()
}

/// An act's arguments with each located pointer in place of its plain value (borrowed when
/// there was none), and the names of the located arguments.
struct Located<'p> {
    args: std::borrow::Cow<'p, Map<String, Value>>,
    located: BTreeSet<String>,
}

/// A value of an act that may hold the user's words: an argument, or a field of one element of
/// an `objects` argument (named `passengers[0].first_name`, as its refusals name it).
struct WordSlot<'o> {
    /// Its name in questions and in the field a finding names (after `args.`).
    name: String,
    /// Its declaration: the argument's, or the field's.
    arg: &'o warrant_contract::operation::Arg,
    /// The argument it is in, and for a field the element's index.
    at: (&'o str, Option<usize>),
}

impl WordSlot<'_> {
    fn get<'v>(&self, args: &'v Map<String, Value>) -> Option<&'v Value> {
        match self.at {
            (name, None) => args.get(name),
            (name, Some(i)) => args.get(name)?.get(i)?.get(&self.arg.name),
        }
    }

    fn set(&self, args: &mut Map<String, Value>, value: Value) {
        match self.at {
            (name, None) => {
                args.insert(name.to_owned(), value);
            }
            (name, Some(i)) => {
                if let Some(Value::Object(element)) = args.get_mut(name).and_then(|list| list.get_mut(i)) {
                    element.insert(self.arg.name.clone(), value);
                }
            }
        }
    }

    fn checked<'c>(&self, checked: &'c BTreeMap<String, Checked>) -> Option<&'c Checked> {
        match (self.at, checked.get(self.at.0)) {
            ((_, None), value) => value,
            ((_, Some(i)), Some(Checked::Objects(elements))) => elements.get(i)?.get(&self.arg.name),
            _ => None,
        }
    }
}

/// The values of an act that may hold the user's words, in declaration order: each argument,
/// and for an `objects` argument each field of each element given.
fn word_slots<'o>(op: &'o warrant_contract::operation::Operation, args: &Map<String, Value>) -> Vec<WordSlot<'o>> {
    let mut slots = Vec::new();
    for arg in &op.args {
        match (&arg.kind, args.get(&arg.name)) {
            (ArgKind::Objects { fields, .. }, Some(Value::Array(items))) => {
                for i in 0..items.len() {
                    for field in fields {
                        let name = format!("{}[{i}].{}", arg.name, field.name);
                        slots.push(WordSlot { name, arg: field, at: (&arg.name, Some(i)) });
                    }
                }
            }
            _ => slots.push(WordSlot { name: arg.name.clone(), arg, at: (&arg.name, None) }),
        }
    }
    slots
}

/// Step 4 before structure: a plain string proposed for a `text` argument (or a bare id for
/// an enum with evidence) is no pointer, so the `locate` task is asked which words of the
/// latest user entry give it. Its answer (a pointer, beside the id for an enum) replaces the
/// plain value and goes through structure exactly as if the agent had sent it; the model never
/// supplies the value's text. Returns the arguments to check and the
/// names of the located ones; anything but a pointer for every plain value takes the act away.
fn locate_plain_values<'p>(
    op: &warrant_contract::operation::Operation,
    proposal: &'p Proposal<'_>,
    answers: &CheckAnswers,
    needed: &mut Vec<CheckRequest>,
) -> Result<Located<'p>, Finding> {
    let mut args = std::borrow::Cow::Borrowed(proposal.args.as_ref());
    let mut located = BTreeSet::new();
    let mut first: Option<Finding> = None;
    for slot in word_slots(op, &proposal.args) {
        let arg = slot.arg;
        let Some(Value::String(proposed)) = slot.get(&proposal.args) else { continue };
        match &arg.kind {
            ArgKind::Text { allow_empty } if !(*allow_empty && proposed.is_empty()) => {}
            // An id the user must have said, sent without the words they said it with: they
            // are located like a text value's. An id outside the set is refused by structure,
            // with no question asked.
            ArgKind::Enum { values, evidence: true } if values.contains(proposed) => {}
            _ => continue,
        }
        let field = format!("args.{}", slot.name);
        let Some(message) = proposal.words.latest.as_deref() else {
            let finding = Finding::ask(ReasonCode::PointerInvalid)
                .field(field)
                .detail("the turn has no user entry to point into".into());
            return Err(first.unwrap_or(finding));
        };
        let request = CheckRequest::locate(&op.name, &slot.name, proposed, message);
        match check::located(&request, answers.get(&request.id)) {
            Ok(mut pointer) => {
                // The question was about the latest user entry, so its answer points there.
                pointer.entry = None;
                let mut value = serde_json::to_value(&pointer).unwrap_or(Value::Null);
                if let (ArgKind::Enum { .. }, Value::Object(map)) = (&arg.kind, &mut value) {
                    map.insert("value".into(), Value::String(proposed.clone()));
                }
                slot.set(args.to_mut(), value);
                located.insert(slot.name.clone());
            }
            Err(finding) => {
                first.get_or_insert(finding);
            }
        }
        if !needed.iter().any(|r| r.id == request.id) {
            needed.push(request);
        }
    }
    first.map_or(Ok(Located { args, located }), Err)
}

/// Step 4: the semantic checks the contract declares on the act's arguments, asked of the
/// supplied answers, and `value_stated` on every located value and every enum with evidence
/// whether declared or not (an enum that declares `value_classified` is judged by that
/// instead): the words a model located, and the words an id is said to come from, are checked
/// by another question before they can be used. Every
/// check of the act is named in `needed`, so that one round of model calls can answer them
/// all; the first that takes something away decides.
fn semantic_checks(
    op: &warrant_contract::operation::Operation,
    checked: &BTreeMap<String, Checked>,
    proposal: &Proposal<'_>,
    located: &Located<'_>,
    answers: &CheckAnswers,
    needed: &mut Vec<CheckRequest>,
) -> Result<(), Finding> {
    let Located { args, located } = located;
    let mut first: Option<Finding> = None;
    for slot in word_slots(op, args) {
        let arg = slot.arg;
        // An enum the user must have said is always checked against the words it points at.
        let evidenced = matches!(arg.kind, ArgKind::Enum { evidence: true, .. });
        let stated = evidenced || located.contains(&slot.name);
        if arg.checks.is_empty() && !stated {
            continue;
        }
        let (Some(Checked::Text(value)) | Some(Checked::Enum(value))) = slot.checked(checked) else { continue };
        if value.is_empty() {
            // An allowed empty value holds no words of the user to check.
            continue;
        }
        let field = format!("args.{}", slot.name);
        let unresolved = || Finding::ask(ReasonCode::PointerInvalid).field(field.clone());
        let pointer: TextPointer =
            slot.get(args).and_then(|v| args::pointer_of(&arg.kind, v)).ok_or_else(unresolved)?;
        let message = proposal.words.message(&pointer, &field)?;
        let numbered = pointer::numbered(message);
        let resolved = pointer::resolve(&numbered, &pointer).map_err(|_| unresolved())?;
        let mut tasks: Vec<ModelTask> = arg.checks.clone();
        // An enum judged against its whole set needs no second question about the same words.
        let classified = tasks.contains(&ModelTask::ValueClassified);
        if stated && !classified && !tasks.contains(&ModelTask::ValueStated) {
            tasks.push(ModelTask::ValueStated);
        }
        for task in tasks {
            let ptr = [resolved.from, resolved.to];
            let request = match (&arg.kind, task) {
                (ArgKind::Enum { values, .. }, ModelTask::ValueClassified) => {
                    CheckRequest::classified(&op.name, &slot.name, value, ptr, message, values)
                }
                _ => CheckRequest::new(task, &op.name, &slot.name, value, ptr, message),
            };
            if first.is_none() {
                first = check::finding(&request, answers.get(&request.id));
            }
            if !needed.iter().any(|r| r.id == request.id) {
                needed.push(request);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// The facts the outbound gate reads in a turn: rows as this turn leaves them, and the
/// conversation's committed events together with the ones this turn writes.
struct TurnLedger<'w, 'f> {
    work: RefCell<&'w mut Workspace<'f>>,
    facts: &'f dyn Facts,
    conversation: &'w str,
    turn_events: &'w [EventRecord],
    read: RefCell<BTreeMap<String, Vec<EventRecord>>>,
}

impl LedgerFacts for TurnLedger<'_, '_> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let row = RowRef { table: table.to_owned(), key: key.to_owned() };
        let mut work = self.work.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let view = work.row(&row).map_err(|f| FactError(f.reason.detail.unwrap_or_default()))?;
        Ok(view.map(|v| Record { table: row.table, key: row.key, revision: v.revision, value: (*v.value).clone() }))
    }

    fn events(&self, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let stored = self.facts.events(self.conversation, kind)?;
        self.read.borrow_mut().insert(kind.to_owned(), stored.clone());
        let mut all = stored;
        all.extend(self.turn_events.iter().filter(|e| e.kind == kind).cloned());
        Ok(all)
    }
}

/// Facts recorded on a replay record, served back for a replay.
#[derive(Debug, Clone, Default)]
pub struct RecordedFacts {
    records: BTreeMap<(String, String), SharedRecord>,
    interactions: BTreeMap<String, Option<Interaction>>,
    promotions: Vec<PromotionRecord>,
    events: BTreeMap<String, Vec<EventRecord>>,
    pending: BTreeMap<RowRef, Option<String>>,
    history: BTreeMap<RowRef, Vec<RowEvent>>,
}

impl RecordedFacts {
    /// Serves the facts a decision read.
    pub fn new(read: &FactsRead) -> RecordedFacts {
        let mut facts = RecordedFacts::default();
        for record in &read.records {
            facts.records.insert((record.table.clone(), record.key.clone()), record.clone());
        }
        for it in &read.interactions {
            facts.interactions.insert(it.id.clone(), Some(it.clone()));
        }
        for id in &read.missing_interactions {
            facts.interactions.insert(id.clone(), None);
        }
        facts.promotions.clone_from(&read.promotions);
        facts.events.clone_from(&read.events);
        for read in &read.pending {
            facts.pending.insert(read.row.clone(), read.effect.clone());
        }
        for read in &read.history {
            facts.history.insert(read.row.clone(), read.events.clone());
        }
        facts
    }
}

impl Facts for RecordedFacts {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        Ok(self.shared_record(table, key)?.map(|r| r.to_record()))
    }

    fn shared_record(&self, table: &str, key: &str) -> Result<Option<SharedRecord>, FactError> {
        match self.records.get(&(table.to_owned(), key.to_owned())) {
            Some(record) if record.revision == 0 && record.value.is_null() => Ok(None),
            Some(record) => Ok(Some(record.clone())),
            None => Err(FactError(format!("row `{key}` of `{table}` is not on the replay record"))),
        }
    }

    fn interaction(&self, id: &str) -> Result<Option<Interaction>, FactError> {
        self.interactions
            .get(id)
            .cloned()
            .ok_or_else(|| FactError(format!("interaction `{id}` is not on the replay record")))
    }

    fn promotion(&self, subject: &Subject) -> Result<Option<PromotionRecord>, FactError> {
        Ok(self.promotions.iter().find(|p| p.subject.name == subject.name).cloned())
    }

    /// A row found held is on the record with its effect; a row that is not was found free
    /// (or not asked about, as in every record written before effects could hold rows).
    fn pending_effect(&self, row: &RowRef) -> Result<Option<String>, FactError> {
        Ok(self.pending.get(row).cloned().flatten())
    }

    fn events(&self, _conversation: &str, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        self.events
            .get(kind)
            .cloned()
            .ok_or_else(|| FactError(format!("events of `{kind}` are not on the replay record")))
    }

    fn row_events(&self, row: &RowRef) -> Result<Vec<RowEvent>, FactError> {
        self.history.get(row).cloned().ok_or_else(|| {
            FactError(format!("the events of row `{}` of `{}` are not on the replay record", row.key, row.table))
        })
    }
}
