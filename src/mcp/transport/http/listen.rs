//! The listener loop both HTTP servers share (`memdir serve --http` and `memdir
//! console`): accepting connections, HTTP/1.1 with the header time-out, graceful shutdown,
//! and the signals that start it. What a request gets is the caller's handler.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use super::{Body, HEADER_TIMEOUT};

/// Connections served at once; past it, new ones wait in the listen queue until one
/// ends. Above the listen streams a server allows, so those never fill it alone.
pub(crate) const MAX_CONNECTIONS: usize = 1024;

/// File descriptors kept for everything but connections: stores, their indexes and
/// watches, history logs, the model, files read for a request.
const DESCRIPTORS_KEPT: u64 = 128;

/// The places for connections of one server: [`MAX_CONNECTIONS`], or fewer when the
/// process may not open that many files (the soft limit is first raised to the hard
/// one, as far as 65,536), so that a full server refuses no file it needs and `accept`
/// never fails for want of a descriptor. Shared by the server's accept loops.
pub(crate) fn connection_room() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(connections_allowed()))
}

#[cfg(unix)]
fn connections_allowed() -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if let Some(current) = limit.current {
        let want = limit.maximum.unwrap_or(u64::MAX).min(65_536);
        if want > current {
            // Refused (a hard limit the system caps lower): the current one stays.
            let _ = setrlimit(
                Resource::Nofile,
                Rlimit {
                    current: Some(want),
                    maximum: limit.maximum,
                },
            );
        }
    }
    allowed_for(getrlimit(Resource::Nofile).current)
}

/// Connections for a process that may open `files` (`None`: no limit).
#[cfg_attr(not(unix), allow(dead_code))]
fn allowed_for(files: Option<u64>) -> usize {
    match files {
        Some(files) => usize::try_from(files.saturating_sub(DESCRIPTORS_KEPT))
            .unwrap_or(MAX_CONNECTIONS)
            .clamp(16, MAX_CONNECTIONS),
        None => MAX_CONNECTIONS,
    }
}

#[cfg(not(unix))]
fn connections_allowed() -> usize {
    MAX_CONNECTIONS
}

/// How long an answer may wait for the client to take its bytes: a client that sends
/// requests and never reads the answers is disconnected then, rather than holding its
/// connection (and a file descriptor) for ever. A listen stream whose client reads it
/// (its pings included) is not affected.
pub(crate) const WRITE_STALL: Duration = Duration::from_secs(30);

/// Serves each connection `listener` accepts, every request answered by `handle(request,
/// peer)`, until `stop` resolves: watched by `graceful` while the server runs; without it
/// (draining), for one request each.
pub(crate) async fn accept<H, F>(
    listener: &TcpListener,
    room: &Arc<Semaphore>,
    graceful: Option<&GracefulShutdown>,
    stop: impl Future<Output = ()>,
    handle: H,
) where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let mut stop = std::pin::pin!(stop);
    let mut last_warned: Option<std::time::Instant> = None;
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(room).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
            () = &mut stop => return,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than
                    // spin, and say so once a minute rather than each time.
                    if last_warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                        tracing::warn!(error = %e, "cannot accept a connection");
                        last_warned = Some(std::time::Instant::now());
                    }
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
            .serve_connection(TokioIo::new(StallLimit::new(stream, WRITE_STALL)), service);
        match graceful {
            Some(graceful) => tokio::spawn(finish(graceful.watch(conn), peer, permit)),
            None => tokio::spawn(finish(conn, peer, permit)),
        };
    }
}

/// Runs a connection to its end, holding its place among the connections.
async fn finish(
    conn: impl Future<Output = hyper::Result<()>>,
    peer: SocketAddr,
    _place: tokio::sync::OwnedSemaphorePermit,
) {
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, %peer, "connection ended with an error");
    }
}

/// A connection whose writes fail with `TimedOut` once one has waited `limit` for the
/// client to make room; reads are untouched (their time-outs are the header and body
/// ones).
struct StallLimit {
    stream: TcpStream,
    limit: Duration,
    /// Set while a write waits; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl StallLimit {
    fn new(stream: TcpStream, limit: Duration) -> StallLimit {
        StallLimit {
            stream,
            limit,
            stalled: None,
        }
    }

    /// `Pending` from the stream: pending still, or timed out once waited `limit`.
    fn wait<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => {
                let limit = self.limit;
                let stalled = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match stalled.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client took no bytes of the answer for the write time-out",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl AsyncRead for StallLimit {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for StallLimit {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wait(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wait(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        self.wait(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.wait(cx, polled)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_leave_descriptors_for_the_rest() {
        for (files, allowed) in [
            (None, MAX_CONNECTIONS),
            (Some(65_536), MAX_CONNECTIONS),
            (Some(1_024), 896),
            (Some(256), 128),
            (Some(100), 16),
        ] {
            assert_eq!(allowed_for(files), allowed, "{files:?}");
        }
    }
    use tokio::io::AsyncWriteExt;

    /// A client that never reads: the server's writes fill the socket's buffers, then
    /// fail with `TimedOut` once they have waited the limit (the clock is paused, so
    /// the wait takes no time).
    #[tokio::test(start_paused = true)]
    async fn writes_to_a_client_that_never_reads_time_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let mut conn = StallLimit::new(stream, Duration::from_secs(30));
        let chunk = vec![b'x'; 64 * 1024];
        let started = tokio::time::Instant::now();
        let mut written = 0usize;
        let err = loop {
            match conn.write(&chunk).await {
                Ok(n) => written += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(written > 0, "some bytes fit in the buffers first");
        assert!(started.elapsed() >= Duration::from_secs(30));
    }
}
