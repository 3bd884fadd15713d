//! Newline-delimited JSON-RPC over a byte stream pair, answering every malformed message.
//!
//! rmcp's own stdio transport drops a line that is not JSON (or is too long) without a
//! word, and answers well-formed JSON that is not a valid message with an error that has
//! no `id`: in both cases a client waits forever for the reply to a request it sent.
//! This transport reads the lines itself and answers as JSON-RPC 2.0 says:
//!
//! - not JSON (or not UTF-8): `-32700 Parse error`, `id: null`;
//! - a line over the length limit: `-32600`, `id: null` (its `id` is not read);
//! - JSON that is not a message: `-32600 Invalid request` naming what is wrong, or
//!   `-32602 Invalid params` for a known request shape whose `params` do not parse; with
//!   the request's `id` when it is a string or an integer, `null` otherwise;
//! - nothing for a malformed notification (a `method` and no `id`) or response: JSON-RPC
//!   never answers those, which also keeps two peers from answering each other's errors
//!   forever; blank lines are skipped.
//!
//! Every answer is also logged on stderr at `warn`. All output (rmcp's messages and these
//! answers) goes through one queue to one writer task, as whole lines in the order they
//! were produced: an answer never lands inside another message, it precedes anything the
//! lines after it cause, and reading goes on while stdout is full, up to a bound.
//!
//! Flow control: reading pauses while `MAX_QUEUED` bytes of output wait for the client,
//! or while `MAX_IN_FLIGHT` requests (or `MAX_IN_FLIGHT_BYTES` of them) are being worked
//! on, and goes on as answers are written. So a client that sends requests faster than it
//! reads the answers, or never reads them, cannot make the server grow without limit: its
//! own writes block instead, as on any pipe. A request stops being in flight when its
//! answer is queued or when the client cancels it (rmcp drops the answer then).

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{Notify, oneshot};

