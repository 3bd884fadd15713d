//! The HTTP safety rules checked before a request reaches MCP: `Host` (DNS rebinding:
//! a name that resolves to this machine but is not one it is served as) and `Origin` (a
//! browser page of another site). Both answer 403 when they fail.

use std::net::IpAddr;

/// Hosts and origins a request may name.
#[derive(Clone, Debug)]
pub struct Gate {
    /// Lowercased `host` or `host:port` entries; `None` accepts any Host.
    hosts: Option<Vec<String>>,
    /// Lowercased `scheme://host[:port]` entries (`:*` for any port, `null`); `None`
    /// accepts any Origin.
    origins: Option<Vec<String>>,
}

/// The names a local server is reached by.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

impl Gate {
    /// Loopback names, the address the server is bound to, and `extra_hosts`; origins on
    /// loopback hosts (any port, http or https) and `extra_origins`. A `*` among either
    /// turns that check off.
    pub fn new(bound: IpAddr, extra_hosts: &[String], extra_origins: &[String]) -> Gate {
        let hosts = if extra_hosts.iter().any(|h| h == "*") {
            None
        } else {
            let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
            if !bound.is_unspecified() {
                hosts.push(match bound {
                    IpAddr::V4(ip) => ip.to_string(),
                    IpAddr::V6(ip) => format!("[{ip}]"),
                });
            }
            hosts.extend(extra_hosts.iter().map(|h| h.trim().to_ascii_lowercase()));
            Some(hosts)
        };
        let origins = if extra_origins.iter().any(|o| o == "*") {
            None
        } else {
            let mut origins = Vec::new();
            for scheme in ["http", "https"] {
                for host in ["localhost", "127.0.0.1", "[::1]"] {
                    origins.push(format!("{scheme}://{host}:*"));
                }
            }
            origins.extend(
                extra_origins
                    .iter()
                    .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase()),
            );
            Some(origins)
        };
        Gate { hosts, origins }
    }

    /// Checks the `Host` header (`None`: absent or not ASCII). The error is the 403 text.
    pub fn host(&self, host: Option<&str>) -> Result<(), String> {
        let Some(allowed) = &self.hosts else {
            return Ok(());
        };
        let Some(host) = host.map(str::to_ascii_lowercase) else {
            return Err("Forbidden: the request has no valid Host header".into());
        };
        let name = host_name(&host);
        if allowed.iter().any(|a| *a == host || *a == name) {
            return Ok(());
        }
        Err(format!(
            "Forbidden: Host {:?} is not one this server answers to (a guard against DNS rebinding); \
             if clients reach it by that name, start memdir with `--allow-host {name}`",
            crate::text::head_chars(&host, 100)
        ))
    }

    /// Checks the `Origin` header: absent is fine (not a browser), anything else must be
    /// allowed.
    pub fn origin(&self, origin: Option<&[u8]>) -> Result<(), String> {
        let (Some(allowed), Some(origin)) = (&self.origins, origin) else {
            return Ok(());
        };
        let Some(origin) = std::str::from_utf8(origin)
            .ok()
            .map(|o| o.trim().to_ascii_lowercase())
        else {
            return Err("Forbidden: the Origin header is not valid text".into());
        };
        if allowed.iter().any(|a| origin_matches(a, &origin)) {
            return Ok(());
        }
        Err(format!(
            "Forbidden: requests from web pages of origin {:?} are not accepted; \
             to allow that site, start memdir with `--allow-origin {}`",
            crate::text::head_chars(&origin, 100),
            crate::text::head_chars(&origin, 100)
        ))
    }
}

/// `host` without its port: `example.com:8080` → `example.com`, `[::1]:80` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether `origin` (lowercased) is the allowed entry `allowed`: equal, or equal but for
/// a port where the entry says `:*`; an entry without a port stands for the scheme's
/// default port.
fn origin_matches(allowed: &str, origin: &str) -> bool {
    if allowed == origin {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme {
        "http" => "80",
        "https" => "443",
        _ => return false,
    };
    let name = host_name(rest);
    let port = rest[name.len()..].strip_prefix(':').unwrap_or(default_port);
    if let Some(prefix) = allowed.strip_suffix(":*") {
        return prefix == format!("{scheme}://{name}");
    }
    allowed == format!("{scheme}://{name}") && port == default_port
        || allowed == format!("{scheme}://{name}:{port}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(hosts: &[&str], origins: &[&str]) -> Gate {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Gate::new("127.0.0.1".parse().unwrap(), &s(hosts), &s(origins))
    }

    #[test]
    fn hosts() {
        let g = gate(&["memory.example.com"], &[]);
        for (host, ok) in [
            (Some("localhost:8080"), true),
            (Some("LOCALHOST"), true),
            (Some("127.0.0.1:1"), true),
            (Some("[::1]:8080"), true),
            (Some("memory.example.com"), true),
            (Some("memory.example.com:443"), true),
            (Some("evil.example.com:8080"), false),
            (Some("localhost.evil.com"), false),
            (Some("10.0.0.1:8080"), false),
            (None, false),
        ] {
            assert_eq!(g.host(host).is_ok(), ok, "{host:?}");
        }
        assert!(gate(&["*"], &[]).host(Some("anything")).is_ok());
    }

    #[test]
    fn origins() {
        let g = gate(
            &[],
            &["https://app.example.com", "http://tools.example.com:3000"],
        );
        for (origin, ok) in [
            (None, true),
            (Some("http://localhost:6274"), true),
            (Some("http://127.0.0.1"), true),
            (Some("https://[::1]:8443"), true),
            (Some("https://app.example.com"), true),
            (Some("https://app.example.com:443"), true),
            (Some("https://app.example.com/"), false),
            (Some("https://app.example.com:8443"), false),
            (Some("http://app.example.com"), false),
            (Some("http://tools.example.com:3000"), true),
            (Some("http://tools.example.com"), false),
            (Some("http://evil.example"), false),
            (Some("http://localhost.evil.example"), false),
            (Some("null"), false),
        ] {
            assert_eq!(
                g.origin(origin.map(str::as_bytes)).is_ok(),
                ok,
                "{origin:?}"
            );
        }
        assert!(g.origin(Some(b"\xff")).is_err());
        assert!(
            gate(&[], &["*"])
                .origin(Some(b"http://evil.example"))
                .is_ok()
        );
        assert!(gate(&[], &["null"]).origin(Some(b"null")).is_ok());
    }
}
