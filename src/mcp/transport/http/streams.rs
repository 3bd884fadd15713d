//! The `subscriptions/listen` streams open on the HTTP server: how many may be open, on
//! the server and by one token (one more gets 429), and how one ends on a
//! `notifications/cancelled` for its request id.
//!
//! A stateless server has no session to carry a cancel to the stream it names, so the
//! transport keeps the open streams by caller (the token's NAME; every client when there
//! are no tokens) and request id, and ends the named stream's response body itself.
//! Dropping the body ends the stream's handler in rmcp, as a client that disconnects does.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;
use hyper::body::Frame;
use rmcp::model::RequestId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use super::Body;

/// The open streams, and the permits that count them.
pub(super) struct Streams {
    permits: Arc<Semaphore>,
    per_caller: usize,
    open: Arc<Mutex<Open>>,
}

/// Why a stream was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// As many streams are open on the server as it allows.
    Server,
    /// As many are open by this caller (a token) as one caller may hold.
    Caller,
}

#[derive(Default)]
struct Open {
    streams: HashMap<u64, Stream>,
    next: u64,
}

/// An open stream: it stays here, counting against its caller, until its ticket is
/// dropped (its body gone), as its server place does; a cancel only ends its body.
struct Stream {
    caller: Option<String>,
    id: RequestId,
    /// Taken by the first cancel.
    cancel: Option<oneshot::Sender<()>>,
}

/// Whether the credential a stream was opened with is still in force (its token still in
/// the tokens file): asked before each message the stream would send.
pub(super) type InForce = Box<dyn Fn() -> bool + Send + Sync>;

/// A stream about to open: it counts against the limit from now until its response body
/// is dropped (ended, cancelled, or the client gone).
pub(super) struct Ticket {
    _permit: OwnedSemaphorePermit,
    open: Arc<Mutex<Open>>,
    key: u64,
    cancelled: oneshot::Receiver<()>,
    in_force: Option<InForce>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        lock(&self.open).streams.remove(&self.key);
    }
}

impl Streams {
    /// Room for `max` streams at once, at most `per_caller` of them by one named caller.
    /// Without tokens every client is the one unnamed caller, held only to `max`.
    pub(super) fn new(max: usize, per_caller: usize) -> Streams {
        Streams {
            permits: Arc::new(Semaphore::new(max)),
            per_caller,
            open: Arc::default(),
        }
    }

    /// A ticket for a stream that `caller` opens with request id `id`, or why not.
    /// `in_force`, if given, ends the stream at its next message once it says no.
    pub(super) fn admit(
        &self,
        caller: Option<&str>,
        id: RequestId,
        in_force: Option<InForce>,
    ) -> Result<Ticket, Refused> {
        let mut open = lock(&self.open);
        if let Some(name) = caller {
            let held = open
                .streams
                .values()
                .filter(|s| s.caller.as_deref() == Some(name))
                .count();
            if held >= self.per_caller {
                return Err(Refused::Caller);
            }
        }
        let permit = Arc::clone(&self.permits)
            .try_acquire_owned()
            .map_err(|_| Refused::Server)?;
        let (cancel, cancelled) = oneshot::channel();
        let key = open.next;
        open.next += 1;
        open.streams.insert(
            key,
            Stream {
                caller: caller.map(str::to_string),
                id,
                cancel: Some(cancel),
            },
        );
        Ok(Ticket {
            _permit: permit,
            open: Arc::clone(&self.open),
            key,
            cancelled,
            in_force,
        })
    }

    /// Ends the streams `caller` opened with request id `id` (none, usually one). Each
    /// keeps counting until its body is dropped.
    pub(super) fn cancel(&self, caller: Option<&str>, id: &RequestId) {
        let mut open = lock(&self.open);
        for stream in open
            .streams
            .values_mut()
            .filter(|s| s.caller.as_deref() == caller && &s.id == id)
        {
            if let Some(cancel) = stream.cancel.take() {
                let _ = cancel.send(());
            }
        }
    }
}

/// The stream's response, ended early when the stream is cancelled; the ticket goes with
/// its body.
pub(super) fn follow(ticket: Ticket, response: Response<Body>) -> Response<Body> {
    response.map(|inner| {
        Cancellable {
            inner: Some(inner),
            ticket,
        }
        .boxed()
    })
}

struct Cancellable {
    inner: Option<Body>,
    ticket: Ticket,
}

impl hyper::body::Body for Cancellable {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.inner.is_some() && Pin::new(&mut this.ticket.cancelled).poll(cx).is_ready() {
            // Dropping rmcp's stream cancels the request that feeds it.
            this.inner = None;
        }
        let Some(inner) = &mut this.inner else {
            return Poll::Ready(None);
        };
        match Pin::new(inner).poll_frame(cx) {
            // Its token was revoked (the tokens file re-read without it): the stream
            // ends here, and sends nothing more.
            Poll::Ready(Some(_)) if this.ticket.in_force.as_ref().is_some_and(|f| !f()) => {
                this.inner = None;
                Poll::Ready(None)
            }
            polled => polled,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.is_end_stream())
    }
}

fn lock(open: &Mutex<Open>) -> MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_holds_at_most_its_share_and_the_server_its_total() {
        let streams = Streams::new(3, 2);
        let a1 = streams
            .admit(Some("alice"), RequestId::Number(1), None)
            .unwrap();
        let _a2 = streams
            .admit(Some("alice"), RequestId::Number(2), None)
            .unwrap();
        assert_eq!(
            streams
                .admit(Some("alice"), RequestId::Number(3), None)
                .err(),
            Some(Refused::Caller)
        );
        let _b1 = streams
            .admit(Some("bob"), RequestId::Number(1), None)
            .unwrap();
        assert_eq!(
            streams
                .admit(Some("carol"), RequestId::Number(1), None)
                .err(),
            Some(Refused::Server)
        );
        // A cancelled stream counts until its body is dropped, as its server place does:
        // cancelling does not let a caller open more than its share meanwhile.
        streams.cancel(Some("alice"), &RequestId::Number(1));
        assert_eq!(
            streams
                .admit(Some("alice"), RequestId::Number(3), None)
                .err(),
            Some(Refused::Caller)
        );
        // A stream that ends gives its place back, to its caller and to the server.
        drop(a1);
        let _a3 = streams
            .admit(Some("alice"), RequestId::Number(3), None)
            .unwrap();
    }

    #[test]
    fn without_tokens_only_the_server_total_holds() {
        let streams = Streams::new(3, 1);
        let held: Vec<_> = (0..3)
            .map(|i| streams.admit(None, RequestId::Number(i), None).unwrap())
            .collect();
        assert_eq!(
            streams.admit(None, RequestId::Number(9), None).err(),
            Some(Refused::Server)
        );
        drop(held);
    }
}