/// How long the end of a session waits for queued lines to be written: a client that
/// stopped reading stdout does not keep the server alive.
pub const WRITE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Longest line read (as rmcp's transport): a longer one is answered and skipped, never
/// buffered whole.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

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

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The server side of a JSON-RPC connection over `read` and `write`.
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read; kept across a cancelled `receive`.
    line: Vec<u8>,
    /// Dropping the rest of a line that went over `MAX_LINE`.
    discarding: bool,
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

/// What the connection holds for the client: output queued for the writer task, and
/// requests received and not yet answered; with a signal each time either shrinks.
#[derive(Default)]
struct Flow {
    queued: AtomicUsize,
    in_flight: Mutex<InFlight>,
    progress: Notify,
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

/// The server's view of the connection's flow control (see [`LineTransport::flow`]).
#[derive(Clone)]
pub struct FlowHandle(Arc<Flow>);

impl FlowHandle {
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
        self.0.input_ended.send_replace(true);
    }

    /// Resolves once the input has ended.
    pub async fn input_ended(&self) {
        let mut ended = self.0.input_ended.subscribe();
        let _ = ended.wait_for(|&e| e).await;
    }
}

impl Flow {
    /// Queues `line`: false if the writer task has ended.
    fn push(&self, out: &UnboundedSender<Vec<u8>>, line: Vec<u8>) -> bool {
        let len = line.len();
        self.queued.fetch_add(len, Ordering::AcqRel);
        if out.send(line).is_err() {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }

    fn written(&self, len: usize) {
        self.queued.fetch_sub(len, Ordering::AcqRel);
        self.progress.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request with an id already in flight (a client reusing ids) keeps the first
    /// one's entry: it ends with whichever of the two is answered first.
    fn started(&self, id: &RequestId, len: usize) {
        let mut f = self.lock();
        if let std::collections::hash_map::Entry::Vacant(entry) = f.requests.entry(id.clone()) {
            entry.insert(len);
            f.bytes += len;
        }
    }

    /// Registers a listen stream; false when `MAX_LISTENS` are open.
    fn listening(&self, id: &RequestId) -> bool {
        let mut f = self.lock();
        if f.listens.len() >= MAX_LISTENS && !f.listens.contains(id) {
            return false;
        }
        f.listens.insert(id.clone());
        true
    }

    /// The request is answered, finished, or (a listen stream) cancelled.
    fn ended(&self, id: &RequestId) {
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
    fn cancelled(&self, id: &RequestId) {
        self.lock().listens.remove(id);
    }

    /// Whether reading must wait for answers to be made or read.
    fn full(&self) -> bool {
        if self.queued.load(Ordering::Acquire) > MAX_QUEUED {
            return true;
        }
        let f = self.lock();
        f.requests.len() >= MAX_IN_FLIGHT || f.bytes > MAX_IN_FLIGHT_BYTES
    }
}

enum LineRead {
    Line,
    Oversized,
    End,
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
            line: Vec::new(),
            discarding: false,
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
        FlowHandle(Arc::clone(&self.flow))
    }

    /// Reads up to the next newline into `self.line`, never holding more than `MAX_LINE`
    /// bytes. Cancellation-safe: bytes are consumed from the buffer only together with
    /// their copy into `self.line`, with no await in between.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (taken, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) => available,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot read stdin");
                        // A line cut short by the error is not a message.
                        self.line.clear();
                        return LineRead::End;
                    }
                };
                if available.is_empty() {
                    if self.discarding {
                        // An oversized last line without its newline: answered as well.
                        self.discarding = false;
                        return LineRead::Oversized;
                    }
                    return LineRead::End;
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                if !self.discarding {
                    if self.line.len() + take > MAX_LINE {
                        self.line.clear();
                        self.discarding = true;
                    } else {
                        self.line.extend_from_slice(&available[..take]);
                    }
                }
                (take, newline.is_some())
            };
            self.read.consume(taken);
            if ended {
                if self.discarding {
                    self.discarding = false;
                    return LineRead::Oversized;
                }
                return LineRead::Line;
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
        let queued = match serde_json::to_vec(&item) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                match &self.out {
                    Some(out) if self.flow.push(out, bytes) => Ok(()),
                    Some(_) => Err(std::io::ErrorKind::BrokenPipe.into()),
                    None => Err(std::io::ErrorKind::NotConnected.into()),
                }
            }
            Err(e) => Err(e.into()),
        };
        std::future::ready(queued)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.next_message().await;
        if message.is_none() {
            self.flow.input_ended.send_replace(true);
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

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// The next message to hand to rmcp; `None` at the end of input or of stdout.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // When stdout is gone (the writer stopped at a failed write) nothing can be
            // answered any more: end, as at the end of input.
            let out = self.out.clone()?;
            // While the client has enough answers coming, or waiting for it to read them,
            // it is not read from: what the server holds for it stays bounded.
            while self.flow.full() {
                tokio::select! {
                    () = self.flow.progress.notified() => {}
                    () = out.closed() => {
                        tracing::info!("stdout is closed; ending");
                        return None;
                    }
                }
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
                    self.answer(
                        Value::Null,
                        INVALID_REQUEST,
                        format!(
                            "Invalid request: a message longer than {} MiB was dropped unread",
                            MAX_LINE >> 20
                        ),
                    );
                    continue;
                }
                LineRead::End => {
                    // A last request without its newline is still served.
                    if self.line.is_empty() {
                        return None;
                    }
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = trim(&line);
            if text.is_empty() {
                continue;
            }
            match decode(text) {
                Ok(Some(message)) => {
                    let pass = match &message {
                        JsonRpcMessage::Request(r) => {
                            self.seen_request = true;
                            if matches!(r.request, ClientRequest::SubscriptionsListenRequest(_)) {
                                self.flow.listening(&r.id)
                                    || {
                                        self.answer(
                                        id_value(&r.id),
                                        INVALID_REQUEST,
                                        format!(
                                            "Invalid request: {MAX_LISTENS} subscriptions/listen streams are open already; cancel one first"
                                        ),
                                    );
                                        false
                                    }
                            } else {
                                self.flow.started(&r.id, line.len());
                                true
                            }
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
                    };
                    self.line = reuse(line);
                    if pass {
                        return Some(message);
                    }
                    tracing::debug!("dropped a message that came before any request");
                    continue;
                }
                Ok(None) => {}
                Err((id, code, message)) => self.answer(id, code, message),
            }
            self.line = reuse(line);
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

/// A line without its leading byte-order mark and surrounding white space (a blank line
/// is skipped, as between messages).
pub(super) fn trim(line: &[u8]) -> &[u8] {
    line.strip_prefix(BOM).unwrap_or(line).trim_ascii()
}

/// One line as a message; `Ok(None)` for one to ignore quietly (a malformed notification,
/// or a reply to a request this server never sent); `Err` with the answer otherwise.
#[allow(clippy::type_complexity)]
pub(super) fn decode(
    text: &[u8],
) -> Result<Option<RxJsonRpcMessage<RoleServer>>, (Value, i64, String)> {
    if text.len() > COUNT_VALUES_ABOVE && too_many_values(text) {
        #[derive(serde::Deserialize)]
        struct Id {
            id: Option<EchoId>,
        }
        let id = serde_json::from_slice::<Id>(text)
            .ok()
            .and_then(|m| m.id)
            .map_or(Value::Null, |id| id.0);
        return Err((
            id,
            INVALID_REQUEST,
            format!("Invalid request: a message may hold at most {MAX_VALUES} JSON values"),
        ));
    }
    let shape_error = match serde_json::from_slice(text) {
        Ok(message) => return Ok(Some(message)),
        Err(e) => e,
    };
    let value: Value = serde_json::from_slice(text).map_err(|e| {
        (
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: the line is not JSON ({e})"),
        )
    })?;
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err((
                Value::Null,
                INVALID_REQUEST,
                "Invalid request: batches are not supported; send one JSON-RPC message per line"
                    .into(),
            ));
        }
        _ => {
            return Err((
                Value::Null,
                INVALID_REQUEST,
                "Invalid request: a message must be a JSON object".into(),
            ));
        }
    };
    let method = object.get("method");
    if method.is_none() && (object.contains_key("result") || object.contains_key("error")) {
        tracing::debug!(error = %shape_error, "ignored a malformed response");
        return Ok(None);
    }
    let Some(id) = object.get("id") else {
        if method.is_some_and(Value::is_string) {
            tracing::debug!(error = %shape_error, "ignored a malformed notification");
            return Ok(None);
        }
        return Err((
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: a request needs a string `method` and an `id`".into(),
        ));
    };
    // Echoed when it is an id at all; rmcp takes strings and 64-bit signed integers.
    let reply_id = if id.is_string() || id.is_i64() || id.is_u64() {
        id.clone()
    } else {
        Value::Null
    };
    let id_ok = id.is_string() || id.is_i64();
    let invalid = |why: &str| {
        Err((
            reply_id.clone(),
            INVALID_REQUEST,
            format!("Invalid request: {why}"),
        ))
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("`jsonrpc` must be \"2.0\"");
    }
    if !id_ok {
        return invalid("`id` must be a string or an integer from -2^63 to 2^63-1");
    }
    let Some(method) = method.and_then(Value::as_str) else {
        return invalid("`method` must be a string");
    };
    // Echoed only in part: an answer does not grow with what it answers.
    let method = crate::text::head_chars(method, 100);
    tracing::debug!(error = %shape_error, method, "params do not parse");
    let hint = if method == "tools/call" {
        "send {\"name\": <tool name>, \"arguments\": {...}}"
    } else {
        "they do not have the shape the MCP specification gives this method"
    };
    Err((
        reply_id,
        INVALID_PARAMS,
        format!("Invalid params for `{method}`: {hint}"),
    ))
}

/// Most JSON values (each object, array, key, string, number...) one message may hold.
/// A parsed value takes 30–80 bytes however short its text (`0,` is two bytes), so a
/// 16 MiB line of small numbers or empty arrays took 1–1.5 GB to parse; real messages hold
/// tens of values, a 100 KiB memory's content is one.
const MAX_VALUES: usize = 100_000;

/// Lines at most this long are not counted: they cannot hold enough values to matter.
const COUNT_VALUES_ABOVE: usize = 64 * 1024;

/// Whether the JSON text holds more than `MAX_VALUES` values, found without building any
/// of them (serde visits each in place). Malformed text is `false`: parsing it again
/// reports that.
fn too_many_values(text: &[u8]) -> bool {
    let mut left = MAX_VALUES;
    match serde::de::DeserializeSeed::deserialize(
        ValueBudget(&mut left),
        &mut serde_json::Deserializer::from_slice(text),
    ) {
        Ok(()) => false,
        Err(e) => e.is_data(),
    }
}

/// Visits one JSON value and everything in it, spending one from the budget per value
/// and failing (a data error) when it runs out.
struct ValueBudget<'a>(&'a mut usize);

impl<'de> serde::de::DeserializeSeed<'de> for ValueBudget<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if *self.0 == 0 {
            return Err(serde::de::Error::custom("too many values"));
        }
        *self.0 -= 1;
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueBudget<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ValueBudget(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(ValueBudget(self.0))?.is_some() {
            map.next_value_seed(ValueBudget(self.0))?;
        }
        Ok(())
    }
}

