//! `memdir console`: the console alone on its own listener (loopback and a free port by
//! default), signed into by the one-time link it announces, until SIGINT or SIGTERM.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::session::OneTime;
use super::{Console, SignIn};
use crate::mcp::transport::http::gate::Gate;
use crate::mcp::transport::http::{HEADER_TIMEOUT, shutdown_signal};
use crate::memory::Memdir;

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How `memdir console` listens and who its changes are by.
#[derive(Clone, Debug)]
pub struct ConsoleOptions {
    pub addr: SocketAddr,
    /// The actor of every version made through the console (the local user).
    pub actor: String,
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
    let listener = TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    let (once, token) = OneTime::new(&options.actor);
    let memdir = Arc::new(memdir);
    memdir.start_backfill();
    let console = Arc::new(Console::new(
        memdir,
        Gate::new(local.ip(), &[], &[]),
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
    ready(&format!("http://{shown}/?token={token}"));
    drop(token);

    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let console = Arc::clone(&console);
        let service = hyper::service::service_fn(move |request: http::Request<_>| {
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
                Ok::<_, Infallible>(response)
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!("console stopping");
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}
