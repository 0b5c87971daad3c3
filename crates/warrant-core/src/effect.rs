//! Derived quantities and effect steps: the arithmetic code does for policy (sums of money in
//! minor units, counts, CEL expressions with the values they read bound), and the record
//! changes a committed effect makes, applied to the turn's working copies so that later acts of
//! the same turn, and later turns, see them.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::args::{Checked, MemberRef, member_value};
use crate::contract::Contract;
use crate::date::TurnClock;
use crate::expr::{self, MAX_INPUT_VALUES, RowLookup};
use crate::expressions::{CelValue, ValueType};
use crate::facts::RowRef;
use crate::money::{self, Currency};
use crate::operation::{Change, EntryValue, Expr, Operation, Path, Step};
use crate::reason::ReasonCode;
use crate::records::cedar_attrs;
use crate::verdict::Finding;
use crate::visibility::RowValue;
use crate::workspace::Workspace;

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

/// Evaluation state for one act: its checked arguments and the quantities derived so far.
pub(crate) struct Eval<'a> {
    pub(crate) contract: &'a Contract,
    pub(crate) actor: Option<RowRef>,
    pub(crate) args: &'a BTreeMap<String, Checked>,
    pub(crate) derived: BTreeMap<String, Derived>,
    /// The turn's clock: CEL's `now`, `today` and `time_zone`.
    pub(crate) clock: &'a TurnClock,
}

/// A value a path reached, with whether its last field is money in its table.
struct Leaf {
    value: Value,
    money: bool,
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
        (ValueType::Instant, cel::Value::String(text)) => {
            crate::date::parse_instant(text).ok().map(|_| Derived::Json(Value::String(text.as_ref().clone())))
        }
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

impl Eval<'_> {
    /// The contract's currency, which every money step computes in.
    fn currency(&self) -> Result<Currency, Finding> {
        self.contract.currency().ok_or_else(|| inapplicable("money needs the contract's `records.currency`".into()))
    }

    /// Whether the value at `concrete` (keys from the row, list positions left out) of a row
    /// of `table` is money.
    fn is_money(&self, table: &str, concrete: &[&str]) -> bool {
        self.contract.table(table).is_some_and(|t| t.is_money(concrete))
    }

