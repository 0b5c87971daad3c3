//! `warrant_gate._native`: the engine in a Python process. One `Gate` holds one engine over
//! one store behind a mutex; every call converts its dict to JSON with the GIL held, then
//! releases the GIL while the engine decides, so Python threads sharing a gate run their turns
//! one at a time in the engine and in parallel everywhere else.
//!
//! Requests and answers are the wire JSON of `docs/design.md` as dicts, converted to JSON text
//! without recursion (`wire.rs`) and read by the engine as the CLI reads the same text; the
//! `*_json` methods take the model's own text. Whatever the engine
//! refuses is raised as one of the exception classes of `warrant_gate._errors` (defined in
//! Python, so the HTTP client raises the very same ones), carrying the stable reason code and
//! the field at fault.
//!
//! Tool definitions (`Gate.tools`, `tools`) come from warrant-core's generator
//! (`warrant_core::tools`), the one `warrant tools` prints, so a model is offered exactly what
//! the contract checks.

mod wire;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::{Value, json};

use warrant_core::Contract;
use warrant_core::reason::ReasonCode;
use warrant_core::report;
use warrant_core::tools::ToolFormat;
use warrant_engine::{
    BuildError, Engine, EngineError, OutboundResult, OutcomeReply, OutcomeRow, Submitted, TurnResult,
};
use warrant_store::{AnyStore, Precondition, RecordConflict};

/// An error on its way to Python: the reason code, the field at fault and the message.
#[derive(Debug)]
pub(crate) struct Refusal {
    code: ReasonCode,
    field: Option<String>,
    message: String,
}

impl Refusal {
    pub(crate) fn new(code: ReasonCode, field: Option<&str>, message: impl Into<String>) -> Refusal {
        Refusal { code, field: field.filter(|f| !f.is_empty()).map(str::to_owned), message: message.into() }
    }

    /// The exception `warrant_gate._errors.error_for` makes for this code.
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        let made = py
            .import("warrant_gate._errors")
            .and_then(|module| module.getattr("error_for"))
            .and_then(|make| make.call1((self.message, self.code.as_str(), self.field)));
        match made {
            Ok(error) => PyErr::from_value(error),
            Err(error) => error,
        }
    }
}

impl From<EngineError> for Refusal {
    /// The code each engine error has at the service (`warrant serve` answers the same).
    fn from(error: EngineError) -> Refusal {
        let message = error.to_string();
        match error {
            EngineError::Contention(_) => Refusal::new(ReasonCode::Contention, None, message),
            EngineError::UnknownTable(_) => Refusal::new(ReasonCode::UnknownTable, Some("table"), message),
            EngineError::InvalidRow(row) => Refusal::new(ReasonCode::InvalidRecord, row.field(), message),
            EngineError::InvalidImport { .. } => Refusal::new(ReasonCode::InvalidInput, None, message),
            EngineError::Conflict(RecordConflict::Absent { .. }) => {
                Refusal::new(ReasonCode::UnknownRecord, Some("key"), message)
            }
            EngineError::Conflict(RecordConflict::Present { .. }) => {
                Refusal::new(ReasonCode::StaleRevision, Some("if-none-match"), message)
            }
            EngineError::Conflict(_) => Refusal::new(ReasonCode::StaleRevision, Some("if-match"), message),
            _ => Refusal::new(ReasonCode::Internal, None, message),
        }
    }
}

impl From<warrant_core::request::RequestError> for Refusal {
    fn from(error: warrant_core::request::RequestError) -> Refusal {
        Refusal::new(error.code, Some(&error.field), error.message)
    }
}

/// A Python value as JSON text read strictly (one object, no repeated key, no U+0000), as the
/// service reads a body; what does not convert is a request error naming the field at fault.
fn strict_text(value: &Bound<'_, PyAny>, field: &str) -> Result<String, Refusal> {
    let text = wire::to_text(value, field, true)?;
    warrant_core::wire::check(&text)?;
    Ok(text)
}

