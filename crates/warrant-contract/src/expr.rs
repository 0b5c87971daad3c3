//! CEL expressions of the contract (the `cel` crate): compiled once when the contract loads,
//! evaluated for each act against the values it binds.
//!
//! Compiling is guarded: the source's length and bracket nesting are capped before the parser
//! sees it, the parser runs on a thread with a large stack, and the tree it builds is measured
//! (a left-associative chain such as `a + a + …` escapes the parser's own nesting limit). The
//! walker then collects every name and field path an expression reads, so the loader can
//! check them, and refuses a comprehension (`all`, `exists`, `exists_one`, `map`, `filter`)
//! over anything not known to be a list: CEL's maps iterate in an unspecified order, which
//! would make a result depend on the run.
//!
//! Evaluation is total: every failure is an [`EvalError`], and integer overflow is one. No
//! clock, environment or randomness is reachable from an expression; the turn's instant is a
//! value bound like any other.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use cel::extractors::{Arguments, This};
use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, Program, Value};
use serde_json::Value as Json;

/// The longest expression source accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 4096;
/// The deepest bracket nesting (`(`, `[`, `{`) accepted in the source.
pub const MAX_NESTING: usize = 32;
/// The deepest syntax tree accepted, macros expanded.
pub const MAX_TREE_DEPTH: usize = 64;
/// The most comprehensions one expression may hold.
pub const MAX_COMPREHENSIONS: usize = 16;
/// The deepest nesting of comprehensions inside one another.
pub const MAX_COMPREHENSION_NESTING: usize = 2;
/// The most JSON values (every array element, object member and scalar counted) the values
/// bound for one evaluation may hold together.
pub const MAX_INPUT_VALUES: usize = 100_000;

/// The parser's thread stack: its recursive descent takes a lot of it per level.
const PARSER_STACK: usize = 64 << 20;

/// The functions warrant adds to CEL's standard library.
pub const FUNCTIONS: [&str; 7] = ["min", "max", "sum", "last", "keys", "as_list", "row"];

/// The function that follows a reference: `row('TABLE', key)`, the row `key` of `TABLE`.
pub const ROW: &str = "row";

/// The field that steps into a list's element, in the paths [`Shapes::shape`] is asked about
/// for a comprehension's element variable: `items.all(i, i.all(…))` asks about `items.[]`.
pub const ELEMENT: &str = "[]";

/// How a path below `row('TABLE', …)` names its root in [`ReadPath::root`]: this prefix and
/// the table, which no CEL name can be.
pub const ROW_ROOT: &str = "row:";

/// The environment every expression compiles and runs in: the standard library and macros,
/// without the optional syntax (`a.?b`).
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(Env::stdlib().with_optional_support(false)));

/// What a compiled expression can be asked about the values it will read, so that a
/// comprehension's range is checked to be a list and every name is known.
pub trait Shapes {
    /// The shape of the value `root` holds, at `fields` below it (a list on the way is stepped
    /// through, element by element, as in the contract's paths).
    fn shape(&self, root: &str, fields: &[String]) -> Shape;

    /// Where the declared fields show that `fields` below `root` cannot be there: the index of
    /// the first field at fault and why. `None` where nothing is known or all is well.
    fn field_error(&self, root: &str, fields: &[String]) -> Option<(usize, String)> {
        let _ = (root, fields);
        None
    }

    /// Why `row(table, key)` cannot be followed: `table` is no table, or `key`, a path, reads
    /// a reference to another table. `None` when it can.
    fn row_error(&self, table: &str, key: Option<&ReadPath>) -> Option<String> {
        let _ = (table, key);
        None
    }
}

/// A path an expression reads, with the byte offset in its source of each field's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedPath {
    /// The path.
    pub path: ReadPath,
    /// The offset of each of `path.fields`, in order.
    pub offsets: Vec<usize>,
}

/// A `row(…)` call of an expression, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCall {
    /// The offset of the call.
    pub offset: usize,
    /// The table it names, where its first argument is a string literal.
    pub table: Option<String>,
    /// The path its key argument reads, where it is one.
    pub key: Option<ReadPath>,
    /// How many arguments it has.
    pub arity: usize,
}

/// What is known of a value before evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A list.
    List,
    /// A map (a row, a member, an object).
    Map,
    /// A number, string, boolean or instant.
    Scalar,
    /// Bound, but nothing is known of its shape.
    Unknown,
    /// No such name.
    Unbound,
}

/// A field path an expression reads: a bound name and fields below it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReadPath {
    /// The bound name.
    pub root: String,
    /// Fields below it.
    pub fields: Vec<String>,
}

/// A name an expression reads, with the byte offset of its first use in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameUse {
    /// The name.
    pub name: String,
    /// Byte offset in the source.
    pub offset: usize,
}

/// A compiled expression.
#[derive(Clone)]
pub struct Expression {
    source: Arc<str>,
    program: Arc<Program>,
    names: Vec<NameUse>,
    paths: BTreeSet<ReadPath>,
    located: Vec<LocatedPath>,
    rows: Vec<RowCall>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression").field("source", &self.source).finish_non_exhaustive()
    }
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for Expression {}

