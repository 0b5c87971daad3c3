//! Table schemas: what a row of a records table is. A table may declare its fields with kinds
//! (`fields.<name> = { kind = … }` in the contract, or a JSON Schema file beside it); its rows
//! are then closed objects of those fields, checked wherever rows arrive (data files, records
//! writes, the rows an effect leaves), and every path the contract names into them is checked
//! when it loads. `docs/records.md` ("Table schemas") describes the kinds.
//!
//! A path into a row names object fields; a list is stepped through element by element, and a
//! map's entries (an object keyed by ids) are reached only through a member argument. A row's
//! *concrete path* is the keys from the row down to a value with list positions left out, so
//! `items[0].price` is `items.price` and `variants["9612497925"].price` is
//! `variants.9612497925.price`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::money::{self, Currency, MoneyError};
use crate::text;

/// One declared field: its kind, and whether a row may leave it out (or hold `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// What the field holds.
    pub kind: Kind,
    /// Whether the field may be absent or `null`.
    pub optional: bool,
}

/// The fields of an object, by name.
pub type Fields = BTreeMap<String, Field>;

/// The kinds of field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A JSON string.
    Text,
    /// A JSON integer.
    Integer,
    /// `true` or `false`.
    Bool,
    /// An exact amount of the contract's currency, as a JSON number.
    Money,
    /// One string of a closed set.
    Enum(Vec<String>),
    /// An RFC 3339 date-time with an offset.
    Instant,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
    /// The key of a row of the named table, as a string.
    Ref(String),
    /// A list whose every element is the given field.
    List(Box<Field>),
    /// An object of exactly these fields.
    Object(Fields),
    /// An object keyed by arbitrary ids, every value the given field.
    Map(Box<Field>),
}

impl Kind {
    /// The kind's name as the contract writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Integer => "integer",
            Kind::Bool => "bool",
            Kind::Money => "money",
            Kind::Enum(_) => "enum",
            Kind::Instant => "instant",
            Kind::Date => "date",
            Kind::Ref(_) => "ref",
            Kind::List(_) => "list",
            Kind::Object(_) => "object",
            Kind::Map(_) => "map",
        }
    }
}

/// The kinds a field may have, for error messages.
pub const KIND_NAMES: &str = "text, integer, bool, money, enum, instant, date, ref, list, object, map";

/// A value that does not fit its field: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misfit {
    /// The field at fault, written `items[0].price`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Where a value sits inside a row: turned into text (`items[0].price`) only when a check
/// fails, so that a row that fits costs no path strings.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At<'a> {
    /// A path already written out; the row itself when empty.
    Text(&'a str),
    /// A field of the value at the first.
    Field(&'a At<'a>, &'a str),
    /// An element of the list at the first.
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn is_root(&self) -> bool {
        matches!(self, At::Text(""))
    }
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Text(text) => f.write_str(text),
            At::Field(parent, field) if parent.is_root() => f.write_str(field),
            At::Field(parent, field) => write!(f, "{parent}.{field}"),
            At::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() { field.to_owned() } else { format!("{path}.{field}") }
}

fn misfit(path: &At<'_>, message: String) -> Misfit {
    Misfit { path: path.to_string(), message }
}

/// Checks a row (an object of `fields`) against its schema, money read in `currency`, taking the
/// top-level fields `only` refuses as fitting: present unless optional, declared, and of their
/// type. For a row whose value as read fits, and whose other fields are still that value's, the
/// answer is the whole row's at the cost of the fields `only` takes.
pub(crate) fn check_row_fields(
    fields: &Fields,
    row: RowFields<'_>,
    currency: Option<Currency>,
    only: &dyn Fn(&str) -> bool,
) -> Result<(), Misfit> {
    check_fields(fields, &At::Text(""), row, currency, only)
}

/// A row's top-level fields as a turn sees them: its object, with the fields an effect on trial
/// wrote read in place of the object's own (the workspace keeps those beside the row rather
/// than in a copy of it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowFields<'a> {
    own: &'a Map<String, Value>,
    written: Option<&'a Map<String, Value>>,
}

