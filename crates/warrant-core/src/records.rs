//! Records: the authoritative data a deployment owns (orders, users, …), as the contract declares
//! its tables. Each row has a key and a revision; the gate reads rows as facts and writes new
//! values only through committed effects, with the revision it read.
//!
//! Amounts in data files arrive as JSON numbers. Fields declared as money are read exactly as
//! decimal text into minor units; any other fractional number is refused when the data loads,
//! because a policy must never compare floating-point values.

use serde_json::{Map, Value};

use crate::text;

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

/// A records table as the contract declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name, used by operations and claims.
    pub name: String,
    /// Where its rows come from.
    pub source: TableSource,
    /// The Cedar entity type its rows become in policies.
    pub entity: String,
    /// Field names whose numbers are money (read exactly into minor units).
    pub money: Vec<String>,
    /// Which actors may see its rows.
    pub visibility: Visibility,
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
    Nested { table: String, path: String, parent_field: String },
}

/// A data file or row that does not fit its table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// The file is not a JSON object keyed by row key.
    #[error("table `{table}`: the data is not a JSON object keyed by row key")]
    NotKeyed { table: String },
    /// A row is not a JSON object.
    #[error("table `{table}`, row `{key}`: the row is not a JSON object")]
    RowNotObject { table: String, key: String },
    /// A fractional number outside a declared money field.
    #[error(
        "table `{table}`, row `{key}`: `{path}` holds the fractional number {number}; declare the field as money or store it as text"
    )]
    UndeclaredFraction { table: String, key: String, path: String, number: String },
    /// A money number with more digits than the currency allows.
    #[error("table `{table}`, row `{key}`: `{path}` holds {number}, more digits than {exponent} minor units allow")]
    TooPrecise { table: String, key: String, path: String, number: String, exponent: u32 },
    /// The nested source field is missing or not an object.
    #[error("table `{table}`, row `{key}`: `{path}` is not an object of rows")]
    NestedNotObject { table: String, key: String, path: String },
}

/// Splits a parsed data file into rows, checking every number.
pub fn rows_from_file(table: &Table, data: Value, exponent: u32) -> Result<Vec<(String, Value)>, DataError> {
    let Value::Object(map) = data else {
        return Err(DataError::NotKeyed { table: table.name.clone() });
    };
    let mut rows = Vec::with_capacity(map.len());
    for (key, value) in map {
        if !value.is_object() {
            return Err(DataError::RowNotObject { table: table.name.clone(), key });
        }
        check_numbers(table, &key, "", &value, exponent)?;
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
    exponent: u32,
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
            check_numbers(table, key, "", &value, exponent)?;
            rows.push((key.clone(), value));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(rows)
}

fn check_numbers(table: &Table, key: &str, path: &str, value: &Value, exponent: u32) -> Result<(), DataError> {
    match value {
        Value::Object(map) => {
            for (field, inner) in map {
                let path = if path.is_empty() { field.clone() } else { format!("{path}.{field}") };
                if let Value::Number(n) = inner
                    && table.money.iter().any(|m| m == field)
                {
                    if minor_units(n, exponent).is_none() {
                        return Err(DataError::TooPrecise {
                            table: table.name.clone(),
                            key: key.to_owned(),
                            path,
                            number: n.to_string(),
                            exponent,
                        });
                    }
                    continue;
                }
                check_numbers(table, key, &path, inner, exponent)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                check_numbers(table, key, &format!("{path}[{i}]"), inner, exponent)?;
            }
            Ok(())
        }
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => Err(DataError::UndeclaredFraction {
            table: table.name.clone(),
            key: key.to_owned(),
            path: path.to_owned(),
            number: n.to_string(),
        }),
        _ => Ok(()),
    }
}

/// The exact minor units of a JSON number read as decimal text (`54.04` with exponent 2 is
/// 5404), or `None` when it has more fractional digits than `exponent`, an exponent part, or
/// does not fit.
pub fn minor_units(number: &serde_json::Number, exponent: u32) -> Option<i64> {
    parse_minor_units(&number.to_string(), exponent)
}

/// The exact minor units of a plain decimal text.
pub fn parse_minor_units(text: &str, exponent: u32) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > exponent as usize {
        return None;
    }
    let scale = 10i64.checked_pow(exponent)?;
    let mut units = whole.parse::<i64>().ok()?.checked_mul(scale)?;
    if !fraction.is_empty() {
        let padded = format!("{fraction:0<width$}", width = exponent as usize);
        units = units.checked_add(padded.parse::<i64>().ok()?)?;
    }
    Some(if negative { -units } else { units })
}

