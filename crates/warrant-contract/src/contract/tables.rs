//! The `[records]` section: the currency and each `[[records.table]]` with its source, its
//! visibility and its schema (`fields`, or a JSON Schema file through `ContractFiles`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use super::{ContractError, ContractErrorKind, ContractFiles, Locator};
use crate::money;
use crate::records::{Table, TableSource, Visibility};
use crate::schema::{self, Field, Fields, Kind};
use crate::source;
use crate::text;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRecords {
    currency: Option<Spanned<String>>,
    #[serde(default)]
    table: Vec<RawTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    name: Spanned<String>,
    file: Option<String>,
    from: Option<String>,
    path: Option<String>,
    parent_field: Option<String>,
    entity: Spanned<String>,
    money: Option<Spanned<Vec<Spanned<String>>>>,
    /// The field whose value is the key of the actor who may see the row.
    owner: Option<Spanned<String>>,
    /// The field that holds the row's own key.
    key: Option<Spanned<String>>,
    fields: Option<Spanned<BTreeMap<Spanned<String>, Spanned<RawField>>>>,
    schema: Option<Spanned<String>>,
}

/// One field declaration, `{ kind = …, optional = …, … }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawField {
    kind: Spanned<String>,
    #[serde(default)]
    optional: bool,
    values: Option<Vec<String>>,
    table: Option<Spanned<String>>,
    of: Option<Box<Spanned<RawField>>>,
    fields: Option<BTreeMap<Spanned<String>, Spanned<RawField>>>,
}

/// A field declaration that is wrong, at the offset of the value at fault.
type FieldError = (usize, String);

fn compile_field(raw: &Spanned<RawField>, name: &str, names: &[&str]) -> Result<Field, FieldError> {
    let r = raw.get_ref();
    let at = r.kind.span().start;
    let kind_name = r.kind.get_ref().as_str();
    let unused = |what: &str, present: bool| -> Result<(), FieldError> {
        if present { Err((at, format!("field `{name}` of kind `{kind_name}` takes no `{what}`"))) } else { Ok(()) }
    };
    let takes = |values: bool, table: bool, of: bool, fields: bool| -> Result<(), FieldError> {
        unused("values", !values && r.values.is_some())?;
        unused("table", !table && r.table.is_some())?;
        unused("of", !of && r.of.is_some())?;
        unused("fields", !fields && r.fields.is_some())
    };
    let need = |what: &str| (at, format!("field `{name}` of kind `{kind_name}` needs `{what}`"));
    let kind = match kind_name {
        "text" | "integer" | "bool" | "money" | "instant" | "date" => {
            takes(false, false, false, false)?;
            match kind_name {
                "text" => Kind::Text,
                "integer" => Kind::Integer,
                "bool" => Kind::Bool,
                "money" => Kind::Money,
                "instant" => Kind::Instant,
                _ => Kind::Date,
            }
        }
        "enum" => {
            takes(true, false, false, false)?;
            let values = r.values.clone().ok_or_else(|| need("values"))?;
            enum_values(values).map_err(|m| (at, format!("field `{name}`: {m}")))?
        }
        "ref" => {
            takes(false, true, false, false)?;
            let table = r.table.as_ref().ok_or_else(|| need("table"))?;
            if !names.contains(&table.get_ref().as_str()) {
                return Err((
                    table.span().start,
                    format!(
                        "field `{name}` refers to the table `{}`, which is not declared",
                        text::visible(table.get_ref())
                    ),
                ));
            }
            Kind::Ref(table.get_ref().clone())
        }
        "list" | "map" => {
            takes(false, false, true, false)?;
            let of = compile_field(r.of.as_ref().ok_or_else(|| need("of"))?, name, names)?;
            if kind_name == "list" { Kind::List(Box::new(of)) } else { Kind::Map(Box::new(of)) }
        }
        "object" => {
            takes(false, false, false, true)?;
            Kind::Object(compile_fields(r.fields.as_ref().ok_or_else(|| need("fields"))?, names)?)
        }
        other => {
            return Err((
                at,
                format!("field `{name}` has the unknown kind `{}` ({})", text::visible(other), schema::KIND_NAMES),
            ));
        }
    };
    Ok(Field { kind, optional: r.optional })
}

