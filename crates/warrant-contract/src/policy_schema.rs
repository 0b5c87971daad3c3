//! The Cedar schema warrant generates from the contract, so that every policy is checked against
//! what the turn will actually hand Cedar: the actor's and each table's entity type, one action
//! per operation, and each operation's context (`args`, `derived`, `members`) typed exactly as
//! the turn builds it (`turn::decide_act`), with the turn's clock (`now`, `today`, `time_zone`). A misspelt action, an unknown entity type or a
//! context field no operation has stops the contract's load instead of loading a rule that never
//! fires. `docs/policy.md` describes the schema.
//!
//! A table that declares its fields (a schema) gives a closed record: its `key` and each field
//! typed from its kind, so a misspelt attribute stops the load. An untyped table's entity type
//! is an open record: a row's `key` is a `String`, any other attribute may be there. The
//! context is closed.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::expressions::ValueType;
use crate::operation::{ArgKind, Expr, Operation};
use crate::records::Table;
use crate::schema::{self, Kind};

/// The principal's entity type when the contract declares no `[actor]` table.
pub const ANONYMOUS_ACTOR: &str = "Actor";

/// Words Cedar reserves, which cannot name an entity type; `Action` names the actions.
const RESERVED: [&str; 10] = ["true", "false", "if", "then", "else", "in", "is", "like", "has", "Action"];

/// Whether `name` can be a Cedar entity type of the empty namespace.
pub(crate) fn is_entity_type_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__cedar")
        && !RESERVED.contains(&name)
}

/// The schema in Cedar's JSON schema format, one empty namespace.
pub(crate) fn generate(tables: &[Table], actor: Option<&str>, operations: &[Operation]) -> Value {
    let mut entity_types = Map::new();
    for table in tables {
        entity_types.insert(table.entity.clone(), json!({"shape": row_shape(table)}));
    }
    let principal = match actor.and_then(|a| tables.iter().find(|t| t.name == a)) {
        Some(table) => table.entity.clone(),
        None => {
            // Without an actor table the principal is an `Actor` with no attributes.
            entity_types
                .entry(ANONYMOUS_ACTOR.to_owned())
                .or_insert_with(|| json!({"shape": {"type": "Record", "attributes": {}}}));
            ANONYMOUS_ACTOR.to_owned()
        }
    };
    let mut actions = Map::new();
    for op in operations {
        let resource = op
            .resource
            .as_ref()
            .and_then(|r| op.arg(r))
            .and_then(|arg| match &arg.kind {
                ArgKind::Record { table } => tables.iter().find(|t| t.name == *table).map(|t| t.entity.clone()),
                _ => None,
            })
            .unwrap_or_else(|| principal.clone());
        actions.insert(
            op.name.clone(),
            json!({"appliesTo": {
                "principalTypes": [principal],
                "resourceTypes": [resource],
                "context": context_type(op),
            }}),
        );
    }
    json!({"": {"entityTypes": entity_types, "actions": actions}})
}

/// A row as the turn gives it to Cedar (`records::cedar_attrs`): its `key`, and its fields,
/// typed and closed where the table declares them, open where it does not.
fn row_shape(table: &Table) -> Value {
    match table.schema.as_ref().map(|s| &s.kind) {
        Some(Kind::Object(fields)) => {
            let mut shape = schema::cedar_record(fields);
            if let Some(Value::Object(attributes)) = shape.get_mut("attributes") {
                attributes.insert("key".into(), json!({"type": "String"}));
            }
            shape
        }
        _ => json!({"type": "Record", "attributes": {"key": {"type": "String"}}, "additionalAttributes": true}),
    }
}

/// An element of a collection inside a row (a member), untyped as rows are.
fn element_type() -> Value {
    json!({"type": "Record", "attributes": {}, "additionalAttributes": true})
}

/// Cedar's `datetime` extension type.
fn datetime_type() -> Value {
    json!({"type": "Extension", "name": "datetime"})
}

fn record(attributes: Map<String, Value>) -> Value {
    json!({"type": "Record", "attributes": attributes})
}

fn optional(mut ty: Value, optional: bool) -> Value {
    if optional && let Value::Object(map) = &mut ty {
        map.insert("required".into(), Value::Bool(false));
    }
    ty
}

