//! The JSON a reading is reported as: the wire format of `warrant score` (docs/design.md §4), which
//! other tools and tests rely on. Fields are only ever added, never renamed or reshaped.

use serde::{Deserialize, Serialize};

use warrant_contract::contract::Contract;
use warrant_contract::reason::ReasonCode;
use warrant_contract::score::Reading;

/// One input line of `warrant score --jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreRequest {
    /// The source kind of the text.
    pub kind: String,
    /// The text to read.
    pub text: String,
}

/// One reading as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScoreReport<'a> {
    /// The source kind, as declared.
    pub source_kind: &'a str,
    /// The text exactly as given.
    pub text: &'a str,
    /// The operations performed, each with its clause and sentence index.
    pub operations: Vec<OperationReport<'a>>,
    /// Why nothing was performed, or `null`.
    pub rejection: Option<RejectionReport<'a>>,
}

/// One performed operation with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperationReport<'a> {
    /// The operation.
    pub op: &'a str,
    /// The authored clause the sentence equals.
    pub clause: &'a str,
    /// The index of the sentence in the reply.
    pub sentence: u32,
}

/// A rejection with the sentence at fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectionReport<'a> {
    /// The stable reason code.
    pub reason: ReasonCode,
    /// The index of the sentence at fault (`null` for an empty reply).
    pub sentence: Option<u32>,
    /// The sentence at fault, in NFC (`null` for an empty reply).
    pub text: Option<&'a str>,
}

impl<'a> ScoreReport<'a> {
    /// Reports `reading` of the original `text`.
    pub fn new(contract: &'a Contract, text: &'a str, reading: &'a Reading<'_, '_>) -> Self {
        ScoreReport {
            source_kind: contract.kinds().name(reading.kind),
            text,
            operations: reading
                .operations
                .iter()
                .map(|o| OperationReport { op: o.clause.op(), clause: o.clause.text(), sentence: o.sentence })
                .collect(),
            rejection: reading.rejection.as_ref().map(|r| RejectionReport {
                reason: r.reason,
                sentence: r.sentence,
                text: reading.rejected_sentence(),
            }),
        }
    }
}

/// An input error, reported in place of a result so that the other lines go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputErrorReport {
    /// The error.
    pub error: InputError,
}

/// What was wrong with one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputError {
    /// The stable reason code.
    pub code: ReasonCode,
    /// A one-line message naming the field at fault.
    pub message: String,
    /// The 1-based input line, where the input is a stream of lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The field at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
}

impl InputError {
    /// The error for a source kind the contract does not declare.
    pub fn unknown_kind(contract: &Contract, kind: &str) -> InputError {
        let declared: Vec<&str> = contract.kinds().names().collect();
        InputError {
            code: ReasonCode::UnknownSourceKind,
            message: format!(
                "source kind `{}` is not declared by the contract (declared: {})",
                warrant_contract::text::visible(kind),
                declared.join(", ")
            ),
            line: None,
            field: Some("kind"),
        }
    }
}

/// Reads one request through the contract's gate and renders the JSON line for it: the report,
/// or an error report for an undeclared kind.
pub fn score_line(contract: &Contract, request: &ScoreRequest) -> Result<String, InputError> {
    let kind = contract.kinds().get(&request.kind).ok_or_else(|| InputError::unknown_kind(contract, &request.kind))?;
    let reading = contract.score().read(kind, &request.text);
    let report = ScoreReport::new(contract, &request.text, &reading);
    serde_json::to_string(&report).map_err(|e| InputError {
        code: ReasonCode::InvalidInput,
        message: format!("the result could not be rendered: {e}"),
        line: None,
        field: None,
    })
}

/// Reads one `{"kind","text"}` request, strictly as every request is read ([`warrant_contract::request::wire`]:
/// one object, no repeated key, no U+0000); the error names the field at fault.
pub fn parse_score_request(input: &str) -> Result<ScoreRequest, InputError> {
    parse_strict(input, &["kind", "text"])
}

/// Reads one request object strictly; `fields` are the fields an error may name.
fn parse_strict<T: serde::de::DeserializeOwned>(input: &str, fields: &[&'static str]) -> Result<T, InputError> {
    warrant_contract::request::wire::check(input)
        .and_then(|()| warrant_contract::request::wire::from_str::<T>(input))
        .map_err(|e| InputError {
            code: e.code,
            field: fields.iter().copied().find(|name| *name == e.field),
            message: if e.field.is_empty() { e.message } else { format!("`{}`: {}", e.field, e.message) },
            line: None,
        })
}

/// Handles one line of `--jsonl` input (1-based `line`), always producing one output line.
pub fn score_jsonl_line(contract: &Contract, line: usize, input: &str) -> String {
    let result = parse_score_request(input)
        .map_err(|e| InputError { message: format!("line {line}: {}", e.message), ..e })
        .and_then(|request| score_line(contract, &request));
    match result {
        Ok(json) => json,
        Err(mut error) => {
            error.line = Some(line);
            serde_json::to_string(&InputErrorReport { error }).unwrap_or_else(|_| {
                String::from(r#"{"error":{"code":"invalid_input","message":"unrenderable error"}}"#)
            })
        }
    }
}

/// The body of `POST /v1/render`: the text whose numbered rendering is asked for.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderRequest {
    /// The text, exactly as it will be sent as an entry.
    pub text: String,
}

/// Reads one `{"text"}` request, strictly as every request is read ([`warrant_contract::request::wire`]); the error
/// names the field at fault.
pub fn parse_render_request(input: &str) -> Result<RenderRequest, InputError> {
    parse_strict(input, &["text"])
}

/// The JSON of the numbered rendering of `text` (`warrant_contract::pointer::Rendering`), as
/// `warrant render` prints it and `POST /v1/render` answers.
pub fn render_json(text: &str) -> String {
    serde_json::to_string(&warrant_contract::pointer::rendering(text))
        .unwrap_or_else(|_| String::from(r#"{"error":{"code":"invalid_input","message":"unrenderable text"}}"#))
}
