//! The `memory_*` tools: each parses its parameters, runs the library operation on a
//! blocking thread, and answers with `structuredContent` plus a compact text rendering.

use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use super::output::{DeleteOut, EditOut, HistoryOut, ListOut, ReadOut, SearchOut, WriteOut};
use super::params::{
    Args, DeleteParams, EditParams, HistoryParams, ListParams, ListSort, Operation, ReadParams,
    SearchParams, Sort, WriteParams,
};
use super::schema::{input, output};
use super::{MemdirServer, answer};
use crate::error::Error;
use crate::memory::{
    EditOp, EditRequest, HistoryRequest, ListOrder, ListRequest, RestoreRequest, SearchRequest,
    WriteRequest,
};
use crate::search::index::Order;

const DEFAULT_LIST_LIMIT: i64 = 200;
const MAX_LIST_LIMIT: i64 = 1000;
const DEFAULT_SEARCH_LIMIT: i64 = 10;
const MAX_SEARCH_LIMIT: i64 = 100;
const DEFAULT_HISTORY_LIMIT: i64 = 50;
const MAX_HISTORY_LIMIT: i64 = 500;

#[tool_router(vis = "pub(super)")]
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
                m.list(&ListRequest {
                    path: p.path.as_deref(),
                    depth,
                    limit,
                    cursor: p.cursor.as_deref(),
                    older_than_days,
                    order: match p.sort {
                        None | Some(ListSort::Path) => ListOrder::Path,
                        Some(ListSort::Oldest) => ListOrder::Oldest,
                    },
                })
            })
            .await;
        answer(result, |r| {
            let out = ListOut::from(r);
            let text = render::list(&out);
            (out, text)
        })
    }

    /// Full-text search of memory contents, ranked by relevance (BM25) or, with sort
    /// `recent`, newest first. Returns paths, the best matching lines (numbered) and
    /// descriptions. Words are ANDed, relaxed to OR when nothing has them all; "quoted
    /// phrases" and prefix* work; any text is a valid query. Memories whose frontmatter
    /// `expires` has passed are left out unless include_expired is true.
    #[tool(
        input_schema = input::<SearchParams>(),
        output_schema = output::<SearchOut>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_search(
        &self,
        Args(p): Args<SearchParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = p.query.clone();
        let progress = progress_reporter(&ctx);
        let result = self
            .run(move |m| {
                let limit = clamp(p.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, "limit")?;
                m.search(
                    &SearchRequest {
                        query: &p.query,
                        path: p.path.as_deref(),
                        limit,
                        cursor: p.cursor.as_deref(),
                        kind: p.kind.as_deref(),
                        tag: p.tag.as_deref(),
                        include_expired: p.include_expired.unwrap_or(false),
                        updated_after: p.updated_after.as_deref(),
                        updated_before: p.updated_before.as_deref(),
                        order: match p.sort {
                            None | Some(Sort::Relevance) => Order::Relevance,
                            Some(Sort::Recent) => Order::Recent,
                        },
                    },
                    &progress,
                )
            })
            .await;
        answer(result, |r| {
            let out = SearchOut::from(r);
            let text = render::search(&query, &out);
            (out, text)
        })
    }

    /// Read one memory with numbered lines (whole, or `view_range` [start, end]). The
    /// result includes content_sha256: pass it as expected_sha256 when you replace or edit
    /// the memory, so you never overwrite a change you have not seen.
    #[tool(
        input_schema = input::<ReadParams>(),
        output_schema = output::<ReadOut>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_read(&self, Args(p): Args<ReadParams>) -> Result<CallToolResult, ErrorData> {
        let result = self
            .run(move |m| m.read(&p.path, p.view_range.map(|[a, b]| (a, b))))
            .await;
        answer(result, |r| {
            let text = r.rendered.clone();
            (ReadOut::from(r), text)
        })
    }

    /// Create or replace a whole memory (missing folders are created). Use if_absent to
    /// create only, expected_sha256 to replace only what you last read. Writing the content
    /// a memory already has is a no-op.
    #[tool(
        input_schema = input::<WriteParams>(),
        output_schema = output::<WriteOut>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_write(
        &self,
        Args(p): Args<WriteParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let actor = actor(&ctx);
        let result = self
            .run(move |m| match (&p.content, p.restore_version) {
                (Some(content), None) => m.write(&WriteRequest {
                    path: &p.path,
                    content,
                    if_absent: p.if_absent.unwrap_or(false),
                    expected_sha256: p.expected_sha256.as_deref(),
                    actor: &actor,
                }),
                (None, Some(version)) if version >= 1 => m.restore(&RestoreRequest {
                    path: &p.path,
                    version: version as u64,
                    if_absent: p.if_absent.unwrap_or(false),
                    expected_sha256: p.expected_sha256.as_deref(),
                    actor: &actor,
                }),
                (None, Some(v)) => Err(Error::InvalidArgument(format!(
                    "restore_version must be a version number from memory_history, got {v}"
                ))),
                (Some(_), Some(_)) => Err(Error::InvalidArgument(
                    "give either content or restore_version, not both".into(),
                )),
                (None, None) => Err(Error::InvalidArgument(
                    "give the content to write (or restore_version to restore a version)".into(),
                )),
            })
            .await;
        answer(result, |r| {
            let out = WriteOut::from(r);
            let text = render::write(&out);
            (out, text)
        })
    }

    /// Change part of a memory with exactly one operation: old_str + new_str (replace text
    /// that occurs exactly once, or every occurrence with replace_all), insert_line +
    /// insert_text (insert after a line; 0 = at the top), append_text (add at the end), or
    /// new_path (rename/move; fails if taken). Returns the changed lines with context.
    #[tool(
        input_schema = input::<EditParams>(),
        output_schema = output::<EditOut>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn memory_edit(
        &self,
        Args(p): Args<EditParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let actor = actor(&ctx);
        let result = self
            .run(move |m| {
                let op = edit_op(&p)?;
                m.edit(&EditRequest {
                    path: &p.path,
                    op,
                    expected_sha256: p.expected_sha256.as_deref(),
                    actor: &actor,
                })
            })
            .await;
        answer(result, |r| {
            let out = EditOut::from(r);
            let text = render::edit(&out);
            (out, text)
        })
    }

    /// Delete a memory, or a folder with everything in it. Never a store itself.
    #[tool(
        input_schema = input::<DeleteParams>(),
        output_schema = output::<DeleteOut>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn memory_delete(
        &self,
        Args(p): Args<DeleteParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let actor = actor(&ctx);
        let result = self
            .run(move |m| {
                m.delete(
                    &p.path,
                    p.expected_sha256.as_deref(),
                    p.reason.as_deref(),
                    &actor,
                )
            })
            .await;
        answer(result, |r| {
            let out = DeleteOut::from(r);
            let text = render::delete(&out);
            (out, text)
        })
    }

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
                m.history(&HistoryRequest {
                    path: p.path.as_deref(),
                    limit,
                    cursor: p.cursor.as_deref(),
                    version,
                    operation: p.operation.map(Operation::op),
                    actor: p.actor.as_deref(),
                    since: p.since.as_deref(),
                    until: p.until.as_deref(),
                })
            })
            .await;
        answer(result, |r| {
            let out = HistoryOut::from(r);
            let text = render::history(&out);
            (out, text)
        })
    }
}