impl<'a> RowFields<'a> {
    /// The fields of `own`, those in `written` replaced or added.
    pub(crate) fn new(own: &'a Map<String, Value>, written: Option<&'a Map<String, Value>>) -> Self {
        RowFields { own, written }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        written_field(self.written, name).or_else(|| self.own.get(name))
    }

    /// Every field, in the order the row holds them once written: its own, then those added.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a String, &'a Value)> + use<'a> {
        let (own, written) = (self.own, self.written);
        let replaced = own.iter().map(move |(name, value)| (name, written_field(written, name).unwrap_or(value)));
        let added = written.into_iter().flat_map(Map::iter).filter(move |(name, _)| !own.contains_key(*name));
        replaced.chain(added)
    }
}

/// A field of those written, found by a scan: a trial writes a few fields, and comparing their
/// names costs less than hashing the one looked for.
fn written_field<'a>(written: Option<&'a Map<String, Value>>, name: &str) -> Option<&'a Value> {
    written?.iter().find_map(|(field, value)| (field == name).then_some(value))
}

/// Every field's value is checked.
const ALL: &dyn Fn(&str) -> bool = &|_| true;

fn check_object(
    fields: &Fields,
    path: &At<'_>,
    value: &Value,
    currency: Option<Currency>,
    only: &dyn Fn(&str) -> bool,
) -> Result<(), Misfit> {
    let Value::Object(map) = value else {
        return Err(misfit(path, format!("is {}, not an object", shape(value))));
    };
    check_fields(fields, path, RowFields::new(map, None), currency, only)
}

/// The fields of an object that `only` takes against their declarations: none undeclared,
/// none missing or `null` that is not optional, each value of its type.
fn check_fields(
    fields: &Fields,
    path: &At<'_>,
    row: RowFields<'_>,
    currency: Option<Currency>,
    only: &dyn Fn(&str) -> bool,
) -> Result<(), Misfit> {
    if let Some((extra, _)) = row.iter().find(|(k, _)| only(k) && !fields.contains_key(*k)) {
        return Err(misfit(&At::Field(path, extra), "is not a declared field".into()));
    }
    for (name, field) in fields {
        if !only(name) {
            continue;
        }
        let at = At::Field(path, name);
        match row.get(name) {
            None | Some(Value::Null) if field.optional => {}
            None => return Err(misfit(&at, "is missing; the field is not optional".into())),
            Some(Value::Null) => return Err(misfit(&at, "is null, but the field is not optional".into())),
            Some(inner) => check_value_at(field, &at, inner, currency)?,
        }
    }
    Ok(())
}

