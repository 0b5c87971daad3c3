//! An operation's confirmation copy, `confirm = "Cancel order {order_id}?"`: the sentence a held
//! act is put to the user with, each `{NAME}` standing for the act's exact value of argument
//! NAME. Every placeholder is checked when the contract loads; the copy is rendered by code
//! alone, so the same arguments always give the same text, and a value's invisible characters
//! are written out (`\u{200b}`) so that the user sees what the act carries.

use serde_json::{Map, Value};

/// A confirmation copy, checked against its operation's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmCopy {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Arg(String),
}

impl ConfirmCopy {
    /// Parses `source` for an operation whose arguments are `args`: `{NAME}` is the value of
    /// argument NAME, `{{` and `}}` a brace. The error names the placeholder or brace at fault.
    pub fn parse(source: &str, args: &[&str]) -> Result<ConfirmCopy, String> {
        if source.trim().is_empty() {
            return Err("`confirm` is empty".into());
        }
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = source.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('{', Some('{')) | ('}', Some('}')) => {
                    chars.next();
                    text.push(c);
                }
                ('{', _) => {
                    let mut name = String::new();
                    let closed = chars.by_ref().any(|c| {
                        c == '}' || {
                            name.push(c);
                            false
                        }
                    });
                    if !closed {
                        return Err(
                            "`confirm`: a `{` opens a placeholder that is not closed (a brace is written `{{`)".into(),
                        );
                    }
                    if !args.contains(&name.as_str()) {
                        return Err(format!(
                            "`confirm`: `{{{}}}` names no argument of the operation (its arguments: {})",
                            crate::text::visible(&name),
                            if args.is_empty() { "none".to_owned() } else { args.join(", ") }
                        ));
                    }
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Arg(name));
                }
                ('}', _) => {
                    return Err("`confirm`: a `}` closes no placeholder (a brace is written `}}`)".into());
                }
                _ => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(ConfirmCopy { source: source.to_owned(), parts })
    }

    /// The copy as the contract writes it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The copy with each placeholder replaced by its argument's value in `args` ([`shown`]);
    /// an optional argument the act leaves out is written as nothing.
    pub fn render(&self, args: &Map<String, Value>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Arg(name) => out.push_str(&args.get(name).map(shown).unwrap_or_default()),
            }
        }
        out
    }
}

/// How an argument's value is written for the user: a string as it is, a number or boolean as
/// JSON writes it, a list's elements joined by `, `, a pointer or an enum with evidence by its
/// words or id (`copy`, `value`), a record by its key (`id`), money as `12.50 USD`, any other
/// object as canonical JSON; invisible and control characters written out as `\u{XXXX}`.
pub fn shown(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => crate::text::visible(text),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        Value::Object(map) => {
            let field = |name: &str| map.get(name).filter(|v| !v.is_object() && !v.is_array());
            match (field("value"), field("copy"), field("id"), field("amount"), field("currency")) {
                (Some(id), _, _, _, _) | (None, Some(id), _, _, _) | (None, None, Some(id), _, _) => shown(id),
                (None, None, None, Some(amount), Some(currency)) => format!("{} {}", shown(amount), shown(currency)),
                _ => crate::text::visible(&crate::id::canonical(value)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn placeholders_take_the_exact_values_and_braces_are_doubled() {
        let copy = ConfirmCopy::parse("Cancel {order_id} ({reason})? {{sure}}", &["order_id", "reason"]).unwrap();
        let given = args(json!({"order_id": "#W1", "reason": {"value": "ordered by mistake", "ptr": [1, 3]}}));
        assert_eq!(copy.render(&given), "Cancel #W1 (ordered by mistake)? {sure}");
        assert_eq!(copy.render(&args(json!({"order_id": "#W1"}))), "Cancel #W1 ()? {sure}");
        assert_eq!(copy.source(), "Cancel {order_id} ({reason})? {{sure}}");
    }

    #[test]
    fn every_kind_of_value_is_written_one_way() {
        assert_eq!(shown(&json!(["a", "b"])), "a, b");
        assert_eq!(shown(&json!({"ptr": [1, 2], "copy": "12 Oak Lane"})), "12 Oak Lane");
        assert_eq!(shown(&json!({"id": "#W1", "revision": 3})), "#W1");
        assert_eq!(shown(&json!({"amount": "12.50", "currency": "USD"})), "12.50 USD");
        assert_eq!(shown(&json!({"b": 1, "a": 2})), r#"{"a":2,"b":1}"#);
        assert_eq!(shown(&json!(3)), "3");
        assert_eq!(shown(&json!(true)), "true");
        assert_eq!(shown(&json!("x\u{200b}y")), "x\\u{200b}y");
    }

    #[test]
    fn a_placeholder_naming_no_argument_or_a_stray_brace_is_an_error() {
        let no_arg = ConfirmCopy::parse("Cancel {order}?", &["order_id"]).unwrap_err();
        assert_eq!(no_arg, "`confirm`: `{order}` names no argument of the operation (its arguments: order_id)");
        let open = ConfirmCopy::parse("Cancel {order_id} {order_id", &["order_id"]).unwrap_err();
        assert!(open.contains("not closed"), "{open}");
        let close = ConfirmCopy::parse("Cancel order_id}", &["order_id"]).unwrap_err();
        assert!(close.contains("closes no placeholder"), "{close}");
        assert!(ConfirmCopy::parse("{}", &["a"]).unwrap_err().contains("`{}` names no argument"));
        assert_eq!(ConfirmCopy::parse("  ", &["a"]).unwrap_err(), "`confirm` is empty");
    }
}
