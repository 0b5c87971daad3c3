//! `warrant_gate._native`: the engine in a Python process. One `Gate` holds one engine over
//! one store behind a mutex; every call converts its dict to JSON with the GIL held, then
//! releases the GIL while the engine decides, so Python threads sharing a gate run their turns
//! one at a time in the engine and in parallel everywhere else.
//!
//! Requests and answers are the wire JSON of `docs/design.md` as dicts. Whatever the engine
//! refuses is raised as one of the exception classes of `warrant_gate._errors` (defined in
//! Python, so the HTTP client raises the very same ones), carrying the stable reason code and
//! the field at fault.
//!
//! Tool definitions (`Gate.tools`, `tools`) come from warrant-core's generator
//! (`warrant_core::tools`), the one `warrant tools` prints, so a model is offered exactly what
//! the contract checks.

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
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
struct Refusal {
    code: ReasonCode,
    field: Option<String>,
    message: String,
}

impl Refusal {
    fn new(code: ReasonCode, field: Option<&str>, message: impl Into<String>) -> Refusal {
        Refusal { code, field: field.filter(|f| !f.is_empty()).map(str::to_owned), message: message.into() }
    }

    /// The exception `warrant_gate._errors.error_for` makes for this code.
    fn into_py(self, py: Python<'_>) -> PyErr {
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

/// A Python value as JSON; what does not convert is a request error naming `field`.
fn to_json(value: &Bound<'_, PyAny>, field: &str) -> Result<Value, Refusal> {
    pythonize::depythonize::<Value>(value)
        .map_err(|e| Refusal::new(ReasonCode::InvalidInput, Some(field), format!("`{field}` is not JSON: {e}")))
}

/// JSON as a Python value.
fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// The gate: a contract and a store, opened once, shared by any number of Python threads.
#[pyclass(frozen, module = "warrant_gate._native")]
struct Gate {
    engine: Mutex<Engine<AnyStore>>,
    /// What the contract and the store were, for `repr`.
    shown: String,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("shown", &self.shown).finish_non_exhaustive()
    }
}

impl Gate {
    fn engine(&self) -> Result<MutexGuard<'_, Engine<AnyStore>>, Refusal> {
        self.engine.lock().map_err(|_| Refusal::new(ReasonCode::Internal, None, "a call into this gate panicked"))
    }

