//! A store checked whole, for its operator (`warrant store check`): its schema steps, the
//! backend's own integrity check, where every effect stands, and every stored turn's replay
//! record read and decided again with replay's own code, to the same verdicts. Every failure is
//! named and the check goes on past it, so that one run names them all; nothing is written.

use serde::Serialize;

use warrant_store::{EffectCensus, Integrity, SchemaState, Store};

use crate::replay::{self, ReplayChange, ReplayReport};
use crate::{Engine, EngineError};

/// What a store check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreCheck {
    /// The schema steps the store has run, beside those this build knows.
    pub schema: SchemaState,
    /// What the backend's own check found.
    pub integrity: Integrity,
    /// Where every effect stands; the pending ones listed.
    pub effects: EffectCensus,
    /// Turns whose replay record was read and decided again.
    pub turns: usize,
    /// Of them, those whose response came out byte for byte as recorded.
    pub identical: usize,
    /// Every act whose verdict or reasons came out otherwise.
    pub changes: Vec<ReplayChange>,
    /// Every failure, named: a schema step not run or unknown, an integrity problem, an effect
    /// orphaned or with an unreadable outcome, a turn whose record cannot be read, a changed
    /// verdict. The check passed when there is none.
    pub failures: Vec<String>,
}

impl StoreCheck {
    /// Whether nothing failed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

impl<S: Store> Engine<S> {
    /// Checks the store whole ([`StoreCheck`]) and writes nothing. `stop` is asked between
    /// turns; once it says so the check ends with [`EngineError::Stopped`]. Only a store that
    /// cannot be read at all is an error; everything else it finds is a named failure.
    pub fn check_store(&mut self, stop: &dyn Fn() -> bool) -> Result<StoreCheck, EngineError> {
        let schema = self.store.schema()?;
        let integrity = self.store.integrity()?;
        let effects = self.store.effect_census()?;
        let mut failures = Vec::new();
        if !schema.pending().is_empty() {
            failures.push(format!(
                "the store has not run the schema steps {:?} (`warrant store migrate`)",
                schema.pending()
            ));
        }
        if !schema.unknown().is_empty() {
            failures.push(format!("the store has run schema steps this build does not know: {:?}", schema.unknown()));
        }
        failures.extend(integrity.problems.iter().map(|p| format!("integrity: {p}")));
        failures.extend(effects.orphaned.iter().map(|id| format!("effect `{id}`: its turn is not stored")));
        failures.extend(effects.unreadable.iter().map(|(id, outcome)| {
            format!("effect `{id}`: the outcome `{outcome}` is none of `done`, `failed`, `unknown`")
        }));
        let mut report = ReplayReport::default();
        let mut after = 0;
        loop {
            let batch = match self.store.turns(after, replay::PAGE) {
                Ok(batch) => batch,
                Err(e) => {
                    failures.push(format!("the turns after sequence number {after} cannot be read: {e}"));
                    break;
                }
            };
            let Some(last) = batch.last() else { break };
            after = last.seq;
            for stored in &batch {
                if stop() {
                    return Err(EngineError::Stopped);
                }
                if let Err(e) = replay::replay_turn(&self.contract, &mut self.store, stored, &mut report) {
                    failures
                        .push(format!("turn `{}`/`{}` (seq {}): {e}", stored.conversation, stored.turn, stored.seq));
                }
            }
        }
        failures.extend(report.changes.iter().map(|c| {
            format!("turn `{}`/`{}` act {} `{}`: {} -> {}", c.conversation, c.turn, c.act, c.op, c.before, c.after)
        }));
        Ok(StoreCheck {
            schema,
            integrity,
            effects,
            turns: report.turns,
            identical: report.identical,
            changes: report.changes,
            failures,
        })
    }
}
