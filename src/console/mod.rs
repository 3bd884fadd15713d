//! The memdir console: server-rendered HTML pages onto the stores, for people, served
//! by `memdir console` (loopback, a one-time sign-in link) and by `memdir serve --http`
//! at `/` beside `/mcp` (the same bearer tokens, pasted once into a sign-in form).
//!
//! Every request passes the `Host` and `Origin` gate of the HTTP transport; every page
//! but the sign-in page and the style sheet needs a session (an HttpOnly, SameSite=Strict
//! cookie); every change is a POST from the console's own origin carrying the session's
//! CSRF token. Pages call the same library operations as the MCP tools (`crate::memory`),
//! never the file system, and every response carries a strict Content-Security-Policy.
//! Memory contents and paths are written by agents: every value is escaped by the
//! template engine (maud), and Markdown is rendered without raw HTML (`markdown`).
//!
//! Layout: `session` (sign-in, sessions, CSRF), `request` (bodies, forms, queries, the
//! same-origin rule of POSTs), `respond` (security headers, redirects, errors),
//! `layout` (the page frame and the style sheet), `markdown`, `serve` (`memdir
//! console`'s own listener), and `pages/` (one file per page).

mod layout;
mod markdown;
mod pages;
mod request;
mod respond;
mod serve;
mod session;

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;

use crate::mcp::transport::http::gate::Gate;
use crate::mcp::transport::http::tokens::TokenFile;
use crate::memory::Memdir;

pub use serve::{ConsoleOptions, serve};

use request::Query;
use respond::Page;
use session::{Session, Sessions};

/// Every path the console answers (any other is 404 before any sign-in check).
const PAGES: &[&str] = &[
    "/", "/folder", "/memory", "/search", "/edit", "/new", "/delete", "/rename", "/history",
    "/version", "/diff", "/restore", "/redact", "/export", "/import", "/review", "/prune",
    "/index", "/signin", "/signout",
];

/// A response body, as the HTTP transport's.
pub type Body = BoxBody<Bytes, Infallible>;

/// How people sign in.
pub enum SignIn {
    /// `memdir serve --http --tokens FILE`: a token of the file, pasted into the sign-in
    /// form (a POST: a token never travels in a URL); its NAME is the actor.
    Tokens(TokenFile),
    /// `memdir console`: the one-time token of the printed link, as the local user.
    OneTime(session::OneTime),
    /// `memdir serve --http` without tokens: nobody can be told apart, so the console is
    /// closed (it says how to open it).
    Closed,
}

/// The largest sign-in form read (a token and the form's own fields).
const SIGNIN_MAX_BODY: usize = 8 * 1024;

/// The console of one server.
pub struct Console {
    memdir: Arc<Memdir>,
    gate: Gate,
    sign_in: SignIn,
    sessions: Sessions,
    max_body: usize,
}

impl Console {
    /// The console onto `memdir`, behind `gate`, reading request bodies of at most
    /// `max_body` bytes (the limit of `/mcp`).
    pub fn new(memdir: Arc<Memdir>, gate: Gate, sign_in: SignIn, max_body: usize) -> Console {
        Console {
            memdir,
            gate,
            sign_in,
            sessions: Sessions::default(),
            max_body,
        }
    }

    /// Answers one request to any path but the MCP transport's own.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let secure = request::behind_tls(request.headers());
        let mut response = match self.route(request).await {
            Ok(page) | Err(page) => page.into_response(secure),
        };
        respond::harden(response.headers_mut());
        response
    }

    async fn route(&self, request: Request<Incoming>) -> Result<Page, Page> {
        request::gate(&self.gate, &request)?;
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let query = Query::parse(request.uri().query());
        if path == "/console.css" {
            return Ok(layout::style_sheet(&method));
        }
        if !PAGES.contains(&path.as_str()) {
            return Err(Page::error(
                StatusCode::NOT_FOUND,
                "Not Found: no console page here; the console starts at /, MCP is at /mcp",
            ));
        }
        if let SignIn::Closed = self.sign_in {
            return Err(pages::signin::closed());
        }
        if method == Method::POST && path == "/signin" {
            request::same_origin(&request)?;
            // Read before any token is checked: held to what a sign-in form needs, so
            // callers without a token cannot make the server hold large bodies.
            let form = request::form(request, SIGNIN_MAX_BODY).await?;
            return pages::signin::submit(self, &form);
        }
        let session = self.sessions.find(request.headers());
        if method == Method::GET && path == "/" && query.get("token").is_some() {
            // A token in a URL signs in only as `memdir console`'s one-time link; with
            // a session already, or once used, it is nothing but a stale link.
            return pages::signin::one_time(self, &query, session.is_some());
        }
        let Some(session) = session else {
            return Err(pages::signin::form(self, None, StatusCode::UNAUTHORIZED));
        };
        if let (SignIn::Tokens(tokens), Some(token)) = (&self.sign_in, &session.token)
            && !tokens.still_names(token, &session.actor)
        {
            // The token was revoked (SIGHUP re-read the file without it): so is the session.
            self.sessions.end(&session);
            return Err(pages::signin::form(
                self,
                Some("Your token is no longer in the server's tokens file: sign in with a current one."),
                StatusCode::UNAUTHORIZED,
            )
            .clear_session());
        }
        if method == Method::POST {
            request::same_origin(&request)?;
            let form = request::form(request, self.max_body).await?;
            session.check_csrf(form.get("csrf"))?;
            return self.change(&path, &session, &form).await;
        }
        if method != Method::GET && method != Method::HEAD {
            return Err(Page::error(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: the console's pages are read with GET and changed with POST",
            ));
        }
        let view = pages::View {
            memdir: Arc::clone(&self.memdir),
            session,
        };
        match path.as_str() {
            "/" => pages::stores::page(view).await,
            "/folder" => pages::folder::page(view, query).await,
            "/memory" => pages::memory::page(view, query).await,
            "/search" => pages::search::page(view, query).await,
            "/edit" => pages::edit::form(view, query).await,
            "/new" => pages::create::form(view, query).await,
            "/delete" => pages::delete::form(view, query).await,
            "/rename" => pages::rename::form(view, query).await,
            // Signed in already (a bookmark, the back button): nothing to sign in to.
            "/signin" => Ok(Page::redirect("/".into())),
            "/export" => pages::archive::export(view, query).await,
            "/review" => pages::upkeep::review(view, query).await,
            "/index" => pages::upkeep::index(view, query).await,
            "/import" => pages::archive::form(view, query).await,
            "/history" => pages::history::page(view, query).await,
            "/version" => pages::history::version(view, query).await,
            "/diff" => pages::history::diff(view, query).await,
            "/redact" => pages::history::redact_form(view, query).await,
            _ => Err(Page::error(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: this page is changed with POST only",
            )),
        }
    }

    /// A POST past the session and CSRF checks.
    async fn change(&self, path: &str, session: &Session, form: &Query) -> Result<Page, Page> {
        let view = pages::View {
            memdir: Arc::clone(&self.memdir),
            session: session.clone(),
        };
        match path {
            "/signout" => Ok(pages::signin::sign_out(self, session)),
            "/edit" => pages::edit::submit(view, form).await,
            "/new" => pages::create::submit(view, form).await,
            "/delete" => pages::delete::submit(view, form).await,
            "/rename" => pages::rename::submit(view, form).await,
            "/import" => pages::archive::import(view, form).await,
            "/prune" => pages::upkeep::prune(view, form).await,
            "/restore" => pages::history::restore(view, form).await,
            "/redact" => pages::history::redact(view, form).await,
            _ => Err(Page::error(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: this page is read with GET",
            )),
        }
    }
}
