//! Records: the authoritative data a deployment owns (orders, users, …), as the contract declares
//! its tables. Each row has a key and a revision; the gate reads rows as facts and writes new
//! values only through committed effects, with the revision it read.
//!
//! Amounts in data files arrive as JSON numbers. Fields declared as money are read exactly as
//! decimal text into minor units of the contract's currency, by the one exact-money reader
//! ([`money::parse_record_amount`]); any other fractional number is refused when the data
//! loads, because a policy must never compare floating-point values.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::money::{self, Currency, MoneyError};
use crate::schema::{self, At, Field, Kind};

/// One stored row of a records table, as the store hands it over.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// The revision the row is at; every committed write adds one.
    pub revision: i64,
    /// The row.
    pub value: Value,
}

/// A stored row whose value is shared, not copied: what a turn reads, keeps while it decides,
/// and puts on its replay record. Its JSON is a [`Record`]'s.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedRecord {
    /// The table.
    pub table: String,
    /// The row's key.
    pub key: String,
    /// The revision the row is at.
    pub revision: i64,
    /// The row.
    pub value: Arc<Value>,
}

impl From<Record> for SharedRecord {
    fn from(Record { table, key, revision, value }: Record) -> SharedRecord {
        SharedRecord { table, key, revision, value: Arc::new(value) }
    }
}

impl SharedRecord {
    /// The row as a [`Record`], its value copied.
    pub fn to_record(&self) -> Record {
        Record {
            table: self.table.clone(),
            key: self.key.clone(),
            revision: self.revision,
            value: (*self.value).clone(),
        }
    }
}

/// A records table as the contract declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name, used by operations and claims.
    pub name: String,
    /// Where its rows come from.
    pub source: TableSource,
    /// The Cedar entity type its rows become in policies.
    pub entity: String,
    /// For a table without a schema, the field paths whose numbers are money (read exactly
    /// into minor units): `payment_history.amount`, lists stepped through, `*` for any one key.
    pub money: Vec<String>,
    /// Which actors may see its rows.
    pub visibility: Visibility,
    /// The field that holds each row's own key (`key = "order_id"`), if declared.
    pub key: Option<String>,
    /// The row's schema (an object of its fields), if the table declares one; `None` leaves
    /// rows untyped, as before schemas.
    pub schema: Option<Field>,
}

impl Table {
    /// Whether the value at `concrete` (the keys from the row down to it, list positions left
    /// out) is money: a `money` field of the schema, or a `money` path of an untyped table.
    pub fn is_money(&self, concrete: &[&str]) -> bool {
        match &self.schema {
            Some(row) => schema::is_money_at(row, concrete),
            None => self.money.iter().any(|m| schema::money_path_matches(m, concrete)),
        }
    }
}

/// Which actors may see the rows of a table, as the contract declares it (`owner`). A row an
/// actor may not see is, for that actor, a row that does not exist: an act naming it is
/// refused as `unknown_record`, and a claim about it is not backed (see `crate::visibility`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// Every actor (a catalogue): the table declares no `owner`.
    Everyone,
    /// Only the actor the row is: the actor table's rows.
    Actor,
    /// Only the actor whose key the row's field holds (`owner = "user_id"`).
    Owner(String),
    /// As the parent row its `parent_field` names: a nested table.
    Parent {
        /// The parent table.
        table: String,
        /// The field holding the parent row's key.
        field: String,
    },
}

/// Where a table's rows come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableSource {
    /// A JSON file holding an object keyed by row key, relative to the contract.
    File(String),
    /// The entries of an object field of another table's rows, each becoming a row keyed by its
    /// entry key, with the parent row's key written into `parent_field`.
    Nested {
        /// The parent table whose rows hold the entries.
        table: String,
        /// The object field of each parent row whose entries become rows.
        path: String,
        /// The field of each new row that receives its parent row's key.
        parent_field: String,
    },
}

