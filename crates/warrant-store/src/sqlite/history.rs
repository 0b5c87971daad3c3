//! The history of a row on SQLite: the events of the effects committed on it, read by
//! [`Ledger::row_events`](crate::Ledger::row_events).

use rusqlite::params;

use super::{SqliteStore, json};
use crate::error::StoreError;
use crate::rows::{EventRow, RowEventRow};
use crate::storable::storable;

/// An effect is committed on a row when its changes name the row or it holds the row; its event
/// is the one of its operation (an outcome's event is of another kind). The instant is the one
/// of the turn that committed it. No index serves this: every effect's payload is read.
const ROW_EVENTS: &str = "SELECT ev.seq, ev.id, ev.conversation, ev.kind, ev.payload, ev.effect,
        json_extract(t.request, '$.at'), ef.outcome
    FROM effects ef
    JOIN events ev ON ev.effect = ef.id AND ev.kind = ef.op
    JOIN turns t ON t.conversation = ef.conversation AND t.turn = ef.turn
    WHERE EXISTS (SELECT 1 FROM json_each(ef.payload, '$.changes') c
                  WHERE json_extract(c.value, '$.row.table') = ?1 AND json_extract(c.value, '$.row.key') = ?2)
       OR EXISTS (SELECT 1 FROM json_each(ef.payload, '$.holds') h
                  WHERE json_extract(h.value, '$.table') = ?1 AND json_extract(h.value, '$.key') = ?2)
    ORDER BY ev.seq";

impl SqliteStore {
    /// The committed events of the row `key` of `table`, in commit order.
    pub(super) fn read_row_events(&mut self, table: &str, key: &str) -> Result<Vec<RowEventRow>, StoreError> {
        if !storable(table) || !storable(key) {
            return Ok(Vec::new());
        }
        type Raw = (i64, String, String, String, String, Option<String>, Option<String>, Option<String>);
        let raws = self
            .conn
            .prepare_cached(ROW_EVENTS)?
            .query_map(params![table, key], |row| -> rusqlite::Result<Raw> {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter()
            .map(|(seq, id, conversation, kind, payload, effect, at, outcome)| {
                let payload = json(&payload, || format!("the payload of event `{id}`"))?;
                let event = EventRow { seq, id, conversation, kind, payload, effect };
                Ok(RowEventRow { event, at: at.unwrap_or_default(), outcome })
            })
            .collect()
    }
}
