//! How MCP messages reach the server, and how much the server holds for a client.
//!
//! - `stdio`: serving over stdin/stdout (or any byte stream pair): `serve`, `serve_stdio`.
//! - `framing`: newline-delimited JSON-RPC lines, one writer task.
//! - `decode`: one message from its text, answering every malformed one (stdio, HTTP).
//! - `scan`: JSON text looked at without being built (an oversized line's `id`, counts).
//! - `flow`: flow control: output queued and requests in flight, and their limits.
//! - `http`: Streamable HTTP (`memdir serve --http`).

mod decode;
pub(super) mod flow;
mod framing;
pub mod http;
mod scan;
mod stdio;

pub use stdio::{serve, serve_stdio};
