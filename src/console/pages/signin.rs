//! Signing in and out. With tokens (`memdir serve --http --tokens`), a token of the
//! tokens file is pasted into a form and POSTed, never put in a URL. With `memdir
//! console`, the printed link's one-time token signs in once and is redirected away from.
//! Either way the browser then holds only a session cookie.

use http::StatusCode;
use maud::html;

use crate::console::layout;
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::console::session::Session;
use crate::console::{Console, SignIn};

/// The console of a server without tokens.
pub fn closed() -> Page {
    Page::error(
        StatusCode::FORBIDDEN,
        "The console is closed: this server has no tokens, so it cannot tell who signs in. Start it with `--tokens FILE`, or run `memdir console` on the machine that holds the stores.",
    )
}

/// The sign-in page (with `error` said above the form).
pub fn form(console: &Console, error: Option<&str>, status: StatusCode) -> Page {
    let body = match console.sign_in {
        SignIn::Tokens(_) => html! {
            @if let Some(e) = error { p.message { (e) } }
            form method="post" action="/signin" {
                label for="token" { "Token (a token of the server's tokens file)" }
                input #token type="password" name="token" autocomplete="off" required;
                p { button type="submit" { "Sign in" } }
            }
        },
        _ => html! {
            @if let Some(e) = error { p.message { (e) } }
            p { "Open the link that " code { "memdir console" } " printed when it started. It signs in once; to sign in again, restart " code { "memdir console" } " for a new link." }
        },
    };
    Page::html(status, layout::bare_with("Sign in", body))
}

/// `POST /signin`: a token of the tokens file.
#[allow(clippy::result_large_err)]
pub fn submit(console: &Console, form_data: &Query) -> Result<Page, Page> {
    let SignIn::Tokens(tokens) = &console.sign_in else {
        return Err(form(
            console,
            Some("This console signs in by its printed link only."),
            StatusCode::UNAUTHORIZED,
        ));
    };
    let presented = form_data.get("token").unwrap_or("").trim();
    match tokens.current().actor(presented.as_bytes()) {
        Some(actor) => {
            let id = console.sessions.start(actor, Some(presented));
            Ok(Page::redirect("/".into()).set_session(id))
        }
        None => Err(form(
            console,
            Some("That token is not one of this server's tokens."),
            StatusCode::UNAUTHORIZED,
        )),
    }
}

/// `GET /?token=…`: `memdir console`'s link, good once.
#[allow(clippy::result_large_err)]
pub fn one_time(console: &Console, query: &Query, signed_in: bool) -> Result<Page, Page> {
    let presented = query.get("token").unwrap_or("");
    if let SignIn::OneTime(once) = &console.sign_in
        && let Some(actor) = once.spend(presented)
    {
        let id = console.sessions.start(actor, None);
        return Ok(Page::redirect("/".into()).set_session(id));
    }
    if signed_in {
        // A stale link in a signed-in browser: only leave the token out of the URL.
        return Ok(Page::redirect("/".into()));
    }
    Err(form(
        console,
        Some(match console.sign_in {
            SignIn::Tokens(_) => "A token is never taken from a URL: paste it into the form below.",
            _ => "This sign-in link was already used or is not this console's.",
        }),
        StatusCode::UNAUTHORIZED,
    ))
}

/// `POST /signout`.
pub fn sign_out(console: &Console, session: &Session) -> Page {
    console.sessions.end(session);
    Page::html(
        StatusCode::OK,
        layout::bare("Signed out", "You are signed out of the memdir console."),
    )
    .clear_session()
}
