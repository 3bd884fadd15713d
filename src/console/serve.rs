//! `memdir console`: the console alone on its own listener (loopback and a free port by
//! default), signed into by the one-time link it announces, until SIGINT or SIGTERM. The
//! listener loop is the HTTP transport's (`mcp::transport::http::listen`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::session::OneTime;
use super::{Console, SignIn};
use crate::mcp::transport::http::gate::Gate;
use crate::mcp::transport::http::listen::{accept, connection_room, shutdown_signal};
use crate::memory::Memdir;

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How `memdir console` listens and who its changes are by.
#[derive(Clone, Debug)]
pub struct ConsoleOptions {
    pub addr: SocketAddr,
    /// The actor of every version made through the console (the local user).
    pub actor: String,
    /// More `Host` names (or `host:port`) answered, as `serve --http --allow-host`.
    pub allow_hosts: Vec<String>,
    /// Largest request body in bytes.
    pub max_body: usize,
}

/// Serves the console until SIGINT or SIGTERM; `ready` is given the sign-in link once
/// the listener is bound.
pub async fn serve(
    memdir: Memdir,
    options: ConsoleOptions,
    ready: impl FnOnce(&str),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    let (once, token) = OneTime::new(&options.actor);
    let memdir = Arc::new(memdir);
    memdir.start_backfill();
    // As `serve` does: the first search or review page should not pay for bringing an
    // index up to date with its files.
    let warming = Arc::clone(&memdir);
    tokio::task::spawn_blocking(move || crate::memory::sync::warm_indexes(&warming));
    let console = Arc::new(Console::new(
        memdir,
        Gate::new(local.ip(), &options.allow_hosts, &[]),
        SignIn::OneTime(once),
        options.max_body,
    ));
    let shown = if local.ip().is_unspecified() {
        SocketAddr::new([127, 0, 0, 1].into(), local.port())
    } else {
        local
    };
    let stop = shutdown_signal();
    tracing::info!("console listening on http://{shown}/ (the sign-in link is on stdout)");
    if !local.ip().is_loopback() {
        // The link is the only sign-in, and plain HTTP carries it in the clear.
        tracing::warn!(
            "the console is bound to {local}, reachable from other machines: whoever reaches \
             it with the sign-in link signs in, and plain HTTP carries the link in the clear; \
             prefer a loopback --listen (the default) and an SSH tunnel"
        );
    }
    ready(&format!("http://{shown}/?token={token}"));
    drop(token);

    let handle = move |request: http::Request<_>, peer: SocketAddr| {
        let console = Arc::clone(&console);
        async move {
            let started = Instant::now();
            let method = request.method().clone();
            // The path only: a query string may hold the one-time token.
            let path = crate::text::head_chars(request.uri().path(), 100);
            let response = console.handle(request).await;
            tracing::info!(
                target: "memdir::access",
                %peer,
                method = %method,
                path = %path,
                status = response.status().as_u16(),
                ms = format!("{:.2}", started.elapsed().as_secs_f64() * 1000.0),
            );
            response
        }
    };
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    accept(&listener, &connection_room(), Some(&graceful), stop, handle).await;
    drop(listener);
    tracing::info!("console stopping");
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}
