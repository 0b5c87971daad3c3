//! The facts served to the core: stored rows, interactions, promotions, the conversation's
//! events and a row's committed events, read from the store while a decision is made.

use std::cell::RefCell;

use warrant_core::ladder::{PromotionRecord, Subject};
use warrant_core::outbound::LedgerFacts;
use warrant_core::records::{Record, SharedRecord};
use warrant_core::turn::{EventRecord, FactError, Facts, Interaction, RowEvent, RowRef};
use warrant_store::{InteractionState, Store};

use crate::{guards, outbound};

/// Serves stored facts to a decision.
pub(crate) struct StoreFacts<'a, S: Store> {
    store: RefCell<&'a mut S>,
}

impl<'a, S: Store> StoreFacts<'a, S> {
    /// The facts of `store` as it is now.
    pub(crate) fn new(store: &'a mut S) -> StoreFacts<'a, S> {
        StoreFacts { store: RefCell::new(store) }
    }
}

impl<S: Store> Facts for StoreFacts<'_, S> {
    fn record(&self, table: &str, key: &str) -> Result<Option<Record>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let found = store.record(table, key).map_err(|e| FactError(e.to_string()))?;
        Ok(found.map(|r| Record { table: r.table, key: r.key, revision: r.revision, value: r.value }))
    }

    fn shared_record(&self, table: &str, key: &str) -> Result<Option<SharedRecord>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let found = store.shared_record(table, key).map_err(|e| FactError(e.to_string()))?;
        Ok(found.map(|r| SharedRecord { table: r.table, key: r.key, revision: r.revision, value: r.value }))
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

    fn pending_effect(&self, row: &RowRef) -> Result<Option<String>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        store.pending_effect(&row.table, &row.key).map_err(|e| FactError(e.to_string()))
    }

    fn events(&self, conversation: &str, kind: &str) -> Result<Vec<EventRecord>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let ledger = outbound::StoreLedger { store: RefCell::new(&mut **store), conversation };
        LedgerFacts::events(&ledger, kind)
    }

    fn row_events(&self, row: &RowRef) -> Result<Vec<RowEvent>, FactError> {
        let mut store = self.store.try_borrow_mut().map_err(|e| FactError(e.to_string()))?;
        let rows = store.row_events(&row.table, &row.key).map_err(|e| FactError(e.to_string()))?;
        Ok(rows
            .into_iter()
            .map(|r| RowEvent {
                event: EventRecord {
                    id: r.event.id,
                    kind: r.event.kind,
                    payload: r.event.payload,
                    effect: r.event.effect,
                },
                conversation: r.event.conversation,
                at: r.at,
                outcome: r.outcome,
            })
            .collect())
    }
}