/// What a JSON value is, for messages.
fn shape(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Checks one value against its field (never `null` here: the caller handles absence).
pub fn check_value(field: &Field, path: &str, value: &Value, currency: Option<Currency>) -> Result<(), Misfit> {
    check_value_at(field, &At::Text(path), value, currency)
}

fn check_value_at(field: &Field, path: &At<'_>, value: &Value, currency: Option<Currency>) -> Result<(), Misfit> {
    let wrong = |want: &str| Err(misfit(path, format!("is {}, not {want}", shape(value))));
    match (&field.kind, value) {
        (Kind::Text, Value::String(_)) | (Kind::Bool, Value::Bool(_)) => Ok(()),
        (Kind::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(()),
        (Kind::Integer, _) => wrong("an integer"),
        (Kind::Money, Value::Number(n)) => {
            let Some(currency) = currency else { return Err(misfit(path, "money needs `records.currency`".into())) };
            match money::record_units(value, currency) {
                Ok(_) => Ok(()),
                Err(MoneyError::TooPrecise { minor_digits, .. }) => {
                    Err(misfit(path, format!("holds {n}, more digits than {minor_digits} minor units allow")))
                }
                Err(reason) => Err(misfit(path, format!("holds {n}: {reason}"))),
            }
        }
        (Kind::Enum(values), Value::String(s)) => {
            if values.iter().any(|v| v == s) {
                Ok(())
            } else {
                Err(misfit(path, format!("holds `{}`, not one of {}", text::visible(s), quoted(values))))
            }
        }
        (Kind::Instant, Value::String(s)) => crate::date::parse_instant(s)
            .map(|_| ())
            .map_err(|_| misfit(path, format!("holds `{}`, not an RFC 3339 instant with an offset", text::visible(s)))),
        (Kind::Date, Value::String(s)) => {
            if is_date(s) {
                Ok(())
            } else {
                Err(misfit(path, format!("holds `{}`, not a day that exists written YYYY-MM-DD", text::visible(s))))
            }
        }
        (Kind::Ref(table), Value::String(s)) => {
            if s.is_empty() {
                Err(misfit(path, format!("is empty, not the key of a `{table}` row")))
            } else {
                Ok(())
            }
        }
        (Kind::List(of), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let at = At::Index(path, i);
                if item.is_null() {
                    return Err(misfit(&at, "is null, but list elements cannot be".into()));
                }
                check_value_at(of, &at, item, currency)?;
            }
            Ok(())
        }
        (Kind::Object(fields), Value::Object(_)) => check_object(fields, path, value, currency, ALL),
        (Kind::Map(of), Value::Object(map)) => {
            for (key, item) in map {
                let at = At::Field(path, key);
                match item {
                    Value::Null if of.optional => {}
                    Value::Null => return Err(misfit(&at, "is null, but the map's values are not optional".into())),
                    item => check_value_at(of, &at, item, currency)?,
                }
            }
            Ok(())
        }
        (Kind::Text | Kind::Enum(_) | Kind::Instant | Kind::Date | Kind::Ref(_), _) => wrong("a string"),
        (Kind::Bool, _) => wrong("a boolean"),
        (Kind::Money, _) => wrong("a number (money)"),
        (Kind::List(_), _) => wrong("a list"),
        (Kind::Object(_) | Kind::Map(_), _) => wrong("an object"),
    }
}

/// `YYYY-MM-DD`, a day that exists.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
        && s.parse::<jiff::civil::Date>().is_ok()
}

fn quoted(values: &[String]) -> String {
    values.iter().map(|v| format!("`{}`", text::visible(v))).collect::<Vec<_>>().join(", ")
}

/// The field one step below `field` by `name`: lists are stepped through; a map's entries and
/// a scalar's (absent) fields are errors naming the path so far.
pub fn step<'a>(field: &'a Field, name: &str, path: &str) -> Result<&'a Field, String> {
    let field = through_lists(field);
    match &field.kind {
        Kind::Object(fields) => fields.get(name).ok_or_else(|| {
            let known: Vec<&str> = fields.keys().map(String::as_str).collect();
            format!(
                "`{}` has no field `{}` (its fields: {})",
                if path.is_empty() { "the row" } else { path },
                text::visible(name),
                known.join(", ")
            )
        }),
        Kind::Map(_) => Err(format!(
            "`{path}` is a map keyed by ids: name its entries through a `member` argument, not `.{}`",
            text::visible(name)
        )),
        other => Err(format!("`{path}` is {} and has no field `{}`", other.name(), text::visible(name))),
    }
}

/// The field with any lists around it taken off: what a path reaches element by element.
pub fn through_lists(mut field: &Field) -> &Field {
    while let Kind::List(of) = &field.kind {
        field = of;
    }
    field
}

/// The field `names` reach from `field`, each step as [`step`]; `path` is the root's name.
pub fn resolve<'a>(field: &'a Field, root: &str, names: &[String]) -> Result<&'a Field, String> {
    let mut current = field;
    let mut path = root.to_owned();
    for name in names {
        current = step(current, name, &path)?;
        path = join(&path, name);
    }
    Ok(current)
}

