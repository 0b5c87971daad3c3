//! What one effect changed in a row, field by field, and the inverse of exactly that change.
//!
//! Several effects of one turn may write the same row (an address change and a cancellation of
//! one order, two refunds onto one card). The turn commits each row once, so the row's value
//! before the turn is no way to undo one of them: writing it back would erase the others. Each
//! effect keeps instead the fields it changed, with their values before and after it, and
//! reverting it restores those fields alone, and only where the row still holds what the effect
//! left there. Where it does not (a later effect or a later turn wrote the same field), nothing
//! is reverted: the outcome is recorded and the row is left as it is, because restoring would
//! erase a change that is not this effect's.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::facts::RowRef;

/// The fields one effect changed in one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowChange {
    /// The row.
    pub row: RowRef,
    /// The fields, at disjoint paths (no path is inside another), in the row's field order.
    pub fields: Vec<FieldChange>,
}

/// One field an effect changed: where it is, and its value before and after the effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Object keys and list indexes from the row's root to the field.
    pub path: Vec<String>,
    /// The value before the effect; absent when the field did not exist.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub before: Option<Value>,
    /// The value the effect left; absent when it removed the field.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub after: Option<Value>,
}

/// A field that is present is `Some`, even when it holds `null`; an absent one is `None` (by
/// `#[serde(default)]`), so a field set to `null` and a field that did not exist stay apart.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// The fields that differ between `before` and `after`, each at the deepest path where the two
/// still have the same shape: objects are compared key by key, lists of the same length index
/// by index, and anything else (a list that grew, a changed scalar) is one field.
pub fn diff(before: &Value, after: &Value) -> Vec<FieldChange> {
    let mut fields = Vec::new();
    let mut path = Vec::new();
    diff_into(Some(before), Some(after), &mut path, &mut fields);
    fields
}

fn diff_into(before: Option<&Value>, after: Option<&Value>, path: &mut Vec<String>, out: &mut Vec<FieldChange>) {
    if before == after {
        return;
    }
    match (before, after) {
        (Some(Value::Object(old)), Some(Value::Object(new))) => {
            for (key, value) in old {
                path.push(key.clone());
                diff_into(Some(value), new.get(key), path, out);
                path.pop();
            }
            for (key, value) in new.iter().filter(|(key, _)| !old.contains_key(*key)) {
                path.push(key.clone());
                diff_into(None, Some(value), path, out);
                path.pop();
            }
        }
        (Some(Value::Array(old)), Some(Value::Array(new))) if old.len() == new.len() => {
            for (i, (a, b)) in old.iter().zip(new).enumerate() {
                path.push(i.to_string());
                diff_into(Some(a), Some(b), path, out);
                path.pop();
            }
        }
        _ => out.push(FieldChange { path: path.clone(), before: before.cloned(), after: after.cloned() }),
    }
}

