//! The only module that knows MCP: the rmcp server handler, tool routing, schemas and
//! the conversion of library results and errors into tool results. Serves over stdio;
//! stdout carries JSON-RPC only.

mod logging;
mod resources;
mod subscribe;
mod tools;
mod transport;

pub use transport::http::{HttpOptions, serve_http};
pub use transport::{ServeError, serve, serve_stdio};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
#[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); the protocol has it.
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse, Role,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};

use self::transport::flow::FlowHandle;
use crate::error::Error;
use crate::memory::{Level, Memdir};

/// The one prompt: the memory protocol.
const PROTOCOL_PROMPT: &str = "memory_protocol";
/// Characters of a prompt's `topic` argument used.
const TOPIC_CHARS: usize = 500;

/// Tools that change memories, withheld when every store is read-only.
const MUTATING_TOOLS: &[&str] = &["memory_write", "memory_edit", "memory_delete"];

/// Which tools the server offers (`--tools`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolSet {
    /// The `memory_*` tools.
    #[default]
    Default,
    /// Only `memory`, Anthropic's memory tool (`memory_20250818`) with its exact strings.
    Anthropic,
    /// Both.
    All,
}

impl ToolSet {
    fn memory_tools(self) -> bool {
        self != ToolSet::Anthropic
    }

    fn anthropic(self) -> bool {
        self != ToolSet::Default
    }
}

/// The names of the tools a server offers for `tools` over these stores, sorted.
pub fn offered_tools(memdir: &Memdir, tools: ToolSet) -> Vec<String> {
    MemdirServer::router(memdir, tools)
        .list_all()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect()
}

/// How the server is reached: it decides whether notifications can follow a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// One client on stdin/stdout: a connection that stays open.
    Stdio,
    /// Stateless Streamable HTTP: each request on its own; notifications reach a client
    /// only on a `subscriptions/listen` stream.
    Http,
}

/// The MCP server over a set of stores.
#[derive(Clone)]
pub struct MemdirServer {
    memdir: Arc<Memdir>,
    tools: ToolSet,
    tool_router: ToolRouter<Self>,
    /// Whether this connection's `initialize` has been answered.
    initialized: Arc<AtomicBool>,
    /// Who wants resource notifications.
    subscriptions: Arc<subscribe::Subscriptions>,
    /// The connection's flow control: notifications wait while the client is not reading.
    flow: FlowHandle,
    transport: Transport,
    /// The level the client set, and which notices it has had.
    logging: Arc<logging::Logging>,
}

impl MemdirServer {
    fn new(memdir: Arc<Memdir>, tools: ToolSet, flow: FlowHandle, transport: Transport) -> Self {
        MemdirServer {
            tool_router: Self::router(&memdir, tools),
            memdir,
            tools,
            initialized: Arc::new(AtomicBool::new(false)),
            subscriptions: Arc::default(),
            flow,
            transport,
            logging: Arc::default(),
        }
    }

    /// The tools offered for `tools` over these stores.
    fn router(memdir: &Memdir, tools: ToolSet) -> ToolRouter<Self> {
        let mut tool_router = ToolRouter::new();
        if tools.memory_tools() {
            tool_router += tools::memory_tools();
        }
        if tools.anthropic() {
            // Offered also when every store is read-only: `view` still works, and the
            // other commands say the store is read-only.
            tool_router += tools::anthropic_tool();
        }
        if memdir.all_read_only() {
            for name in MUTATING_TOOLS {
                tool_router.remove_route(name);
            }
        }
        tool_router
    }

    /// The server for one stateless HTTP request: the stores, tools and flow are shared;
    /// the handshake state and subscriptions are the request's own.
    fn for_request(&self) -> Self {
        MemdirServer {
            initialized: Arc::new(AtomicBool::new(false)),
            subscriptions: Arc::default(),
            logging: Arc::default(),
            ..self.clone()
        }
    }

