//! Structure (docs/design.md §3 step 3): each argument of an act is checked against its declared
//! kind by closed-set membership, record existence and revision, pointers into the user's
//! message, and typed evaluation. Nothing here compares natural-language strings.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::facts::RowRef;
use crate::visibility::{self, RowValue};
use crate::workspace::Workspace;
use warrant_contract::contract::Contract;
use warrant_contract::date::{self, DateExpr, TurnClock};
use warrant_contract::money::{Currency, Money};
use warrant_contract::operation::{Arg, ArgKind, Operation, StringPattern};
use warrant_contract::pointer::{self, TextPointer};
use warrant_contract::reason::ReasonCode;
use warrant_contract::verdict::Finding;

/// An argument's value after its checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// A member of the declared closed set.
    Enum(String),
    /// An existing row.
    Record(RowRef),
    /// Existing rows, in the order given.
    Records(Vec<RowRef>),
    /// A member of a collection inside a row.
    Member(MemberRef),
    /// Members of one collection, each at its own position (repeats counted).
    Members(Vec<MemberRef>),
    /// The exact words the pointer holds.
    Text(String),
    /// Text the model composed, as it sent it; never the user's words.
    String(String),
    /// An ISO date, evaluated with the turn's clock.
    Date(String),
    /// Money, in minor units of its currency.
    Money {
        /// The amount in minor units (cents for USD).
        units: i64,
        /// Its ISO 4217 code, the contract's one currency.
        currency: String,
    },
    /// An integer within bounds.
    Integer(i64),
    /// A boolean.
    Bool(bool),
    /// The elements of an `objects` argument, each its fields as checked (a field left out is
    /// absent from its map).
    Objects(Vec<BTreeMap<String, Checked>>),
    /// An optional argument left out.
    Absent,
}

/// Where a member lives: its container row, the collection field, and its place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRef {
    /// The row holding the collection.
    pub row: RowRef,
    /// The collection field.
    pub path: String,
    /// The member's id.
    pub id: String,
    /// Its position when the collection is a list; `None` for an object keyed by id.
    pub position: Option<usize>,
}

impl Checked {
    /// The value as JSON, for policy context and events.
    pub fn to_json(&self) -> Value {
        match self {
            Checked::Enum(s) | Checked::Text(s) | Checked::String(s) | Checked::Date(s) => Value::String(s.clone()),
            Checked::Record(row) => Value::String(row.key.clone()),
            Checked::Records(rows) => Value::Array(rows.iter().map(|r| Value::String(r.key.clone())).collect()),
            Checked::Member(m) => Value::String(m.id.clone()),
            Checked::Members(ms) => Value::Array(ms.iter().map(|m| Value::String(m.id.clone())).collect()),
            Checked::Money { units, currency } => serde_json::json!({"units": units, "currency": currency}),
            Checked::Integer(n) => Value::from(*n),
            Checked::Bool(b) => Value::Bool(*b),
            Checked::Objects(elements) => objects_json(elements, &Checked::to_json),
            Checked::Absent => Value::Null,
        }
    }

    /// The value as an effect writes it into a row: as [`Checked::to_json`], but money (also an
    /// element's) as the exact number a row holds, in minor units of `currency`.
    pub fn to_row_json(&self, currency: Option<Currency>) -> Value {
        match (self, currency) {
            (Checked::Money { units, .. }, Some(currency)) => {
                warrant_contract::money::record_number(*units, currency).unwrap_or(Value::Null)
            }
            (Checked::Objects(elements), _) => objects_json(elements, &|v: &Checked| v.to_row_json(currency)),
            (other, _) => other.to_json(),
        }
    }
}

/// The elements of an `objects` argument as JSON objects, each field as `field` writes it (a
/// field left out absent).
fn objects_json(elements: &[BTreeMap<String, Checked>], field: &dyn Fn(&Checked) -> Value) -> Value {
    let object = |fields: &BTreeMap<String, Checked>| {
        Value::Object(
            fields.iter().filter(|(_, v)| !matches!(v, Checked::Absent)).map(|(k, v)| (k.clone(), field(v))).collect(),
        )
    };
    Value::Array(elements.iter().map(object).collect())
}

