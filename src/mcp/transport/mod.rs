//! How MCP messages reach the server, and how much the server holds for a client.
//!
//! - `stdio`: serving over stdin/stdout (or any byte stream pair): `serve`, `serve_stdio`.
//! - `framing`: newline-delimited JSON-RPC lines, one writer task.
//! - `decode`: one message from its text, answering every malformed one (stdio, HTTP).
//! - `scan`: JSON text looked at without being built (an oversized line's `id`, counts).
//! - `http`: Streamable HTTP (`memdir serve --http`).

mod decode;
mod framing;
pub mod http;
mod scan;
mod stdio;

pub use stdio::{serve, serve_stdio};

use std::net::SocketAddr;

/// Why serving MCP failed. The binary reports it; a client never sees it.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The session could not start (the handshake failed, or the client left first).
    #[error(transparent)]
    Handshake(Box<rmcp::service::ServerInitializeError>),
    /// The task serving the session failed.
    #[error(transparent)]
    Session(#[from] tokio::task::JoinError),
    /// The HTTP tokens file could not be read or holds no valid token.
    #[error(transparent)]
    Tokens(crate::Error),
    /// A non-loopback address was asked for without tokens.
    #[error(
        "refusing to serve {addr} without authentication: other machines can reach that address. \
         Add `--tokens FILE` (one `NAME TOKEN` per line, `chmod 600`), or bind a loopback \
         address such as 127.0.0.1:{port}",
        port = addr.port()
    )]
    Unauthenticated { addr: SocketAddr },
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
