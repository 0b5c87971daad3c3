//! Recordings of model answers, so tests and replays need no network: a cassette is JSON lines,
//! one exchange each, keyed by the hash of the exact request. The [`RecordedProvider`] answers
//! only requests it has a recording of and fails loudly on any other; the [`Recorder`] writes a
//! cassette from a live provider.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::provider::{ChatAnswer, ChatRequest, Provider, ProviderError};

/// One recorded exchange: a line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// [`ChatRequest::hash`] of the request.
    pub hash: String,
    /// The request, for people reading the cassette.
    pub request: ChatRequest,
    /// What the provider answered.
    pub result: Result<ChatAnswer, ProviderError>,
}

/// Why a cassette does not load.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file cannot be read or written.
    #[error("cassette `{path}`: {message}")]
    Io {
        /// The cassette's path.
        path: String,
        /// What the file system said.
        message: String,
    },
    /// A line is not an exchange.
    #[error("cassette `{path}` line {line}: {message}")]
    Line {
        /// The cassette's path.
        path: String,
        /// The line, from 1.
        line: usize,
        /// Why it is not an exchange.
        message: String,
    },
}

/// Answers from recordings only.
#[derive(Debug, Default)]
pub struct RecordedProvider {
    answers: BTreeMap<String, Result<ChatAnswer, ProviderError>>,
}

impl RecordedProvider {
    /// A provider over `exchanges`; a later exchange of the same request replaces an earlier.
    pub fn new(exchanges: impl IntoIterator<Item = Exchange>) -> RecordedProvider {
        RecordedProvider { answers: exchanges.into_iter().map(|e| (e.hash, e.result)).collect() }
    }

    /// Reads a cassette's JSON lines (`path` names it in errors).
    pub fn parse(path: &str, text: &str) -> Result<RecordedProvider, CassetteError> {
        let mut exchanges = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange = serde_json::from_str(line).map_err(|e| CassetteError::Line {
                path: path.to_owned(),
                line: i + 1,
                message: e.to_string(),
            })?;
            if exchange.request.hash() != exchange.hash {
                return Err(CassetteError::Line {
                    path: path.to_owned(),
                    line: i + 1,
                    message: "the hash is not the request's".into(),
                });
            }
            exchanges.push(exchange);
        }
        Ok(RecordedProvider::new(exchanges))
    }

    /// Reads a cassette file.
    pub fn load(path: &Path) -> Result<RecordedProvider, CassetteError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CassetteError::Io { path: path.display().to_string(), message: e.to_string() })?;
        RecordedProvider::parse(&path.display().to_string(), &text)
    }

    /// How many requests it can answer.
    pub fn len(&self) -> usize {
        self.answers.len()
    }

    /// Whether it has no recording.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }
}

impl Provider for RecordedProvider {
    fn complete(&self, request: &ChatRequest, _timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        let hash = request.hash();
        self.answers.get(&hash).cloned().unwrap_or(Err(ProviderError::NoRecording(hash)))
    }
}

/// Passes requests to a live provider and appends every exchange to a cassette.
#[derive(Debug)]
pub struct Recorder<P> {
    live: P,
    out: Mutex<std::fs::File>,
    path: String,
}

impl<P: Provider> Recorder<P> {
    /// Records `live`'s exchanges, appended to the cassette at `path`.
    pub fn new(live: P, path: &Path) -> Result<Recorder<P>, CassetteError> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| CassetteError::Io { path: path.display().to_string(), message: e.to_string() })?;
        Ok(Recorder { live, out: Mutex::new(out), path: path.display().to_string() })
    }
}

impl<P: Provider> Provider for Recorder<P> {
    fn complete(&self, request: &ChatRequest, timeout: Duration) -> Result<ChatAnswer, ProviderError> {
        let result = self.live.complete(request, timeout);
        let exchange = Exchange { hash: request.hash(), request: request.clone(), result: result.clone() };
        let line = serde_json::to_string(&exchange).map_err(|e| ProviderError::Malformed(e.to_string()))?;
        let mut out =
            self.out.lock().map_err(|_| ProviderError::Malformed(format!("cassette `{}` is poisoned", self.path)))?;
        // A recording that cannot be written would make the cassette lie by omission.
        writeln!(out, "{line}").map_err(|e| ProviderError::Malformed(format!("cassette `{}`: {e}", self.path)))?;
        result
    }
}