/// The actor recorded in the history for a request: the client's `clientInfo`, from the
/// request's own `_meta` when it carries one (every request of the 2026-07-28 era, which
/// has no handshake, does) or else from `initialize`.
pub(super) fn actor(ctx: &RequestContext<RoleServer>) -> String {
    if let Some(actor) = super::transport::http::actor(ctx) {
        return actor;
    }
    match ctx.client_info() {
        Some(info) if !info.name.is_empty() => format!("{}/{}", info.name, info.version),
        _ => "unknown-client".into(),
    }
}

/// The one edit operation the parameters name; anything else is a clear error.
fn edit_op(p: &EditParams) -> Result<EditOp<'_>, Error> {
    let mut ops = Vec::new();
    if p.old_str.is_some() || p.new_str.is_some() || p.replace_all.is_some() {
        match (&p.old_str, &p.new_str) {
            (Some(old), Some(new)) => ops.push(EditOp::Replace {
                old,
                new,
                all: p.replace_all.unwrap_or(false),
            }),
            (Some(_), None) => {
                return Err(Error::InvalidArgument(
                    "old_str needs new_str (use an empty new_str to delete the text)".into(),
                ));
            }
            _ => {
                return Err(Error::InvalidArgument(
                    "new_str and replace_all need old_str".into(),
                ));
            }
        }
    }
    if p.insert_line.is_some() || p.insert_text.is_some() {
        match (p.insert_line, &p.insert_text) {
            (Some(after_line), Some(text)) => ops.push(EditOp::Insert { after_line, text }),
            _ => {
                return Err(Error::InvalidArgument(
                    "insert_line and insert_text go together (insert_line 0 = at the top)".into(),
                ));
            }
        }
    }
    if let Some(text) = &p.append_text {
        ops.push(EditOp::Append { text });
    }
    if let Some(new_path) = &p.new_path {
        ops.push(EditOp::Rename { new_path });
    }
    match ops.len() {
        1 => Ok(ops.remove(0)),
        0 => Err(Error::InvalidArgument(
            "say what to change: old_str + new_str, insert_line + insert_text, append_text, or new_path".into(),
        )),
        _ => Err(Error::InvalidArgument(
            "give exactly one operation per call: old_str + new_str, insert_line + insert_text, append_text, or new_path".into(),
        )),
    }
}

