//! The listener loop both HTTP servers share (`memdir serve --http` and `memdir
//! console`): accepting connections, HTTP/1.1 with the header time-out, graceful shutdown,
//! and the signals that start it. What a request gets is the caller's handler.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::{Body, HEADER_TIMEOUT};

/// Serves each connection `listener` accepts, every request answered by `handle(request,
/// peer)`, until `stop` resolves: watched by `graceful` while the server runs; without it
/// (draining), for one request each.
pub(crate) async fn accept<H, F>(
    listener: &TcpListener,
    graceful: Option<&GracefulShutdown>,
    stop: impl Future<Output = ()>,
    handle: H,
) where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => return,
        };
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        let service = hyper::service::service_fn(move |request| {
            let answer = handle(request, peer);
            async move { Ok::<_, Infallible>(answer.await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .keep_alive(graceful.is_some())
            .serve_connection(TokioIo::new(stream), service);
        match graceful {
            Some(graceful) => tokio::spawn(finish(graceful.watch(conn), peer)),
            None => tokio::spawn(finish(conn, peer)),
        };
    }
}

/// Runs a connection to its end.
async fn finish(conn: impl Future<Output = hyper::Result<()>>, peer: SocketAddr) {
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, %peer, "connection ended with an error");
    }
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C). The handlers are installed when this is
/// called, not when the future is first polled: call it before the server says it is
/// listening, so that a signal sent as soon as a client sees it is caught (and drains)
/// instead of taking the default action, which ends the process at once.
pub(crate) fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let interrupt = signal(SignalKind::interrupt());
        async move {
            match (term, interrupt) {
                (Ok(mut term), Ok(mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
