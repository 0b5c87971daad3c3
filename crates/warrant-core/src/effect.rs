//! Derived quantities and effect steps: the arithmetic code does for policy (sums of money in
//! minor units, counts, CEL expressions with the values they read bound), and the record
//! changes a committed effect makes, applied to the turn's working copies so that later acts of
//! the same turn, and later turns, see them.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::args::{Checked, MemberRef, member_value};
use crate::facts::RowRef;
use crate::visibility::RowValue;
use crate::workspace::Workspace;
use warrant_contract::contract::Contract;
use warrant_contract::date::TurnClock;
use warrant_contract::expr::{self, MAX_INPUT_VALUES, RowLookup};
use warrant_contract::expressions::{CelValue, ValueType};
use warrant_contract::money::{self, Currency};
use warrant_contract::operation::{
    Appended, Change, Each, EntryValue, Expr, ITEM, KeyRef, MintedKey, NewRow, Operation, Path, Step,
};
use warrant_contract::reason::ReasonCode;
use warrant_contract::records::cedar_attrs;
use warrant_contract::verdict::Finding;

/// The most rounds of fetching rows one expression's evaluation may take: how deep `row(…)`
/// may be nested (a key read from a row another `row` reached).
pub const MAX_FOLLOW_ROUNDS: usize = 3;
/// The most rows `row(…)` may reach in one expression's evaluation.
pub const MAX_FOLLOWED_ROWS: usize = 64;

/// A derived quantity.
#[derive(Debug, Clone, PartialEq)]
pub enum Derived {
    /// An integer: minor units of money, or a count.
    Int(i64),
    /// A value taken as is (`first(…)`).
    Json(Value),
}

impl Derived {
    /// As JSON for the policy context.
    pub fn to_json(&self) -> Value {
        match self {
            Derived::Int(n) => Value::from(*n),
            Derived::Json(v) => v.clone(),
        }
    }
}

/// What `walk` calls for each value a path reaches: its table, the keys from its row down to
/// it, and the value.
type Visit<'v> = dyn FnMut(Option<&str>, &[&str], &Value) + 'v;

/// Steps from `current` through `fields` by reference, stepping through lists, and calls `visit`
/// with every value reached (each element of a list reached), named by `concrete`.
fn descend(mut current: Vec<&Value>, fields: &[String], table: Option<&str>, concrete: &[&str], visit: &mut Visit<'_>) {
    for field in fields {
        let mut next = Vec::new();
        for value in current {
            match value {
                Value::Array(items) => next.extend(items.iter().filter_map(|item| item.get(field))),
                other => next.extend(other.get(field)),
            }
        }
        current = next;
    }
    for value in current {
        match value {
            Value::Array(items) => items.iter().for_each(|item| visit(table, concrete, item)),
            value => visit(table, concrete, value),
        }
    }
}

/// Evaluation state for one act: its checked arguments and the quantities derived so far.
pub(crate) struct Eval<'a> {
    pub(crate) contract: &'a Contract,
    pub(crate) actor: Option<RowRef>,
    pub(crate) args: &'a BTreeMap<String, Checked>,
    pub(crate) derived: BTreeMap<String, Derived>,
    /// The turn's clock: CEL's `now`, `today` and `time_zone`.
    pub(crate) clock: &'a TurnClock,
    /// What the act's minted keys are derived from: the turn and the act's place in it.
    pub(crate) mint_seed: String,
    /// What the effect's steps have bound so far.
    steps: RefCell<StepState>,
}

/// The element a step with `each` runs for.
#[derive(Debug, Clone)]
enum Item {
    /// An element of an `objects` argument: its fields as checked.
    Fields(BTreeMap<String, Checked>),
    /// A row of a records argument, or a member of a members argument.
    Checked(Checked),
    /// An element of a list in a row, as CEL reads it (money in minor units).
    Json(Value),
}

/// The names an effect's steps bind as they run: the element of the step running (with
/// `each`), the keys the operation mints, and the rows earlier steps created (`as`).
#[derive(Debug, Default)]
struct StepState {
    item: Option<Item>,
    minted: BTreeMap<String, String>,
    created: BTreeMap<String, RowRef>,
}

/// Where a path starts.
enum Place {
    /// A row.
    Row(RowRef),
    /// A member of a collection inside a row.
    Member(MemberRef),
    /// A value that is no place in a row (a scalar field of an element, a list element read):
    /// it can be read, never written.
    Value(Value),
}

/// A place a step writes: the row, the pointer inside it (list positions included), and the
/// keys from the row down to it (list positions left out), which say where money is.
struct Target {
    row: RowRef,
    pointer: Vec<String>,
    concrete: Vec<String>,
}

/// A value a path reached, with whether its last field is money in its table.
struct Leaf {
    value: Value,
    money: bool,
}

/// A minted key: `prefix`, then `length` characters of `alphabet` drawn from hashes of the
/// seed, the operation and the key's name.
fn mint(seed: &str, op: &str, key: &MintedKey) -> String {
    let mut minted = key.prefix.clone();
    let size = key.alphabet.len().max(1);
    let mut round = 0u32;
    while minted.chars().count() < key.prefix.chars().count() + key.length {
        let hex = warrant_contract::id::derive_id("mint", &[seed, op, &key.name, &round.to_string()]);
        let digits = hex.rsplit('_').next().unwrap_or_default();
        for pair in digits.as_bytes().chunks(2) {
            let byte = std::str::from_utf8(pair).ok().and_then(|p| u8::from_str_radix(p, 16).ok()).unwrap_or(0);
            if minted.chars().count() < key.prefix.chars().count() + key.length {
                minted.extend(key.alphabet.get(usize::from(byte) % size));
            }
        }
        round += 1;
    }
    minted
}

fn inapplicable(message: String) -> Finding {
    Finding::refuse(ReasonCode::EffectInapplicable).detail(message)
}

/// A CEL expression that failed, named by (the start of) its text.
fn expression_failed(source: &str, code: ReasonCode, message: &str) -> Finding {
    let shown: String = source.chars().take(80).collect();
    let more = if shown.len() < source.len() { "…" } else { "" };
    Finding::refuse(code).detail(format!("`{shown}{more}`: {message}"))
}

