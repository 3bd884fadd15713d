//! `memory_write`: its parameters, its call (a write or a restore) and its text.

use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::answer;
use super::args::Args;
use super::schema::{input, output};
use crate::error::Error;
use crate::mcp::server::MemdirServer;
use crate::memory::{RestoreRequest, WriteRequest, WriteResult};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteParams {
    /// Where to write, e.g. `/memories/notes/rust.md`. Missing folders are created.
    pub path: String,
    /// The whole new content (UTF-8 text, at most 100 KiB by default). Replaces what is there.
    #[serde(default)]
    #[schemars(with = "String")]
    pub content: Option<String>,
    /// true = only create: fail if any memory is already at `path` (even one with exactly
    /// this content: the error then says so, and gives its content_sha256).
    #[serde(default)]
    #[schemars(with = "bool")]
    pub if_absent: Option<bool>,
    /// Replace only if the memory's current `content_sha256` is this (from memory_read or
    /// memory_list). Any mismatch is an error that changes nothing and gives the current
    /// hash: read the memory again and retry. This holds even when the memory already has
    /// exactly the content you send (the error then says so: a retry whose first reply
    /// was lost had landed; a change you computed from an old read was made by someone
    /// else first).
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// Instead of `content`: restore the content of this version (a number from
    /// memory_history), also of a deleted memory. The restore is itself a new version.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub restore_version: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOut {
    pub path: String,
    pub created: bool,
    pub content_sha256: String,
    pub size_bytes: u64,
    /// The memory already had this content (and expected_sha256, if given, matched it);
    /// nothing was written.
    pub unchanged: bool,
    /// The history version this write made (absent for a no-op).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub version: Option<u64>,
}

impl From<WriteResult> for WriteOut {
    fn from(r: WriteResult) -> Self {
        WriteOut {
            path: r.path,
            created: r.created,
            content_sha256: r.content_sha256,
            size_bytes: r.size_bytes,
            unchanged: r.unchanged,
            version: r.version,
        }
    }
}

#[tool_router(router = write_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// Create or replace a whole memory (missing folders are created). Use if_absent to
    /// create only, expected_sha256 to replace only what you last read (a mismatch always
    /// fails). Without them, writing the content a memory already has is a no-op.
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
        let actor = self.actor(&ctx);
        let result = self
            .run(move |m| match (&p.content, p.restore_version) {
                (Some(content), None) => WriteRequest {
                    path: &p.path,
                    content,
                    if_absent: p.if_absent.unwrap_or(false),
                    expected_sha256: p.expected_sha256.as_deref(),
                    actor: &actor,
                }
                .run(m),
                (None, Some(version)) if version >= 1 => RestoreRequest {
                    path: &p.path,
                    version: version as u64,
                    if_absent: p.if_absent.unwrap_or(false),
                    expected_sha256: p.expected_sha256.as_deref(),
                    actor: &actor,
                }
                .run(m),
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
            let text = render(&out);
            (out, text)
        })
    }
}

/// The text of a write: what happened, with the new hash and version.
fn render(out: &WriteOut) -> String {
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
    text.push_str(hidden_note(&out.path));
    text
}

/// A note for a memory whose path has a hidden segment (`.name`, `node_modules`):
/// it is kept, and readable by its path, but list and search skip it.
pub(super) fn hidden_note(path: &str) -> &'static str {
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
