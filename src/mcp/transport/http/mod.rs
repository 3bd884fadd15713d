//! MCP over Streamable HTTP (`memdir serve --http ADDR`): rmcp's stateless streamable
//! HTTP service at `/mcp`, behind memdir's own gate.
//!
//! Every request to `/mcp` passes, in order: the `Host` and `Origin` checks (403), the
//! bearer token (401; its NAME becomes the actor of the versions the request makes), a
//! bounded body read (413 past the limit, 408 when it trickles in too slowly), and the
//! JSON-RPC checks of the stdio transport (400 with a JSON-RPC error for a body that is
//! not JSON, a batch, or not a message). Only then does rmcp see it. `GET /healthz`
//! answers without authentication and says nothing about the stores. Every other path is
//! the console for people (`crate::console`), behind the same gate and tokens.
//!
//! Stateless: every POST is served on its own, with no session, so several memdir
//! processes can sit behind one load balancer. A request's library work runs on a blocking
//! thread to its end even when the client disconnects: a write is whole or not done.
//!
//! Shutdown (SIGTERM, SIGINT): every request that arrives from then on, on a new
//! connection or an open one, gets 503 (`Retry-After`, the connection closed after it;
//! `/healthz` too), `subscriptions/listen` streams end, in-flight calls finish and are
//! answered, then the listener closes and the process exits. SIGHUP re-reads the tokens
//! file.

pub(crate) mod gate;
pub(crate) mod listen;
mod streams;
pub(crate) mod tokens;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ClientRequest};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use self::gate::Gate;
use self::listen::{accept, connection_room, shutdown_signal};
use self::streams::{Refused, Streams, Ticket};
use self::tokens::TokenFile;
use super::ServeError;
use super::decode::decode;
use super::scan::trim;
use crate::console::{Console, SignIn};
use crate::mcp::flow::FlowHandle;
use crate::mcp::server::{MemdirServer, Transport};
use crate::mcp::toolset::ToolSet;
use crate::memory::Memdir;

/// Reading a request's headers, and waiting for the next request on an idle keep-alive
/// connection: a client silent for longer is disconnected.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Reading a request's body once its headers arrived.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// `subscriptions/listen` streams open at once on the server; one more gets 429. Each
/// holds a connection and a task (the watches are shared).
const MAX_LISTENS: usize = 256;
/// Streams the tokens of one name may hold at once (as many as a stdio connection may):
/// so that one token holder cannot take every place from the others. Without tokens
/// there is one caller, held to `MAX_LISTENS`.
const MAX_LISTENS_PER_TOKEN: usize = crate::mcp::flow::MAX_LISTENS;
/// What a request refused during shutdown is told to wait before it retries: about a
/// restart's time.
const RETRY_AFTER_SECS: &str = "5";
/// How long shutdown waits for in-flight calls before it exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How `memdir serve --http` listens.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Address and port to bind (`127.0.0.1:8080`; port 0 picks a free one).
    pub addr: SocketAddr,
    /// `NAME TOKEN` per line; without it only a loopback address may be bound.
    pub tokens: Option<PathBuf>,
    /// More `Host` names (or `host:port`) the server answers to; `*` for any.
    pub allow_hosts: Vec<String>,
    /// More browser origins (`https://app.example.com`) accepted; `*` for any.
    pub allow_origins: Vec<String>,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
}

/// Who made a request: the NAME of its bearer token. Put into the HTTP request's
/// extensions, where [`actor`] finds it (rmcp hands the server the request's parts).
#[derive(Clone, Debug)]
pub struct Identity(pub String);