/// Why an expression does not compile, with the byte offset in its source at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// Byte offset in the expression's source.
    pub offset: usize,
    /// What is wrong, on one line.
    pub message: String,
}

impl CompileError {
    fn at(offset: usize, message: String) -> CompileError {
        CompileError { offset, message }
    }
}

/// Why an evaluation failed; the act it was for is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Expression {
    /// Compiles `source`: caps, parse, tree depth, and the names it reads.
    pub fn compile(source: &str) -> Result<Expression, CompileError> {
        precheck(source)?;
        let owned = source.to_owned();
        let parsed = std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn(move || parse(&owned))
            .map_err(|e| CompileError::at(0, format!("the parser's thread could not start: {e}")))?
            .join()
            .map_err(|_| CompileError::at(0, "the parser failed".into()))??;
        let program = parsed;
        let mut walk = Walk::new(&program);
        walk.expr(program.expression());
        let Walk { names, paths, located, rows, .. } = walk;
        Ok(Expression { source: source.into(), program: Arc::new(program), names, paths, located, rows })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The free names the expression reads (not those its comprehensions bind), each with the
    /// offset of its first use, in order of first use.
    pub fn names(&self) -> &[NameUse] {
        &self.names
    }

    /// The field paths it reads below its free names.
    pub fn paths(&self) -> &BTreeSet<ReadPath> {
        &self.paths
    }

    /// Whether it follows references (`row(…)`).
    pub fn follows(&self) -> bool {
        !self.rows.is_empty()
    }

    /// Checks every free name against `shapes`, every `row(…)` call, every field path against
    /// what `shapes` declares, and every comprehension's range to be a list.
    pub fn check(&self, shapes: &dyn Shapes) -> Result<(), CompileError> {
        for name in &self.names {
            if shapes.shape(&name.name, &[]) == Shape::Unbound {
                return Err(CompileError::at(name.offset, format!("`{}` is not a name here", name.name)));
            }
        }
        for call in &self.rows {
            let message = match (&call.table, call.arity) {
                (Some(table), 2) => shapes.row_error(table, call.key.as_ref()),
                _ => Some(format!(
                    "`{ROW}` takes a table's name, as a string literal, and a key: `{ROW}('flight', f.flight_number)`"
                )),
            };
            if let Some(message) = message {
                return Err(CompileError::at(call.offset, message));
            }
        }
        let mut located: Vec<&LocatedPath> = self.located.iter().collect();
        located.sort_by_key(|l| l.offsets.first().copied().unwrap_or(0));
        for LocatedPath { path, offsets } in located {
            if let Some((index, message)) = shapes.field_error(&path.root, &path.fields) {
                let offset = offsets.get(index).copied().unwrap_or_default();
                return Err(CompileError::at(offset, message));
            }
        }
        let mut ranges = Ranges { program: &self.program, shapes, scope: Vec::new() };
        ranges.expr(self.program.expression())
    }

    /// Evaluates the expression with `bindings` as its names; it follows no reference (a
    /// `row(…)` is a miss).
    pub fn evaluate(&self, bindings: &BTreeMap<String, Value>) -> Result<Value, EvalError> {
        self.evaluate_with(bindings, &RowLookup::default())
    }

    /// Evaluates the expression with `bindings` as its names and `rows` as the rows `row(…)`
    /// reaches. A row `rows` does not know yet is a miss: `row(…)` gives `null` in its place
    /// and `rows` records it, so that the caller fetches every miss and evaluates again; the
    /// result of an evaluation with misses is no answer.
    pub fn evaluate_with(&self, bindings: &BTreeMap<String, Value>, rows: &RowLookup) -> Result<Value, EvalError> {
        let mut context = Context::with_env(Arc::clone(&ENV));
        register(&mut context, rows).map_err(|e| EvalError(format!("the functions could not be declared: {e}")))?;
        for (name, value) in bindings {
            context.add_variable_from_value(name.clone(), value.clone());
        }
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.program.execute(&context)));
        match run {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(EvalError(describe(&error))),
            Err(_) => Err(EvalError("the evaluation stopped unexpectedly".into())),
        }
    }
}

/// The length and bracket-nesting caps, before the parser reads anything.
fn precheck(source: &str) -> Result<(), CompileError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(CompileError::at(
            0,
            format!("the expression is {} bytes long; at most {MAX_SOURCE_BYTES} are accepted", source.len()),
        ));
    }
    if source.trim().is_empty() {
        return Err(CompileError::at(0, "the expression is empty".into()));
    }
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (offset, c) in source.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(CompileError::at(offset, format!("brackets nest deeper than {MAX_NESTING} levels")));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses on the current (large-stack) thread and measures the tree there, so that a deep
/// tree is also dropped there.
fn parse(source: &str) -> Result<Program, CompileError> {
    let program = ENV.compile(source).map_err(|errors| {
        // The parser may report a consequence first (an incomplete node); a syntax error is
        // the cause.
        let first = errors.errors.iter().find(|e| e.msg.starts_with("Syntax error")).or(errors.errors.first());
        let (line, column) = first.map_or((1, 1), |e| e.pos);
        let message = first.map_or_else(|| "syntax error".to_owned(), |e| one_line(&e.msg));
        CompileError::at(offset_of(source, line, column), message)
    })?;
    let (depth, comprehensions, nesting) = measure(program.expression());
    if depth > MAX_TREE_DEPTH {
        return Err(CompileError::at(0, format!("the expression nests {depth} levels deep; at most {MAX_TREE_DEPTH}")));
    }
    if comprehensions > MAX_COMPREHENSIONS {
        return Err(CompileError::at(
            0,
            format!("the expression has {comprehensions} comprehensions; at most {MAX_COMPREHENSIONS}"),
        ));
    }
    if nesting > MAX_COMPREHENSION_NESTING {
        return Err(CompileError::at(
            0,
            format!("comprehensions nest {nesting} deep; at most {MAX_COMPREHENSION_NESTING}"),
        ));
    }
    Ok(program)
}