/// Minor units back to an exact JSON number (`5404` with exponent 2 is `54.04`).
pub fn units_to_json(units: i64, exponent: u32) -> Value {
    let scale = 10i64.pow(exponent.min(18));
    let sign = if units < 0 { "-" } else { "" };
    let abs = units.unsigned_abs();
    let text = if exponent == 0 {
        format!("{sign}{abs}")
    } else {
        let scale = scale.unsigned_abs();
        format!("{sign}{}.{:0width$}", abs / scale, abs % scale, width = exponent as usize)
    };
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// A row as a Cedar entity's attributes: money fields as minor units, `null`s dropped (Cedar
/// has no null), the row key added as `key` so policies can compare it.
pub fn cedar_attrs(table: &Table, key: &str, value: &Value, exponent: u32) -> Value {
    let mut attrs = match cedar_value(table, value, exponent, None) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    attrs.insert("key".to_owned(), Value::String(key.to_owned()));
    Value::Object(attrs)
}

fn cedar_value(table: &Table, value: &Value, exponent: u32, field: Option<&str>) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Number(n) => {
            if field.is_some_and(|f| table.money.iter().any(|m| m == f)) {
                minor_units(n, exponent).map(Value::from)
            } else {
                n.as_i64().map(Value::from)
            }
        }
        Value::Object(map) => {
            // A key Cedar's JSON format would read as an escape is renamed, never interpreted.
            let out: Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| {
                    let name = if k.starts_with("__") { format!("_{k}") } else { k.clone() };
                    cedar_value(table, v, exponent, Some(k)).map(|v| (name, v))
                })
                .collect();
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            Some(Value::Array(items.iter().filter_map(|v| cedar_value(table, v, exponent, field)).collect()))
        }
        Value::String(s) => Some(Value::String(s.clone())),
        Value::Bool(b) => Some(Value::Bool(*b)),
    }
}

/// A key quoted for messages: invisible characters made visible.
pub fn shown(key: &str) -> String {
    text::visible(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minor_units_read_decimal_text_exactly() {
        assert_eq!(parse_minor_units("54.04", 2), Some(5404));
        assert_eq!(parse_minor_units("0.1", 2), Some(10));
        assert_eq!(parse_minor_units("12", 2), Some(1200));
        assert_eq!(parse_minor_units("-3.50", 2), Some(-350));
        assert_eq!(parse_minor_units("1.005", 2), None);
        assert_eq!(parse_minor_units("1e3", 2), None);
        assert_eq!(parse_minor_units("", 2), None);
        assert_eq!(units_to_json(5404, 2).to_string(), "54.04");
        assert_eq!(units_to_json(-5, 2).to_string(), "-0.05");
    }

    #[test]
    fn an_undeclared_fraction_refuses_the_data() {
        let table = Table {
            name: "order".into(),
            source: TableSource::File("orders.json".into()),
            entity: "Order".into(),
            money: vec!["price".into()],
            visibility: Visibility::Everyone,
        };
        let ok = serde_json::json!({"a": {"items": [{"price": 1.25}], "n": 3}});
        assert!(rows_from_file(&table, ok, 2).is_ok());
        let bad = serde_json::json!({"a": {"weight": 1.25}});
        assert!(matches!(rows_from_file(&table, bad, 2), Err(DataError::UndeclaredFraction { .. })));
        let precise = serde_json::json!({"a": {"price": 1.255}});
        assert!(matches!(rows_from_file(&table, precise, 2), Err(DataError::TooPrecise { .. })));
    }
}
