//! Input both backends can keep. PostgreSQL refuses U+0000 in text and in JSONB while SQLite
//! keeps it; checking before either backend sees the input makes them behave the same.
//! Here are the checks of text and JSON; each kind of row's own check sits beside its type.

use serde_json::Value;

use crate::error::StoreError;
use crate::rows::JsonText;

/// Whether a text can be stored, and so can have been stored: a lookup by a key that is not
/// storable finds nothing, in both backends.
pub(crate) fn storable(text: &str) -> bool {
    !text.contains('\0')
}

pub(crate) fn text(field: impl FnOnce() -> String, value: &str) -> Result<(), StoreError> {
    if storable(value) { Ok(()) } else { Err(StoreError::NulCharacter { field: field() }) }
}

pub(crate) fn json(field: impl FnOnce() -> String, value: &Value) -> Result<(), StoreError> {
    if json_storable(value) { Ok(()) } else { Err(StoreError::NulCharacter { field: field() }) }
}

/// JSON text checked as [`json`] checks a value. serde_json writes U+0000 as `\u0000`, so the
/// text holds one wherever that escape follows an even run of backslashes (after an odd run,
/// its backslash is the second half of an escaped backslash, and `u0000` is plain text).
pub(crate) fn json_text(field: impl FnOnce() -> String, value: &JsonText) -> Result<(), StoreError> {
    let text = value.as_str();
    let nul = text.match_indices(r"\u0000").any(|(at, _)| {
        let before = text.get(..at).unwrap_or_default();
        before.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 0
    });
    if nul { Err(StoreError::NulCharacter { field: field() }) } else { Ok(()) }
}

fn json_storable(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
        Value::String(s) => storable(s),
        Value::Array(items) => items.iter().all(json_storable),
        Value::Object(map) => map.iter().all(|(k, v)| storable(k) && json_storable(v)),
    }
}

pub(crate) fn check_seed(table: &str, rows: &[(String, Value)]) -> Result<(), StoreError> {
    text(|| "the table name".to_owned(), table)?;
    for (i, (key, value)) in rows.iter().enumerate() {
        text(|| format!("the key of seed row {i}"), key)?;
        json(|| format!("the value of seed row {i} (`{}`)", key.escape_debug()), value)?;
    }
    Ok(())
}

/// A JSON argument named `field` in the error.
pub(crate) fn check_json(field: &str, value: &Value) -> Result<(), StoreError> {
    json(|| field.to_owned(), value)
}

/// A text argument named `field` in the error.
pub(crate) fn check_text(field: &str, value: &str) -> Result<(), StoreError> {
    text(|| field.to_owned(), value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_nul_anywhere_in_json_is_refused() {
        assert!(json_storable(&json!({"a": [1, "b", {"c": null}]})));
        assert!(!json_storable(&json!({"a": [1, "b\u{0}"]})));
        assert!(!json_storable(&json!({"a\u{0}": 1})));
    }
}
