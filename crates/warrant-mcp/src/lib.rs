//! `warrant mcp`: warrant as an MCP gateway. An MCP client (a desktop assistant, an IDE, an
//! agent framework) talks to the gateway as to any MCP server; the gateway offers the
//! contract's operations as tools, makes every `tools/call` a turn through the engine, asks the
//! user (an MCP elicitation) where the contract needs a confirmation or the user's own words,
//! and forwards what commits, once, to the downstream MCP server that performs it.
//!
//! The tool definitions it offers are warrant-core's ([`warrant_core::tools`], also behind
//! `warrant tools`); [`call`] is the turns a call becomes, [`gateway`] the rmcp server and the downstream client, and
//! [`http`] the streamable HTTP endpoint behind API keys, and [`serve_stdio`] and
//! [`serve_http`] the whole gateway.

#![warn(missing_docs)]

pub mod call;
pub mod downstreams;
pub mod gateway;
pub mod http;
pub mod passthrough;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess, stdio};
use warrant_engine::Engine;

pub use downstreams::{DownstreamSpec, Route};
pub use gateway::{Downstream, Gateway, GatewayConfig, Server, Swept, SweptEffect, ToolMatch, match_tools};
pub use warrant_core::tools::{ToolDef, ToolFormat};

/// What stops the gateway.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The engine could not be made.
    #[error(transparent)]
    Build(#[from] warrant_engine::BuildError),
    /// The downstream server could not be started or listed.
    #[error("downstream: {0}")]
    Downstream(String),
    /// The actor the gateway was started for is not one the contract knows.
    #[error("actor: {0}")]
    Actor(String),
    /// The upstream connection failed.
    #[error("upstream: {0}")]
    Upstream(String),
}

/// What `warrant mcp` is started with.
#[derive(Debug, Clone)]
pub struct Options {
    /// The contract file.
    pub contract: PathBuf,
    /// The store URL.
    pub store: String,
    /// The downstreams, in order: one (`--downstream-stdio`, `--downstream-url`) or those a
    /// configuration file names (`--downstreams`).
    pub downstreams: Vec<DownstreamSpec>,
    /// The turns' locale.
    pub locale: String,
    /// The turns' time zone.
    pub time_zone: String,
    /// The contract's source kind of the user's words.
    pub user_kind: String,
    /// How long an elicitation waits for the user.
    pub elicitation_timeout: Duration,
}

/// Where the downstream MCP server is.
#[derive(Debug, Clone)]
pub enum DownstreamAt {
    /// A child process over stdio: the command and its arguments.
    Command(Vec<String>),
    /// A streamable HTTP endpoint; requests carry `Authorization: Bearer` with the value of
    /// [`ENV_DOWNSTREAM_TOKEN`] when it is set.
    Url(String),
}

/// The bearer token sent to a downstream URL.
pub const ENV_DOWNSTREAM_TOKEN: &str = "WARRANT_MCP_DOWNSTREAM_TOKEN";

/// Over stdio: one session, for one actor.
#[derive(Debug, Clone)]
pub struct StdioSession {
    /// The actor every call is decided for.
    pub actor: String,
    /// The conversation id to resume (a gateway restarted for the same session); a new one
    /// when `None`.
    pub session: Option<String>,
}

/// A new conversation id for one gateway process (one stdio session): 16 random bytes.
pub fn new_session_id() -> Result<String, McpError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| McpError::Upstream(format!("no randomness: {e}")))?;
    Ok(format!("mcp-{}", hex::encode(bytes)))
}