/// Sends `notifications/progress` for a request that asked for them (a `progressToken`
/// in its `_meta`), from any thread; nothing once the request is cancelled or the client
/// has gone.
fn progress_reporter(
    ctx: &RequestContext<RoleServer>,
) -> impl Fn(u64, u64) + Sync + Send + 'static {
    let token = ctx.meta.get_progress_token();
    let peer = ctx.peer.clone();
    let cancelled = ctx.ct.clone();
    let runtime = tokio::runtime::Handle::current();
    move |done, total| {
        let Some(token) = token.clone() else { return };
        if cancelled.is_cancelled() {
            return;
        }
        let peer = peer.clone();
        let param = ProgressNotificationParam::new(token, done as f64)
            .with_total(total as f64)
            .with_message(format!("indexing memories: {done} of {total} files"));
        runtime.spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }
}

fn clamp(value: Option<i64>, default: i64, max: i64, name: &str) -> Result<usize, Error> {
    match value {
        None => Ok(default as usize),
        Some(v) if (1..=max).contains(&v) => Ok(v as usize),
        Some(v) => Err(Error::InvalidArgument(format!(
            "{name} must be between 1 and {max}, got {v}"
        ))),
    }
}

/// Compact text renderings of the results, for models that read only the text.
mod render {
    use std::fmt::Write as _;

    use super::super::output::{
        DeleteOut, EditOut, HistoryOut, Kind, ListOut, SearchOut, WriteOut,
    };

