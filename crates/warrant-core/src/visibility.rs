//! Which rows an actor may see, as the contract declares it (`owner` on a table; the actor
//! table's rows are each visible to their own actor, a nested table's as its parent's). It is
//! decided by structure, before any policy, and a row the actor may not see is treated exactly
//! as a row that does not exist: an act naming it is refused as `unknown_record`, with the same
//! field and detail, and a claim about it is not backed (`claim_not_visible`). So no verdict,
//! reason or reply tells one actor whether another's row exists, or anything about it.

use serde_json::Value;

use warrant_contract::contract::Contract;
use warrant_contract::records::Visibility;

/// Reads the parent row of a nested table, by table and key: `None` when there is none.
pub type ParentRows<'a, E> = dyn FnMut(&str, &str) -> Result<Option<Value>, E> + 'a;

/// A row as visibility reads it: its table, its key and its value.
#[derive(Debug, Clone, Copy)]
pub struct RowValue<'a> {
    /// The table.
    pub table: &'a str,
    /// The key.
    pub key: &'a str,
    /// The row's value.
    pub value: &'a Value,
}

/// Whether `actor` may see the row `key` of `table`, whose value is `value`. `parent` reads the
/// parent row of a nested table (`None` when there is none). A table the contract does not
/// declare is seen by nobody.
pub fn visible<E>(
    contract: &Contract,
    actor: &str,
    row: RowValue<'_>,
    parent: &mut ParentRows<'_, E>,
) -> Result<bool, E> {
    let RowValue { table, key, value } = row;
    let Some(declared) = contract.table(table) else { return Ok(false) };
    match &declared.visibility {
        Visibility::Everyone => Ok(true),
        Visibility::Actor => Ok(contract.actor_table() == Some(table) && key == actor),
        Visibility::Owner(field) => Ok(value.get(field).and_then(Value::as_str) == Some(actor)),
        Visibility::Parent { table: parent_table, .. }
            if contract.table(parent_table).is_some_and(|t| t.visibility == Visibility::Everyone) =>
        {
            // A catalogue's nested rows (a product's items) are everyone's: no parent to read.
            Ok(true)
        }
        Visibility::Parent { table: parent_table, field } => {
            let Some(parent_key) = value.get(field).and_then(Value::as_str) else { return Ok(false) };
            match parent(parent_table, parent_key)? {
                Some(parent_value) => visible(
                    contract,
                    actor,
                    RowValue { table: parent_table, key: parent_key, value: &parent_value },
                    parent,
                ),
                None => Ok(false),
            }
        }
    }
}
