//! Operations as the contract declares them: typed arguments, who may propose them, whether they
//! need a confirmation, the quantities code derives for policy, and the record changes a
//! committed effect makes. Everything here is checked when the contract loads, so a turn never
//! meets an argument kind, a path or a table that does not exist.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::check::ModelTask;
use crate::confirm::ConfirmCopy;
use crate::error::{ContractError, ContractErrorKind, Locator};
use crate::expressions::{self, CelValue, NamedExpressions, OpShapes, Root, ValueType};
use crate::records::{Table, TableSource};
use crate::schema::{self, Field, Kind};
use crate::source::{self, KindSet, SourceKinds};
use crate::sure_fit::{self, SureFit};

/// A declared operation.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The operation's name (for the retail example, the benchmark's tool name).
    pub name: String,
    /// Source kinds that may propose it.
    pub from: KindSet,
    /// Whether it needs the user's confirmation before it commits.
    pub consequential: bool,
    /// The copy a held act is put to the user with (`confirm`), its placeholders the act's
    /// exact argument values; only a consequential operation has one.
    pub confirm: Option<ConfirmCopy>,
    /// The argument whose record is the Cedar resource; `None` means the actor's record.
    pub resource: Option<String>,
    /// Arguments in declaration order.
    pub args: Vec<Arg>,
    /// Quantities derived by code for policy and effects, in declaration order.
    pub derive: Vec<(String, Expr)>,
    /// What a committed effect changes, in order.
    pub effects: Vec<Step>,
    /// The keys its effects mint (`[operation.keys.NAME]`), in name order.
    pub keys: Vec<MintedKey>,
    /// For a consequential operation, what the contract shows of whether its effect leaves its
    /// rows fitting their tables (`None`: the effect is tried before the act is held).
    pub sure_fit: Option<SureFit>,
}

/// A key an operation's effect mints from the turn (`[operation.keys.NAME]`): the same turn
/// and act always mint the same key, so a replay and a turn sent again agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintedKey {
    /// The name effect steps use it by: in CEL a string, in a path a `[NAME]` segment.
    pub name: String,
    /// Written before the minted characters.
    pub prefix: String,
    /// How many characters are minted after the prefix.
    pub length: usize,
    /// The characters minted from.
    pub alphabet: Vec<char>,
}

/// The characters a key is minted from unless the contract lists others.
pub const MINT_ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

impl Operation {
    /// The declared argument `name`.
    pub fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|a| a.name == name)
    }
}

/// A declared argument.
#[derive(Debug, Clone)]
pub struct Arg {
    /// Its name in the act's `args`.
    pub name: String,
    /// Its kind.
    pub kind: ArgKind,
    /// Whether the act may leave it out.
    pub optional: bool,
    /// Semantic checks (model tasks, `crate::check::ARG_CHECKS`) the value must pass once its
    /// structure is checked; each can only take away.
    pub checks: Vec<ModelTask>,
    /// Whether a `money` value may also be a bare JSON number (read exactly in the contract's
    /// currency, as a row's amounts are) and a `date` a bare `YYYY-MM-DD` string (`plain`).
    pub plain: bool,
    /// A field of a row the value must equal (`equals = "RECORD.FIELD"`): a value a model
    /// commonly adds beside a record it names, accepted because it is declared and then held
    /// to the row.
    pub equals: Option<Equals>,
}

/// `equals = "RECORD.FIELD"`: the value must be the one the row named by `RECORD` holds in its
/// field `FIELD`. `RECORD` is a `record` argument of the operation or, for a field of an
/// `objects` argument, a `record` field of the same element. Values are compared as values
/// (strings exactly, numbers by value), which is why `text`, the user's words, takes no `equals`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Equals {
    /// The `record` argument or field whose row is compared.
    pub record: String,
    /// The field of that row.
    pub field: String,
}

/// The kinds of argument that take `equals`: values compared as values, never words.
const EQUALS_KINDS: [&str; 5] = ["string", "enum", "integer", "bool", "date"];

/// The kinds of argument (docs/design.md §5).
#[derive(Debug, Clone)]
pub enum ArgKind {
    /// An id from a closed set.
    Enum {
        /// The ids the value may be; anything else is refused.
        values: Vec<String>,
        /// Whether the user must have said it: the value then carries a pointer to the words
        /// they said it with (`{"value","entry","ptr","copy"}`), and `value_stated` checks them
        /// (`value_classified` where the argument declares it).
        evidence: bool,
    },
    /// A row of a table, by key (optionally with the revision the model saw).
    Record {
        /// The table the row must be in, and visible to the actor.
        table: String,
    },
    /// Rows of a table; with `pairs_with`, one per element of that list argument, and with
    /// `same`, each row's field equal to its pair's.
    Records {
        /// The table every row must be in, and visible to the actor.
        table: String,
        /// The list argument this one pairs with, element by element; lengths must be equal.
        pairs_with: Option<String>,
        /// A field each row must hold with the same value as its pair's row.
        same: Option<String>,
        /// Fields every row must hold with exactly these values.
        require: BTreeMap<String, Value>,
    },
    /// A member of a collection inside the actor's or another argument's record: the keys of an
    /// object field, or the `key` field of the elements of a list field.
    Member {
        /// `actor`, or the record argument whose row holds the collection.
        of: String,
        /// The field path of the collection in that row.
        path: String,
        /// For a list, the field of each element that is its id; `None` for an object's keys.
        key: Option<String>,
    },
    /// Several members, counted with repeats (an id may be named as often as it occurs).
    Members {
        /// `actor`, or the record argument whose row holds the collection.
        of: String,
        /// The field path of the collection in that row.
        path: String,
        /// For a list, the field of each element that is its id; `None` for an object's keys.
        key: Option<String>,
    },
    /// Words of a user entry (the latest one unless the pointer names another), by pointer.
    Text {
        /// Whether a pointer to no words is accepted; otherwise it is refused.
        allow_empty: bool,
    },
    /// Text the model composes (a search query, a note): checked by its schema alone and never
    /// taken for the user's words, so it carries no pointer and faces no `value_stated`.
    String {
        /// The most characters (Unicode scalar values) it may have.
        max_length: Option<u32>,
        /// A regular expression the whole value must match.
        pattern: Option<StringPattern>,
        /// The values it may be, when the contract lists them.
        values: Option<Vec<String>>,
    },
    /// A DateExpr, evaluated with the turn's clock.
    Date,
    /// A Money value.
    Money,
    /// An integer within bounds.
    Integer {
        /// The least value accepted.
        min: i64,
        /// The greatest value accepted.
        max: i64,
    },
    /// A boolean.
    Bool,
    /// A list of closed objects, each field of its own kind (no `records`, `members` or
    /// `objects` field), checked element by element.
    Objects {
        /// The fields of every element, in name order.
        fields: Vec<Arg>,
        /// The fewest elements accepted.
        min_items: u32,
        /// The most elements accepted, when bounded.
        max_items: Option<u32>,
    },
}

impl ArgKind {
    /// Whether a value of this kind is, or carries, a pointer into the user's words.
    pub fn takes_pointer(&self) -> bool {
        matches!(self, ArgKind::Text { .. } | ArgKind::Enum { evidence: true, .. })
    }
}

/// A `string` argument's `pattern`: a regular expression (the `regex` crate's syntax, which
/// runs in time linear in the value) that the whole value must match, compiled when the
/// contract loads.
#[derive(Debug, Clone)]
pub struct StringPattern {
    /// The pattern as the contract writes it.
    pub source: String,
    /// It compiled, anchored at both ends.
    regex: regex::Regex,
}

impl StringPattern {
    /// The most memory a compiled pattern may take, so that no contract makes a turn slow.
    const SIZE_LIMIT: usize = 1 << 20;

    /// Compiles `source`, anchored so that it must match the whole value; the error is one line.
    pub fn compile(source: &str) -> Result<StringPattern, String> {
        let regex = regex::RegexBuilder::new(&format!(r"\A(?:{source})\z"))
            .size_limit(Self::SIZE_LIMIT)
            .build()
            .map_err(|e| {
                let reason = e.to_string();
                let last = reason.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or_default().to_owned();
                format!(
                    "`pattern` `{}` does not compile: {}",
                    crate::text::visible(source),
                    last.trim_start_matches("error: ")
                )
            })?;
        Ok(StringPattern { source: source.to_owned(), regex })
    }

    /// Whether the whole of `value` matches.
    pub fn matches(&self, value: &str) -> bool {
        self.regex.is_match(value)
    }
}

