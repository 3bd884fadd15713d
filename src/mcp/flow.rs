//! Flow control: what a connection holds for its client (output queued for the writer
//! task, requests received and not yet answered), and the limits past which reading
//! pauses. So a client that sends requests faster than it reads the answers, or never
//! reads them, cannot make the server grow without limit: its own writes block instead,
//! as on any pipe. A request stops being in flight when its answer is queued or when its
//! handler finishes (rmcp drops the answer to a cancelled request).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::RequestId;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedSender;

/// Bytes of output that may wait for the client to read them before reading pauses.
pub const MAX_QUEUED: usize = 16 * 1024 * 1024;
/// Requests being worked on (received, not yet answered) before reading pauses.
pub const MAX_IN_FLIGHT: usize = 256;
/// Bytes of requests being worked on before reading pauses (a parsed request can take
/// several times its length in memory).
pub const MAX_IN_FLIGHT_BYTES: usize = 16 * 1024 * 1024;
/// `subscriptions/listen` streams open at once; one more is refused. They stay open for
/// the session, so they are not "in flight" work.
pub const MAX_LISTENS: usize = 16;

/// What the connection holds for the client: output queued for the writer task, and
/// requests received and not yet answered; with a signal each time either shrinks.
#[derive(Default)]
pub(super) struct Flow {
    queued: AtomicUsize,
    in_flight: Mutex<InFlight>,
    /// Signalled each time queued output is written or a request ends.
    pub(super) progress: Notify,
    /// Set once the input has ended (or stdout is gone).
    input_ended: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct InFlight {
    /// Each request's size in bytes.
    requests: HashMap<RequestId, usize>,
    bytes: usize,
    /// Open `subscriptions/listen` streams.
    listens: HashSet<RequestId>,
}

/// The server's view of the connection's flow control (see `LineTransport::flow`).
#[derive(Clone)]
pub struct FlowHandle(Arc<Flow>);

impl FlowHandle {
    pub(super) fn of(flow: &Arc<Flow>) -> FlowHandle {
        FlowHandle(Arc::clone(flow))
    }

    /// The request's handler has finished: its work no longer counts, whether or not an
    /// answer follows (rmcp drops the answer to a cancelled request).
    pub fn finished(&self, id: &RequestId) {
        self.0.ended(id);
    }

    /// Whether so much output waits for the client that more should wait.
    pub fn backlogged(&self) -> bool {
        self.0.queued.load(Ordering::Acquire) > MAX_QUEUED
    }

    /// A flow of its own, for a transport without a line connection (HTTP): nothing is
    /// queued through it; `end_input` ends what waits for `input_ended`.
    pub fn detached() -> FlowHandle {
        FlowHandle(Arc::new(Flow::default()))
    }

    /// Marks the input as ended: open `subscriptions/listen` streams close.
    pub fn end_input(&self) {
        self.0.end_input();
    }

    /// Resolves once the input has ended.
    pub async fn input_ended(&self) {
        let mut ended = self.0.input_ended.subscribe();
        let _ = ended.wait_for(|&e| e).await;
    }
}

impl Flow {
    /// Queues `line`: false if the writer task has ended.
    pub(super) fn push(&self, out: &UnboundedSender<Vec<u8>>, line: Vec<u8>) -> bool {
        let len = line.len();
        self.queued.fetch_add(len, Ordering::AcqRel);
        if out.send(line).is_err() {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// `len` bytes of queued output were written.
    pub(super) fn written(&self, len: usize) {
        self.queued.fetch_sub(len, Ordering::AcqRel);
        self.progress.notify_one();
    }

    /// Marks the input as ended (see [`FlowHandle::input_ended`]).
    pub(super) fn end_input(&self) {
        self.input_ended.send_replace(true);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request with an id already in flight (a client reusing ids) keeps the first
    /// one's entry: it ends with whichever of the two is answered first.
    pub(super) fn started(&self, id: &RequestId, len: usize) {
        let mut f = self.lock();
        if let std::collections::hash_map::Entry::Vacant(entry) = f.requests.entry(id.clone()) {
            entry.insert(len);
            f.bytes += len;
        }
    }

    /// Registers a listen stream; false when `MAX_LISTENS` are open.
    pub(super) fn listening(&self, id: &RequestId) -> bool {
        let mut f = self.lock();
        if f.listens.len() >= MAX_LISTENS && !f.listens.contains(id) {
            return false;
        }
        f.listens.insert(id.clone());
        true
    }

    /// The request is answered, finished, or (a listen stream) cancelled.
    pub(super) fn ended(&self, id: &RequestId) {
        let mut f = self.lock();
        f.listens.remove(id);
        if let Some(len) = f.requests.remove(id) {
            f.bytes -= len;
            drop(f);
            self.progress.notify_one();
        }
    }

    /// A `notifications/cancelled`: a listen stream ends with it; other requests count
    /// until their handler finishes, as their work goes on.
    pub(super) fn cancelled(&self, id: &RequestId) {
        self.lock().listens.remove(id);
    }

    /// Whether reading must wait for answers to be made or read.
    pub(super) fn full(&self) -> bool {
        if self.queued.load(Ordering::Acquire) > MAX_QUEUED {
            return true;
        }
        let f = self.lock();
        f.requests.len() >= MAX_IN_FLIGHT || f.bytes > MAX_IN_FLIGHT_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_request_id_is_counted_once() {
        let flow = Flow::default();
        let id = RequestId::Number(2);
        flow.started(&id, 100);
        flow.started(&id, 5000);
        assert_eq!(flow.lock().bytes, 100);
        flow.ended(&id);
        flow.ended(&id);
        let left = flow.lock();
        assert_eq!((left.bytes, left.requests.len()), (0, 0));
    }
}
