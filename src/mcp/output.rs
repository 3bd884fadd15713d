//! Tool results as published in each tool's `outputSchema` and sent as
//! `structuredContent`, converted from the library's result types.

use schemars::JsonSchema;
use serde::Serialize;

use super::params::Operation;
use crate::memory::{
    DeleteResult, EditResult, HistoryResult, ListEntry, ListResult, ReadResult, SearchHit,
    SearchResult, Version, WriteResult,
};

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
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadOut {
    pub path: String,
    pub content: String,
    pub content_sha256: String,
    pub size_bytes: u64,
    pub total_lines: u64,
    pub start_line: u64,
    pub end_line: u64,
    pub updated_at: String,
    pub age_days: u64,
    /// The range was cut to fit one result: continue from `end_line + 1`.
    pub truncated: bool,
    /// The memory's frontmatter `expires`, as an RFC 3339 UTC time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expires_at: Option<String>,
    /// Present (true) when that time has passed: verify the memory, then update or
    /// delete it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOut {
    pub path: String,
    pub created: bool,
    pub content_sha256: String,
    pub size_bytes: u64,
    /// The memory already had this content; nothing was written.
    pub unchanged: bool,
    /// Present (true) when expected_sha256 named other content but the memory already
    /// held exactly this content: the write is a no-op. If your content was computed from
    /// what you read (a counter, a list), someone else made a change first: read again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub precondition_stale: bool,
    /// The history version this write made (absent for a no-op).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub version: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EditOut {
    pub path: String,
    /// The file's content hash; absent when a folder was moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub content_sha256: Option<String>,
    /// The file's size, or the total size of the files in a folder moved.
    pub size_bytes: u64,
    /// Present when a folder was moved: how many files moved with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub file_count: Option<u64>,
    /// The changed lines with 2 lines of context, numbered.
    pub snippet: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub renamed_from: Option<String>,
    pub unchanged: bool,
    /// Present when the memory already held a secret before this edit (stored by someone
    /// else): the edit was made, but that line should be removed. Names the rule and
    /// line, never the secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub warning: Option<String>,
    /// The history version this edit made (absent for a no-op).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub version: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteOut {
    pub path: String,
    pub deleted_files: Vec<String>,
    /// The history versions recording each file's deletion.
    pub versions: Vec<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct HitOut {
    pub path: String,
    /// Relevance relative to the best hit of this search (on every page): 1 for the
    /// best, e.g. 0.5 for a hit half as relevant (BM25).
    pub score: f64,
    /// The best matching line (1-based).
    pub line: u64,
    /// Up to 3 matching lines, numbered like memory_read.
    pub snippet: String,
    /// The memory's frontmatter `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub description: Option<String>,
    /// RFC 3339 UTC time of the last change.
    pub updated_at: String,
    /// Present (true) when the memory's frontmatter `expires` has passed (only with
    /// include_expired): it is likely out of date.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOut {
    pub hits: Vec<HitOut>,
    pub total_hits: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// No memory had every word; hits have some of them.
    pub relaxed: bool,
    /// Present (true) when the query went past what a search reads (its first 1,024
    /// bytes, 64 words or phrases, 16 words a phrase, 8 `prefix*` words): only that part
    /// was searched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub query_cut: bool,
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
        }
    }
}

impl From<ListResult> for ListOut {
    fn from(r: ListResult) -> Self {
        ListOut {
            entries: r.entries.into_iter().map(EntryOut::from).collect(),
            next_cursor: r.next_cursor,
            total: r.total as u64,
        }
    }
}

impl From<ReadResult> for ReadOut {
    fn from(r: ReadResult) -> Self {
        ReadOut {
            path: r.path,
            content: r.content,
            content_sha256: r.content_sha256,
            size_bytes: r.size_bytes,
            total_lines: r.total_lines as u64,
            start_line: r.start_line as u64,
            end_line: r.end_line as u64,
            updated_at: r.updated_at,
            age_days: r.age_days,
            truncated: r.truncated,
            expires_at: r.expires_at,
            expired: r.expired,
        }
    }
}

impl From<WriteResult> for WriteOut {
    fn from(r: WriteResult) -> Self {
        WriteOut {
            path: r.path,
            created: r.created,
            content_sha256: r.content_sha256,
            size_bytes: r.size_bytes,
            unchanged: r.unchanged,
            precondition_stale: r.precondition_stale,
            version: r.version,
        }
    }
}

impl From<EditResult> for EditOut {
    fn from(r: EditResult) -> Self {
        EditOut {
            path: r.path,
            content_sha256: r.content_sha256,
            size_bytes: r.size_bytes,
            file_count: r.file_count,
            snippet: r.snippet,
            renamed_from: r.renamed_from,
            unchanged: r.unchanged,
            warning: r.stored_secret.map(|(rule, line)| {
                format!(
                    "line {line} looks like a secret ({rule}) that was stored before this edit; remove it with memory_edit, or keep secrets out of memory"
                )
            }),
            version: r.version,
        }
    }
}

impl From<DeleteResult> for DeleteOut {
    fn from(r: DeleteResult) -> Self {
        DeleteOut {
            path: r.path,
            deleted_files: r.deleted_files,
            versions: r.versions,
        }
    }
}

impl From<SearchHit> for HitOut {
    fn from(h: SearchHit) -> Self {
        HitOut {
            path: h.path,
            score: h.score,
            line: h.line as u64,
            snippet: h.snippet,
            name: h.name,
            description: h.description,
            updated_at: h.updated_at,
            expired: h.expired,
        }
    }
}

impl From<SearchResult> for SearchOut {
    fn from(r: SearchResult) -> Self {
        SearchOut {
            hits: r.hits.into_iter().map(HitOut::from).collect(),
            total_hits: r.total_hits as u64,
            next_cursor: r.next_cursor,
            relaxed: r.relaxed,
            query_cut: r.query_cut,
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