/// A `str` argument, or a request error naming it.
fn text_arg(value: &Bound<'_, PyAny>, field: &str) -> Result<String, Refusal> {
    let refuse = |what: String| Refusal::new(ReasonCode::InvalidInput, Some(field), format!("`{field}` {what}"));
    let text = value.cast::<PyString>().map_err(|_| {
        let name = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        refuse(format!("is of type {name}: give a str"))
    })?;
    let text = text.to_cow().map_err(|_| refuse("is not UTF-8 text (it holds a lone surrogate)".into()))?;
    if text.contains('\0') {
        return Err(refuse("holds U+0000, which no store keeps".into()));
    }
    Ok(text.into_owned())
}

/// The model's JSON text, bounded as the service bounds a body.
fn json_arg(value: &Bound<'_, PyAny>, field: &str) -> Result<String, Refusal> {
    let text = value.cast::<PyString>().map_err(|_| {
        let name = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        Refusal::new(
            ReasonCode::InvalidInput,
            Some(field),
            format!("`{field}` is of type {name}: give JSON text as a str"),
        )
    })?;
    let text = text.to_cow().map_err(|_| {
        Refusal::new(ReasonCode::InvalidInput, Some(field), format!("`{field}` holds a lone surrogate, not UTF-8 text"))
    })?;
    if text.len() > wire::MAX_BODY {
        let message = format!("`{field}` is {} bytes; at most {} as warrant serve takes", text.len(), wire::MAX_BODY);
        return Err(Refusal::new(ReasonCode::PayloadTooLarge, Some(field), message));
    }
    Ok(text.into_owned())
}

/// A path argument (`str` or `os.PathLike`), or a request error naming it.
fn path_arg(value: &Bound<'_, PyAny>, field: &str) -> Result<PathBuf, Refusal> {
    value.extract::<PathBuf>().map_err(|_| {
        let name = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        Refusal::new(
            ReasonCode::InvalidInput,
            Some(field),
            format!("`{field}` is of type {name}: give a path (str or os.PathLike)"),
        )
    })
}

/// JSON as a Python value.
fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// The gate: a contract and a store, opened once, shared by any number of Python threads.
#[pyclass(frozen, subclass, weakref, module = "warrant_gate._native")]
struct Gate {
    /// `None` once closed.
    engine: Mutex<Option<Engine<AnyStore>>>,
    /// What the contract and the store were, for `repr`.
    shown: String,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("shown", &self.shown).finish_non_exhaustive()
    }
}

impl Gate {
    fn engine(&self) -> Result<MutexGuard<'_, Option<Engine<AnyStore>>>, Refusal> {
        self.engine.lock().map_err(|_| Refusal::new(ReasonCode::Internal, None, "a call into this gate panicked"))
    }

    /// Runs `work` on the engine with the GIL released, and hands its answer back as Python.
    fn call<'py, F>(&self, py: Python<'py>, work: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(&mut Engine<AnyStore>) -> Result<Value, Refusal> + Send,
    {
        let answer = py.detach(|| match self.engine()?.as_mut() {
            Some(engine) => work(engine),
            None => Err(Refusal::new(ReasonCode::Internal, Some("gate"), "the gate is closed")),
        });
        match answer {
            Ok(value) => to_py(py, &value),
            Err(refusal) => Err(refusal.into_py(py)),
        }
    }
}

fn build_error(error: BuildError) -> Refusal {
    let message = error.to_string();
    match error {
        BuildError::NoContract | BuildError::Engine(EngineError::Contract(_) | EngineError::File { .. }) => {
            Refusal::new(ReasonCode::InvalidInput, Some("contract"), message)
        }
        BuildError::Engine(EngineError::Data(_) | EngineError::DataAt { .. }) => {
            Refusal::new(ReasonCode::InvalidRecord, Some("contract"), message)
        }
        BuildError::StoreUrl { .. } => Refusal::new(ReasonCode::InvalidInput, Some("store"), message),
        BuildError::Model(_) => Refusal::new(ReasonCode::InvalidInput, Some("model"), message),
        BuildError::Store { .. } | BuildError::Engine(_) => Refusal::new(ReasonCode::Internal, Some("store"), message),
    }
}