/// The parser's message on one line, without the list of every token it expected.
fn one_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let short = first.split(" expecting ").next().unwrap_or(first);
    match short.strip_prefix("Syntax error: ") {
        Some(rest) => format!("syntax error: {rest}"),
        None => short.to_owned(),
    }
}

/// The byte offset of a 1-based line and (character) column of `source`.
fn offset_of(source: &str, line: isize, column: isize) -> usize {
    let mut start = 0usize;
    for (i, text) in source.split_inclusive('\n').enumerate() {
        if isize::try_from(i + 1).is_ok_and(|n| n == line) {
            let skip = usize::try_from(column.saturating_sub(1)).unwrap_or(0);
            let within = text.char_indices().nth(skip).map_or(text.len(), |(b, _)| b);
            return start + within;
        }
        start += text.len();
    }
    source.len()
}

/// The children of a node.
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    let mut out = Vec::new();
    match &e.expr {
        Expr::Call(c) => {
            out.extend(c.target.as_deref());
            out.extend(&c.args);
        }
        Expr::Select(s) => out.push(&*s.operand),
        Expr::List(l) => out.extend(&l.elements),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    out.push(&me.key);
                    out.push(&me.value);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    out.push(&f.value);
                }
            }
        }
        Expr::Comprehension(c) => out.extend([&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result]),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    out
}

/// The tree's depth, its comprehension count and their nesting, measured without recursion
/// (the tree may be thousands deep).
fn measure(root: &IdedExpr) -> (usize, usize, usize) {
    let (mut depth, mut count, mut nesting) = (0, 0, 0);
    // (node, its depth, how many comprehension bodies it is inside)
    let mut stack = vec![(root, 1usize, 0usize)];
    while let Some((e, d, n)) = stack.pop() {
        depth = depth.max(d);
        nesting = nesting.max(n);
        if let Expr::Comprehension(c) = &e.expr {
            count += 1;
            nesting = nesting.max(n + 1);
            stack.extend([(&c.iter_range, d + 1, n), (&c.accu_init, d + 1, n)]);
            stack.extend([&c.loop_cond, &c.loop_step, &c.result].map(|part| (part, d + 1, n + 1)));
        } else {
            stack.extend(children(e).into_iter().map(|c| (c, d + 1, n)));
        }
    }
    (depth, count, nesting)
}

/// A name bound inside a comprehension: the element path of its range (with the offsets of
/// its fields), if known.
#[derive(Clone)]
struct Local {
    name: String,
    path: Option<(ReadPath, Vec<usize>)>,
}

/// The table a `row('TABLE', key)` call names, where it is written so.
fn row_table(c: &cel::common::ast::CallExpr) -> Option<String> {
    match c.args.first().map(|a| &a.expr) {
        Some(Expr::Literal(LiteralValue::String(table))) if c.args.len() == 2 => Some(table.inner().to_owned()),
        _ => None,
    }
}

/// Where a subtree's text starts: the least offset of its nodes (a selection's own offset is
/// its `.`).
fn start_offset(program: &Program, root: &IdedExpr) -> usize {
    let mut least = usize::MAX;
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Some((start, _)) = program.source_info().offset_for(e.id) {
            least = least.min(start as usize);
        }
        stack.extend(children(e));
    }
    if least == usize::MAX { 0 } else { least }
}

/// The walk that collects free names and paths (the tree's depth is already bounded).
struct Walk<'p> {
    program: &'p Program,
    scope: Vec<Local>,
    names: Vec<NameUse>,
    paths: BTreeSet<ReadPath>,
    located: Vec<LocatedPath>,
    rows: Vec<RowCall>,
}

