//! The tools: one file per tool, each owning its parameters (their doc comments are
//! what the model reads), its call and its text; `anthropic` is the compatibility
//! profile's `memory` tool. Shared: `args` (the extractor that names the field a type
//! error is about), `schema` (schema tidying), `answer` (results and errors as tool
//! results).

mod answer;
mod anthropic;
mod args;
mod delete;
mod edit;
mod history;
mod list;
mod read;
mod schema;
mod search;
mod write;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use super::server::MemdirServer;
use crate::error::Error;

impl MemdirServer {
    /// The actor recorded in the history for a request: the one its transport names
    /// (over HTTP, the bearer token's NAME), else the client's `clientInfo`, from the
    /// request's own `_meta` when it carries one (every request of the 2026-07-28 era,
    /// which has no handshake, does) or else from `initialize`.
    fn actor(&self, ctx: &RequestContext<RoleServer>) -> String {
        if let Some(actor) = self.actor_of.and_then(|actor_of| actor_of(ctx)) {
            return actor;
        }
        match ctx.client_info() {
            Some(info) if !info.name.is_empty() => format!("{}/{}", info.name, info.version),
            _ => "unknown-client".into(),
        }
    }
}

/// A store an answer over every store went on without.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct UnavailableOut {
    /// The store's path, e.g. `/team`.
    pub store: String,
    /// Why it could not be read (its database away).
    pub reason: String,
}

impl From<crate::error::Unavailable> for UnavailableOut {
    fn from(u: crate::error::Unavailable) -> Self {
        UnavailableOut {
            store: u.store,
            reason: u.reason,
        }
    }
}

/// The lines that say which stores an answer left out, before the answer.
fn unavailable_lines(out: &mut String, stores: &[UnavailableOut]) {
    use std::fmt::Write as _;
    for u in stores {
        let _ = writeln!(
            out,
            "Store `{}` could not be read, so its memories are missing from this answer: {}",
            u.store, u.reason
        );
    }
}

/// A limit given by the caller, or its default; an error names it when out of range.
fn clamp(value: Option<i64>, default: i64, max: i64, name: &str) -> Result<usize, Error> {
    match value {
        None => Ok(default as usize),
        Some(v) if (1..=max).contains(&v) => Ok(v as usize),
        Some(v) => Err(Error::InvalidArgument(format!(
            "{name} must be between 1 and {max}, got {v}"
        ))),
    }
}