/// What checking needs from the turn.
pub(crate) struct ArgContext<'a> {
    /// The contract, for which rows the actor may see.
    pub(crate) contract: &'a Contract,
    pub(crate) clock: &'a TurnClock,
    pub(crate) actor_row: Option<RowRef>,
    /// The entries text pointers may point into. An entry is numbered only when an argument
    /// points into it.
    pub(crate) words: &'a UserWords,
    /// The contract's currency, the only one a money argument may name.
    pub(crate) currency: Option<Currency>,
}

/// The entries of a turn that a text pointer may point into: the latest `user` entry, which a
/// pointer without `entry` names, and the entries a pointer may name by index.
#[derive(Debug, Clone, Default)]
pub(crate) struct UserWords {
    /// The latest `user` entry, if the turn has one.
    pub(crate) latest: Option<String>,
    /// Entries by their index in the request's `entries`, each with its source kind; for a
    /// confirmed act, the user entries its interaction kept.
    pub(crate) entries: BTreeMap<u32, (String, String)>,
}

/// The only source kind whose entries hold the user's own words, and so the only one a value
/// may be pointed out of.
pub(crate) const USER_KIND: &str = "user";

impl UserWords {
    /// The words of the request's entries: every entry by index, and the latest user one.
    pub(crate) fn of_entries(entries: &[crate::request::Entry]) -> UserWords {
        UserWords {
            latest: entries.iter().rev().find(|e| e.kind == USER_KIND).map(|e| e.text.clone()),
            entries: (0u32..).zip(entries).map(|(i, e)| (i, (e.kind.clone(), e.text.clone()))).collect(),
        }
    }

    /// The message `pointer` points into: entry `pointer.entry`, which must be a `user` entry,
    /// or without one the latest user entry. `field` is the argument's (`args.name`); a refusal
    /// names its `entry`.
    pub(crate) fn message(&self, pointer: &TextPointer, field: &str) -> Result<&str, Finding> {
        let Some(index) = pointer.entry else {
            return self.latest.as_deref().ok_or_else(|| {
                Finding::ask(ReasonCode::PointerInvalid)
                    .field(field.to_owned())
                    .detail("the turn has no user entry to point into".into())
            });
        };
        let refused = |detail: String| {
            Finding::refuse(ReasonCode::PointerEntryInvalid).field(format!("{field}.entry")).detail(detail)
        };
        match self.entries.get(&index) {
            None => Err(refused(format!("there is no entry {index} to point into"))),
            Some((kind, _)) if kind != USER_KIND => Err(refused(format!(
                "entry {index} is a `{}` entry; a value may be pointed out of a `{USER_KIND}` entry only",
                warrant_contract::text::visible(kind)
            ))),
            Some((_, text)) => Ok(text),
        }
    }

    /// The user entries that the pointers among `args` name by index, each with its text: what
    /// an interaction keeps so that the confirmation resolves the same words.
    pub(crate) fn named_by(&self, op: &Operation, args: &Map<String, Value>) -> BTreeMap<u32, String> {
        op.args
            .iter()
            .filter_map(|arg| Some(pointers_in(arg, args.get(&arg.name)?)))
            .flatten()
            .filter_map(|p| p.entry)
            .filter_map(|i| match self.entries.get(&i) {
                Some((kind, text)) if kind == USER_KIND => Some((i, text.clone())),
                _ => None,
            })
            .collect()
    }
}

/// Checks every argument of `op` in `args`. The first failure ends the check.
pub(crate) fn check_args(
    ctx: &ArgContext<'_>,
    work: &mut Workspace<'_>,
    op: &Operation,
    args: &Map<String, Value>,
) -> Result<BTreeMap<String, Checked>, Finding> {
    if let Some(unknown) = args.keys().find(|k| op.arg(k).is_none()) {
        return Err(Finding::refuse(ReasonCode::UnknownArgument)
            .field(format!("args.{}", warrant_contract::text::visible(unknown)))
            .detail(format!(
                "operation `{}` has no argument `{}`",
                op.name,
                warrant_contract::text::visible(unknown)
            )));
    }
    let mut checked: BTreeMap<String, Checked> = BTreeMap::new();
    // Record handles first: members and pairs are checked against the rows they name.
    let (records, rest): (Vec<&Arg>, Vec<&Arg>) =
        op.args.iter().partition(|a| matches!(a.kind, ArgKind::Record { .. }));
    for arg in records.into_iter().chain(rest) {
        let field = format!("args.{}", arg.name);
        let Some(value) = args.get(&arg.name).filter(|v| !v.is_null()) else {
            if arg.optional {
                checked.insert(arg.name.clone(), Checked::Absent);
                continue;
            }
            return Err(Finding::ask(ReasonCode::MissingArgument).field(field));
        };
        let result = check_one(ctx, work, &checked, (&field, arg), value).map_err(|f| f.field_if_absent(field))?;
        checked.insert(arg.name.clone(), result);
    }
    for arg in &op.args {
        if let (Some(equals), Some(value)) = (&arg.equals, checked.get(&arg.name)) {
            require_equal(work, (&format!("args.{}", arg.name), equals), value, checked.get(&equals.record))?;
        }
    }
    check_pairs(work, op, &checked)?;
    Ok(checked)
}

