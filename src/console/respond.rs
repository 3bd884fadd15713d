//! What the console answers: a page (HTML, or the style sheet), a redirect after a
//! sign-in or a change (303, so a reload never posts again), the session cookie set or
//! cleared, and the security headers every response carries.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full};
use maud::Markup;

use super::Body;
use super::layout;
use super::session;

/// No script at all, nothing from elsewhere, no framing, forms only to ourselves.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A console answer before it becomes an HTTP response.
pub struct Page {
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
    location: Option<String>,
    cookie: Option<Cookie>,
    /// A download's file name (`Content-Disposition: attachment`).
    attachment: Option<String>,
}

enum Cookie {
    /// Set the session cookie to this id.
    Set(String),
    Clear,
}

impl Page {
    pub fn html(status: StatusCode, markup: Markup) -> Page {
        Page {
            status,
            content_type: "text/html; charset=utf-8",
            body: Bytes::from(markup.into_string()),
            location: None,
            cookie: None,
            attachment: None,
        }
    }

    /// A page of its own saying what went wrong (`message` is escaped).
    pub fn error(status: StatusCode, message: &str) -> Page {
        Page::html(status, layout::bare(status.as_str(), message))
    }

    pub fn bytes(content_type: &'static str, body: &'static [u8]) -> Page {
        Page {
            status: StatusCode::OK,
            content_type,
            body: Bytes::from_static(body),
            location: None,
            cookie: None,
            attachment: None,
        }
    }

    /// A file to save, named `file_name` (ASCII letters, digits, `.-_` only).
    pub fn download(content_type: &'static str, file_name: String, body: Vec<u8>) -> Page {
        Page {
            status: StatusCode::OK,
            content_type,
            body: Bytes::from(body),
            location: None,
            cookie: None,
            attachment: Some(file_name),
        }
    }

    /// 303 See Other to `location` (a path of the console).
    pub fn redirect(location: String) -> Page {
        Page {
            status: StatusCode::SEE_OTHER,
            content_type: "text/plain; charset=utf-8",
            body: Bytes::new(),
            location: Some(location),
            cookie: None,
            attachment: None,
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn set_session(mut self, id: String) -> Page {
        self.cookie = Some(Cookie::Set(id));
        self
    }

    pub fn clear_session(mut self) -> Page {
        self.cookie = Some(Cookie::Clear);
        self
    }

    pub fn into_response(self, secure: bool) -> Response<Body> {
        let mut response = Response::new(Full::new(self.body).boxed());
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        if let Some(location) = self.location
            && let Ok(v) = HeaderValue::from_str(&location)
        {
            headers.insert(header::LOCATION, v);
        }
        if let Some(name) = self.attachment {
            let safe: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || ".-_".contains(*c))
                .collect();
            if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}\"")) {
                headers.insert(header::CONTENT_DISPOSITION, v);
            }
        }
        let cookie = match self.cookie {
            Some(Cookie::Set(id)) => Some(session::set_cookie(&id, secure)),
            Some(Cookie::Clear) => Some(session::clear_cookie(secure)),
            None => None,
        };
        if let Some(v) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert(header::SET_COOKIE, v);
        }
        response
    }
}

/// The headers every console response carries.
pub fn harden(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Pages show memories a session may read: no copy kept by the browser or a proxy.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// The status and message of a library error, for a person.
pub fn library_error(e: &crate::error::Error) -> Page {
    use crate::error::Error;
    let status = match e {
        Error::NotFound { .. } | Error::UnknownStore { .. } | Error::NoSuchVersion { .. } => {
            StatusCode::NOT_FOUND
        }
        Error::ReadOnly { .. } | Error::Escape { .. } | Error::StateLink { .. } => {
            StatusCode::FORBIDDEN
        }
        Error::AlreadyExists { .. }
        | Error::Occupied { .. }
        | Error::Precondition { .. }
        | Error::PreconditionMissing { .. } => StatusCode::CONFLICT,
        Error::Io { .. }
        | Error::Database { .. }
        | Error::Unconfirmed { .. }
        | Error::StorageFull { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    Page::error(status, &e.to_string())
}
