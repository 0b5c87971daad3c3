//! What the gateway passes through besides tools: the resources and prompts the contract's
//! `[mcp]` section declares (listed, read, got, subscribed to; the rest not listed and refused),
//! completion for those, and logging. None of it is an act, so none of it is a turn's decision;
//! each request and its answer is put on the record of the client's conversation as a turn with
//! no act (`calls`), and what a resource or prompt returns as an entry of `mcp.source`, a
//! source later checks can point into. The record of each is written after the answer is sent
//! (a read adds no wait for the store), so a gateway killed at once may lose the last ones.

// Logging is deprecated after 2025-11-25 (SEP-2577); the gateway speaks 2025-11-25, where it
// is the protocol's, and passes it through as such.
#![allow(deprecated, reason = "logging and resources/subscribe are the 2025-11-25 protocol's")]

use std::sync::Mutex;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, LoggingMessageNotificationParam,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use crate::Gateway;

/// `logging/setLevel`'s parameters.
pub type SetLevel = SetLevelRequestParams;
/// `notifications/message`'s parameters.
pub type LogMessage = LoggingMessageNotificationParam;

/// A notification of the downstream's that the gateway passes on.
#[derive(Debug, Clone)]
pub enum Event {
    /// `notifications/resources/updated`: to the clients subscribed to the URI.
    ResourceUpdated(String),
    /// `notifications/resources/list_changed`: to every client.
    ResourceListChanged,
    /// `notifications/prompts/list_changed`: to every client.
    PromptListChanged,
    /// `notifications/message`: to every client.
    Log(LoggingMessageNotificationParam),
}

/// The clients subscribed to each resource: the URI, the client's session, its peer.
#[derive(Default)]
pub(crate) struct Subscriptions(Mutex<Vec<(String, String, Peer<RoleServer>)>>);

/// The client's session: over HTTP its `mcp-session-id`, over stdio the one client.
fn client_of(cx: &RequestContext<RoleServer>) -> String {
    cx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("stdio")
        .to_owned()
}

/// The refusal of a resource or prompt the contract does not declare: a JSON-RPC error, as
/// the protocol answers a resource or prompt a server does not have.
fn undeclared(what: &str, name: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "warrant: refused; {}: {what} `{name}` is not declared by the contract's `[mcp]` section",
            warrant_core::ReasonCode::UnknownResource.as_str()
        ),
        None,
    )
}

fn downstream_error(e: rmcp::ServiceError) -> McpError {
    match e {
        rmcp::ServiceError::McpError(e) => e,
        e => McpError::internal_error(format!("warrant: the downstream did not answer: {e}"), None),
    }
}

/// The text a resource or prompt returned, for the record's entry: its text contents, one per
/// line; a blob is named by its URI and type, not copied.
fn texts(answer: &Value) -> String {
    let mut found = Vec::new();
    collect(answer, &mut found);
    found.join("\n")
}

fn collect(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get("text") {
                found.push(text.clone());
            }
            if let (Some(Value::String(uri)), Some(_)) = (map.get("uri"), map.get("blob")) {
                found.push(format!("[blob {uri}]"));
            }
            for (name, inner) in map {
                if name != "text" {
                    collect(inner, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, found)),
        _ => {}
    }
}

impl Gateway {
    /// Puts a passed-through request and its answer on the record of the client's
    /// conversation, after the answer is sent.
    fn record(&self, cx: &RequestContext<RoleServer>, method: &str, request: Value, answer: Value, source: bool) {
        let Ok(who) = self.who(cx) else { return };
        let frame = self.frame(&who);
        // An entry over the contract's limit would refuse the record whole: its first part.
        let limit = self.entry_limit();
        let text = |answer: &Value| texts(answer).chars().take(limit).collect::<String>();
        let entry = if source { self.declared().source.clone().map(|kind| (kind, text(&answer))) } else { None };
        let gateway = self.clone();
        let method = method.to_owned();
        self.after_answer(async move {
            let entry = entry.as_ref().filter(|(_, text)| !text.is_empty());
            let entry = entry.map(|(kind, text)| (kind.as_str(), text.as_str()));
            let args = json!({"request": request, "answer": answer});
            gateway.note_entry(Some(&frame), &method, args, entry).await;
        });
    }