fn enum_values(values: Vec<String>) -> Result<Kind, String> {
    if values.is_empty() {
        return Err("an enum needs a non-empty `values` list".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(repeat) = values.iter().find(|v| !seen.insert(*v)) {
        return Err(format!("value `{}` is listed twice", text::visible(repeat)));
    }
    Ok(Kind::Enum(values))
}

/// The fields of an object; `names` are the tables of the contract, which a `ref` may name.
fn compile_fields(raw: &BTreeMap<Spanned<String>, Spanned<RawField>>, names: &[&str]) -> Result<Fields, FieldError> {
    let mut fields = Fields::new();
    for (name, field) in raw {
        let n = name.get_ref();
        if n.is_empty() || n.contains('.') || n == "*" || n.chars().any(text::is_invisible) {
            return Err((name.span().start, format!("`{}` is not a field name", text::visible(n))));
        }
        fields.insert(n.clone(), compile_field(field, n, names)?);
    }
    Ok(fields)
}

/// The keywords of the JSON Schema subset a `schema` file may use.
const SCHEMA_KEYWORDS: [&str; 12] = [
    "type",
    "properties",
    "required",
    "enum",
    "items",
    "additionalProperties",
    "format",
    "x-warrant-kind",
    "x-warrant-ref",
    "$schema",
    "title",
    "description",
];

/// A JSON Schema (the documented subset) as a field; `at` is the JSON pointer for messages.
fn json_schema_field(node: &Value, at: &str, optional: bool) -> Result<Field, String> {
    let Value::Object(map) = node else { return Err(format!("`{at}` is not a schema object")) };
    if let Some(other) = map.keys().find(|k| !SCHEMA_KEYWORDS.contains(&k.as_str())) {
        return Err(format!(
            "`{at}` uses the keyword `{}`, which warrant does not read (it reads {})",
            text::visible(other),
            SCHEMA_KEYWORDS.join(", ")
        ));
    }
    let str_of = |k: &str| map.get(k).map(|v| v.as_str().ok_or_else(|| format!("`{at}/{k}` must be a string")));
    let ty = str_of("type").ok_or_else(|| format!("`{at}` needs `type`"))??;
    let format = str_of("format").transpose()?;
    let warrant_kind = str_of("x-warrant-kind").transpose()?;
    let reference = str_of("x-warrant-ref").transpose()?;
    let kind = match (ty, format, warrant_kind, reference) {
        ("string", None, None, None) => match map.get("enum") {
            None => Kind::Text,
            Some(Value::Array(values)) => {
                let values: Option<Vec<String>> = values.iter().map(|v| v.as_str().map(str::to_owned)).collect();
                enum_values(values.ok_or_else(|| format!("`{at}/enum` must list strings"))?)
                    .map_err(|m| format!("`{at}`: {m}"))?
            }
            Some(_) => return Err(format!("`{at}/enum` must be a list")),
        },
        ("string", Some("date"), None, None) => Kind::Date,
        ("string", Some("date-time"), None, None) => Kind::Instant,
        ("string", None, None, Some(table)) => Kind::Ref(table.to_owned()),
        ("integer", None, None, None) => Kind::Integer,
        ("boolean", None, None, None) => Kind::Bool,
        ("number" | "integer", None, Some("money"), None) => Kind::Money,
        ("array", None, None, None) => {
            let items = map.get("items").ok_or_else(|| format!("`{at}` is an array and needs `items`"))?;
            Kind::List(Box::new(json_schema_field(items, &format!("{at}/items"), false)?))
        }
        ("object", None, None, None) => json_schema_object(map, at)?,
        _ => {
            return Err(format!(
                "`{at}`: `type` `{}` with these `format`, `x-warrant-kind` and `x-warrant-ref` is not a kind warrant reads",
                text::visible(ty)
            ));
        }
    };
    if !matches!(kind, Kind::Enum(_)) && map.contains_key("enum") {
        return Err(format!("`{at}`: `enum` applies to strings only"));
    }
    Ok(Field { kind, optional })
}

/// An object schema: `properties` with `required` and `additionalProperties: false` (closed
/// fields), or only `additionalProperties` as a schema (a map keyed by ids).
fn json_schema_object(map: &serde_json::Map<String, Value>, at: &str) -> Result<Kind, String> {
    match (map.get("properties"), map.get("additionalProperties")) {
        (Some(Value::Object(properties)), Some(Value::Bool(false))) => {
            let required: Vec<&str> = match map.get("required") {
                None => Vec::new(),
                Some(Value::Array(names)) => names
                    .iter()
                    .map(|n| n.as_str().ok_or_else(|| format!("`{at}/required` must list strings")))
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(format!("`{at}/required` must be a list")),
            };
            if let Some(unknown) = required.iter().find(|r| !properties.contains_key(**r)) {
                return Err(format!(
                    "`{at}/required` names `{}`, which is not in `properties`",
                    text::visible(unknown)
                ));
            }
            let mut fields = Fields::new();
            for (name, node) in properties {
                let optional = !required.contains(&name.as_str());
                fields.insert(name.clone(), json_schema_field(node, &format!("{at}/properties/{name}"), optional)?);
            }
            Ok(Kind::Object(fields))
        }
        (None, Some(of @ Value::Object(_))) if !map.contains_key("required") => {
            Ok(Kind::Map(Box::new(json_schema_field(of, &format!("{at}/additionalProperties"), false)?)))
        }
        _ => Err(format!(
            "`{at}`: an object has `properties` with `additionalProperties: false` (rows are closed), or only `additionalProperties` as a schema (a map)"
        )),
    }
}

/// The row schema of a table: its `fields`, or its `schema` file; `None` for an untyped table.
/// The contract's companion files, with the schema files read kept for the contract's hash.
struct SchemaFiles<'a> {
    /// The contract's name as the loader was given it, beside which the files are.
    origin: &'a str,
    files: &'a dyn ContractFiles,
    read: &'a std::cell::RefCell<Vec<(String, String)>>,
}

fn table_schema(
    raw: &RawTable,
    names: &[&str],
    files: &SchemaFiles<'_>,
    bad: &dyn Fn(usize, String) -> ContractError,
) -> Result<Option<Field>, ContractError> {
    let row = |fields| Some(Field { kind: Kind::Object(fields), optional: false });
    match (&raw.fields, &raw.schema) {
        (Some(_), Some(file)) => Err(bad(file.span().start, "give `fields` or `schema`, not both".into())),
        (Some(fields), None) => {
            let fields = compile_fields(fields.get_ref(), names).map_err(|(offset, message)| bad(offset, message))?;
            Ok(row(fields))
        }
        (None, Some(file)) => {
            let name = file.get_ref();
            let offset = file.span().start;
            let text =
                files.files.read(name).map_err(|message| bad(offset, format!("schema file `{name}`: {message}")))?;
            files.read.borrow_mut().push((name.clone(), text.clone()));
            // A fault inside the file is named at its own line and column, as a policy file's is.
            let origin = super::companion_path(files.origin, name);
            let in_file = |offset: usize, message: String| {
                Locator { origin: &origin, text: &text }.error(
                    offset,
                    ContractErrorKind::BadTable {
                        table: text::visible(raw.name.get_ref()),
                        message: format!("schema file `{name}`: {message}"),
                    },
                )
            };
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                let mut error = in_file(0, format!("not JSON: {e}"));
                (error.line, error.column) =
                    (u32::try_from(e.line()).unwrap_or(u32::MAX), u32::try_from(e.column()).unwrap_or(u32::MAX));
                error
            })?;
            let field = json_schema_field(&value, "#", false)
                .map_err(|message| in_file(schema_fault_offset(&text, &message), message))?;
            if !matches!(field.kind, Kind::Object(_)) {
                return Err(bad(offset, format!("schema file `{name}`: a row is an object with `properties`")));
            }
            Ok(Some(field))
        }
        (None, None) => Ok(None),
    }
}

