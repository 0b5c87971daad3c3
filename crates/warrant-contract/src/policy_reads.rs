//! Which parts of a request's context an action's policies can read, found once when the
//! contract loads, so that a decision hands Cedar only those and not every argument, member and
//! derived quantity of the act.
//!
//! A policy reads the context through chains of attribute accesses (`context.args.order_id`,
//! `context.members has payment_method_id`). Every attribute a chain names is kept, with all
//! it holds when the chain ends there; an attribute no chain names is dropped. Where a policy
//! uses `context` any other way (compares it whole, say), the action keeps all of it. What
//! Cedar decides is the same either way: no policy can tell a dropped attribute was there.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The part of a value that policies read: all of it, or some of its attributes, each with the
/// part of it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reads {
    /// Every attribute, at every depth.
    All,
    /// These attributes only (none: nothing at all).
    Some(BTreeMap<String, Reads>),
}

impl Reads {
    /// Nothing is read.
    pub(crate) fn none() -> Reads {
        Reads::Some(BTreeMap::new())
    }

    /// What the policies in `policies` (each in Cedar's JSON form) read of `context`.
    pub(crate) fn of_policies<'a>(policies: impl IntoIterator<Item = &'a Value>) -> Reads {
        let mut reads = Reads::none();
        for policy in policies {
            reads.walk(policy);
        }
        reads
    }

    /// Adds what `json`, a policy or an expression of one, reads of `context`.
    fn walk(&mut self, json: &Value) {
        match json {
            Value::Object(map) => {
                if let Some((base, path)) = access_chain(map) {
                    if is_context(base) {
                        self.insert(&path);
                    } else {
                        self.walk(base);
                    }
                    return;
                }
                if is_context(json) {
                    *self = Reads::All;
                    return;
                }
                for value in map.values() {
                    self.walk(value);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.walk(item)),
            _ => {}
        }
    }

    /// Marks `path` read, with everything under its last attribute.
    fn insert(&mut self, path: &[&str]) {
        let mut at = self;
        for attr in path {
            let Reads::Some(attrs) = at else { return };
            at = attrs.entry((*attr).to_owned()).or_insert_with(Reads::none);
        }
        *at = Reads::All;
    }

    /// The part of `value` read: `value` itself when all of it is, else the attributes read of
    /// it. A value that is no record, or an object holding `mark` (a Cedar value written as
    /// JSON, such as a datetime), is kept whole, so that a policy reading an attribute of it
    /// errs as it would have. A decision builds that part directly as Cedar's
    /// (`policy::restricted_read`); this is what it is tested against.
    #[cfg(test)]
    pub(crate) fn keep<'v>(&self, value: &'v Value, mark: &str) -> std::borrow::Cow<'v, Value> {
        use std::borrow::Cow;
        match (self, value) {
            (Reads::Some(attrs), Value::Object(map)) if !map.contains_key(mark) => {
                let kept: Map<String, Value> = attrs
                    .iter()
                    .filter_map(|(name, reads)| map.get(name).map(|v| (name.clone(), reads.keep(v, mark).into_owned())))
                    .collect();
                Cow::Owned(Value::Object(kept))
            }
            _ => Cow::Borrowed(value),
        }
    }
}

/// Whether `json` is the variable `context`.
fn is_context(json: &Value) -> bool {
    json.get("Var").and_then(Value::as_str) == Some("context")
}

/// An attribute access (`.` or `has`, the latter with one attribute or a path) as the expression
/// it starts from and the attributes named from there, outermost last.
fn access_chain(map: &Map<String, Value>) -> Option<(&Value, Vec<&str>)> {
    if map.len() != 1 {
        return None;
    }
    let (kind, body) = map.iter().next()?;
    if kind != "." && kind != "has" {
        return None;
    }
    let left = body.get("left")?;
    let mut tail: Vec<&str> = match body.get("attr")? {
        Value::String(attr) => vec![attr.as_str()],
        Value::Array(attrs) => attrs.iter().map(Value::as_str).collect::<Option<_>>()?,
        _ => return None,
    };
    match left.as_object().and_then(access_chain) {
        Some((base, mut path)) => {
            path.append(&mut tail);
            Some((base, path))
        }
        None => Some((left, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cedar_policy::PolicySet;
    use serde_json::json;
    use std::str::FromStr;

    const DATETIME_MARK: &str = "__datetime";

    fn reads(text: &str) -> Reads {
        let set = PolicySet::from_str(text).unwrap_or_else(|e| panic!("parses: {e}"));
        let json: Vec<Value> = set.policies().map(|p| p.to_json().unwrap_or_else(|e| panic!("{e}"))).collect();
        Reads::of_policies(&json)
    }

    fn attrs(pairs: &[(&str, Reads)]) -> Reads {
        Reads::Some(pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())
    }

    #[test]
    fn chains_of_attributes_are_what_is_read() {
        let found = reads(
            r#"forbid(principal, action, resource) when { context.args.id == context.derived.current };
               forbid(principal, action, resource) when { context.members has card && context.members.card.balance < 3 };
               forbid(principal, action, resource) when { context has now.day };"#,
        );
        let expected = attrs(&[
            ("args", attrs(&[("id", Reads::All)])),
            ("derived", attrs(&[("current", Reads::All)])),
            ("members", attrs(&[("card", Reads::All)])),
            ("now", attrs(&[("day", Reads::All)])),
        ]);
        assert_eq!(found, expected);
        // `has card` keeps the whole of `card`, which the longer chain `card.balance` does not
        // narrow, in either order.
        let reversed = reads(
            "forbid(principal, action, resource) when { context.members.card.balance < 3 && context.members has card };",
        );
        assert_eq!(reversed, attrs(&[("members", attrs(&[("card", Reads::All)]))]));
    }

    #[test]
    fn a_policy_with_no_context_reads_nothing_and_context_whole_reads_all() {
        assert_eq!(reads("permit(principal, action, resource) when { resource.a == principal.b };"), Reads::none());
        assert_eq!(reads(r#"forbid(principal, action, resource) when { context == {"a": 1} };"#), Reads::All);
        assert_eq!(reads("forbid(principal, action, resource) when { context.args == context };"), Reads::All);
        // An access on something else than `context` still has its base walked.
        let found = reads("forbid(principal, action, resource) when { resource.owner == context.args.who };");
        assert_eq!(found, attrs(&[("args", attrs(&[("who", Reads::All)]))]));
    }

    #[test]
    fn keep_drops_what_is_not_read_and_keeps_what_is_whole() {
        let found = attrs(&[("args", attrs(&[("id", Reads::All), ("gone", Reads::All)])), ("now", attrs(&[]))]);
        let context = json!({
            "args": {"id": {"deep": [1, 2]}, "other": "x"},
            "derived": {"paid": 3},
            "now": {DATETIME_MARK: "2026-01-01"},
        });
        let kept = found.keep(&context, DATETIME_MARK).into_owned();
        assert_eq!(kept, json!({"args": {"id": {"deep": [1, 2]}}, "now": {DATETIME_MARK: "2026-01-01"}}));
        assert_eq!(Reads::All.keep(&context, DATETIME_MARK).into_owned(), context);
        assert_eq!(Reads::none().keep(&context, DATETIME_MARK).into_owned(), json!({}));
    }
}