/// A request's `id` to echo: a string or a 64-bit signed integer, else `null`; anything
/// else is skipped over without being built.
struct EchoId(Value);

impl<'de> serde::Deserialize<'de> for EchoId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EchoIdVisitor)
    }
}

struct EchoIdVisitor;

impl<'de> serde::de::Visitor<'de> for EchoIdVisitor {
    type Value = EchoId;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a request id")
    }
    fn visit_str<E>(self, v: &str) -> Result<EchoId, E> {
        Ok(EchoId(Value::from(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<EchoId, E> {
        Ok(EchoId(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<EchoId, E> {
        Ok(EchoId(i64::try_from(v).map_or(Value::Null, Value::from)))
    }
    fn visit_f64<E>(self, _: f64) -> Result<EchoId, E> {
        Ok(EchoId(Value::Null))
    }
    fn visit_bool<E>(self, _: bool) -> Result<EchoId, E> {
        Ok(EchoId(Value::Null))
    }
    fn visit_unit<E>(self) -> Result<EchoId, E> {
        Ok(EchoId(Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<EchoId, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(EchoId(Value::Null))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<EchoId, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(EchoId(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_of_too_many_values_is_refused_with_its_id_if_it_has_one() {
        let many = "0,".repeat(MAX_VALUES);
        let huge_id = format!("[{many}0]");
        for (id, echoed) in [
            ("7", json!(7)),
            ("\"a\"", json!("a")),
            (huge_id.as_str(), Value::Null),
            ("18446744073709551615", Value::Null),
            ("null", Value::Null),
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"x":[{many}0]}}}}"#
            );
            let (got, code, message) = answer(&line);
            assert_eq!((&got, code), (&echoed, INVALID_REQUEST), "{message}");
        }
        // Long, but few values: a 1 MiB string is one.
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"memory_write","arguments":{{"content":"{}"}}}}}}"#,
            "a".repeat(1 << 20)
        );
        assert!(matches!(decode(long.as_bytes()), Ok(Some(_))));
    }

    fn answer(line: &str) -> (Value, i64, String) {
        match decode(line.as_bytes()) {
            Err(answer) => answer,
            Ok(m) => panic!("{line} decoded: {}", m.is_some()),
        }
    }

    #[test]
    fn malformed_lines_get_the_json_rpc_error_they_call_for() {
        assert_eq!(answer("{\"jsonrpc\":").1, PARSE_ERROR);
        assert_eq!(answer("not json").0, Value::Null);
        let (id, code, _) = answer(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#);
        assert_eq!((id, code), (json!(4), INVALID_PARAMS));
        let (id, code, _) = answer(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#);
        assert_eq!((id, code), (json!("a"), INVALID_REQUEST));
        let (id, code, _) = answer(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!((id, code), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            answer(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).1,
            INVALID_REQUEST
        );
        assert_eq!(answer("42").1, INVALID_REQUEST);
    }

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

    #[test]
    fn valid_messages_and_malformed_notifications_are_not_answered() {
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Some(_))
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#),
            Ok(None)
        ));
        // A reply to a request this server never sent.
        assert!(decode(br#"{"jsonrpc":"2.0","id":9,"result":7}"#).is_ok());
    }
}