fn set_of(element: Value) -> Value {
    json!({"type": "Set", "element": element})
}

/// An argument's checked value as the context holds it (`args::Checked::to_json`): an
/// `objects` argument a Set of closed Records, each field typed as an argument of its kind.
fn arg_type(kind: &ArgKind) -> Value {
    let string = json!({"type": "String"});
    match kind {
        ArgKind::Enum { .. }
        | ArgKind::Record { .. }
        | ArgKind::Member { .. }
        | ArgKind::Text { .. }
        | ArgKind::String { .. }
        | ArgKind::Date => string,
        ArgKind::Records { .. } | ArgKind::Members { .. } => set_of(string),
        ArgKind::Money => {
            json!({"type": "Record", "attributes": {"units": {"type": "Long"}, "currency": {"type": "String"}}})
        }
        ArgKind::Integer { .. } => json!({"type": "Long"}),
        ArgKind::Bool => json!({"type": "Boolean"}),
        ArgKind::Objects { fields, .. } => {
            let attributes = fields.iter().map(|f| (f.name.clone(), optional(arg_type(&f.kind), f.optional))).collect();
            set_of(record(attributes))
        }
    }
}

/// A derived quantity's type: arithmetic gives a `Long` (minor units or a count); `first(…)`
/// gives a value of a row, typed `String` (the ids it is for) until rows have types; a CEL
/// quantity is typed by its `type` (integer and money a `Long`, bool a `Boolean`, text a
/// `String`, instant a `datetime`).
fn derived_type(expr: &Expr, earlier: &BTreeMap<&str, Value>) -> Value {
    match expr {
        Expr::First(_) => json!({"type": "String"}),
        Expr::Derived(name) => earlier.get(name.as_str()).cloned().unwrap_or_else(|| json!({"type": "Long"})),
        Expr::Cel(value) => match value.ty {
            Some(ValueType::Bool) => json!({"type": "Boolean"}),
            Some(ValueType::Text) => json!({"type": "String"}),
            Some(ValueType::Instant) => datetime_type(),
            Some(ValueType::Integer | ValueType::Money) | None => json!({"type": "Long"}),
        },
        Expr::Value(_)
        | Expr::Sum(_)
        | Expr::Count(_)
        | Expr::Literal(_)
        | Expr::Add(..)
        | Expr::Sub(..)
        | Expr::Neg(_) => {
            json!({"type": "Long"})
        }
    }
}

/// `{"args", "derived", "members", "now", "today", "time_zone"}` of one operation: the turn's
/// instant and local date (as its `00:00:00Z`) are `datetime`s, its time zone a `String`. An
/// optional argument left out is absent from `args` (and `members`), so it is an optional
/// attribute there.
fn context_type(op: &Operation) -> Value {
    let mut args = Map::new();
    let mut members = Map::new();
    for arg in &op.args {
        args.insert(arg.name.clone(), optional(arg_type(&arg.kind), arg.optional));
        match arg.kind {
            ArgKind::Member { .. } => {
                members.insert(arg.name.clone(), optional(element_type(), arg.optional));
            }
            ArgKind::Members { .. } => {
                members.insert(arg.name.clone(), optional(set_of(element_type()), arg.optional));
            }
            _ => {}
        }
    }
    let mut earlier: BTreeMap<&str, Value> = BTreeMap::new();
    let mut derived = Map::new();
    for (name, expr) in &op.derive {
        let ty = derived_type(expr, &earlier);
        earlier.insert(name, ty.clone());
        derived.insert(name.clone(), ty);
    }
    let mut context = Map::new();
    context.insert("args".into(), record(args));
    context.insert("derived".into(), record(derived));
    context.insert("members".into(), record(members));
    context.insert("now".into(), datetime_type());
    context.insert("today".into(), datetime_type());
    context.insert("time_zone".into(), json!({"type": "String"}));
    record(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_type_names_are_cedar_identifiers() {
        for good in ["User", "Order_2", "_Row"] {
            assert!(is_entity_type_name(good), "{good}");
        }
        for bad in ["", "2User", "Or-der", "Action", "in", "__cedar", "Usér"] {
            assert!(!is_entity_type_name(bad), "{bad}");
        }
    }
}