impl<'p> Walk<'p> {
    fn new(program: &'p Program) -> Walk<'p> {
        Walk {
            program,
            scope: Vec::new(),
            names: Vec::new(),
            paths: BTreeSet::new(),
            located: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Records a path read, once.
    fn read(&mut self, (path, offsets): (ReadPath, Vec<usize>)) {
        if self.paths.insert(path.clone()) {
            self.located.push(LocatedPath { path, offsets });
        }
    }

    /// A `row(…)` call: its key walked as any expression, the call recorded.
    fn row_call(&mut self, e: &IdedExpr, c: &cel::common::ast::CallExpr) -> Option<(ReadPath, Vec<usize>)> {
        let table = row_table(c);
        let key = c.args.get(1).and_then(|k| self.path(k));
        for arg in &c.args {
            self.expr(arg);
        }
        let offset = start_offset(self.program, e);
        self.rows.push(RowCall { offset, table: table.clone(), key: key.map(|(p, _)| p), arity: c.args.len() });
        table.map(|t| (ReadPath { root: format!("{ROW_ROOT}{t}"), fields: Vec::new() }, Vec::new()))
    }

    fn offset(&self, e: &IdedExpr) -> usize {
        self.program.source_info().offset_for(e.id).map_or(0, |(start, _)| start as usize)
    }

    /// The path `e` reads, if it is a name (or a `row(…)`) followed by fields, with the offset
    /// of each field's name.
    fn path(&mut self, e: &IdedExpr) -> Option<(ReadPath, Vec<usize>)> {
        match &e.expr {
            Expr::Ident(name) => match self.scope.iter().rev().find(|l| l.name == *name) {
                Some(local) => local.path.clone(),
                None => {
                    if !self.names.iter().any(|n| n.name == *name) {
                        let offset = self.offset(e);
                        self.names.push(NameUse { name: name.clone(), offset });
                    }
                    Some((ReadPath { root: name.clone(), fields: Vec::new() }, Vec::new()))
                }
            },
            Expr::Select(s) => {
                let (mut path, mut offsets) = self.path(&s.operand)?;
                path.fields.push(s.field.clone());
                // A selection's offset is its `.`; the field's name follows it.
                offsets.push(self.offset(e) + 1);
                Some((path, offsets))
            }
            Expr::Call(c) if c.func_name == operators::INDEX && c.target.is_none() => {
                let [operand, index] = c.args.as_slice() else { return None };
                self.expr(index);
                let (mut path, mut offsets) = self.path(operand)?;
                if let Expr::Literal(LiteralValue::String(field)) = &index.expr {
                    path.fields.push(field.inner().to_owned());
                    offsets.push(self.offset(index));
                }
                Some((path, offsets))
            }
            Expr::Call(c) if c.func_name == ROW && c.target.is_none() => self.row_call(e, c),
            _ => None,
        }
    }

    fn expr(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Ident(_) | Expr::Select(_) => {
                if let Some(path) = self.path(e) {
                    self.read(path);
                } else if let Expr::Select(s) = &e.expr {
                    self.expr(&s.operand);
                }
            }
            Expr::Call(c) if c.func_name == operators::INDEX && c.target.is_none() => {
                if let Some(path) = self.path(e) {
                    self.read(path);
                } else {
                    for child in &c.args {
                        self.expr(child);
                    }
                }
            }
            Expr::Call(c) if c.func_name == ROW && c.target.is_none() => {
                if let Some(path) = self.row_call(e, c) {
                    self.read(path);
                }
            }
            Expr::Comprehension(c) => {
                let element = self.path(&c.iter_range);
                if element.is_none() {
                    self.expr(&c.iter_range);
                } else if let Some(path) = &element {
                    self.read(path.clone());
                }
                self.expr(&c.accu_init);
                let mut locals = vec![Local { name: c.accu_var.clone(), path: None }];
                // With two variables the first is the index (or key) and the second the element.
                match &c.iter_var2 {
                    Some(second) => {
                        locals.push(Local { name: c.iter_var.clone(), path: None });
                        locals.push(Local { name: second.clone(), path: element });
                    }
                    None => locals.push(Local { name: c.iter_var.clone(), path: element }),
                }
                let depth = self.scope.len();
                self.scope.extend(locals);
                for part in [&c.loop_cond, &c.loop_step, &c.result] {
                    self.expr(part);
                }
                self.scope.truncate(depth);
            }
            _ => {
                for child in children(e) {
                    self.expr(child);
                }
            }
        }
    }
}

/// The walk that checks every comprehension's range is a list.
struct Ranges<'a> {
    program: &'a Program,
    shapes: &'a dyn Shapes,
    scope: Vec<(String, Option<ReadPath>)>,
}

impl Ranges<'_> {
    fn path(&self, e: &IdedExpr) -> Option<ReadPath> {
        match &e.expr {
            Expr::Ident(name) => match self.scope.iter().rev().find(|(n, _)| n == name) {
                Some((_, path)) => path.clone(),
                None => Some(ReadPath { root: name.clone(), fields: Vec::new() }),
            },
            Expr::Select(s) if !s.test => {
                let mut path = self.path(&s.operand)?;
                path.fields.push(s.field.clone());
                Some(path)
            }
            Expr::Call(c) if c.func_name == operators::INDEX && c.target.is_none() => {
                let [operand, index] = c.args.as_slice() else { return None };
                let mut path = self.path(operand)?;
                if let Expr::Literal(LiteralValue::String(field)) = &index.expr {
                    path.fields.push(field.inner().to_owned());
                }
                Some(path)
            }
            Expr::Call(c) if c.func_name == ROW && c.target.is_none() => {
                row_table(c).map(|t| ReadPath { root: format!("{ROW_ROOT}{t}"), fields: Vec::new() })
            }
            _ => None,
        }
    }

