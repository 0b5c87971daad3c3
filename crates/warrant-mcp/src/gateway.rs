//! The gateway: an MCP server (rmcp) whose `tools/call` is a turn through the engine, in front
//! of a downstream MCP server that performs what commits.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    ElicitRequestParams, ElicitationAction, ElicitationSchema, Implementation, JsonObject, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProtocolVersion, RequestMetaObject, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use warrant_core::ReasonCode;
use warrant_core::id::derive_id;
use warrant_core::operation::Operation;
use warrant_core::turn::{DECLINE, EffectOut, TurnResponse, Verdict};
use warrant_engine::{Deciding, DeferredTurn, Engine, OutcomeReply, TurnResult};
use warrant_store::AnyStore;

use crate::call::{self, TurnFrame};
use warrant_core::tools::{self, ToolDef};

/// The `_meta` key under which a forwarded call carries its effect's idempotency key: a
/// downstream that applies each key once performs a call at most once, even when the gateway
/// is restarted between the forward and the outcome.
pub const IDEMPOTENCY_META: &str = "warrant/idempotency_key";

/// What the gateway is started with.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The actor every call is decided for.
    pub actor: String,
    /// The conversation (the MCP session).
    pub conversation: String,
    /// The turns' locale.
    pub locale: String,
    /// The turns' time zone.
    pub time_zone: String,
    /// The contract's source kind of the user's words.
    pub user_kind: String,
    /// How long an elicitation waits for the user.
    pub elicitation_timeout: Duration,
}

/// The tools offered: the contract's operations the downstreams also offer, and what differs.
#[derive(Debug, Clone, Default)]
pub struct ToolMatch {
    /// Offered: declared and performed downstream.
    pub offered: Vec<ToolDef>,
    /// Declared by the contract, not offered by the downstream.
    pub missing_downstream: Vec<String>,
    /// Offered by the downstream, not declared by the contract: never listed, never called
    /// (`server/tool` when there are several downstreams).
    pub undeclared: Vec<String>,
    /// Where each offered operation is forwarded.
    pub routes: BTreeMap<String, crate::downstreams::Route>,
    /// Declared, and provided by several downstreams (named): not offered.
    pub ambiguous: Vec<(String, Vec<String>)>,
}

/// The contract's tool definitions matched with the downstream's tool names.
pub fn match_tools(defs: Vec<ToolDef>, downstream: &[String]) -> ToolMatch {
    crate::downstreams::route(
        defs,
        &[crate::downstreams::Listing { name: "downstream", tools: None, listed: downstream }],
    )
}

/// The downstream connection's client side: no capabilities, protocol pinned. A
/// `notifications/tools/list_changed` from the downstream is passed on to whoever waits on
/// [`Downstream::changes`] (the gateway, [`Gateway::follow`]); its other notifications (a
/// resource updated, the resource or prompt list changed, a log message) to whoever listens on
/// [`Downstream::events`].
#[derive(Debug, Clone)]
pub struct Downstream {
    changed: Arc<Notify>,
    events: tokio::sync::broadcast::Sender<crate::passthrough::Event>,
}

impl Default for Downstream {
    fn default() -> Downstream {
        Downstream { changed: Arc::default(), events: tokio::sync::broadcast::channel(256).0 }
    }
}

impl Downstream {
    /// Notified each time the downstream says its tool list changed.
    pub fn changes(&self) -> Arc<Notify> {
        Arc::clone(&self.changed)
    }

    /// The downstream's other notifications, from now on.
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<crate::passthrough::Event> {
        self.events.subscribe()
    }

    fn tell(&self, event: crate::passthrough::Event) {
        // No one listening yet: nothing to pass on.
        let _ = self.events.send(event);
    }
}

impl ClientHandler for Downstream {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("warrant", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.tell(crate::passthrough::Event::ResourceUpdated(params.uri));
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tell(crate::passthrough::Event::ResourceListChanged);
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tell(crate::passthrough::Event::PromptListChanged);
    }

    async fn on_logging_message(&self, params: crate::passthrough::LogMessage, _cx: NotificationContext<RoleClient>) {
        self.tell(crate::passthrough::Event::Log(params));
    }
}

/// The MCP server: cheap to clone, one engine behind a lock.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

struct Inner {
    engine: Arc<Mutex<Engine<AnyStore>>>,
    /// The downstreams, in the order they were given (the first also serves resources,
    /// prompts, completion and logging).
    first: Server,
    /// The others, in order.
    rest: Vec<Server>,
    /// The contract's tool definitions, matched again when a downstream's list changes.
    declared: Vec<ToolDef>,
    /// Those the downstreams offer too, as last listed, and where each is forwarded.
    offered: RwLock<(Vec<ToolDef>, BTreeMap<String, crate::downstreams::Route>)>,
    operations: BTreeMap<String, Operation>,
    /// The clients that initialized a session, told when the offered tools change.
    clients: Mutex<Vec<Peer<RoleServer>>>,
    config: GatewayConfig,
    mcp: warrant_core::contract::mcp::McpDeclared,
    entry_limit: usize,
    subscriptions: crate::passthrough::Subscriptions,
    /// Told apart the keys of records made at the same instant.
    notes: std::sync::atomic::AtomicU64,
    /// Records to write after their answers, and told when none is left.
    unwritten: std::sync::atomic::AtomicUsize,
    written: Notify,
}

/// A new connection to the downstream, made when the one in use is found closed.
pub type Connect =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Running, String>> + Send>> + Send + Sync>;

/// A running downstream connection.
pub type Running = rmcp::service::RunningService<RoleClient, Downstream>;

/// One downstream server's connection.
pub struct Server {
    name: String,
    /// Its `tools` table (operation to tool), if it has one.
    tools: Option<BTreeMap<String, String>>,
    /// The connection now: replaced when a closed one is made again.
    downstream: RwLock<Peer<RoleClient>>,
    /// How a closed connection is made again, and the connection it made last (the first is
    /// held by whoever started the gateway).
    reconnect: tokio::sync::Mutex<Reconnect>,
    /// The tool names it listed last.
    listed: RwLock<Vec<String>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("name", &self.name).field("tools", &self.tools).finish_non_exhaustive()
    }
}