/// A CEL result as the quantity its declared type says it is.
fn typed(value: &cel::Value, ty: ValueType, source: &str) -> Result<Derived, Finding> {
    let derived = match (ty, value) {
        (ValueType::Integer | ValueType::Money, cel::Value::Int(n)) => Some(Derived::Int(*n)),
        (ValueType::Integer | ValueType::Money, cel::Value::UInt(n)) => i64::try_from(*n).ok().map(Derived::Int),
        (ValueType::Bool, cel::Value::Bool(b)) => Some(Derived::Json(Value::Bool(*b))),
        (ValueType::Text, cel::Value::String(text)) => Some(Derived::Json(Value::String(text.as_ref().clone()))),
        (ValueType::Instant, cel::Value::Timestamp(_)) => expr::to_json(value).ok().map(Derived::Json),
        (ValueType::Instant, cel::Value::String(text)) => warrant_contract::date::parse_instant(text)
            .ok()
            .map(|_| Derived::Json(Value::String(text.as_ref().clone()))),
        _ => None,
    };
    derived.ok_or_else(|| {
        let message = format!("declared `{}`, but the value is a CEL {}", ty.name(), expr::type_name(value));
        expression_failed(source, ReasonCode::ExpressionWrongType, &message)
    })
}

/// A stored amount's minor units, read by the one exact-money reader.
fn units(value: &Value, currency: Currency) -> Result<i64, Finding> {
    money::record_units(value, currency).map_err(|e| inapplicable(format!("`{value}` is not an exact amount: {e}")))
}

/// Minor units written back as the exact number a record holds.
fn number(units: i64, currency: Currency) -> Result<Value, Finding> {
    money::record_number(units, currency).map_err(|e| inapplicable(format!("{units} minor units: {e}")))
}

