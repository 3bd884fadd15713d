//! `memory_history`: its parameters, its call and its text.

use std::fmt::Write as _;

use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::answer;
use super::args::Args;
use super::clamp;
use super::schema::{input, output};
use crate::error::Error;
use crate::mcp::server::MemdirServer;
use crate::memory::{HistoryRequest, HistoryResult, Version};

const DEFAULT_HISTORY_LIMIT: i64 = 50;
const MAX_HISTORY_LIMIT: i64 = 500;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    /// A memory (its versions, including before renames) or a folder (everything under
    /// it), e.g. `/memories/notes/rust.md`. Omit (or `/`) for every store.
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Most versions to return, newest first (default 50, at most 500).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 500))]
    pub limit: Option<i64>,
    /// The `next_cursor` of a previous call, for older versions.
    #[serde(default)]
    #[schemars(with = "String")]
    pub cursor: Option<String>,
    /// Return this one version with its content (`path` names the store, e.g. `/memories`).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub version: Option<i64>,
    /// Only versions that did this: `created`, `modified`, `renamed` or `deleted`.
    #[serde(default)]
    #[schemars(with = "Operation")]
    pub operation: Option<Operation>,
    /// Only versions by this actor: a client's name (`claude-code`) or name/version
    /// (`claude-code/1.2.0`), `cli` (a person at the command line), or `external` (a
    /// change made outside memdir, noticed on disk).
    #[serde(default)]
    #[schemars(with = "String")]
    pub actor: Option<String>,
    /// Only versions made at or after this time: a date (`2026-03-01`, the start of that
    /// day in UTC) or an RFC 3339 date-time (`2026-03-01T09:00:00Z`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub since: Option<String>,
    /// Only versions made before this time (a date or an RFC 3339 date-time).
    #[serde(default)]
    #[schemars(with = "String")]
    pub until: Option<String>,
}

/// What a version did: a `memory_history` filter, and each version's `operation`.
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Created,
    Modified,
    Renamed,
    Deleted,
}

impl Operation {
    pub fn op(self) -> crate::history::Op {
        use crate::history::Op;
        match self {
            Operation::Created => Op::Created,
            Operation::Modified => Op::Modified,
            Operation::Renamed => Op::Renamed,
            Operation::Deleted => Op::Deleted,
        }
    }

    pub fn of(op: crate::history::Op) -> Operation {
        use crate::history::Op;
        match op {
            Op::Created => Operation::Created,
            Op::Modified => Operation::Modified,
            Op::Renamed => Operation::Renamed,
            Op::Deleted => Operation::Deleted,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct VersionOut {
    pub version: u64,
    /// Canonical path (for a rename, the new path; empty once redacted).
    pub path: String,
    /// For a rename, the old path.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub from: Option<String>,
    pub operation: Operation,
    /// RFC 3339 UTC.
    pub at: String,
    /// The MCP client (`name/version`), `cli`, or `external` (noticed on disk).
    pub actor: String,
    /// The content of this version (for a deletion: the content deleted).
    pub content_sha256: String,
    pub size_bytes: u64,
    /// The version's content and path were erased (its who and when are kept).
    pub redacted: bool,
    /// Why, for a deletion made with a `reason`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HistoryOut {
    pub versions: Vec<VersionOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// With `version`: that version's content (its head, when it does not fit the result
    /// budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub content: Option<String>,
    /// `content` is only the head of the version's content.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_truncated: bool,
}

impl From<Version> for VersionOut {
    fn from(v: Version) -> Self {
        VersionOut {
            version: v.version,
            path: v.path,
            from: v.from,
            operation: Operation::of(v.operation),
            at: v.at,
            actor: v.actor,
            content_sha256: v.content_sha256,
            size_bytes: v.size_bytes,
            redacted: v.redacted,
            reason: v.reason,
        }
    }
}

impl From<HistoryResult> for HistoryOut {
    fn from(r: HistoryResult) -> Self {
        HistoryOut {
            versions: r.versions.into_iter().map(VersionOut::from).collect(),
            next_cursor: r.next_cursor,
            content: r.content,
            content_truncated: r.content_truncated,
        }
    }
}

#[tool_router(router = history_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// The audit trail: every change to a memory (or to everything under a folder), newest
    /// first, with operation, time, actor, content hash and a deletion's reason; filter by
    /// operation, actor and time (since/until). With `version`, that version's content.
    /// Restore one with memory_write {path, restore_version}.
    #[tool(
        input_schema = input::<HistoryParams>(),
        output_schema = output::<HistoryOut>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_history(
        &self,
        Args(p): Args<HistoryParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let result = self
            .run(move |m| {
                let limit = clamp(p.limit, DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT, "limit")?;
                let version = match p.version {
                    Some(v) if v < 1 => {
                        return Err(Error::InvalidArgument(format!(
                            "version must be at least 1, got {v}"
                        )));
                    }
                    v => v.map(|v| v as u64),
                };
                HistoryRequest {
                    path: p.path.as_deref(),
                    limit,
                    cursor: p.cursor.as_deref(),
                    version,
                    operation: p.operation.map(Operation::op),
                    actor: p.actor.as_deref(),
                    since: p.since.as_deref(),
                    until: p.until.as_deref(),
                }
                .run(m)
            })
            .await;
        answer(result, |r| {
            let out = HistoryOut::from(r);
            let text = render(&out);
            (out, text)
        })
    }
}

/// The text of a history: one version a line, then a version's content if asked.
fn render(out: &HistoryOut) -> String {
    let mut s = String::new();
    if out.versions.is_empty() {
        return "No versions recorded.".into();
    }
    for v in &out.versions {
        let _ = write!(
            s,
            "v{}\t{}\t{:?}\t{}",
            v.version,
            v.at,
            v.operation,
            if v.redacted { "[redacted]" } else { &v.path }
        );
        if let Some(from) = &v.from {
            let _ = write!(s, " (from {from})");
        }
        let _ = write!(
            s,
            "\tby {}\t{} bytes\tsha256 {}",
            v.actor, v.size_bytes, v.content_sha256
        );
        if let Some(reason) = &v.reason {
            let _ = write!(s, "\treason: {reason}");
        }
        s.push('\n');
    }
    if let Some(content) = &out.content {
        let v = &out.versions[0];
        let _ = write!(s, "Content of version {}:\n{content}", v.version);
        if out.content_truncated {
            let _ = write!(
                s,
                "\n[Showing the first {} of {} bytes of version {}: the rest does not fit in one result. To see it all, restore it to a new path (memory_write with restore_version) and page through it with memory_read view_range.]",
                content.len(),
                v.size_bytes,
                v.version
            );
        }
    }
    if let Some(c) = &out.next_cursor {
        let _ = writeln!(
            s,
            "More versions: call memory_history again with cursor \"{c}\"."
        );
    }
    s
}