/// Where in a schema file the fault a message names is: the JSON pointer it quotes
/// (`#/properties/name`) walked key by key through the text, then the keyword it names.
fn schema_fault_offset(text: &str, message: &str) -> usize {
    let pointer = message.split('`').find(|part| part.starts_with('#')).unwrap_or("#");
    let keyword = message.split_once("the keyword `").and_then(|(_, rest)| rest.split('`').next());
    let mut offset = 0;
    for step in pointer.split('/').skip(1).chain(keyword) {
        if let Some(i) = text.get(offset..).and_then(|rest| rest.find(&format!("\"{step}\""))) {
            offset += i;
        }
    }
    offset
}

/// The `money` list of an untyped table: field paths, `*` for any one key of an object.
fn money_paths(
    raw: &RawTable,
    typed: bool,
    has_currency: bool,
    bad: &dyn Fn(usize, String) -> ContractError,
) -> Result<Vec<String>, ContractError> {
    let Some(list) = &raw.money else { return Ok(Vec::new()) };
    if typed {
        return Err(bad(
            list.span().start,
            "a table with `fields` or `schema` declares money as fields of kind `money`, not in a `money` list".into(),
        ));
    }
    if !list.get_ref().is_empty() && !has_currency {
        return Err(bad(list.span().start, "money fields need `records.currency`".into()));
    }
    let mut paths = Vec::new();
    for path in list.get_ref() {
        let p = path.get_ref();
        if p.split('.').any(|part| part.is_empty() || part.chars().any(text::is_invisible)) {
            return Err(bad(path.span().start, format!("money path `{}` has an empty part", text::visible(p))));
        }
        paths.push(p.clone());
    }
    Ok(paths)
}