/// The element of the collection `path` of a row with `key` (a list of objects with that id
/// field, or a map without one): what a member argument names.
pub fn member_element<'a>(row: &'a Field, path: &str, key: Option<&str>) -> Result<&'a Field, String> {
    let collection = resolve(row, "", &[path.to_owned()])?;
    match (&collection.kind, key) {
        (Kind::Map(of), None) => Ok(of),
        (Kind::List(of), Some(key)) => {
            resolve(of, path, &[key.to_owned()])
                .map_err(|e| format!("the elements of `{path}` have no id field `{key}`: {e}"))?;
            Ok(of)
        }
        (Kind::Map(_), Some(key)) => {
            Err(format!("`{path}` is a map: its members are its keys, so `key = \"{key}\"` does not apply"))
        }
        (Kind::List(_), None) => Err(format!("`{path}` is a list: its members need `key`, the field that is their id")),
        (other, _) => Err(format!("`{path}` is {}, not a list or a map", other.name())),
    }
}

/// Whether the value at `concrete` (keys from the row, list positions left out) is money.
pub fn is_money_at(row: &Field, concrete: &[&str]) -> bool {
    let mut current = row;
    for name in concrete {
        current = through_lists(current);
        current = match &current.kind {
            Kind::Object(fields) => match fields.get(*name) {
                Some(f) => f,
                None => return false,
            },
            Kind::Map(of) => of,
            _ => return false,
        };
    }
    matches!(through_lists(current).kind, Kind::Money)
}

/// Whether an untyped table's money path (`payment_history.amount`, `*` for any one key)
/// names the value at `concrete`.
pub fn money_path_matches(money_path: &str, concrete: &[&str]) -> bool {
    let parts: Vec<&str> = money_path.split('.').collect();
    parts.len() == concrete.len() && parts.iter().zip(concrete).all(|(p, c)| *p == "*" || p == c)
}

/// The Cedar type of a field, as `records::cedar_attrs` hands its value over: money as a
/// `Long` of minor units, an instant and a date as a `datetime` (`records::cedar_datetimes`; a
/// date as its day's `00:00:00Z`), every other string kind a `String`, lists as sets, objects
/// as closed records; a map (keyed by ids no schema names) as an open record.
pub fn cedar_type(field: &Field) -> Value {
    let mut ty = match &field.kind {
        Kind::Instant | Kind::Date => serde_json::json!({"type": "Extension", "name": "datetime"}),
        Kind::Text | Kind::Enum(_) | Kind::Ref(_) => serde_json::json!({"type": "String"}),
        Kind::Integer | Kind::Money => serde_json::json!({"type": "Long"}),
        Kind::Bool => serde_json::json!({"type": "Boolean"}),
        Kind::List(of) => {
            let mut element = cedar_type(of);
            if let Value::Object(map) = &mut element {
                map.remove("required");
            }
            serde_json::json!({"type": "Set", "element": element})
        }
        Kind::Object(fields) => cedar_record(fields),
        Kind::Map(_) => serde_json::json!({"type": "Record", "attributes": {}, "additionalAttributes": true}),
    };
    if field.optional
        && let Value::Object(map) = &mut ty
    {
        map.insert("required".into(), Value::Bool(false));
    }
    ty
}

/// A closed Cedar record of `fields` (a key beginning `__` is renamed as the attributes are).
pub fn cedar_record(fields: &Fields) -> Value {
    let attributes: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(k, f)| (if k.starts_with("__") { format!("_{k}") } else { k.clone() }, cedar_type(f)))
        .collect();
    serde_json::json!({"type": "Record", "attributes": attributes})
}