fn turn(engine: &mut Engine<AnyStore>, text: &str) -> Result<Value, Refusal> {
    match engine.turn(text)? {
        TurnResult::Rejected(error) => Err(error.into()),
        decided => Ok(decided.to_json()),
    }
}

fn outbound(engine: &mut Engine<AnyStore>, text: &str, submit: bool) -> Result<Value, Refusal> {
    let internal = |e: serde_json::Error| Refusal::new(ReasonCode::Internal, None, e.to_string());
    if !submit {
        return match engine.outbound(text)? {
            OutboundResult::Cleared(run) => serde_json::to_value(&run.message).map_err(internal),
            OutboundResult::Rejected(error) => Err(error.into()),
        };
    }
    match engine.submit(text, warrant_engine::dispatch::now_ms())? {
        Submitted::Queued { run, outbox, duplicate } => {
            let mut message = serde_json::to_value(&run.message).map_err(internal)?;
            if let Some(fields) = message.as_object_mut() {
                fields.insert("outbox".into(), json!({"id": outbox, "duplicate": duplicate}));
            }
            Ok(message)
        }
        Submitted::Scheduled { job, due_at, duplicate } => {
            Ok(json!({"scheduled": {"job": job, "due_at_ms": due_at, "duplicate": duplicate}}))
        }
        Submitted::Rejected(error) => Err(error.into()),
    }
}

fn outcome(
    engine: &mut Engine<AnyStore>,
    effect: &str,
    outcome: &str,
    rows: &[OutcomeRow],
    result: Option<&Value>,
) -> Result<Value, Refusal> {
    match engine.report_outcome_with(effect, outcome, rows, result)? {
        OutcomeReply::Refused { error } => Err(error.into()),
        accepted => {
            serde_json::to_value(&accepted).map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()))
        }
    }
}

/// The tool definitions of `contract` in `format` (`openai`, `anthropic` or `mcp`), the JSON
/// `warrant tools --format FORMAT` prints.
fn tool_list(contract: &Contract, format: &str) -> Result<Value, Refusal> {
    let parsed = ToolFormat::parse(format).ok_or_else(|| {
        Refusal::new(
            ReasonCode::InvalidInput,
            Some("format"),
            format!("`format` is `{format}`: give {}", ToolFormat::CHOICES),
        )
    })?;
    Ok(warrant_core::tools::render(&warrant_core::tools::definitions(contract), parsed))
}

/// The rows of an outcome report, read as strictly as the route reads them.
fn rows(rows: Option<&Bound<'_, PyAny>>) -> Result<Vec<OutcomeRow>, Refusal> {
    let Some(rows) = rows.filter(|r| !r.is_none()) else { return Ok(Vec::new()) };
    Ok(warrant_engine::outcome_rows(&wire::to_text(rows, "rows", false)?)?)
}

/// An effect's reported result as JSON, read as strictly as a body (no U+0000, within
/// `MAX_RESULT`, which the engine checks).
fn result_value(result: Option<&Bound<'_, PyAny>>) -> Result<Option<Value>, Refusal> {
    let Some(result) = result.filter(|r| !r.is_none()) else { return Ok(None) };
    let text = wire::to_text(result, "result", false)?;
    // Checked as the one value of a body, so that its faults are named as the route names them.
    warrant_core::wire::check(&format!("{{\"result\": {text}\n}}"))?;
    let value = serde_json::from_str(&text)
        .map_err(|e| Refusal::new(ReasonCode::InvalidInput, Some("result"), e.to_string()))?;
    Ok(Some(value))
}

