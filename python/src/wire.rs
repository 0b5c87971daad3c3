//! Python values as wire JSON text, without recursion: a list nested 100,000 deep crashed the
//! interpreter when it was converted by a recursive walk (the native stack ran out). This walk
//! keeps its own stack and refuses a value deeper than [`MAX_DEPTH`], the depth every door of
//! warrant refuses past, before it descends; a value it accepts is then read by the engine
//! exactly as the CLI and the service read the same text. The HTTP `Client` encodes its bodies
//! here too (`_native.wire_json`), so both raise the same error for the same value.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use warrant_core::reason::ReasonCode;
use warrant_core::wire::MAX_DEPTH;

use crate::Refusal;

/// The largest body the gate takes, as `warrant serve` does by default (`payload_too_large`).
pub(crate) const MAX_BODY: usize = 1 << 20;

/// One step of the path to a value: an object's key or a list's index.
enum Step {
    Key(String),
    Index(usize),
}

/// A container being written: what is left of it, and how it closes.
enum Open<'py> {
    List { items: Vec<Bound<'py, PyAny>>, next: usize },
    Object { items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>, next: usize },
}

/// The path as the engine names fields: within a request from its top (`acts[0].args.order_id`),
/// within any other argument from the argument's name (`rows[0].value`); `root` for the value
/// itself.
fn render(root: &str, path: &[Step]) -> String {
    let mut out = if root == "request" { String::new() } else { root.to_owned() };
    for step in path {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() { root.to_owned() } else { out }
}

fn refuse(root: &str, path: &[Step], message: String) -> Refusal {
    let field = render(root, path);
    Refusal::new(ReasonCode::InvalidInput, Some(&field), format!("`{field}` {message}"))
}

/// The Python type's name, for a message.
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
}

/// `value` as JSON text. `root` names the value in an error (`request`, `value`); `object`
/// requires a dict at the top, as every request body is.
pub(crate) fn to_text(value: &Bound<'_, PyAny>, root: &str, object: bool) -> Result<String, Refusal> {
    if object && value.cast::<PyDict>().is_err() {
        return Err(refuse(root, &[], format!("is of type {}: give a dict (a JSON object)", type_name(value))));
    }
    let mut out = String::new();
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut path: Vec<Step> = Vec::new();
    let mut next: Option<Bound<'_, PyAny>> = Some(value.clone());
    loop {
        if let Some(value) = next.take() {
            if let Some(open) = scalar_or_open(&value, &mut out, root, &path)? {
                if stack.len() + 1 > MAX_DEPTH {
                    return Err(refuse(
                        root,
                        &path,
                        format!("nests deeper than {MAX_DEPTH} levels, the most warrant reads"),
                    ));
                }
                stack.push(open);
            }
            if out.len() > MAX_BODY {
                return Err(Refusal::new(
                    ReasonCode::PayloadTooLarge,
                    Some(root),
                    format!("`{root}` is larger than {MAX_BODY} bytes as JSON, the most warrant serve takes"),
                ));
            }
        }
        // The next value of the innermost open container, or close it.
        let depth = stack.len();
        let Some(top) = stack.last_mut() else { break };
        match top {
            Open::List { items, next: at } => {
                if let Some(item) = items.get(*at) {
                    if *at > 0 {
                        out.push(',');
                    }
                    next = Some(item.clone());
                    set_step(&mut path, depth, Step::Index(*at));
                    *at += 1;
                    continue;
                }
                out.push(']');
            }
            Open::Object { items, next: at } => {
                if let Some((key, item)) = items.get(*at) {
                    // The path to this object: the steps above its items.
                    let here = path.get(..depth.saturating_sub(1)).unwrap_or(&path);
                    let key = match key.cast::<PyString>() {
                        Ok(key) => key
                            .to_cow()
                            .map(|k| k.into_owned())
                            .map_err(|_| refuse(root, here, "has a key that is not UTF-8 (a lone surrogate)".into()))?,
                        Err(_) => {
                            let message = format!("has a key of type {}: keys are strings", type_name(key));
                            return Err(refuse(root, here, message));
                        }
                    };
                    if *at > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                    out.push(':');
                    next = Some(item.clone());
                    set_step(&mut path, depth, Step::Key(key));
                    *at += 1;
                    continue;
                }
                out.push('}');
            }
        }
        stack.pop();
        path.truncate(stack.len());
    }
    Ok(out)
}

/// The path's step at `depth` (1 for the top container's items) is `step`.
fn set_step(path: &mut Vec<Step>, depth: usize, step: Step) {
    path.truncate(depth.saturating_sub(1));
    path.push(step);
}

/// Writes a scalar, or opens a container and hands it back for the walk to fill.
fn scalar_or_open<'py>(
    value: &Bound<'py, PyAny>,
    out: &mut String,
    root: &str,
    path: &[Step],
) -> Result<Option<Open<'py>>, Refusal> {
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(flag) = value.cast::<PyBool>() {
        out.push_str(if flag.is_true() { "true" } else { "false" });
    } else if let Ok(int) = value.cast::<PyInt>() {
        if let Ok(n) = int.extract::<i64>() {
            out.push_str(&n.to_string());
        } else if let Ok(n) = int.extract::<u64>() {
            out.push_str(&n.to_string());
        } else {
            return Err(refuse(root, path, "is an integer beyond 64 bits, which JSON numbers here do not hold".into()));
        }
    } else if let Ok(float) = value.cast::<PyFloat>() {
        let number = float.value();
        match serde_json::Number::from_f64(number) {
            Some(n) => out.push_str(&n.to_string()),
            None => return Err(refuse(root, path, format!("is {number}, which is not a JSON number"))),
        }
    } else if let Ok(text) = value.cast::<PyString>() {
        let text =
            text.to_cow().map_err(|_| refuse(root, path, "is not UTF-8 text (it holds a lone surrogate)".into()))?;
        out.push_str(&serde_json::Value::String(text.into_owned()).to_string());
    } else if let Ok(list) = value.cast::<PyList>() {
        out.push('[');
        return Ok(Some(Open::List { items: list.iter().collect(), next: 0 }));
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        out.push('[');
        return Ok(Some(Open::List { items: tuple.iter().collect(), next: 0 }));
    } else if let Ok(dict) = value.cast::<PyDict>() {
        out.push('{');
        return Ok(Some(Open::Object { items: dict.iter().collect(), next: 0 }));
    } else {
        let name = type_name(value);
        let hint = match name.as_str() {
            "set" | "frozenset" => ": give a list",
            "bytes" | "bytearray" => ": decode it to a str",
            _ => "",
        };
        return Err(refuse(root, path, format!("is of type {name}, which is not JSON{hint}")));
    }
    Ok(None)
}

/// The Client's encoder: `value` as the JSON text the gate would read, or the gate's error.
#[pyfunction]
#[pyo3(signature = (value, field = "request", object = true))]
pub(crate) fn wire_json(py: Python<'_>, value: &Bound<'_, PyAny>, field: &str, object: bool) -> PyResult<String> {
    to_text(value, field, object).map_err(|r| r.into_py(py))
}