/// The `values` of an `enum` or `string` argument: when listed, not empty and without repeats.
fn string_values(name: &str, raw: &RawArg) -> Result<Option<Vec<String>>, String> {
    let Some(values) = &raw.values else { return Ok(None) };
    if values.is_empty() {
        return Err(format!("argument `{name}`: `values`, when given, lists at least one value"));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = values.iter().find(|v| !seen.insert(*v)) {
        return Err(format!("argument `{name}`: value `{}` is listed twice", crate::text::visible(twice)));
    }
    Ok(Some(values.clone()))
}

/// A derived quantity: integer arithmetic over money (in minor units) and counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// The one value at a path.
    Value(Path),
    /// The sum of every value a path reaches.
    Sum(Path),
    /// How many values a path reaches.
    Count(Path),
    /// The first value a path reaches (any JSON value; compared in policy).
    First(Path),
    /// A previously derived quantity.
    Derived(String),
    /// A literal integer (minor units where money).
    Literal(i64),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a - b`.
    Sub(Box<Expr>, Box<Expr>),
    /// `-a`.
    Neg(Box<Expr>),
    /// A CEL expression (`cel = "…"`, with its `type`).
    Cel(Box<CelValue>),
}

/// A path into the records an act touches: a root (an argument or `actor`) and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// `actor`, or the name of a record, records, member or members argument.
    pub root: String,
    /// Field names below the root; lists are stepped through element by element. A keyed
    /// segment (`[item.payment_id]`) holds its text here, and its key in `keys`.
    pub fields: Vec<String>,
    /// The keyed segments, by their position in `fields`: a map's entry named by a value.
    pub keys: BTreeMap<usize, KeyRef>,
}

/// Where the key of a keyed path segment, or of a created row, comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRef {
    /// An argument's checked value: its text, a record's key, a member's id.
    Arg(String),
    /// The element of the step's `each` (`[item]`), or one of its fields (`[item.FIELD]`).
    Item(Option<String>),
    /// A key the operation mints (`[operation.keys.NAME]`).
    Minted(String),
}

/// What a step with `each` runs once per element of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Each {
    /// An `objects`, `records` or `members` argument.
    Arg(String),
    /// A list in a row, read before the step runs.
    List(Path),
}

/// The name a step's element is bound to, in CEL and as a path root.
pub const ITEM: &str = "item";

/// One change a committed effect makes.
#[derive(Debug, Clone)]
pub struct Step {
    /// The change.
    pub change: Change,
    /// Conditions (path = literal) that must all hold for the change to apply.
    pub when: Vec<(Path, Value)>,
    /// Paths that must reach a value that is not `null` (`when_present`).
    pub present: Vec<Path>,
    /// Paths that must reach no value but `null` (`when_absent`).
    pub absent: Vec<Path>,
    /// A CEL condition that must hold (`if`).
    pub condition: Option<Box<CelValue>>,
    /// Runs the step once per element, bound to `item`.
    pub each: Option<Each>,
}

impl Step {
    /// A step with `when` conditions only, run once.
    fn new(change: Change, when: Vec<(Path, Value)>) -> Step {
        Step { change, when, present: Vec::new(), absent: Vec::new(), condition: None, each: None }
    }
}

/// The value of a row an effect creates.
#[derive(Debug, Clone)]
pub enum NewRow {
    /// A CEL map; its integers at money fields are minor units, written as amounts.
    Cel(Box<CelValue>),
    /// Fields from literals, arguments, amounts and derived quantities, as an appended entry's.
    Entry(Vec<(String, EntryValue)>),
}

/// A value appended to a list.
#[derive(Debug, Clone)]
pub enum Appended {
    /// A literal.
    Value(Value),
    /// An argument's checked value.
    Arg(String),
    /// What a CEL expression computes (integers at money fields written as amounts).
    Cel(Box<CelValue>),
}

/// The kinds of change.
#[derive(Debug, Clone)]
pub enum Change {
    /// Sets the field at `path` to a literal.
    SetValue {
        /// The field changed.
        path: Path,
        /// The value written there.
        value: Value,
    },
    /// Sets the field at `path` to an argument's checked value.
    SetArg {
        /// The field changed.
        path: Path,
        /// The argument whose checked value is written there.
        arg: String,
    },
    /// Sets the field at `path` to an object of arguments' checked values.
    SetArgs {
        /// The field changed.
        path: Path,
        /// The arguments written there, each under its own name.
        args: Vec<String>,
    },
    /// Sets the field at `path` to what a CEL expression computes (`cel = "…"`): written as
    /// an amount where its `type` is money, else as the JSON of the value.
    SetComputed {
        /// The field changed.
        path: Path,
        /// The expression.
        value: Box<CelValue>,
    },
    /// Sets the field at `path` to a derived money quantity.
    SetMoney {
        /// The field changed.
        path: Path,
        /// The quantity, in minor units, written there as an amount.
        amount: Expr,
    },
    /// Adds a money quantity to the number at `path`.
    Add {
        /// The number changed.
        path: Path,
        /// The quantity added, in minor units (negative to take away).
        amount: Expr,
    },
    /// Replaces each member named by `members` with the row its pair in `with` names, copying
    /// `fields` from that row.
    Swap {
        /// The members argument naming the members replaced.
        members: String,
        /// The records argument naming, pair by pair, the rows they become.
        with: String,
        /// The fields copied from each new row into its member.
        fields: Vec<String>,
    },
    /// For each element of the list at `list` (those whose fields equal `when_element`): adds
    /// its money field `amount` to the `field` of the member of the object at `into` that its
    /// field `key` names (members whose fields equal `when_member` only). A cancellation
    /// refunds gift cards this way.
    AddEach {
        /// The list whose elements are added from.
        list: Path,
        /// The object whose members are added to.
        into: Path,
        /// The field of an element naming the member it is added to.
        key: String,
        /// The element's money field that is added.
        amount: String,
        /// The member's field that receives the amount.
        field: String,
        /// Field values an element must hold to be counted.
        when_element: Vec<(String, Value)>,
        /// Field values a member must hold to receive anything.
        when_member: Vec<(String, Value)>,
    },
    /// Creates a row of `table` under `key`, which no row may hold.
    Create {
        /// The table.
        table: String,
        /// Where the key comes from: an argument or a minted key.
        key: KeyRef,
        /// The name later steps reach the new row by (`as`), if any.
        name: Option<String>,
        /// The row's value.
        value: NewRow,
    },
    /// Deletes the row of a record argument, or of a row an earlier step created.
    Delete {
        /// The record argument or created row's name.
        row: String,
    },
    /// Removes the entry of a map that the path's last, keyed, segment names.
    Remove {
        /// The entry removed.
        path: Path,
    },
    /// Appends one value (a scalar, an object) to the list at `path`.
    AppendValue {
        /// The list appended to.
        path: Path,
        /// The value appended.
        value: Appended,
    },
    /// Adds what a CEL expression computes (`type` money or integer) to the number at `path`.
    AddComputed {
        /// The number changed.
        path: Path,
        /// The quantity added (minor units where money; negative to take away).
        value: Box<CelValue>,
    },
    /// Appends an entry to the list at `path`, each field from a literal, an argument or a
    /// derived quantity.
    Append {
        /// The list appended to.
        path: Path,
        /// The new entry's fields, in order, each with where its value comes from.
        entry: Vec<(String, EntryValue)>,
    },
}

/// Where a field of an appended entry comes from.
#[derive(Debug, Clone)]
pub enum EntryValue {
    /// A literal.
    Value(Value),
    /// An argument's checked value.
    Arg(String),
    /// A derived quantity, written as money.
    Money(Expr),
    /// A derived value, as is.
    Derived(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOperation {
    name: Spanned<String>,
    from: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    consequential: bool,
    confirm: Option<Spanned<String>>,
    resource: Option<Spanned<String>>,
    #[serde(default)]
    args: BTreeMap<String, Spanned<RawArg>>,
    #[serde(default)]
    derive: Vec<RawDerive>,
    #[serde(default)]
    effect: Vec<Spanned<RawStep>>,
    #[serde(default)]
    keys: BTreeMap<String, Spanned<RawKey>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    #[serde(default)]
    prefix: String,
    length: usize,
    alphabet: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDerive {
    name: Spanned<String>,
    expr: Option<Spanned<String>>,
    cel: Option<Spanned<String>>,
    #[serde(rename = "type")]
    ty: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArg {
    kind: String,
    #[serde(default)]
    optional: bool,
    values: Option<Vec<String>>,
    table: Option<String>,
    pairs_with: Option<String>,
    same: Option<String>,
    #[serde(default)]
    require: BTreeMap<String, toml::Value>,
    of: Option<String>,
    path: Option<String>,
    key: Option<String>,
    #[serde(default)]
    allow_empty: bool,
    max_length: Option<u32>,
    pattern: Option<Spanned<String>>,
    #[serde(default)]
    evidence: bool,
    min: Option<i64>,
    max: Option<i64>,
    #[serde(default)]
    check: Vec<String>,
    #[serde(default)]
    plain: bool,
    equals: Option<String>,
    #[serde(default)]
    fields: BTreeMap<String, RawArg>,
    min_items: Option<u32>,
    max_items: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntryValue {
    value: Option<toml::Value>,
    arg: Option<String>,
    money: Option<String>,
    derived: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    set: Option<String>,
    add: Option<String>,
    swap: Option<String>,
    add_each: Option<String>,
    append: Option<String>,
    into: Option<String>,
    key: Option<String>,
    field: Option<String>,
    #[serde(default)]
    when_element: BTreeMap<String, toml::Value>,
    #[serde(default)]
    when_member: BTreeMap<String, toml::Value>,
    #[serde(default)]
    entry: BTreeMap<String, RawEntryValue>,
    value: Option<toml::Value>,
    arg: Option<String>,
    args: Option<Vec<String>>,
    money: Option<String>,
    amount: Option<String>,
    with: Option<String>,
    fields: Option<Vec<String>>,
    #[serde(default)]
    when: BTreeMap<String, toml::Value>,
    cel: Option<Spanned<String>>,
    #[serde(rename = "type")]
    ty: Option<String>,
    create: Option<String>,
    #[serde(rename = "as")]
    name: Option<String>,
    delete: Option<String>,
    remove: Option<String>,
    each: Option<String>,
    #[serde(default)]
    when_present: Vec<String>,
    #[serde(default)]
    when_absent: Vec<String>,
    #[serde(rename = "if")]
    condition: Option<Spanned<String>>,
}

/// What compiling operations needs to know about the rest of the contract.
pub(crate) struct Scope<'a> {
    pub(crate) at: &'a Locator<'a>,
    pub(crate) kinds: &'a SourceKinds,
    pub(crate) tables: &'a [Table],
    pub(crate) has_actor: bool,
    /// The actor's table, which `actor.…` paths start in.
    pub(crate) actor: Option<&'a str>,
    /// Whether `[records] currency` is declared: a money argument is read in that currency.
    pub(crate) has_currency: bool,
    /// The named CEL expressions (`[expressions]`).
    pub(crate) named: &'a NamedExpressions,
}

/// The source kinds that may propose an operation: its `from`, or every kind.
fn operation_kinds(scope: &Scope<'_>, raw_op: &RawOperation) -> Result<KindSet, ContractError> {
    let at = |offset: usize, kind| scope.at.error(offset, kind);
    let name = raw_op.name.get_ref();
    let from = match &raw_op.from {
        None => KindSet::all(scope.kinds.len()),
        Some(list) => {
            let mut set = KindSet::EMPTY;
            for kind in list.get_ref() {
                let k = scope.kinds.get(kind.get_ref()).ok_or_else(|| {
                    at(
                        kind.span().start,
                        ContractErrorKind::UndeclaredOperationKind {
                            op: name.clone(),
                            kind: crate::text::visible(kind.get_ref()),
                        },
                    )
                })?;
                set.insert(k);
            }
            set
        }
    };
    Ok(from)
}

pub(crate) fn compile(scope: &Scope<'_>, raw: &[RawOperation]) -> Result<Vec<Operation>, ContractError> {
    let mut ops: Vec<Operation> = Vec::with_capacity(raw.len());
    for raw_op in raw {
        let at = |offset: usize, kind| scope.at.error(offset, kind);
        let name = raw_op.name.get_ref();
        let name_at = raw_op.name.span().start;
        if !source::is_identifier(name) {
            return Err(at(name_at, ContractErrorKind::BadName(crate::text::visible(name))));
        }
        if ops.iter().any(|o| o.name == *name) {
            return Err(at(name_at, ContractErrorKind::DuplicateOperation(name.clone())));
        }
        let from = operation_kinds(scope, raw_op)?;
        let args = compile_args(scope, raw_op)?;
        let confirm = compile_confirm(scope, raw_op, &args)?;
        let mut op = Operation {
            name: name.clone(),
            from,
            consequential: raw_op.consequential,
            confirm,
            resource: None,
            args,
            derive: Vec::new(),
            effects: Vec::new(),
            keys: compile_keys(scope, raw_op)?,
            sure_fit: None,
        };
        check_arg_references(scope, &op)
            .map_err(|message| at(name_at, ContractErrorKind::BadOperation { op: name.clone(), message }))?;
        for (arg_name, raw_arg) in &raw_op.args {
            check_arg_paths(scope, &op, arg_name).map_err(|message| {
                at(raw_arg.span().start, ContractErrorKind::BadOperation { op: name.clone(), message })
            })?;
        }
        op.resource = operation_resource(scope, raw_op, &op)?;
        for derive in &raw_op.derive {
            let expr = compile_derive(scope, &op, derive)?;
            let derive_name = derive.name.get_ref();
            if !source::is_identifier(derive_name) || op.derive.iter().any(|(n, _)| n == derive_name) {
                return Err(at(
                    derive.name.span().start,
                    ContractErrorKind::BadName(crate::text::visible(derive_name)),
                ));
            }
            op.derive.push((derive_name.clone(), expr));
        }
        let mut names = StepNames::default();
        for step in &raw_op.effect {
            let compiled = compile_effect(scope, &op, &mut names, step)?;
            op.effects.push(compiled);
        }
        if op.consequential {
            op.sure_fit = prove_sure_fit(scope, &op);
        }
        ops.push(op);
    }
    Ok(ops)
}

/// The confirmation copy (`confirm`): on a consequential operation only, each placeholder one
/// of its arguments; an error is placed at the copy.
fn compile_confirm(
    scope: &Scope<'_>,
    raw_op: &RawOperation,
    args: &[Arg],
) -> Result<Option<ConfirmCopy>, ContractError> {
    let Some(copy) = &raw_op.confirm else { return Ok(None) };
    let bad = |message: String| {
        let op = raw_op.name.get_ref().clone();
        scope.at.error(copy.span().start, ContractErrorKind::BadOperation { op, message })
    };
    if !raw_op.consequential {
        return Err(bad("`confirm` is the copy of a held act: it needs `consequential = true`".into()));
    }
    let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
    ConfirmCopy::parse(copy.get_ref(), &names).map(Some).map_err(bad)
}

/// A derived quantity: `expr` in the arithmetic of [`Expr`], or `cel` with its `type`.
fn compile_derive(scope: &Scope<'_>, op: &Operation, derive: &RawDerive) -> Result<Expr, ContractError> {
    let bad = |offset: usize, message: String| {
        scope.at.error(offset, ContractErrorKind::BadOperation { op: op.name.clone(), message })
    };
    match (&derive.expr, &derive.cel, &derive.ty) {
        (Some(expr), None, None) => parse_expr(expr.get_ref())
            .and_then(|e| check_expr(op, &e).map(|()| e))
            .and_then(|e| check_expr_paths(scope, op, &e).map(|()| e))
            .map_err(|message| bad(expr.span().start, message)),
        (None, Some(cel), Some(ty)) => {
            let ty = expressions::value_type(ty.get_ref()).map_err(|message| bad(ty.span().start, message))?;
            if ty == ValueType::Money && !scope.has_currency {
                return Err(bad(derive.name.span().start, "a money quantity needs `records.currency`".into()));
            }
            let value = expressions::compile_value(scope.at, cel, Some(ty), &op_shapes(scope, op))?;
            Ok(Expr::Cel(Box::new(value)))
        }
        _ => Err(bad(
            derive.name.span().start,
            format!("derived quantity `{}` needs `expr`, or `cel` with `type`", derive.name.get_ref()),
        )),
    }
}

/// The names a CEL expression of `op` reads: its arguments and the quantities derived so far.
fn op_shapes<'b>(scope: &'b Scope<'_>, op: &'b Operation) -> OpShapes<'b> {
    let args = op
        .args
        .iter()
        .map(|arg| {
            let root = match &arg.kind {
                ArgKind::Record { table } => Root::Row(table.clone()),
                ArgKind::Records { table, .. } => Root::Rows(table.clone()),
                ArgKind::Member { .. } => Root::Element,
                ArgKind::Members { .. } | ArgKind::Objects { .. } => Root::Elements,
                _ => Root::Scalar,
            };
            (arg.name.clone(), root)
        })
        .collect();
    let quantities = op
        .derive
        .iter()
        .map(|(name, expr)| (name.clone(), if matches!(expr, Expr::First(_)) { Root::Unknown } else { Root::Scalar }))
        .collect();
    OpShapes {
        op: &op.name,
        args,
        derived: quantities,
        tables: scope.tables,
        named: scope.named,
        has_actor: scope.has_actor,
        actor: scope.actor,
    }
}

/// `set = "path"` with `cel = "…"` (and optionally `type`, `when`): a computed value. An
/// error in the step's other fields is placed at the step, one in the expression inside it.
fn compile_cel_step(
    scope: &Scope<'_>,
    op: &Operation,
    names: &StepNames,
    step: &Spanned<RawStep>,
    cel: &Spanned<String>,
) -> Result<Step, ContractError> {
    let raw = step.get_ref();
    let bad = |message: String| {
        scope.at.error(step.span().start, ContractErrorKind::BadOperation { op: op.name.clone(), message })
    };
    let others = [&raw.add, &raw.swap, &raw.add_each, &raw.append, &raw.money, &raw.amount, &raw.arg, &raw.into];
    let more = [&raw.key, &raw.field, &raw.with];
    let alone = others.iter().chain(&more).all(|o| o.is_none())
        && (raw.value.is_none() && raw.args.is_none() && raw.fields.is_none())
        && (raw.entry.is_empty() && raw.when_element.is_empty() && raw.when_member.is_empty());
    let (Some(set), true) = (&raw.set, alone) else {
        return Err(bad("a `cel` effect step is `set = \"path\"` with `cel` (and optionally `type`, `when`)".into()));
    };
    let path = compile_path(op, names, set).map_err(bad)?;
    let when = compile_when(op, names, raw).map_err(bad)?;
    let ty = raw.ty.as_deref().map(expressions::value_type).transpose().map_err(bad)?;
    if ty == Some(ValueType::Money) && !scope.has_currency {
        return Err(bad("a money value needs `records.currency`".into()));
    }
    let value = expressions::compile_value(scope.at, cel, ty, &step_shapes(scope, op, names))?;
    Ok(Step::new(Change::SetComputed { path, value: Box::new(value) }, when))
}