/// The records section as loaded: its currency, its tables, and each schema file read (name,
/// text), which the contract's hash covers.
pub(super) type Records = (Option<money::Currency>, Vec<Table>, Vec<(String, String)>);

/// The records section: its currency, its tables, and the text of each schema file read.
pub(super) fn compile_records(
    at: &Locator<'_>,
    raw: Option<&RawRecords>,
    actor: Option<&str>,
    files: &dyn ContractFiles,
) -> Result<Records, ContractError> {
    let Some(raw) = raw else { return Ok((None, Vec::new(), Vec::new())) };
    let currency = match &raw.currency {
        None => None,
        Some(code) => {
            // The same reading as a money argument's currency: ISO 4217, with minor units.
            let parsed = money::currency_from_code(code.get_ref()).map_err(|_| {
                at.error(code.span().start, ContractErrorKind::UnknownCurrency(text::visible(code.get_ref())))
            })?;
            Some(parsed)
        }
    };
    let names: Vec<&str> = raw.table.iter().map(|t| t.name.get_ref().as_str()).collect();
    let mut tables: Vec<Table> = Vec::new();
    let read = std::cell::RefCell::new(Vec::new());
    for raw_table in &raw.table {
        let context = TableContext { actor, has_currency: currency.is_some(), names: &names, files, read: &read };
        let table = compile_table(at, raw_table, &tables, &context)?;
        tables.push(table);
    }
    for (raw_table, table) in raw.table.iter().zip(&tables) {
        check_table_links(at, raw_table, table, &tables)?;
    }
    Ok((currency, tables, read.into_inner()))
}

/// What compiling one table needs of the section around it.
struct TableContext<'a> {
    actor: Option<&'a str>,
    has_currency: bool,
    /// Every table's name, in contract order.
    names: &'a [&'a str],
    files: &'a dyn ContractFiles,
    /// The schema files read so far, with their text.
    read: &'a std::cell::RefCell<Vec<(String, String)>>,
}

fn compile_table(
    at: &Locator<'_>,
    raw_table: &RawTable,
    tables: &[Table],
    context: &TableContext<'_>,
) -> Result<Table, ContractError> {
    let TableContext { actor, has_currency, names, files, read } = *context;
    let name = raw_table.name.get_ref();
    let bad = |offset: usize, message: String| {
        at.error(offset, ContractErrorKind::BadTable { table: text::visible(name), message })
    };
    let err = |message: String| bad(raw_table.name.span().start, message);
    if !source::is_identifier(name) {
        return Err(at.error(raw_table.name.span().start, ContractErrorKind::BadName(text::visible(name))));
    }
    if tables.iter().any(|t| t.name == *name) {
        return Err(err("the table is declared twice".into()));
    }
    let source = match (&raw_table.file, &raw_table.from, &raw_table.path, &raw_table.parent_field) {
        (Some(file), None, None, None) => TableSource::File(file.clone()),
        (None, Some(from), Some(path), Some(parent_field)) => {
            if !tables.iter().any(|t| t.name == *from && matches!(t.source, TableSource::File(_))) {
                return Err(err(format!("`from` must name a file table declared before it, not `{from}`")));
            }
            TableSource::Nested { table: from.clone(), path: path.clone(), parent_field: parent_field.clone() }
        }
        _ => return Err(err("give either `file`, or `from`, `path` and `parent_field`".into())),
    };
    let schema = table_schema(raw_table, names, &SchemaFiles { origin: at.origin, files, read }, &bad)?;
    let money = money_paths(raw_table, schema.is_some(), has_currency, &bad)?;
    let entity = raw_table.entity.get_ref().clone();
    if !crate::policy_schema::is_entity_type_name(&entity) {
        return Err(bad(
            raw_table.entity.span().start,
            format!(
                "`entity` `{}` is not a Cedar type name (ASCII letters, digits and `_`, not starting with a digit, not `Action` or a Cedar keyword)",
                text::visible(&entity)
            ),
        ));
    }
    let key = match &raw_table.key {
        None => None,
        Some(key) => {
            let field = key.get_ref();
            if let Some(row) = &schema {
                let declared =
                    schema::resolve(row, "", std::slice::from_ref(field)).map_err(|m| bad(key.span().start, m))?;
                if !matches!(declared.kind, Kind::Text | Kind::Ref(_)) || declared.optional {
                    return Err(bad(
                        key.span().start,
                        format!("`key` `{field}` must be a text field that is not optional"),
                    ));
                }
            }
            Some(field.clone())
        }
    };
    let mut table = Table { name: name.clone(), source, entity, money, visibility: Visibility::Everyone, key, schema };
    table.visibility = table_visibility(raw_table, &table, actor, &bad)?;
    Ok(table)
}

