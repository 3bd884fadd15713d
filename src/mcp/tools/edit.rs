//! `memory_edit`: its parameters (exactly one operation), its call and its text.

use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::answer;
use super::args::Args;
use super::schema::{input, output};
use super::write::hidden_note;
use crate::error::Error;
use crate::mcp::server::MemdirServer;
use crate::memory::{EditOp, EditRequest, EditResult};

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
    /// Apply only if the memory's current `content_sha256` is this (from memory_read or
    /// memory_list); any mismatch is an error that changes nothing and gives the current
    /// hash: read the memory again and retry.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
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

#[tool_router(router = edit_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
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
        let actor = self.actor(&ctx);
        let result = self
            .run(move |m| {
                let op = edit_op(&p)?;
                EditRequest {
                    path: &p.path,
                    op,
                    expected_sha256: p.expected_sha256.as_deref(),
                    actor: &actor,
                }
                .run(m)
            })
            .await;
        answer(result, |r| {
            let out = EditOut::from(r);
            let text = render(&out);
            (out, text)
        })
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
        if text.is_empty() {
            return Err(Error::InvalidArgument(
                "append_text is empty: give the text to add at the end".into(),
            ));
        }
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

/// The text of an edit: what changed, and the changed lines.
fn render(out: &EditOut) -> String {
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