/// The engine, the downstream started and listed, the start-up report on stderr.
async fn start(options: &Options, session: GatewayConfig) -> Result<(Gateway, Vec<Running>), McpError> {
    // Off the runtime: a model endpoint's blocking client may not be made (or dropped) on it.
    let (contract, store) = (options.contract.clone(), options.store.clone());
    let actor = session.actor.clone();
    let engine = tokio::task::spawn_blocking(move || {
        let mut engine = Engine::builder().contract_file(contract).open(&store)?;
        if !actor.is_empty() {
            check_actor(&mut engine, &actor)?;
        }
        Ok::<_, McpError>(engine)
    })
    .await
    .map_err(|e| McpError::Upstream(e.to_string()))??;
    let mut servers = Vec::new();
    let mut running = Vec::new();
    for spec in &options.downstreams {
        let downstream = connect(spec).await?;
        let listed = downstream
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| McpError::Downstream(format!("{}{e}", named(options, spec))))?;
        let names: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
        servers.push(Server::new(spec.name.clone(), spec.tools.clone(), downstream.peer().clone(), names));
        running.push(downstream);
    }
    let lists: Vec<Vec<String>> = servers.iter().map(Server::listed).collect();
    let listings: Vec<downstreams::Listing<'_>> = options
        .downstreams
        .iter()
        .zip(&lists)
        .map(|(spec, listed)| downstreams::Listing { name: &spec.name, tools: spec.tools.as_ref(), listed })
        .collect();
    let found = downstreams::route(gateway::contract_tools(&engine), &listings);
    report(&found);
    let mut servers = servers.into_iter();
    let first = servers.next().ok_or_else(|| McpError::Downstream("no downstream given".into()))?;
    let gateway = Gateway::with_servers(engine, first, servers.collect(), found, session);
    for (at, (downstream, spec)) in running.iter().zip(&options.downstreams).enumerate() {
        gateway.follow(downstream.service().changes());
        gateway.pass_events(downstream.service().events());
        let spec = spec.clone();
        let reconnect: gateway::Connect = Arc::new(move || {
            let spec = spec.clone();
            Box::pin(async move { connect(&spec).await.map_err(|e| e.to_string()) })
        });
        gateway.reconnect_at(at, reconnect).await;
    }
    let swept = gateway.sweep().await.map_err(McpError::Downstream)?;
    report_swept(&swept);
    Ok((gateway, running))
}

/// "`name`: " when there are several downstreams, to tell them apart in an error.
fn named(options: &Options, spec: &DownstreamSpec) -> String {
    if options.downstreams.len() == 1 { String::new() } else { format!("`{}`: ", spec.name) }
}

type Running = gateway::Running;

/// Over stdio the actor is fixed for the session: one the contract's actor table does not
/// hold is refused at start, not at the first call.
fn check_actor(engine: &mut Engine<warrant_store::AnyStore>, actor: &str) -> Result<(), McpError> {
    let Some(table) = engine.contract().actor_table().map(str::to_owned) else { return Ok(()) };
    match engine.record(&table, actor) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(McpError::Actor(format!("`--actor {actor}` is not a row of the actor table `{table}`"))),
        Err(e) => Err(McpError::Actor(format!("`--actor {actor}`: {e}"))),
    }
}