/// The actor a request over HTTP records: its token's NAME; without tokens (loopback
/// only), the client's own name from the request's `_meta` (2026-07-28 era), else `http`.
/// `None` when the request did not come over HTTP. Handed to the server, which asks it.
fn actor(ctx: &rmcp::service::RequestContext<rmcp::RoleServer>) -> Option<String> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    if let Some(Identity(name)) = parts.extensions.get::<Identity>() {
        return Some(name.clone());
    }
    Some(match ctx.meta.client_info() {
        Some(info) if !info.name.is_empty() => format!("{}/{}", info.name, info.version),
        _ => "http".into(),
    })
}

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// Serves MCP over HTTP until SIGTERM or SIGINT.
pub async fn serve_http(
    memdir: Memdir,
    tools: ToolSet,
    options: HttpOptions,
) -> Result<(), ServeError> {
    let tokens = match &options.tokens {
        Some(path) => Some(TokenFile::load(path).map_err(ServeError::Tokens)?),
        None => None,
    };
    if tokens.is_none() && !options.addr.ip().is_loopback() {
        return Err(ServeError::Unauthenticated { addr: options.addr });
    }
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Listen {
            addr: options.addr,
            source,
        })?;
    let local = listener.local_addr()?;

    let flow = FlowHandle::detached();
    let memdir = Arc::new(memdir);
    let console = Console::new(
        Arc::clone(&memdir),
        Gate::new(local.ip(), &options.allow_hosts, &options.allow_origins),
        match &tokens {
            Some(tokens) => SignIn::Tokens(tokens.clone()),
            None => SignIn::Closed,
        },
        options.max_body_bytes,
    );
    let server = MemdirServer::new(memdir, tools, flow.clone(), Transport::Http).actor_from(actor);
    server.start_upkeep();
    let app = Arc::new(App::new(server, &options, local, tokens.clone(), console));
    let stop = shutdown_signal();
    if let Some(tokens) = &tokens {
        reload_on_hangup(tokens.clone());
    }
    let room = connection_room();
    tracing::info!(
        tokens = tokens.as_ref().map_or(0, |t| t.current().len()),
        connections = room.available_permits(),
        "listening on http://{local}/mcp{}",
        if tokens.is_some() {
            ""
        } else {
            " (no --tokens: loopback clients only, unauthenticated)"
        }
    );

    let handle = {
        let app = Arc::clone(&app);
        move |request, peer| Arc::clone(&app).handle(request, peer)
    };
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    accept(&listener, &room, Some(&graceful), stop, handle.clone()).await;
    app.draining.store(true, Ordering::Release);
    tracing::info!("shutting down: finishing the calls in flight");
    flow.end_input();
    // New connections are still accepted while the calls drain, to be told 503 rather
    // than refused; they are not waited for.
    tokio::select! {
        drained = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()) => {
            if drained.is_err() {
                tracing::warn!(
                    "calls still in flight after {}s; exiting anyway",
                    SHUTDOWN_GRACE.as_secs()
                );
            }
        }
        () = accept(&listener, &room, None, std::future::pending(), handle) => {}
    }
    Ok(())
}

/// Re-reads the tokens file on each SIGHUP; a file that no longer reads keeps the tokens
/// in force and says why.
fn reload_on_hangup(tokens: TokenFile) {
    // Installed now, before the server says it is listening (as `shutdown_signal`).
    #[cfg(unix)]
    let Ok(mut hangup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
    else {
        return;
    };
    #[cfg(unix)]
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            match tokens.reload() {
                Ok(n) => {
                    tracing::info!(tokens = n, file = %tokens.path().display(), "tokens re-read")
                }
                Err(e) => {
                    tracing::error!("tokens not re-read, the previous ones stay in force: {e}")
                }
            }
        }
    });
    #[cfg(not(unix))]
    drop(tokens);
}

struct App {
    mcp: StreamableHttpService<MemdirServer, NeverSessionManager>,
    /// Everything but `/mcp` and `/healthz`: the console for people (`crate::console`).
    console: Console,
    gate: Gate,
    tokens: Option<TokenFile>,
    max_body: usize,
    draining: AtomicBool,
    listens: Streams,
}

/// What the access log says of one request.
#[derive(Default)]
struct Access {
    rpc: Option<String>,
    tool: Option<String>,
    actor: Option<String>,
}

