//! Newline-delimited JSON-RPC over a byte stream pair (the stdio transport's lines),
//! answering every malformed message.
//!
//! rmcp's own stdio transport drops a line that is not JSON (or is too long) without a
//! word, and answers well-formed JSON that is not a valid message with an error that has
//! no `id`: in both cases a client waits forever for the reply to a request it sent.
//! This transport reads the lines itself and answers each malformed one (`decode`); a
//! line over the length limit gets `-32600`, with the request's `id` when it is a
//! top-level member within the line's first `OVERSIZED_HEAD` bytes (clients put it before
//! `params`), `id: null` otherwise (the rest of the line is never held). Blank lines are
//! skipped.
//!
//! Every answer is also logged on stderr at `warn`. All output (rmcp's messages and these
//! answers) goes through one queue to one writer task, as whole lines in the order they
//! were produced: an answer never lands inside another message, it precedes anything the
//! lines after it cause, and reading goes on while stdout is full, up to a bound: reading
//! pauses while the connection's `flow` is full.

use std::marker::PhantomData;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;

use super::decode::{INVALID_REQUEST, decode};
use super::scan::{head_id, trim};
use crate::mcp::flow::{Flow, FlowHandle, MAX_LISTENS};

/// How long the end of a session waits for queued lines to be written: a client that
/// stopped reading stdout does not keep the server alive.
pub const WRITE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Longest line read (as rmcp's transport): a longer one is answered and skipped, never
/// buffered whole.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Bytes at the head of an oversized line searched for its `id`.
pub(super) const OVERSIZED_HEAD: usize = 64 * 1024;

/// The server side of a JSON-RPC connection over `read` and `write`.
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read; kept across a cancelled `receive`.
    pending: Pending,
    /// Lines for the writer task, in order; `None` once closed.
    out: Option<UnboundedSender<Vec<u8>>>,
    /// Output not yet written and requests not yet answered.
    flow: Arc<Flow>,
    /// Resolves when the writer task has ended (see [`LineTransport::written`]).
    done: Option<oneshot::Receiver<()>>,
    /// A request has been passed on: before that, rmcp takes anything but a request (a
    /// stray notification or response) as a failed handshake, so those are dropped.
    seen_request: bool,
    _write: PhantomData<fn(W)>,
}

/// The line being read, or, once it went over `MAX_LINE`, what is kept of it while the
/// rest is dropped.
#[derive(Default)]
struct Pending {
    line: Vec<u8>,
    /// Dropping the rest of a line that went over `MAX_LINE`.
    discarding: bool,
    /// The `id` found at the head of the line being dropped, for its answer.
    oversized_id: Value,
}

enum LineRead {
    Line,
    Oversized,
    End,
}

impl Pending {
    /// Takes from `available` up to and with the first newline: into the line, or, past
    /// `MAX_LINE`, nowhere (after reading the id from the line's head). Returns the bytes
    /// taken and whether they ended the line.
    fn take(&mut self, available: &[u8]) -> (usize, bool) {
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if self.discarding {
            return (take, newline.is_some());
        }
        if self.line.len() + take > MAX_LINE {
            let mut head = std::mem::take(&mut self.line);
            head.truncate(OVERSIZED_HEAD);
            let more = OVERSIZED_HEAD - head.len();
            head.extend_from_slice(&available[..take.min(more)]);
            self.oversized_id = head_id(&head);
            self.discarding = true;
        } else {
            self.line.extend_from_slice(&available[..take]);
        }
        (take, newline.is_some())
    }

    /// What the end of a line (or of the input, `at_end`) read.
    fn ended(&mut self, at_end: bool) -> LineRead {
        if self.discarding {
            // An oversized last line without its newline is answered as well.
            self.discarding = false;
            return LineRead::Oversized;
        }
        if at_end {
            LineRead::End
        } else {
            LineRead::Line
        }
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Must be called inside the runtime: it starts the writer task.
    pub fn new(read: R, write: W) -> Self {
        let (out, lines) = unbounded_channel();
        let (finished, done) = oneshot::channel::<()>();
        let flow = Arc::new(Flow::default());
        let counted = Arc::clone(&flow);
        tokio::spawn(async move {
            write_lines(write, lines, &counted).await;
            drop(finished);
        });
        LineTransport {
            read: BufReader::new(read),
            pending: Pending::default(),
            out: Some(out),
            flow,
            seen_request: false,
            done: Some(done),
            _write: PhantomData,
        }
    }

    /// Resolves once every line queued before the transport was closed or dropped is
    /// written (or writing failed). rmcp drops the transport without closing it when the
    /// handshake fails, so the server awaits this before it exits: answers already
    /// queued (to a `ping` or a bad line sent before `initialize`) are not lost.
    pub fn written(&mut self) -> impl Future<Output = ()> + Send + 'static {
        let done = self.done.take();
        async move {
            if let Some(done) = done {
                let _ = done.await;
            }
        }
    }

    /// The connection's flow control, for the server: it reports when a request's
    /// handler finishes and holds notifications back while the client is not reading.
    pub fn flow(&self) -> FlowHandle {
        FlowHandle::of(&self.flow)
    }

