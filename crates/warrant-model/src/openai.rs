//! An OpenAI-compatible chat-completions endpoint (`POST {base}/chat/completions`) with a
//! JSON-schema response format, over rustls on ring. The only code in warrant that opens a
//! network connection.

use std::time::Duration;

use serde_json::{Value, json};
use warrant_vocab::model::ModelConfig;

use crate::provider::{ChatAnswer, ChatRequest, Provider, ProviderError};

/// Where the endpoint is and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    /// The base URL, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The model name sent in each request.
    pub model: String,
    /// The bearer key, if the endpoint needs one.
    pub key: Option<String>,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How the output schema is sent.
    pub format: SchemaFormat,
}

/// How an endpoint takes the output schema in `response_format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SchemaFormat {
    /// OpenAI's `{"type":"json_schema","json_schema":{"name","schema","strict":true}}`.
    #[default]
    JsonSchema,
    /// `{"type":"json_object","schema":…}`, which llama-cpp-python's server reads (it refuses
    /// the `json_schema` type).
    JsonObject,
}

/// Selects [`SchemaFormat::JsonObject`] when set to `json_object`.
pub const ENV_FORMAT: &str = "WARRANT_MODEL_RESPONSE_FORMAT";

/// The environment variables [`EndpointConfig::from_env`] reads.
pub const ENV_BASE_URL: &str = "WARRANT_MODEL_BASE_URL";
/// The model name.
pub const ENV_MODEL: &str = "WARRANT_MODEL";
/// The bearer key.
pub const ENV_KEY: &str = "WARRANT_MODEL_KEY";

impl EndpointConfig {
    /// The endpoint named by `WARRANT_MODEL_BASE_URL` (with `WARRANT_MODEL`, default `default`,
    /// and `WARRANT_MODEL_KEY`), or `None` when the base URL is unset.
    pub fn from_env() -> Option<EndpointConfig> {
        EndpointConfig::resolve(&ModelConfig::default(), &|name| std::env::var(name).ok())
    }

    /// The endpoint of a contract's `[model]` section with the environment (`env`) over it:
    /// each `WARRANT_MODEL_*` variable that is set replaces what the contract says, and the key
    /// is read from `WARRANT_MODEL_KEY` or else from the variable the contract's `key_env`
    /// names. `None` when neither gives a base URL.
    pub fn resolve(config: &ModelConfig, env: &dyn Fn(&str) -> Option<String>) -> Option<EndpointConfig> {
        let var = |name: &str| env(name).filter(|s| !s.is_empty());
        let base_url = var(ENV_BASE_URL).or_else(|| config.base_url.clone())?;
        Some(EndpointConfig {
            base_url,
            model: var(ENV_MODEL).or_else(|| config.model.clone()).unwrap_or_else(|| "default".to_owned()),
            key: var(ENV_KEY).or_else(|| config.key_env.as_deref().and_then(var)),
            connect_timeout: config.connect_timeout_ms.map_or(Duration::from_secs(5), Duration::from_millis),
            format: match var(ENV_FORMAT).as_deref() {
                Some("json_object") => SchemaFormat::JsonObject,
                _ => SchemaFormat::JsonSchema,
            },
        })
    }
}

/// Why an endpoint client cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the model client: {0}")]
pub struct ClientError(String);

/// A chat-completions endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    config: EndpointConfig,
    client: reqwest::blocking::Client,
}

impl OpenAiProvider {
    /// A client for `config`. TLS is rustls with the ring provider.
    pub fn new(config: EndpointConfig) -> Result<OpenAiProvider, ClientError> {
        // Another part of the process may have installed a provider already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| ClientError(e.to_string()))?;
        Ok(OpenAiProvider { config, client })
    }

    /// The model name requests are sent with.
    pub fn model(&self) -> &str {
        &self.config.model
    }
}

/// The request body: the messages, the schema as the response format, no sampling.
pub fn body(request: &ChatRequest, format: SchemaFormat) -> Value {
    let response_format = match format {
        SchemaFormat::JsonSchema => json!({
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.schema, "strict": true}
        }),
        SchemaFormat::JsonObject => json!({"type": "json_object", "schema": request.schema}),
    };
    json!({
        "model": request.model,
        "messages": request.messages,
        "max_tokens": request.max_tokens,
        "temperature": 0,
        "response_format": response_format,
    })
}

fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    message
}

impl Provider for OpenAiProvider {
    fn complete(&self, request: &ChatRequest, timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        let url = format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'));
        let mut http = self.client.post(&url).timeout(timeout).header("content-type", "application/json");
        if let Some(key) = &self.config.key {
            http = http.bearer_auth(key);
        }
        let sent = http.body(body(request, self.config.format).to_string()).send().map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout(with_causes(&e))
            } else {
                ProviderError::Unreachable(with_causes(&e))
            }
        })?;
        let status = sent.status();
        let text = sent.text().map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout(with_causes(&e))
            } else {
                ProviderError::Unreachable(with_causes(&e))
            }
        })?;
        if !status.is_success() {
            let excerpt: String = text.chars().take(300).collect();
            return Err(ProviderError::Status(format!("{status}: {excerpt}")));
        }
        parse_completion(&text)
    }
}

/// Reads a chat-completions reply: the first choice's content and the token usage.
pub fn parse_completion(text: &str) -> Result<ChatAnswer, ProviderError> {
    let reply: Value = serde_json::from_str(text).map_err(|e| ProviderError::Malformed(e.to_string()))?;
    let content = reply
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::Malformed("no `choices[0].message.content`".into()))?;
    let count = |field: &str| {
        reply
            .pointer(&format!("/usage/{field}"))
            .and_then(Value::as_u64)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    Ok(ChatAnswer {
        content: content.to_owned(),
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_is_read_with_its_usage() {
        let answer = parse_completion(r#"{"choices":[{"message":{"role":"assistant","content":"{\"answer\":\"no\"}"}}],"usage":{"prompt_tokens":12,"completion_tokens":5}}"#).unwrap();
        assert_eq!(answer.content, r#"{"answer":"no"}"#);
        assert_eq!((answer.prompt_tokens, answer.completion_tokens), (12, 5));
        assert!(matches!(parse_completion("{}"), Err(ProviderError::Malformed(_))));
        assert!(matches!(parse_completion("not json"), Err(ProviderError::Malformed(_))));
    }

    #[test]
    fn the_environment_overrides_the_contract_and_the_key_comes_from_the_named_variable() {
        let contract = ModelConfig {
            base_url: Some("http://contract:1/v1".into()),
            model: Some("small".into()),
            key_env: Some("MY_KEY".into()),
            connect_timeout_ms: Some(250),
            ..ModelConfig::default()
        };
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        let from_contract = EndpointConfig::resolve(&contract, &env(&[("MY_KEY", "k1")])).unwrap();
        assert_eq!(
            (from_contract.base_url.as_str(), from_contract.model.as_str(), from_contract.key.as_deref()),
            ("http://contract:1/v1", "small", Some("k1"))
        );
        assert_eq!(from_contract.connect_timeout, Duration::from_millis(250));
        let overridden = EndpointConfig::resolve(
            &contract,
            &env(&[(ENV_BASE_URL, "http://env:2/v1"), (ENV_MODEL, "big"), (ENV_KEY, "k2"), ("MY_KEY", "k1")]),
        )
        .unwrap();
        assert_eq!(
            (overridden.base_url.as_str(), overridden.model.as_str(), overridden.key.as_deref()),
            ("http://env:2/v1", "big", Some("k2"))
        );
        assert_eq!(EndpointConfig::resolve(&ModelConfig::default(), &env(&[])), None, "no base URL anywhere");
    }

    #[test]
    fn the_schema_is_sent_as_the_response_format() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![],
            schema_name: "s".into(),
            schema: json!({"type":"object"}),
            max_tokens: 9,
        };
        let b = body(&request, SchemaFormat::JsonSchema);
        assert_eq!(b.pointer("/response_format/type"), Some(&json!("json_schema")));
        assert_eq!(b.pointer("/response_format/json_schema/schema"), Some(&json!({"type":"object"})));
        assert_eq!(b.get("temperature"), Some(&json!(0)));
        let b = body(&request, SchemaFormat::JsonObject);
        assert_eq!(b.pointer("/response_format"), Some(&json!({"type": "json_object", "schema": {"type":"object"}})));
    }
}