/// The operation's arguments; an error is placed at the argument, or at its `pattern` when that
/// does not compile.
fn compile_args(scope: &Scope<'_>, raw_op: &RawOperation) -> Result<Vec<Arg>, ContractError> {
    let op = raw_op.name.get_ref();
    let bad =
        |offset: usize, message| scope.at.error(offset, ContractErrorKind::BadOperation { op: op.clone(), message });
    let mut args = Vec::with_capacity(raw_op.args.len());
    for (arg_name, raw_arg) in &raw_op.args {
        let mut arg = compile_arg(scope, op, arg_name, raw_arg.get_ref()).map_err(|m| bad(raw_arg.span().start, m))?;
        if let (ArgKind::String { pattern, .. }, Some(raw_pattern)) = (&mut arg.kind, &raw_arg.get_ref().pattern) {
            let compiled = StringPattern::compile(raw_pattern.get_ref())
                .map_err(|m| bad(raw_pattern.span().start, format!("argument `{arg_name}`: {m}")))?;
            *pattern = Some(compiled);
        }
        args.push(arg);
    }
    Ok(args)
}

/// Where in an effect step the path or dotted key a message names is written (`path `x.y``,
/// `key `x``): the first place in the step's text that spells it; else the step.
fn fault_offset(text: &str, span: &std::ops::Range<usize>, message: &str) -> usize {
    let named = |lead: &str| {
        let rest = &message[message.find(lead)? + lead.len()..];
        rest.split('`').next()
    };
    // The step's span may be its `[[operation.effect]]` header only: its text runs to the next
    // table header.
    let rest = text.get(span.start..).unwrap_or_default();
    let body_end = rest.match_indices("\n[").map(|(i, _)| i).find(|i| *i >= span.len()).unwrap_or(rest.len());
    let step = rest.get(..body_end.max(span.len())).unwrap_or(rest);
    // A path is written quoted; a dotted key bare, after a space, before its `.`.
    let found = match (named("path `"), named("key `")) {
        (Some(path), _) => step.find(&format!("\"{path}\"")),
        (None, Some(key)) => step.find(&format!(" {key}.")).map(|i| i + 1),
        (None, None) => None,
    };
    span.start + found.unwrap_or(0)
}

/// The record argument an operation acts on (`resource`); without one, the actor.
fn operation_resource(
    scope: &Scope<'_>,
    raw_op: &RawOperation,
    op: &Operation,
) -> Result<Option<String>, ContractError> {
    let at = |offset: usize, kind| scope.at.error(offset, kind);
    let name = raw_op.name.get_ref();
    match &raw_op.resource {
        Some(resource) => match op.arg(resource.get_ref()).map(|a| &a.kind) {
            Some(ArgKind::Record { .. }) => Ok(Some(resource.get_ref().clone())),
            _ => Err(at(
                resource.span().start,
                ContractErrorKind::BadOperation {
                    op: name.clone(),
                    message: format!("`resource` must name a record argument, not `{}`", resource.get_ref()),
                },
            )),
        },
        None if !scope.has_actor => Err(at(
            raw_op.name.span().start,
            ContractErrorKind::BadOperation {
                op: name.clone(),
                message: "an operation without `resource` needs an `[actor]` table".into(),
            },
        )),
        None => Ok(None),
    }
}

fn table_exists(scope: &Scope<'_>, table: &str) -> Result<(), String> {
    if scope.tables.iter().any(|t| t.name == table) {
        Ok(())
    } else {
        Err(format!("table `{table}` is not declared in `[records]`"))
    }
}

/// The answers `value_classified` gives beside the ids, which an enum it checks cannot have.
pub const CLASSIFIED_OTHERWISE: [&str; 2] = ["none", "unsure"];

/// The semantic checks an argument declares: known ones, each on the kind it
/// judges (`value_stated` on `text`, `value_classified` on an `enum` with `evidence`).
fn arg_checks(op: &str, name: &str, raw: &RawArg, kind: &ArgKind) -> Result<Vec<ModelTask>, String> {
    let mut tasks = Vec::new();
    for check in &raw.check {
        let Some(task) = crate::check::named_in(crate::check::ARG_CHECKS, check) else {
            return Err(format!(
                "argument `{name}` of operation `{op}` names the unknown check `{}` ({})",
                crate::text::visible(check),
                crate::check::names(crate::check::ARG_CHECKS)
            ));
        };
        match (task, kind) {
            (ModelTask::ValueStated, ArgKind::Text { .. }) => {}
            (ModelTask::ValueStated, _) => {
                return Err(format!(
                    "argument `{name}` of operation `{op}`: check `{check}` applies to `text` arguments only"
                ));
            }
            (ModelTask::ValueClassified, ArgKind::Enum { values, evidence: true }) => {
                if let Some(taken) = values.iter().find(|v| CLASSIFIED_OTHERWISE.contains(&v.as_str())) {
                    return Err(format!(
                        "argument `{name}` of operation `{op}`: check `{check}` answers `none` or `unsure` beside the ids, so no id may be `{taken}`"
                    ));
                }
            }
            (_, _) => {
                return Err(format!(
                    "argument `{name}` of operation `{op}`: check `{check}` applies to `enum` arguments with `evidence = true` only"
                ));
            }
        }
        tasks.push(task);
    }
    Ok(tasks)
}

fn compile_arg(scope: &Scope<'_>, op: &str, name: &str, raw: &RawArg) -> Result<Arg, String> {
    if !source::is_identifier(name) {
        return Err(format!("argument `{}` is not a name", crate::text::visible(name)));
    }
    let need = |field: &Option<String>, what: &str| -> Result<String, String> {
        field.clone().ok_or_else(|| format!("argument `{name}` of kind `{}` needs `{what}`", raw.kind))
    };
    let kind = match raw.kind.as_str() {
        "enum" => {
            if raw.values.as_ref().is_none_or(Vec::is_empty) {
                return Err(format!("argument `{name}` of kind `enum` needs a non-empty `values` list"));
            }
            ArgKind::Enum { values: string_values(name, raw)?.unwrap_or_default(), evidence: raw.evidence }
        }
        "record" => {
            let table = need(&raw.table, "table")?;
            table_exists(scope, &table)?;
            ArgKind::Record { table }
        }
        "records" => {
            let table = need(&raw.table, "table")?;
            table_exists(scope, &table)?;
            let mut require = BTreeMap::new();
            for (field, value) in &raw.require {
                require.insert(field.clone(), toml_to_json(value)?);
            }
            if raw.same.is_some() && raw.pairs_with.is_none() {
                return Err(format!("argument `{name}`: `same` needs `pairs_with`"));
            }
            ArgKind::Records { table, pairs_with: raw.pairs_with.clone(), same: raw.same.clone(), require }
        }
        "member" | "members" => {
            let of = need(&raw.of, "of")?;
            let path = need(&raw.path, "path")?;
            if of == "actor" && !scope.has_actor {
                return Err(format!("argument `{name}` is a member of `actor`, but there is no `[actor]` table"));
            }
            if raw.kind == "member" {
                ArgKind::Member { of, path, key: raw.key.clone() }
            } else {
                ArgKind::Members { of, path, key: raw.key.clone() }
            }
        }
        "text" => ArgKind::Text { allow_empty: raw.allow_empty },
        // The pattern is compiled by the caller, which knows where it is written.
        "string" => ArgKind::String { max_length: raw.max_length, pattern: None, values: string_values(name, raw)? },
        "date" => ArgKind::Date,
        "money" if !scope.has_currency => {
            return Err(format!("argument `{name}` is money, which needs `records.currency`"));
        }
        "money" => ArgKind::Money,
        "integer" => {
            let (min, max) = (raw.min.unwrap_or(i64::MIN), raw.max.unwrap_or(i64::MAX));
            if min > max {
                return Err(format!("argument `{name}`: `min` is above `max`"));
            }
            ArgKind::Integer { min, max }
        }
        "bool" => ArgKind::Bool,
        "objects" => compile_objects(scope, op, name, raw)?,
        other => {
            return Err(format!(
                "argument `{name}` of operation `{op}` has the unknown kind `{}` (enum, record, records, member, members, text, string, date, money, integer, bool, objects)",
                crate::text::visible(other)
            ));
        }
    };
    options_fit_kind(name, raw)?;
    let checks = arg_checks(op, name, raw, &kind)?;
    let equals = raw.equals.as_deref().map(|e| compile_equals(name, e)).transpose()?;
    Ok(Arg { name: name.to_owned(), kind, optional: raw.optional, checks, plain: raw.plain, equals })
}

/// `equals = "RECORD.FIELD"`, as written; which record it names is checked with the operation's
/// other arguments (`check_equals`).
fn compile_equals(name: &str, text: &str) -> Result<Equals, String> {
    match text.split_once('.') {
        Some((record, field)) if source::is_identifier(record) && source::is_identifier(field) => {
            Ok(Equals { record: record.to_owned(), field: field.to_owned() })
        }
        _ => Err(format!(
            "argument `{name}`: `equals` is `RECORD.FIELD` (a record argument or field, and a field of its row), not `{}`",
            crate::text::visible(text)
        )),
    }
}

/// Refuses options written on an argument whose kind does not take them.
fn options_fit_kind(name: &str, raw: &RawArg) -> Result<(), String> {
    if raw.evidence && raw.kind != "enum" {
        return Err(format!("argument `{name}`: `evidence` applies to `enum` arguments only"));
    }
    if raw.kind != "string" && (raw.max_length.is_some() || raw.pattern.is_some()) {
        return Err(format!("argument `{name}`: `max_length` and `pattern` apply to `string` arguments only"));
    }
    if raw.equals.is_some() && !EQUALS_KINDS.contains(&raw.kind.as_str()) {
        return Err(format!(
            "argument `{name}`: `equals` applies to {} arguments only (it compares values, never the user's words)",
            EQUALS_KINDS.map(|k| format!("`{k}`")).join(", ")
        ));
    }
    if raw.plain && raw.kind != "money" && raw.kind != "date" {
        return Err(format!("argument `{name}`: `plain` applies to `money` and `date` arguments only"));
    }
    if raw.kind != "objects" && (!raw.fields.is_empty() || raw.min_items.is_some() || raw.max_items.is_some()) {
        return Err(format!(
            "argument `{name}`: `fields`, `min_items` and `max_items` apply to `objects` arguments only"
        ));
    }
    Ok(())
}

/// The kinds an `objects` argument's field may not have: a field holds one value.
const NOT_A_FIELD: [&str; 3] = ["records", "members", "objects"];