/// What a table's schema says of other tables: each `ref` names a declared table, a nested
/// table's parent holds its rows in a map, and declares the field its parent's key goes into.
fn check_table_links(at: &Locator<'_>, raw: &RawTable, table: &Table, tables: &[Table]) -> Result<(), ContractError> {
    let bad = |message: String| {
        let offset = raw
            .fields
            .as_ref()
            .map_or_else(|| raw.schema.as_ref().map_or(raw.name.span().start, |s| s.span().start), |f| f.span().start);
        at.error(offset, ContractErrorKind::BadTable { table: text::visible(&table.name), message })
    };
    let Some(row) = &table.schema else { return Ok(()) };
    let mut refs = Vec::new();
    schema::refs(row, "", &mut refs);
    for (path, target) in refs {
        if !tables.iter().any(|t| t.name == target) {
            return Err(bad(format!(
                "field `{path}` refers to the table `{}`, which is not declared",
                text::visible(target)
            )));
        }
    }
    if let TableSource::Nested { table: parent, path, parent_field } = &table.source {
        schema::resolve(row, "", std::slice::from_ref(parent_field))
            .map_err(|m| bad(format!("the field `{parent_field}` that receives the parent's key: {m}")))?;
        if let Some(parent_row) = tables.iter().find(|t| t.name == *parent).and_then(|t| t.schema.as_ref()) {
            let field = schema::resolve(parent_row, parent, std::slice::from_ref(path)).map_err(bad)?;
            if !matches!(field.kind, Kind::Map(_)) {
                return Err(bad(format!("`{parent}.{path}` must be a map of rows, not {}", field.kind.name())));
            }
        }
    }
    Ok(())
}

/// Which actors may see a table's rows: the actor table's rows only their own actor, a nested
/// table's as its parent's, a table with `owner` the actor whose key that field holds, any
/// other table everyone. An `owner` that could never hold an actor's key is refused.
fn table_visibility(
    raw: &RawTable,
    table: &Table,
    actor: Option<&str>,
    bad: &dyn Fn(usize, String) -> ContractError,
) -> Result<Visibility, ContractError> {
    let is_actor = actor == Some(raw.name.get_ref().as_str());
    let Some(owner) = &raw.owner else {
        return Ok(match &table.source {
            _ if is_actor => Visibility::Actor,
            TableSource::Nested { table, parent_field, .. } => {
                Visibility::Parent { table: table.clone(), field: parent_field.clone() }
            }
            TableSource::File(_) => Visibility::Everyone,
        });
    };
    let at = owner.span().start;
    let field = owner.get_ref();
    if is_actor {
        return if field == "key" {
            Ok(Visibility::Actor)
        } else {
            Err(bad(
                at,
                "the actor's table is visible only to each actor's own row: its `owner` can only be `key`".into(),
            ))
        };
    }
    if let TableSource::Nested { table, .. } = &table.source {
        return Err(bad(at, format!("a nested table is visible as its parent rows are: declare `owner` on `{table}`")));
    }
    if actor.is_none() {
        return Err(bad(at, "`owner` names the field holding the actor's key, but there is no `[actor]` table".into()));
    }
    if field == "key" {
        return Err(bad(
            at,
            "`key` is the row's own key; `owner` names the field of the row that holds the actor's key".into(),
        ));
    }
    if field.is_empty() || field.chars().any(crate::text::is_invisible) {
        return Err(bad(at, format!("`owner` `{}` is not a field name", text::visible(field))));
    }
    if table.is_money(&[field.as_str()]) {
        return Err(bad(at, format!("`owner` `{field}` is a money field, which can never hold an actor's key")));
    }
    if let Some(row) = &table.schema {
        let declared = schema::resolve(row, "", std::slice::from_ref(field)).map_err(|m| bad(at, m))?;
        if !matches!(declared.kind, Kind::Text | Kind::Ref(_)) {
            return Err(bad(
                at,
                format!("`owner` `{field}` is {}, which can never hold an actor's key", declared.kind.name()),
            ));
        }
    }
    Ok(Visibility::Owner(field.clone()))
}
