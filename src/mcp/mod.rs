//! The only module that knows MCP (rmcp): the server, its tools, schemas and the
//! conversion of library results and errors into tool results, and the transports.
//! stdout carries JSON-RPC only.
//!
//! Layout:
//! - `server`: `MemdirServer`, the tools it offers, library work on blocking threads.
//! - `handler`: the MCP requests it answers (rmcp's `ServerHandler`).
//! - `prompt`: its instructions and the `memory_protocol` prompt.
//! - `toolset`: which tools are offered (`--tools`).
//! - `tools/`: one file per tool (parameters, call, text), and what they share.
//! - `resources`, `subscribe`, `logging`: memories as resources, their notifications,
//!   and log messages to the client.
//! - `flow`: what a connection holds for its client (answers queued, requests in
//!   flight) and the limits past which reading pauses; used by both transports.
//! - `transport/`: stdio (lines) and Streamable HTTP.

mod flow;
mod handler;
mod logging;
mod prompt;
mod resources;
mod server;
mod subscribe;
mod tools;
mod toolset;
pub(crate) mod transport;

pub use server::MemdirServer;
pub use server::offered_tools;
pub use toolset::ToolSet;
pub use transport::http::{HttpOptions, serve_http};
pub use transport::{ServeError, serve, serve_stdio};