fn wrong_type(expected: &str) -> Finding {
    Finding::refuse(ReasonCode::WrongArgumentType).detail(format!("expected {expected}"))
}

fn string_list(value: &Value) -> Result<Vec<String>, Finding> {
    let Value::Array(items) = value else { return Err(wrong_type("a list of ids")) };
    items.iter().map(|v| v.as_str().map(str::to_owned).ok_or_else(|| wrong_type("a list of ids"))).collect()
}

/// A `record` argument: an id (or an id with the revision the model saw) of a row the actor may see.
fn check_record(
    ctx: &ArgContext<'_>,
    work: &mut Workspace<'_>,
    table: &str,
    value: &Value,
) -> Result<Checked, Finding> {
    let (key, seen_revision) = match value {
        Value::String(key) => (key.clone(), None),
        Value::Object(map) => {
            let key =
                map.get("id").and_then(Value::as_str).ok_or_else(|| wrong_type("an id or {\"id\",\"revision\"}"))?;
            let revision = map.get("revision").and_then(Value::as_i64);
            if map.keys().any(|k| k != "id" && k != "revision") {
                return Err(wrong_type("an id or {\"id\",\"revision\"}"));
            }
            (key.to_owned(), revision)
        }
        _ => return Err(wrong_type("an id")),
    };
    let row = RowRef { table: table.to_owned(), key };
    let record = work.row(&row)?.ok_or_else(|| unknown_record(&row))?;
    require_visible(ctx, work, &row, &record.value)?;
    if let Some(seen) = seen_revision
        && seen != record.revision
    {
        return Err(Finding::refuse(ReasonCode::StaleRevision)
            .detail(format!("the model saw revision {seen}; the record is at {}", record.revision)));
    }
    Ok(Checked::Record(row))
}

/// A `records` argument: ids of rows the actor may see, each meeting the declared requirements.
fn check_records(
    ctx: &ArgContext<'_>,
    work: &mut Workspace<'_>,
    table: &str,
    require: &BTreeMap<String, Value>,
    value: &Value,
) -> Result<Checked, Finding> {
    let keys = string_list(value)?;
    let mut rows = Vec::with_capacity(keys.len());
    for key in keys {
        let row = RowRef { table: table.to_owned(), key };
        let record = work.row(&row)?.ok_or_else(|| unknown_record(&row))?;
        require_visible(ctx, work, &row, &record.value)?;
        for (field, expected) in require {
            if record.value.get(field) != Some(expected) {
                return Err(Finding::refuse(ReasonCode::RequirementUnmet).detail(format!(
                    "`{}` of `{}` is not {expected}",
                    field,
                    warrant_contract::text::visible(&row.key)
                )));
            }
        }
        rows.push(row);
    }
    Ok(Checked::Records(rows))
}

/// A `text` argument: a pointer into a user entry, resolved to the exact words it holds.
fn check_text(ctx: &ArgContext<'_>, field: &str, allow_empty: bool, value: &Value) -> Result<Checked, Finding> {
    if allow_empty && value.as_str() == Some("") {
        return Ok(Checked::Text(String::new()));
    }
    let pointer: TextPointer = serde_json::from_value(value.clone()).map_err(|e| {
        Finding::ask(ReasonCode::PointerInvalid)
            .detail(format!("a text argument is {{\"entry\":i,\"ptr\":[from,to],\"copy\":…}}: {e}"))
    })?;
    pointed_words(ctx, field, &pointer).map(Checked::Text)
}