/// An `objects` argument: its fields (each compiled as an argument is, its `pattern` too), and
/// its bounds on the number of elements (at least one unless `min_items` says otherwise).
fn compile_objects(scope: &Scope<'_>, op: &str, name: &str, raw: &RawArg) -> Result<ArgKind, String> {
    if raw.fields.is_empty() {
        return Err(format!("argument `{name}` of kind `objects` needs `fields`"));
    }
    let mut fields = Vec::with_capacity(raw.fields.len());
    for (field_name, raw_field) in &raw.fields {
        let at = format!("argument `{name}`, field `{}`", crate::text::visible(field_name));
        if NOT_A_FIELD.contains(&raw_field.kind.as_str()) {
            return Err(format!("{at}: a field cannot be of kind `{}` (a field holds one value)", raw_field.kind));
        }
        let mut field = compile_arg(scope, op, field_name, raw_field).map_err(|m| format!("{at}: {m}"))?;
        if let (ArgKind::String { pattern, .. }, Some(raw_pattern)) = (&mut field.kind, &raw_field.pattern) {
            *pattern = Some(StringPattern::compile(raw_pattern.get_ref()).map_err(|m| format!("{at}: {m}"))?);
        }
        fields.push(field);
    }
    let min_items = raw.min_items.unwrap_or(1);
    if raw.max_items.is_some_and(|most| most < min_items) {
        return Err(format!("argument `{name}`: `max_items` is below `min_items`"));
    }
    Ok(ArgKind::Objects { fields, min_items, max_items: raw.max_items })
}

/// Checks that `of` and `pairs_with` name arguments of the right kind, in the fields of an
/// `objects` argument too.
fn check_arg_references(_scope: &Scope<'_>, op: &Operation) -> Result<(), String> {
    let object_fields = op.args.iter().flat_map(|a| match &a.kind {
        ArgKind::Objects { fields, .. } => fields.iter().collect(),
        _ => Vec::new(),
    });
    for arg in op.args.iter().chain(object_fields) {
        match &arg.kind {
            ArgKind::Member { of, .. } | ArgKind::Members { of, .. }
                if of != "actor" && !matches!(op.arg(of).map(|a| &a.kind), Some(ArgKind::Record { .. })) =>
            {
                return Err(format!("argument `{}`: `of` must be `actor` or a record argument, not `{of}`", arg.name));
            }
            ArgKind::Records { pairs_with: Some(pair), .. }
                if !matches!(
                    op.arg(pair).map(|a| &a.kind),
                    Some(ArgKind::Members { .. } | ArgKind::Records { .. })
                ) =>
            {
                return Err(format!("argument `{}`: `pairs_with` must name a list argument, not `{pair}`", arg.name));
            }
            _ => {}
        }
    }
    Ok(())
}

fn toml_to_json(value: &toml::Value) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| format!("value cannot be used: {e}"))
}

/// A path: a root, then `.field` and keyed `[key]` segments (`actor.payment_methods[item.id]`).
/// The root is `actor`, a record or member argument, and in a step `item` (with `each`) or the
/// name of a row an earlier step created.
fn compile_path(op: &Operation, names: &StepNames, text: &str) -> Result<Path, String> {
    let empty = || format!("path `{text}` has an empty part");
    let mut segments: Vec<(String, bool)> = Vec::new();
    let root_end = text.find(['.', '[']).unwrap_or(text.len());
    let root = text.get(..root_end).unwrap_or_default().to_owned();
    let mut rest = text.get(root_end..).unwrap_or_default();
    while let Some(c) = rest.chars().next() {
        let body = rest.get(1..).unwrap_or_default();
        if c == '[' {
            let close = body.find(']').ok_or_else(|| format!("path `{text}` lacks a `]`"))?;
            segments.push((body.get(..close).unwrap_or_default().to_owned(), true));
            rest = body.get(close + 1..).unwrap_or_default();
        } else {
            let end = body.find(['.', '[']).unwrap_or(body.len());
            segments.push((body.get(..end).unwrap_or_default().to_owned(), false));
            rest = body.get(end..).unwrap_or_default();
        }
    }
    if root.is_empty() || segments.iter().any(|(s, _)| s.is_empty() || s.contains(']')) {
        return Err(empty());
    }
    let rooted = root == "actor"
        || matches!(
            op.arg(&root).map(|a| &a.kind),
            Some(ArgKind::Record { .. } | ArgKind::Records { .. } | ArgKind::Member { .. } | ArgKind::Members { .. })
        )
        || (root == ITEM && names.item.is_some())
        || names.created.iter().any(|(n, _)| *n == root);
    if !rooted {
        return Err(format!("path `{text}` must start with `actor` or a record or member argument"));
    }
    let mut keys = BTreeMap::new();
    let mut fields = Vec::with_capacity(segments.len());
    for (i, (segment, keyed)) in segments.into_iter().enumerate() {
        if keyed {
            keys.insert(i, key_ref(op, names, &segment).map_err(|e| format!("path `{text}`: {e}"))?);
        }
        fields.push(segment);
    }
    Ok(Path { root, fields, keys })
}

/// Whether an argument's checked value can name a key: a string of some kind, a record's key,
/// a member's id, an integer.
fn keyable(kind: &ArgKind) -> bool {
    matches!(
        kind,
        ArgKind::Enum { .. }
            | ArgKind::Record { .. }
            | ArgKind::Member { .. }
            | ArgKind::Text { .. }
            | ArgKind::String { .. }
            | ArgKind::Date
            | ArgKind::Integer { .. }
    )
}

/// A key named in a path segment or a create step: `item`, `item.FIELD`, a minted key or an
/// argument whose value can be a key.
fn key_ref(op: &Operation, names: &StepNames, text: &str) -> Result<KeyRef, String> {
    if text == ITEM || text.starts_with("item.") {
        let field = text.strip_prefix("item.").map(str::to_owned);
        let Some(each) = &names.item else {
            return Err(format!("`[{text}]` names the element of `each`, and the step has no `each`"));
        };
        if let (Some(field), Each::Arg(arg)) = (&field, each)
            && let Some(ArgKind::Objects { fields, .. }) = op.arg(arg).map(|a| &a.kind)
        {
            match fields.iter().find(|f| f.name == *field) {
                Some(f) if keyable(&f.kind) => {}
                Some(_) => return Err(format!("field `{field}` of `{arg}` cannot name a key")),
                None => return Err(format!("the elements of `{arg}` have no field `{field}`")),
            }
        }
        return Ok(KeyRef::Item(field));
    }
    if op.keys.iter().any(|k| k.name == text) {
        return Ok(KeyRef::Minted(text.to_owned()));
    }
    match op.arg(text) {
        Some(arg) if keyable(&arg.kind) => Ok(KeyRef::Arg(text.to_owned())),
        Some(_) => Err(format!("argument `{text}` cannot name a key")),
        None => Err(format!("`{text}` is no argument, minted key or `item`")),
    }
}

/// Parses `sum(a.b) - c.d + 3`, `count(x.y)`, `first(x.y)`, `-name`.
fn parse_expr(text: &str) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    let mut pos = 0;
    let expr = parse_sum(&tokens, &mut pos, text)?;
    if pos != tokens.len() {
        return Err(format!("expression `{text}` has trailing input"));
    }
    Ok(expr)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Open,
    Close,
    Plus,
    Minus,
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        let single = match c {
            '(' => Some(Token::Open),
            ')' => Some(Token::Close),
            '+' => Some(Token::Plus),
            '-' => Some(Token::Minus),
            ' ' => None,
            c if c.is_ascii_alphanumeric() || c == '_' || c == '.' => {
                word.push(c);
                continue;
            }
            other => return Err(format!("expression `{text}` has the character `{other}`")),
        };
        if !word.is_empty() {
            tokens.push(Token::Word(std::mem::take(&mut word)));
        }
        tokens.extend(single);
    }
    if !word.is_empty() {
        tokens.push(Token::Word(word));
    }
    Ok(tokens)
}

fn parse_sum(tokens: &[Token], pos: &mut usize, text: &str) -> Result<Expr, String> {
    let mut left = parse_unary(tokens, pos, text)?;
    loop {
        match tokens.get(*pos) {
            Some(Token::Plus) => {
                *pos += 1;
                left = Expr::Add(Box::new(left), Box::new(parse_unary(tokens, pos, text)?));
            }
            Some(Token::Minus) => {
                *pos += 1;
                left = Expr::Sub(Box::new(left), Box::new(parse_unary(tokens, pos, text)?));
            }
            _ => return Ok(left),
        }
    }
}

fn parse_unary(tokens: &[Token], pos: &mut usize, text: &str) -> Result<Expr, String> {
    match tokens.get(*pos) {
        Some(Token::Minus) => {
            *pos += 1;
            Ok(Expr::Neg(Box::new(parse_unary(tokens, pos, text)?)))
        }
        Some(Token::Open) => {
            *pos += 1;
            let inner = parse_sum(tokens, pos, text)?;
            if tokens.get(*pos) != Some(&Token::Close) {
                return Err(format!("expression `{text}` lacks a `)`"));
            }
            *pos += 1;
            Ok(inner)
        }
        Some(Token::Word(word)) => {
            *pos += 1;
            if let Ok(n) = word.parse::<i64>() {
                return Ok(Expr::Literal(n));
            }
            if matches!(word.as_str(), "sum" | "count" | "first") && tokens.get(*pos) == Some(&Token::Open) {
                let Some(Token::Word(path)) = tokens.get(*pos + 1) else {
                    return Err(format!("expression `{text}`: `{word}(` needs a path"));
                };
                if tokens.get(*pos + 2) != Some(&Token::Close) {
                    return Err(format!("expression `{text}` lacks a `)`"));
                }
                *pos += 3;
                let path = raw_path(path);
                return Ok(match word.as_str() {
                    "sum" => Expr::Sum(path),
                    "count" => Expr::Count(path),
                    _ => Expr::First(path),
                });
            }
            if word.contains('.') { Ok(Expr::Value(raw_path(word))) } else { Ok(Expr::Derived(word.clone())) }
        }
        _ => Err(format!("expression `{text}` is incomplete")),
    }
}

fn raw_path(text: &str) -> Path {
    let mut parts = text.split('.').map(str::to_owned);
    Path { root: parts.next().unwrap_or_default(), fields: parts.collect(), keys: BTreeMap::new() }
}