    /// Every value `path` reaches, stepping through lists.
    fn leaves(&self, work: &mut Workspace<'_>, path: &Path) -> Result<Vec<Leaf>, Finding> {
        // Each start: its table, the keys from the row down to it, and its value.
        let mut starts: Vec<(String, Vec<String>, std::sync::Arc<Value>)> = Vec::new();
        let member_prefix = |m: &MemberRef| {
            let mut prefix = vec![m.path.clone()];
            if m.position.is_none() {
                prefix.push(m.id.clone());
            }
            prefix
        };
        if path.root == "actor" {
            let row = self.actor.clone().ok_or_else(|| Finding::refuse(ReasonCode::UnknownActor))?;
            let record = work.row(&row)?.ok_or_else(|| Finding::refuse(ReasonCode::UnknownActor))?;
            starts.push((row.table, Vec::new(), record.value));
        } else {
            match self.args.get(&path.root) {
                Some(Checked::Record(row)) => {
                    let record = work.row(row)?.ok_or_else(|| inapplicable(format!("row `{}` vanished", row.key)))?;
                    starts.push((row.table.clone(), Vec::new(), record.value));
                }
                Some(Checked::Records(rows)) => {
                    for row in rows {
                        let record =
                            work.row(row)?.ok_or_else(|| inapplicable(format!("row `{}` vanished", row.key)))?;
                        starts.push((row.table.clone(), Vec::new(), record.value));
                    }
                }
                Some(Checked::Member(m)) => {
                    starts.push((m.row.table.clone(), member_prefix(m), std::sync::Arc::new(member_value(work, m)?)))
                }
                Some(Checked::Members(ms)) => {
                    for m in ms {
                        starts.push((
                            m.row.table.clone(),
                            member_prefix(m),
                            std::sync::Arc::new(member_value(work, m)?),
                        ));
                    }
                }
                Some(Checked::Absent) => {}
                _ => return Err(inapplicable(format!("`{}` is not a record or member", path.root))),
            }
        }
        let mut leaves = Vec::new();
        for (table, prefix, start) in &starts {
            // Walk by reference; only the leaves are copied.
            let mut current: Vec<&Value> = vec![start.as_ref()];
            for field in &path.fields {
                let mut next = Vec::new();
                for value in current {
                    match value {
                        Value::Array(items) => next.extend(items.iter().filter_map(|item| item.get(field))),
                        other => next.extend(other.get(field)),
                    }
                }
                current = next;
            }
            let concrete: Vec<&str> = prefix.iter().chain(&path.fields).map(String::as_str).collect();
            let money = !path.fields.is_empty() && self.is_money(table, &concrete);
            for value in current {
                match value {
                    Value::Array(items) => {
                        leaves.extend(items.iter().map(|value| Leaf { value: value.clone(), money }))
                    }
                    value => leaves.push(Leaf { value: value.clone(), money }),
                }
            }
        }
        Ok(leaves)
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
    fn member_json(&self, work: &mut Workspace<'_>, m: &MemberRef) -> Result<Value, Finding> {
        let element = member_value(work, m)?;
        let table = self.contract.table(&m.row.table).ok_or_else(|| Finding::refuse(ReasonCode::UnknownRecord))?;
        let wrapped = serde_json::json!({ "m": element });
        Ok(cedar_attrs(table, &m.id, &wrapped, self.contract.currency()).get("m").cloned().unwrap_or(Value::Null))
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
            Some(other) => other.to_json(),
            None => match (self.derived.get(name), name, &self.actor) {
                (Some(quantity), _, _) => quantity.to_json(),
                (None, "actor", Some(row)) => self.row_json(work, &row.clone())?,
                (None, "today", _) => Value::String(self.clock.today().to_string()),
                (None, "time_zone", _) => Value::String(self.clock.time_zone.iana_name().unwrap_or("UTC").to_owned()),
                (None, "ledger", _) => self.ledger_json(work)?,
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
                    let message = format!("table `{table}` has no row `{}`", crate::text::visible(&key));
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

    /// Derives every declared quantity of `op`, in order.
    pub(crate) fn derive_all(&mut self, work: &mut Workspace<'_>, op: &Operation) -> Result<(), Finding> {
        for (name, expr) in &op.derive {
            let value = self.eval(work, expr)?;
            self.derived.insert(name.clone(), value);
        }
        Ok(())
    }

    /// Applies `op`'s effect steps to the working copies.
    pub(crate) fn apply(&self, work: &mut Workspace<'_>, op: &Operation) -> Result<(), Finding> {
        for step in &op.effects {
            self.apply_step(work, step)?;
        }
        Ok(())
    }

    fn holds(&self, work: &mut Workspace<'_>, step: &Step) -> Result<bool, Finding> {
        for (path, expected) in &step.when {
            let leaves = self.leaves(work, path)?;
            if leaves.is_empty() || leaves.iter().any(|l| &l.value != expected) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The places a path's root names: rows, with the JSON pointer of the member inside them.
    fn targets(&self, path: &Path) -> Result<Vec<(RowRef, Vec<String>)>, Finding> {
        let member_prefix = |m: &MemberRef| {
            let mut prefix = vec![m.path.clone()];
            prefix.push(m.position.map_or_else(|| m.id.clone(), |p| p.to_string()));
            (m.row.clone(), prefix)
        };
        let mut out = Vec::new();
        if path.root == "actor" {
            out.push((self.actor.clone().ok_or_else(|| Finding::refuse(ReasonCode::UnknownActor))?, Vec::new()));
        } else {
            match self.args.get(&path.root) {
                Some(Checked::Record(row)) => out.push((row.clone(), Vec::new())),
                Some(Checked::Records(rows)) => out.extend(rows.iter().map(|r| (r.clone(), Vec::new()))),
                Some(Checked::Member(m)) => out.push(member_prefix(m)),
                Some(Checked::Members(ms)) => out.extend(ms.iter().map(member_prefix)),
                Some(Checked::Absent) => {}
                _ => return Err(inapplicable(format!("`{}` is not a record or member", path.root))),
            }
        }
        Ok(out
            .into_iter()
            .map(|(row, mut prefix)| {
                prefix.extend(path.fields.iter().cloned());
                (row, prefix)
            })
            .collect())
    }

    fn apply_step(&self, work: &mut Workspace<'_>, step: &Step) -> Result<(), Finding> {
        if !self.holds(work, step)? {
            return Ok(());
        }
        match &step.change {
            Change::SetValue { path, value } => self.set(work, path, |_| Ok(value.clone())),
            Change::SetArg { path, arg } => {
                let value = self.args.get(arg).map_or(Value::Null, Checked::to_json);
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
                let currency = self.currency()?;
                self.set(work, path, |old| {
                    let Some(old @ Value::Number(_)) = old else {
                        return Err(inapplicable("the field added to is not a number".into()));
                    };
                    let sum = units(old, currency)?
                        .checked_add(delta)
                        .ok_or_else(|| inapplicable("the amount overflows".into()))?;
                    number(sum, currency)
                })
            }
            Change::AddEach { .. } => self.add_each(work, &step.change),
            Change::Append { path, entry } => self.append(work, path, entry),
            Change::Swap { members, with, fields } => self.swap(work, members, with, fields),
        }
    }

    /// `set` with `cel`: the value written as an amount where its type is money, else as JSON.
    #[inline(never)]
    fn set_computed(&self, work: &mut Workspace<'_>, path: &Path, value: &CelValue) -> Result<(), Finding> {
        let computed = self.cel(work, value)?;
        let source = value.expression.source();
        let json = match value.ty {
            Some(ValueType::Money) => match typed(&computed, ValueType::Money, source)? {
                Derived::Int(units) => number(units, self.currency()?)?,
                Derived::Json(v) => v,
            },
            Some(ty) => typed(&computed, ty, source)?.to_json(),
            None => {
                expr::to_json(&computed).map_err(|e| expression_failed(source, ReasonCode::ExpressionFailed, &e.0))?
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
        let targets = self.targets(into)?;
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
            for (row, prefix) in &targets {
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

    /// `append`: an entry built from values, arguments, amounts and derived quantities added to a list.
    fn append(&self, work: &mut Workspace<'_>, path: &Path, entry: &[(String, EntryValue)]) -> Result<(), Finding> {
        let mut object = serde_json::Map::new();
        for (name, source) in entry {
            let value = match source {
                EntryValue::Value(v) => v.clone(),
                EntryValue::Arg(arg) => self.args.get(arg).map_or(Value::Null, Checked::to_json),
                EntryValue::Money(expr) => match self.eval(work, expr)? {
                    Derived::Int(units) => number(units, self.currency()?)?,
                    Derived::Json(v) => return Err(inapplicable(format!("`{v}` is not an amount"))),
                },
                EntryValue::Derived(name) => self.derived.get(name).map_or(Value::Null, Derived::to_json),
            };
            object.insert(name.clone(), value);
        }
        let object = Value::Object(object);
        self.set(work, path, |old| match old {
            Some(Value::Array(items)) => {
                let mut items = items.clone();
                items.push(object.clone());
                Ok(Value::Array(items))
            }
            None | Some(Value::Null) => Ok(Value::Array(vec![object.clone()])),
            Some(_) => Err(inapplicable("appending to a field that is not a list".into())),
        })
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
        for (row, pointer) in self.targets(path)? {
            work.update(&row, &pointer, &make)?;
        }
        Ok(())
    }
}
