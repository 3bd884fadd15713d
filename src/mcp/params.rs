//! Tool inputs as the model sees them: every `///` line here becomes schema text the model
//! reads, so they are written as instructions, with units, defaults and examples.

use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// A tool's arguments, parsed so that an error names the field it is about (rmcp's own
/// extractor says only "invalid type: string \"1\", expected i64"). rmcp turns an error
/// with its prefix `failed to deserialize parameters:` into an `isError` tool result,
/// which the model can read and act on.
pub struct Args<T>(pub T);

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Args<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        serde_path_to_error::deserialize(serde_json::Value::Object(arguments))
            .map(Args)
            .map_err(|e| {
                // Both can quote the argument itself (a string given for a number, a
                // field's name): cut, so the answer does not grow with what it answers.
                let field = crate::text::head_chars(&e.path().to_string(), 100);
                let error = crate::text::head_chars(&e.into_inner().to_string(), 400);
                let message = if field.is_empty() || field == "." {
                    error
                } else {
                    format!("`{field}`: {error}")
                };
                ErrorData::invalid_params(
                    format!("failed to deserialize parameters: {message}"),
                    None,
                )
            })
    }
}

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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to look for. Words are ANDed (relaxed to OR when no memory has them all);
    /// `"quoted phrase"` matches adjacent words; `pref*` matches word beginnings. Case and
    /// punctuation do not matter; Chinese, Japanese and Korean work without spaces.
    pub query: String,
    /// Only search under this folder (or in this file), e.g. `/memories/projects/`.
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Most hits to return (default 10, at most 100).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 100))]
    pub limit: Option<i64>,
    /// The `next_cursor` of a previous search, for more hits.
    #[serde(default)]
    #[schemars(with = "String")]
    pub cursor: Option<String>,
    /// Only memories whose frontmatter `type` is this, e.g. `project`.
    #[serde(default, rename = "type")]
    #[schemars(with = "String")]
    pub kind: Option<String>,
    /// Only memories whose frontmatter `tags` include this.
    #[serde(default)]
    #[schemars(with = "String")]
    pub tag: Option<String>,
    /// true = also return memories whose frontmatter `expires` date has passed (marked
    /// `expired`). Default false: expired memories are left out.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub include_expired: Option<bool>,
    /// Only memories last modified at or after this time: a date (`2026-03-01`, the start
    /// of that day in UTC) or an RFC 3339 date-time (`2026-03-01T09:00:00Z`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub updated_after: Option<String>,
    /// Only memories last modified before this time (a date or an RFC 3339 date-time).
    #[serde(default)]
    #[schemars(with = "String")]
    pub updated_before: Option<String>,
    /// Order of the hits: `relevance` (default; best match first) or `recent` (most
    /// recently modified first).
    #[serde(default)]
    #[schemars(with = "Sort")]
    pub sort: Option<Sort>,
}

/// How search hits are ordered.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    Relevance,
    Recent,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadParams {
    /// The memory to read, e.g. `/memories/notes/rust.md`.
    pub path: String,
    /// Optional `[start, end]` line range, 1-based and inclusive; `end` = -1 reads to the
    /// end. Example: `[10, 40]`. Omit to read the whole memory.
    #[serde(default)]
    #[schemars(with = "[i64; 2]")]
    pub view_range: Option<[i64; 2]>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteParams {
    /// Where to write, e.g. `/memories/notes/rust.md`. Missing folders are created.
    pub path: String,
    /// The whole new content (UTF-8 text, at most 100 KiB by default). Replaces what is there.
    #[serde(default)]
    #[schemars(with = "String")]
    pub content: Option<String>,
    /// true = only create: fail if a memory with other content is already at `path`.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub if_absent: Option<bool>,
    /// Replace only if the memory's current `content_sha256` is this (from memory_read or
    /// memory_list); on a mismatch nothing changes and the error gives the current hash.
    /// A write of the content already stored succeeds as a no-op even on a mismatch (a
    /// retry whose first reply was lost), and says so with `precondition_stale`.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// Instead of `content`: restore the content of this version (a number from
    /// memory_history), also of a deleted memory. The restore is itself a new version.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub restore_version: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditParams {
    /// The memory to change, e.g. `/memories/notes/rust.md`.
    pub path: String,
    /// Replace: the exact text to find (whitespace included). It must occur exactly once
    /// unless `replace_all` is true. Give `new_str` with it.
    #[serde(default)]
    #[schemars(with = "String")]
    pub old_str: Option<String>,
    /// Replace: the text to put in place of `old_str` (may be empty to delete it).
    #[serde(default)]
    #[schemars(with = "String")]
    pub new_str: Option<String>,
    /// Replace every occurrence of `old_str` instead of requiring exactly one.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub replace_all: Option<bool>,
    /// Insert: the line after which to insert (0 = before the first line). Give `insert_text` with it.
    #[serde(default)]
    #[schemars(with = "i64")]
    pub insert_line: Option<i64>,
    /// Insert: the lines to insert.
    #[serde(default)]
    #[schemars(with = "String")]
    pub insert_text: Option<String>,
    /// Append: text to add at the end (starts on a new line).
    #[serde(default)]
    #[schemars(with = "String")]
    pub append_text: Option<String>,
    /// Rename/move: the new path, e.g. `/memories/archive/rust.md`. Fails if it is taken.
    #[serde(default)]
    #[schemars(with = "String")]
    pub new_path: Option<String>,
    /// Apply only if the memory's current `content_sha256` is this.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteParams {
    /// The memory or folder to delete, e.g. `/memories/old.md` or `/memories/drafts/`
    /// (a folder is deleted with everything in it). Never a store itself.
    pub path: String,
    /// Delete a file only if its current `content_sha256` is this.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// Why it is deleted, in a sentence (at most 1,000 bytes), e.g. `superseded by
    /// notes/deploy-v2.md`. Kept in the history with the deletion and shown by
    /// memory_history.
    #[serde(default)]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

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