impl App {
    /// rmcp's stateless service behind memdir's gate, for the address bound (`local`).
    fn new(
        server: MemdirServer,
        options: &HttpOptions,
        local: SocketAddr,
        tokens: Option<TokenFile>,
        console: Console,
    ) -> App {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            // memdir's gate checks Host and Origin first, with its own lists and messages.
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(options.max_body_bytes);
        let mcp = StreamableHttpService::new(
            move || Ok(server.for_request()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        App {
            mcp,
            console,
            gate: Gate::new(local.ip(), &options.allow_hosts, &options.allow_origins),
            tokens,
            max_body: options.max_body_bytes,
            draining: AtomicBool::new(false),
            listens: Streams::new(MAX_LISTENS, MAX_LISTENS_PER_TOKEN),
        }
    }

    async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
        peer: SocketAddr,
    ) -> Response<Body> {
        let started = Instant::now();
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let mut access = Access::default();
        let mut response = match path.as_str() {
            "/healthz" if self.draining.load(Ordering::Acquire) => shutting_down(),
            "/healthz" => health(&method),
            "/mcp" | "/mcp/" => self.mcp(request, &mut access).await,
            // A console change started now could be cut off by the exit.
            _ if self.draining.load(Ordering::Acquire) => shutting_down(),
            _ => self.console.handle(request).await,
        };
        tracing::info!(
            target: "memdir::access",
            %peer,
            method = %method,
            path = %crate::text::head_chars(&path, 100),
            rpc = access.rpc.as_deref().unwrap_or("-"),
            tool = access.tool.as_deref().unwrap_or("-"),
            status = response.status().as_u16(),
            ms = format!("{:.2}", started.elapsed().as_secs_f64() * 1000.0),
            actor = access.actor.as_deref().unwrap_or("-"),
        );
        // Some of rmcp's own refusals (405, 406, 415, a bad protocol version) carry text
        // without a type: a browser must never guess one.
        let headers = response.headers_mut();
        headers
            .entry(header::X_CONTENT_TYPE_OPTIONS)
            .or_insert(http::HeaderValue::from_static("nosniff"));
        if response.status().is_client_error() || response.status().is_server_error() {
            response
                .headers_mut()
                .entry(header::CONTENT_TYPE)
                .or_insert(http::HeaderValue::from_static("text/plain; charset=utf-8"));
        }
        response
    }

    async fn mcp(&self, request: Request<Incoming>, access: &mut Access) -> Response<Body> {
        let identity = match self.admit(&request) {
            Ok(identity) => identity,
            Err(response) => return response,
        };
        access.actor = identity.clone();
        let (mut parts, body) = request.into_parts();
        if let Some(name) = identity {
            parts.extensions.insert(Identity(name));
        }
        let mut listen = None;
        let body = if parts.method == Method::POST {
            match self.message(&parts, body, access).await {
                Ok((bytes, ticket)) => {
                    listen = ticket;
                    bytes
                }
                Err(response) => return response,
            }
        } else {
            // rmcp answers GET and DELETE with 405 in stateless mode.
            Bytes::new()
        };
        let request = Request::from_parts(parts, Full::new(body));
        let response = self.mcp.handle(request).await;
        match listen {
            Some(ticket) => streams::follow(ticket, response),
            None => response,
        }
    }

    /// The gate: a request to `/mcp` while the server runs, from an allowed host and
    /// origin, with a valid token when tokens are required. Gives the token's NAME.
    // The error is the response to send, returned once per request: its size is no cost.
    #[allow(clippy::result_large_err)]
    fn admit(&self, request: &Request<Incoming>) -> Result<Option<String>, Response<Body>> {
        if self.draining.load(Ordering::Acquire) {
            return Err(shutting_down());
        }
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
        if let Err(e) = self.gate.host(host) {
            return Err(text(StatusCode::FORBIDDEN, &e));
        }
        let origin = request.headers().get(header::ORIGIN).map(|o| o.as_bytes());
        if let Err(e) = self.gate.origin(origin) {
            return Err(text(StatusCode::FORBIDDEN, &e));
        }
        let Some(tokens) = &self.tokens else {
            return Ok(None);
        };
        match bearer(request.headers()).and_then(|t| tokens.current().actor(t).map(str::to_string))
        {
            Some(name) => Ok(Some(name)),
            None => Err(unauthorized()),
        }
    }

    /// A POST's body, read and checked to be one JSON-RPC message (with a ticket when it
    /// opens a `subscriptions/listen` stream, and ending the stream it cancels); else the
    /// answer to give instead.
    async fn message(
        &self,
        parts: &http::request::Parts,
        body: Incoming,
        access: &mut Access,
    ) -> Result<(Bytes, Option<Ticket>), Response<Body>> {
        let bytes = self.read_body(parts, body).await?;
        let message = match decode(trim(&bytes)) {
            Ok(Some(message)) => message,
            Ok(None) => return Err(empty(StatusCode::ACCEPTED)),
            // The stdio transport's words, for a body instead of a line.
            Err((id, code, message)) => {
                let message = message
                    .replace("per line", "per request")
                    .replace("the line is not JSON", "the body is not JSON");
                return Err(rpc_error(id, code, &message));
            }
        };
        note(&message, access);
        let caller = parts.extensions.get::<Identity>().map(|i| i.0.as_str());
        let id = match &message {
            ClientJsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::SubscriptionsListenRequest(_)) =>
            {
                r.id.clone()
            }
            ClientJsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.listens.cancel(caller, id);
                }
                return Ok((bytes, None));
            }
            _ => return Ok((bytes, None)),
        };
        // A stream opened with a token ends at its next message once that token is no
        // longer in the tokens file, as a console session does.
        let in_force = match (&self.tokens, bearer(&parts.headers), caller) {
            (Some(tokens), Some(presented), Some(name)) => {
                let (tokens, presented) = (tokens.clone(), tokens::digest(presented));
                let name = name.to_string();
                Some(Box::new(move || tokens.still_names(&presented, &name)) as streams::InForce)
            }
            _ => None,
        };
        match self.listens.admit(caller, id, in_force) {
            Ok(ticket) => Ok((bytes, Some(ticket))),
            Err(Refused::Server) => Err(text(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Too Many Requests: {MAX_LISTENS} subscriptions/listen streams are open on this server; close one first"
                ),
            )),
            Err(Refused::Caller) => Err(text(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Too Many Requests: the tokens of this name hold {MAX_LISTENS_PER_TOKEN} subscriptions/listen streams already, the most one name may; cancel or close one first"
                ),
            )),
        }
    }

    /// The request body, at most `max_body` bytes, read within `BODY_TIMEOUT`.
    async fn read_body(
        &self,
        parts: &http::request::Parts,
        body: Incoming,
    ) -> Result<Bytes, Response<Body>> {
        let too_large = || {
            text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "Payload Too Large: a request body is at most {} bytes (a memory is at most its size limit; send large content as several edits)",
                    self.max_body
                ),
            )
        };
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body as u64) {
            return Err(too_large());
        }
        match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, self.max_body).collect()).await
        {
            Err(_) => Err(text(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "Request Timeout: the body did not arrive within {}s",
                    BODY_TIMEOUT.as_secs()
                ),
            )),
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
            Ok(Err(_)) => Err(text(
                StatusCode::BAD_REQUEST,
                "Bad Request: the body could not be read",
            )),
        }
    }
}

