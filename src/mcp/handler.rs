//! The MCP requests the server answers (rmcp's `ServerHandler`): the handshake,
//! logging, resources and their subscriptions, prompts, tools (through the router),
//! and the answers to unknown methods and malformed standard ones.

use std::sync::atomic::Ordering;

#[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); the protocol has it.
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};

use super::server::{MemdirServer, Transport};
use super::{resources, subscribe};

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemdirServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .build();
        if self.transport == Transport::Stdio {
            // Over stateless HTTP there is no connection to send log messages on.
            capabilities.logging = Some(Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("memdir", env!("CARGO_PKG_VERSION"))
                    .with_title("memdir — durable memory for agents"),
            )
            .with_instructions(self.instructions())
    }

    /// The handshake happens once per connection (MCP: initialization is the first
    /// interaction): a second `initialize` is refused rather than renegotiating the
    /// protocol version and client identity mid-session.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.initialized.swap(true, Ordering::AcqRel) {
            return Err(ErrorData::invalid_request(
                "already initialized: `initialize` is accepted once per connection",
                None,
            ));
        }
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        if self.transport == Transport::Http
            && let Some(resources) = result.capabilities.resources.as_mut()
        {
            // `initialize` is the 2025 era, whose notifications follow on the connection
            // after a response; stateless HTTP has none, so neither `resources/subscribe`
            // nor list changes are offered. (The 2026-07-28 era's `server/discover` keeps
            // both: its `subscriptions/listen` stream carries them.)
            resources.subscribe = None;
            resources.list_changed = None;
        }
        Ok(result)
    }

    /// The client is ready for notifications: log messages may flow (stdio only).
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.transport == Transport::Stdio {
            self.logging.start(&self.memdir, &self.flow, &context.peer);
        }
    }

    /// `logging/setLevel`: see `logging`. Over HTTP it is accepted and changes nothing.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.transport == Transport::Stdio {
            self.logging.set_level(request.level);
            self.logging.start(&self.memdir, &self.flow, &context.peer);
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        // A client of the 2025 era (one that sent `initialize`) that lists resources
        // gets `notifications/resources/list_changed` from now on; one of the 2026-07-28
        // era asks for it with `subscriptions/listen`. Watching starts before the
        // listing, so a memory created meanwhile is in the list or in a notification.
        if self.transport == Transport::Stdio && context.peer.peer_info().is_some() {
            self.subscriptions
                .listed(&self.memdir, &self.flow, &context.peer)
                .await;
        }
        let cursor = request.and_then(|r| r.cursor);
        self.run_resource(move |m| resources::list(m, cursor.as_deref()))
            .await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.transport == Transport::Http {
            return Err(ErrorData::invalid_request(
                "resources/subscribe needs a connection that stays open, and memdir serves HTTP statelessly: \
                 use subscriptions/listen (protocol 2026-07-28), or read the resource again",
                None,
            ));
        }
        let path = self.subscription_path(&request.uri)?;
        self.subscriptions
            .subscribe(&self.memdir, &self.flow, &context.peer, request.uri, path)
            .await
            .map_err(|e| ErrorData::invalid_params(e, None))
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): resource list changes and updates of the
    /// requested memory URIs; URIs that name no valid memory path are left out.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp acknowledges the stream before `listen` runs: the watches must exist by
        // then, or a change right after the acknowledgment would be missed.
        let hold = self.subscriptions.hold(&self.memdir);
        self.listen_holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(hold);
        let mut accepted = SubscriptionFilter::new();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            let mut accepted: Vec<String> = Vec::new();
            for uri in uris {
                if accepted.len() == subscribe::MAX_URIS {
                    break;
                }
                if !accepted.contains(uri) && self.subscription_path(uri).is_ok() {
                    accepted.push(uri.clone());
                }
            }
            accepted
        });
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let accepted = context.accepted();
        // rmcp's acknowledgment repeats a URI the client gave twice; it is watched once.
        let mut uris: Vec<(String, String)> = Vec::new();
        for uri in accepted.resource_subscriptions.iter().flatten() {
            if let Ok(path) = self.subscription_path(uri)
                && !uris.iter().any(|(u, _)| u == uri)
            {
                uris.push((uri.clone(), path));
            }
        }
        let list_changed = accepted.resources_list_changed == Some(true);
        let hold = self
            .listen_holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        // Open until the client cancels it or goes away, or its input ends (then the
        // session is over: waiting for a cancel that cannot come would hold the exit back).
        let ended = async {
            tokio::select! {
                () = context.cancelled() => {}
                () = self.flow.input_ended() => {}
            }
        };
        self.subscriptions
            .listen(
                &self.memdir,
                &self.flow,
                context.sink().clone(),
                (uris, list_changed),
                hold,
                ended,
            )
            .await;
        Ok(())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        self.run_resource(move |m| resources::read(m, &uri))
            .await
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(MemdirServer::prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompt(request)
    }

    /// rmcp hands a request here when it knows no method by that name, and also when a
    /// standard method's params do not parse (e.g. `tools/call` with `arguments: "x"`):
    /// the first is "method not found", the second "invalid params".
    fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, ErrorData>> + Send + '_ {
        let method = request.method;
        let error = if method == "tools/call" {
            ErrorData::invalid_params(
                "invalid params for `tools/call`: send {\"name\": <tool name>, \"arguments\": {...}}",
                None,
            )
        } else if STANDARD_METHODS.contains(&method.as_str()) {
            ErrorData::invalid_params(
                format!(
                    "invalid params for `{method}`: they do not have the shape the MCP specification gives this method"
                ),
                None,
            )
        } else {
            ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("unknown method `{}`", crate::text::head_chars(&method, 100)),
                None,
            )
        };
        std::future::ready(Err(error))
    }
}

/// MCP request methods rmcp parses itself: reaching `on_custom_request` with one of these
/// means its params were malformed.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];