    /// Whether `e` is known to evaluate to a list (or to fail).
    fn is_list(&self, e: &IdedExpr) -> bool {
        match &e.expr {
            Expr::List(_) => true,
            Expr::Comprehension(c) => matches!(c.accu_init.expr, Expr::List(_)),
            Expr::Call(c) if c.func_name == "keys" || c.func_name == "as_list" => true,
            Expr::Call(c) if c.func_name == operators::CONDITIONAL => {
                c.args.get(1).is_some_and(|a| self.is_list(a)) && c.args.get(2).is_some_and(|a| self.is_list(a))
            }
            Expr::Call(c) if c.func_name == operators::ADD => c.args.iter().all(|a| self.is_list(a)),
            _ => self.path(e).is_some_and(|p| self.shapes.shape(&p.root, &p.fields) == Shape::List),
        }
    }

    fn expr(&mut self, e: &IdedExpr) -> Result<(), CompileError> {
        if let Expr::Comprehension(c) = &e.expr {
            if !self.is_list(&c.iter_range) {
                let offset = start_offset(self.program, &c.iter_range);
                let shown = self.path(&c.iter_range).map_or_else(
                    || "its range".to_owned(),
                    |p| format!("`{}`", std::iter::once(p.root).chain(p.fields).collect::<Vec<_>>().join(".")),
                );
                return Err(CompileError::at(
                    offset,
                    format!(
                        "a comprehension (all, exists, exists_one, map, filter) over {shown}, which is not known to \
                         be a list; a map's order is unspecified: iterate a list argument, a list, `keys(m)` or \
                         `as_list(x)`"
                    ),
                ));
            }
            self.expr(&c.iter_range)?;
            self.expr(&c.accu_init)?;
            let element = self.path(&c.iter_range).map(|mut p| {
                p.fields.push(ELEMENT.to_owned());
                p
            });
            let depth = self.scope.len();
            self.scope.push((c.accu_var.clone(), None));
            match &c.iter_var2 {
                Some(second) => {
                    self.scope.push((c.iter_var.clone(), None));
                    self.scope.push((second.clone(), element));
                }
                None => self.scope.push((c.iter_var.clone(), element)),
            }
            for part in [&c.loop_cond, &c.loop_step, &c.result] {
                self.expr(part)?;
            }
            self.scope.truncate(depth);
            return Ok(());
        }
        for child in children(e) {
            self.expr(child)?;
        }
        Ok(())
    }
}

/// The error as one deterministic line: a map's contents (printed in hash order) never in it.
fn describe(error: &ExecutionError) -> String {
    let shown = match error {
        ExecutionError::NoSuchKey(key) => format!("no such field: `{key}`"),
        ExecutionError::UndeclaredReference(name) => format!("`{name}` is not bound"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "remainder by zero".to_owned(),
        ExecutionError::Overflow(op, _, _) => format!("integer overflow in `{op}`"),
        ExecutionError::IndexOutOfBounds(_) => "index out of bounds".to_owned(),
        other => other.to_string(),
    };
    let shown = if shown.contains("Map(") { "the evaluation failed on a map value".to_owned() } else { shown };
    let shown = shown.replace('\n', " ");
    match shown.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", shown.get(..cut).unwrap_or_default()),
        None => shown,
    }
}

fn function_error(name: &str, message: &str) -> ExecutionError {
    ExecutionError::function_error(name, message)
}

/// `min(list)`, `list.min()`, `min(a, b, …)` (and `max`): an empty list and values that do
/// not compare are errors.
fn extreme(
    ftx: &cel::FunctionContext<'_, '_>,
    this: Value,
    args: &[Value],
    keep: std::cmp::Ordering,
) -> Result<Value, ExecutionError> {
    let name = ftx.name;
    let called_on = [this];
    let given: &[Value] = if ftx.this.is_some() { &called_on } else { args };
    let items: &[Value] = match given {
        [Value::List(list)] => list,
        other => other,
    };
    let mut best = items.first().ok_or_else(|| function_error(name, "of an empty list"))?;
    for item in items.iter().skip(1) {
        match item.partial_cmp(best) {
            Some(order) if order == keep => best = item,
            Some(_) => {}
            None => return Err(function_error(name, "of values that do not compare")),
        }
    }
    Ok(best.clone())
}

/// `min` (`GREATEST` false) or `max` as CEL calls it.
fn extreme_of<const GREATEST: bool>(
    ftx: &cel::FunctionContext<'_, '_>,
    This(this): This<Value>,
    Arguments(args): Arguments,
) -> Result<Value, ExecutionError> {
    let keep = if GREATEST { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less };
    extreme(ftx, this, &args, keep)
}

/// `sum(list)`: integers added with overflow checked (0 for an empty list).
fn sum(This(list): This<Arc<Vec<Value>>>) -> Result<Value, ExecutionError> {
    let mut total: i64 = 0;
    for item in list.iter() {
        let Value::Int(n) = item else { return Err(function_error("sum", "of a value that is not an integer")) };
        total = total.checked_add(*n).ok_or_else(|| function_error("sum", "integer overflow"))?;
    }
    Ok(Value::Int(total))
}

/// `keys(map)`: a map's keys as a sorted list, so a map can be iterated deterministically.
fn keys(This(value): This<Value>) -> Result<Value, ExecutionError> {
    let Value::Map(map) = value else { return Err(function_error("keys", "of a value that is not a map")) };
    let mut keys: Vec<&Key> = map.map.keys().collect();
    keys.sort();
    let list = keys
        .into_iter()
        .map(|k| match k {
            Key::Int(n) => Value::Int(*n),
            Key::Uint(n) => Value::UInt(*n),
            Key::Bool(b) => Value::Bool(*b),
            Key::String(s) => Value::String(Arc::clone(s)),
        })
        .collect();
    Ok(Value::List(Arc::new(list)))
}

