//! OpenTelemetry traces of what warrant did, exported over OTLP (HTTP with protobuf) to the
//! collector an operator names: a span per HTTP request of `warrant serve` (a child of the
//! caller's trace when the request carries a W3C `traceparent`), per turn, per model task the
//! turn ran, and per forward (an outbox message delivered to its channel).
//!
//! Only this crate knows OpenTelemetry. The engine records what its turns' model tasks took
//! ([`warrant_engine::TaskRun`]) and tells a [`DeliveryObserver`] of each delivery; the spans
//! are built here after the fact, with the times measured, and handed to the SDK's batch
//! processor, whose own thread exports them off the request's path. Without an endpoint there is
//! no [`Telemetry`] at all, so nothing is built, queued or sent.
//!
//! A span carries codes and identifiers (operations, verdicts, reason codes, outcomes, the
//! tenant, the conversation and turn key, ids that are content hashes), never the customer's
//! words, unless the operator asks for them with [`Content::Included`]: then a turn's span also
//! has its request and its reply.
#![warn(missing_docs)]

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue, Value as OtelValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use serde_json::Value;

use warrant_engine::dispatch::{Delivery, DeliveryObserver};
use warrant_engine::{EngineError, TaskRun, TurnResult};

/// The standard variable naming the collector's base URL (`/v1/traces` is added).
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard variable naming the traces endpoint itself (used as it is).
pub const ENV_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The standard variable naming the service in every span's resource (`warrant` by default).
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// The standard variable that turns the SDK off whatever else is set (`true`).
pub const ENV_SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

/// Whether spans may carry the customer's words (a turn's request and its reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Content {
    /// Codes and identifiers only: the default.
    #[default]
    Withheld,
    /// The request's JSON and the reply's text too, where the operator asked for them.
    Included,
}

/// What keeps traces from being exported.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The exporter cannot be built (an endpoint that is not a URL, among others).
    #[error("the OTLP exporter cannot be built: {0}")]
    Exporter(String),
    /// Flushing or shutting the exporter down failed (the collector unreachable, among others).
    #[error("the OTLP exporter did not finish: {0}")]
    Shutdown(String),
}

/// Where spans go, and what they may carry. Made once per process by [`Telemetry::start`].
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    content: Content,
}

/// The trace a span joins: the caller's (from a `traceparent`), another span's, or a new one.
#[derive(Debug, Clone, Default)]
pub struct Parent(Context);

impl Parent {
    /// A new trace.
    pub fn root() -> Parent {
        Parent(Context::new())
    }

    /// The trace a request's W3C Trace Context headers name (`traceparent`, and `tracestate`
    /// beside it); a new trace when there is none or it does not read.
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Parent {
        let carrier: HashMap<String, String> = headers
            .into_iter()
            .filter(|(name, value)| {
                !value.trim().is_empty()
                    && (name.eq_ignore_ascii_case("traceparent") || name.eq_ignore_ascii_case("tracestate"))
            })
            .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
            .collect();
        if carrier.is_empty() {
            return Parent::root();
        }
        Parent(TraceContextPropagator::new().extract(&carrier))
    }
}

/// An HTTP request's span, begun when the request arrived and ended with its response.
#[derive(Debug)]
pub struct RequestSpan {
    span: opentelemetry_sdk::trace::Span,
}

impl RequestSpan {
    /// The trace the request's work (its turn) joins, as this span's child.
    pub fn parent(&self) -> Parent {
        Parent(Context::new().with_remote_span_context(self.span.span_context().clone()))
    }

    /// Ends the span with the response's status and the tenant whose key was accepted.
    pub fn end(mut self, status: u16, tenant: Option<&str>) {
        self.span.set_attribute(KeyValue::new("http.response.status_code", i64::from(status)));
        if let Some(tenant) = tenant {
            self.span.set_attribute(KeyValue::new("warrant.tenant", tenant.to_owned()));
        }
        if status >= 500 {
            self.span.set_status(Status::error(format!("HTTP {status}")));
        }
        self.span.end();
    }
}

/// One turn as its span shows it: when it ran, for whom, what it was asked and what came of it.
#[derive(Debug)]
pub struct TurnTrace<'a> {
    /// When the engine began it.
    pub started: SystemTime,
    /// How long the engine took.
    pub elapsed: Duration,
    /// The tenant, in the service.
    pub tenant: Option<&'a str>,
    /// The request's JSON, as sent: read for its conversation and turn key, and shown whole only
    /// with [`Content::Included`].
    pub request: &'a str,
    /// What came of it.
    pub result: Result<&'a TurnResult, &'a EngineError>,
    /// The model tasks it ran ([`warrant_engine::Engine::turn_tasks`]).
    pub tasks: &'a [TaskRun],
}