/// The downstream connection, protocol pinned to 2025-11-25.
async fn connect(spec: &DownstreamSpec) -> Result<Running, McpError> {
    let failed = |e: &dyn std::fmt::Display| McpError::Downstream(format!("`{}`: {e}", spec.name));
    match &spec.at {
        DownstreamAt::Command(command) => {
            let (program, rest) = command.split_first().ok_or_else(|| McpError::Downstream("no command".into()))?;
            let command = tokio::process::Command::new(program).configure(|c| {
                c.args(rest).envs(&spec.env);
            });
            let (transport, _) = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map_err(|e| McpError::Downstream(format!("`{program}`: {e}")))?;
            Downstream::default().serve(transport).await.map_err(|e| failed(&e))
        }
        DownstreamAt::Url(url) => {
            // reqwest is built without a crypto provider of its own: ring, as the model client.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
            if let Some(token) = std::env::var(&spec.token_env).ok().filter(|t| !t.is_empty()) {
                config = config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            Downstream::default().serve(transport).await.map_err(|e| McpError::Downstream(format!("`{url}`: {e}")))
        }
    }
}

fn config(options: &Options, actor: String, conversation: String) -> GatewayConfig {
    GatewayConfig {
        actor,
        conversation,
        locale: options.locale.clone(),
        time_zone: options.time_zone.clone(),
        user_kind: options.user_kind.clone(),
        elicitation_timeout: options.elicitation_timeout,
    }
}

/// Runs the gateway over standard input and output until the client closes it.
pub async fn serve_stdio(options: Options, session: StdioSession) -> Result<(), McpError> {
    let conversation = match session.session {
        Some(session) => session,
        None => new_session_id()?,
    };
    eprintln!("warrant mcp: session `{conversation}` for actor `{}`", session.actor);
    let (gateway, downstream) = start(&options, config(&options, session.actor, conversation)).await?;
    let running = gateway.clone().serve(stdio()).await.map_err(|e| McpError::Upstream(e.to_string()))?;
    // SIGINT or SIGTERM ends the session as the client closing it does, so that the gateway
    // returns and its engine's store is closed (a SQLite file left whole).
    let token = running.cancellation_token();
    let signalled = tokio::spawn(async move {
        interrupted().await;
        token.cancel();
    });
    running.waiting().await.map_err(|e| McpError::Upstream(e.to_string()))?;
    signalled.abort();
    gateway.flushed().await;
    drop(downstream);
    Ok(())
}

/// SIGINT or SIGTERM.
async fn interrupted() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Runs the gateway over streamable HTTP on `listen` until SIGINT or SIGTERM; the actor of each
/// request is the tenant whose key (in the registry at `keys`) it carries. Prints the address.
pub async fn serve_http(options: Options, listen: &str, keys: &str) -> Result<(), McpError> {
    let location =
        warrant_server::tenants::StoreLocation::parse(keys).map_err(|e| McpError::Upstream(e.to_string()))?;
    let (gateway, downstream) = start(&options, config(&options, String::new(), String::new())).await?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let app = http::router(gateway.clone(), &location, shutdown.child_token()).map_err(McpError::Upstream)?;
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| McpError::Upstream(format!("`{listen}`: {e}")))?;
    let address = listener.local_addr().map_err(|e| McpError::Upstream(e.to_string()))?;
    println!("http://{address}/mcp");
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { if let Some(t) = term.as_mut() { t.recv().await; } else { std::future::pending::<()>().await } } => {}
        }
        stop.cancel();
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|e| McpError::Upstream(e.to_string()))?;
    gateway.flushed().await;
    drop(downstream);
    Ok(())
}

/// What the start-up sweep did, on standard error.
fn report_swept(swept: &Swept) {
    for effect in &swept.forwarded {
        eprintln!(
            "warrant mcp: effect `{}` (`{}`) was committed and not forwarded: forwarded now, {}",
            effect.id, effect.op, effect.outcome
        );
    }
    for effect in &swept.unknown {
        eprintln!(
            "warrant mcp: effect `{}` (`{}`) was claimed for its forward and no result was recorded (the gateway stopped, or the downstream died or did not answer, during the forward): it may have been performed, so it stays unknown and is not forwarded again",
            effect.id, effect.op
        );
    }
    for effect in &swept.not_offered {
        eprintln!(
            "warrant mcp: effect `{}` (`{}`) is not forwarded: the downstream does not offer `{}`",
            effect.id, effect.op, effect.op
        );
    }
}

/// The report of the tools matched, at start and whenever the downstream's list changes, on
/// standard error.
pub(crate) fn report(found: &ToolMatch) {
    let names = |defs: &[ToolDef]| defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
    eprintln!("warrant mcp: offering {} tools: {}", found.offered.len(), names(&found.offered));
    for name in &found.missing_downstream {
        eprintln!("warrant mcp: operation `{name}` is not offered by the downstream: not listed");
    }
    for name in &found.undeclared {
        eprintln!("warrant mcp: downstream tool `{name}` is not declared by the contract: never listed, never called");
    }
    for (name, servers) in &found.ambiguous {
        eprintln!(
            "warrant mcp: operation `{name}` is a tool of several downstreams ({}): not listed; map it in one's `tools`",
            servers.join(", ")
        );
    }
}
