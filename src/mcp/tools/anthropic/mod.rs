//! The compatibility profile (`--tools anthropic` or `all`): Anthropic's memory tool
//! (`memory_20250818`) as one MCP tool named `memory`, whose `command` is `view`, `create`,
//! `str_replace`, `insert`, `delete` or `rename`. Claude models are trained on that tool,
//! so its results and errors are that tool's strings, byte for byte
//! (docs/anthropic-memory-tool.md). It runs the same library operations as the `memory_*`
//! tools, on the same stores, with the same confinement, durability and history.
//!
//! Paths: `/memories` is the first store whatever its name; every other store is
//! `/<name>`. Results name paths as the agent wrote them.
//!
//! Layout: this file is the tool (its parameters and commands); `paths` maps agent paths
//! onto the stores and words errors as the tool does; `view` shows files and folders;
//! `change` runs the commands that change memories.

mod change;
mod paths;
mod view;

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use self::change::{create, delete, insert, rename, str_replace};
use self::view::view;
use super::args::Args;
use super::schema::input;
use crate::mcp::server::MemdirServer;
use crate::memory::Memdir;

/// The input of Anthropic's memory tool: a command and its fields.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryParams {
    /// What to do: `view` (a file with numbered lines, or a folder two levels deep),
    /// `create` (a new file), `str_replace` (replace text that occurs exactly once),
    /// `insert` (add lines after a line), `delete` (a file or a folder), `rename` (move).
    #[schemars(with = "Command")]
    pub command: String,
    /// The file or folder, starting with `/memories`, e.g. `/memories/notes.md`
    /// (view, create, str_replace, insert, delete).
    #[serde(default)]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// view: optional `[start, end]` lines of a file, 1-based and inclusive; `end` = -1
    /// reads to the end of the file. Parsed as any JSON value, so that a range of the
    /// wrong kind gets the tool's own error string rather than a decoding error.
    #[serde(default)]
    #[schemars(with = "[i64; 2]")]
    pub view_range: Option<serde_json::Value>,
    /// create: the content of the new file.
    #[serde(default)]
    #[schemars(with = "String")]
    pub file_text: Option<String>,
    /// str_replace: the exact text to replace; it must occur exactly once in the file.
    #[serde(default)]
    #[schemars(with = "String")]
    pub old_str: Option<String>,
    /// str_replace: the text to put in its place (may be empty).
    #[serde(default)]
    #[schemars(with = "String")]
    pub new_str: Option<String>,
    /// insert: the line after which to insert (0 = before the first line).
    #[serde(default)]
    #[schemars(with = "i64")]
    pub insert_line: Option<i64>,
    /// insert: the text to insert, as whole lines.
    #[serde(default)]
    #[schemars(with = "String")]
    pub insert_text: Option<String>,
    /// rename: the file or folder to move, e.g. `/memories/draft.md`.
    #[serde(default)]
    #[schemars(with = "String")]
    pub old_path: Option<String>,
    /// rename: where to move it; it must not exist yet (missing folders are created).
    #[serde(default)]
    #[schemars(with = "String")]
    pub new_path: Option<String>,
}

// The commands, for the schema (the parameter itself is parsed as a string so that an
// unknown command gets the tool's own error, not a protocol error).
#[derive(JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Command {
    View,
    Create,
    StrReplace,
    Insert,
    Delete,
    Rename,
}

#[tool_router(router = anthropic_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// Anthropic's memory tool: a memory directory at /memories that outlives this
    /// conversation. Commands: view (a file with numbered lines, or a folder two levels
    /// deep), create, str_replace, insert, delete, rename. View /memories before starting
    /// a task to see what you learned before, and record progress as you go: your context
    /// may end at any moment.
    #[tool(
        name = "memory",
        input_schema = input::<MemoryParams>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn memory(
        &self,
        Args(p): Args<MemoryParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let actor = self.actor(&ctx);
        let result = self.run(move |m| Ok(run(m, &p, &actor))).await;
        Ok(match result.unwrap_or_else(|e| Err(e.to_string())) {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        })
    }
}

/// A JSON value's integers if it is a list of integers only (`view` refuses any list
/// but one of two); anything else is an empty list.
fn integers(v: &serde_json::Value) -> Vec<i64> {
    let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
    let ints: Option<Vec<i64>> = items.iter().map(serde_json::Value::as_i64).collect();
    ints.unwrap_or_default()
}

/// Runs one command: the tool's success string, or its error string.
fn run(m: &Memdir, p: &MemoryParams, actor: &str) -> Result<String, String> {
    let required = |field: Option<&String>, name: &str| {
        field
            .cloned()
            .ok_or_else(|| format!("Parameter `{name}` is required for command: {}", p.command))
    };
    let path = || required(p.path.as_ref(), "path");
    match p.command.as_str() {
        "view" => {
            let range = p.view_range.as_ref().map(integers);
            view(m, &path()?, range.as_deref())
        }
        "create" => {
            let path = path()?;
            let text = required(p.file_text.as_ref(), "file_text")?;
            create(m, &path, &text, actor)
        }
        "str_replace" => {
            let path = path()?;
            let old = required(p.old_str.as_ref(), "old_str")?;
            let new = required(p.new_str.as_ref(), "new_str")?;
            str_replace(m, &path, &old, &new, actor)
        }
        "insert" => {
            let path = path()?;
            let line = p
                .insert_line
                .ok_or("Parameter `insert_line` is required for command: insert")?;
            let text = required(p.insert_text.as_ref(), "insert_text")?;
            insert(m, &path, line, &text, actor)
        }
        "delete" => delete(m, &path()?, actor),
        "rename" => {
            let from = required(p.old_path.as_ref(), "old_path")?;
            let to = required(p.new_path.as_ref(), "new_path")?;
            rename(m, &from, &to, actor)
        }
        other => Err(format!(
            "Unrecognized command {}. The allowed commands for the memory tool are: view, create, str_replace, insert, delete, rename",
            crate::text::head_chars(other, 100)
        )),
    }
}
