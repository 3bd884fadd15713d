//! The only module that knows MCP (rmcp): the server, its tools, schemas and the
//! conversion of library results and errors into tool results, and the transports.
//! stdout carries JSON-RPC only.
//!
//! Layout:
//! - `server`: `MemdirServer`, the tools it offers, library work on blocking threads.
//! - `handler`: the MCP requests it answers (rmcp's `ServerHandler`).
//! - `prompt`: its instructions and the `memory_protocol` prompt.
//! - `tools/`: one file per tool (parameters, call, text), and what they share.
//! - `resources`, `subscribe`, `logging`: memories as resources, their notifications,
//!   and log messages to the client.
//! - `transport/`: stdio (lines, flow control) and Streamable HTTP.

mod handler;
mod logging;
mod prompt;
mod resources;
mod server;
mod subscribe;
mod tools;
mod transport;

pub use server::MemdirServer;
pub use transport::http::{HttpOptions, serve_http};
pub use transport::{ServeError, serve, serve_stdio};

use crate::memory::Memdir;

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