    pub(crate) async fn pass_list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut result = self.peer().list_resources(request.clone()).await.map_err(downstream_error)?;
        result.resources.retain(|r| self.declared().resource(&r.uri));
        self.record(&cx, "resources/list", json!(request), json!(result), false);
        Ok(result)
    }

    pub(crate) async fn pass_list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut result = self.peer().list_resource_templates(request.clone()).await.map_err(downstream_error)?;
        result.resource_templates.retain(|r| self.declared().resource(&r.uri_template));
        self.record(&cx, "resources/templates/list", json!(request), json!(result), false);
        Ok(result)
    }

    pub(crate) async fn pass_read_resource(
        &self,
        request: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if !self.declared().resource(&request.uri) {
            return Err(undeclared("resource", &request.uri));
        }
        let result: ReadResourceResult = self.peer().read_resource(request.clone()).await.map_err(downstream_error)?;
        self.record(&cx, "resources/read", json!(request), json!(result), true);
        Ok(ReadResourceResponse::Complete(result))
    }

    pub(crate) async fn pass_subscribe(
        &self,
        request: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !self.declared().resource(&request.uri) {
            return Err(undeclared("resource", &request.uri));
        }
        self.peer().subscribe(request.clone()).await.map_err(downstream_error)?;
        if let Ok(mut subscribed) = self.subscriptions().0.lock() {
            subscribed.push((request.uri.clone(), client_of(&cx), cx.peer.clone()));
        }
        self.record(&cx, "resources/subscribe", json!(request), json!({}), false);
        Ok(())
    }

    pub(crate) async fn pass_unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !self.declared().resource(&request.uri) {
            return Err(undeclared("resource", &request.uri));
        }
        let others = match self.subscriptions().0.lock() {
            Ok(mut subscribed) => {
                let client = client_of(&cx);
                subscribed.retain(|(uri, of, _)| !(*uri == request.uri && *of == client));
                subscribed.iter().any(|(uri, _, _)| *uri == request.uri)
            }
            Err(_) => false,
        };
        // One downstream connection serves every client: it stays subscribed while any is.
        if !others {
            self.peer().unsubscribe(request.clone()).await.map_err(downstream_error)?;
        }
        self.record(&cx, "resources/unsubscribe", json!(request), json!({}), false);
        Ok(())
    }

    pub(crate) async fn pass_list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut result = self.peer().list_prompts(request.clone()).await.map_err(downstream_error)?;
        result.prompts.retain(|p| self.declared().prompt(&p.name));
        self.record(&cx, "prompts/list", json!(request), json!(result), false);
        Ok(result)
    }

    pub(crate) async fn pass_get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if !self.declared().prompt(&request.name) {
            return Err(undeclared("prompt", &request.name));
        }
        let result: GetPromptResult = self.peer().get_prompt(request.clone()).await.map_err(downstream_error)?;
        self.record(&cx, "prompts/get", json!(request), json!(result), true);
        Ok(GetPromptResponse::Complete(result))
    }

    pub(crate) async fn pass_complete(
        &self,
        request: CompleteRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        match &request.r#ref {
            Reference::Resource(r) if !self.declared().resource(&r.uri) => return Err(undeclared("resource", &r.uri)),
            Reference::Prompt(p) if !self.declared().prompt(&p.name) => return Err(undeclared("prompt", &p.name)),
            _ => {}
        }
        let result = self.peer().complete(request.clone()).await.map_err(downstream_error)?;
        self.record(&cx, "completion/complete", json!(request), json!(result), false);
        Ok(result)
    }

    pub(crate) async fn pass_set_level(
        &self,
        request: SetLevelRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.peer().set_level(request.clone()).await.map_err(downstream_error)?;
        self.record(&cx, "logging/setLevel", json!(request), json!({}), false);
        Ok(())
    }

    /// Passes the downstream's notifications on, for as long as `events` lasts: an update to
    /// the clients subscribed to it, a list change and a log message to every client. A log
    /// message is put on the record of the stdio session (over HTTP it belongs to no one
    /// client's conversation, and is passed on only).
    pub fn pass_events(&self, mut events: tokio::sync::broadcast::Receiver<Event>) {
        let gateway = self.clone();
        tokio::spawn(async move {
            loop {
                let event = match events.recv().await {
                    Ok(event) => event,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                };
                gateway.pass_event(event).await;
            }
        });
    }

    async fn pass_event(&self, event: Event) {
        let clients = match &event {
            Event::ResourceUpdated(uri) => match self.subscriptions().0.lock() {
                Ok(mut subscribed) => {
                    subscribed.retain(|(_, _, peer)| !peer.is_transport_closed());
                    subscribed.iter().filter(|(u, _, _)| u == uri).map(|(_, _, p)| p.clone()).collect()
                }
                Err(_) => Vec::new(),
            },
            _ => self.clients(),
        };
        for client in clients {
            let sent = match &event {
                Event::ResourceUpdated(uri) => {
                    client
                        .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone()))
                        .await
                }
                Event::ResourceListChanged => client.notify_resource_list_changed().await,
                Event::PromptListChanged => client.notify_prompt_list_changed().await,
                Event::Log(message) => client.notify_logging_message(message.clone()).await,
            };
            if let Err(e) = sent {
                tracing::warn!(error = %e, "a client was not sent the downstream's notification");
            }
        }
        if let Event::Log(message) = &event {
            let frame = self.sweep_frame();
            self.note_entry(frame.as_ref(), "notifications/message", json!({"notification": message}), None).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_s_entry_is_every_text_and_a_blob_by_name() {
        let answer = json!({"contents": [
            {"uri": "test://1", "text": "hello"},
            {"uri": "test://2", "blob": "AAAA", "mimeType": "image/png"},
        ], "messages": [{"role": "user", "content": {"type": "text", "text": "prompt words"}}]});
        assert_eq!(texts(&answer), "hello\n[blob test://2]\nprompt words");
        assert_eq!(texts(&json!({})), "");
    }
}