impl Server {
    /// A downstream named `name` connected at `peer`, its tools as `listed`.
    pub fn new(
        name: String,
        tools: Option<BTreeMap<String, String>>,
        peer: Peer<RoleClient>,
        listed: Vec<String>,
    ) -> Server {
        Server {
            name,
            tools,
            downstream: RwLock::new(peer),
            reconnect: tokio::sync::Mutex::default(),
            listed: RwLock::new(listed),
        }
    }

    /// The tool names it listed last.
    pub fn listed(&self) -> Vec<String> {
        self.listed.read().map(|l| l.clone()).unwrap_or_default()
    }

    fn peer(&self) -> Peer<RoleClient> {
        match self.downstream.read() {
            Ok(peer) => peer.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

#[derive(Default)]
struct Reconnect {
    connect: Option<Connect>,
    held: Option<Running>,
}

/// How long the gateway waits before each try to make a closed downstream connection again.
const BACKOFF: [Duration; 4] =
    [Duration::ZERO, Duration::from_millis(200), Duration::from_millis(800), Duration::from_millis(3200)];

/// How long a downstream has to answer a ping before its connection is made again.
const PING_WAIT: Duration = Duration::from_secs(2);

/// Whether the downstream answers a ping in time.
async fn answers(peer: &Peer<RoleClient>) -> bool {
    let ping = peer.send_request(rmcp::model::ClientRequest::PingRequest(Default::default()));
    matches!(tokio::time::timeout(PING_WAIT, ping).await, Ok(Ok(_)))
}

/// Whom a call is decided for, and in which conversation.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    conversation: String,
    actor: String,
}

/// A read's turn.
#[expect(clippy::large_enum_variant, reason = "one per read, returned once")]
enum ReadTurn {
    /// Allowed, not committed yet.
    Allowed(DeferredTurn),
    /// Decided (or recorded before) otherwise, or a commit recorded before.
    Decided(TurnResponse),
}

/// What the user did with a form.
enum Form {
    /// Submitted, with its content.
    Accepted(Map<String, Value>),
    /// The form's Decline.
    Declined,
    /// The form's Cancel (dismissed without a choice).
    Cancelled,
    /// Not answered: timed out, failed, or the call was cancelled meanwhile.
    Unanswered,
}

/// What a call ends in, before it is a tool result.
enum Ending {
    /// A result for the client as it is (the downstream's, or one the gateway made).
    Result(CallToolResult),
}

impl Gateway {
    /// A gateway over `engine`, forwarding to `downstream`, offering `offered`.
    pub fn new(
        engine: Engine<AnyStore>,
        downstream: Peer<RoleClient>,
        offered: Vec<ToolDef>,
        config: GatewayConfig,
    ) -> Gateway {
        let listed: Vec<String> = offered.iter().map(|d| d.name.clone()).collect();
        let found = match_tools(offered, &listed);
        let server = Server::new("downstream".into(), None, downstream, listed);
        Gateway::with_servers(engine, server, Vec::new(), found, config)
    }

    /// A gateway over `engine`, forwarding each operation to its server as `found` routes it.
    pub fn with_servers(
        engine: Engine<AnyStore>,
        first: Server,
        rest: Vec<Server>,
        found: ToolMatch,
        config: GatewayConfig,
    ) -> Gateway {
        let operations = engine.contract().operations().iter().map(|op| (op.name.clone(), op.clone())).collect();
        let declared = contract_tools(&engine);
        let mcp = engine.contract().mcp().clone();
        let entry_limit = usize::try_from(engine.contract().limits().characters_per_entry).unwrap_or(usize::MAX);
        let inner = Inner {
            engine: Arc::new(Mutex::new(engine)),
            first,
            rest,
            declared,
            offered: RwLock::new((found.offered, found.routes)),
            operations,
            clients: Mutex::default(),
            config,
            mcp,
            entry_limit,
            subscriptions: crate::passthrough::Subscriptions::default(),
            notes: std::sync::atomic::AtomicU64::new(0),
            unwritten: std::sync::atomic::AtomicUsize::new(0),
            written: Notify::new(),
        };
        Gateway { inner: Arc::new(inner) }
    }

    /// Makes a closed connection to the first downstream again with `connect` (`Gateway::up`).
    pub async fn reconnect_with(&self, connect: Connect) {
        self.reconnect_at(0, connect).await;
    }

    /// Makes a closed connection to downstream `server` (its place) again with `connect`.
    pub async fn reconnect_at(&self, server: usize, connect: Connect) {
        if let Some(server) = self.servers().nth(server) {
            server.reconnect.lock().await.connect = Some(connect);
        }
    }

    /// The first downstream's connection: the one resources, prompts, completion and logging
    /// go to.
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.server(0).peer()
    }

    fn server(&self, server: usize) -> &Server {
        self.servers().nth(server).unwrap_or(&self.inner.first)
    }

    /// Every downstream, in order.
    fn servers(&self) -> impl Iterator<Item = &Server> {
        std::iter::once(&self.inner.first).chain(&self.inner.rest)
    }

    /// Where operation `op` is forwarded, if it is offered.
    fn route(&self, op: &str) -> Option<crate::downstreams::Route> {
        self.inner.offered.read().ok().and_then(|o| o.1.get(op).cloned())
    }

    /// The downstream connection, made again if it is closed (a stdio downstream that died, an
    /// HTTP one whose session ended): up to four tries with a growing wait between them, the
    /// tools listed again on the new one. Each reconnection is a turn on the record of the
    /// conversation whose call found it closed (`frame`), a `calls` entry naming the tries and
    /// the last error, so that the review page shows why the downstream changed under a call.
    ///
    /// With `ping`, a connection that looks open is asked too (a stdio downstream that has
    /// just died may not have been seen to close yet): one that does not answer within
    /// [`PING_WAIT`] is made again.
    pub(crate) async fn up(
        &self,
        at: usize,
        frame: Option<&TurnFrame>,
        ping: bool,
    ) -> Result<Peer<RoleClient>, String> {
        let server = self.server(at);
        let peer = server.peer();
        if !peer.is_transport_closed() && (!ping || answers(&peer).await) {
            return Ok(peer);
        }
        let mut reconnect = server.reconnect.lock().await;
        // Another call may have made it again while this one waited.
        let peer = server.peer();
        if !peer.is_transport_closed() && (!ping || answers(&peer).await) {
            return Ok(peer);
        }
        let Some(connect) = reconnect.connect.clone() else {
            return Err("its connection is closed".into());
        };
        let mut last = String::new();
        for (tries, wait) in BACKOFF.iter().enumerate() {
            tokio::time::sleep(*wait).await;
            match connect().await {
                Ok(running) => {
                    let peer = running.peer().clone();
                    if let Ok(mut current) = server.downstream.write() {
                        *current = peer.clone();
                    }
                    self.follow(running.service().changes());
                    self.pass_events(running.service().events());
                    reconnect.held = Some(running);
                    drop(reconnect);
                    eprintln!(
                        "warrant mcp: the downstream{}'s connection was closed: connected again ({} tries)",
                        self.called(at),
                        tries + 1
                    );
                    let args = json!({"tries": tries + 1, "error": last, "downstream": server.name});
                    self.note(frame, "warrant/downstream_reconnected", args).await;
                    if let Err(e) = self.relist().await {
                        eprintln!("warrant mcp: the downstream's tools could not be listed again: {e}");
                    }
                    return Ok(peer);
                }
                Err(e) => last = e,
            }
        }
        drop(reconnect);
        eprintln!(
            "warrant mcp: the downstream{}'s connection was closed and could not be made again: {last}",
            self.called(at)
        );
        let args = json!({"tries": BACKOFF.len(), "error": last, "downstream": server.name});
        self.note(frame, "warrant/downstream_unreachable", args).await;
        Err(format!("its connection is closed and could not be made again: {last}"))
    }

    /// ` `name`` when there are several downstreams, to tell them apart in what is said.
    fn called(&self, server: usize) -> String {
        if self.inner.rest.is_empty() { String::new() } else { format!(" `{}`", self.server(server).name) }
    }

    /// Puts what the gateway did on the record of `frame`'s conversation: a turn with no act
    /// whose `calls` name it (`tool`, with `args`). Without a conversation (the start-up sweep
    /// over HTTP) it is said on standard error alone.
    pub(crate) async fn note(&self, frame: Option<&TurnFrame>, tool: &str, args: Value) {
        self.note_entry(frame, tool, args, None).await;
    }

    /// [`Gateway::note`] with what came back as an entry of the source kind given.
    pub(crate) async fn note_entry(
        &self,
        frame: Option<&TurnFrame>,
        tool: &str,
        args: Value,
        entry: Option<(&str, &str)>,
    ) {
        let Some(frame) = frame.filter(|f| !f.actor.is_empty()) else { return };
        let at = now();
        let nonce = self.inner.notes.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string();
        let key = derive_id("mcp", &[&frame.conversation, tool, &at, &nonce]);
        let request = call::note_request(frame, &key, &at, tool, args, entry);
        if let Err(e) = self.turn(request).await {
            eprintln!("warrant mcp: `{tool}` was not recorded: {e}");
        }
    }

    /// Runs `record` after the answer is sent, counted until it ends ([`Gateway::flushed`]).
    pub(crate) fn after_answer(&self, record: impl std::future::Future<Output = ()> + Send + 'static) {
        let gateway = self.clone();
        self.inner.unwritten.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async move {
            record.await;
            if gateway.inner.unwritten.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                gateway.inner.written.notify_waiters();
            }
        });
    }

    /// Waits until every record written after its answer (`Gateway::after_answer`) is
    /// written: a gateway that stops (its client gone, a signal) loses none of them.
    pub async fn flushed(&self) {
        loop {
            let written = self.inner.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            if self.inner.unwritten.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            written.await;
        }
    }

    /// The most characters an entry may hold (`[limits] characters_per_entry`).
    pub(crate) fn entry_limit(&self) -> usize {
        self.inner.entry_limit
    }

    /// The resources and prompts the contract lets through (`[mcp]`).
    pub(crate) fn declared(&self) -> &warrant_core::contract::mcp::McpDeclared {
        &self.inner.mcp
    }

    pub(crate) fn subscriptions(&self) -> &crate::passthrough::Subscriptions {
        &self.inner.subscriptions
    }

    /// The clients that initialized a session and are still connected.
    pub(crate) fn clients(&self) -> Vec<Peer<RoleServer>> {
        match self.inner.clients.lock() {
            Ok(mut clients) => {
                clients.retain(|c| !c.is_transport_closed());
                clients.clone()
            }
            Err(_) => Vec::new(),
        }
    }

    /// The tools offered now.
    pub fn offered(&self) -> Vec<ToolDef> {
        self.inner.offered.read().map(|o| o.0.clone()).unwrap_or_default()
    }

    fn offers(&self, name: &str) -> bool {
        self.route(name).is_some()
    }

    /// Follows the downstream's tool list: each time `changes` is notified (the downstream sent
    /// `notifications/tools/list_changed`), [`Gateway::relist`].
    pub fn follow(&self, changes: Arc<Notify>) {
        let gateway = self.clone();
        tokio::spawn(async move {
            loop {
                changes.notified().await;
                match gateway.relist().await {
                    Ok(found) => crate::report(&found),
                    Err(e) => eprintln!("warrant mcp: the downstream's tools could not be listed again: {e}"),
                }
            }
        });
    }

    /// Lists the downstream's tools again and matches them with the contract's, as at start: an
    /// operation the downstream no longer offers is no longer listed and a call to it is
    /// refused; one it offers again is listed again. Every client that initialized a session is
    /// then sent `notifications/tools/list_changed`.
    ///
    /// With several downstreams each is listed again; one that does not answer keeps its last
    /// list, so that its operations stay its own (and their calls fail as it is down).
    pub async fn relist(&self) -> Result<ToolMatch, String> {
        let mut failed = Vec::new();
        for server in self.servers() {
            match server.peer().list_all_tools().await {
                Ok(listed) => {
                    if let Ok(mut names) = server.listed.write() {
                        *names = listed.iter().map(|t| t.name.to_string()).collect();
                    }
                }
                Err(e) => failed.push(format!("{}: {e}", server.name)),
            }
        }
        if failed.len() == self.inner.rest.len() + 1 {
            return Err(failed.join("; "));
        }
        let lists: Vec<Vec<String>> =
            self.servers().map(|s| s.listed.read().map(|l| l.clone()).unwrap_or_default()).collect();
        let listings: Vec<crate::downstreams::Listing<'_>> = self
            .servers()
            .zip(&lists)
            .map(|(s, listed)| crate::downstreams::Listing { name: &s.name, tools: s.tools.as_ref(), listed })
            .collect();
        let found = crate::downstreams::route(self.inner.declared.clone(), &listings);
        if let Ok(mut offered) = self.inner.offered.write() {
            *offered = (found.offered.clone(), found.routes.clone());
        }
        for client in self.clients() {
            if let Err(e) = client.notify_tool_list_changed().await {
                tracing::warn!(error = %e, "a client was not told that the tools changed");
            }
        }
        Ok(found)
    }

    /// The record the start-up sweep's reconnections go on: the stdio session's; none over
    /// HTTP, whose sessions have not begun.
    pub(crate) fn sweep_frame(&self) -> Option<TurnFrame> {
        let config = &self.inner.config;
        let who = Who { conversation: config.conversation.clone(), actor: config.actor.clone() };
        (!config.actor.is_empty()).then(|| self.frame(&who))
    }

    pub(crate) fn frame(&self, who: &Who) -> TurnFrame {
        let config = &self.inner.config;
        TurnFrame {
            conversation: who.conversation.clone(),
            actor: who.actor.clone(),
            locale: config.locale.clone(),
            time_zone: config.time_zone.clone(),
            user_kind: config.user_kind.clone(),
        }
    }

    /// Over HTTP, the actor the request's key opened and the conversation of its MCP session;
    /// over stdio, the gateway's. An HTTP request without either is refused (fail closed).
    pub(crate) fn who(&self, cx: &RequestContext<RoleServer>) -> Result<Who, String> {
        let Some(parts) = cx.extensions.get::<axum::http::request::Parts>() else {
            let config = &self.inner.config;
            return Ok(Who { conversation: config.conversation.clone(), actor: config.actor.clone() });
        };
        let actor = parts.extensions.get::<crate::http::Principal>().map(|p| p.0.clone());
        let session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
        let resumed = parts.headers.get(crate::http::RESUME_HEADER).map(|v| v.to_str().unwrap_or_default());
        match (actor, session) {
            (Some(actor), Some(session)) => match resumed {
                None => Ok(Who { conversation: format!("mcp-{session}"), actor }),
                Some(name) => match crate::http::resumed_conversation(&actor, name) {
                    Some(conversation) => Ok(Who { conversation, actor }),
                    None => Err(call::gateway_refusal(
                        ReasonCode::InvalidInput,
                        crate::http::RESUME_HEADER,
                        "give 1 to 128 letters, digits, `-` or `_`",
                    )),
                },
            },
            (None, _) => {
                Err(call::gateway_refusal(ReasonCode::Unauthorized, "authorization", "no key opened this request"))
            }
            (_, None) => Err(call::gateway_refusal(ReasonCode::InvalidInput, "mcp-session-id", "no MCP session")),
        }
    }

    /// Runs one turn on a blocking thread.
    async fn turn(&self, request: Value) -> Result<(TurnResponse, bool), String> {
        let engine = self.inner.engine.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            engine.turn(&request.to_string()).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())??;
        match joined {
            TurnResult::Decided { response, repeated } => Ok((response, repeated)),
            TurnResult::Rejected(error) => {
                Err(format!("warrant: rejected; {} (field `{}`): {}", error.code.as_str(), error.field, error.message))
            }
        }
    }

    /// A read's turn, on one blocking thread: the recorded response of a request sent before,
    /// else the read decided; an allowed one (a commit) is returned uncommitted, any other
    /// verdict committed first.
    async fn read_turn(
        &self,
        who: &Who,
        key: &str,
        op: &Operation,
        args: &Map<String, Value>,
    ) -> Result<ReadTurn, String> {
        let engine = self.inner.engine.clone();
        let conversation = who.conversation.clone();
        let request = call::act_request(&self.frame(who), key, &now(), &op.name, args, &[]);
        let key = key.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            if let Some(stored) = engine.stored_turn(&conversation, &key).map_err(|e| e.to_string())? {
                let response = serde_json::from_value(stored.response)
                    .map_err(|e| format!("warrant: the recorded response of turn `{key}`: {e}"))?;
                return Ok(ReadTurn::Decided(response));
            }
            let decided = match engine.decide_turn(&request.to_string()).map_err(|e| e.to_string())? {
                Deciding::Deferred(deferred)
                    if deferred.response().acts.iter().all(|a| a.verdict == Verdict::Commit) =>
                {
                    return Ok(ReadTurn::Allowed(deferred));
                }
                Deciding::Deferred(deferred) => engine.commit_decided(deferred).map_err(|e| e.to_string())?,
                Deciding::Done(result) => result,
            };
            match decided {
                TurnResult::Decided { response, .. } => Ok(ReadTurn::Decided(response)),
                TurnResult::Rejected(error) => Err(format!(
                    "warrant: rejected; {} (field `{}`): {}",
                    error.code.as_str(),
                    error.field,
                    error.message
                )),
            }
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// An allowed read: forwarded, and answered, and then its turn committed and its outcome
    /// recorded, off the client's wait. A read performs nothing, so it is not claimed first (the
    /// claim is what keeps a write from being performed twice).
    async fn read_now(&self, deferred: DeferredTurn, who: &Who) -> Ending {
        let Some(effect) = deferred.response().effects.first().cloned() else {
            return refusal("warrant: committed without an effect".into());
        };
        let frame = self.frame(who);
        let Some(route) = self.route(&effect.op) else {
            return refusal(format!("warrant: `{}` is no longer offered: not forwarded", effect.op));
        };
        let (result, outcome) = match self.up(route.server, Some(&frame), false).await {
            Ok(peer) => {
                let forward = CallToolRequestParams::new(route.tool.clone()).with_arguments(match &effect.args {
                    Value::Object(map) => map.clone(),
                    _ => Map::new(),
                });
                let mut sent = peer.call_tool(forward.clone()).await;
                if matches!(&sent, Err(e) if !matches!(e, rmcp::ServiceError::McpError(_)))
                    && let Ok(peer) = self.up(route.server, Some(&frame), true).await
                {
                    sent = peer.call_tool(forward).await;
                }
                match sent {
                    Ok(result) => {
                        let outcome = if result.is_error == Some(true) { "failed" } else { "done" };
                        (result, outcome)
                    }
                    Err(e) => {
                        let text = format!("warrant: the downstream did not answer `{}`: {e}", effect.op);
                        (CallToolResult::error(vec![ContentBlock::text(text)]), "failed")
                    }
                }
            }
            Err(e) => {
                let text = format!("warrant: `{}` not forwarded: the downstream is down ({e})", effect.op);
                (CallToolResult::error(vec![ContentBlock::text(text)]), "failed")
            }
        };
        let gateway = self.clone();
        self.after_answer(async move { gateway.record_read(deferred, effect, outcome).await });
        Ending::Result(result)
    }

    /// The record of a read already answered: its turn committed, then its outcome. A row the
    /// read depended on that changed in between has the turn decided again; a verdict that is
    /// then not a commit is said on standard error, since the client was answered already.
    async fn record_read(&self, deferred: DeferredTurn, effect: EffectOut, outcome: &'static str) {
        let engine = self.inner.engine.clone();
        let committed = tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            engine.commit_decided(deferred).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        match committed {
            Ok(TurnResult::Decided { response, .. }) if response.effects.iter().any(|e| e.id == effect.id) => {
                if let Err(e) = self.report(effect.id.clone(), outcome).await {
                    eprintln!("warrant mcp: the outcome of read `{}` was not recorded: {e}", effect.id);
                }
            }
            Ok(_) => eprintln!(
                "warrant mcp: read `{}` was answered, and decided otherwise when its record was written",
                effect.op
            ),
            Err(e) => eprintln!("warrant mcp: the record of read `{}` was not written: {e}", effect.op),
        }
    }

    /// The response recorded for turn `turn` of the conversation, if it was decided before: a
    /// request sent again is answered from it, nothing asked or decided again.
    async fn recorded(&self, who: &Who, turn: String) -> Result<Option<(TurnResponse, Value)>, String> {
        let engine = self.inner.engine.clone();
        let conversation = who.conversation.clone();
        tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            let Some(stored) = engine.stored_turn(&conversation, &turn).map_err(|e| e.to_string())? else {
                return Ok(None);
            };
            let response = serde_json::from_value(stored.response)
                .map_err(|e| format!("warrant: the recorded response of turn `{turn}`: {e}"))?;
            Ok(Some((response, stored.request)))
        })
        .await
        .map_err(|e| e.to_string())?
    }

    async fn report(&self, effect: String, outcome: &'static str) -> Result<(), String> {
        self.settle(effect, outcome).await.map(|_| ())
    }

    /// Records `outcome` for `effect`: `None` when this report recorded it, else the outcome
    /// recorded before, which stands.
    async fn settle(&self, effect: String, outcome: &'static str) -> Result<Option<String>, String> {
        let engine = self.inner.engine.clone();
        tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            match engine.report_outcome(&effect, outcome, &[]).map_err(|e| e.to_string())? {
                OutcomeReply::Accepted(reply) if reply.recorded => Ok(None),
                OutcomeReply::Accepted(reply) => Ok(Some(reply.outcome)),
                OutcomeReply::Refused { error } => Err(format!(
                    "warrant: the outcome of effect `{effect}` was refused; {} (field `{}`): {}",
                    error.code.as_str(),
                    error.field,
                    error.message
                )),
            }
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// One call: its text arguments from the user, the turn, the confirmation, the forward. A
    /// call decided before (the same request id, tool and arguments in this conversation) is
    /// answered from the record: its hold resumed, its answer and its outcome as recorded.
    async fn call(&self, who: &Who, name: &str, args: Map<String, Value>, cx: &RequestContext<RoleServer>) -> Ending {
        let id = match &cx.id {
            rmcp::model::NumberOrString::Number(n) => n.to_string(),
            rmcp::model::NumberOrString::String(s) => format!("\"{s}\""),
        };
        let key = call::turn_key(&who.conversation, &id, name, &args);
        let Some(op) = self.offers(name).then(|| self.inner.operations.get(name)).flatten() else {
            let detail = format!("`{name}` is not an operation the contract offers through this gateway");
            return refusal(call::gateway_refusal(ReasonCode::UnknownOperation, "name", &detail));
        };
        let elicit = cx.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        // A read that asks the user nothing is decided in one step, and an allowed one forwarded
        // and answered before its record is written.
        let read = op.effects.is_empty() && call::asked_args(op).is_empty();
        let recorded = if read {
            match self.read_turn(who, &key, op, &args).await {
                Ok(ReadTurn::Allowed(deferred)) => return self.read_now(deferred, who).await,
                Ok(ReadTurn::Decided(response)) => Ok(Some((response, Value::Null))),
                Err(e) => Err(e),
            }
        } else {
            self.recorded(who, key.clone()).await
        };
        let response = match recorded {
            Ok(Some((response, _))) => response,
            Ok(None) => match self.decide(who, &key, op, &args, elicit, cx).await {
                Ok(response) => response,
                Err(ending) => return ending,
            },
            Err(e) => return refusal(e),
        };
        let Some(act) = response.acts.first() else { return refusal("warrant: the turn decided no act".into()) };
        match act.verdict {
            Verdict::Commit => self.perform(&response, who).await,
            Verdict::Hold => match self.recorded(who, call::answer_key(&key)).await {
                Ok(Some((answered, request))) => self.answered(&answered, &request, who).await,
                Ok(None) if elicit => self.confirm(who, &key, &response, cx).await,
                Ok(None) => refusal(call::verdict_text(act)),
                Err(e) => refusal(e),
            },
            _ => refusal(call::verdict_text(act)),
        }
    }

    /// A new call's turn: the user's words asked first where the operation takes them.
    async fn decide(
        &self,
        who: &Who,
        key: &str,
        op: &Operation,
        args: &Map<String, Value>,
        elicit: bool,
        cx: &RequestContext<RoleServer>,
    ) -> Result<TurnResponse, Ending> {
        let asked = call::asked_args(op);
        let mut user_words = Vec::new();
        if !asked.is_empty() && elicit {
            match self.ask_for_words(op, &asked, args, cx).await {
                Ok(Some(words)) => user_words = words,
                Ok(None) => {
                    let detail = "the user did not give the words";
                    let field = asked.first().map(|a| a.name).unwrap_or_default();
                    return Err(refusal(call::gateway_refusal(ReasonCode::DeclinedByUser, field, detail)));
                }
                Err(e) => return Err(refusal(e)),
            }
        }
        let request = call::act_request(&self.frame(who), key, &now(), &op.name, args, &user_words);
        self.turn(request).await.map(|(response, _)| response).map_err(refusal)
    }

    /// Asks the user for each asked argument: a text argument's words, the model's value
    /// offered as the default; an enum's id from its closed values, the model's offered as the
    /// default only when it is one of them.
    async fn ask_for_words(
        &self,
        op: &Operation,
        asked: &[call::Asked<'_>],
        args: &Map<String, Value>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Option<Vec<call::UserValue>>, String> {
        let mut properties = Map::new();
        for call::Asked { name, values } in asked {
            let mut field = Map::new();
            field.insert("type".into(), json!("string"));
            field.insert("title".into(), json!(name));
            let model = args.get(*name).and_then(Value::as_str);
            if let Some(values) = values {
                field.insert("enum".into(), json!(values));
            }
            if let Some(model) = model.filter(|m| values.is_none_or(|v| v.iter().any(|x| x == m))) {
                field.insert("default".into(), json!(model));
            }
            properties.insert((*name).to_owned(), Value::Object(field));
        }
        let names: Vec<&str> = asked.iter().map(|a| a.name).collect();
        let Value::Object(schema) = json!({"type": "object", "properties": properties, "required": names}) else {
            return Err("warrant: the form did not build".into());
        };
        let message =
            format!("`{}` takes these from you, not from the assistant: type, pick or confirm each.", op.name);
        let Form::Accepted(content) = self.elicit(message, schema, cx).await? else { return Ok(None) };
        let words = asked
            .iter()
            .map(|a| call::UserValue {
                name: a.name.to_owned(),
                text: content.get(a.name).and_then(Value::as_str).unwrap_or_default().to_owned(),
                choice: a.values.is_some(),
            })
            .collect();
        Ok(Some(words))
    }

    /// An elicitation: what the user did with the form, or `Unanswered` when it timed out or
    /// failed, or when the client cancelled the call meanwhile (`notifications/cancelled`).
    async fn elicit(
        &self,
        message: String,
        schema: JsonObject,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Form, String> {
        let schema = ElicitationSchema::from_json_schema(schema).map_err(|e| format!("warrant: form: {e}"))?;
        let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
        let timeout = Some(self.inner.config.elicitation_timeout);
        let asked = cx.peer.create_elicitation_with_timeout(params, timeout);
        let answered = tokio::select! {
            answered = asked => answered,
            () = cx.ct.cancelled() => return Ok(Form::Unanswered),
        };
        match answered {
            Ok(result) => Ok(match (result.action, result.content) {
                (ElicitationAction::Accept, Some(Value::Object(content))) => Form::Accepted(content),
                (ElicitationAction::Accept, _) => Form::Unanswered,
                (ElicitationAction::Decline, _) => Form::Declined,
                (ElicitationAction::Cancel, _) => Form::Cancelled,
                _ => Form::Unanswered,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "elicitation failed");
                Ok(Form::Unanswered)
            }
        }
    }

    /// A held act: the user's decision through an elicitation, given to the engine as the
    /// interaction's answer; only a commit is forwarded. The form's Decline and Cancel close
    /// the interaction as declined (the client's action on the answer's record, under `calls`);
    /// a form not answered leaves it open. The downstream is checked first: a user is not asked
    /// to confirm what could not be forwarded.
    async fn confirm(&self, who: &Who, key: &str, held: &TurnResponse, cx: &RequestContext<RoleServer>) -> Ending {
        let Some(interaction) = held.interactions.first() else {
            return refusal("warrant: held without an interaction".into());
        };
        let Some(op) = self.inner.operations.get(&interaction.op) else {
            return refusal(format!("warrant: held `{}`, which the contract does not declare", interaction.op));
        };
        let server = self.route(&interaction.op).map_or(0, |r| r.server);
        if let Err(e) = self.up(server, Some(&self.frame(who)), true).await {
            return refusal(format!(
                "warrant: `{}` is held (interaction `{}` stays open) and the user was not asked: the downstream is down ({e})",
                interaction.op, interaction.id
            ));
        }
        let copy = call::confirmation_copy(op, &interaction.args);
        let Value::Object(schema) = json!({
            "type": "object",
            "properties": {"decision": {"type": "string", "title": "Decision", "enum": interaction.options}},
            "required": ["decision"],
        }) else {
            return refusal("warrant: the form did not build".into());
        };
        let (option, action) = match self.elicit(copy, schema, cx).await {
            Ok(Form::Accepted(content)) => match content.get("decision").and_then(Value::as_str) {
                Some(option) => (option.to_owned(), "accept"),
                None => return refusal(held.acts.first().map(call::verdict_text).unwrap_or_default()),
            },
            Ok(Form::Declined) => (DECLINE.to_owned(), "decline"),
            Ok(Form::Cancelled) => (DECLINE.to_owned(), "cancel"),
            Ok(Form::Unanswered) => {
                // Not answered: the interaction stays open, answerable elsewhere or by the
                // same call sent again.
                if cx.ct.is_cancelled() {
                    eprintln!(
                        "warrant mcp: the client cancelled `{}` while the user was asked: nothing committed, interaction `{}` stays open",
                        interaction.op, interaction.id
                    );
                }
                return refusal(held.acts.first().map(call::verdict_text).unwrap_or_default());
            }
            Err(e) => return refusal(e),
        };
        let answer_key = call::answer_key(key);
        let request = call::answer_request(&self.frame(who), &answer_key, &now(), &interaction.id, &option, action);
        match self.turn(request.clone()).await {
            Ok((answered, _)) => self.answered(&answered, &request, who).await,
            Err(e) => refusal(e),
        }
    }

    /// The answer turn's outcome: a commit forwarded (or its recorded outcome named), a decline
    /// or a cancel worded as the user's.
    async fn answered(&self, answered: &TurnResponse, request: &Value, who: &Who) -> Ending {
        match answered.acts.first() {
            Some(act) if act.verdict == Verdict::Commit => self.perform(answered, who).await,
            Some(act) if act.reasons.iter().any(|r| r.code == ReasonCode::DeclinedByUser) => {
                let how = match call::answer_action(request) {
                    Some("cancel") => "cancelled by the user",
                    _ => "declined by the user",
                };
                refusal(format!("warrant: `{}` {how}: nothing performed; {}", act.op, call::verdict_text(act)))
            }
            Some(act) => refusal(call::verdict_text(act)),
            None => refusal("warrant: the answer decided no act".into()),
        }
    }

    /// A committed act: forwarded to the downstream unless its outcome is recorded, and its
    /// outcome recorded.
    async fn perform(&self, committed: &TurnResponse, who: &Who) -> Ending {
        let Some(effect) = committed.effects.first() else {
            return refusal("warrant: committed without an effect".into());
        };
        match self.forward_once(effect, Some(&self.frame(who))).await {
            Ok(Forward::Performed { result, .. }) => Ending::Result(result),
            Ok(Forward::Withdrawn) => {
                let text = format!(
                    "warrant: `{}` committed (effect `{}`), but the downstream no longer offers it: not forwarded; a gateway started when it is offered again forwards it once",
                    effect.op, effect.id
                );
                refusal(text)
            }
            Ok(Forward::Before(outcome)) => {
                let text = format!("warrant: `{}` was performed before (effect `{}`: {outcome})", effect.op, effect.id);
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.is_error = Some(outcome != "done");
                Ending::Result(result)
            }
            Err(e) => refusal(e),
        }
    }

    /// Forwards a committed effect to the downstream at most once, ever. The forward is first
    /// claimed by recording the outcome `unknown` (the store records it once: of two claims,
    /// one is recorded and the other finds it), then sent with the effect's idempotency key,
    /// and its result recorded over the claim: `failed` if it has `isError`, else `done`. An
    /// effect whose outcome is recorded (a claim included) is not forwarded again: a gateway
    /// that dies between the claim and the result leaves `unknown`, for the operator to settle.
    async fn forward_once(&self, effect: &EffectOut, frame: Option<&TurnFrame>) -> Result<Forward, String> {
        #[cfg(feature = "failpoints")]
        failpoint("before_claim");
        let Some(route) = self.route(&effect.op) else {
            return Ok(Forward::Withdrawn);
        };
        if let Some(outcome) = self.settle(effect.id.clone(), "unknown").await? {
            return Ok(Forward::Before(outcome));
        }
        // A write is pinged first; a read, which performs nothing, is not kept waiting for it.
        let read = self.inner.operations.get(&effect.op).is_some_and(|op| op.effects.is_empty());
        let peer = match self.up(route.server, frame, !read).await {
            Ok(peer) => peer,
            // Nothing was sent, so the downstream cannot have acted: `failed`, not `unknown`.
            Err(e) => return self.not_sent(effect, &format!("the downstream is down ({e})")).await,
        };
        let args = match &effect.args {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let mut meta = MetaObject::default();
        meta.0.insert(IDEMPOTENCY_META.into(), json!(effect.idempotency_key));
        let mut forward = CallToolRequestParams::new(route.tool.clone()).with_arguments(args);
        forward.meta = Some(RequestMetaObject(meta));
        #[cfg(feature = "failpoints")]
        failpoint("before_forward");
        if peer.is_transport_closed() {
            return self.not_sent(effect, "the downstream's connection closed before the call was sent").await;
        }
        let mut sent = peer.call_tool(forward.clone()).await;
        // A read performs nothing, so one cut off by a closed connection is sent again, once,
        // on the connection made again.
        if read
            && matches!(&sent, Err(e) if !matches!(e, rmcp::ServiceError::McpError(_)))
            && let Ok(peer) = self.up(route.server, frame, true).await
        {
            sent = peer.call_tool(forward).await;
        }
        let (result, outcome) = match sent {
            Ok(result) => {
                let outcome = if result.is_error == Some(true) { "failed" } else { "done" };
                (result, outcome)
            }
            // A JSON-RPC error is the downstream's answer: it did not perform the call.
            Err(rmcp::ServiceError::McpError(e)) => {
                let text = format!("warrant: the downstream refused `{}`: {}", effect.op, e.message);
                (CallToolResult::error(vec![ContentBlock::text(text)]), "failed")
            }
            // A read performs nothing: one not answered is `failed`, not `unknown`.
            Err(e) if read => {
                let text = format!("warrant: the downstream did not answer `{}`: {e}", effect.op);
                (CallToolResult::error(vec![ContentBlock::text(text)]), "failed")
            }
            Err(e) => {
                let text = format!(
                    "warrant: the downstream did not answer `{}` (effect `{}`): {e}; it may have performed it, so it is `unknown` and never forwarded again",
                    effect.op, effect.id
                );
                (CallToolResult::error(vec![ContentBlock::text(text)]), "unknown")
            }
        };
        #[cfg(feature = "failpoints")]
        failpoint("after_forward");
        if outcome != "unknown"
            && let Err(e) = self.report(effect.id.clone(), outcome).await
        {
            tracing::error!(effect = %effect.id, error = %e, "the outcome was not recorded");
        }
        Ok(Forward::Performed { result, outcome })
    }

    /// A forward this gateway claimed and never sent: `failed` on the record, over its claim.
    async fn not_sent(&self, effect: &EffectOut, why: &str) -> Result<Forward, String> {
        self.report(effect.id.clone(), "failed").await?;
        let text = format!(
            "warrant: `{}` committed (effect `{}`) and not forwarded: {why}; `failed`, nothing performed",
            effect.op, effect.id
        );
        Ok(Forward::Performed { result: CallToolResult::error(vec![ContentBlock::text(text)]), outcome: "failed" })
    }

    /// The start-up sweep: every effect a gateway committed (a turn of an MCP session whose key
    /// the gateway derived) and never claimed is forwarded now, once, and its outcome recorded;
    /// every effect whose forward was claimed and never settled is named `unknown` and not
    /// forwarded again. A gateway killed between a commit and its forward loses nothing and
    /// performs nothing twice.
    pub async fn sweep(&self) -> Result<Swept, String> {
        let engine = self.inner.engine.clone();
        let pending = tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            unsettled(&mut engine).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())??;
        let mut swept = Swept::default();
        for (effect, outcome) in pending {
            if outcome.is_some() {
                swept.unknown.push(SweptEffect { id: effect.id, op: effect.op, outcome: "unknown".into() });
                continue;
            }
            if !self.offers(&effect.op) {
                swept.not_offered.push(SweptEffect { id: effect.id, op: effect.op, outcome: String::new() });
                continue;
            }
            let outcome = match self.forward_once(&effect, self.sweep_frame().as_ref()).await? {
                Forward::Performed { outcome, .. } => outcome.to_owned(),
                Forward::Before(outcome) => outcome,
                Forward::Withdrawn => {
                    swept.not_offered.push(SweptEffect { id: effect.id, op: effect.op, outcome: String::new() });
                    continue;
                }
            };
            swept.forwarded.push(SweptEffect { id: effect.id, op: effect.op, outcome });
        }
        Ok(swept)
    }
}

/// The effects of the gateway's turns whose outcome is not settled, oldest first, each with
/// `None` (never claimed) or `Some("unknown")` (claimed, never settled).
fn unsettled(engine: &mut Engine<AnyStore>) -> Result<Vec<(EffectOut, Option<String>)>, warrant_engine::EngineError> {
    let mut found = Vec::new();
    let mut after = 0;
    loop {
        let page = engine.turns(after, 500)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for turn in page {
            if !call::is_gateway_turn(&turn.turn) {
                continue;
            }
            let effects: Vec<EffectOut> = serde_json::from_value(
                turn.response.get("effects").cloned().unwrap_or_else(|| json!([])),
            )
            .map_err(|e| warrant_engine::EngineError::Corrupt {
                what: format!("the effects of turn `{}`", turn.turn),
                message: e.to_string(),
            })?;
            if effects.is_empty() {
                continue;
            }
            let views = engine.turn_effects(&turn.conversation, &turn.turn)?;
            for effect in effects {
                let outcome = views.iter().find(|v| v.id == effect.id).and_then(|v| v.outcome.clone());
                match outcome.as_deref() {
                    None | Some("unknown") => found.push((effect, outcome)),
                    Some(_) => {}
                }
            }
        }
    }
    Ok(found)
}

/// What one forward came to.
enum Forward {
    /// Forwarded now: the downstream's result and the outcome recorded.
    Performed {
        /// The result, for the client.
        result: CallToolResult,
        /// `done`, `failed`, or `unknown` if the downstream did not answer.
        outcome: &'static str,
    },
    /// Not forwarded: the outcome recorded before.
    Before(String),
    /// Not forwarded, nor claimed: the downstream no longer offers the operation.
    Withdrawn,
}

/// One effect the start-up sweep found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweptEffect {
    /// The effect.
    pub id: String,
    /// Its operation.
    pub op: String,
    /// The outcome it has now (empty where none is recorded).
    pub outcome: String,
}

/// What the start-up sweep found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// Committed and never forwarded: forwarded now, once, with the outcome recorded.
    pub forwarded: Vec<SweptEffect>,
    /// Claimed and never settled: the gateway died during the forward, so the downstream may
    /// or may not have performed it. Left `unknown`, never forwarded again.
    pub unknown: Vec<SweptEffect>,
    /// Committed and never forwarded, but the downstream does not offer the operation now:
    /// left as they are, forwarded by a later start that finds it offered.
    pub not_offered: Vec<SweptEffect>,
}

/// Stops the process at the failpoint `WARRANT_MCP_FAILPOINT` names (test builds only).
#[cfg(feature = "failpoints")]
fn failpoint(name: &str) {
    if std::env::var("WARRANT_MCP_FAILPOINT").is_ok_and(|v| v == name) {
        eprintln!("warrant mcp: failpoint `{name}`");
        std::process::exit(86);
    }
}

fn refusal(text: String) -> Ending {
    Ending::Result(CallToolResult::error(vec![ContentBlock::text(text)]))
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        // Resources and prompts are offered where the contract declares some, logging and
        // completion always: what the downstream does not have, it refuses itself.
        let mut capabilities = Map::new();
        capabilities.insert("tools".into(), json!({"listChanged": true}));
        capabilities.insert("logging".into(), json!({}));
        capabilities.insert("completions".into(), json!({}));
        if !self.declared().resources.is_empty() {
            capabilities.insert("resources".into(), json!({"subscribe": true, "listChanged": true}));
        }
        if !self.declared().prompts.is_empty() {
            capabilities.insert("prompts".into(), json!({"listChanged": true}));
        }
        let capabilities: ServerCapabilities =
            serde_json::from_value(Value::Object(capabilities)).unwrap_or_else(|e| {
                tracing::error!(error = %e, "the capabilities did not build: tools alone");
                ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build()
            });
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("warrant", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Every tool call is a turn through warrant: checked by the contract, held for the user's confirmation where the contract says so, and performed once.",
            )
    }

    // Sessions and server-to-client requests (elicitation) end after 2025-11-25.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.offered().iter().map(mcp_tool).collect()))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.pass_list_resources(request, cx).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.pass_list_resource_templates(request, cx).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.pass_read_resource(request, cx).await
    }

    async fn subscribe(&self, request: SubscribeRequestParams, cx: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.pass_subscribe(request, cx).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.pass_unsubscribe(request, cx).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.pass_list_prompts(request, cx).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.pass_get_prompt(request, cx).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.pass_complete(request, cx).await
    }

    async fn set_level(
        &self,
        request: crate::passthrough::SetLevel,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.pass_set_level(request, cx).await
    }

    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        if let Ok(mut clients) = self.inner.clients.lock() {
            clients.push(cx.peer);
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let result = match self.who(&cx) {
            Ok(who) => {
                let Ending::Result(result) = self.call(&who, &request.name, args, &cx).await;
                result
            }
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        };
        Ok(result.into())
    }
}

/// A definition as an rmcp tool.
fn mcp_tool(def: &ToolDef) -> Tool {
    let annotations = ToolAnnotations::new()
        .read_only(def.read_only)
        .destructive(!def.read_only)
        .idempotent(def.read_only)
        .open_world(false);
    Tool::new(def.name.clone(), def.description.clone(), Arc::new(def.input_schema.clone()))
        .with_annotations(annotations)
}

/// The contract's definitions, for the start-up report and `tools/list`.
pub fn contract_tools(engine: &Engine<AnyStore>) -> Vec<ToolDef> {
    tools::definitions(engine.contract())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: String::new(),
            input_schema: Map::new(),
            consequential: false,
            read_only: true,
        }
    }

    #[test]
    fn only_tools_both_sides_have_are_offered_and_the_rest_is_named() {
        let downstream = ["pay".to_owned(), "look".to_owned(), "delete_everything".to_owned()];
        let found = match_tools(vec![def("look"), def("pay"), def("refund")], &downstream);
        let offered: Vec<_> = found.offered.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(offered, ["look", "pay"], "in the contract's order");
        assert_eq!(found.missing_downstream, ["refund"]);
        assert_eq!(found.undeclared, ["delete_everything"]);
    }
}