impl<'a> Eval<'a> {
    /// The evaluation of an act of `contract` by `actor` with its checked arguments; its keys
    /// are minted from `mint_seed`.
    pub(crate) fn new(
        contract: &'a Contract,
        actor: Option<RowRef>,
        args: &'a BTreeMap<String, Checked>,
        clock: &'a TurnClock,
        mint_seed: String,
    ) -> Eval<'a> {
        Eval { contract, actor, args, derived: BTreeMap::new(), clock, mint_seed, steps: RefCell::default() }
    }

    /// The contract's currency, which every money step computes in.
    fn currency(&self) -> Result<Currency, Finding> {
        self.contract.currency().ok_or_else(|| inapplicable("money needs the contract's `records.currency`".into()))
    }

    /// Whether the value at `concrete` (keys from the row, list positions left out) of a row
    /// of `table` is money.
    fn is_money(&self, table: &str, concrete: &[&str]) -> bool {
        self.contract.table(table).is_some_and(|t| t.is_money(concrete))
    }

    /// The text a key names: an argument's value (a record's key, a member's id), the
    /// element's (or one of its fields'), a minted key.
    fn key_text(&self, key: &KeyRef) -> Result<String, Finding> {
        let of_checked = |value: &Checked| match value {
            Checked::Enum(s) | Checked::Text(s) | Checked::String(s) | Checked::Date(s) => Some(s.clone()),
            Checked::Record(row) => Some(row.key.clone()),
            Checked::Member(m) => Some(m.id.clone()),
            Checked::Integer(n) => Some(n.to_string()),
            _ => None,
        };
        let steps = self.steps.borrow();
        let text = match (key, &steps.item) {
            (KeyRef::Arg(name), _) => self.args.get(name).and_then(of_checked),
            (KeyRef::Minted(name), _) => steps.minted.get(name).cloned(),
            (KeyRef::Item(None), Some(Item::Checked(value))) => of_checked(value),
            (KeyRef::Item(None), Some(Item::Json(Value::String(s)))) => Some(s.clone()),
            (KeyRef::Item(Some(field)), Some(Item::Fields(fields))) => fields.get(field).and_then(of_checked),
            (KeyRef::Item(Some(field)), Some(Item::Json(value))) => {
                value.get(field).and_then(Value::as_str).map(str::to_owned)
            }
            _ => None,
        };
        text.ok_or_else(|| {
            let named = match key {
                KeyRef::Arg(name) | KeyRef::Minted(name) => name.clone(),
                KeyRef::Item(None) => ITEM.to_owned(),
                KeyRef::Item(Some(field)) => format!("{ITEM}.{field}"),
            };
            inapplicable(format!("`[{named}]` names no key here"))
        })
    }

    /// `path` with each keyed segment replaced by the key it names.
    fn concrete<'p>(&self, path: &'p Path) -> Result<Cow<'p, Path>, Finding> {
        if path.keys.is_empty() {
            return Ok(Cow::Borrowed(path));
        }
        let mut out = path.clone();
        for (i, key) in &path.keys {
            if let Some(field) = out.fields.get_mut(*i) {
                *field = self.key_text(key)?;
            }
        }
        out.keys.clear();
        Ok(Cow::Owned(out))
    }

    /// Where a path starts, and how many of its fields that took (`item.FIELD` of an
    /// `objects` element takes one).
    fn places(&self, work: &mut Workspace<'_>, path: &Path) -> Result<(Vec<Place>, usize), Finding> {
        let created = self.steps.borrow().created.get(&path.root).cloned();
        if let Some(row) = created {
            return Ok((vec![Place::Row(row)], 0));
        }
        if path.root == "actor" {
            let row = self.actor.clone().ok_or_else(|| Finding::refuse(ReasonCode::UnknownActor))?;
            return Ok((vec![Place::Row(row)], 0));
        }
        if path.root == ITEM {
            let item = self.steps.borrow().item.clone();
            return match item {
                Some(Item::Fields(fields)) => {
                    let first = path.fields.first().and_then(|f| fields.get(f));
                    Ok((
                        match first {
                            Some(Checked::Record(row)) => vec![Place::Row(row.clone())],
                            Some(Checked::Member(m)) => vec![Place::Member(m.clone())],
                            Some(Checked::Absent) | None => Vec::new(),
                            Some(other) => vec![Place::Value(self.checked_json(work, other)?)],
                        },
                        1,
                    ))
                }
                Some(Item::Checked(Checked::Record(row))) => Ok((vec![Place::Row(row)], 0)),
                Some(Item::Checked(Checked::Member(m))) => Ok((vec![Place::Member(m)], 0)),
                Some(Item::Json(value)) => Ok((vec![Place::Value(value)], 0)),
                _ => Err(inapplicable("`item` is bound only in a step with `each`".into())),
            };
        }
        let places = match self.args.get(&path.root) {
            Some(Checked::Record(row)) => vec![Place::Row(row.clone())],
            Some(Checked::Records(rows)) => rows.iter().cloned().map(Place::Row).collect(),
            Some(Checked::Member(m)) => vec![Place::Member(m.clone())],
            Some(Checked::Members(ms)) => ms.iter().cloned().map(Place::Member).collect(),
            Some(Checked::Absent) => Vec::new(),
            _ => return Err(inapplicable(format!("`{}` is not a record or member", path.root))),
        };
        Ok((places, 0))
    }

    /// Calls `visit` with every value `path` reaches, stepping through lists, each with its
    /// table and the keys from its row down to it (none for a value that is no place in a row).
    fn walk(&self, work: &mut Workspace<'_>, path: &Path, visit: &mut Visit<'_>) -> Result<(), Finding> {
        let path = self.concrete(path)?;
        let (places, skip) = self.places(work, &path)?;
        let fields = path.fields.get(skip..).unwrap_or_default();
        for place in places {
            // During a trial, a row with fields written beside it is walked from the field the
            // path steps into, without a copy of the row.
            if let Place::Row(row) = &place
                && let Some((first, rest)) = fields.split_first()
                && let Some(field) = work.trial_field(row, first)
            {
                let concrete: Vec<&str> = fields.iter().map(String::as_str).collect();
                descend(field.into_iter().collect(), rest, Some(&row.table), &concrete, visit);
                continue;
            }
            // Each start: its table, the keys from the row down to it, and its value.
            let (table, prefix, start): (Option<String>, Vec<String>, Arc<Value>) = match place {
                Place::Row(row) => {
                    let record = work.row(&row)?.ok_or_else(|| inapplicable(format!("row `{}` vanished", row.key)))?;
                    (Some(row.table), Vec::new(), record.value)
                }
                Place::Member(m) => {
                    let mut prefix = vec![m.path.clone()];
                    if m.position.is_none() {
                        prefix.push(m.id.clone());
                    }
                    let value = Arc::new(member_value(work, &m)?);
                    (Some(m.row.table), prefix, value)
                }
                Place::Value(value) => (None, Vec::new(), Arc::new(value)),
            };
            let concrete: Vec<&str> = prefix.iter().chain(fields).map(String::as_str).collect();
            descend(vec![start.as_ref()], fields, table.as_deref(), &concrete, visit);
        }
        Ok(())
    }

    /// Every value `path` reaches, stepping through lists.
    fn leaves(&self, work: &mut Workspace<'_>, path: &Path) -> Result<Vec<Leaf>, Finding> {
        let mut leaves = Vec::new();
        let has_fields = !path.fields.is_empty();
        self.walk(work, path, &mut |table, concrete, value| {
            let money = has_fields && table.is_some_and(|t| self.is_money(t, concrete));
            leaves.push(Leaf { value: value.clone(), money });
        })?;
        Ok(leaves)
    }

    /// The elements a step with `each` runs for, in order.
    fn items(&self, work: &mut Workspace<'_>, each: &Each) -> Result<Vec<Item>, Finding> {
        match each {
            Each::Arg(name) => Ok(match self.args.get(name) {
                Some(Checked::Objects(elements)) => elements.iter().cloned().map(Item::Fields).collect(),
                Some(Checked::Records(rows)) => {
                    rows.iter().cloned().map(|r| Item::Checked(Checked::Record(r))).collect()
                }
                Some(Checked::Members(ms)) => ms.iter().cloned().map(|m| Item::Checked(Checked::Member(m))).collect(),
                _ => Vec::new(),
            }),
            Each::List(path) => {
                let currency = self.contract.currency();
                let mut items = Vec::new();
                self.walk(work, path, &mut |table, concrete, value| {
                    let element = match table.and_then(|t| self.contract.table(t)) {
                        Some(table) => warrant_contract::records::cedar_value_at(table, concrete, value, currency),
                        None => value.clone(),
                    };
                    items.push(Item::Json(element));
                })?;
                Ok(items)
            }
        }
    }

    fn number(&self, leaf: &Leaf) -> Result<i64, Finding> {
        let Value::Number(n) = &leaf.value else {
            return Err(inapplicable(format!("`{}` is not a number", leaf.value)));
        };
        if leaf.money {
            units(&leaf.value, self.currency()?)
        } else {
            n.as_i64().ok_or_else(|| inapplicable(format!("`{n}` is not an integer")))
        }
    }

    /// Evaluates an expression.
    pub(crate) fn eval(&self, work: &mut Workspace<'_>, expr: &Expr) -> Result<Derived, Finding> {
        let int = |d: Derived| match d {
            Derived::Int(n) => Ok(n),
            Derived::Json(v) => Err(inapplicable(format!("`{v}` is not a quantity"))),
        };
        let overflow = || inapplicable("the quantity overflows".into());
        Ok(match expr {
            Expr::Value(path) => {
                let leaves = self.leaves(work, path)?;
                match leaves.as_slice() {
                    [one] => Derived::Int(self.number(one)?),
                    _ => return Err(inapplicable(format!("`{}` does not reach exactly one value", path.root))),
                }
            }
            Expr::Sum(path) => {
                let mut total: i64 = 0;
                for leaf in self.leaves(work, path)? {
                    total = total.checked_add(self.number(&leaf)?).ok_or_else(overflow)?;
                }
                Derived::Int(total)
            }
            Expr::Count(path) => Derived::Int(i64::try_from(self.leaves(work, path)?.len()).map_err(|_| overflow())?),
            Expr::First(path) => {
                Derived::Json(self.leaves(work, path)?.into_iter().next().map_or(Value::Null, |l| l.value))
            }
            Expr::Derived(name) => {
                self.derived.get(name).cloned().ok_or_else(|| inapplicable(format!("`{name}` is not derived")))?
            }
            Expr::Literal(n) => Derived::Int(*n),
            Expr::Add(a, b) => {
                Derived::Int(int(self.eval(work, a)?)?.checked_add(int(self.eval(work, b)?)?).ok_or_else(overflow)?)
            }
            Expr::Sub(a, b) => {
                Derived::Int(int(self.eval(work, a)?)?.checked_sub(int(self.eval(work, b)?)?).ok_or_else(overflow)?)
            }
            Expr::Neg(a) => Derived::Int(int(self.eval(work, a)?)?.checked_neg().ok_or_else(overflow)?),
            Expr::Cel(value) => self.cel_quantity(work, value)?,
        })
    }

    /// A CEL derived quantity, typed as declared. Kept out of line, so that the integer
    /// language's evaluation stays as compact as it was.
    #[inline(never)]
    fn cel_quantity(&self, work: &mut Workspace<'_>, value: &CelValue) -> Result<Derived, Finding> {
        let source = value.expression.source();
        typed(&self.cel(work, value)?, value.ty.unwrap_or(ValueType::Integer), source)
    }

    /// A row as an expression (and a policy) sees it: its fields, money in minor units, `key`.
    fn row_json(&self, work: &mut Workspace<'_>, row: &RowRef) -> Result<Value, Finding> {
        let record = work.row(row)?.ok_or_else(|| inapplicable(format!("row `{}` vanished", row.key)))?;
        let table = self.contract.table(&row.table).ok_or_else(|| Finding::refuse(ReasonCode::UnknownRecord))?;
        Ok(cedar_attrs(table, &row.key, &record.value, self.contract.currency()))
    }

    /// A member as an expression sees it: the element, money in minor units.
    /// The element is taken from its row as [`Self::row_json`] converts it, so its money fields
    /// are recognised at their place in the row.
    fn member_json(&self, work: &mut Workspace<'_>, m: &MemberRef) -> Result<Value, Finding> {
        member_value(work, m)?;
        let row = self.row_json(work, &m.row)?;
        let collection = m.path.split('.').try_fold(&row, |v, field| v.get(field));
        let element = match (collection, m.position) {
            (Some(list), Some(i)) => list.get(i),
            (Some(object), None) => object.get(&m.id),
            (None, _) => None,
        };
        element.cloned().ok_or_else(|| inapplicable(format!("member `{}` vanished from its row", m.id)))
    }

    /// One checked value as CEL reads it: a record as its row, a member as its element, money
    /// in minor units, an `objects` element as a map of its fields (an absent one left out).
    fn checked_json(&self, work: &mut Workspace<'_>, value: &Checked) -> Result<Value, Finding> {
        Ok(match value {
            Checked::Record(row) => self.row_json(work, row)?,
            Checked::Member(m) => self.member_json(work, m)?,
            Checked::Money { units, .. } => Value::from(*units),
            other => other.to_json(),
        })
    }

    /// An element of an `objects` argument as CEL reads it.
    fn element_json(&self, work: &mut Workspace<'_>, fields: &BTreeMap<String, Checked>) -> Result<Value, Finding> {
        let mut map = serde_json::Map::new();
        for (name, value) in fields.iter().filter(|(_, v)| !matches!(v, Checked::Absent)) {
            map.insert(name.clone(), self.checked_json(work, value)?);
        }
        Ok(Value::Object(map))
    }

    /// The JSON a name holds for CEL: an argument as checked (a row for a record, a list of
    /// rows or elements for a list, money in minor units), a derived quantity, the actor's row
    /// or the turn's `today`/`time_zone`.
    fn binding(&self, work: &mut Workspace<'_>, name: &str) -> Result<Option<Value>, Finding> {
        let json = match self.args.get(name) {
            Some(Checked::Record(row)) => self.row_json(work, row)?,
            Some(Checked::Records(rows)) => {
                Value::Array(rows.iter().map(|r| self.row_json(work, r)).collect::<Result<_, _>>()?)
            }
            Some(Checked::Member(m)) => self.member_json(work, m)?,
            Some(Checked::Members(ms)) => {
                Value::Array(ms.iter().map(|m| self.member_json(work, m)).collect::<Result<_, _>>()?)
            }
            Some(Checked::Money { units, .. }) => Value::from(*units),
            Some(Checked::Objects(elements)) => {
                Value::Array(elements.iter().map(|fields| self.element_json(work, fields)).collect::<Result<_, _>>()?)
            }
            Some(other) => other.to_json(),
            None if self.steps.borrow().item.is_some() && name == ITEM => {
                let item = self.steps.borrow().item.clone();
                match item {
                    Some(Item::Fields(fields)) => self.element_json(work, &fields)?,
                    Some(Item::Checked(value)) => self.checked_json(work, &value)?,
                    Some(Item::Json(value)) => value,
                    None => Value::Null,
                }
            }
            None if self.steps.borrow().minted.contains_key(name) => {
                Value::String(self.steps.borrow().minted.get(name).cloned().unwrap_or_default())
            }
            None if self.steps.borrow().created.contains_key(name) => {
                let row = self.steps.borrow().created.get(name).cloned();
                match row {
                    Some(row) => self.row_json(work, &row)?,
                    None => Value::Null,
                }
            }
            None => match (self.derived.get(name), name, &self.actor) {
                (Some(quantity), _, _) => quantity.to_json(),
                (None, "actor", Some(row)) => self.row_json(work, &row.clone())?,
                (None, "today", _) => Value::String(self.clock.today().to_string()),
                (None, "time_zone", _) => Value::String(self.clock.time_zone.iana_name().unwrap_or("UTC").to_owned()),
                (None, "ledger", _) => self.ledger_json(work)?,
                (None, "history", _) => self.history_json(work)?,
                _ => return Ok(None),
            },
        };
        Ok(Some(json))
    }

    /// Evaluates a CEL expression: the names it and its named expressions read bound, each
    /// named expression evaluated in dependency order, then the expression.
    fn cel(&self, work: &mut Workspace<'_>, value: &CelValue) -> Result<cel::Value, Finding> {
        let source = value.expression.source();
        let failed = |e: expr::EvalError| expression_failed(source, ReasonCode::ExpressionFailed, &e.0);
        let named = self.contract.expressions();
        let mut roots: std::collections::BTreeSet<&str> =
            value.expression.names().iter().map(|n| n.name.as_str()).collect();
        for name in &value.named {
            roots.extend(named.get(name).iter().flat_map(|n| n.expression.names()).map(|n| n.name.as_str()));
        }
        let mut budget = MAX_INPUT_VALUES;
        let mut bindings = BTreeMap::new();
        for root in roots.into_iter().filter(|r| named.get(r).is_none()) {
            let bound = if root == "now" {
                let nanos = self.clock.at.as_nanosecond();
                let (seconds, sub) = (nanos.div_euclid(1_000_000_000), nanos.rem_euclid(1_000_000_000));
                let seconds =
                    i64::try_from(seconds).map_err(|_| failed(expr::EvalError("`now` is out of range".into())))?;
                expr::timestamp(seconds, u32::try_from(sub).unwrap_or(0)).map_err(failed)?
            } else {
                let json = self.binding(work, root)?.unwrap_or(Value::Null);
                expr::from_json(&json, &mut budget).map_err(failed)?
            };
            bindings.insert(root.to_owned(), bound);
        }
        let follows = value.expression.follows()
            || value.named.iter().any(|n| named.get(n).is_some_and(|n| n.expression.follows()));
        if !follows {
            return self.evaluate_round(value, bindings, &RowLookup::default());
        }
        // Rows are fetched between rounds: each round evaluates with the rows known so far and
        // names the ones it missed; a round that missed none is the answer.
        let rows = RowLookup::default();
        let lookup = failed;
        for round in 0..=MAX_FOLLOW_ROUNDS {
            rows.begin_round().map_err(lookup)?;
            let result = self.evaluate_round(value, bindings.clone(), &rows);
            let misses = rows.take_misses().map_err(lookup)?;
            if misses.is_empty() {
                if let Some((table, key)) = rows.absent().map_err(lookup)? {
                    let message = format!("table `{table}` has no row `{}`", warrant_contract::text::visible(&key));
                    return Err(expression_failed(source, ReasonCode::RelatedRowMissing, &message));
                }
                return result;
            }
            if round == MAX_FOLLOW_ROUNDS {
                let message = format!("`{}` follows references deeper than {MAX_FOLLOW_ROUNDS}", expr::ROW);
                return Err(expression_failed(source, ReasonCode::RelatedRowsLimit, &message));
            }
            for (table, key) in misses {
                if rows.known_rows().map_err(lookup)? >= MAX_FOLLOWED_ROWS {
                    let message = format!("`{}` reaches more than {MAX_FOLLOWED_ROWS} rows", expr::ROW);
                    return Err(expression_failed(source, ReasonCode::RelatedRowsLimit, &message));
                }
                let found = match self.followed_row(work, &table, &key)? {
                    Some(json) => Some(expr::from_json(&json, &mut budget).map_err(failed)?),
                    None => None,
                };
                rows.insert(&table, &key, found).map_err(lookup)?;
            }
        }
        Err(expression_failed(source, ReasonCode::RelatedRowsLimit, "the references could not be followed"))
    }

    /// One evaluation of a CEL expression and the named expressions it needs, over `bindings`
    /// and the rows `rows` knows.
    fn evaluate_round(
        &self,
        value: &CelValue,
        mut bindings: BTreeMap<String, cel::Value>,
        rows: &RowLookup,
    ) -> Result<cel::Value, Finding> {
        let named = self.contract.expressions();
        for name in &value.named {
            let Some(n) = named.get(name) else { continue };
            let computed = n.expression.evaluate_with(&bindings, rows).map_err(|e| {
                expression_failed(n.expression.source(), ReasonCode::ExpressionFailed, &format!("`{name}`: {}", e.0))
            })?;
            bindings.insert(name.clone(), computed);
        }
        let source = value.expression.source();
        value
            .expression
            .evaluate_with(&bindings, rows)
            .map_err(|e| expression_failed(source, ReasonCode::ExpressionFailed, &e.0))
    }

    /// A row `row(table, key)` reaches, as CEL reads it (its fields, money in minor units,
    /// `key`): `None` when there is none, or the actor may not see it (to them it does not
    /// exist). The row read is a fact of the decision.
    fn followed_row(&self, work: &mut Workspace<'_>, table: &str, key: &str) -> Result<Option<Value>, Finding> {
        let row = RowRef { table: table.to_owned(), key: key.to_owned() };
        if self.contract.table(table).is_none() {
            return Ok(None);
        }
        let Some(view) = work.row(&row)? else { return Ok(None) };
        let actor = self.actor.as_ref().map_or("", |a| a.key.as_str());
        let mut parent = |table: &str, key: &str| {
            work.row(&RowRef { table: table.to_owned(), key: key.to_owned() }).map(|r| r.map(|r| (*r.value).clone()))
        };
        let seen = RowValue { table, key, value: &view.value };
        if !crate::visibility::visible(self.contract, actor, seen, &mut parent)? {
            return Ok(None);
        }
        self.row_json(work, &row).map(Some)
    }

    /// The conversation's ledger as CEL reads it: each committed effect (event) as
    /// `{"operation", "args", "actor"}`, by operation in the contract's order and each
    /// operation's in commit order, then this turn's earlier committed acts. The events read
    /// are facts of the decision.
    fn ledger_json(&self, work: &mut Workspace<'_>) -> Result<Value, Finding> {
        let entry = |e: &crate::facts::EventRecord| {
            serde_json::json!({
                "operation": e.kind,
                "args": e.payload.get("args").cloned().unwrap_or(Value::Null),
                "actor": e.payload.get("actor").cloned().unwrap_or(Value::Null),
            })
        };
        let mut entries = Vec::new();
        for op in self.contract.operations() {
            entries.extend(work.events(&op.name)?.iter().map(entry));
        }
        entries.extend(work.turn_events.iter().map(entry));
        Ok(Value::Array(entries))
    }

    /// The history of each row a `record` argument names, as CEL reads it: by argument, the
    /// row's committed events of every conversation in commit order (then this turn's earlier
    /// committed acts on it), each as `{"operation", "args", "actor", "at", "conversation",
    /// "outcome"}` (`outcome` null until one is reported). The events read are facts of the
    /// decision.
    fn history_json(&self, work: &mut Workspace<'_>) -> Result<Value, Finding> {
        let mut by_argument = serde_json::Map::new();
        for (name, value) in self.args {
            let Checked::Record(row) = value else { continue };
            let events = work.row_events(row)?;
            let entries = events.iter().map(|e| {
                serde_json::json!({
                    "operation": e.event.kind,
                    "args": e.event.payload.get("args").cloned().unwrap_or(Value::Null),
                    "actor": e.event.payload.get("actor").cloned().unwrap_or(Value::Null),
                    "at": e.at,
                    "conversation": e.conversation,
                    "outcome": e.outcome,
                })
            });
            by_argument.insert(name.clone(), Value::Array(entries.collect()));
        }
        Ok(Value::Object(by_argument))
    }

    /// Derives every declared quantity of `op`, in order.
    pub(crate) fn derive_all(&mut self, work: &mut Workspace<'_>, op: &Operation) -> Result<(), Finding> {
        for (name, expr) in &op.derive {
            let value = self.eval(work, expr)?;
            self.derived.insert(name.clone(), value);
        }
        Ok(())
    }

    /// Applies `op`'s effect steps to the working copies, its keys minted first.
    pub(crate) fn apply(&self, work: &mut Workspace<'_>, op: &Operation) -> Result<(), Finding> {
        {
            let mut steps = self.steps.borrow_mut();
            *steps = StepState::default();
            for key in &op.keys {
                steps.minted.insert(key.name.clone(), mint(&self.mint_seed, &op.name, key));
            }
        }
        for step in &op.effects {
            self.apply_step(work, step)?;
        }
        Ok(())
    }

    /// A step, once, or once per element of its `each` (read before it runs).
    fn apply_step(&self, work: &mut Workspace<'_>, step: &Step) -> Result<(), Finding> {
        let Some(each) = &step.each else { return self.apply_once(work, step) };
        let items = self.items(work, each)?;
        let mut result = Ok(());
        for item in items {
            self.steps.borrow_mut().item = Some(item);
            result = self.apply_once(work, step);
            if result.is_err() {
                break;
            }
        }
        self.steps.borrow_mut().item = None;
        result
    }

    /// Whether every condition of the step holds: `when`, `when_present`, `when_absent`, `if`.
    /// A keyed segment that names no key here reaches nothing.
    fn holds(&self, work: &mut Workspace<'_>, step: &Step) -> Result<bool, Finding> {
        let mut reached = |path: &Path| -> Result<Option<Vec<Leaf>>, Finding> {
            match self.concrete(path) {
                Ok(path) => self.leaves(work, &path).map(Some),
                Err(_) => Ok(None),
            }
        };
        for (path, expected) in &step.when {
            let leaves = reached(path)?.unwrap_or_default();
            if leaves.is_empty() || leaves.iter().any(|l| &l.value != expected) {
                return Ok(false);
            }
        }
        for path in &step.present {
            if !reached(path)?.unwrap_or_default().iter().any(|l| !l.value.is_null()) {
                return Ok(false);
            }
        }
        for path in &step.absent {
            if reached(path)?.unwrap_or_default().iter().any(|l| !l.value.is_null()) {
                return Ok(false);
            }
        }
        if let Some(condition) = &step.condition {
            let source = condition.expression.source();
            return match self.cel(work, condition)? {
                cel::Value::Bool(b) => Ok(b),
                other => {
                    let message = format!("`if` is a CEL {}, not a bool", expr::type_name(&other));
                    Err(expression_failed(source, ReasonCode::ExpressionWrongType, &message))
                }
            };
        }
        Ok(true)
    }

    /// The places a path names in rows: each with the pointer to it and where money is.
    fn targets(&self, work: &mut Workspace<'_>, path: &Path) -> Result<Vec<Target>, Finding> {
        let path = self.concrete(path)?;
        let (places, skip) = self.places(work, &path)?;
        let fields = path.fields.get(skip..).unwrap_or_default();
        places
            .into_iter()
            .map(|place| {
                let (row, mut pointer, mut concrete) = match place {
                    Place::Row(row) => (row, Vec::new(), Vec::new()),
                    Place::Member(m) => {
                        let at = m.position.map_or_else(|| m.id.clone(), |p| p.to_string());
                        let concrete = if m.position.is_none() {
                            vec![m.path.clone(), m.id.clone()]
                        } else {
                            vec![m.path.clone()]
                        };
                        (m.row, vec![m.path, at], concrete)
                    }
                    Place::Value(_) => {
                        return Err(inapplicable(format!("`{}` is no place in a row to write", path.root)));
                    }
                };
                pointer.extend(fields.iter().cloned());
                concrete.extend(fields.iter().cloned());
                Ok(Target { row, pointer, concrete })
            })
            .collect()
    }

    /// A computed value as a row of `table` holds it at `concrete`: its integers at money
    /// fields are minor units, written as amounts; everything else as it is.
    fn written(&self, table: &str, concrete: &mut Vec<String>, value: Value) -> Result<Value, Finding> {
        Ok(match value {
            Value::Number(n) => {
                let keys: Vec<&str> = concrete.iter().map(String::as_str).collect();
                if !keys.is_empty() && self.is_money(table, &keys) {
                    let units = n.as_i64().ok_or_else(|| inapplicable(format!("`{n}` is not minor units")))?;
                    number(units, self.currency()?)?
                } else {
                    Value::Number(n)
                }
            }
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (key, inner) in map {
                    concrete.push(key.clone());
                    let inner = self.written(table, concrete, inner);
                    concrete.pop();
                    out.insert(key, inner?);
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.written(table, concrete, v)).collect::<Result<_, _>>()?)
            }
            other => other,
        })
    }

    /// A CEL value computed for a row, as JSON.
    fn computed_json(&self, work: &mut Workspace<'_>, value: &CelValue) -> Result<Value, Finding> {
        let computed = self.cel(work, value)?;
        expr::to_json(&computed)
            .map_err(|e| expression_failed(value.expression.source(), ReasonCode::ExpressionFailed, &e.0))
    }

    /// The row a record argument or an earlier step's `as` names.
    fn named_row(&self, name: &str) -> Result<RowRef, Finding> {
        if let Some(row) = self.steps.borrow().created.get(name) {
            return Ok(row.clone());
        }
        match self.args.get(name) {
            Some(Checked::Record(row)) => Ok(row.clone()),
            _ => Err(inapplicable(format!("`{name}` names no row"))),
        }
    }

    fn apply_once(&self, work: &mut Workspace<'_>, step: &Step) -> Result<(), Finding> {
        if !self.holds(work, step)? {
            return Ok(());
        }
        match &step.change {
            Change::SetValue { path, value } => self.set(work, path, |_| Ok(value.clone())),
            Change::SetArg { path, arg } => {
                let currency = self.contract.currency();
                let value = self.args.get(arg).map_or(Value::Null, |c| c.to_row_json(currency));
                self.set(work, path, |_| Ok(value.clone()))
            }
            Change::SetArgs { path, args } => {
                let object: serde_json::Map<String, Value> =
                    args.iter().map(|a| (a.clone(), self.args.get(a).map_or(Value::Null, Checked::to_json))).collect();
                self.set(work, path, |_| Ok(Value::Object(object.clone())))
            }
            Change::SetComputed { path, value } => self.set_computed(work, path, value),
            Change::SetMoney { path, amount } => {
                let Derived::Int(units) = self.eval(work, amount)? else {
                    return Err(inapplicable("a money effect needs a quantity".into()));
                };
                let currency = self.currency()?;
                self.set(work, path, |_| number(units, currency))
            }
            Change::Add { path, amount } => {
                let Derived::Int(delta) = self.eval(work, amount)? else {
                    return Err(inapplicable("an added amount must be a quantity".into()));
                };
                self.add(work, path, delta, true)
            }
            Change::AddEach { .. } => self.add_each(work, &step.change),
            Change::Append { path, entry } => {
                let object = self.entry_object(work, entry)?;
                self.push(work, path, |_| Ok(object.clone()))
            }
            Change::AddComputed { .. }
            | Change::AppendValue { .. }
            | Change::Create { .. }
            | Change::Delete { .. }
            | Change::Remove { .. } => self.apply_new(work, &step.change),
            Change::Swap { members, with, fields } => self.swap(work, members, with, fields),
        }
    }

    /// The steps that add with CEL, append one value, create, delete or remove.
    fn apply_new(&self, work: &mut Workspace<'_>, change: &Change) -> Result<(), Finding> {
        match change {
            Change::AddComputed { path, value } => {
                let Derived::Int(delta) = self.cel_quantity(work, value)? else {
                    return Err(inapplicable("an added amount must be a quantity".into()));
                };
                self.add(work, path, delta, value.ty == Some(ValueType::Money))
            }
            Change::AppendValue { path, value } => {
                let value = match value {
                    Appended::Value(v) => v.clone(),
                    Appended::Arg(arg) => {
                        self.args.get(arg).map_or(Value::Null, |c| c.to_row_json(self.contract.currency()))
                    }
                    Appended::Cel(cel) => {
                        let json = self.computed_json(work, cel)?;
                        return self.push(work, path, |target| {
                            self.written(&target.row.table, &mut target.concrete.clone(), json.clone())
                        });
                    }
                };
                self.push(work, path, |_| Ok(value.clone()))
            }
            Change::Create { table, key, name, value } => {
                let row = RowRef { table: table.clone(), key: self.key_text(key)? };
                let value = match value {
                    NewRow::Cel(cel) => match self.computed_json(work, cel)? {
                        object @ Value::Object(_) => self.written(table, &mut Vec::new(), object)?,
                        other => {
                            let message = format!("a created row is a map, not `{other}`");
                            return Err(expression_failed(
                                cel.expression.source(),
                                ReasonCode::ExpressionWrongType,
                                &message,
                            ));
                        }
                    },
                    NewRow::Entry(entry) => self.entry_object(work, entry)?,
                };
                work.create(&row, value)?;
                if let Some(name) = name {
                    self.steps.borrow_mut().created.insert(name.clone(), row);
                }
                Ok(())
            }
            Change::Delete { row } => work.delete(&self.named_row(row)?),
            Change::Remove { path } => self.remove(work, path),
            _ => Ok(()),
        }
    }

    /// Adds `delta` (minor units where `money`) to the number at `path`.
    fn add(&self, work: &mut Workspace<'_>, path: &Path, delta: i64, money: bool) -> Result<(), Finding> {
        let overflow = || inapplicable("the amount overflows".into());
        if !money {
            return self.set(work, path, |old| {
                let old = old
                    .and_then(Value::as_i64)
                    .ok_or_else(|| inapplicable("the field added to is not an integer".into()))?;
                old.checked_add(delta).map(Value::from).ok_or_else(overflow)
            });
        }
        let currency = self.currency()?;
        self.set(work, path, |old| {
            let Some(old @ Value::Number(_)) = old else {
                return Err(inapplicable("the field added to is not a number".into()));
            };
            let sum = units(old, currency)?.checked_add(delta).ok_or_else(overflow)?;
            number(sum, currency)
        })
    }

    /// `remove`: the map entry the path's last segment names taken out of its map.
    fn remove(&self, work: &mut Workspace<'_>, path: &Path) -> Result<(), Finding> {
        let path = self.concrete(path)?;
        let Some((key, parents)) = path.fields.split_last() else {
            return Err(inapplicable("`remove` needs a map entry".into()));
        };
        let parent = Path { root: path.root.clone(), fields: parents.to_vec(), keys: BTreeMap::new() };
        self.set(work, &parent, |old| match old {
            Some(Value::Object(map)) if map.contains_key(key) => {
                let mut map = map.clone();
                map.remove(key);
                Ok(Value::Object(map))
            }
            _ => Err(inapplicable(format!("there is no entry `{}` to remove", warrant_contract::text::visible(key)))),
        })
    }

    /// `set` with `cel`: the value written as an amount where its type is money, else as JSON
    /// (untyped, its integers at money fields written as amounts).
    #[inline(never)]
    fn set_computed(&self, work: &mut Workspace<'_>, path: &Path, value: &CelValue) -> Result<(), Finding> {
        let source = value.expression.source();
        let json = match value.ty {
            Some(ValueType::Money) => match typed(&self.cel(work, value)?, ValueType::Money, source)? {
                Derived::Int(units) => number(units, self.currency()?)?,
                Derived::Json(v) => v,
            },
            Some(ty) => typed(&self.cel(work, value)?, ty, source)?.to_json(),
            None => {
                let json = self.computed_json(work, value)?;
                for target in self.targets(work, path)? {
                    let written = self.written(&target.row.table, &mut target.concrete.clone(), json.clone())?;
                    work.update(&target.row, &target.pointer, |_| Ok(written.clone()))?;
                }
                return Ok(());
            }
        };
        self.set(work, path, |_| Ok(json.clone()))
    }

    /// `add_each`: an amount of each matching element of a list added to a field of the member
    /// it names, in every target row.
    fn add_each(&self, work: &mut Workspace<'_>, change: &Change) -> Result<(), Finding> {
        let Change::AddEach { list, into, key, amount, field, when_element, when_member } = change else {
            return Ok(());
        };
        let matches =
            |value: &Value, conditions: &[(String, Value)]| conditions.iter().all(|(k, v)| value.get(k) == Some(v));
        let elements: Vec<Value> = self.leaves(work, list)?.into_iter().map(|l| l.value).collect();
        let targets = self.targets(work, into)?;
        let list_table = self.args.get(&list.root).and_then(|c| match c {
            Checked::Record(row) => Some(row.table.clone()),
            _ => None,
        });
        let amount_at: Vec<&str> = list.fields.iter().chain(std::iter::once(amount)).map(String::as_str).collect();
        let currency = self.currency()?;
        for element in elements.iter().filter(|e| matches(e, when_element)) {
            let Some(member_id) = element.get(key).and_then(Value::as_str) else { continue };
            let units_added = match element.get(amount) {
                Some(n @ Value::Number(_)) if list_table.as_deref().is_some_and(|t| self.is_money(t, &amount_at)) => {
                    units(n, currency)?
                }
                _ => {
                    return Err(inapplicable(format!(
                        "`{amount}` of an element of `{}` is not a money field",
                        list.root
                    )));
                }
            };
            for Target { row, pointer: prefix, .. } in &targets {
                let Some(container) = work.row(row)? else { continue };
                let mut member_value: &Value = &container.value;
                for part in prefix {
                    member_value = member_value.get(part).unwrap_or(&Value::Null);
                }
                let Some(member) = member_value.get(member_id) else { continue };
                if !matches(member, when_member) {
                    continue;
                }
                let mut pointer = prefix.clone();
                pointer.push(member_id.to_owned());
                pointer.push(field.clone());
                work.update(row, &pointer, |old| {
                    let Some(old @ Value::Number(_)) = old else {
                        return Err(inapplicable(format!("`{field}` of `{member_id}` is not a number")));
                    };
                    let after = units(old, currency)?
                        .checked_add(units_added)
                        .ok_or_else(|| inapplicable("the amount overflows".into()))?;
                    number(after, currency)
                })?;
            }
        }
        Ok(())
    }

    /// The object an entry builds from values, arguments, amounts and derived quantities.
    fn entry_object(&self, work: &mut Workspace<'_>, entry: &[(String, EntryValue)]) -> Result<Value, Finding> {
        let mut object = serde_json::Map::new();
        for (name, source) in entry {
            let value = match source {
                EntryValue::Value(v) => v.clone(),
                EntryValue::Arg(arg) => {
                    self.args.get(arg).map_or(Value::Null, |c| c.to_row_json(self.contract.currency()))
                }
                EntryValue::Money(expr) => match self.eval(work, expr)? {
                    Derived::Int(units) => number(units, self.currency()?)?,
                    Derived::Json(v) => return Err(inapplicable(format!("`{v}` is not an amount"))),
                },
                EntryValue::Derived(name) => self.derived.get(name).map_or(Value::Null, Derived::to_json),
            };
            object.insert(name.clone(), value);
        }
        Ok(Value::Object(object))
    }

    /// Appends the value `make` gives for each target to the list there.
    fn push(
        &self,
        work: &mut Workspace<'_>,
        path: &Path,
        make: impl Fn(&Target) -> Result<Value, Finding>,
    ) -> Result<(), Finding> {
        for target in self.targets(work, path)? {
            let value = make(&target)?;
            work.update(&target.row, &target.pointer, |old| match old {
                Some(Value::Array(items)) => {
                    let mut items = items.clone();
                    items.push(value.clone());
                    Ok(Value::Array(items))
                }
                None | Some(Value::Null) => Ok(Value::Array(vec![value.clone()])),
                Some(_) => Err(inapplicable("appending to a field that is not a list".into())),
            })?;
        }
        Ok(())
    }

    /// `swap`: the fields of each checked member replaced by those of the record it is swapped with.
    fn swap(&self, work: &mut Workspace<'_>, members: &str, with: &str, fields: &[String]) -> Result<(), Finding> {
        let (Some(Checked::Members(old)), Some(Checked::Records(new))) = (self.args.get(members), self.args.get(with))
        else {
            return Err(inapplicable("swap needs its checked lists".into()));
        };
        for (member, row) in old.iter().zip(new) {
            let replacement = work.row(row)?.ok_or_else(|| inapplicable(format!("row `{}` vanished", row.key)))?;
            let mut pointer = vec![member.path.clone()];
            pointer.push(member.position.map_or_else(|| member.id.clone(), |p| p.to_string()));
            for field in fields {
                let value = replacement.value.get(field).cloned().unwrap_or(Value::Null);
                let mut at = pointer.clone();
                at.push(field.clone());
                work.update(&member.row, &at, |_| Ok(value.clone()))?;
            }
        }
        Ok(())
    }

    fn set(
        &self,
        work: &mut Workspace<'_>,
        path: &Path,
        make: impl Fn(Option<&Value>) -> Result<Value, Finding>,
    ) -> Result<(), Finding> {
        for target in self.targets(work, path)? {
            work.update(&target.row, &target.pointer, &make)?;
        }
        Ok(())
    }
}