#[pymethods]
impl Gate {
    /// Opens the contract file over the store (`sqlite:PATH` or `postgres://…[?schema=NAME]`),
    /// migrated and seeded; the model tasks run where the environment says, as for the CLI.
    #[new]
    fn new(py: Python<'_>, contract: &Bound<'_, PyAny>, store: &Bound<'_, PyAny>) -> PyResult<Gate> {
        let contract = path_arg(contract, "contract").map_err(|r| r.into_py(py))?;
        let store = text_arg(store, "store").map_err(|r| r.into_py(py))?;
        let shown = format!("Gate({}, {})", contract.display(), store.split('?').next().unwrap_or(""));
        let opened = py.detach(|| Engine::builder().contract_file(&contract).open(&store));
        match opened {
            Ok(engine) => Ok(Gate { engine: Mutex::new(Some(engine)), shown }),
            Err(error) => Err(build_error(error).into_py(py)),
        }
    }

    /// Closes the store (on SQLite, the file is left whole, its log copied in); later calls
    /// raise `ServiceError`. Closing again does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let closed = py.detach(|| {
            let engine = self.engine()?.take();
            match engine {
                Some(engine) => {
                    engine.close().map_err(|e| Refusal::new(ReasonCode::Internal, Some("store"), e.to_string()))
                }
                None => Ok(()),
            }
        });
        closed.map_err(|r| r.into_py(py))
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.engine.lock().map(|e| e.is_none()).unwrap_or(true)
    }

    fn __repr__(&self) -> String {
        self.shown.clone()
    }

    /// Decides one turn request; the answer is the turn response.
    fn turn<'py>(&self, py: Python<'py>, request: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let text = wire::to_text(request, "request", true).map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| turn(engine, &text))
    }

    /// Decides one turn request given as JSON text, read exactly as `warrant turn` reads it
    /// (a repeated key at any depth refused, naming it).
    fn turn_json<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let text = json_arg(text, "request").map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| turn(engine, &text))
    }

    /// Clears one outbound request: the message that may go out; with `submit`, stores it in
    /// the outbox (or a scheduled follow-up) as `POST /v1/outbound` does.
    #[pyo3(signature = (request, *, submit = false))]
    fn outbound<'py>(&self, py: Python<'py>, request: &Bound<'py, PyAny>, submit: bool) -> PyResult<Bound<'py, PyAny>> {
        let text = wire::to_text(request, "request", true).map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| outbound(engine, &text, submit))
    }

    /// Records what the executor saw an effect do: `done`, `failed` or `unknown`, with the rows
    /// as the system of record left them.
    /// `result`, any JSON up to 64 KiB, is what running the effect returned: kept with the
    /// outcome, and answered by `effect(id)`, so that a call found committed again is answered
    /// with it instead of being run twice.
    #[pyo3(signature = (effect, outcome, rows = None, *, result = None))]
    fn effect_outcome<'py>(
        &self,
        py: Python<'py>,
        effect: &Bound<'py, PyAny>,
        outcome: &Bound<'py, PyAny>,
        rows: Option<&Bound<'py, PyAny>>,
        result: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let read = || -> Result<_, Refusal> {
            Ok((text_arg(effect, "effect")?, text_arg(outcome, "outcome")?, self::rows(rows)?, result_value(result)?))
        };
        let (effect, outcome, rows, result) = read().map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| self::outcome(engine, &effect, &outcome, &rows, result.as_ref()))
    }

    /// The effect `effect` with its outcome (`None` until reported), the rows and findings its
    /// report kept and its `result`; `None` when the store holds no such effect.
    fn effect<'py>(&self, py: Python<'py>, effect: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let effect = text_arg(effect, "effect").map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| {
            let view = engine.effect(&effect)?;
            serde_json::to_value(&view).map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()))
        })
    }

    /// Decides every stored turn again from its record; the report of what changed.
    fn replay<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.call(py, |engine| {
            let report = engine.replay()?;
            serde_json::to_value(&report).map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()))
        })
    }

    /// The numbered rendering of `text`: the words and numbers a pointer counts.
    fn render<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self::render(py, text)
    }

    /// The contract's operations as tool definitions in `format` (`openai`, `anthropic` or
    /// `mcp`), as `warrant tools --format FORMAT` prints them for the same contract.
    #[pyo3(signature = (format = None))]
    fn tools<'py>(&self, py: Python<'py>, format: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let format = format_arg(format).map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| tool_list(engine.contract(), &format))
    }

    /// The row `key` of `table` with its revision, or `None`.
    fn record<'py>(
        &self,
        py: Python<'py>,
        table: &Bound<'py, PyAny>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let read = || -> Result<_, Refusal> { Ok((text_arg(table, "table")?, text_arg(key, "key")?)) };
        let (table, key) = read().map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| {
            Ok(engine.record(&table, &key)?.map_or(
                Value::Null,
                |r| json!({"table": r.table, "key": r.key, "revision": r.revision, "value": r.value}),
            ))
        })
    }

    /// Stores a row as the system of record has it now (`PUT /v1/records/{table}/{key}`):
    /// `if_match` a revision it must be at, or `if_none_match` that it must not exist.
    #[pyo3(signature = (table, key, value, *, if_match = None, if_none_match = None))]
    fn put_record<'py>(
        &self,
        py: Python<'py>,
        table: &Bound<'py, PyAny>,
        key: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
        if_match: Option<&Bound<'py, PyAny>>,
        if_none_match: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let read = || -> Result<_, Refusal> {
            let text = strict_text(value, "value")?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| Refusal::new(ReasonCode::InvalidInput, Some("value"), e.to_string()))?;
            let if_match = match if_match.filter(|m| !m.is_none()) {
                None => None,
                Some(m) if m.cast::<pyo3::types::PyBool>().is_err() => Some(m.extract::<i64>().map_err(|_| {
                    Refusal::new(ReasonCode::InvalidInput, Some("if-match"), "`if_match` is a revision: give an int")
                })?),
                Some(_) => {
                    return Err(Refusal::new(
                        ReasonCode::InvalidInput,
                        Some("if-match"),
                        "`if_match` is a revision: give an int",
                    ));
                }
            };
            let if_none_match = match if_none_match {
                None => false,
                Some(flag) => flag.cast::<pyo3::types::PyBool>().map(|b| b.is_true()).map_err(|_| {
                    Refusal::new(ReasonCode::InvalidInput, Some("if-none-match"), "`if_none_match` is a bool")
                })?,
            };
            Ok((text_arg(table, "table")?, text_arg(key, "key")?, value, if_match, if_none_match))
        };
        let (table, key, value, if_match, if_none_match) = read().map_err(|r| r.into_py(py))?;
        let precondition = match (if_match, if_none_match) {
            (Some(_), true) => {
                let refusal =
                    Refusal::new(ReasonCode::InvalidInput, Some("if-match"), "give if_match or if_none_match");
                return Err(refusal.into_py(py));
            }
            (Some(revision), false) => Precondition::IfMatch(revision),
            (None, true) => Precondition::IfNoneMatch,
            (None, false) => Precondition::Any,
        };
        self.call(py, move |engine| {
            let written = engine.put_record(&table, &key, &value, precondition)?;
            serde_json::to_value(&written).map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()))
        })
    }
}