/// A row `row(…)` names: its table and key.
pub type RowName = (String, String);

/// What `row(…)` knows while an expression is evaluated: the rows fetched so far (`None` for a
/// row that does not exist, or that the actor may not see), the rows it was asked for and did
/// not know (in the order asked), and the first known-missing row it was asked for.
#[derive(Debug, Default)]
struct Lookup {
    known: BTreeMap<RowName, Option<Value>>,
    misses: Vec<RowName>,
    absent: Option<RowName>,
}

/// The rows `row(…)` reaches in one expression's evaluations, shared with the function.
#[derive(Debug, Clone, Default)]
pub struct RowLookup(Arc<std::sync::Mutex<Lookup>>);

impl RowLookup {
    fn with<T>(&self, f: impl FnOnce(&mut Lookup) -> T) -> Result<T, EvalError> {
        let mut lookup = self.0.lock().map_err(|_| EvalError("the rows followed could not be read".into()))?;
        Ok(f(&mut lookup))
    }

    /// Records a fetched row (`None`: there is none the actor may see).
    pub fn insert(&self, table: &str, key: &str, row: Option<Value>) -> Result<(), EvalError> {
        self.with(|l| {
            l.known.insert((table.to_owned(), key.to_owned()), row);
        })
    }

    /// Starts an evaluation: no row asked for yet.
    pub fn begin_round(&self) -> Result<(), EvalError> {
        self.with(|l| {
            l.misses.clear();
            l.absent = None;
        })
    }

    /// The rows asked for and not known since the last call, in the order asked.
    pub fn take_misses(&self) -> Result<Vec<RowName>, EvalError> {
        self.with(|l| std::mem::take(&mut l.misses))
    }

    /// The first row asked for that is known not to exist, if any.
    pub fn absent(&self) -> Result<Option<RowName>, EvalError> {
        self.with(|l| l.absent.clone())
    }

    /// How many rows are known (fetched, or known not to be there).
    pub fn known_rows(&self) -> Result<usize, EvalError> {
        self.with(|l| l.known.len())
    }

    /// `row(table, key)` as CEL calls it.
    fn get(&self, table: &str, key: &str) -> Result<Value, ExecutionError> {
        let name = (table.to_owned(), key.to_owned());
        let found = self.with(|l| match l.known.get(&name) {
            Some(Some(row)) => Ok(row.clone()),
            Some(None) => {
                l.absent.get_or_insert_with(|| name.clone());
                Err(function_error(ROW, &format!("table `{table}` has no row `{key}`")))
            }
            None => {
                if !l.misses.contains(&name) {
                    l.misses.push(name.clone());
                }
                Ok(Value::Null)
            }
        });
        found.map_err(|e| function_error(ROW, &e.0))?
    }
}

/// Declares warrant's functions ([`FUNCTIONS`]) on a fresh context, `row` reading `rows`.
fn register(context: &mut Context<'_, '_>, rows: &RowLookup) -> Result<(), cel::DeclarationError> {
    let lookup = rows.clone();
    context.add_function(ROW, move |Arguments(args): Arguments| match args.as_slice() {
        [Value::String(table), Value::String(key)] => lookup.get(table, key),
        _ => Err(function_error(ROW, "takes a table's name and a key, both strings")),
    })?;
    context.add_function("min", extreme_of::<false>)?;
    context.add_function("max", extreme_of::<true>)?;
    context.add_function("sum", sum)?;
    context.add_function("last", |This(list): This<Arc<Vec<Value>>>| {
        list.last().cloned().ok_or_else(|| function_error("last", "of an empty list"))
    })?;
    context.add_function("keys", keys)?;
    context.add_function("as_list", |This(value): This<Value>| match value {
        list @ Value::List(_) => Ok(list),
        _ => Err(function_error("as_list", "of a value that is not a list")),
    })?;
    Ok(())
}

/// Converts JSON for binding, counting values against [`MAX_INPUT_VALUES`] in `budget`.
pub fn from_json(value: &Json, budget: &mut usize) -> Result<Value, EvalError> {
    *budget = budget.checked_sub(1).ok_or_else(|| {
        EvalError(format!("the values an expression reads hold more than {MAX_INPUT_VALUES} elements"))
    })?;
    Ok(match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::UInt(u),
            (None, None, Some(f)) => Value::Float(f),
            (None, None, None) => return Err(EvalError(format!("`{n}` is not a number CEL holds"))),
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => {
            Value::List(Arc::new(items.iter().map(|v| from_json(v, budget)).collect::<Result<_, _>>()?))
        }
        Json::Object(members) => {
            let map = members
                .iter()
                .map(|(k, v)| Ok((Key::String(Arc::new(k.clone())), from_json(v, budget)?)))
                .collect::<Result<_, EvalError>>()?;
            Value::Map(Map { map: Arc::new(map) })
        }
    })
}

