//! Derived ids: every id and key warrant makes from other values (effects, interactions, events,
//! findings, checks, gate questions, messages, jobs, idempotency keys) is a hash of an
//! unambiguous encoding of its parts. Each part is written with its length before it, so no
//! two different lists of parts hash alike: conversation `x/y` with turn `z` and conversation
//! `x` with turn `y/z` give different ids, whatever characters the parts hold. A part that is
//! JSON is hashed in its canonical form (keys sorted), so a store that keeps the same value with
//! its keys in another order (PostgreSQL's JSONB) cannot change an id derived from it.

use serde_json::Value;

pub use warrant_vocab::id::derive_id;

/// JSON text with every object's keys sorted and no white space, so that two equal values give
/// the same text whatever order their keys were written or stored in.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, inner)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(inner, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    // serde_json's own escaping, so the canonical form of a string is the one it writes.
    out.push_str(&Value::String(text.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_that_join_to_the_same_text_give_different_ids() {
        assert_ne!(derive_id("eff", &["x/y", "z"]), derive_id("eff", &["x", "y/z"]));
        assert_ne!(derive_id("eff", &["a\0", "b"]), derive_id("eff", &["a", "\0b"]));
        assert_ne!(derive_id("eff", &["ab", ""]), derive_id("eff", &["a", "b"]));
        assert_ne!(derive_id("eff", &["a"]), derive_id("eff", &["a", ""]));
    }

    #[test]
    fn an_id_keeps_its_prefix_and_128_bits() {
        let id = derive_id("int", &["c1", "t1"]);
        assert_eq!(id, derive_id("int", &["c1", "t1"]));
        let hex = id.strip_prefix("int_").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
    }

    #[test]
    fn the_same_value_with_keys_in_another_order_is_the_same_canonical_text() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"q":2,"p":"\u00e9\n"}],"x":null}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"p":"é\n","q":2}]},"b":1}"#).unwrap();
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(canonical(&a), r#"{"a":{"x":null,"y":[1,{"p":"é\n","q":2}]},"b":1}"#);
        assert_ne!(canonical(&json!([1, 2])), canonical(&json!([2, 1])));
    }
}
