//! What the gateway adds to a tool call: a read, and a write whose confirmation the user answers
//! at once, each through the gateway and beside the same call made to the downstream directly,
//! in one run, the two in turn; p50 and p99 in milliseconds, and of what each call through the
//! gateway took more than the direct call beside it. The client is rmcp's, in process, over an in-memory
//! stream; the downstream is the retail test server (Python `mcp`, from `WARRANT_MCP_PYTHON` or
//! `target/mcp-venv`); the store is a SQLite file, so each write commits twice (the hold, the
//! answer) and records its outcome.
//!
//! Run: `cargo bench -p warrant-mcp --bench latency` (`WARRANT_BENCH_CALLS` scales the count).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a benchmark stops at the first surprise")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, JsonObject, ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;
use warrant_core::tools;
use warrant_engine::Engine;
use warrant_mcp::{Downstream, Gateway, GatewayConfig, match_tools};

const ACTOR: &str = "fatima_johnson_7581";

/// The user, who confirms every held act at once.
#[derive(Debug, Clone)]
struct User;

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::builder().enable_elicitation().build(), Implementation::new("bench", "0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"decision": "confirm"})))
    }
}

fn root() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect()
}

/// Calls per figure: a handful under `cargo test --benches`, else `WARRANT_BENCH_CALLS` or 300.
fn count() -> usize {
    let benching = std::env::args().any(|a| a == "--bench");
    let asked = std::env::var("WARRANT_BENCH_CALLS").ok().and_then(|v| v.parse().ok());
    match (benching, asked) {
        (false, _) => 5,
        (true, Some(n)) => n,
        (true, None) => 300,
    }
}

fn args(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

async fn downstream(log: &std::path::Path) -> rmcp::service::RunningService<RoleClient, Downstream> {
    let python = std::env::var_os("WARRANT_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    assert!(python.exists(), "no Python with `mcp` at {} (see docs/mcp.md)", python.display());
    let command = tokio::process::Command::new(python).configure(|c| {
        c.arg(root().join("examples/retail/retail_server.py"))
            .arg(root().join("examples/retail/data"))
            .env("RETAIL_DOWNSTREAM_LOG", log);
    });
    Downstream::default().serve(TokioChildProcess::new(command).unwrap()).await.unwrap()
}

/// Milliseconds of each of `n` calls of `name` with `arguments`, made in turn directly and through
/// the gateway (one direct call, then one through the gateway, and again), so that what else the
/// machine does weighs on both alike: (direct, through the gateway).
async fn paired(
    direct: &Peer<RoleClient>,
    gateway: &Peer<RoleClient>,
    n: usize,
    name: &'static str,
    arguments: &serde_json::Value,
) -> (Vec<f64>, Vec<f64>) {
    let (mut alone, mut through) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        alone.push(timed(direct, name, arguments).await);
        through.push(timed(gateway, name, arguments).await);
    }
    (alone, through)
}

/// Milliseconds of one call of `name` with `arguments` through `peer`.
async fn timed(peer: &Peer<RoleClient>, name: &'static str, arguments: &serde_json::Value) -> f64 {
    let call = CallToolRequestParams::new(name).with_arguments(args(arguments.clone()));
    let start = Instant::now();
    let result = peer.call_tool(call).await.unwrap();
    let took = start.elapsed().as_secs_f64() * 1000.0;
    assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
    took
}

fn percentiles(mut took: Vec<f64>) -> (f64, f64) {
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((took.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let n = count();
    let contract = root().join("crates/warrant-mcp/benches/fixture/contract.toml");
    let store = format!("sqlite:{}", dir.path().join("warrant.sqlite").display());
    let engine = Engine::builder().contract_file(&contract).open(&store).unwrap();
    let direct = downstream(&dir.path().join("direct.jsonl")).await;
    let behind = downstream(&dir.path().join("gateway.jsonl")).await;
    let names: Vec<String> = behind.peer().list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    let found = match_tools(tools::definitions(engine.contract()), &names);
    let config = GatewayConfig {
        actor: ACTOR.into(),
        conversation: "mcp-bench".into(),
        locale: "en-US".into(),
        time_zone: "UTC".into(),
        user_kind: "user".into(),
        elicitation_timeout: Duration::from_secs(30),
    };
    let gateway = Gateway::new(engine, behind.peer().clone(), found.offered, config);
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = gateway.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = User.serve(client_io).await.unwrap();
    let read = json!({"user_id": ACTOR});
    let write = json!({"reason": "no longer needed"});
    let (read_direct, read_through) = paired(direct.peer(), client.peer(), n, "get_user_details", &read).await;
    let (write_direct, write_through) = paired(direct.peer(), client.peer(), n, "cancel_pending_order", &write).await;
    // What the gateway adds to each call: the call through it less the direct call beside it.
    let added = |through: &[f64], alone: &[f64]| through.iter().zip(alone).map(|(t, a)| t - a).collect::<Vec<_>>();
    let (read_added, write_added) = (added(&read_through, &read_direct), added(&write_through, &write_direct));
    let figures = [
        ("read, downstream directly", read_direct),
        ("read, through the gateway", read_through),
        ("read, added by the gateway", read_added),
        ("write, downstream directly", write_direct),
        ("write confirmed, through the gateway", write_through),
        ("write confirmed, added by the gateway", write_added),
    ];
    println!("{n} calls each, direct and through the gateway in turn (ms)");
    for (name, took) in figures {
        let (p50, p99) = percentiles(took);
        println!("  {name:<38} p50 {p50:>8.2}  p99 {p99:>8.2}");
    }
    let forwarded = std::fs::read_to_string(dir.path().join("gateway.jsonl")).unwrap_or_default().lines().count();
    assert_eq!(forwarded, n, "every confirmed write was forwarded once");
}
