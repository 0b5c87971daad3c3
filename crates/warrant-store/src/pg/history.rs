//! The history of a row on PostgreSQL: the events of the effects committed on it, read by
//! [`Ledger::row_events`](crate::Ledger::row_events).

use super::PgStore;
use crate::error::StoreError;
use crate::rows::{EventRow, RowEventRow};
use crate::storable::storable;

/// An effect is committed on a row when its changes name the row or it holds the row; its event
/// is the one of its operation (an outcome's event is of another kind). The instant is the one
/// of the turn that committed it. No index serves this: every effect's payload is read.
const ROW_EVENTS: &str = "SELECT ev.seq, ev.id, ev.conversation, ev.kind, ev.payload, ev.effect,
        t.request->>'at', ef.outcome
    FROM effects ef
    JOIN events ev ON ev.effect = ef.id AND ev.kind = ef.op
    JOIN turns t ON t.conversation = ef.conversation AND t.turn = ef.turn
    WHERE EXISTS (SELECT 1 FROM json_array_elements(COALESCE(ef.payload->'changes', '[]'::json)) c
                  WHERE c->'row'->>'table' = $1 AND c->'row'->>'key' = $2)
       OR EXISTS (SELECT 1 FROM json_array_elements(COALESCE(ef.payload->'holds', '[]'::json)) h
                  WHERE h->>'table' = $1 AND h->>'key' = $2)
    ORDER BY ev.seq";

impl PgStore {
    /// The committed events of the row `key` of `table`, in commit order.
    pub(super) fn read_row_events(&mut self, table: &str, key: &str) -> Result<Vec<RowEventRow>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(Vec::new());
        }
        self.query(ROW_EVENTS, &[&table, &key])?
            .iter()
            .map(|row| {
                let event = EventRow {
                    seq: row.try_get(0)?,
                    id: row.try_get(1)?,
                    conversation: row.try_get(2)?,
                    kind: row.try_get(3)?,
                    payload: row.try_get(4)?,
                    effect: row.try_get(5)?,
                };
                let at: Option<String> = row.try_get(6)?;
                Ok(RowEventRow { event, at: at.unwrap_or_default(), outcome: row.try_get(7)? })
            })
            .collect()
    }
}
