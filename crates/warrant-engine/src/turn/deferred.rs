//! A turn that writes nothing, decided now and committed after its caller has answered: the MCP
//! gateway forwards an allowed read and sends its answer before the read's record is written, so
//! the store's write adds nothing to the read's wait. A turn that writes a record, opens or
//! answers an interaction, or records an event is committed before it is returned, as
//! [`Engine::turn`] does: its record is durable before anything acts on it.

use warrant_core::request::{self, ValidRequest};
use warrant_core::turn::TurnResponse;
use warrant_store::{Commit, CommitOutcome, Store, TurnAhead};

use super::{Gathered, Reads, TurnResult, commit_of, pairs, read_ahead, repeat};
use crate::{Engine, EngineError};

/// What [`Engine::decide_turn`] came to.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "one per turn, returned once")]
pub enum Deciding {
    /// Committed already (or answered from the record, or rejected), as [`Engine::turn`] does.
    Done(TurnResult),
    /// Decided, writing nothing, and not committed yet: commit it with [`Engine::commit_decided`].
    Deferred(DeferredTurn),
}

/// A turn decided that writes nothing, its commit waiting.
#[derive(Debug)]
pub struct DeferredTurn {
    valid: ValidRequest,
    commit: Commit,
    response: TurnResponse,
}

impl DeferredTurn {
    /// The response, as it will be committed.
    pub fn response(&self) -> &TurnResponse {
        &self.response
    }
}

impl<S: Store> Engine<S> {
    /// Decides one turn request (JSON text) as [`Engine::turn`] does, but returns a turn that
    /// writes nothing uncommitted, for [`Engine::commit_decided`] after the caller has acted on
    /// it. Until then the turn is on no record: a process that ends first loses it.
    pub fn decide_turn(&mut self, json: &str) -> Result<Deciding, EngineError> {
        let valid = match request::parse(&self.contract, json) {
            Ok(valid) => valid,
            Err(error) => return Ok(Deciding::Done(TurnResult::Rejected(error))),
        };
        let request = valid.request();
        self.store.begin_reads()?;
        let foreseen = warrant_core::turn::foreseen(&self.contract, &valid);
        let (rows, pending) = (pairs(&foreseen.rows), pairs(&foreseen.pending));
        let seen = self.store.turn_ahead(
            &request.conversation,
            &request.turn,
            warrant_store::ReadAhead { rows: &rows, pending: &pending },
        );
        if !matches!(seen, Ok(TurnAhead { turn: None, .. })) {
            self.store.end_reads()?;
        }
        let ahead = seen?;
        if let Some(stored) = &ahead.turn {
            return repeat(&valid, stored).map(Deciding::Done);
        }
        let memo = read_ahead(&foreseen, ahead);
        let mut gathered = Gathered::default();
        let budget = self.model.as_ref().map(crate::model::ModelSetup::turn_budget);
        let decision = self.decide_answering(&valid, &mut gathered, budget.as_ref(), &memo, Reads::Open)?;
        let writes_nothing = decision.writes.is_empty()
            && decision.events.is_empty()
            && decision.opened.is_empty()
            && decision.answered.is_empty();
        if !writes_nothing {
            // Decided again and committed by the one loop every turn takes.
            return self.turn_valid(&valid).map(Deciding::Done);
        }
        let commit = commit_of(&valid, &decision, &gathered)?;
        Ok(Deciding::Deferred(DeferredTurn { valid, commit, response: decision.response }))
    }

    /// Commits a turn [`Engine::decide_turn`] deferred. Where a row it read has changed since,
    /// the turn is decided again and that decision committed (the result says which): the record
    /// then holds what the turn comes to now.
    pub fn commit_decided(&mut self, turn: DeferredTurn) -> Result<TurnResult, EngineError> {
        match self.store.commit(&turn.commit)? {
            CommitOutcome::Committed { .. } => Ok(TurnResult::Decided { response: turn.response, repeated: false }),
            CommitOutcome::Duplicate(stored) => repeat(&turn.valid, &stored),
            _ => self.turn_valid(&turn.valid),
        }
    }
}