fn check_expr(op: &Operation, expr: &Expr) -> Result<(), String> {
    match expr {
        Expr::Value(p) | Expr::Sum(p) | Expr::Count(p) | Expr::First(p) => {
            let text = std::iter::once(p.root.as_str())
                .chain(p.fields.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(".");
            compile_path(op, &StepNames::default(), &text).map(|_| ())
        }
        Expr::Derived(name) => {
            if op.derive.iter().any(|(n, _)| n == name) {
                Ok(())
            } else {
                Err(format!("`{name}` is not a quantity derived before this one"))
            }
        }
        Expr::Literal(_) => Ok(()),
        Expr::Add(a, b) | Expr::Sub(a, b) => check_expr(op, a).and_then(|()| check_expr(op, b)),
        Expr::Neg(a) => check_expr(op, a),
        Expr::Cel(_) => Ok(()),
    }
}

/// The fields of an appended entry, each from exactly one source.
fn compile_entry(op: &Operation, raw: &RawStep) -> Result<Vec<(String, EntryValue)>, String> {
    let mut entry = Vec::new();
    for (name, source) in &raw.entry {
        let value = match (&source.value, &source.arg, &source.money, &source.derived) {
            (Some(v), None, None, None) => EntryValue::Value(toml_to_json(v)?),
            (None, Some(arg), None, None) if op.arg(arg).is_some() => EntryValue::Arg(arg.clone()),
            (None, None, Some(money), None) => {
                let expr = parse_expr(money)?;
                check_expr(op, &expr)?;
                EntryValue::Money(expr)
            }
            (None, None, None, Some(name)) if op.derive.iter().any(|(n, _)| n == name) => {
                EntryValue::Derived(name.clone())
            }
            _ => {
                return Err(format!(
                    "entry field `{name}` needs exactly one of `value`, a declared `arg`, `money`, a derived `derived`"
                ));
            }
        };
        entry.push((name.clone(), value));
    }
    Ok(entry)
}

/// A `set` step: the field at the path set from a value, an argument, arguments or an amount.
fn compile_set(op: &Operation, names: &StepNames, raw: &RawStep, set: &str) -> Result<Change, String> {
    let path = compile_path(op, names, set)?;
    let change = match (&raw.value, &raw.arg, &raw.args, &raw.money) {
        (Some(value), None, None, None) => Change::SetValue { path, value: toml_to_json(value)? },
        (None, Some(arg), None, None) => {
            if op.arg(arg).is_none() {
                return Err(format!("effect sets `{set}` from the undeclared argument `{arg}`"));
            }
            Change::SetArg { path, arg: arg.clone() }
        }
        (None, None, Some(args), None) => {
            if let Some(missing) = args.iter().find(|a| op.arg(a).is_none()) {
                return Err(format!("effect sets `{set}` from the undeclared argument `{missing}`"));
            }
            Change::SetArgs { path, args: args.clone() }
        }
        (None, None, None, Some(money)) => {
            let amount = parse_expr(money)?;
            check_expr(op, &amount)?;
            Change::SetMoney { path, amount }
        }
        _ => {
            return Err(format!("effect `set = \"{set}\"` needs exactly one of `value`, `arg`, `args`, `money`"));
        }
    };
    Ok(change)
}

/// A `when`, `when_element` or `when_member` key whose value is a table was written as a TOML
/// dotted key (`when = { actor.n = 3 }` is `{ actor = { n = 3 } }`): the path must be quoted.
fn no_dotted_keys(what: &str, conditions: &BTreeMap<String, toml::Value>) -> Result<(), String> {
    match conditions.iter().find(|(_, v)| v.is_table()) {
        Some((key, _)) => Err(format!(
            "`{what}` key `{key}` holds a table, not a value: a TOML dotted key is a nested table; quote the path, as `\"{key}.field\" = value`"
        )),
        None => Ok(()),
    }
}

/// A step's `when` conditions, after their keys are checked not to be TOML dotted keys.
fn compile_when(op: &Operation, names: &StepNames, raw: &RawStep) -> Result<Vec<(Path, Value)>, String> {
    no_dotted_keys("when", &raw.when)?;
    no_dotted_keys("when_element", &raw.when_element)?;
    no_dotted_keys("when_member", &raw.when_member)?;
    raw.when.iter().map(|(path, value)| Ok((compile_path(op, names, path)?, toml_to_json(value)?))).collect()
}

fn compile_step(op: &Operation, names: &StepNames, raw: &RawStep) -> Result<Step, String> {
    let when = compile_when(op, names, raw)?;
    if raw.ty.is_some() {
        return Err("an effect step's `type` goes with `cel`".into());
    }
    let kinds = [&raw.set, &raw.add, &raw.swap, &raw.add_each, &raw.append].iter().filter(|k| k.is_some()).count();
    if kinds != 1 {
        return Err("an effect step needs exactly one of `set`, `add`, `swap`, `add_each`, `append`".into());
    }
    if let Some(list) = &raw.add_each {
        let list = compile_path(op, names, list)?;
        let into = compile_path(op, names, raw.into.as_deref().ok_or("effect `add_each` needs `into`")?)?;
        let need =
            |v: &Option<String>, what: &str| v.clone().ok_or_else(|| format!("effect `add_each` needs `{what}`"));
        let pairs = |m: &BTreeMap<String, toml::Value>| -> Result<Vec<(String, Value)>, String> {
            m.iter().map(|(k, v)| Ok((k.clone(), toml_to_json(v)?))).collect()
        };
        return Ok(Step::new(
            Change::AddEach {
                list,
                into,
                key: need(&raw.key, "key")?,
                amount: need(&raw.amount, "amount")?,
                field: need(&raw.field, "field")?,
                when_element: pairs(&raw.when_element)?,
                when_member: pairs(&raw.when_member)?,
            },
            when,
        ));
    }
    if let Some(append) = &raw.append {
        let path = compile_path(op, names, append)?;
        if raw.entry.is_empty() {
            return Err(format!(
                "effect `append = \"{append}\"` needs `entry` fields, or one of `value`, `arg`, `cel`"
            ));
        }
        let entry = compile_entry(op, raw)?;
        return Ok(Step::new(Change::Append { path, entry }, when));
    }
    let change = match (&raw.set, &raw.add, &raw.swap) {
        (Some(set), None, None) => compile_set(op, names, raw, set)?,
        (None, Some(add), None) => {
            let path = compile_path(op, names, add)?;
            let amount = raw.amount.as_deref().ok_or_else(|| format!("effect `add = \"{add}\"` needs `amount`"))?;
            let amount = parse_expr(amount)?;
            check_expr(op, &amount)?;
            Change::Add { path, amount }
        }
        (None, None, Some(swap)) => {
            let with = raw.with.clone().ok_or("effect `swap` needs `with`")?;
            if !matches!(op.arg(swap).map(|a| &a.kind), Some(ArgKind::Members { .. })) {
                return Err(format!("effect `swap` must name a members argument, not `{swap}`"));
            }
            if !matches!(op.arg(&with).map(|a| &a.kind), Some(ArgKind::Records { pairs_with: Some(p), .. }) if p == swap)
            {
                return Err(format!("effect `swap` needs `with` to name a records argument paired with `{swap}`"));
            }
            Change::Swap { members: swap.clone(), with, fields: raw.fields.clone().unwrap_or_default() }
        }
        _ => return Err("an effect step needs exactly one of `set`, `add`, `swap`".into()),
    };
    Ok(Step::new(change, when))
}

/// The names a step may use besides the operation's: `item`, with `each`, and the rows earlier
/// steps created (`as`), each with its table.
#[derive(Debug, Clone, Default)]
struct StepNames {
    item: Option<Each>,
    created: Vec<(String, String)>,
}

/// The operation's minted keys (`[operation.keys.NAME]`), each placed at its declaration.
fn compile_keys(scope: &Scope<'_>, raw_op: &RawOperation) -> Result<Vec<MintedKey>, ContractError> {
    let mut keys = Vec::with_capacity(raw_op.keys.len());
    for (name, raw) in &raw_op.keys {
        let bad = |message: String| {
            scope
                .at
                .error(raw.span().start, ContractErrorKind::BadOperation { op: raw_op.name.get_ref().clone(), message })
        };
        let raw_key = raw.get_ref();
        if !source::is_identifier(name) || name == ITEM || raw_op.args.contains_key(name) {
            return Err(bad(format!("minted key `{}` needs a name no argument has", crate::text::visible(name))));
        }
        let alphabet: Vec<char> = raw_key.alphabet.as_deref().unwrap_or(MINT_ALPHABET).chars().collect();
        let mut seen = std::collections::BTreeSet::new();
        if alphabet.len() < 2 || !alphabet.iter().all(|c| seen.insert(*c) && !c.is_control()) {
            return Err(bad(format!("minted key `{name}`: `alphabet` needs two or more characters, none twice")));
        }
        if !(1..=64).contains(&raw_key.length) {
            return Err(bad(format!("minted key `{name}`: `length` is 1 to 64")));
        }
        keys.push(MintedKey { name: name.clone(), prefix: raw_key.prefix.clone(), length: raw_key.length, alphabet });
    }
    Ok(keys)
}

/// One `[[operation.effect]]`: its `each`, its change, its conditions, each path checked
/// against the schemas; an error is placed at the path or key it names, else at the step.
fn compile_effect(
    scope: &Scope<'_>,
    op: &Operation,
    names: &mut StepNames,
    step: &Spanned<RawStep>,
) -> Result<Step, ContractError> {
    let raw = step.get_ref();
    let fail = |message: String| {
        let offset = fault_offset(scope.at.text, &step.span(), &message);
        scope.at.error(offset, ContractErrorKind::BadOperation { op: op.name.clone(), message })
    };
    let each = raw.each.as_deref().map(|e| compile_each(op, names, e)).transpose().map_err(fail)?;
    let inner = StepNames { item: each.clone(), created: names.created.clone() };
    let added = raw.add.is_some() && raw.cel.is_some();
    let appended = raw.append.is_some() && raw.entry.is_empty();
    let mut compiled = if raw.create.is_some() || raw.delete.is_some() || raw.remove.is_some() || added || appended {
        compile_new_step(scope, op, &inner, step)?
    } else {
        match &raw.cel {
            Some(cel) => compile_cel_step(scope, op, &inner, step, cel)?,
            None => compile_step(op, &inner, raw).map_err(fail)?,
        }
    };
    let paths = |list: &[String]| list.iter().map(|p| compile_path(op, &inner, p)).collect::<Result<Vec<_>, _>>();
    compiled.present = paths(&raw.when_present).map_err(fail)?;
    compiled.absent = paths(&raw.when_absent).map_err(fail)?;
    if let Some(condition) = &raw.condition {
        let shapes = step_shapes(scope, op, &inner);
        compiled.condition =
            Some(Box::new(expressions::compile_value(scope.at, condition, Some(ValueType::Bool), &shapes)?));
    }
    if let Some(Each::List(list)) = &each {
        let outer = StepNames { item: None, created: names.created.clone() };
        match path_field(scope, op, &outer, list).map_err(fail)?.map(|f| &f.kind) {
            Some(Kind::List(_)) | None => {}
            Some(other) => {
                return Err(fail(format!("`each = \"{}\"` is {}, not a list", path_text(list), other.name())));
            }
        }
    }
    compiled.each = each;
    check_step_paths(scope, op, &inner, &compiled).map_err(fail)?;
    for path in compiled.present.iter().chain(&compiled.absent) {
        path_field(scope, op, &inner, path).map_err(fail)?;
    }
    if let Change::Create { name: Some(name), table, .. } = &compiled.change {
        names.created.push((name.clone(), table.clone()));
    }
    Ok(compiled)
}

/// `each = "…"`: an `objects`, `records` or `members` argument, or a path to a list.
fn compile_each(op: &Operation, names: &StepNames, text: &str) -> Result<Each, String> {
    if op.arg(ITEM).is_some() {
        return Err(format!("a step with `each` binds `{ITEM}`, and an argument has that name"));
    }
    match op.arg(text).map(|a| &a.kind) {
        Some(ArgKind::Objects { .. } | ArgKind::Records { .. } | ArgKind::Members { .. }) => {
            Ok(Each::Arg(text.to_owned()))
        }
        Some(_) if !text.contains(['.', '[']) => {
            Err(format!("`each` names argument `{text}`, which is not an objects, records or members argument"))
        }
        _ => {
            let outer = StepNames { item: None, created: names.created.clone() };
            Ok(Each::List(compile_path(op, &outer, text)?))
        }
    }
}

/// The names a step's CEL reads: the operation's, `item` (with `each`), the minted keys (as
/// strings) and the rows earlier steps created.
fn step_shapes<'b>(scope: &'b Scope<'_>, op: &'b Operation, names: &StepNames) -> OpShapes<'b> {
    let mut shapes = op_shapes(scope, op);
    if let Some(each) = &names.item {
        let root = match each {
            Each::Arg(arg) => match op.arg(arg).map(|a| &a.kind) {
                Some(ArgKind::Records { table, .. }) => Root::Row(table.clone()),
                _ => Root::Element,
            },
            Each::List(_) => Root::Unknown,
        };
        shapes.derived.insert(ITEM.to_owned(), root);
    }
    for key in &op.keys {
        shapes.derived.insert(key.name.clone(), Root::Scalar);
    }
    for (name, table) in &names.created {
        shapes.derived.insert(name.clone(), Root::Row(table.clone()));
    }
    shapes
}

/// The keys a step may be written with, by name, for the steps that take only some.
fn given_keys(raw: &RawStep) -> Vec<&'static str> {
    let options = [
        ("set", raw.set.is_some()),
        ("add", raw.add.is_some()),
        ("swap", raw.swap.is_some()),
        ("add_each", raw.add_each.is_some()),
        ("append", raw.append.is_some()),
        ("create", raw.create.is_some()),
        ("delete", raw.delete.is_some()),
        ("remove", raw.remove.is_some()),
        ("into", raw.into.is_some()),
        ("key", raw.key.is_some()),
        ("field", raw.field.is_some()),
        ("when_element", !raw.when_element.is_empty()),
        ("when_member", !raw.when_member.is_empty()),
        ("entry", !raw.entry.is_empty()),
        ("value", raw.value.is_some()),
        ("arg", raw.arg.is_some()),
        ("args", raw.args.is_some()),
        ("money", raw.money.is_some()),
        ("amount", raw.amount.is_some()),
        ("with", raw.with.is_some()),
        ("fields", raw.fields.is_some()),
        ("cel", raw.cel.is_some()),
        ("type", raw.ty.is_some()),
        ("as", raw.name.is_some()),
    ];
    options.into_iter().filter(|(_, given)| *given).map(|(name, _)| name).collect()
}