impl Telemetry {
    /// Traces exported to `endpoint` (a collector's base URL, as [`ENV_ENDPOINT`] gives one),
    /// or else to what [`ENV_TRACES_ENDPOINT`] or [`ENV_ENDPOINT`] name; `None`, and nothing
    /// exported, when none is set or [`ENV_SDK_DISABLED`] is `true`. The SDK's batch processor
    /// reads its `OTEL_BSP_*` variables, the exporter its `OTEL_EXPORTER_OTLP_*` ones (headers,
    /// timeout, compression).
    pub fn start(endpoint: Option<&str>, content: Content) -> Result<Option<Telemetry>, TelemetryError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if env(ENV_SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = endpoint.filter(|e| !e.trim().is_empty());
        if endpoint.is_none() && env(ENV_TRACES_ENDPOINT).is_none() && env(ENV_ENDPOINT).is_none() {
            return Ok(None);
        }
        // The exporter's client is the workspace's reqwest on rustls without a provider of its
        // own; another part of the process may have installed one already, either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
        if let Some(base) = endpoint {
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim().trim_end_matches('/')));
        }
        let exporter = exporter.build().map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let mut resource = Resource::builder();
        if env(ENV_SERVICE_NAME).is_none() {
            resource = resource.with_service_name("warrant");
        }
        let provider = SdkTracerProvider::builder()
            .with_span_processor(BatchSpanProcessor::builder(exporter).build())
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("warrant");
        Ok(Some(Telemetry { provider, tracer, content }))
    }

    /// Exports every span still queued and stops the exporter; spans ended after this are
    /// dropped. Called once as the process ends (after SIGTERM too).
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        self.provider.shutdown().map_err(|e| TelemetryError::Shutdown(e.to_string()))
    }

    /// Begins the span of an HTTP request of the service, as a child of `parent` (the
    /// caller's trace).
    pub fn request(&self, parent: &Parent, method: &str, route: &str) -> RequestSpan {
        let span = self
            .tracer
            .span_builder(format!("{method} {route}"))
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("http.request.method", method.to_owned()),
                KeyValue::new("http.route", route.to_owned()),
            ])
            .start_with_context(&self.tracer, &parent.0);
        RequestSpan { span }
    }

    /// Exports a turn's span, a child of `parent`, and one child of it per model task.
    pub fn turn(&self, parent: &Parent, turn: &TurnTrace<'_>) {
        let request: Option<Value> = serde_json::from_str(turn.request).ok();
        let field = |name: &str| request.as_ref().and_then(|r| r.get(name)).and_then(Value::as_str);
        let mut attributes = vec![KeyValue::new("warrant.latency_ms", millis(turn.elapsed))];
        if let Some(tenant) = turn.tenant {
            attributes.push(KeyValue::new("warrant.tenant", tenant.to_owned()));
        }
        if let Some(conversation) = field("conversation") {
            attributes.push(KeyValue::new("warrant.conversation", conversation.to_owned()));
        }
        if let Some(key) = field("turn") {
            attributes.push(KeyValue::new("warrant.turn", key.to_owned()));
        }
        let mut acts = Vec::new();
        let mut status = Status::Unset;
        match turn.result {
            Ok(TurnResult::Decided { response, repeated }) => {
                let outcome = if *repeated { "repeated" } else { "decided" };
                attributes.push(KeyValue::new("warrant.outcome", outcome));
                let (mut operations, mut verdicts, mut reasons) = (Vec::new(), Vec::new(), Vec::new());
                for act in &response.acts {
                    let verdict = code(&act.verdict);
                    let codes: Vec<_> = act.reasons.iter().map(|r| r.code.as_str()).collect();
                    let mut event = vec![
                        KeyValue::new("warrant.operation", act.op.clone()),
                        KeyValue::new("warrant.verdict", verdict.clone()),
                        KeyValue::new("warrant.reasons", strings(codes.iter().copied())),
                    ];
                    if let Some(effect) = &act.effect {
                        event.push(KeyValue::new("warrant.effect", effect.clone()));
                    }
                    acts.push(event);
                    operations.push(act.op.clone());
                    verdicts.push(verdict);
                    reasons.extend(codes);
                }
                reasons.sort_unstable();
                reasons.dedup();
                attributes.push(KeyValue::new("warrant.operations", strings(operations)));
                attributes.push(KeyValue::new("warrant.verdicts", strings(verdicts)));
                attributes.push(KeyValue::new("warrant.reasons", strings(reasons)));
                attributes.push(KeyValue::new("warrant.effects", count(response.effects.len())));
                if self.content == Content::Included {
                    let reply = response.reply.as_ref().map(reply_text).unwrap_or_default();
                    attributes.push(KeyValue::new("warrant.reply", reply));
                }
            }
            Ok(TurnResult::Rejected(error)) => {
                attributes.push(KeyValue::new("warrant.outcome", "rejected"));
                attributes.push(KeyValue::new("warrant.reasons", strings([error.code.as_str()])));
                attributes.push(KeyValue::new("warrant.field", error.field.clone()));
            }
            Err(error) => {
                attributes.push(KeyValue::new("warrant.outcome", "error"));
                // An engine error may quote what a store held (a record that does not read
                // back), so its text goes out only where the customer's words may.
                status = Status::error(match self.content {
                    Content::Included => error.to_string(),
                    Content::Withheld => "the engine failed; its log has why".to_owned(),
                });
            }
        }
        if self.content == Content::Included {
            attributes.push(KeyValue::new("warrant.request", turn.request.to_owned()));
        }
        let mut span = self
            .tracer
            .span_builder("warrant.turn")
            .with_kind(SpanKind::Internal)
            .with_start_time(turn.started)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent.0);
        for act in acts {
            span.add_event_with_timestamp("warrant.act", turn.started + turn.elapsed, act);
        }
        span.set_status(status);
        let inside = Context::new().with_remote_span_context(span.span_context().clone());
        for task in turn.tasks {
            self.task(&inside, task);
        }
        span.end_with_timestamp(turn.started + turn.elapsed);
    }

    fn task(&self, parent: &Context, task: &TaskRun) {
        let mut attributes = vec![
            KeyValue::new("warrant.task", task.task.to_string()),
            KeyValue::new("warrant.check", task.id.clone()),
            KeyValue::new("warrant.outcome", task.outcome.clone()),
            KeyValue::new("warrant.calls", count(task.calls)),
            KeyValue::new("warrant.latency_ms", millis(task.elapsed)),
        ];
        if let Some(version) = &task.prompt_version {
            attributes.push(KeyValue::new("warrant.prompt_version", version.clone()));
        }
        let mut span = self
            .tracer
            .span_builder("warrant.model_task")
            .with_kind(SpanKind::Client)
            .with_start_time(task.started)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        span.end_with_timestamp(task.started + task.elapsed);
    }
}

