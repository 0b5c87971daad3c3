//! The one seam between warrant and a model: a [`Provider`] answers a chat request with the
//! model's text, or says why it could not. Everything above it (budgets, schemas, repair rounds,
//! verdicts) is the same whether the answer came from a live endpoint or a recording.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message with `role`.
    pub fn new(role: &str, content: impl Into<String>) -> Message {
        Message { role: role.to_owned(), content: content.into() }
    }
}

/// What is asked of a model: the exact request, hashed for recordings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name the endpoint knows.
    pub model: String,
    /// The conversation: the task's prompt, the question, and (in a repair round) the earlier
    /// answer and the error it had.
    pub messages: Vec<Message>,
    /// The name of the output schema.
    pub schema_name: String,
    /// The JSON schema the answer must fit; sent as the response format.
    pub schema: Value,
    /// The most completion tokens the answer may use.
    pub max_tokens: u32,
}

impl ChatRequest {
    /// The SHA-256 (hex) of the request's canonical JSON: recordings are keyed by it, so a
    /// recording answers only the very request it was made for.
    pub fn hash(&self) -> String {
        let json = serde_json::to_value(self).unwrap_or(Value::Null);
        let digest = Sha256::digest(canonical(&json).as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// JSON text with every object's keys sorted.
pub(crate) fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), map.get(k).map(canonical).unwrap_or_default()))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// What a model said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatAnswer {
    /// The text of the first choice; meant to be JSON, checked by the task.
    pub content: String,
    /// Prompt tokens the endpoint counted.
    pub prompt_tokens: u32,
    /// Completion tokens the endpoint counted.
    pub completion_tokens: u32,
}

/// Why a provider has no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "kind", content = "message")]
pub enum ProviderError {
    /// No answer within the time allowed.
    #[error("the provider did not answer within the time allowed: {0}")]
    Timeout(String),
    /// The endpoint could not be reached.
    #[error("the provider cannot be reached: {0}")]
    Unreachable(String),
    /// The endpoint answered with an error status.
    #[error("the provider answered with an error: {0}")]
    Status(String),
    /// The endpoint's reply is not a chat completion.
    #[error("the provider's reply is not a chat completion: {0}")]
    Malformed(String),
    /// A recorded provider has no recording of this exact request.
    #[error("no recording of request `{0}`: record it with a live provider first")]
    NoRecording(String),
}

impl ProviderError {
    /// Whether the same request may succeed if sent again at once (a transport failure).
    pub fn is_transient(&self) -> bool {
        matches!(self, ProviderError::Timeout(_) | ProviderError::Unreachable(_) | ProviderError::Status(_))
    }
}

/// A model endpoint. Shared between the threads that run a turn's checks at once.
pub trait Provider: Send + Sync {
    /// Sends `request` and waits at most `timeout` for the answer.
    fn complete(&self, request: &ChatRequest, timeout: Duration) -> Result<ChatAnswer, ProviderError>;
}

impl<P: Provider + ?Sized> Provider for &P {
    fn complete(&self, request: &ChatRequest, timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        (**self).complete(request, timeout)
    }
}

impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    fn complete(&self, request: &ChatRequest, timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        (**self).complete(request, timeout)
    }
}

impl<P: Provider + ?Sized> Provider for Box<P> {
    fn complete(&self, request: &ChatRequest, timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        (**self).complete(request, timeout)
    }
}
