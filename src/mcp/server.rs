//! The MCP server over a set of stores: which tools it offers, and how a request's
//! library work runs (on a blocking thread: file IO and locks block).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::handler::server::router::tool::ToolRouter;

use super::flow::FlowHandle;
use super::toolset::ToolSet;
use super::{logging, resources, subscribe};
use crate::error::Error;
use crate::memory::{self, Level, Memdir};

/// Tools that change memories, withheld when every store is read-only.
const MUTATING_TOOLS: &[&str] = &["memory_write", "memory_edit", "memory_delete"];

/// The tools offered for `tools` over these stores (each tool's router is made by
/// `#[tool_router]` in its file under `tools/`).
pub(super) fn offered(memdir: &Memdir, tools: ToolSet) -> ToolRouter<MemdirServer> {
    let mut tool_router = ToolRouter::new();
    if tools.memory_tools() {
        tool_router += MemdirServer::list_router()
            + MemdirServer::search_router()
            + MemdirServer::read_router()
            + MemdirServer::write_router()
            + MemdirServer::edit_router()
            + MemdirServer::delete_router()
            + MemdirServer::history_router();
    }
    if tools.anthropic() {
        // Offered also when every store is read-only: `view` still works, and the
        // other commands say the store is read-only.
        tool_router += MemdirServer::anthropic_router();
    }
    if memdir.all_read_only() {
        for name in MUTATING_TOOLS {
            tool_router.remove_route(name);
        }
    }
    tool_router
}

/// The names of the tools a server offers for `tools` over these stores, sorted.
pub fn offered_tools(memdir: &Memdir, tools: ToolSet) -> Vec<String> {
    offered(memdir, tools)
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

/// How a transport names the actor of a request when it knows better than the client's
/// own `clientInfo` (over HTTP, the bearer token's NAME); `None` leaves it to the client.
pub(crate) type ActorOf = fn(&rmcp::service::RequestContext<rmcp::RoleServer>) -> Option<String>;

/// The MCP server over a set of stores.
#[derive(Clone)]
pub struct MemdirServer {
    pub(super) memdir: Arc<Memdir>,
    pub(super) tools: ToolSet,
    pub(super) tool_router: ToolRouter<Self>,
    /// Whether this connection's `initialize` has been answered.
    pub(super) initialized: Arc<AtomicBool>,
    /// Who wants resource notifications: one for the whole server, so that one feed
    /// serves every subscriber (over HTTP, every request shares it).
    pub(super) subscriptions: Arc<subscribe::Subscriptions>,
    /// The feed kept for listen streams being acknowledged (see [`subscribe::Hold`]).
    pub(super) listen_holds: Arc<Mutex<Vec<subscribe::Hold>>>,
    /// The connection's flow control: notifications wait while the client is not reading.
    pub(super) flow: FlowHandle,
    pub(super) transport: Transport,
    /// The transport's say on who makes a request, if it has one ([`Self::actor_from`]).
    pub(super) actor_of: Option<ActorOf>,
    /// The level the client set, and which notices it has had.
    pub(super) logging: Arc<logging::Logging>,
}

impl MemdirServer {
    pub(super) fn new(
        memdir: Arc<Memdir>,
        tools: ToolSet,
        flow: FlowHandle,
        transport: Transport,
    ) -> Self {
        MemdirServer {
            tool_router: offered(&memdir, tools),
            memdir,
            tools,
            initialized: Arc::new(AtomicBool::new(false)),
            subscriptions: Arc::default(),
            listen_holds: Arc::default(),
            flow,
            transport,
            actor_of: None,
            logging: Arc::default(),
        }
    }

    /// The server whose requests record the actor `actor_of` names, when it names one.
    pub(super) fn actor_from(self, actor_of: ActorOf) -> Self {
        MemdirServer {
            actor_of: Some(actor_of),
            ..self
        }
    }

    /// The server for one stateless HTTP request: the stores, tools, flow and
    /// subscriptions are shared; the handshake state is the request's own.
    pub(super) fn for_request(&self) -> Self {
        MemdirServer {
            initialized: Arc::new(AtomicBool::new(false)),
            listen_holds: Arc::default(),
            logging: Arc::default(),
            ..self.clone()
        }
    }

    /// Brings the search indexes up to date while clients start talking, and completes
    /// and trims the history, on a blocking thread.
    pub(super) fn start_upkeep(&self) {
        // With meaning on, vectors missing are computed on a thread of their own.
        self.memdir.start_backfill();
        let memdir = Arc::clone(&self.memdir);
        tokio::task::spawn_blocking(move || {
            let notices = memdir.notices();
            match memory::record::maintain(&memdir) {
                Ok(0) => {}
                Ok(n) => notices.send(
                    Level::Info,
                    format!("history upkeep dropped {n} version(s) beyond the retention"),
                ),
                Err(e) => notices.send(Level::Warning, format!("history upkeep failed: {e}")),
            }
            memory::sync::warm_indexes(&memdir);
        });
    }

    /// Runs a library operation on a blocking thread (file IO and locks block).
    pub(super) async fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Memdir) -> Result<T, Error> + Send + 'static,
    {
        let memdir = Arc::clone(&self.memdir);
        tokio::task::spawn_blocking(move || f(&memdir))
            .await
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "a tool operation failed unexpectedly");
                Err(Error::Internal(
                    "while running the tool; nothing acknowledged was lost, please retry".into(),
                ))
            })
    }

    /// The canonical path of a resource URI to subscribe to: it must name a valid memory
    /// path in a served store (the memory itself may not exist yet), and not a hidden
    /// one (hidden entries are not watched).
    pub(super) fn subscription_path(&self, uri: &str) -> Result<String, ErrorData> {
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
    pub(super) async fn run_resource<T, F>(&self, f: F) -> Result<T, ErrorData>
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
}
