//! What the console reads of a request: the gate it passes (the HTTP transport's `Host`
//! and `Origin` rules), the same-origin rule every POST must meet, and form bodies and
//! query strings (URL-encoded, bounded like `/mcp`'s bodies).

use http::{HeaderMap, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::respond::Page;
use crate::mcp::transport::http::BODY_TIMEOUT;
use crate::mcp::transport::http::gate::Gate;

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

/// The fields of a `multipart/form-data` body (RFC 7578) delimited by `boundary`: each
/// part's `name` and its value, which must be UTF-8 (the console uploads text only).
fn multipart(body: &[u8], boundary: &str) -> Option<Query> {
    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| w == needle)
    }
    let first = format!("--{boundary}");
    let next = format!("\r\n--{boundary}");
    let mut rest = &body[find(body, first.as_bytes())? + first.len()..];
    let mut fields = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Some(Query { fields });
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = std::str::from_utf8(&rest[..head_end]).ok()?;
        rest = &rest[head_end + 4..];
        let end = find(rest, next.as_bytes())?;
        let value = std::str::from_utf8(&rest[..end]).ok()?.to_string();
        rest = &rest[end + next.len()..];
        let name = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?
            .split(';')
            .map(str::trim)
            .find_map(|p| p.strip_prefix("name="))?
            .trim_matches('"')
            .to_string();
        fields.push((name, value));
    }
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

/// A form body (URL-encoded, or multipart for an upload), at most `max_body` bytes, read
/// within `BODY_TIMEOUT`.
pub async fn form(request: Request<Incoming>, max_body: usize) -> Result<Query, Page> {
    let too_large = || {
        Page::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("Payload Too Large: a form is at most {max_body} bytes"),
        )
    };
    let (parts, body) = request.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut params = content_type.split(';').map(str::trim);
    let boundary = match params.next() {
        Some("application/x-www-form-urlencoded") => None,
        Some("multipart/form-data") => Some(
            params
                .find_map(|p| p.strip_prefix("boundary="))
                .map(|b| b.trim_matches('"').to_string())
                .filter(|b| !b.is_empty() && b.len() <= 70)
                .ok_or_else(|| {
                    Page::error(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: a multipart form without its boundary",
                    )
                })?,
        ),
        _ => {
            return Err(Page::error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type: the console takes forms (application/x-www-form-urlencoded, or multipart/form-data for an upload)",
            ));
        }
    };
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
        Ok(Ok(collected)) => match boundary {
            None => Ok(Query::from_bytes(&collected.to_bytes())),
            Some(b) => multipart(&collected.to_bytes(), &b).ok_or_else(|| {
                Page::error(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the multipart form could not be read (every part must be UTF-8 text)",
                )
            }),
        },
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(_)) => Err(Page::error(
            StatusCode::BAD_REQUEST,
            "Bad Request: the form could not be read",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_parts() {
        let body = b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n--XyZ\r\ncontent-disposition: form-data; name=\"archive\"; filename=\"a.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\nline 1\r\nline 2\n\r\n--XyZ--\r\n";
        let q = multipart(body, "XyZ").unwrap();
        assert_eq!(q.get("csrf"), Some("abc"));
        assert_eq!(q.get("archive"), Some("line 1\r\nline 2\n"));
        // Not UTF-8, or cut short: refused.
        assert!(
            multipart(
                b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\xff\r\n--XyZ--",
                "XyZ"
            )
            .is_none()
        );
        assert!(
            multipart(
                b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nabc",
                "XyZ"
            )
            .is_none()
        );
    }
}
