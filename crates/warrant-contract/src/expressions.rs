//! CEL in the contract: the named expressions of `[expressions]`, and the names a CEL
//! expression of an operation reads (its arguments, `actor`, the turn's `now`, `today` and
//! `time_zone`, the quantities derived before it, named expressions), checked when the
//! contract loads with every error at its line and column.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use toml::Spanned;

use crate::error::{ContractError, ContractErrorKind, Locator};
use crate::expr::{CompileError, ELEMENT, Expression, ROW, ROW_ROOT, ReadPath, Shape, Shapes};
use crate::records::Table;
use crate::schema::{Field, Kind};

/// Names every CEL expression may read besides an operation's own: the turn's instant (a
/// timestamp), its local date (`YYYY-MM-DD`) and its IANA time zone, the actor's row, and the
/// conversation's ledger (its committed effects), and the history of each row a `record`
/// argument names (its committed effects in every conversation), by argument.
pub const TURN_NAMES: [&str; 6] = ["now", "today", "time_zone", "actor", "ledger", "history"];

/// The `key` every row is given as CEL and Cedar see it.
static KEY: Field = Field { kind: Kind::Text, optional: false };

/// The type a CEL value is declared to have (`type`), checked when it is evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A CEL `int` that fits 64 bits.
    Integer,
    /// An `int` of minor units of the contract's currency.
    Money,
    /// A `bool`.
    Bool,
    /// A `string`.
    Text,
    /// A `timestamp` (or a string holding an RFC 3339 instant): written as RFC 3339, a Cedar
    /// `datetime` in the policy's context.
    Instant,
}

impl ValueType {
    fn parse(text: &str) -> Option<ValueType> {
        Some(match text {
            "integer" => ValueType::Integer,
            "money" => ValueType::Money,
            "bool" => ValueType::Bool,
            "text" => ValueType::Text,
            "instant" => ValueType::Instant,
            _ => return None,
        })
    }

    /// The name a contract writes.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Integer => "integer",
            ValueType::Money => "money",
            ValueType::Bool => "bool",
            ValueType::Text => "text",
            ValueType::Instant => "instant",
        }
    }
}

/// A CEL expression of an operation, with its declared type and the named expressions it
/// needs, in the order they are evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelValue {
    /// The compiled expression.
    pub expression: Expression,
    /// Its declared type; `None` where any value may be written as JSON.
    pub ty: Option<ValueType>,
    /// The named expressions it reads, directly or through one another, dependencies first.
    pub named: Vec<String>,
}

/// One named expression of `[expressions]`.
#[derive(Debug, Clone)]
pub struct Named {
    /// Its name.
    pub name: String,
    /// Its expression.
    pub expression: Expression,
    /// Where its text starts in the contract, to place errors found later.
    place: Place,
}

/// The `[expressions]` section, in dependency order (each after those it reads).
#[derive(Debug, Clone, Default)]
pub struct NamedExpressions {
    entries: Vec<Named>,
}

impl NamedExpressions {
    /// The named expression `name`.
    pub fn get(&self, name: &str) -> Option<&Named> {
        self.entries.iter().find(|n| n.name == name)
    }

    /// Every named expression, dependencies first.
    pub fn iter(&self) -> impl Iterator<Item = &Named> {
        self.entries.iter()
    }
}

/// Where an expression's text sits in the contract: its string's span, and whether the text
/// is written there as is (no escapes), so that an offset inside it is exact.
#[derive(Debug, Clone)]
struct Place {
    span: Range<usize>,
    body: Option<usize>,
}

impl Place {
    fn new(at: &Locator<'_>, span: Range<usize>, source: &str) -> Place {
        let token = at.text.get(span.clone()).unwrap_or_default();
        let (open, rest) = if token.starts_with("\"\"\"") || token.starts_with("'''") {
            let after = token.get(3..).unwrap_or_default();
            let newline = if after.starts_with("\r\n") { 2 } else { usize::from(after.starts_with('\n')) };
            (3 + newline, after.get(newline..).unwrap_or_default())
        } else {
            (1, token.get(1..).unwrap_or_default())
        };
        let body = rest.starts_with(source).then_some(span.start + open);
        Place { span, body }
    }

    /// The contract offset of `offset` in the expression's text: exact where the text is
    /// written as is, else the string's start.
    fn offset(&self, offset: usize) -> usize {
        self.body.map_or(self.span.start, |start| start + offset)
    }
}