/// A result as JSON, a map's members in key order; an instant in RFC 3339.
pub fn to_json(value: &Value) -> Result<Json, EvalError> {
    Ok(match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(n) => Json::from(*n),
        Value::UInt(n) => Json::from(*n),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| EvalError(format!("`{f}` is not a finite number")))?,
        Value::String(s) => Json::String(s.as_ref().clone()),
        Value::List(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(map) => {
            let sorted: BTreeMap<&Key, &Value> = map.map.iter().collect();
            let mut out = serde_json::Map::new();
            for (key, value) in sorted {
                let Key::String(name) = key else {
                    return Err(EvalError("a map with keys that are not strings cannot be written".into()));
                };
                out.insert(name.as_ref().clone(), to_json(value)?);
            }
            Json::Object(out)
        }
        Value::Timestamp(at) => Json::String(at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        other => return Err(EvalError(format!("a {} value cannot be written", type_name(other)))),
    })
}

/// The CEL type of a value, for messages.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Function(..) => "function",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Duration(_) => "duration",
        Value::Timestamp(_) => "timestamp",
        Value::Opaque(_) => "opaque",
        Value::Struct(_) => "message",
        Value::Null => "null",
    }
}

/// An instant (seconds and nanoseconds since the Unix epoch) as a CEL timestamp, in UTC.
pub fn timestamp(seconds: i64, nanos: u32) -> Result<Value, EvalError> {
    chrono::DateTime::from_timestamp(seconds, nanos)
        .map(|at| Value::Timestamp(at.fixed_offset()))
        .ok_or_else(|| EvalError("the turn's instant is out of CEL's range".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names as an operation binds them: `items` is a list, `order` a row, `now` an instant.
    struct Op;

    impl Shapes for Op {
        fn shape(&self, root: &str, fields: &[String]) -> Shape {
            match (root, fields) {
                ("items", []) => Shape::List,
                ("order", []) => Shape::Map,
                ("order" | "items", _) => Shape::Unknown,
                ("n" | "now", _) => Shape::Scalar,
                _ => Shape::Unbound,
            }
        }
    }

    fn eval(source: &str, bindings: &[(&str, Json)]) -> Result<Value, EvalError> {
        let expression = Expression::compile(source).unwrap();
        expression.check(&Op).unwrap();
        let mut budget = MAX_INPUT_VALUES;
        let bound = bindings.iter().map(|(k, v)| ((*k).to_owned(), from_json(v, &mut budget).unwrap())).collect();
        expression.evaluate(&bound)
    }

    fn items() -> Json {
        serde_json::json!([{"price": 500, "ok": true}, {"price": 1250, "ok": false}, {"price": 75, "ok": true}])
    }

    #[test]
    fn lists_fold_with_the_functions_warrant_adds() {
        let i = items();
        assert_eq!(eval("sum(items.map(i, i.price))", &[("items", i.clone())]), Ok(Value::Int(1825)));
        assert_eq!(eval("items.map(i, i.price).max()", &[("items", i.clone())]), Ok(Value::Int(1250)));
        assert_eq!(eval("min(items.map(i, i.price))", &[("items", i.clone())]), Ok(Value::Int(75)));
        assert_eq!(eval("items.last().price", &[("items", i.clone())]), Ok(Value::Int(75)));
        assert_eq!(eval("items.filter(i, i.ok).size() == 2", &[("items", i.clone())]), Ok(Value::Bool(true)));
        assert_eq!(eval("items.all(i, i.price > 0) ? 1 : 2", &[("items", i)]), Ok(Value::Int(1)));
        let order = serde_json::json!({"b": 1, "a": 2, "c": 3});
        let keys = eval("keys(order).map(k, order[k])", &[("order", order)]).unwrap();
        assert_eq!(to_json(&keys).unwrap(), serde_json::json!([2, 1, 3]));
    }

    #[test]
    fn every_evaluation_error_fails_closed_with_a_message() {
        let i = items();
        let cases: [(&str, &str); 10] = [
            ("order.nope", "no such field"),
            ("1 / (size(items) - 3)", "division by zero"),
            ("9223372036854775807 + size(items)", "integer overflow"),
            ("sum([9223372036854775807, 1])", "integer overflow"),
            ("items[7]", "out of bounds"),
            ("[].last()", "empty list"),
            ("max([])", "empty list"),
            ("1 + 1.0", "add"),
            ("timestamp('soon')", "timestamp"),
            ("as_list(order)", "not a list"),
        ];
        for (source, says) in cases {
            let error = eval(source, &[("items", i.clone()), ("order", serde_json::json!({"a": 1}))]).unwrap_err();
            assert!(error.0.contains(says), "{source}: {error}");
            assert!(!error.0.contains('\n'), "{source}: {error}");
        }
    }

    #[test]
    fn a_comprehension_over_what_is_not_known_to_be_a_list_is_refused() {
        for source in ["order.map(k, k)", "order.items.all(i, i.ok)", "{'b': 1, 'a': 2}.map(k, k)"] {
            let error = Expression::compile(source).unwrap().check(&Op).unwrap_err();
            assert!(error.message.contains("not known to be a list"), "{source}: {}", error.message);
        }
        for source in [
            "items.all(i, i.ok)",
            "[1, 2].exists(x, x > 1)",
            "as_list(order.items).all(i, i.ok)",
            "keys(order).all(k, k != '')",
            "items.filter(i, i.ok).map(i, i.price).all(p, p > 0)",
        ] {
            Expression::compile(source).unwrap().check(&Op).unwrap_or_else(|e| panic!("{source}: {e:?}"));
        }
    }

    #[test]
    fn an_unknown_name_is_refused_at_its_offset() {
        let error = Expression::compile("items.all(i, i.ok) && nope > 1").unwrap().check(&Op).unwrap_err();
        assert_eq!((error.offset, error.message.as_str()), (22, "`nope` is not a name here"));
    }

    #[test]
    fn names_and_paths_are_collected_through_comprehensions() {
        let e = Expression::compile("items.all(i, i.price > order.floor.units) && has(order.note) && order['k'] == n")
            .unwrap();
        let names: Vec<&str> = e.names().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["items", "order", "n"]);
        let paths: Vec<String> = e
            .paths()
            .iter()
            .map(|p| std::iter::once(p.root.clone()).chain(p.fields.clone()).collect::<Vec<_>>().join("."))
            .collect();
        assert_eq!(paths, ["items", "items.price", "n", "order.floor.units", "order.k", "order.note"]);
    }

    #[test]
    fn a_syntax_error_names_its_offset_in_the_source() {
        let error = Expression::compile("'é' +\n  )").unwrap_err();
        assert_eq!(error.offset, "'é' +\n  ".len(), "{error:?}");
        assert!(error.message.starts_with("syntax error: mismatched input ')'"), "{}", error.message);
        assert!(Expression::compile("  ").is_err());
    }

    #[test]
    fn oversized_and_deep_expressions_are_refused_cleanly() {
        let long = format!("1{}", " + 1".repeat(25_000));
        assert!(Expression::compile(&long).unwrap_err().message.contains("bytes long"));
        let nested = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(Expression::compile(&nested).unwrap_err().message.contains("bytes long"));
        let nested = format!("{}1{}", "[".repeat(1_000), "]".repeat(1_000));
        let error = Expression::compile(&nested).unwrap_err();
        assert_eq!((error.offset, error.message.contains("nest deeper")), (MAX_NESTING, true), "{error:?}");
        // A chain escapes the parser's nesting limit; it is measured after parsing.
        let chain = format!("n{}", " + n".repeat(1_000));
        assert!(Expression::compile(&chain).unwrap_err().message.contains("levels deep"));
        let chain = format!("n{}", "+n".repeat(5_000));
        assert!(Expression::compile(&chain).unwrap_err().message.contains("bytes long"));
        let nested = "items.all(a, items.all(b, items.all(c, true)))";
        assert!(Expression::compile(nested).unwrap_err().message.contains("comprehensions nest"));
    }

    #[test]
    fn the_deepest_expressions_accepted_evaluate_on_a_test_thread() {
        let chain = format!("n{}", " + n".repeat(MAX_TREE_DEPTH - 2));
        let nested = format!("{}n{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        let lists = format!("size({}n{}) == 1", "[".repeat(MAX_NESTING - 1), "]".repeat(MAX_NESTING - 1));
        let bound = BTreeMap::from([("n".to_owned(), Value::Int(1))]);
        let depth = i64::try_from(MAX_TREE_DEPTH - 1).unwrap();
        assert_eq!(Expression::compile(&chain).unwrap().evaluate(&bound), Ok(Value::Int(depth)));
        assert_eq!(Expression::compile(&nested).unwrap().evaluate(&bound), Ok(Value::Int(1)));
        assert_eq!(Expression::compile(&lists).unwrap().evaluate(&bound), Ok(Value::Bool(true)));
    }

    #[test]
    fn results_are_the_same_on_every_run() {
        let order = serde_json::json!({"z": 1, "y": 2, "x": 3, "w": 4, "v": 5, "u": 6, "t": 7, "s": 8});
        let first = to_json(&eval("{'m': order, 'k': keys(order)}", &[("order", order.clone())]).unwrap()).unwrap();
        for _ in 0..20 {
            let again = to_json(&eval("{'m': order, 'k': keys(order)}", &[("order", order.clone())]).unwrap()).unwrap();
            assert_eq!(serde_json::to_string(&again).unwrap(), serde_json::to_string(&first).unwrap());
        }
        let error = eval("order + 1", &[("order", order)]).unwrap_err();
        assert!(!error.0.contains("\"z\""), "a map's contents are not shown: {error}");
    }

    #[test]
    fn the_input_an_expression_reads_is_capped() {
        let big = Json::Array(vec![Json::from(1); MAX_INPUT_VALUES]);
        let mut budget = MAX_INPUT_VALUES;
        assert!(from_json(&big, &mut budget).unwrap_err().0.contains("more than"));
    }

    #[test]
    fn instants_compare_and_subtract() {
        let now = timestamp(1_764_547_200, 0).unwrap();
        let e = Expression::compile("now - timestamp('2025-11-30T00:00:00Z') < duration('25h')").unwrap();
        let bound = BTreeMap::from([("now".to_owned(), now.clone())]);
        assert_eq!(e.evaluate(&bound), Ok(Value::Bool(true)));
        assert_eq!(to_json(&now).unwrap(), Json::String("2025-12-01T00:00:00Z".into()));
    }
}