/// The steps `create`, `delete`, `remove`, `append` of one value, and `add` with `cel`.
fn compile_new_step(
    scope: &Scope<'_>,
    op: &Operation,
    names: &StepNames,
    step: &Spanned<RawStep>,
) -> Result<Step, ContractError> {
    let raw = step.get_ref();
    let fail = |message: String| {
        let offset = fault_offset(scope.at.text, &step.span(), &message);
        scope.at.error(offset, ContractErrorKind::BadOperation { op: op.name.clone(), message })
    };
    let when = compile_when(op, names, raw).map_err(fail)?;
    let given = given_keys(raw);
    let (kind, takes): (&str, &[&str]) = match (&raw.create, &raw.delete, &raw.remove, &raw.append, &raw.add) {
        (Some(_), None, None, None, None) => ("create", &["create", "key", "as", "cel", "entry"]),
        (None, Some(_), None, None, None) => ("delete", &["delete"]),
        (None, None, Some(_), None, None) => ("remove", &["remove"]),
        (None, None, None, Some(_), None) => ("append", &["append", "value", "arg", "cel"]),
        (None, None, None, None, Some(_)) => ("add", &["add", "cel", "type"]),
        _ => {
            return Err(fail(
                "an effect step needs exactly one of `set`, `add`, `swap`, `add_each`, `append`, `create`, `delete`, `remove`"
                    .into(),
            ));
        }
    };
    if let Some(other) = given.iter().find(|k| !takes.contains(k)) {
        return Err(fail(format!("effect `{kind}` does not take `{other}` (it takes {})", takes.join(", "))));
    }
    let cel = |ty: Option<ValueType>| -> Result<Option<Box<CelValue>>, ContractError> {
        match &raw.cel {
            Some(text) => {
                let shapes = step_shapes(scope, op, names);
                Ok(Some(Box::new(expressions::compile_value(scope.at, text, ty, &shapes)?)))
            }
            None => Ok(None),
        }
    };
    let change = match kind {
        "create" => compile_create(scope, op, names, raw, cel(None)?).map_err(fail)?,
        "delete" | "remove" => compile_taken_away(op, names, raw).map_err(fail)?,
        "append" => {
            let path = compile_path(op, names, raw.append.as_deref().unwrap_or_default()).map_err(fail)?;
            let value = match (&raw.value, &raw.arg, cel(None)?) {
                (Some(value), None, None) => Appended::Value(toml_to_json(value).map_err(fail)?),
                (None, Some(arg), None) if op.arg(arg).is_some() => Appended::Arg(arg.clone()),
                (None, None, Some(value)) => Appended::Cel(value),
                _ => {
                    return Err(fail(
                        "effect `append` needs `entry` fields, or exactly one of `value`, a declared `arg`, `cel`"
                            .into(),
                    ));
                }
            };
            Change::AppendValue { path, value }
        }
        _ => {
            let path = compile_path(op, names, raw.add.as_deref().unwrap_or_default()).map_err(fail)?;
            let ty = raw.ty.as_deref().map(expressions::value_type).transpose().map_err(fail)?;
            let (Some(ty @ (ValueType::Money | ValueType::Integer)), Some(_)) = (ty, &raw.cel) else {
                return Err(fail("effect `add` with `cel` needs `type = \"money\"` or `\"integer\"`".into()));
            };
            if ty == ValueType::Money && !scope.has_currency {
                return Err(fail("a money value needs `records.currency`".into()));
            }
            let value = cel(Some(ty))?.ok_or_else(|| fail("effect `add` needs `cel`".into()))?;
            Change::AddComputed { path, value }
        }
    };
    Ok(Step::new(change, when))
}

/// `delete = "ROW"` (a record argument, or a row an earlier step created) or `remove = "PATH"`
/// (a map entry, the path ending in a keyed segment).
fn compile_taken_away(op: &Operation, names: &StepNames, raw: &RawStep) -> Result<Change, String> {
    match &raw.delete {
        Some(_) => {
            let row = raw.delete.clone().unwrap_or_default();
            let record = matches!(op.arg(&row).map(|a| &a.kind), Some(ArgKind::Record { .. }));
            if !record && !names.created.iter().any(|(n, _)| *n == row) {
                return Err(format!(
                    "effect `delete` names `{row}`, which is no record argument nor a row an earlier step created"
                ));
            }
            Ok(Change::Delete { row })
        }
        None => {
            let path = compile_path(op, names, raw.remove.as_deref().unwrap_or_default())?;
            if !path.fields.len().checked_sub(1).is_some_and(|last| path.keys.contains_key(&last)) {
                return Err(format!(
                    "effect `remove`: path `{}` must end in a keyed segment, the map entry removed (`…[key]`)",
                    path_text(&path)
                ));
            }
            Ok(Change::Remove { path })
        }
    }
}

/// `create = "TABLE"`: the table (not a nested one's), the key (minted or an argument), the name
/// later steps use (`as`), and the row's value (`cel`, already compiled, or `entry`).
fn compile_create(
    scope: &Scope<'_>,
    op: &Operation,
    names: &StepNames,
    raw: &RawStep,
    cel: Option<Box<CelValue>>,
) -> Result<Change, String> {
    let table = raw.create.clone().unwrap_or_default();
    let declared = scope.tables.iter().find(|t| t.name == table);
    match declared.map(|t| &t.source) {
        None => return Err(format!("effect `create`: table `{table}` is not declared in `[records]`")),
        Some(TableSource::Nested { table: parent, .. }) => {
            return Err(format!(
                "effect `create`: the rows of `{table}` are entries of `{parent}` rows; set an entry there"
            ));
        }
        Some(_) => {}
    }
    let key = raw.key.as_deref().ok_or("effect `create` needs `key`")?;
    let key = match key_ref(op, names, key).map_err(|e| format!("effect `create`: `key`: {e}"))? {
        KeyRef::Item(_) => return Err("effect `create`: `key` is a minted key or an argument".into()),
        key => key,
    };
    if let Some(name) = &raw.name {
        let taken = op.arg(name).is_some()
            || op.keys.iter().any(|k| k.name == *name)
            || op.derive.iter().any(|(n, _)| n == name)
            || names.created.iter().any(|(n, _)| n == name)
            || expressions::TURN_NAMES.contains(&name.as_str());
        if !source::is_identifier(name) || name == ITEM || taken {
            return Err(format!(
                "effect `create`: `as = \"{}\"` needs a name nothing else has",
                crate::text::visible(name)
            ));
        }
    }
    let value = match (cel, raw.entry.is_empty()) {
        (Some(value), true) => NewRow::Cel(value),
        (None, false) => NewRow::Entry(compile_entry(op, raw)?),
        _ => return Err("effect `create` needs exactly one of `cel`, `entry`".into()),
    };
    Ok(Change::Create { table, key, name: raw.name.clone(), value })
}

/// The field a path's root is, where its table declares a schema: the actor's or a record
/// argument's row, or the element of a member argument's collection. `None`: untyped.
fn root_field<'a>(scope: &Scope<'a>, op: &Operation, root: &str) -> Result<Option<&'a Field>, String> {
    let row_of = |table: &str| scope.tables.iter().find(|t| t.name == table).and_then(|t| t.schema.as_ref());
    if root == "actor" {
        return Ok(scope.actor.and_then(row_of));
    }
    match op.arg(root).map(|a| &a.kind) {
        Some(ArgKind::Record { table } | ArgKind::Records { table, .. }) => Ok(row_of(table)),
        Some(ArgKind::Member { of, path, key } | ArgKind::Members { of, path, key }) => {
            member_of(scope, op, of, path, key.as_deref()).map_err(|e| format!("argument `{root}`: {e}"))
        }
        _ => Ok(None),
    }
}

/// The element of a member argument's (or field's) collection, where its container's table is
/// typed; `None`: untyped.
fn member_of<'a>(
    scope: &Scope<'a>,
    op: &Operation,
    of: &str,
    path: &str,
    key: Option<&str>,
) -> Result<Option<&'a Field>, String> {
    let container = if of == "actor" { scope.actor } else { arg_table(op, of) };
    match container.and_then(|table| scope.tables.iter().find(|t| t.name == table)).and_then(|t| t.schema.as_ref()) {
        Some(row) => schema::member_element(row, path, key).map(Some),
        None => Ok(None),
    }
}

/// The table of a record or records argument.
fn arg_table<'o>(op: &'o Operation, name: &str) -> Option<&'o str> {
    match op.arg(name).map(|a| &a.kind) {
        Some(ArgKind::Record { table } | ArgKind::Records { table, .. }) => Some(table),
        _ => None,
    }
}

/// The field `path` reaches, checked against the schema of its root; `None` where untyped.
fn path_field<'a>(
    scope: &Scope<'a>,
    op: &Operation,
    names: &StepNames,
    path: &Path,
) -> Result<Option<&'a Field>, String> {
    let at = |e: String| format!("path `{}`: {e}", path_text(path));
    let row_of = |table: &str| scope.tables.iter().find(|t| t.name == table).and_then(|t| t.schema.as_ref());
    // The field the root is, and how many of the path's fields it took.
    let (root, skip) = if let Some((_, table)) = names.created.iter().find(|(n, _)| *n == path.root) {
        (row_of(table), 0)
    } else if path.root == ITEM {
        match &names.item {
            Some(Each::List(list)) => {
                let outer = StepNames { item: None, created: names.created.clone() };
                (path_field(scope, op, &outer, list)?.map(schema::through_lists), 0)
            }
            Some(Each::Arg(arg)) => match op.arg(arg).map(|a| &a.kind) {
                Some(ArgKind::Records { table, .. }) => (row_of(table), 0),
                Some(ArgKind::Members { .. }) => (root_field(scope, op, arg)?, 0),
                Some(ArgKind::Objects { fields, .. }) => {
                    let first =
                        path.fields.first().ok_or_else(|| at("`item` of `objects` is no row: name a field".into()))?;
                    let field = fields.iter().find(|f| f.name == *first).ok_or_else(|| {
                        at(format!("the elements of `{arg}` have no field `{}`", crate::text::visible(first)))
                    })?;
                    match &field.kind {
                        ArgKind::Record { table } => (row_of(table), 1),
                        ArgKind::Member { of, path: collection, key } => {
                            (member_of(scope, op, of, collection, key.as_deref()).map_err(at)?, 1)
                        }
                        // A scalar field is read, never written through.
                        _ if path.fields.len() == 1 => return Ok(None),
                        _ => return Err(at(format!("field `{first}` of `{arg}` is no record or member"))),
                    }
                }
                _ => (None, 0),
            },
            None => (None, 0),
        }
    } else {
        (root_field(scope, op, &path.root)?, 0)
    };
    let Some(mut current) = root else { return Ok(None) };
    let mut text = path.root.clone();
    for (i, name) in path.fields.iter().enumerate() {
        if i < skip {
            text = format!("{text}.{name}");
            continue;
        }
        if path.keys.contains_key(&i) {
            current = match &schema::through_lists(current).kind {
                Kind::Map(of) => of,
                other => {
                    return Err(at(format!(
                        "`{text}` is {}, not a map an entry of is named by `[{name}]`",
                        other.name()
                    )));
                }
            };
            text = format!("{text}[{name}]");
        } else {
            current = schema::step(current, name, &text).map_err(at)?;
            text = format!("{text}.{name}");
        }
    }
    Ok(Some(current))
}

fn expect_kind(field: Option<&Field>, what: &str, ok: fn(&Kind) -> bool, wanted: &str) -> Result<(), String> {
    match field.map(schema::through_lists) {
        Some(f) if !ok(&f.kind) => Err(format!("{what} is {}, not {wanted}", f.kind.name())),
        _ => Ok(()),
    }
}

fn is_money(kind: &Kind) -> bool {
    matches!(kind, Kind::Money)
}

/// Each path of a derived quantity exists in its root's schema; a value or a sum reaches numbers.
fn check_expr_paths(scope: &Scope<'_>, op: &Operation, expr: &Expr) -> Result<(), String> {
    let names = &StepNames::default();
    match expr {
        Expr::Value(p) | Expr::Sum(p) => {
            let field = path_field(scope, op, names, p)?;
            let what =
                format!("`{}`", std::iter::once(&p.root).chain(&p.fields).cloned().collect::<Vec<_>>().join("."));
            expect_kind(field, &what, |k| matches!(k, Kind::Money | Kind::Integer), "money or an integer")
        }
        Expr::Count(p) | Expr::First(p) => path_field(scope, op, names, p).map(|_| ()),
        Expr::Add(a, b) | Expr::Sub(a, b) => {
            check_expr_paths(scope, op, a)?;
            check_expr_paths(scope, op, b)
        }
        Expr::Neg(a) => check_expr_paths(scope, op, a),
        // A CEL expression's names are checked when it compiles; the row fields it reads are
        // read as Cedar sees them, a missing one an `expression_failed` refusal.
        Expr::Derived(_) | Expr::Literal(_) | Expr::Cel(_) => Ok(()),
    }
}

/// A field of an object field (an element, a member), where it is typed.
fn sub_field<'a>(of: Option<&'a Field>, name: &str, what: &str) -> Result<Option<&'a Field>, String> {
    match of {
        Some(f) => schema::step(f, name, what).map(Some),
        None => Ok(None),
    }
}