/// A forward's span: one delivery attempt of an outbox message to its channel, in a trace of its
/// own (the scheduler delivers what turns stored earlier, in other processes).
impl DeliveryObserver for Telemetry {
    fn delivered(&self, delivery: &Delivery<'_>) {
        let message = delivery.message;
        let outcome = match delivery.result {
            Ok(()) => "sent",
            Err(warrant_store::Failure::Transient(_)) => "transient",
            Err(warrant_store::Failure::Permanent(_)) => "permanent",
        };
        let attributes = vec![
            KeyValue::new("warrant.channel", message.channel.clone()),
            KeyValue::new("warrant.path", message.path.clone()),
            KeyValue::new("warrant.conversation", message.conversation.clone()),
            KeyValue::new("warrant.message", message.id.clone()),
            KeyValue::new("warrant.idempotency_key", message.idempotency_key.clone()),
            KeyValue::new("warrant.attempt", delivery.attempt),
            KeyValue::new("warrant.outcome", outcome),
            KeyValue::new("warrant.latency_ms", millis(delivery.elapsed)),
        ];
        let mut span = self
            .tracer
            .span_builder("warrant.forward")
            .with_kind(SpanKind::Producer)
            .with_start_time(delivery.started)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &Context::new());
        if let Err(failure) = delivery.result {
            // The message's body is never shown. A channel's answer (`HTTP 422 …: excerpt`)
            // may echo it, so only its status line goes out unless the words may.
            let said = failure.message();
            let shown = match (self.content, said.split_once(": ")) {
                (Content::Withheld, Some((status, _))) if status.starts_with("HTTP ") => status,
                _ => said,
            };
            span.set_status(Status::error(shown.to_owned()));
        }
        span.end_with_timestamp(delivery.started + delivery.elapsed);
    }
}

/// The text of a cleared reply (a string, or an object with its `text`), as it was let out.
fn reply_text(reply: &Value) -> String {
    match reply {
        Value::String(text) => text.clone(),
        other => other.get("text").and_then(Value::as_str).map_or_else(|| other.to_string(), str::to_owned),
    }
}

fn millis(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn strings<S: Into<opentelemetry::StringValue>>(items: impl IntoIterator<Item = S>) -> OtelValue {
    OtelValue::Array(opentelemetry::Array::String(items.into_iter().map(Into::into).collect()))
}

/// The snake_case name serde gives a unit variant (a verdict).
fn code<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(parent: &Parent) -> Option<String> {
        let context = parent.0.span().span_context().clone();
        context.is_valid().then(|| format!("{}-{}", context.trace_id(), context.span_id()))
    }

    #[test]
    fn a_traceparent_in_any_case_names_the_caller_and_a_malformed_one_starts_a_new_trace() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let expected = Some("4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7".to_owned());
        assert_eq!(caller(&Parent::from_headers([("traceparent", good)])), expected);
        assert_eq!(caller(&Parent::from_headers([("Traceparent", good), ("x-other", "1")])), expected);
        for bad in ["", "00-zz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"] {
            assert_eq!(caller(&Parent::from_headers([("traceparent", bad)])), None, "{bad:?}");
        }
        assert_eq!(caller(&Parent::from_headers([("x-other", good)])), None);
    }
}