/// A data file or row that does not fit its table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// The file is not a JSON object keyed by row key.
    #[error("table `{table}`: the data is not a JSON object keyed by row key")]
    NotKeyed {
        /// The table the data was meant for.
        table: String,
    },
    /// A row is not a JSON object.
    #[error("table `{table}`, row `{key}`: the row is not a JSON object")]
    RowNotObject {
        /// The table the data was meant for.
        table: String,
        /// The row's key.
        key: String,
    },
    /// A fractional number outside a declared money field.
    #[error(
        "table `{table}`, row `{key}`: `{path}` holds the fractional number {number}; declare the field as money or store it as text"
    )]
    UndeclaredFraction {
        /// The table the data was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// Where in the row the number is, written `field.inner[0]`.
        path: String,
        /// The number as the file wrote it.
        number: String,
    },
    /// A money number with more digits than the currency allows.
    #[error("table `{table}`, row `{key}`: `{path}` holds {number}, more digits than {exponent} minor units allow")]
    TooPrecise {
        /// The table the data was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// Where in the row the number is, written `field.inner[0]`.
        path: String,
        /// The number as the file wrote it.
        number: String,
        /// The currency's number of minor-unit digits.
        exponent: u32,
    },
    /// A money number that is no exact amount of the contract's currency for another reason:
    /// beyond what warrant computes exactly.
    #[error("table `{table}`, row `{key}`: `{path}` holds {number}: {reason}")]
    NotMoney {
        /// The table the data was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// Where in the row the number is, written `field.inner[0]`.
        path: String,
        /// The number as the file wrote it.
        number: String,
        /// Why it is not an exact amount.
        reason: String,
    },
    /// The nested source field is missing or not an object.
    #[error("table `{table}`, row `{key}`: `{path}` is not an object of rows")]
    NestedNotObject {
        /// The table the data was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// The nested source field that should hold the rows.
        path: String,
    },
    /// A row does not fit its table's schema.
    #[error("table `{table}`, row `{key}`: `{path}` {message}")]
    Schema {
        /// The table the row was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// The field at fault, written `items[0].price`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The row's key field holds another value than its key.
    #[error("table `{table}`, row `{key}`: `{path}` must hold the row's key `{key}`")]
    KeyMismatch {
        /// The table the row was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// The table's key field.
        path: String,
    },
    /// A row's key is empty.
    #[error("table `{table}`: a row's key is empty")]
    EmptyKey {
        /// The table the row was meant for.
        table: String,
    },
    /// A row of a nested table lacks the text field holding its parent row's key.
    #[error("table `{table}`, row `{key}`: `{path}` must hold the key of its `{parent}` row as text")]
    MissingKeyField {
        /// The table the row was meant for.
        table: String,
        /// The row's key.
        key: String,
        /// The field that should hold the parent row's key.
        path: String,
        /// The parent table.
        parent: String,
    },
}

impl DataError {
    /// The path of the field at fault, where one field is (`price`, `items[0].price`); `None`
    /// for a fault of the whole row or file.
    pub fn field(&self) -> Option<&str> {
        match self {
            DataError::UndeclaredFraction { path, .. }
            | DataError::TooPrecise { path, .. }
            | DataError::NotMoney { path, .. }
            | DataError::NestedNotObject { path, .. }
            | DataError::MissingKeyField { path, .. }
            | DataError::Schema { path, .. }
            | DataError::KeyMismatch { path, .. } => Some(path),
            DataError::NotKeyed { .. } | DataError::RowNotObject { .. } | DataError::EmptyKey { .. } => None,
        }
    }
}

/// Checks one row of `table` as every row is checked, whether it comes from a data file when
/// the store is seeded or from the system of record through a write: a key that is not empty, a
/// JSON object, its numbers (money fields exact in `currency`, no other fraction), for a
/// nested table the field holding its parent row's key, the key field holding the row's key,
/// and, where the table declares a schema, every field against it (a closed row).
pub fn check_row(table: &Table, key: &str, value: &Value, currency: Option<Currency>) -> Result<(), DataError> {
    check_row_fields(table, key, value, None, currency, &|_| true)
}