/// The exact words `pointer` holds in the user entry it points into.
fn pointed_words(ctx: &ArgContext<'_>, field: &str, pointer: &TextPointer) -> Result<String, Finding> {
    let text = ctx.words.message(pointer, field)?;
    let numbered = pointer::numbered(text);
    let resolved = pointer::resolve(&numbered, pointer)
        .map_err(|e| Finding::ask(ReasonCode::PointerInvalid).detail(format!("{}: {e}", e.code())))?;
    Ok(resolved.value.to_owned())
}

/// The shape of an enum value the user must have said.
const EVIDENCE_SHAPE: &str = r#"{"value":id,"entry":i,"ptr":[from,to],"copy":…}"#;

/// An `enum` argument: an id of the closed set. With `evidence`, the id comes with a pointer to
/// the words the user said it with, which must resolve in a user entry.
fn check_enum(
    ctx: &ArgContext<'_>,
    field: &str,
    (values, evidence): (&[String], bool),
    value: &Value,
) -> Result<Checked, Finding> {
    let (id, pointer) = match value {
        Value::Object(map) if evidence => {
            let id = map.get("value").and_then(Value::as_str).ok_or_else(|| wrong_type(EVIDENCE_SHAPE))?;
            (id, evidence_pointer(map).map(Some)?)
        }
        _ => (value.as_str().ok_or_else(|| wrong_type("an id"))?, None),
    };
    if !values.iter().any(|v| v == id) {
        return Err(Finding::refuse(ReasonCode::NotInClosedSet)
            .detail(format!("`{}` is not one of the declared ids", warrant_contract::text::visible(id))));
    }
    if evidence {
        let pointer = pointer.ok_or_else(|| {
            Finding::ask(ReasonCode::PointerInvalid)
                .detail(format!("the user must have said this value: it is {EVIDENCE_SHAPE}"))
        })?;
        pointed_words(ctx, field, &pointer)?;
    }
    Ok(Checked::Enum(id.to_owned()))
}

/// The pointer of an enum value with evidence: the object without its `value`.
fn evidence_pointer(map: &Map<String, Value>) -> Result<TextPointer, Finding> {
    let mut rest = map.clone();
    rest.remove("value");
    serde_json::from_value(Value::Object(rest))
        .map_err(|e| Finding::ask(ReasonCode::PointerInvalid).detail(format!("{EVIDENCE_SHAPE}: {e}")))
}

/// The pointer an argument's value is or carries: a `text` pointer, or an evidenced enum's;
/// `None` for any other kind or a value that holds none.
pub(crate) fn pointer_of(kind: &ArgKind, value: &Value) -> Option<TextPointer> {
    match (kind, value) {
        (ArgKind::Text { .. }, _) => serde_json::from_value(value.clone()).ok(),
        (ArgKind::Enum { evidence: true, .. }, Value::Object(map)) => evidence_pointer(map).ok(),
        _ => None,
    }
}

/// Every pointer an argument's value is or carries: its own, or those of an `objects`
/// argument's fields, element by element.
pub(crate) fn pointers_in(arg: &Arg, value: &Value) -> Vec<TextPointer> {
    match (&arg.kind, value) {
        (ArgKind::Objects { fields, .. }, Value::Array(items)) => items
            .iter()
            .flat_map(|item| fields.iter().filter_map(|f| pointer_of(&f.kind, item.get(&f.name)?)))
            .collect(),
        (kind, value) => pointer_of(kind, value).into_iter().collect(),
    }
}

/// A `string` argument: a JSON string, checked by its schema alone (length, pattern, values).
/// A pointer is no string here: text the model composes is never the user's words.
fn check_string(
    max_length: Option<u32>,
    pattern: Option<&StringPattern>,
    values: &Option<Vec<String>>,
    value: &Value,
) -> Result<Checked, Finding> {
    let text = value.as_str().ok_or_else(|| wrong_type("a string"))?;
    let length = text.chars().count();
    if let Some(max) = max_length
        && length > usize::try_from(max).unwrap_or(usize::MAX)
    {
        return Err(Finding::refuse(ReasonCode::StringTooLong).detail(format!("{length} characters, at most {max}")));
    }
    if let Some(pattern) = pattern
        && !pattern.matches(text)
    {
        return Err(Finding::refuse(ReasonCode::PatternMismatch)
            .detail(format!("the value does not match `{}`", warrant_contract::text::visible(&pattern.source))));
    }
    if let Some(values) = values
        && !values.iter().any(|v| v == text)
    {
        return Err(Finding::refuse(ReasonCode::NotInClosedSet)
            .detail(format!("`{}` is not one of the declared values", warrant_contract::text::visible(text))));
    }
    Ok(Checked::String(text.to_owned()))
}