/// The value at `path` inside `value`, if there is one.
fn at<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |inner, part| match inner {
        Value::Object(map) => map.get(part),
        Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// Puts `value` at `path` inside `row` (`None` removes an object's field). `None` when the
/// path's parent is not there to hold it.
fn put(row: &mut Value, path: &[String], value: Option<Value>) -> Option<()> {
    let (last, parents) = path.split_last()?;
    let mut target = row;
    for part in parents {
        target = match target {
            Value::Object(map) => map.get_mut(part)?,
            Value::Array(items) => items.get_mut(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match (target, value) {
        (Value::Object(map), Some(value)) => {
            map.insert(last.clone(), value);
        }
        (Value::Object(map), None) => {
            map.remove(last);
        }
        (Value::Array(items), Some(value)) => *items.get_mut(last.parse::<usize>().ok()?)? = value,
        _ => return None,
    }
    Some(())
}

/// `current` with `fields` undone: each field set back to its value before the effect. `None`
/// when `current` no longer holds, at every one of those paths, what the effect left there:
/// then something else has written those fields since, and undoing would erase it.
pub fn revert(current: &Value, fields: &[FieldChange]) -> Option<Value> {
    if fields.iter().any(|f| at(current, &f.path) != f.after.as_ref()) {
        return None;
    }
    let mut row = current.clone();
    for field in fields {
        if field.path.is_empty() {
            // The whole row changed shape (it was not an object before or after).
            row = field.before.clone()?;
            continue;
        }
        put(&mut row, &field.path, field.before.clone())?;
    }
    Some(row)
}

/// A field whose value, as the system of record reported it after an effect, is not the one
/// the effect's steps left there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    /// The row.
    pub table: String,
    /// Its key.
    pub key: String,
    /// The field, object keys and list indexes joined with `.` (empty for the whole row).
    pub path: String,
    /// The value the effect's steps predicted; absent when they removed the field.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub predicted: Option<Value>,
    /// The value reported; absent when the reported row has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub reported: Option<Value>,
}

/// The fields of `change` whose value in `reported` (the row as the system of record left it)
/// is not the one the effect left there, in the change's field order. Fields the effect did not
/// change are not compared: the system of record may change them as it likes.
pub fn diverged(change: &RowChange, reported: &Value) -> Vec<Divergence> {
    change
        .fields
        .iter()
        .filter(|field| at(reported, &field.path) != field.after.as_ref())
        .map(|field| Divergence {
            table: change.row.table.clone(),
            key: change.row.key.clone(),
            path: field.path.join("."),
            predicted: field.after.clone(),
            reported: at(reported, &field.path).cloned(),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn a_diff_names_each_changed_field_at_its_deepest_path() {
        let before = json!({"status": "pending", "address": {"city": "Austin", "zip": "78701"}, "items": [1, 2]});
        let after = json!({"status": "pending", "address": {"city": "Denver", "zip": "78701"}, "items": [1, 2, 3],
                           "reason": "moved"});
        let fields = diff(&before, &after);
        let paths: Vec<String> = fields.iter().map(|f| f.path.join(".")).collect();
        assert_eq!(paths, ["address.city", "items", "reason"]);
        assert_eq!(fields[2].before, None);
        assert_eq!(fields[2].after, Some(json!("moved")));
        assert_eq!(diff(&before, &before), []);
    }

    #[test]
    fn reverting_one_effect_keeps_another_effect_s_fields_of_the_same_row() {
        let start = json!({"status": "pending", "address": {"city": "Austin"}});
        let moved = json!({"status": "pending", "address": {"city": "Denver"}});
        let cancelled = json!({"status": "cancelled", "address": {"city": "Denver"}});
        let address = diff(&start, &moved);
        let cancel = diff(&moved, &cancelled);
        assert_eq!(revert(&cancelled, &address), Some(json!({"status": "cancelled", "address": {"city": "Austin"}})));
        assert_eq!(revert(&cancelled, &cancel), Some(moved));
    }

    #[test]
    fn a_field_written_again_since_the_effect_is_not_reverted() {
        let first = diff(&json!({"balance": 100}), &json!({"balance": 90}));
        // A second refund of the same turn, or a later turn, moved the balance again.
        assert_eq!(revert(&json!({"balance": 70}), &first), None);
        assert_eq!(revert(&json!({"balance": 90, "other": 1}), &first), Some(json!({"balance": 100, "other": 1})));
    }

    #[test]
    fn a_field_the_effect_added_is_removed_and_null_stays_apart_from_absent() {
        let added = diff(&json!({}), &json!({"note": null}));
        assert_eq!(added, [FieldChange { path: vec!["note".into()], before: None, after: Some(Value::Null) }]);
        let text = serde_json::to_string(&added).unwrap();
        assert_eq!(text, r#"[{"path":["note"],"after":null}]"#);
        let read: Vec<FieldChange> = serde_json::from_str(&text).unwrap();
        assert_eq!(read, added);
        assert_eq!(revert(&json!({"note": null}), &read), Some(json!({})));
        assert_eq!(revert(&json!({}), &read), None);
    }

    #[test]
    fn a_reported_row_diverges_only_where_it_differs_from_a_predicted_field() {
        let before = json!({"status": "pending", "note": "x", "items": [1]});
        let after = json!({"status": "cancelled", "items": [1]});
        let change =
            RowChange { row: RowRef { table: "order".into(), key: "o1".into() }, fields: diff(&before, &after) };
        assert_eq!(diverged(&change, &json!({"status": "cancelled", "items": [1, 2]})), []);
        let found = diverged(&change, &json!({"status": "shipped", "note": "y"}));
        let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["status", "note"]);
        assert_eq!(found[1].predicted, None);
        assert_eq!(found[1].reported, Some(json!("y")));
        assert_eq!(
            (found[0].predicted.clone(), found[0].reported.clone()),
            (Some(json!("cancelled")), Some(json!("shipped")))
        );
        let text = serde_json::to_string(&found[0]).unwrap();
        assert_eq!(
            text,
            r#"{"table":"order","key":"o1","path":"status","predicted":"cancelled","reported":"shipped"}"#
        );
    }

    fn row() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::from), (0i64..5).prop_map(Value::from)];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn reverting_a_diff_gives_back_the_row_before(before in row(), after in row()) {
            let fields = diff(&before, &after);
            prop_assert_eq!(revert(&after, &fields), Some(before));
        }
    }
}