/// The tool definitions of the contract file `contract` in `format`, without opening a store:
/// for an agent that calls `warrant serve` through `Client` with the contract the service runs.
#[pyfunction]
#[pyo3(signature = (contract, format = None))]
fn tools<'py>(
    py: Python<'py>,
    contract: &Bound<'py, PyAny>,
    format: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let read = || -> Result<_, Refusal> { Ok((path_arg(contract, "contract")?, format_arg(format)?)) };
    let (contract, format) = read().map_err(|r| r.into_py(py))?;
    let listed = py.detach(|| {
        let (loaded, _) =
            warrant_engine::load_contract(&contract).map_err(|error| build_error(BuildError::Engine(error)))?;
        tool_list(&loaded, &format)
    });
    match listed {
        Ok(value) => to_py(py, &value),
        Err(refusal) => Err(refusal.into_py(py)),
    }
}

/// Checks the model's JSON text for one value of a request (a tool call's arguments) as
/// strictly as the CLI reads a request: one JSON object, no repeated key at any depth, no
/// U+0000, at most `MAX_DEPTH` deep and `MAX_BODY` bytes; faults are named under `field`
/// (`acts[0].args.order_id`). A text that passes is exactly one object, so it may be set into a
/// request's text whole.
#[pyfunction]
#[pyo3(signature = (text, field = "acts[0].args"))]
fn check_json(py: Python<'_>, text: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    let checked = json_arg(text, field).and_then(|text| {
        warrant_core::wire::check(&text).map_err(|e| {
            let at = if e.field.is_empty() { field.to_owned() } else { format!("{field}.{}", e.field) };
            let message = e.message.replace("a request is a JSON object", "the arguments are a JSON object");
            Refusal::new(e.code, Some(&at), message)
        })?;
        Ok(text)
    });
    checked.map_err(|r| r.into_py(py))
}