    /// Brings the search indexes up to date while clients start talking, and completes
    /// and trims the history, on a blocking thread.
    fn start_upkeep(&self) {
        let memdir = Arc::clone(&self.memdir);
        tokio::task::spawn_blocking(move || {
            let notices = memdir.notices();
            match memdir.maintain() {
                Ok(0) => {}
                Ok(n) => notices.send(
                    Level::Info,
                    format!("history upkeep dropped {n} version(s) beyond the retention"),
                ),
                Err(e) => notices.send(Level::Warning, format!("history upkeep failed: {e}")),
            }
            memdir.warm_indexes();
        });
    }

    /// Runs a library operation on a blocking thread (file IO and locks block).
    async fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Memdir) -> Result<T, Error> + Send + 'static,
    {
        let memdir = Arc::clone(&self.memdir);
        tokio::task::spawn_blocking(move || f(&memdir))
            .await
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "a tool operation failed unexpectedly");
                Err(Error::InvalidArgument(
                    "internal error while running the tool; nothing acknowledged was lost, please retry".into(),
                ))
            })
    }

    /// The canonical path of a resource URI to subscribe to: it must name a valid memory
    /// path in a served store (the memory itself may not exist yet), and not a hidden
    /// one (hidden entries are not watched).
    fn subscription_path(&self, uri: &str) -> Result<String, ErrorData> {
        let path = resources::path_of(uri)?;
        let p = self
            .memdir
            .path(&path)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        if p.segments.iter().any(|s| crate::store::hidden_name(s)) {
            return Err(ErrorData::invalid_params(
                format!(
                    "{uri:?} is hidden (`.name` or `node_modules`): hidden memories are not listed, searched or watched"
                ),
                None,
            ));
        }
        Ok(p.canonical())
    }

    /// Runs a resource request's library work on a blocking thread.
    async fn run_resource<T, F>(&self, f: F) -> Result<T, ErrorData>
    where
        T: Send + 'static,
        F: FnOnce(&Memdir) -> Result<T, ErrorData> + Send + 'static,
    {
        let memdir = Arc::clone(&self.memdir);
        tokio::task::spawn_blocking(move || f(&memdir))
            .await
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "a resource request failed unexpectedly");
                Err(ErrorData::internal_error(
                    "internal error; please retry",
                    None,
                ))
            })
    }

    fn instructions(&self) -> String {
        let mut s = String::from(
            "memdir is your durable memory: plain files that outlive this conversation. Stores:\n",
        );
        s.push_str(&self.stores_text());
        s.push_str("Memory protocol:\n");
        s.push_str(&self.protocol(None));
        s
    }

    /// The stores, one line each, and how paths name them.
    fn stores_text(&self) -> String {
        let mut s = String::new();
        for store in self.memdir.stores() {
            s.push_str(&format!(
                "- /{} ({}){}\n",
                store.name,
                if store.read_only {
                    "read-only"
                } else {
                    "read-write"
                },
                store
                    .description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ));
        }
        if self.tools.memory_tools() {
            s.push_str(
                "Paths look like /<store>/folder/topic.md; a path without a leading / is in the first store.\n",
            );
        }
        if self.tools.anthropic() {
            let first = &self.memdir.stores()[0].name;
            s.push_str(&format!(
                "The `memory` tool (commands view, create, str_replace, insert, delete, rename) works on the same files: its /memories is the store /{first}{}.\n",
                if self.memdir.stores().len() > 1 {
                    ", and every other store is /<name>"
                } else {
                    ""
                }
            ));
        }
        s
    }

    /// The memory protocol (check memory first, record progress, keep it organised,
    /// assume interruption) in the words of the tools offered, for a topic if one is given.
    fn protocol(&self, topic: Option<&str>) -> String {
        let mut s = String::new();
        match (self.tools.memory_tools(), topic) {
            (true, Some(t)) => s.push_str(&format!(
                "1. Before starting, check memory: memory_search for {t:?} and its key words, and memory_list to see what exists; read what is relevant.\n"
            )),
            (true, None) => s.push_str(
                "1. Before starting, check memory: memory_search for the task's key words, or memory_list to see what exists.\n",
            ),
            (false, Some(t)) => s.push_str(&format!(
                "1. Before starting, check memory: view /memories to see what exists, then view what is relevant to {t:?}.\n"
            )),
            (false, None) => s.push_str(
                "1. Before starting, check memory: view /memories to see what exists, then view what is relevant.\n",
            ),
        }
        if self.memdir.all_read_only() {
            // Nothing can be written: the protocol must not ask for it.
            s.push_str(
                "2. Every store is read-only: rely on what it holds, but you cannot record, change or delete anything in it; keep your own notes elsewhere.\n\
                 3. Memories are point-in-time observations: check their age, and verify one before relying on it; one marked expired is likely out of date.\n\
                 4. If a memory is wrong or out of date, tell the user rather than working around it.",
            );
            return s;
        }
        s.push_str(&format!(
            "2. Record progress as you go{}: decisions, facts learned, what is done and what is next.\n\
             3. Keep it organised: one topic per file, update rather than duplicate, delete what turned out wrong.\n\
             4. Assume interruption: your context may end at any moment, and what is not in memory is lost.",
            topic.map(|t| format!(" on {t:?}")).unwrap_or_default()
        ));
        if self.tools.memory_tools() {
            s.push_str(
                "\n5. Facts go stale: give a memory that holds only for a while an `expires` date in its frontmatter (e.g. `expires: 2026-06-30`). Search leaves expired memories out (include_expired: true shows them); memory_read and memory_list mark them expired. When you meet one, verify it, then update it with a new `expires` or delete it (memory_delete takes a `reason`). Now and then review what has not changed for long: memory_list with older_than_days 90 and sort `oldest`; keep, update or delete each.",
            );
            s.push_str(
                "\nTo change a memory you read, pass its content_sha256 as expected_sha256 so you never overwrite a change you have not seen.",
            );
        }
        s
    }

    /// The `memory_protocol` prompt, for `topic` if given.
    fn protocol_prompt(&self, topic: Option<&str>) -> String {
        let mut s = String::from(match topic {
            Some(_) => "Use memdir, your durable memory, while you work on this topic. Stores:\n",
            None => "Use memdir, your durable memory, while you work. Stores:\n",
        });
        s.push_str(&self.stores_text());
        s.push_str(&self.protocol(topic));
        s
    }
}

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
        self.negotiate_initialize(&request)
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
        self.subscriptions.prepare(&self.memdir);
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
        let key = self
            .subscriptions
            .listen(
                &self.memdir,
                &self.flow,
                context.sink().clone(),
                uris,
                list_changed,
            )
            .await;
        // Open until the client cancels it or its input ends (then the session is over:
        // waiting for a cancel that cannot come would hold the exit back).
        tokio::select! {
            () = context.cancelled() => {}
            () = self.flow.input_ended() => {}
        }
        self.subscriptions.forget(key);
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
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            PROTOCOL_PROMPT,
            Some(
                "How to use memory well: check it before starting, record progress as you go, keep it organised, assume interruption. Optionally about one topic.",
            ),
            Some(vec![
                PromptArgument::new("topic")
                    .with_description(
                        "What the work is about, e.g. `the billing migration` (optional).",
                    )
                    .with_required(false),
            ]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != PROTOCOL_PROMPT {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt `{}`: the prompt memdir offers is `{PROTOCOL_PROMPT}`",
                    crate::text::head_chars(&request.name, 100)
                ),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let topic = match arguments.get("topic") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(t)) if t.trim().is_empty() => None,
            Some(serde_json::Value::String(t)) => {
                Some(crate::text::head_chars(t.trim(), TOPIC_CHARS))
            }
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    "the `topic` argument of `memory_protocol` is text",
                    None,
                ));
            }
        };
        let text = self.protocol_prompt(topic.as_deref());
        let description = match &topic {
            Some(t) => format!("The memory protocol, for {t:?}"),
            None => "The memory protocol".into(),
        };
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description)
                .into(),
        )
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
