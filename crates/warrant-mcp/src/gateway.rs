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
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use warrant_core::ReasonCode;
use warrant_core::operation::Operation;
use warrant_core::turn::{EffectOut, TurnResponse, Verdict};
use warrant_engine::{Engine, OutcomeReply, TurnResult};
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

/// The tools offered: the contract's operations the downstream also offers, and what differs.
#[derive(Debug, Clone, Default)]
pub struct ToolMatch {
    /// Offered: declared and performed downstream.
    pub offered: Vec<ToolDef>,
    /// Declared by the contract, not offered by the downstream.
    pub missing_downstream: Vec<String>,
    /// Offered by the downstream, not declared by the contract: never listed, never called.
    pub undeclared: Vec<String>,
}

/// The contract's tool definitions matched with the downstream's tool names.
pub fn match_tools(defs: Vec<ToolDef>, downstream: &[String]) -> ToolMatch {
    let mut found = ToolMatch::default();
    for name in downstream {
        if !defs.iter().any(|d| &d.name == name) {
            found.undeclared.push(name.clone());
        }
    }
    for def in defs {
        if downstream.contains(&def.name) {
            found.offered.push(def);
        } else {
            found.missing_downstream.push(def.name);
        }
    }
    found
}

/// The downstream connection's client side: no capabilities, protocol pinned. A
/// `notifications/tools/list_changed` from the downstream is passed on to whoever waits on
/// [`Downstream::changes`] (the gateway, [`Gateway::follow`]).
#[derive(Debug, Clone, Default)]
pub struct Downstream {
    changed: Arc<Notify>,
}

impl Downstream {
    /// Notified each time the downstream says its tool list changed.
    pub fn changes(&self) -> Arc<Notify> {
        Arc::clone(&self.changed)
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
    downstream: Peer<RoleClient>,
    /// The contract's tool definitions, matched again when the downstream's list changes.
    declared: Vec<ToolDef>,
    /// Those the downstream offers too, as last listed.
    offered: RwLock<Vec<ToolDef>>,
    operations: BTreeMap<String, Operation>,
    /// The clients that initialized a session, told when the offered tools change.
    clients: Mutex<Vec<Peer<RoleServer>>>,
    config: GatewayConfig,
}

/// Whom a call is decided for, and in which conversation.
#[derive(Debug, Clone)]
struct Who {
    conversation: String,
    actor: String,
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
        let operations = engine.contract().operations().iter().map(|op| (op.name.clone(), op.clone())).collect();
        let declared = contract_tools(&engine);
        let inner = Inner {
            engine: Arc::new(Mutex::new(engine)),
            downstream,
            declared,
            offered: RwLock::new(offered),
            operations,
            clients: Mutex::default(),
            config,
        };
        Gateway { inner: Arc::new(inner) }
    }

    /// The tools offered now.
    pub fn offered(&self) -> Vec<ToolDef> {
        self.inner.offered.read().map(|o| o.clone()).unwrap_or_default()
    }