fn bad(at: &Locator<'_>, offset: usize, op: &str, message: String) -> ContractError {
    at.error(offset, ContractErrorKind::BadOperation { op: op.to_owned(), message })
}

fn bad_named(at: &Locator<'_>, offset: usize, name: &str, message: &str) -> ContractError {
    at.error(offset, ContractErrorKind::Syntax(format!("expression `{name}`: {message}")))
}

/// Compiles `[expressions]`: each name an identifier that is no turn name, each expression
/// compiled, and no expression reading itself through others.
pub(crate) fn compile_named(
    at: &Locator<'_>,
    raw: &BTreeMap<String, Spanned<String>>,
) -> Result<NamedExpressions, ContractError> {
    let mut compiled: BTreeMap<&str, Named> = BTreeMap::new();
    for (name, text) in raw {
        let place = Place::new(at, text.span(), text.get_ref());
        if !crate::source::is_identifier(name) || TURN_NAMES.contains(&name.as_str()) {
            return Err(at.error(text.span().start, ContractErrorKind::BadName(crate::text::visible(name))));
        }
        let expression =
            Expression::compile(text.get_ref()).map_err(|e| bad_named(at, place.offset(e.offset), name, &e.message))?;
        compiled.insert(name, Named { name: name.clone(), expression, place });
    }
    // Depth-first, dependencies first; a name met again while still open is a cycle.
    let mut order: Vec<&str> = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    for name in compiled.keys() {
        visit(at, &compiled, name, &mut open, &mut order)?;
    }
    let entries = order.into_iter().filter_map(|n| compiled.get(n).cloned()).collect();
    Ok(NamedExpressions { entries })
}

fn visit<'n>(
    at: &Locator<'_>,
    compiled: &'n BTreeMap<&'n str, Named>,
    name: &'n str,
    open: &mut Vec<&'n str>,
    order: &mut Vec<&'n str>,
) -> Result<(), ContractError> {
    if order.contains(&name) {
        return Ok(());
    }
    let Some(named) = compiled.get(name) else { return Ok(()) };
    open.push(name);
    for used in named.expression.names() {
        let Some((&dependency, _)) = compiled.get_key_value(used.name.as_str()) else { continue };
        if let Some(start) = open.iter().position(|n| *n == dependency) {
            let mut cycle: Vec<&str> = open.get(start..).unwrap_or_default().to_vec();
            cycle.push(dependency);
            return Err(bad_named(
                at,
                named.place.offset(used.offset),
                name,
                &format!("the expressions read one another in a cycle: {}", cycle.join(" → ")),
            ));
        }
        visit(at, compiled, dependency, open, order)?;
    }
    open.pop();
    order.push(name);
    Ok(())
}

/// After the operations compile: every name a named expression reads is a turn name, another
/// named expression or an argument of some operation (`args`), and no named expression shares
/// a name with an argument or a derived quantity (`taken`), which would be ambiguous where both
/// are bound.
pub(crate) fn check_named(
    at: &Locator<'_>,
    named: &NamedExpressions,
    args: &BTreeSet<&str>,
    taken: &BTreeSet<&str>,
) -> Result<(), ContractError> {
    for n in named.iter() {
        for used in n.expression.names() {
            let name = used.name.as_str();
            if !(TURN_NAMES.contains(&name) || named.get(name).is_some() || args.contains(name)) {
                let message = format!(
                    "`{name}` is not a name: no operation has that argument, and it is no named expression nor one \
                     of `now`, `today`, `time_zone`, `actor`, `ledger`, `history`"
                );
                return Err(bad_named(at, n.place.offset(used.offset), &n.name, &message));
            }
        }
        if taken.contains(n.name.as_str()) {
            let message = "an argument or a derived quantity has the same name";
            return Err(bad_named(at, n.place.span.start, &n.name, message));
        }
    }
    Ok(())
}

/// What a name an operation binds holds, as far as the contract says.
#[derive(Debug, Clone)]
pub(crate) enum Root {
    /// A row of the table (a record argument).
    Row(String),
    /// A list of rows of the table (a records argument).
    Rows(String),
    /// An element of a collection inside a row (a member argument).
    Element,
    /// A list of such elements (a members argument).
    Elements,
    /// A number, string or boolean (other arguments, quantities).
    Scalar,
    /// Anything (a value taken as is).
    Unknown,
}