/// A `money` argument: an exact amount in the contract's one currency, in minor units.
fn check_money(ctx: &ArgContext<'_>, value: &Value) -> Result<Checked, Finding> {
    let money: Money = Money::from_json(value)
        .map_err(|e| Finding::ask(ReasonCode::MoneyInvalid).detail(format!("{}: {e}", e.code())))?;
    // Policies and effects compare and add an argument's minor units with the records',
    // so an amount in any other currency would be read as a different amount.
    if ctx.currency != Some(money.currency()) {
        let accepted = ctx.currency.map_or_else(|| "none".to_owned(), |c| format!("`{}`", c.code()));
        return Err(Finding::refuse(ReasonCode::CurrencyNotAccepted)
            .detail(format!("`{}` is not the contract's currency ({accepted})", money.currency().code())));
    }
    let units = money
        .to_minor_units()
        .map_err(|e| Finding::ask(ReasonCode::MoneyInvalid).detail(format!("{}: {e}", e.code())))?;
    Ok(Checked::Money { units, currency: money.currency().code().to_owned() })
}

/// An `objects` argument: a list of objects, its length within bounds, each closed, each field
/// checked as an argument of its kind is, a refusal naming the element and field
/// (`args.flights[1].date`).
fn check_objects(
    ctx: &ArgContext<'_>,
    work: &mut Workspace<'_>,
    earlier: &BTreeMap<String, Checked>,
    (field, fields, bounds): (&str, &[Arg], (u32, Option<u32>)),
    value: &Value,
) -> Result<Checked, Finding> {
    let Value::Array(items) = value else { return Err(wrong_type("a list of objects")) };
    let count = u32::try_from(items.len()).unwrap_or(u32::MAX);
    let (least, most) = bounds;
    if count < least {
        return Err(Finding::refuse(ReasonCode::TooFewItems).detail(format!("{count} elements, at least {least}")));
    }
    if let Some(most) = most
        && count > most
    {
        return Err(Finding::refuse(ReasonCode::TooManyItems).detail(format!("{count} elements, at most {most}")));
    }
    let mut elements = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let Value::Object(given) = item else {
            return Err(wrong_type("an object").field(at));
        };
        if let Some(unknown) = given.keys().find(|k| !fields.iter().any(|f| f.name == **k)) {
            let known: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            return Err(Finding::refuse(ReasonCode::UnknownArgument)
                .field(format!("{at}.{}", warrant_contract::text::visible(unknown)))
                .detail(format!(
                    "an element has no field `{}` (its fields: {})",
                    warrant_contract::text::visible(unknown),
                    known.join(", ")
                )));
        }
        let mut element = BTreeMap::new();
        for arg in fields {
            let inner = format!("{at}.{}", arg.name);
            let Some(value) = given.get(&arg.name).filter(|v| !v.is_null()) else {
                if arg.optional {
                    element.insert(arg.name.clone(), Checked::Absent);
                    continue;
                }
                return Err(Finding::ask(ReasonCode::MissingArgument).field(inner));
            };
            let checked =
                check_one(ctx, work, earlier, (&inner, arg), value).map_err(|f| f.field_if_absent(inner.clone()))?;
            element.insert(arg.name.clone(), checked);
        }
        for arg in fields {
            if let (Some(equals), Some(value)) = (&arg.equals, element.get(&arg.name)) {
                let inner = format!("{at}.{}", arg.name);
                require_equal(work, (&inner, equals), value, element.get(&equals.record))?;
            }
        }
        elements.push(element);
    }
    Ok(Checked::Objects(elements))
}