/// Every table a field refers to (`ref`), with the field's path, so the loader can check each
/// table exists.
pub fn refs<'a>(field: &'a Field, path: &str, out: &mut Vec<(String, &'a str)>) {
    match &field.kind {
        Kind::Ref(table) => out.push((path.to_owned(), table)),
        Kind::List(of) => refs(of, path, out),
        Kind::Map(of) => refs(of, &join(path, "*"), out),
        Kind::Object(fields) => {
            for (name, f) in fields {
                refs(f, &join(path, name), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole row checked, every field taken.
    fn check_row(fields: &Fields, value: &Value, currency: Option<Currency>) -> Result<(), Misfit> {
        check_object(fields, &At::Text(""), value, currency, ALL)
    }
    use serde_json::json;

    fn f(kind: Kind) -> Field {
        Field { kind, optional: false }
    }

    fn order() -> Field {
        let mut item = Fields::new();
        item.insert("price".into(), f(Kind::Money));
        item.insert("item_id".into(), f(Kind::Text));
        let mut row = Fields::new();
        row.insert("status".into(), f(Kind::Enum(vec!["pending".into(), "cancelled".into()])));
        row.insert("items".into(), f(Kind::List(Box::new(f(Kind::Object(item))))));
        row.insert("note".into(), Field { kind: Kind::Text, optional: true });
        row.insert(
            "methods".into(),
            f(Kind::Map(Box::new(f(Kind::Object(Fields::from([("balance".to_owned(), f(Kind::Money))])))))),
        );
        f(Kind::Object(row))
    }

    #[test]
    fn rows_are_closed_and_typed() {
        let Kind::Object(fields) = order().kind else { unreachable!() };
        let usd = Some(Currency::USD);
        let good =
            json!({"status": "pending", "items": [{"price": 1.5, "item_id": "a"}], "methods": {"g": {"balance": 3}}});
        assert_eq!(check_row(&fields, &good, usd), Ok(()));
        let extra = json!({"status": "pending", "items": [], "methods": {}, "statu": "x"});
        assert_eq!(check_row(&fields, &extra, usd).unwrap_err().path, "statu");
        let bad_enum = json!({"status": "gone", "items": [], "methods": {}});
        assert!(check_row(&fields, &bad_enum, usd).unwrap_err().message.contains("holds `gone`, not one of"));
        let price = json!({"status": "pending", "items": [{"price": 1.555, "item_id": "a"}], "methods": {}});
        assert_eq!(check_row(&fields, &price, usd).unwrap_err().path, "items[0].price");
        let null = json!({"status": null, "items": [], "methods": {}, "note": null});
        assert_eq!(check_row(&fields, &null, usd).unwrap_err().path, "status");
        let map = json!({"status": "pending", "items": [], "methods": {"g": {"balance": "x"}}});
        assert_eq!(check_row(&fields, &map, usd).unwrap_err().path, "methods.g.balance");
    }

    #[test]
    fn paths_resolve_through_lists_and_not_into_maps() {
        let row = order();
        assert_eq!(resolve(&row, "o", &["items".into(), "price".into()]).unwrap().kind, Kind::Money);
        let err = resolve(&row, "o", &["statu".into()]).unwrap_err();
        assert!(err.contains("has no field `statu`"), "{err}");
        assert!(resolve(&row, "o", &["methods".into(), "balance".into()]).unwrap_err().contains("map"));
        assert!(!member_element(&row, "methods", None).unwrap().optional);
        assert!(member_element(&row, "items", None).is_err());
        assert!(member_element(&row, "items", Some("item_id")).is_ok());
        assert!(is_money_at(&row, &["methods", "anything", "balance"]));
        assert!(!is_money_at(&row, &["status"]));
        assert!(money_path_matches("variants.*.price", &["variants", "v1", "price"]));
        assert!(!money_path_matches("price", &["items", "price"]));
    }

    #[test]
    fn dates_and_instants_are_strict() {
        let date = f(Kind::Date);
        assert!(check_value(&date, "d", &json!("2024-02-29"), None).is_ok());
        assert!(check_value(&date, "d", &json!("2023-02-29"), None).is_err());
        assert!(check_value(&date, "d", &json!("2024-2-9"), None).is_err());
        let instant = f(Kind::Instant);
        assert!(check_value(&instant, "i", &json!("2024-05-01T10:00:00+09:00"), None).is_ok());
        assert!(check_value(&instant, "i", &json!("2024-05-01T10:00:00"), None).is_err());
    }
}