/// A literal checked against the field it is written to or compared with (money only as a
/// number: its digits are read in the contract's currency when the effect runs).
fn literal_fits(field: Option<&Field>, at: &str, value: &Value) -> Result<(), String> {
    // A list written whole into a list field (a created row's) is checked as that list.
    if let (Some(list @ Field { kind: Kind::List(_), .. }), Value::Array(_)) = (field, value) {
        return schema::check_value(list, at, value, None).map_err(|m| format!("`{}` {}", m.path, m.message));
    }
    let Some(field) = field.map(schema::through_lists) else { return Ok(()) };
    match (&field.kind, value) {
        (_, Value::Null) if field.optional => Ok(()),
        (Kind::Money, Value::Number(_)) => Ok(()),
        (Kind::Money, _) => Err(format!("`{at}` is money, and `{value}` is not a number")),
        _ => schema::check_value(field, at, value, None).map_err(|m| format!("`{}` {}", m.path, m.message)),
    }
}

/// What the contract shows of `op`'s effect: `None` unless every step is of a kind shown here
/// (`set` of a literal, an argument, an object of arguments or an amount; `add`; `add_each`;
/// `append` of an entry) and writes a field [`written_field`] takes.
fn prove_sure_fit(scope: &Scope<'_>, op: &Operation) -> Option<SureFit> {
    let mut sure = SureFit { roots: Vec::new(), values: Vec::new() };
    for step in &op.effects {
        match &step.change {
            Change::SetValue { path, value } => {
                let field = written_field(scope, op, path, &mut sure.roots)?;
                sure.values.push((sure_fit::Source::Literal(value.clone()), field.clone()));
            }
            Change::SetArg { path, arg } => {
                let field = written_field(scope, op, path, &mut sure.roots)?;
                sure.values.push((sure_fit::Source::Arg(arg.clone()), field.clone()));
            }
            // An object of every argument named, each under its name.
            Change::SetArgs { path, args } => {
                let Kind::Object(fields) = &written_field(scope, op, path, &mut sure.roots)?.kind else { return None };
                if fields.iter().any(|(name, f)| !f.optional && !args.contains(name)) {
                    return None;
                }
                for arg in args {
                    sure.values.push((sure_fit::Source::ArgAsGiven(arg.clone()), fields.get(arg)?.clone()));
                }
            }
            // An amount is written as `money::record_number` writes it, which reads back exactly.
            Change::SetMoney { path, .. } | Change::Add { path, .. } => {
                let field = written_field(scope, op, path, &mut sure.roots)?;
                matches!(field.kind, Kind::Money).then_some(())?;
            }
            Change::AddEach { into, field, .. } => {
                let Kind::Map(member) = &written_field(scope, op, into, &mut sure.roots)?.kind else { return None };
                let Kind::Object(fields) = &member.kind else { return None };
                matches!(fields.get(field)?.kind, Kind::Money).then_some(())?;
            }
            Change::Append { path, entry } => {
                let Kind::List(element) = &written_field(scope, op, path, &mut sure.roots)?.kind else { return None };
                // `check_entry` has refused, at load, an entry that names an undeclared field or
                // leaves out one that is not optional.
                let Kind::Object(fields) = &element.kind else { return None };
                for (name, value) in entry {
                    let field = fields.get(name)?;
                    let source = match value {
                        EntryValue::Value(v) => sure_fit::Source::Literal(v.clone()),
                        EntryValue::Arg(arg) => sure_fit::Source::Arg(arg.clone()),
                        EntryValue::Derived(derived) => sure_fit::Source::Derived(derived.clone()),
                        EntryValue::Money(_) if matches!(field.kind, Kind::Money) => continue,
                        EntryValue::Money(_) => return None,
                    };
                    sure.values.push((source, field.clone()));
                }
            }
            _ => return None,
        }
    }
    Some(sure)
}

/// The declared field `path` writes, where the step is one shown here: rooted at the actor, a
/// record argument or a member argument (not at `item` or a created row), naming a field below
/// it without keyed segments or stepping through a list, in a typed table, below a top-level
/// field that holds neither the row's key nor its parent's. Its root is added to `roots`.
fn written_field<'s>(scope: &Scope<'s>, op: &Operation, path: &Path, roots: &mut Vec<String>) -> Option<&'s Field> {
    // The row's table, and the top-level field of the row the path writes below.
    let (table, top) = if path.root == "actor" {
        (scope.actor?, path.fields.first()?)
    } else {
        match &op.arg(&path.root)?.kind {
            ArgKind::Record { table } | ArgKind::Records { table, .. } => (table.as_str(), path.fields.first()?),
            // A member is an element of a collection that is a top-level field of its row.
            ArgKind::Member { of, path: collection, .. } | ArgKind::Members { of, path: collection, .. } => {
                let container = if of == "actor" { scope.actor? } else { arg_table(op, of)? };
                (container, collection)
            }
            _ => return None,
        }
    };
    let table = scope.tables.iter().find(|t| t.name == table)?;
    let parent_field = match &table.source {
        TableSource::Nested { parent_field, .. } => Some(parent_field),
        TableSource::File(_) => None,
    };
    // A path that names no field below its root replaces a whole row or member; one with a
    // keyed segment names a map entry by a value.
    if path.fields.is_empty() || !path.keys.is_empty() || table.key.as_ref() == Some(top) || parent_field == Some(top) {
        return None;
    }
    // A path that steps through a list writes a field of every element, and there a segment of
    // digits would be read as a position in the list: such a step is tried.
    let mut field = root_field(scope, op, &path.root).ok()??;
    for name in &path.fields {
        if matches!(field.kind, Kind::List(_)) {
            return None;
        }
        field = schema::step(field, name, &path.root).ok()?;
    }
    if !roots.contains(&path.root) {
        roots.push(path.root.clone());
    }
    Some(field)
}

/// The paths of an effect step, each checked against its root's schema.
fn check_step_paths(scope: &Scope<'_>, op: &Operation, names: &StepNames, step: &Step) -> Result<(), String> {
    for (path, value) in &step.when {
        let field = path_field(scope, op, names, path)?;
        literal_fits(field, &format!("when {}", path_text(path)), value)?;
    }
    match &step.change {
        Change::SetValue { path, value } => {
            let field = path_field(scope, op, names, path)?;
            literal_fits(field, &path_text(path), value)
        }
        Change::SetArg { path, arg } => {
            let field = path_field(scope, op, names, path)?;
            arg_fits(op, arg, field, &path_text(path))
        }
        Change::SetArgs { path, args } => {
            let field = path_field(scope, op, names, path)?;
            for arg in args {
                let at = format!("{}.{arg}", path_text(path));
                arg_fits(op, arg, sub_field(field, arg, &path_text(path))?, &at)?;
            }
            Ok(())
        }
        Change::SetMoney { path, .. } | Change::Add { path, .. } => {
            let field = path_field(scope, op, names, path)?;
            expect_kind(field, &format!("`{}`", path_text(path)), is_money, "money")
        }
        Change::AddEach { list, into, key, amount, field, when_element, when_member } => {
            let element = path_field(scope, op, names, list)?.map(schema::through_lists);
            let list_at = path_text(list);
            sub_field(element, key, &list_at)?;
            expect_kind(sub_field(element, amount, &list_at)?, &format!("`{list_at}.{amount}`"), is_money, "money")?;
            for (name, value) in when_element {
                literal_fits(sub_field(element, name, &list_at)?, &format!("{list_at}.{name}"), value)?;
            }
            let member = match path_field(scope, op, names, into)?.map(|f| &f.kind) {
                Some(Kind::Map(of)) => Some(of.as_ref()),
                Some(other) => return Err(format!("`{}` is {}, not a map", path_text(into), other.name())),
                None => None,
            };
            let into_at = format!("{}.*", path_text(into));
            expect_kind(sub_field(member, field, &into_at)?, &format!("`{into_at}.{field}`"), is_money, "money")?;
            for (name, value) in when_member {
                literal_fits(sub_field(member, name, &into_at)?, &format!("{into_at}.{name}"), value)?;
            }
            Ok(())
        }
        Change::SetComputed { path, value } => {
            let field = path_field(scope, op, names, path)?;
            match value.ty {
                Some(ValueType::Money) => expect_kind(field, &format!("`{}`", path_text(path)), is_money, "money"),
                Some(ValueType::Instant) => {
                    let instant_or_text = |k: &Kind| matches!(k, Kind::Instant | Kind::Text);
                    expect_kind(field, &format!("`{}`", path_text(path)), instant_or_text, "an instant or text")
                }
                _ => Ok(()),
            }
        }
        Change::Append { path, entry } => check_append(scope, op, names, path, entry),
        Change::Create { .. }
        | Change::Delete { .. }
        | Change::Remove { .. }
        | Change::AppendValue { .. }
        | Change::AddComputed { .. } => check_new_step_paths(scope, op, names, &step.change),
        Change::Swap { members, with, fields } => {
            let old = root_field(scope, op, members)?;
            let new = root_field(scope, op, with)?;
            for name in fields {
                sub_field(old, name, members)?;
                sub_field(new, name, with)?;
            }
            Ok(())
        }
    }
}

/// The paths of the steps that create, delete, remove, append one value or add with CEL.
fn check_new_step_paths(scope: &Scope<'_>, op: &Operation, names: &StepNames, change: &Change) -> Result<(), String> {
    match change {
        Change::Create { table, value, .. } => {
            let row = scope.tables.iter().find(|t| t.name == *table).and_then(|t| t.schema.as_ref());
            match (row, value) {
                (Some(row), NewRow::Entry(entry)) => check_entry(op, row, table, entry),
                _ => Ok(()),
            }
        }
        Change::Delete { .. } => Ok(()),
        Change::Remove { path } => path_field(scope, op, names, path).map(|_| ()),
        Change::AppendValue { path, value } => {
            let at = path_text(path);
            let element = match path_field(scope, op, names, path)?.map(|f| &f.kind) {
                Some(Kind::List(of)) => of.as_ref(),
                Some(other) => return Err(format!("`{at}` is {}, not a list to append to", other.name())),
                None => return Ok(()),
            };
            match value {
                Appended::Value(v) => literal_fits(Some(element), &format!("{at}[]"), v),
                Appended::Arg(arg) => arg_fits(op, arg, Some(element), &format!("{at}[]")),
                Appended::Cel(_) => Ok(()),
            }
        }
        Change::AddComputed { path, value } => {
            let field = path_field(scope, op, names, path)?;
            let what = format!("`{}`", path_text(path));
            match value.ty {
                Some(ValueType::Integer) => expect_kind(field, &what, |k| matches!(k, Kind::Integer), "an integer"),
                _ => expect_kind(field, &what, is_money, "money"),
            }
        }
        _ => Ok(()),
    }
}

/// An appended entry names fields of the list's elements, and every field they need.
fn check_append(
    scope: &Scope<'_>,
    op: &Operation,
    names: &StepNames,
    path: &Path,
    entry: &[(String, EntryValue)],
) -> Result<(), String> {
    let at = path_text(path);
    let element = match path_field(scope, op, names, path)?.map(|f| &f.kind) {
        Some(Kind::List(of)) => of.as_ref(),
        Some(other) => return Err(format!("`{at}` is {}, not a list to append to", other.name())),
        None => return Ok(()),
    };
    check_entry(op, element, &at, entry)
}

/// An entry (appended to a list, or a created row) names fields of `element`, each fitting it,
/// and gives every field that is not optional.
fn check_entry(op: &Operation, element: &Field, at: &str, entry: &[(String, EntryValue)]) -> Result<(), String> {
    for (name, value) in entry {
        let field = schema::step(element, name, at)?;
        match value {
            EntryValue::Value(v) => literal_fits(Some(field), &format!("{at}.{name}"), v)?,
            EntryValue::Arg(arg) => arg_fits(op, arg, Some(field), &format!("{at}.{name}"))?,
            _ => {}
        }
        if matches!(value, EntryValue::Money(_)) && !matches!(field.kind, Kind::Money) {
            return Err(format!("`{at}.{name}` is {}, not money", field.kind.name()));
        }
    }
    if let Kind::Object(fields) = &element.kind
        && let Some((missing, _)) = fields.iter().find(|(n, f)| !f.optional && !entry.iter().any(|(e, _)| e == *n))
    {
        return Err(format!("the entry appended to `{at}` lacks its field `{missing}`, which is not optional"));
    }
    Ok(())
}

/// Whether an argument's checked value (`args::Checked::to_json`) can be written into `field`:
/// only a mismatch sure from the declarations is an error here; the rows an effect leaves are
/// checked against their schemas again before the act is held or committed.
fn arg_fits(op: &Operation, name: &str, field: Option<&Field>, at: &str) -> Result<(), String> {
    let (Some(arg), Some(field)) = (op.arg(name), field) else { return Ok(()) };
    fits(arg, field, at)
}