    fn offers(&self, name: &str) -> bool {
        self.inner.offered.read().is_ok_and(|o| o.iter().any(|d| d.name == name))
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
    pub async fn relist(&self) -> Result<ToolMatch, String> {
        let listed = self.inner.downstream.list_all_tools().await.map_err(|e| e.to_string())?;
        let names: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
        let found = match_tools(self.inner.declared.clone(), &names);
        if let Ok(mut offered) = self.inner.offered.write() {
            offered.clone_from(&found.offered);
        }
        let clients = match self.inner.clients.lock() {
            Ok(mut clients) => {
                clients.retain(|c| !c.is_transport_closed());
                clients.clone()
            }
            Err(_) => Vec::new(),
        };
        for client in clients {
            if let Err(e) = client.notify_tool_list_changed().await {
                tracing::warn!(error = %e, "a client was not told that the tools changed");
            }
        }
        Ok(found)
    }

    fn frame(&self, who: &Who) -> TurnFrame {
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
    fn who(&self, cx: &RequestContext<RoleServer>) -> Result<Who, String> {
        let Some(parts) = cx.extensions.get::<axum::http::request::Parts>() else {
            let config = &self.inner.config;
            return Ok(Who { conversation: config.conversation.clone(), actor: config.actor.clone() });
        };
        let actor = parts.extensions.get::<crate::http::Principal>().map(|p| p.0.clone());
        let session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
        match (actor, session) {
            (Some(actor), Some(session)) => Ok(Who { conversation: format!("mcp-{session}"), actor }),
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

    /// The clock of turn `turn`: the recorded one if it was decided before (so a repeated
    /// request is the same request), else now.
    async fn clock(&self, who: &Who, turn: String) -> Result<String, String> {
        let engine = self.inner.engine.clone();
        let conversation = who.conversation.clone();
        tokio::task::spawn_blocking(move || {
            let mut engine = engine.lock().map_err(|_| "the engine lock is poisoned".to_owned())?;
            let stored = engine.stored_turn(&conversation, &turn).map_err(|e| e.to_string())?;
            let recorded = stored.and_then(|t| t.request.get("at").and_then(Value::as_str).map(str::to_owned));
            Ok(recorded.unwrap_or_else(now))
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

    /// One call: its text arguments from the user, the turn, the confirmation, the forward.
    async fn call(&self, who: &Who, name: &str, args: Map<String, Value>, cx: &RequestContext<RoleServer>) -> Ending {
        let id = match &cx.id {
            rmcp::model::NumberOrString::Number(n) => n.to_string(),
            rmcp::model::NumberOrString::String(s) => format!("\"{s}\""),
        };
        let key = call::turn_key(&who.conversation, &id);
        let Some(op) = self.offers(name).then(|| self.inner.operations.get(name)).flatten() else {
            let detail = format!("`{name}` is not an operation the contract offers through this gateway");
            return refusal(call::gateway_refusal(ReasonCode::UnknownOperation, "name", &detail));
        };
        let elicit = cx.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        let asked = call::asked_args(op);
        let mut user_words = Vec::new();
        if !asked.is_empty() && elicit {
            match self.ask_for_words(op, &asked, &args, cx).await {
                Ok(Some(words)) => user_words = words,
                Ok(None) => {
                    let detail = "the user did not give the words";
                    let field = asked.first().map(|a| a.name).unwrap_or_default();
                    return refusal(call::gateway_refusal(ReasonCode::DeclinedByUser, field, detail));
                }
                Err(e) => return refusal(e),
            }
        }
        let at = match self.clock(who, key.clone()).await {
            Ok(at) => at,
            Err(e) => return refusal(e),
        };
        let request = call::act_request(&self.frame(who), &key, &at, name, &args, &user_words);
        let (response, _) = match self.turn(request).await {
            Ok(decided) => decided,
            Err(e) => return refusal(e),
        };
        let Some(act) = response.acts.first() else { return refusal("warrant: the turn decided no act".into()) };
        match act.verdict {
            Verdict::Commit => self.perform(&response).await,
            Verdict::Hold if elicit => self.confirm(who, &key, &response, cx).await,
            _ => refusal(call::verdict_text(act)),
        }
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
        let Some(content) = self.elicit(message, schema, cx).await? else { return Ok(None) };
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

    /// An elicitation: the accepted content, `None` when declined, cancelled or timed out, or
    /// when the client cancels the call meanwhile (`notifications/cancelled`).
    async fn elicit(
        &self,
        message: String,
        schema: JsonObject,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Option<Map<String, Value>>, String> {
        let schema = ElicitationSchema::from_json_schema(schema).map_err(|e| format!("warrant: form: {e}"))?;
        let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
        let timeout = Some(self.inner.config.elicitation_timeout);
        let asked = cx.peer.create_elicitation_with_timeout(params, timeout);
        let answered = tokio::select! {
            answered = asked => answered,
            () = cx.ct.cancelled() => return Ok(None),
        };
        match answered {
            Ok(result) if result.action == ElicitationAction::Accept => match result.content {
                Some(Value::Object(content)) => Ok(Some(content)),
                _ => Ok(None),
            },
            Ok(_) => Ok(None),
            Err(e) => {
                tracing::warn!(error = %e, "elicitation failed");
                Ok(None)
            }
        }
    }

    /// A held act: the user's decision through an elicitation, given to the engine as the
    /// interaction's answer; only a commit is forwarded.
    async fn confirm(&self, who: &Who, key: &str, held: &TurnResponse, cx: &RequestContext<RoleServer>) -> Ending {
        let Some(interaction) = held.interactions.first() else {
            return refusal("warrant: held without an interaction".into());
        };
        let Some(op) = self.inner.operations.get(&interaction.op) else {
            return refusal(format!("warrant: held `{}`, which the contract does not declare", interaction.op));
        };
        let copy = call::confirmation_copy(op, &interaction.args);
        let Value::Object(schema) = json!({
            "type": "object",
            "properties": {"decision": {"type": "string", "title": "Decision", "enum": interaction.options}},
            "required": ["decision"],
        }) else {
            return refusal("warrant: the form did not build".into());
        };
        let decision = match self.elicit(copy, schema, cx).await {
            Ok(Some(content)) => content.get("decision").and_then(Value::as_str).map(str::to_owned),
            Ok(None) => None,
            Err(e) => return refusal(e),
        };
        let Some(option) = decision else {
            // Not answered: the interaction stays open, answerable elsewhere.
            if cx.ct.is_cancelled() {
                eprintln!(
                    "warrant mcp: the client cancelled `{}` while the user was asked: nothing committed, interaction `{}` stays open",
                    interaction.op, interaction.id
                );
            }
            return refusal(held.acts.first().map(call::verdict_text).unwrap_or_default());
        };
        let answer_key = call::answer_key(key);
        let at = match self.clock(who, answer_key.clone()).await {
            Ok(at) => at,
            Err(e) => return refusal(e),
        };
        let request = call::answer_request(&self.frame(who), &answer_key, &at, &interaction.id, &option);
        let (answered, _) = match self.turn(request).await {
            Ok(decided) => decided,
            Err(e) => return refusal(e),
        };
        match answered.acts.first() {
            Some(act) if act.verdict == Verdict::Commit => self.perform(&answered).await,
            Some(act) => refusal(call::verdict_text(act)),
            None => refusal("warrant: the answer decided no act".into()),
        }
    }

    /// A committed act: forwarded to the downstream unless its outcome is recorded, and its
    /// outcome recorded.
    async fn perform(&self, committed: &TurnResponse) -> Ending {
        let Some(effect) = committed.effects.first() else {
            return refusal("warrant: committed without an effect".into());
        };
        match self.forward_once(effect).await {
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
    async fn forward_once(&self, effect: &EffectOut) -> Result<Forward, String> {
        #[cfg(feature = "failpoints")]
        failpoint("before_claim");
        if !self.offers(&effect.op) {
            return Ok(Forward::Withdrawn);
        }
        if let Some(outcome) = self.settle(effect.id.clone(), "unknown").await? {
            return Ok(Forward::Before(outcome));
        }
        let args = match &effect.args {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let mut meta = MetaObject::default();
        meta.0.insert(IDEMPOTENCY_META.into(), json!(effect.idempotency_key));
        let mut forward = CallToolRequestParams::new(effect.op.clone()).with_arguments(args);
        forward.meta = Some(RequestMetaObject(meta));
        #[cfg(feature = "failpoints")]
        failpoint("before_forward");
        let (result, outcome) = match self.inner.downstream.call_tool(forward).await {
            Ok(result) => {
                let outcome = if result.is_error == Some(true) { "failed" } else { "done" };
                (result, outcome)
            }
            Err(e) => {
                let text = format!("warrant: the downstream did not answer `{}`: {e}", effect.op);
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
            let outcome = match self.forward_once(&effect).await? {
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
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
