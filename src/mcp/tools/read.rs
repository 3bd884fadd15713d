//! `memory_read`: its parameters, its call and its result; its text is `crate::render`'s,
//! which `memdir read` shows too.

use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::answer;
use super::args::Args;
use super::schema::{input, output};
use crate::mcp::server::MemdirServer;
use crate::memory::ReadResult;
use crate::memory::read::read;
use crate::render;

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

#[tool_router(router = read_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// Read one memory with numbered lines (whole, or `view_range` [start, end]). The
    /// result includes content_sha256: pass it as expected_sha256 when you replace or edit
    /// the memory, so you never overwrite a change you have not seen.
    #[tool(
        input_schema = input::<ReadParams>(),
        output_schema = output::<ReadOut>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_read(&self, Args(p): Args<ReadParams>) -> Result<CallToolResult, ErrorData> {
        let range = p.view_range.map(|[a, b]| (a, b));
        let result = self
            .run(move |m| read(m, &p.path, range, &render::read_notes_len))
            .await;
        answer(result, |r| {
            let mut text = render::read(&r, range);
            if r.total_lines == 0 {
                // No text at all would read as a failed call (the CLI says so its way).
                text.push_str("[The memory is empty: 0 lines.]");
            }
            (ReadOut::from(r), text)
        })
    }
}