/// As [`check_row`], taking the top-level fields `only` refuses as fitting (present unless
/// optional, declared, of their type, their numbers exact): for a row whose value as read fits
/// its table ([`FitCache`]), the fields no effect wrote are that value's, and the answer is
/// [`check_row`]'s. Its key, and the fields holding its key and its parent's, are checked
/// whatever `only` says. The row checked is `value` with the top-level fields in `written` (an
/// effect's on trial) in place of its own.
pub fn check_row_fields(
    table: &Table,
    key: &str,
    value: &Value,
    written: Option<&Map<String, Value>>,
    currency: Option<Currency>,
    only: &dyn Fn(&str) -> bool,
) -> Result<(), DataError> {
    if key.is_empty() {
        return Err(DataError::EmptyKey { table: table.name.clone() });
    }
    let Value::Object(own) = value else {
        return Err(DataError::RowNotObject { table: table.name.clone(), key: key.to_owned() });
    };
    let fields = schema::RowFields::new(own, written);
    if let TableSource::Nested { table: parent, parent_field, .. } = &table.source
        && fields.get(parent_field).and_then(Value::as_str).is_none_or(str::is_empty)
    {
        return Err(DataError::MissingKeyField {
            table: table.name.clone(),
            key: key.to_owned(),
            path: parent_field.clone(),
            parent: parent.clone(),
        });
    }
    if let Some(Kind::Object(declared)) = table.schema.as_ref().map(|s| &s.kind) {
        schema::check_row_fields(declared, fields, currency, only).map_err(|m| DataError::Schema {
            table: table.name.clone(),
            key: key.to_owned(),
            path: m.path,
            message: m.message,
        })?;
    }
    if let Some(field) = &table.key
        && fields.get(field).and_then(Value::as_str) != Some(key)
    {
        return Err(DataError::KeyMismatch { table: table.name.clone(), key: key.to_owned(), path: field.clone() });
    }
    let written = fields.iter().filter(|(field, _)| only(field));
    check_fields_numbers(table, key, &mut Vec::new(), &At::Text(""), written, currency)
}

/// How many rows a [`FitCache`] keeps; past it, all are dropped.
pub const FIT_CACHE_ROWS: usize = 1024;

/// The rows found to fit their table, by table and key, each with the revision and the value
/// checked: a row an effect changed is then checked on the fields its effects wrote alone
/// (`check_row_fields`). An entry answers only for that revision with an equal value. Pure
/// data; its size is bounded by [`FIT_CACHE_ROWS`].
#[derive(Default)]
pub struct FitCache {
    rows: Mutex<BTreeMap<(String, String), FitRow>>,
}

/// A row found to fit: the revision and the value checked.
type FitRow = (i64, Arc<Value>);

impl std::fmt::Debug for FitCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = self.rows.lock().map(|r| r.len()).unwrap_or_default();
        f.debug_struct("FitCache").field("rows", &rows).finish()
    }
}

impl FitCache {
    /// Whether `read` fits `table`: known from an earlier check of the same revision with an
    /// equal value, or checked now (and kept when it fits).
    pub fn fits(&self, table: &Table, read: &SharedRecord, currency: Option<Currency>) -> bool {
        let at = (read.table.clone(), read.key.clone());
        let kept = self.rows.lock().ok().and_then(|rows| {
            rows.get(&at).filter(|(revision, _)| *revision == read.revision).map(|(_, value)| value.clone())
        });
        // Compared outside the lock: a revision reused with another value is another row.
        if let Some(kept) = kept
            && (Arc::ptr_eq(&kept, &read.value) || *kept == *read.value)
        {
            return true;
        }
        if check_row(table, &read.key, &read.value, currency).is_err() {
            return false;
        }
        if let Ok(mut rows) = self.rows.lock() {
            if rows.len() >= FIT_CACHE_ROWS {
                rows.clear();
            }
            rows.insert(at, (read.revision, read.value.clone()));
        }
        true
    }
}