/// What an operation's CEL expression can read: the names the operation binds (arguments,
/// quantities derived before it), the turn's names and the named expressions.
pub(crate) struct OpShapes<'a> {
    /// The operation, for messages.
    pub(crate) op: &'a str,
    /// The operation's arguments.
    pub(crate) args: BTreeMap<String, Root>,
    /// The quantities derived before the expression.
    pub(crate) derived: BTreeMap<String, Root>,
    pub(crate) tables: &'a [Table],
    pub(crate) named: &'a NamedExpressions,
    pub(crate) has_actor: bool,
    /// The actor's table, which `actor` is a row of.
    pub(crate) actor: Option<&'a str>,
}

/// The field `fields` reach below a row of `table` (as CEL sees it: its declared fields and
/// `key`; a list stepped through by a field's name, and entered by [`ELEMENT`]; any key of a
/// map). `Ok(None)`: nothing is known (an untyped table). `Err`: the index of the first field
/// that cannot be there, and why, naming the fields there are.
fn row_field<'t>(table: &'t Table, root: &str, fields: &[String]) -> Result<Option<&'t Field>, (usize, String)> {
    let Some(mut current) = table.schema.as_ref() else { return Ok(None) };
    let mut path = root.to_owned();
    for (i, name) in fields.iter().enumerate() {
        if name == ELEMENT {
            match &current.kind {
                Kind::List(of) => current = of,
                _ => return Ok(None),
            }
            continue;
        }
        let here = crate::schema::through_lists(current);
        current = match &here.kind {
            Kind::Object(declared) => match declared.get(name) {
                Some(field) => field,
                None if i == 0 && name == "key" => &KEY,
                None => {
                    let mut known: Vec<&str> = declared.keys().map(String::as_str).collect();
                    if i == 0 {
                        known.push("key");
                        known.sort_unstable();
                    }
                    let shown = crate::text::visible(name);
                    return Err((i, format!("`{path}` has no field `{shown}` (its fields: {})", known.join(", "))));
                }
            },
            Kind::Map(of) => of,
            other => {
                let shown = crate::text::visible(name);
                return Err((i, format!("`{path}` is {} and has no field `{shown}`", other.name())));
            }
        };
        path = format!("{path}.{name}");
    }
    Ok(Some(current))
}

/// What is known of a value of `field`.
fn field_shape(field: &Field) -> Shape {
    match field.kind {
        Kind::List(_) => Shape::List,
        Kind::Object(_) | Kind::Map(_) => Shape::Map,
        _ => Shape::Scalar,
    }
}

impl OpShapes<'_> {
    fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The table whose rows `root` holds (one or a list), and how it is written in messages.
    fn rows_of(&self, root: &str) -> Option<(&Table, String)> {
        if let Some(table) = root.strip_prefix(ROW_ROOT) {
            return self.table(table).map(|t| (t, format!("{ROW}('{table}', …)")));
        }
        let table = match self.args.get(root).or_else(|| self.derived.get(root)) {
            Some(Root::Row(t) | Root::Rows(t)) => t.as_str(),
            Some(_) => return None,
            None if root == "actor" => self.actor?,
            None => return None,
        };
        self.table(table).map(|t| (t, root.to_owned()))
    }

    /// The declared field `fields` reach below `root`, if it holds rows of a typed table.
    fn declared(&self, root: &str, fields: &[String]) -> Result<Option<&Field>, (usize, String)> {
        match self.rows_of(root) {
            Some((table, shown)) => row_field(table, &shown, fields),
            None => Ok(None),
        }
    }
}