/// `equals`: the value given (`field`) is the one the row of its `record` holds. A value left
/// out has nothing to disagree with.
fn require_equal(
    work: &mut Workspace<'_>,
    (field, equals): (&str, &warrant_contract::operation::Equals),
    value: &Checked,
    record: Option<&Checked>,
) -> Result<(), Finding> {
    if matches!(value, Checked::Absent) {
        return Ok(());
    }
    // The record failed or was left out: its own finding, or its absence, decides.
    let Some(Checked::Record(row)) = record else { return Ok(()) };
    let stored = work.row(row)?.ok_or_else(|| unknown_record(row))?;
    let held = stored.value.get(&equals.field);
    let agrees = match (value, held) {
        (Checked::String(given) | Checked::Enum(given) | Checked::Date(given), Some(Value::String(held))) => {
            given == held
        }
        // A typed table holds its integers as JSON integers.
        (Checked::Integer(given), Some(Value::Number(held))) => held.as_i64() == Some(*given),
        (Checked::Bool(given), Some(Value::Bool(held))) => given == held,
        _ => false,
    };
    if agrees {
        return Ok(());
    }
    // A string is shown as it is, any other value as JSON.
    let shown = |v: &Value| warrant_contract::text::visible(&v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    let held = held.map_or_else(|| "nothing".to_owned(), |v| format!("`{}`", shown(v)));
    Err(Finding::refuse(ReasonCode::RecordFieldMismatch).field(field.to_owned()).detail(format!(
        "`{}` is not what `{}` of `{}` `{}` holds ({held})",
        shown(&value.to_json()),
        equals.field,
        row.table,
        warrant_contract::text::visible(&row.key)
    )))
}

/// A `date` argument: a DateExpr evaluated with the turn's clock, or with `plain` a bare
/// `YYYY-MM-DD` string naming a day that exists.
fn check_date(ctx: &ArgContext<'_>, plain: bool, value: &Value) -> Result<Checked, Finding> {
    if let (true, Value::String(text)) = (plain, value) {
        let shaped = text.len() == 10 && text.as_bytes().get(4) == Some(&b'-') && text.as_bytes().get(7) == Some(&b'-');
        return match text.parse::<jiff::civil::Date>() {
            Ok(day) if shaped => Ok(Checked::Date(day.to_string())),
            _ => Err(Finding::ask(ReasonCode::DateInvalid)
                .detail(format!("`{}` is not a day written YYYY-MM-DD", warrant_contract::text::visible(text)))),
        };
    }
    let expr: DateExpr = serde_json::from_value(value.clone())
        .map_err(|e| Finding::ask(ReasonCode::DateInvalid).detail(format!("not a DateExpr: {e}")))?;
    let day = date::evaluate(&expr, ctx.clock)
        .map_err(|e| Finding::ask(ReasonCode::DateInvalid).detail(format!("{}: {e}", e.code())))?;
    Ok(Checked::Date(day.to_string()))
}

/// A `money` argument with `plain`: a bare JSON number is read exactly in the contract's
/// currency, as a row's amounts are; any other value as a money argument is.
fn check_plain_money(ctx: &ArgContext<'_>, value: &Value) -> Result<Checked, Finding> {
    let Value::Number(_) = value else { return check_money(ctx, value) };
    let currency = ctx.currency.ok_or_else(|| {
        Finding::refuse(ReasonCode::CurrencyNotAccepted).detail("the contract declares no currency".into())
    })?;
    let units = warrant_contract::money::record_units(value, currency)
        .map_err(|e| Finding::ask(ReasonCode::MoneyInvalid).detail(format!("{}: {e}", e.code())))?;
    Ok(Checked::Money { units, currency: currency.code().to_owned() })
}

fn check_one(
    ctx: &ArgContext<'_>,
    work: &mut Workspace<'_>,
    earlier: &BTreeMap<String, Checked>,
    (field, arg): (&str, &Arg),
    value: &Value,
) -> Result<Checked, Finding> {
    match &arg.kind {
        ArgKind::Enum { values, evidence } => check_enum(ctx, field, (values, *evidence), value),
        ArgKind::Record { table } => check_record(ctx, work, table, value),
        ArgKind::Records { table, require, .. } => check_records(ctx, work, table, require, value),
        ArgKind::Member { of, path, key } => {
            let id = value.as_str().ok_or_else(|| wrong_type("an id"))?;
            let container = container_row(ctx, earlier, of)?;
            let members = locate_members(work, &container, path, key.as_deref(), &[id.to_owned()])?;
            members.into_iter().next().map(Checked::Member).ok_or_else(|| not_a_member(id))
        }
        ArgKind::Members { of, path, key } => {
            let ids = string_list(value)?;
            if ids.is_empty() {
                return Err(Finding::refuse(ReasonCode::WrongArgumentType).detail("the list is empty".into()));
            }
            let container = container_row(ctx, earlier, of)?;
            locate_members(work, &container, path, key.as_deref(), &ids).map(Checked::Members)
        }
        ArgKind::Text { allow_empty } => check_text(ctx, field, *allow_empty, value),
        ArgKind::String { max_length, pattern, values } => check_string(*max_length, pattern.as_ref(), values, value),
        ArgKind::Date => check_date(ctx, arg.plain, value),
        ArgKind::Money if arg.plain => check_plain_money(ctx, value),
        ArgKind::Money => check_money(ctx, value),
        ArgKind::Integer { min, max } => {
            let n = value.as_i64().ok_or_else(|| wrong_type("an integer"))?;
            if n < *min || n > *max {
                return Err(Finding::refuse(ReasonCode::OutOfBounds).detail(format!("{n} is outside {min}..={max}")));
            }
            Ok(Checked::Integer(n))
        }
        ArgKind::Bool => value.as_bool().map(Checked::Bool).ok_or_else(|| wrong_type("a boolean")),
        ArgKind::Objects { fields, min_items, max_items } => {
            check_objects(ctx, work, earlier, (field, fields, (*min_items, *max_items)), value)
        }
    }
}

/// A row the actor may not see is refused exactly as a row that does not exist: the same code,
/// field and detail, before anything else about it (its revision, its fields) is looked at.
fn require_visible(ctx: &ArgContext<'_>, work: &mut Workspace<'_>, row: &RowRef, value: &Value) -> Result<(), Finding> {
    let actor = ctx.actor_row.as_ref().map_or("", |a| a.key.as_str());
    let mut parent = |table: &str, key: &str| {
        work.row(&RowRef { table: table.to_owned(), key: key.to_owned() }).map(|r| r.map(|r| (*r.value).clone()))
    };
    if visibility::visible(ctx.contract, actor, RowValue { table: &row.table, key: &row.key, value }, &mut parent)? {
        Ok(())
    } else {
        Err(unknown_record(row))
    }
}

fn unknown_record(row: &RowRef) -> Finding {
    Finding::refuse(ReasonCode::UnknownRecord).detail(format!(
        "table `{}` has no row `{}`",
        row.table,
        warrant_contract::text::visible(&row.key)
    ))
}

fn not_a_member(id: &str) -> Finding {
    Finding::refuse(ReasonCode::NotAMember)
        .detail(format!("`{}` is not in the collection", warrant_contract::text::visible(id)))
}

fn container_row(ctx: &ArgContext<'_>, earlier: &BTreeMap<String, Checked>, of: &str) -> Result<RowRef, Finding> {
    if of == "actor" {
        return ctx.actor_row.clone().ok_or_else(|| Finding::refuse(ReasonCode::UnknownActor));
    }
    match earlier.get(of) {
        Some(Checked::Record(row)) => Ok(row.clone()),
        // The container argument failed or is absent: its own finding has already ended the
        // check, so this is only reached for an absent optional container.
        _ => Err(Finding::refuse(ReasonCode::MissingArgument).field(format!("args.{of}"))),
    }
}

/// Finds each id in the container's collection. In a list, repeats are counted: the n-th
/// mention of an id takes the n-th element holding it, and a mention beyond that is refused.
fn locate_members(
    work: &mut Workspace<'_>,
    row: &RowRef,
    path: &str,
    key: Option<&str>,
    ids: &[String],
) -> Result<Vec<MemberRef>, Finding> {
    let record = work.row(row)?.ok_or_else(|| unknown_record(row))?;
    let collection = record.value.get(path);
    let mut used: Vec<usize> = Vec::new();
    let mut found = Vec::with_capacity(ids.len());
    for id in ids {
        let position = match (collection, key) {
            (Some(Value::Object(map)), None) => {
                if !map.contains_key(id) {
                    return Err(not_a_member(id));
                }
                None
            }
            (Some(Value::Array(items)), Some(key)) => {
                let position = items
                    .iter()
                    .enumerate()
                    .find(|(i, item)| item.get(key).and_then(Value::as_str) == Some(id.as_str()) && !used.contains(i))
                    .map(|(i, _)| i)
                    .ok_or_else(|| not_a_member(id))?;
                used.push(position);
                Some(position)
            }
            _ => {
                return Err(Finding::refuse(ReasonCode::NotAMember).detail(format!(
                    "`{path}` of `{}` is not a collection of the declared shape",
                    warrant_contract::text::visible(&row.key)
                )));
            }
        };
        found.push(MemberRef { row: row.clone(), path: path.to_owned(), id: id.clone(), position });
    }
    Ok(found)
}

/// The element a member names.
pub(crate) fn member_value(work: &mut Workspace<'_>, member: &MemberRef) -> Result<Value, Finding> {
    let record = work.row(&member.row)?.ok_or_else(|| unknown_record(&member.row))?;
    let collection = record.value.get(&member.path);
    let value = match (collection, member.position) {
        (Some(Value::Object(map)), None) => map.get(&member.id),
        (Some(Value::Array(items)), Some(i)) => items.get(i),
        _ => None,
    };
    value.cloned().ok_or_else(|| not_a_member(&member.id))
}

/// Checks `pairs_with` and `same`: equal lengths, and each row's `same` field equal to its
/// pair's.
fn check_pairs(work: &mut Workspace<'_>, op: &Operation, checked: &BTreeMap<String, Checked>) -> Result<(), Finding> {
    for arg in &op.args {
        let ArgKind::Records { pairs_with: Some(pair), same, .. } = &arg.kind else { continue };
        let Some(Checked::Records(rows)) = checked.get(&arg.name) else { continue };
        let pair_values: Vec<Value> = match checked.get(pair) {
            Some(Checked::Members(members)) => {
                members.iter().map(|m| member_value(work, m)).collect::<Result<_, _>>()?
            }
            Some(Checked::Records(pair_rows)) => pair_rows
                .iter()
                .map(|r| work.row(r)?.map(|rec| (*rec.value).clone()).ok_or_else(|| unknown_record(r)))
                .collect::<Result<_, _>>()?,
            _ => continue,
        };
        if pair_values.len() != rows.len() {
            return Err(Finding::refuse(ReasonCode::ListLengthMismatch)
                .field(format!("args.{}", arg.name))
                .detail(format!("{} ids pair with {} ids of `{pair}`", rows.len(), pair_values.len())));
        }
        if let Some(same) = same {
            for (row, pair_value) in rows.iter().zip(&pair_values) {
                let record = work.row(row)?.ok_or_else(|| unknown_record(row))?;
                let mine = record.value.get(same);
                if mine.is_none() || mine != pair_value.get(same) {
                    return Err(Finding::refuse(ReasonCode::PairMismatch).field(format!("args.{}", arg.name)).detail(
                        format!(
                            "`{}` differs in `{same}` from the id it replaces",
                            warrant_contract::text::visible(&row.key)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_text_and_an_evidenced_enum_carry_a_pointer() {
        let text = ArgKind::Text { allow_empty: false };
        let said = ArgKind::Enum { values: vec!["a".into()], evidence: true };
        let plain = ArgKind::Enum { values: vec!["a".into()], evidence: false };
        let pointer = TextPointer { entry: Some(1), from: 2, to: 3, copy: None };
        let bare = serde_json::json!({"entry": 1, "ptr": [2, 3]});
        let carried = serde_json::json!({"value": "a", "entry": 1, "ptr": [2, 3]});
        assert_eq!(pointer_of(&text, &bare), Some(pointer.clone()));
        assert_eq!(pointer_of(&said, &carried), Some(pointer));
        assert_eq!(pointer_of(&said, &serde_json::json!("a")), None);
        assert_eq!(pointer_of(&plain, &carried), None);
        assert_eq!(pointer_of(&said, &serde_json::json!({"value": "a", "ptr": [2, 3], "why": 1})), None);
        assert!(text.takes_pointer() && said.takes_pointer() && !plain.takes_pointer());
    }
}