    pub fn list(out: &ListOut) -> String {
        let mut s = format!(
            "{} of {} entr{}:\n",
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

    pub fn search(query: &str, out: &SearchOut) -> String {
        let mut s = String::new();
        if out.query_cut {
            s.push_str("The query is longer than a search reads: only its first 1,024 bytes, 64 words or phrases, 16 words of a phrase and 8 prefix* words were searched.\n");
        }
        if out.total_hits == 0 {
            let shown = crate::text::head_chars(query, 200);
            let _ = write!(s, "No memory matches {shown:?}.");
            return s;
        }
        if out.relaxed {
            s.push_str(
                "No memory contains every word; showing memories that contain some of them.\n",
            );
        }
        let _ = writeln!(s, "{} of {} hits:", out.hits.len(), out.total_hits);
        for h in &out.hits {
            let _ = write!(s, "\n{} (score {}", h.path, score(h.score));
            if h.expired {
                s.push_str(", EXPIRED");
            }
            s.push(')');
            if let Some(n) = &h.name {
                let _ = write!(s, " {n}");
            }
            match &h.description {
                Some(d) => {
                    let _ = writeln!(s, " — {d}");
                }
                None => s.push('\n'),
            }
            s.push_str(&h.snippet);
            s.push('\n');
        }
        if let Some(c) = &out.next_cursor {
            let _ = writeln!(s, "\nMore hits: search again with cursor \"{c}\".");
        }
        s
    }

    pub fn history(out: &HistoryOut) -> String {
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

    /// A relative score with three decimals (the best hit is 1.000).
    fn score(x: f64) -> String {
        format!("{x:.3}")
    }

    pub fn write(out: &WriteOut) -> String {
        let verb = if out.unchanged {
            "Unchanged (already this content)"
        } else if out.created {
            "Created"
        } else {
            "Replaced"
        };
        let version = out
            .version
            .map(|v| format!(", version {v}"))
            .unwrap_or_default();
        let mut text = format!(
            "{verb}: {} ({} bytes, content_sha256 {}{version})",
            out.path, out.size_bytes, out.content_sha256
        );
        if out.precondition_stale {
            text.push_str("\nNote: expected_sha256 did not match the content you last read, but the memory already holds exactly this content, so nothing was written. If you computed this content from what you read, someone else changed it first: read it again before building on it.");
        }
        text.push_str(hidden_note(&out.path));
        text
    }

    /// A note for a memory whose path has a hidden segment (`.name`, `node_modules`):
    /// it is kept, and readable by its path, but list and search skip it.
    fn hidden_note(path: &str) -> &'static str {
        let hidden = path
            .split('/')
            .skip(2)
            .any(|segment| !segment.is_empty() && !crate::store::visible_name(segment));
        if hidden {
            "\nNote: a name starting with `.` or a `node_modules` folder is hidden: memory_list and memory_search skip it; memory_read still reads it by its path."
        } else {
            ""
        }
    }

    pub fn edit(out: &EditOut) -> String {
        let sha = out.content_sha256.as_deref().unwrap_or_default();
        if let Some(from) = &out.renamed_from {
            let what = match out.file_count {
                Some(n) => format!(
                    ": a folder with {n} file{} ({} bytes)",
                    if n == 1 { "" } else { "s" },
                    out.size_bytes
                ),
                None => format!(" ({} bytes, content_sha256 {sha})", out.size_bytes),
            };
            return format!(
                "Renamed {from} to {}{what}{}",
                out.path,
                hidden_note(&out.path)
            );
        }
        let head = if out.unchanged {
            "Unchanged (the edit produced the same content)"
        } else {
            "Edited"
        };
        let mut text = format!(
            "{head}: {} ({} bytes, content_sha256 {sha}). Snippet of the change:\n{}",
            out.path, out.size_bytes, out.snippet
        );
        if let Some(w) = &out.warning {
            text.push_str(&format!("\nWarning: {w}."));
        }
        text
    }

    /// Files named in the text of a folder deletion; the rest are only counted.
    const LISTED_DELETIONS: usize = 100;

    pub fn delete(out: &DeleteOut) -> String {
        match out.deleted_files.as_slice() {
            [one] if *one == out.path => format!("Deleted {}", out.path),
            files => {
                let mut text = format!(
                    "Deleted {} with {} file(s): {}",
                    out.path,
                    files.len(),
                    files[..files.len().min(LISTED_DELETIONS)].join(", ")
                );
                if files.len() > LISTED_DELETIONS {
                    text.push_str(&format!(
                        " and {} more (all are in deleted_files)",
                        files.len() - LISTED_DELETIONS
                    ));
                }
                text
            }
        }
    }
}