/// Whether `arg`'s checked value can be written into `field` (see [`arg_fits`]); an `objects`
/// argument into a list of objects, field by field, each element giving every field that is
/// not optional.
fn fits(arg: &Arg, field: &Field, at: &str) -> Result<(), String> {
    let name = &arg.name;
    let wrong = |what: &str| Err(format!("`{at}` is {}, and argument `{name}` is {what}", field.kind.name()));
    if arg.optional && !field.optional {
        return Err(format!("argument `{name}` is optional, but `{at}` is not: an act without it would break the row"));
    }
    let is_string =
        |kind: &Kind| matches!(kind, Kind::Text | Kind::Enum(_) | Kind::Date | Kind::Instant | Kind::Ref(_));
    match (&arg.kind, &field.kind) {
        (ArgKind::Enum { values, .. }, Kind::Enum(allowed)) => match values.iter().find(|v| !allowed.contains(v)) {
            Some(v) => Err(format!("`{at}` cannot hold `{v}`, a value of argument `{name}`")),
            None => Ok(()),
        },
        (ArgKind::Record { table }, Kind::Ref(target)) if table != target => {
            wrong(&format!("a row of `{table}`, not of `{target}`"))
        }
        (ArgKind::Integer { .. }, Kind::Integer) | (ArgKind::Bool, Kind::Bool) => Ok(()),
        (ArgKind::Integer { .. }, _) => wrong("an integer"),
        (ArgKind::Bool, _) => wrong("a boolean"),
        (ArgKind::Money, _) => wrong("money, written `{units, currency}`; write an amount with `money = …`"),
        (ArgKind::Records { .. } | ArgKind::Members { .. }, Kind::List(of)) if is_string(&of.kind) => Ok(()),
        (ArgKind::Records { .. } | ArgKind::Members { .. }, _) => wrong("a list of ids"),
        (ArgKind::Objects { fields, .. }, Kind::List(of)) => match &of.kind {
            Kind::Object(declared) => {
                for arg_field in fields {
                    let inner = format!("{at}.{}", arg_field.name);
                    let target = schema::step(of, &arg_field.name, at)?;
                    // An element's amount is written as the row's amounts are.
                    if !(matches!(arg_field.kind, ArgKind::Money) && matches!(target.kind, Kind::Money)) {
                        fits(arg_field, target, &inner)?;
                    }
                }
                match declared.iter().find(|(n, f)| !f.optional && !fields.iter().any(|a| a.name == **n)) {
                    Some((missing, _)) => Err(format!(
                        "the elements of argument `{name}` lack `{missing}`, which the elements of `{at}` need"
                    )),
                    None => Ok(()),
                }
            }
            other => Err(format!("`{at}` is a list of {}, and argument `{name}` a list of objects", other.name())),
        },
        (ArgKind::Objects { .. }, _) => wrong("a list of objects"),
        (_, kind) if is_string(kind) => Ok(()),
        _ => wrong("a string"),
    }
}

/// A path as the contract writes it: keyed segments in brackets.
fn path_text(path: &Path) -> String {
    let mut text = path.root.clone();
    for (i, field) in path.fields.iter().enumerate() {
        if path.keys.contains_key(&i) {
            text.push_str(&format!("[{field}]"));
        } else {
            text.push('.');
            text.push_str(field);
        }
    }
    text
}

/// A member argument's collection, a records argument's `same` and `require` fields, each
/// checked against the schema of the table they are in.
/// `equals`: its record is a `record` among `siblings` (the operation's arguments, or the
/// element's fields), and where that table is typed, its field exists and holds what the
/// argument's kind can equal.
fn check_equals(scope: &Scope<'_>, arg: &Arg, equals: &Equals, siblings: &[Arg]) -> Result<(), String> {
    let Equals { record, field } = equals;
    let table = match siblings.iter().find(|a| a.name == *record).map(|a| &a.kind) {
        Some(ArgKind::Record { table }) => table,
        _ => {
            let record = crate::text::visible(record);
            return Err(format!(
                "`equals`: `{record}` is not a `record` argument (or a `record` field of the element)"
            ));
        }
    };
    let Some(row) = scope.tables.iter().find(|t| t.name == *table).and_then(|t| t.schema.as_ref()) else {
        return Ok(());
    };
    let held = schema::step(row, field, table).map_err(|e| format!("`equals`: {e}"))?;
    let fits = matches!(
        (&arg.kind, &held.kind),
        (ArgKind::String { .. } | ArgKind::Enum { .. }, Kind::Text | Kind::Enum(_) | Kind::Ref(_))
            | (ArgKind::Date, Kind::Date | Kind::Text)
            | (ArgKind::Integer { .. }, Kind::Integer)
            | (ArgKind::Bool, Kind::Bool)
    );
    if fits {
        Ok(())
    } else {
        Err(format!("`equals`: `{table}.{field}` is {}, which this argument's kind never equals", held.kind.name()))
    }
}

fn check_arg_paths(scope: &Scope<'_>, op: &Operation, name: &str) -> Result<(), String> {
    let Some(arg) = op.arg(name) else { return Ok(()) };
    if let Some(equals) = &arg.equals {
        check_equals(scope, arg, equals, &op.args).map_err(|e| format!("argument `{name}`: {e}"))?;
    }
    match &arg.kind {
        ArgKind::Member { .. } | ArgKind::Members { .. } => root_field(scope, op, name).map(|_| ()),
        ArgKind::Objects { fields, .. } => {
            for field in fields {
                if let ArgKind::Member { of, path, key } = &field.kind {
                    member_of(scope, op, of, path, key.as_deref())
                        .map_err(|e| format!("argument `{name}`, field `{}`: {e}", field.name))?;
                }
                if let Some(equals) = &field.equals {
                    check_equals(scope, field, equals, fields)
                        .map_err(|e| format!("argument `{name}`, field `{}`: {e}", field.name))?;
                }
            }
            Ok(())
        }
        ArgKind::Records { table, pairs_with, same, require } => {
            let row = scope.tables.iter().find(|t| t.name == *table).and_then(|t| t.schema.as_ref());
            for (field, value) in require {
                literal_fits(sub_field(row, field, table)?, &format!("{table}.{field}"), value)
                    .map_err(|e| format!("argument `{name}`: `require`: {e}"))?;
            }
            if let Some(same) = same {
                sub_field(row, same, table).map_err(|e| format!("argument `{name}`: `same`: {e}"))?;
                if let Some(pair) = pairs_with {
                    let pair_field = root_field(scope, op, pair)?;
                    sub_field(pair_field, same, pair).map_err(|e| format!("argument `{name}`: `same`: {e}"))?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_pattern_matches_the_whole_value_only() {
        let either = StringPattern::compile("red|blue").unwrap();
        assert!(either.matches("red") && either.matches("blue"));
        for partial in ["reds", "dark blue", "red|blue", ""] {
            assert!(!either.matches(partial), "{partial:?}");
        }
        let message = StringPattern::compile("(a").unwrap_err();
        assert!(!message.contains('\n') && message.contains("does not compile"), "{message}");
        // The size limit bounds what one pattern may cost.
        assert!(StringPattern::compile("\\w{1000}{1000}").is_err());
    }

    #[test]
    fn expressions_parse_into_their_shape() {
        let e = parse_expr("sum(new_item_ids.price) - sum(item_ids.price)").unwrap();
        assert!(matches!(e, Expr::Sub(a, b) if matches!(*a, Expr::Sum(_)) && matches!(*b, Expr::Sum(_))));
        assert_eq!(parse_expr("-total").unwrap(), Expr::Neg(Box::new(Expr::Derived("total".into()))));
        assert!(parse_expr("sum(x.y").is_err());
        assert!(parse_expr("a * b").is_err());
        assert!(parse_expr("").is_err());
    }

    /// Files a contract loads: its policy file only (the rows are not read to load it).
    struct PolicyOnly;
    impl crate::contract::ContractFiles for PolicyOnly {
        fn read(&self, path: &str) -> Result<String, String> {
            match path {
                "policy.cedar" => Ok("permit (principal, action, resource);".into()),
                other => Err(format!("no `{other}`")),
            }
        }
    }

    const SHOWN: &str = r#"
[sources]
kinds = ["user", "agent"]
acts = "agent"

[actor]
table = "customer"

[records]
currency = "USD"

[[records.table]]
name = "customer"
file = "customers.json"
entity = "Customer"
key = "id"
fields.id = { kind = "text" }
fields.tier = { kind = "enum", values = ["silver", "gold"] }
fields.credit = { kind = "money" }
fields.log = { kind = "list", of = { kind = "object", fields = { what = { kind = "text" }, amount = { kind = "money", optional = true } } } }
fields.home = { kind = "object", fields = { city = { kind = "text" }, zip = { kind = "text", optional = true } } }

[[records.table]]
name = "note"
file = "notes.json"
entity = "Note"

[policies]
files = ["policy.cedar"]

[[operation]]
name = "shown"
consequential = true
args.tier = { kind = "enum", values = ["silver", "gold"] }
derive = [
  { name = "first_what", expr = "first(actor.log.what)" },
  { name = "owed", expr = "sum(actor.log.amount)" },
]

[[operation.effect]]
set = "actor.tier"
arg = "tier"

[[operation.effect]]
set = "actor.credit"
money = "owed"

[[operation.effect]]
append = "actor.log"
entry.what = { derived = "first_what" }
entry.amount = { money = "owed" }

[[operation]]
name = "move"
consequential = true
args.city = { kind = "text" }

[[operation.effect]]
set = "actor.home"
args = ["city"]

[[operation]]
name = "move_without_city"
consequential = true
args.zip = { kind = "text" }

[[operation.effect]]
set = "actor.home"
args = ["zip"]

[[operation]]
name = "through_list"
consequential = true

[[operation.effect]]
set = "actor.log.what"
value = "seen"

[[operation]]
name = "key"
consequential = true

[[operation.effect]]
set = "actor.id"
value = "someone"

[[operation]]
name = "untyped"
consequential = true
args.note = { kind = "record", table = "note" }

[[operation.effect]]
set = "note.text"
value = "seen"

[[operation]]
name = "computed"
consequential = true

[[operation.effect]]
set = "actor.tier"
cel = "'gold'"

[[operation]]
name = "not_held"

[[operation.effect]]
set = "actor.tier"
value = "gold"
"#;

    #[test]
    fn an_effect_is_shown_to_fit_only_where_each_step_writes_a_declared_field_of_a_typed_row() {
        use crate::sure_fit::Source;
        let contract = crate::contract::Contract::load("shown.toml", SHOWN, &PolicyOnly).unwrap();
        let shown = |name: &str| contract.operations().iter().find(|o| o.name == name).unwrap().sure_fit.clone();
        let sure = shown("shown").expect("every step of `shown` writes a declared field");
        assert_eq!(sure.roots, ["actor"]);
        // The amounts are not left to check: `money::record_number` writes what reads back.
        let left: Vec<&Source> = sure.values.iter().map(|(source, _)| source).collect();
        assert_eq!(left, [&Source::Arg("tier".into()), &Source::Derived("first_what".into())]);
        assert!(matches!(sure.values[0].1.kind, Kind::Enum(_)) && matches!(sure.values[1].1.kind, Kind::Text));
        let object = shown("move").expect("`move` writes an object of declared fields");
        assert_eq!(object.values.iter().map(|(s, _)| s).collect::<Vec<_>>(), [&Source::ArgAsGiven("city".into())]);
        // An object without a field it needs, a field of every element of a list, the row's key,
        // an untyped table, a value CEL computes: tried, not shown; and an operation that
        // commits at once is never tried.
        for name in ["move_without_city", "through_list", "key", "untyped", "computed", "not_held"] {
            assert_eq!(shown(name), None, "{name}");
        }
    }

    /// The bundled contracts, as `docs/records.md` says: their effects that write declared fields
    /// are held without a trial.
    #[test]
    #[allow(clippy::disallowed_methods, reason = "a test reads the bundled examples")]
    fn the_bundled_effects_that_write_declared_fields_are_shown_to_fit() {
        struct Folder(std::path::PathBuf);
        impl crate::contract::ContractFiles for Folder {
            fn read(&self, path: &str) -> Result<String, String> {
                std::fs::read_to_string(self.0.join(path)).map_err(|e| e.to_string())
            }
        }
        let shown = |example: &str| {
            let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(example);
            let text = std::fs::read_to_string(dir.join("contract.toml")).unwrap();
            let contract = crate::contract::Contract::load("contract.toml", &text, &Folder(dir)).unwrap();
            let ops = contract.operations().iter();
            ops.filter(|op| op.sure_fit.is_some()).map(|op| op.name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(shown("airline"), ["update_reservation_baggages"]);
        assert_eq!(
            shown("retail"),
            [
                "cancel_pending_order",
                "modify_pending_order_address",
                "modify_pending_order_payment",
                "return_delivered_order_items",
                "exchange_delivered_order_items",
                "modify_user_address"
            ]
        );
    }
}