/// Splits a parsed data file into rows, checking every number.
pub fn rows_from_file(
    table: &Table,
    data: Value,
    currency: Option<Currency>,
) -> Result<Vec<(String, Value)>, DataError> {
    let Value::Object(map) = data else {
        return Err(DataError::NotKeyed { table: table.name.clone() });
    };
    let mut rows = Vec::with_capacity(map.len());
    for (key, value) in map {
        check_row(table, &key, &value, currency)?;
        rows.push((key, value));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(rows)
}

/// The rows of a nested table, drawn from its parent table's rows.
pub fn rows_from_parent(
    table: &Table,
    parent_rows: &[(String, Value)],
    path: &str,
    parent_field: &str,
    currency: Option<Currency>,
) -> Result<Vec<(String, Value)>, DataError> {
    let mut rows = Vec::new();
    for (parent_key, parent) in parent_rows {
        let Some(Value::Object(entries)) = parent.get(path) else {
            return Err(DataError::NestedNotObject {
                table: table.name.clone(),
                key: parent_key.clone(),
                path: path.to_owned(),
            });
        };
        for (key, value) in entries {
            let Value::Object(fields) = value else {
                return Err(DataError::RowNotObject { table: table.name.clone(), key: key.clone() });
            };
            let mut fields = fields.clone();
            fields.insert(parent_field.to_owned(), Value::String(parent_key.clone()));
            let value = Value::Object(fields);
            check_row(table, key, &value, currency)?;
            rows.push((key.clone(), value));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(rows)
}

fn check_numbers<'v>(
    table: &Table,
    key: &str,
    concrete: &mut Vec<&'v str>,
    path: &At<'_>,
    value: &'v Value,
    currency: Option<Currency>,
) -> Result<(), DataError> {
    match value {
        Value::Object(map) => check_fields_numbers(table, key, concrete, path, map.iter(), currency),
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                check_numbers(table, key, concrete, &At::Index(path, i), inner, currency)?;
            }
            Ok(())
        }
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => Err(DataError::UndeclaredFraction {
            table: table.name.clone(),
            key: key.to_owned(),
            path: path.to_string(),
            number: n.to_string(),
        }),
        _ => Ok(()),
    }
}

/// [`check_numbers`] for the fields `fields` of an object at `path`.
fn check_fields_numbers<'v>(
    table: &Table,
    key: &str,
    concrete: &mut Vec<&'v str>,
    path: &At<'_>,
    fields: impl Iterator<Item = (&'v String, &'v Value)>,
    currency: Option<Currency>,
) -> Result<(), DataError> {
    for (field, inner) in fields {
        let path = At::Field(path, field);
        concrete.push(field);
        // Without a currency there are no money fields (the loader refuses them), and
        // a number is checked as any other.
        if let (Value::Number(n), Some(currency)) = (inner, currency)
            && table.is_money(concrete)
        {
            concrete.pop();
            let Err(reason) = money::record_units(inner, currency) else { continue };
            let (table, key, number) = (table.name.clone(), key.to_owned(), n.to_string());
            return Err(match reason {
                MoneyError::TooPrecise { minor_digits, .. } => {
                    DataError::TooPrecise { table, key, path: path.to_string(), number, exponent: minor_digits }
                }
                reason => {
                    DataError::NotMoney { table, key, path: path.to_string(), number, reason: reason.to_string() }
                }
            });
        }
        check_numbers(table, key, concrete, &path, inner, currency)?;
        concrete.pop();
    }
    Ok(())
}

/// A row as a Cedar entity's attributes: money fields as minor units, `null`s dropped (Cedar
/// has no null), the row key added as `key` so policies can compare it.
pub fn cedar_attrs(table: &Table, key: &str, value: &Value, currency: Option<Currency>) -> Value {
    let mut attrs = match cedar_value(table, value, currency, &mut Vec::new()) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    attrs.insert("key".to_owned(), Value::String(key.to_owned()));
    Value::Object(attrs)
}

/// A typed row's attributes (as [`cedar_attrs`] gives them) with every `instant` field's value
/// a Cedar `datetime` ([`crate::policy::datetime`], UTC to the millisecond) and every `date`
/// field's that day's `00:00:00Z`, as the Cedar schema types them. A value that is no instant
/// is left as it is (a row checked against its table holds none), so a policy reading it errs.
/// An untyped table's attributes are left as they are: strings.
pub fn cedar_datetimes(table: &Table, attrs: &mut Value) {
    if let (Some(Kind::Object(fields)), Value::Object(map)) = (table.schema.as_ref().map(|s| &s.kind), attrs) {
        datetimes_in(fields, map);
    }
}

fn datetimes_in(fields: &schema::Fields, map: &mut Map<String, Value>) {
    for (name, value) in map.iter_mut() {
        // A field whose name starts with `__` reaches Cedar renamed `___…`.
        let declared = name.strip_prefix('_').filter(|n| n.starts_with("__")).unwrap_or(name);
        if let Some(field) = fields.get(declared) {
            datetimes_at(field, value);
        }
    }
}

