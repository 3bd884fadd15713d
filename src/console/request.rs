//! What the console reads of a request: the gate it passes (the HTTP transport's `Host`
//! and `Origin` rules), the same-origin rule every POST must meet, and form bodies and
//! query strings (URL-encoded, bounded like `/mcp`'s bodies).

use std::time::Duration;

use http::{HeaderMap, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::respond::Page;
use crate::mcp::transport::http::gate::Gate;

/// Reading a request's body once its headers arrived (as `/mcp`).
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The `Host` and `Origin` checks of `/mcp` (403). `Origin: null` is left to
/// [`same_origin`]: a browser sends it for the console's own forms, because every page
/// says `Referrer-Policy: no-referrer`.
#[allow(clippy::result_large_err)]
pub fn gate(gate: &Gate, request: &Request<Incoming>) -> Result<(), Page> {
    gate.host(host(request))
        .map_err(|e| Page::error(StatusCode::FORBIDDEN, &e))?;
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .map(|o| o.as_bytes())
        .filter(|o| *o != b"null");
    gate.origin(origin)
        .map_err(|e| Page::error(StatusCode::FORBIDDEN, &e))
}

fn host(request: &Request<Incoming>) -> Option<&str> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
}

/// A POST must come from a page of the console itself. Browsers send `Origin` with every
/// POST: the console's own (`http://HOST` of the request), or `null` when the page's
/// referrer policy is `no-referrer` (the console's), in which case the browser's
/// `Sec-Fetch-Site` must say `same-origin`. A `Sec-Fetch-Site` naming anything else
/// refuses the request too. A request without `Origin` is not from a console page.
#[allow(clippy::result_large_err)]
pub fn same_origin(request: &Request<Incoming>) -> Result<(), Page> {
    let refuse = || {
        Page::error(
            StatusCode::FORBIDDEN,
            "Forbidden: a change must be posted from the console's own pages (the request's Origin is missing or another site's)",
        )
    };
    let headers = request.headers();
    let fetch_site = headers
        .get("sec-fetch-site")
        .map(|v| v.as_bytes().eq_ignore_ascii_case(b"same-origin"));
    if fetch_site == Some(false) {
        return Err(refuse());
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .ok_or_else(refuse)?
        .to_ascii_lowercase();
    if origin == "null" {
        return if fetch_site == Some(true) {
            Ok(())
        } else {
            Err(refuse())
        };
    }
    let host = host(request).ok_or_else(refuse)?.to_ascii_lowercase();
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .ok_or_else(refuse)?;
    if authority == host {
        Ok(())
    } else {
        Err(refuse())
    }
}

/// Whether the request reached us through a TLS-terminating proxy (which says so in
/// `X-Forwarded-Proto`): the session cookie is then `Secure`. A client that forges the
/// header only makes its own cookie unusable over plain HTTP.
pub fn behind_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The fields of a URL-encoded form or query string (the first of a repeated name).
#[derive(Debug, Default)]
pub struct Query {
    fields: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Query {
        Query::from_bytes(raw.unwrap_or("").as_bytes())
    }

    fn from_bytes(raw: &[u8]) -> Query {
        Query {
            fields: form_urlencoded::parse(raw).into_owned().collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A field that must be there and not blank (400 naming it otherwise).
    #[allow(clippy::result_large_err)]
    pub fn required(&self, name: &str) -> Result<&str, Page> {
        self.get(name)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                Page::error(
                    StatusCode::BAD_REQUEST,
                    &format!("Bad Request: the field `{name}` is missing or empty"),
                )
            })
    }
}

/// A URL-encoded form body, at most `max_body` bytes, read within `BODY_TIMEOUT`.
pub async fn form(request: Request<Incoming>, max_body: usize) -> Result<Query, Page> {
    let too_large = || {
        Page::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("Payload Too Large: a form is at most {max_body} bytes"),
        )
    };
    let (parts, body) = request.into_parts();
    let is_form = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim() == "application/x-www-form-urlencoded")
        });
    if !is_form {
        return Err(Page::error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: the console takes forms (application/x-www-form-urlencoded)",
        ));
    }
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_body as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, max_body).collect()).await {
        Err(_) => Err(Page::error(
            StatusCode::REQUEST_TIMEOUT,
            "Request Timeout: the form did not arrive in time",
        )),
        Ok(Ok(collected)) => Ok(Query::from_bytes(&collected.to_bytes())),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(_)) => Err(Page::error(
            StatusCode::BAD_REQUEST,
            "Bad Request: the form could not be read",
        )),
    }
}
