//! Traces of `warrant turn`, `serve` and `scheduler run` (warrant-telemetry), exported over OTLP
//! when `--otlp-endpoint` or the standard `OTEL_EXPORTER_OTLP_*` variables name a collector, and
//! flushed as the command ends however it ends (a return, SIGTERM or SIGINT through `main`'s
//! return, a panic's unwinding), so that the last turns' spans are not lost with the process.

use std::sync::{Arc, OnceLock};

use warrant_telemetry::{Content, Telemetry};

use crate::Exit;

/// The variable that, set to `true`, lets spans carry the customer's words, as
/// `--trace-content` does.
pub(crate) const ENV_CONTENT: &str = "WARRANT_TRACE_CONTENT";

/// The process's exporter, once started; `None` when no collector is named.
static TELEMETRY: OnceLock<Option<Arc<Telemetry>>> = OnceLock::new();

/// How the command line asks for traces.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct TraceArgs {
    /// Exports OpenTelemetry traces over OTLP (HTTP, protobuf) to this collector's base URL
    /// (`/v1/traces` is added), as `OTEL_EXPORTER_OTLP_ENDPOINT` does; without either, or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, nothing is exported.
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// Lets spans carry the customer's words (a turn's request and its reply); by default they
    /// carry codes and identifiers only. `WARRANT_TRACE_CONTENT=true` does the same.
    #[arg(long, global = true)]
    trace_content: bool,
}

/// Flushes the exporter when dropped: held by `run` for the command's whole life.
#[derive(Debug)]
pub(crate) struct Flush;

impl Drop for Flush {
    fn drop(&mut self) {
        if let Some(telemetry) = get()
            && let Err(error) = telemetry.shutdown()
        {
            eprintln!("warrant: {error}");
        }
    }
}

/// Starts the exporter `args` and the environment ask for.
pub(crate) fn start(args: &TraceArgs) -> Result<Flush, Exit> {
    let opted_in = std::env::var(ENV_CONTENT).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let content = if args.trace_content || opted_in { Content::Included } else { Content::Withheld };
    let telemetry = Telemetry::start(args.otlp_endpoint.as_deref(), content).map_err(|e| Exit::Input(e.to_string()))?;
    let _ = TELEMETRY.set(telemetry.map(Arc::new));
    Ok(Flush)
}

/// The process's exporter, when one is started.
pub(crate) fn get() -> Option<Arc<Telemetry>> {
    TELEMETRY.get().cloned().flatten()
}