fn datetimes_at(field: &Field, value: &mut Value) {
    match (&field.kind, value) {
        (Kind::Instant, value @ Value::String(_)) => {
            let cedar =
                value.as_str().and_then(|t| crate::date::parse_instant(t).ok()).and_then(crate::date::cedar_datetime);
            if let Some(text) = cedar {
                *value = crate::policy::datetime(text);
            }
        }
        (Kind::Date, value @ Value::String(_)) => {
            let text = value.as_str().unwrap_or_default().to_owned();
            *value = crate::policy::datetime(text);
        }
        (Kind::List(of), Value::Array(items)) => items.iter_mut().for_each(|item| datetimes_at(of, item)),
        (Kind::Object(fields), Value::Object(map)) => datetimes_in(fields, map),
        (Kind::Map(of), Value::Object(map)) => map.values_mut().for_each(|item| datetimes_at(of, item)),
        _ => {}
    }
}

/// A value found at `prefix` inside a row of `table` (a member's element, `prefix` the keys
/// from the row down to it) as Cedar reads it: money by its place in the row.
pub fn cedar_value_at(table: &Table, prefix: &[&str], value: &Value, currency: Option<Currency>) -> Value {
    let mut concrete = prefix.to_vec();
    cedar_value(table, value, currency, &mut concrete).unwrap_or(Value::Null)
}

fn cedar_value<'v>(
    table: &Table,
    value: &'v Value,
    currency: Option<Currency>,
    concrete: &mut Vec<&'v str>,
) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Number(n) => {
            if !concrete.is_empty() && table.is_money(concrete) {
                money::record_units(value, currency?).ok().map(Value::from)
            } else {
                n.as_i64().map(Value::from)
            }
        }
        Value::Object(map) => {
            // A key Cedar's JSON format would read as an escape is renamed, never interpreted.
            let mut out = Map::new();
            for (k, v) in map {
                concrete.push(k);
                let name = if k.starts_with("__") { format!("_{k}") } else { k.clone() };
                if let Some(v) = cedar_value(table, v, currency, concrete) {
                    out.insert(name, v);
                }
                concrete.pop();
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            Some(Value::Array(items.iter().filter_map(|v| cedar_value(table, v, currency, concrete)).collect()))
        }
        Value::String(s) => Some(Value::String(s.clone())),
        Value::Bool(b) => Some(Value::Bool(*b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undeclared_fraction_refuses_the_data() {
        let table = Table {
            name: "order".into(),
            source: TableSource::File("orders.json".into()),
            entity: "Order".into(),
            money: vec!["items.price".into(), "price".into()],
            visibility: Visibility::Everyone,
            key: None,
            schema: None,
        };
        let ok = serde_json::json!({"a": {"items": [{"price": 1.25}], "n": 3}});
        assert!(rows_from_file(&table, ok, Some(Currency::USD)).is_ok());
        let bad = serde_json::json!({"a": {"weight": 1.25}});
        assert!(matches!(rows_from_file(&table, bad, Some(Currency::USD)), Err(DataError::UndeclaredFraction { .. })));
        let precise = serde_json::json!({"a": {"price": 1.255}});
        assert!(matches!(rows_from_file(&table, precise, Some(Currency::USD)), Err(DataError::TooPrecise { .. })));
    }

    #[test]
    fn a_record_price_finer_than_the_contract_s_currency_refuses_the_data() {
        let table = Table {
            name: "product".into(),
            source: TableSource::File("products.json".into()),
            entity: "Product".into(),
            money: vec!["items.price".into(), "price".into()],
            visibility: Visibility::Everyone,
            key: None,
            schema: None,
        };
        let data: Value = serde_json::from_str(r#"{"p1": {"items": [{"price": 47.845}]}}"#).unwrap();
        let err = rows_from_file(&table, data, Some(Currency::USD)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "table `product`, row `p1`: `items[0].price` holds 47.845, more digits than 2 minor units allow"
        );
        // The same number is a whole amount of a currency with three decimal places.
        let data: Value = serde_json::from_str(r#"{"p1": {"price": 47.845}}"#).unwrap();
        assert!(rows_from_file(&table, data, Some(Currency::KWD)).is_ok());
        let big: Value = serde_json::from_str(r#"{"p1": {"price": 1e300}}"#).unwrap();
        assert!(matches!(rows_from_file(&table, big, Some(Currency::USD)), Err(DataError::NotMoney { .. })));
    }
}