    /// Runs `work` on the engine with the GIL released, and hands its answer back as Python.
    fn call<'py, F>(&self, py: Python<'py>, work: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(&mut Engine<AnyStore>) -> Result<Value, Refusal> + Send,
    {
        let answer = py.detach(|| work(&mut *self.engine()?));
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

fn outcome(engine: &mut Engine<AnyStore>, effect: &str, outcome: &str, rows: &[OutcomeRow]) -> Result<Value, Refusal> {
    match engine.report_outcome(effect, outcome, rows)? {
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
fn rows(rows: Option<&Bound<'_, PyList>>) -> Result<Vec<OutcomeRow>, Refusal> {
    let Some(rows) = rows else { return Ok(Vec::new()) };
    let value = to_json(rows.as_any(), "rows")?;
    Ok(warrant_engine::outcome_rows(&value.to_string())?)
}

#[pymethods]
impl Gate {
    /// Opens the contract file over the store (`sqlite:PATH` or `postgres://…[?schema=NAME]`),
    /// migrated and seeded; the model tasks run where the environment says, as for the CLI.
    #[new]
    fn new(py: Python<'_>, contract: std::path::PathBuf, store: String) -> PyResult<Gate> {
        let shown = format!("Gate({}, {})", contract.display(), store.split('?').next().unwrap_or(""));
        let opened = py.detach(|| Engine::builder().contract_file(&contract).open(&store));
        match opened {
            Ok(engine) => Ok(Gate { engine: Mutex::new(engine), shown }),
            Err(error) => Err(build_error(error).into_py(py)),
        }
    }

    fn __repr__(&self) -> String {
        self.shown.clone()
    }

    /// Decides one turn request; the answer is the turn response.
    fn turn<'py>(&self, py: Python<'py>, request: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
        let text = to_json(request.as_any(), "request").map_err(|r| r.into_py(py))?.to_string();
        self.call(py, move |engine| turn(engine, &text))
    }

    /// Clears one outbound request: the message that may go out; with `submit`, stores it in
    /// the outbox (or a scheduled follow-up) as `POST /v1/outbound` does.
    #[pyo3(signature = (request, *, submit = false))]
    fn outbound<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyDict>,
        submit: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = to_json(request.as_any(), "request").map_err(|r| r.into_py(py))?.to_string();
        self.call(py, move |engine| outbound(engine, &text, submit))
    }

    /// Records what the executor saw an effect do: `done`, `failed` or `unknown`, with the rows
    /// as the system of record left them.
    #[pyo3(signature = (effect, outcome, rows = None))]
    fn effect_outcome<'py>(
        &self,
        py: Python<'py>,
        effect: String,
        outcome: String,
        rows: Option<&Bound<'py, PyList>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rows = self::rows(rows).map_err(|r| r.into_py(py))?;
        self.call(py, move |engine| self::outcome(engine, &effect, &outcome, &rows))
    }

    /// Decides every stored turn again from its record; the report of what changed.
    fn replay<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.call(py, |engine| {
            let report = engine.replay()?;
            serde_json::to_value(&report).map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()))
        })
    }

    /// The numbered rendering of `text`: the words and numbers a pointer counts.
    fn render<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        let rendered = py.detach(|| report::render_json(&text));
        let value: Value = serde_json::from_str(&rendered)
            .map_err(|e| Refusal::new(ReasonCode::Internal, None, e.to_string()).into_py(py))?;
        to_py(py, &value)
    }

    /// The contract's operations as tool definitions in `format` (`openai`, `anthropic` or
    /// `mcp`), as `warrant tools --format FORMAT` prints them for the same contract.
    #[pyo3(signature = (format = "mcp"))]
    fn tools<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
        let format = format.to_owned();
        self.call(py, move |engine| tool_list(engine.contract(), &format))
    }

    /// The row `key` of `table` with its revision, or `None`.
    fn record<'py>(&self, py: Python<'py>, table: String, key: String) -> PyResult<Bound<'py, PyAny>> {
        self.call(py, move |engine| {
            Ok(engine.record(&table, &key)?.map_or(
                Value::Null,
                |r| json!({"table": r.table, "key": r.key, "revision": r.revision, "value": r.value}),
            ))
        })
    }

    /// Stores a row as the system of record has it now (`PUT /v1/records/{table}/{key}`):
    /// `if_match` a revision it must be at, or `if_none_match` that it must not exist.
    #[pyo3(signature = (table, key, value, *, if_match = None, if_none_match = false))]
    fn put_record<'py>(
        &self,
        py: Python<'py>,
        table: String,
        key: String,
        value: &Bound<'py, PyAny>,
        if_match: Option<i64>,
        if_none_match: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let value = to_json(value, "value").map_err(|r| r.into_py(py))?;
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
#[pyo3(signature = (contract, format = "mcp"))]
fn tools<'py>(py: Python<'py>, contract: std::path::PathBuf, format: &str) -> PyResult<Bound<'py, PyAny>> {
    let listed = py.detach(|| {
        let (loaded, _) =
            warrant_engine::load_contract(&contract).map_err(|error| build_error(BuildError::Engine(error)))?;
        tool_list(&loaded, format)
    });
    match listed {
        Ok(value) => to_py(py, &value),
        Err(refusal) => Err(refusal.into_py(py)),
    }
}

/// The module `warrant_gate._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Gate>()?;
    module.add_function(wrap_pyfunction!(tools, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
