//! `memory_list`: its parameters, its call and its text.

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
use crate::memory::{ListEntry, ListOrder, ListRequest, ListResult};

const DEFAULT_LIST_LIMIT: i64 = 200;
const MAX_LIST_LIMIT: i64 = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Folder (or file) to list, e.g. `/memories/notes/`. Matches whole path segments:
    /// `/memories/notes/` lists `notes/a.md`, never `notes_old/`. Omit (or `/`) for every store.
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Omit to list every file below `path` recursively. 1 = only the immediate children,
    /// folders shown with their file count and total size; 2 = two levels; and so on.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub depth: Option<i64>,
    /// Most entries to return (default 200, at most 1000).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 1000))]
    pub limit: Option<i64>,
    /// The `next_cursor` of a previous call, to get the next page.
    #[serde(default)]
    #[schemars(with = "String")]
    pub cursor: Option<String>,
    /// Only entries not updated for at least this many days (whole days; a folder counts
    /// by its newest file), e.g. 90 to review what may be out of date.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0))]
    pub older_than_days: Option<i64>,
    /// Order: `path` (default) or `oldest` (least recently updated first).
    #[serde(default)]
    #[schemars(with = "ListSort")]
    pub sort: Option<ListSort>,
}

/// How list entries are ordered.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
pub enum ListSort {
    Path,
    Oldest,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File,
    Dir,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct EntryOut {
    /// Canonical path; folders end with `/`.
    pub path: String,
    pub kind: Kind,
    /// File size, or the total size of the files below a folder.
    pub size_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub content_sha256: Option<String>,
    pub updated_at: String,
    /// The memory's frontmatter `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub description: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub kind_tag: Option<String>,
    /// Files below a folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub file_count: Option<u64>,
    /// The memory's frontmatter `expires`, as an RFC 3339 UTC time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expires_at: Option<String>,
    /// Present (true) when that time has passed: the memory is likely out of date.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// The memory's frontmatter `importance` (1–5), when it has one (absent counts as 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u8", range(min = 1, max = 5))]
    pub importance: Option<u8>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListOut {
    pub entries: Vec<EntryOut>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// Matching entries in all pages.
    pub total: u64,
    /// Present when a listing of every store went on without some of them (their
    /// database could not be reached): their memories are missing from it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable_stores: Vec<super::UnavailableOut>,
}

impl From<ListEntry> for EntryOut {
    fn from(e: ListEntry) -> Self {
        EntryOut {
            path: e.path,
            kind: if e.is_dir { Kind::Dir } else { Kind::File },
            size_bytes: e.size_bytes,
            content_sha256: e.content_sha256,
            updated_at: e.updated_at,
            name: e.name,
            description: e.description,
            kind_tag: e.kind,
            file_count: e.file_count,
            expires_at: e.expires_at,
            expired: e.expired,
            importance: e.importance,
        }
    }
}

impl From<ListResult> for ListOut {
    fn from(r: ListResult) -> Self {
        ListOut {
            entries: r.entries.into_iter().map(EntryOut::from).collect(),
            next_cursor: r.next_cursor,
            total: r.total as u64,
            unavailable_stores: r.unavailable.into_iter().map(Into::into).collect(),
        }
    }
}

#[tool_router(router = list_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// List what is stored: files (recursively) under a folder, or with `depth` the folder
    /// tree a few levels deep. Each entry has its size, update time, content_sha256 and,
    /// for files with frontmatter, their name, description, type and expiry. To review
    /// what may be stale: older_than_days 90 and sort `oldest`.
    #[tool(
        input_schema = input::<ListParams>(),
        output_schema = output::<ListOut>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_list(&self, Args(p): Args<ListParams>) -> Result<CallToolResult, ErrorData> {
        let result = self
            .run(move |m| {
                let limit = clamp(p.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, "limit")?;
                let depth = match p.depth {
                    Some(d) if d < 1 => {
                        return Err(Error::InvalidArgument(
                            "depth must be at least 1 (1 = immediate children); omit it to list every file recursively".into(),
                        ));
                    }
                    d => d.map(|d| d as usize),
                };
                let older_than_days = match p.older_than_days {
                    Some(d) if d < 0 => {
                        return Err(Error::InvalidArgument(format!(
                            "older_than_days must be 0 or more (whole days), got {d}"
                        )));
                    }
                    d => d.map(|d| d as u64),
                };
                ListRequest {
                    path: p.path.as_deref(),
                    depth,
                    limit,
                    cursor: p.cursor.as_deref(),
                    older_than_days,
                    order: match p.sort {
                        None | Some(ListSort::Path) => ListOrder::Path,
                        Some(ListSort::Oldest) => ListOrder::Oldest,
                    },
                }.run(m)
            })
            .await;
        answer(result, |r| {
            let out = ListOut::from(r);
            let text = render(&out);
            (out, text)
        })
    }
}

/// The text of a listing: one entry a line.
fn render(out: &ListOut) -> String {
    let mut s = String::new();
    super::unavailable_lines(&mut s, &out.unavailable_stores);
    let _ = writeln!(
        s,
        "{} of {} entr{}:",
        out.entries.len(),
        out.total,
        if out.total == 1 { "y" } else { "ies" }
    );
    for e in &out.entries {
        let _ = match e.kind {
            Kind::Dir => write!(
                s,
                "{}\t{} files, {} bytes",
                e.path,
                e.file_count.unwrap_or(0),
                e.size_bytes
            ),
            Kind::File => write!(
                s,
                "{}\t{} bytes\tupdated {}",
                e.path, e.size_bytes, e.updated_at
            ),
        };
        if e.expired {
            s.push_str("\t[EXPIRED]");
        }
        if let Some(t) = &e.kind_tag {
            let _ = write!(s, "\t[{t}]");
        }
        if let Some(n) = &e.name {
            let _ = write!(s, "\t{n}:");
        }
        if let Some(d) = &e.description {
            let _ = write!(s, "\t{d}");
        }
        s.push('\n');
    }
    if let Some(c) = &out.next_cursor {
        let _ = writeln!(
            s,
            "More entries: call memory_list again with cursor \"{c}\"."
        );
    }
    s
}