/// The `format` argument: `mcp` when not given.
fn format_arg(format: Option<&Bound<'_, PyAny>>) -> Result<String, Refusal> {
    format.filter(|f| !f.is_none()).map_or_else(|| Ok("mcp".to_owned()), |f| text_arg(f, "format"))
}

/// The numbered rendering of `text`, the words and numbers a pointer counts (`warrant render`,
/// `POST /v1/render`); it needs no contract or store.
#[pyfunction]
fn render<'py>(py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let text = text_arg(text, "text").map_err(|r| r.into_py(py))?;
    let rendered = py.detach(|| report::render_json(&text));
    let value: Value = serde_json::from_str(&rendered)
        .map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()).into_py(py))?;
    to_py(py, &value)
}

/// The `warrant` command line on `args` (the program's name first), as the binary runs it
/// (`warrant_cli::run`, the same code); returns its exit status. The console script
/// `warrant_gate._cli:main` calls it. It runs on a thread of its own named `main` with a main
/// thread's stack (what `warrant_cli::run` asks), the GIL released until it ends.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<std::ffi::OsString>) -> PyResult<u8> {
    /// The stack of a Linux process's main thread, where the binary runs the same code.
    const MAIN_STACK: usize = 8 << 20;
    py.detach(|| {
        let thread = std::thread::Builder::new()
            .name("main".to_owned())
            .stack_size(MAIN_STACK)
            .spawn(move || warrant_cli::run(args))?;
        // `run` catches what unwinds; a thread that still panicked ends as `main` would.
        Ok(thread.join().unwrap_or(101))
    })
    .map_err(|e: std::io::Error| Refusal::new(ReasonCode::Internal, None, e.to_string()).into_py(py))
}

/// The module `warrant_gate._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Gate>()?;
    module.add_function(wrap_pyfunction!(tools, module)?)?;
    module.add_function(wrap_pyfunction!(render, module)?)?;
    module.add_function(wrap_pyfunction!(wire::wire_json, module)?)?;
    module.add_function(wrap_pyfunction!(check_json, module)?)?;
    module.add_function(wrap_pyfunction!(cli, module)?)?;
    module.add("MAX_DEPTH", warrant_core::wire::MAX_DEPTH)?;
    module.add("MAX_BODY", wire::MAX_BODY)?;
    module.add("MAX_RESULT", warrant_engine::MAX_RESULT)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