impl Shapes for OpShapes<'_> {
    fn shape(&self, root: &str, fields: &[String]) -> Shape {
        let typed = |fields: &[String]| match self.declared(root, fields) {
            Ok(Some(field)) => field_shape(field),
            _ => Shape::Unknown,
        };
        if root.starts_with(ROW_ROOT) {
            return match (self.table(root.trim_start_matches(ROW_ROOT)), fields.is_empty()) {
                (None, _) => Shape::Unbound,
                (Some(_), true) => Shape::Map,
                (Some(_), false) => typed(fields),
            };
        }
        if let Some(bound) = self.args.get(root).or_else(|| self.derived.get(root)) {
            return match (bound, fields) {
                (Root::Row(_) | Root::Element, []) => Shape::Map,
                (Root::Rows(_) | Root::Elements, []) => Shape::List,
                // An element of a list of rows is a row.
                (Root::Rows(_), [first]) if first == ELEMENT => Shape::Map,
                (Root::Rows(_), [first, rest @ ..]) if first == ELEMENT => typed(rest),
                (Root::Row(_) | Root::Rows(_), _) => typed(fields),
                (Root::Scalar, []) => Shape::Scalar,
                _ => Shape::Unknown,
            };
        }
        match root {
            "actor" if self.has_actor && fields.is_empty() => Shape::Map,
            "actor" if self.has_actor => typed(fields),
            "now" | "today" | "time_zone" => Shape::Scalar,
            "ledger" if fields.is_empty() => Shape::List,
            "ledger" => Shape::Unknown,
            "history" if fields.is_empty() => Shape::Map,
            "history" if fields.len() == 1 => Shape::List,
            "history" => Shape::Unknown,
            _ if self.named.get(root).is_some() => Shape::Unknown,
            _ => Shape::Unbound,
        }
    }

    fn field_error(&self, root: &str, fields: &[String]) -> Option<(usize, String)> {
        self.declared(root, fields).err()
    }

    fn row_error(&self, table: &str, key: Option<&ReadPath>) -> Option<String> {
        if self.table(table).is_none() {
            let known: Vec<&str> = self.tables.iter().map(|t| t.name.as_str()).collect();
            let shown = crate::text::visible(table);
            return Some(format!("`{ROW}('{shown}', …)`: no table is named `{shown}` (tables: {})", known.join(", ")));
        }
        let key = key?;
        let field = self.declared(&key.root, &key.fields).ok().flatten()?;
        let shown = std::iter::once(key.root.as_str()).chain(key.fields.iter().map(String::as_str)).collect::<Vec<_>>();
        let shown = shown.join(".");
        match &crate::schema::through_lists(field).kind {
            Kind::Ref(other) if other != table => {
                Some(format!("`{ROW}('{table}', {shown})`: `{shown}` refers to a row of `{other}`, not of `{table}`"))
            }
            Kind::Ref(_) | Kind::Text | Kind::Enum(_) => None,
            other => Some(format!("`{ROW}('{table}', {shown})`: `{shown}` is {}, not a row's key", other.name())),
        }
    }
}

/// A CEL value's `type`, as written.
pub(crate) fn value_type(text: &str) -> Result<ValueType, String> {
    ValueType::parse(text).ok_or_else(|| {
        format!("`type = \"{}\"` is not one of integer, money, bool, text, instant", crate::text::visible(text))
    })
}

/// Compiles a CEL expression of operation `shapes.op` written at `span` of the contract.
pub(crate) fn compile_value(
    at: &Locator<'_>,
    text: &Spanned<String>,
    ty: Option<ValueType>,
    shapes: &OpShapes<'_>,
) -> Result<CelValue, ContractError> {
    let op = shapes.op;
    let place = Place::new(at, text.span(), text.get_ref());
    let located = |e: CompileError| bad(at, place.offset(e.offset), op, e.message);
    let expression = Expression::compile(text.get_ref()).map_err(located)?;
    for turn_name in TURN_NAMES {
        if shapes.args.contains_key(turn_name) || shapes.derived.contains_key(turn_name) {
            let message = format!("`{turn_name}` names the turn's value in CEL; rename the argument or quantity");
            return Err(bad(at, place.span.start, op, message));
        }
    }
    expression.check(shapes).map_err(located)?;
    // The named expressions it needs, through one another, in dependency order.
    let mut needed: BTreeSet<&str> = BTreeSet::new();
    let mut pending: Vec<&str> = expression.names().iter().map(|n| n.name.as_str()).collect();
    while let Some(name) = pending.pop() {
        if let Some(named) = shapes.named.get(name)
            && needed.insert(&named.name)
        {
            pending.extend(named.expression.names().iter().map(|n| n.name.as_str()));
        }
    }
    // A named expression reads no derived quantity: it means the same wherever it is used.
    let plain = OpShapes {
        op,
        args: shapes.args.clone(),
        derived: BTreeMap::new(),
        tables: shapes.tables,
        named: shapes.named,
        has_actor: shapes.has_actor,
        actor: shapes.actor,
    };
    let mut named = Vec::new();
    for n in shapes.named.iter().filter(|n| needed.contains(n.name.as_str())) {
        n.expression.check(&plain).map_err(|e| {
            let message = format!("expression `{}` as operation `{op}` reads it: {}", n.name, e.message);
            at.error(n.place.offset(e.offset), ContractErrorKind::Syntax(message))
        })?;
        named.push(n.name.clone());
    }
    Ok(CelValue { expression, ty, named })
}