    /// Reads up to the next newline into the pending line, never holding more than
    /// `MAX_LINE` bytes. Cancellation-safe: bytes are consumed from the buffer only
    /// together with their copy into the pending line, with no await in between.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read stdin");
                    // A line cut short by the error is not a message.
                    self.pending.line.clear();
                    return LineRead::End;
                }
            };
            if available.is_empty() {
                return self.pending.ended(true);
            }
            let (taken, ended) = self.pending.take(available);
            self.read.consume(taken);
            if ended {
                return self.pending.ended(false);
            }
        }
    }

    fn answer(&mut self, id: Value, code: i64, message: String) {
        tracing::warn!(code, %id, "{message}");
        let reply = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code, "message": message},
        });
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        if let Some(out) = &self.out {
            self.flow.push(out, bytes);
        }
    }

    /// The next message to hand to rmcp; `None` at the end of input or of stdout.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // When stdout is gone (the writer stopped at a failed write) nothing can be
            // answered any more: end, as at the end of input.
            let out = self.out.clone()?;
            if !room(&self.flow, &out).await {
                return None;
            }
            let read = tokio::select! {
                read = self.read_line() => read,
                () = out.closed() => {
                    tracing::info!("stdout is closed; ending");
                    return None;
                }
            };
            match read {
                LineRead::Line => {}
                LineRead::Oversized => {
                    let id = std::mem::replace(&mut self.pending.oversized_id, Value::Null);
                    self.answer(
                        id,
                        INVALID_REQUEST,
                        format!(
                            "Invalid request: a message longer than {} MiB was dropped unread",
                            MAX_LINE >> 20
                        ),
                    );
                    continue;
                }
                // A last request without its newline is still served.
                LineRead::End if self.pending.line.is_empty() => return None,
                LineRead::End => {}
            }
            let line = std::mem::take(&mut self.pending.line);
            let message = self.accept(&line);
            self.pending.line = reuse(line);
            if message.is_some() {
                return message;
            }
        }
    }

    /// The message a line holds when it goes on to rmcp; a malformed line is answered,
    /// a blank or ignorable one dropped.
    fn accept(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let text = trim(line);
        if text.is_empty() {
            return None;
        }
        let message = match decode(text) {
            Ok(Some(message)) => message,
            Ok(None) => return None,
            Err((id, code, message)) => {
                self.answer(id, code, message);
                return None;
            }
        };
        if self.admit(&message, line.len()) {
            return Some(message);
        }
        tracing::debug!("dropped a message that came before any request");
        None
    }

    /// Whether a message goes on to rmcp, counting a request in flight (or a listen
    /// stream, refused with an answer past `MAX_LISTENS`).
    fn admit(&mut self, message: &RxJsonRpcMessage<RoleServer>, len: usize) -> bool {
        match message {
            JsonRpcMessage::Request(r) => {
                self.seen_request = true;
                if !matches!(r.request, ClientRequest::SubscriptionsListenRequest(_)) {
                    self.flow.started(&r.id, len);
                    return true;
                }
                if self.flow.listening(&r.id) {
                    return true;
                }
                self.answer(
                    id_value(&r.id),
                    INVALID_REQUEST,
                    format!(
                        "Invalid request: {MAX_LISTENS} subscriptions/listen streams are open already; cancel one first"
                    ),
                );
                false
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.flow.cancelled(id);
                }
                self.seen_request
            }
            _ => self.seen_request,
        }
    }
}

/// Waits while the client has enough answers coming, or waiting for it to read them:
/// what the server holds for it stays bounded. False if stdout closed meanwhile.
async fn room(flow: &Flow, out: &UnboundedSender<Vec<u8>>) -> bool {
    while flow.full() {
        tokio::select! {
            () = flow.progress.notified() => {}
            () = out.closed() => {
                tracing::info!("stdout is closed; ending");
                return false;
            }
        }
    }
    true
}

/// Writes each queued line whole, flushing whenever the queue runs empty; stops at the
/// first failed write (the client is gone), which closes the queue.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut write: W,
    mut lines: UnboundedReceiver<Vec<u8>>,
    flow: &Flow,
) {
    while let Some(line) = lines.recv().await {
        if write.write_all(&line).await.is_err() {
            return;
        }
        flow.written(line.len());
        if lines.is_empty() && write.flush().await.is_err() {
            return;
        }
    }
    let _ = write.flush().await;
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // An answer ends its request's time in flight.
        match &item {
            JsonRpcMessage::Response(r) => self.flow.ended(&r.id),
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.flow.ended(id);
                }
            }
            _ => {}
        }
        // Encoded and queued now, so lines keep the order of the calls.
        std::future::ready(self.queue(&item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.next_message().await;
        if message.is_none() {
            self.flow.end_input();
        }
        message
    }

    /// Stops taking lines; the writer task ends once every queued one is written, which
    /// `serve` awaits through [`LineTransport::written`].
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out = None;
        Ok(())
    }
}

impl<R, W> LineTransport<R, W> {
    /// Encodes a message as one line and queues it for the writer task.
    fn queue(&self, item: &TxJsonRpcMessage<RoleServer>) -> Result<(), std::io::Error> {
        let mut bytes = serde_json::to_vec(item)?;
        bytes.push(b'\n');
        match &self.out {
            Some(out) if self.flow.push(out, bytes) => Ok(()),
            Some(_) => Err(std::io::ErrorKind::BrokenPipe.into()),
            None => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }
}

/// A request id as JSON.
fn id_value(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
}

/// The buffer emptied, keeping its allocation unless a huge line grew it.
fn reuse(mut line: Vec<u8>) -> Vec<u8> {
    line.clear();
    if line.capacity() > 1 << 20 {
        line.shrink_to(1 << 16);
    }
    line
}