/// The JSON-RPC method (and tool) of a message, for the access log.
fn note(message: &ClientJsonRpcMessage, access: &mut Access) {
    if let ClientJsonRpcMessage::Request(request) = message {
        access.rpc = Some(crate::text::head_chars(request.request.method(), 60));
        if let ClientRequest::CallToolRequest(call) = &request.request {
            access.tool = Some(crate::text::head_chars(&call.params.name, 60));
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (scheme case-insensitive).
fn bearer(headers: &http::HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| token.trim_ascii())
        .filter(|t| !t.is_empty())
}

fn health(method: &Method) -> Response<Body> {
    if method == Method::GET || method == Method::HEAD {
        json_response(StatusCode::OK, json!({"status": "ok"}))
    } else {
        text(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: use GET",
        )
    }
}

/// The answer to every request that arrives while the server shuts down.
fn shutting_down() -> Response<Body> {
    let mut response = text(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: the server is shutting down; retry on another instance or after its restart",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    response
}

fn unauthorized() -> Response<Body> {
    let mut response = text(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: send `Authorization: Bearer <token>` with a token from the server's tokens file",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"memdir\""),
    );
    response
}

fn rpc_error(id: Value, code: i64, message: &str) -> Response<Body> {
    json_response(
        StatusCode::BAD_REQUEST,
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

fn json_response(status: StatusCode, value: Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{message}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}
