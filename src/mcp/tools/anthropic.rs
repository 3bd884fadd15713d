//! The compatibility profile (`--tools anthropic` or `all`): Anthropic's memory tool
//! (`memory_20250818`) as one MCP tool named `memory`, whose `command` is `view`, `create`,
//! `str_replace`, `insert`, `delete` or `rename`. Claude models are trained on that tool,
//! so its results and errors are that tool's strings, byte for byte
//! (ANTHROPIC_MEMORY_TOOL.md). It runs the same library operations as the `memory_*`
//! tools, on the same stores, with the same confinement, durability and history.
//!
//! Paths: `/memories` is the first store whatever its name; every other store is
//! `/<name>`. Results name paths as the agent wrote them.

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::actor;
use super::args::Args;
use super::schema::input;
use crate::error::{EditFault, Error};
use crate::mcp::MemdirServer;
use crate::memory::{EditOp, EditRequest, Freshness, Memdir, WriteRequest};
use crate::render;
use crate::text;

/// The root every agent path of this profile starts with: the first store.
const ROOT: &str = "/memories";
/// The memory tool refuses to show files with more lines than this.
const MAX_LINES: usize = 999_999;
/// Characters of `old_str` quoted back in an error (the tool quotes it whole; a result
/// must still fit the result budget).
const QUOTED_CHARS: usize = 2_000;
/// Bytes of the result budget kept for the note that ends a view cut short.
const NOTE_ROOM: usize = 200;

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
    /// reads to the end of the file.
    #[serde(default)]
    #[schemars(with = "[i64; 2]")]
    pub view_range: Option<Vec<i64>>,
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

#[tool_router(router = anthropic_router, vis = "pub(super)")]
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
        let actor = actor(&ctx);
        let result = self.run(move |m| Ok(run(m, &p, &actor))).await;
        Ok(match result.unwrap_or_else(|e| Err(e.to_string())) {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        })
    }
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
        "view" => view(m, &path()?, p.view_range.as_deref()),
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

/// An agent path mapped onto the stores.
struct Mapped<'a> {
    /// As the agent wrote it: results and errors name this.
    shown: &'a str,
    /// The canonical `/<store>/...` path the library takes.
    canonical: String,
    /// The root the agent path starts with (`/memories`, or `/<store>`).
    root: String,
    /// The canonical root of the store it maps to (`/<store>`).
    store_root: String,
}

impl Mapped<'_> {
    fn is_root(&self) -> bool {
        self.shown.trim_end_matches('/') == self.root
    }

    /// A library error in the tool's words where it has words for it, else memdir's
    /// message naming the path as the agent wrote it.
    fn error(&self, e: Error, not_found: &str) -> String {
        match e {
            Error::NotFound { .. } => not_found.to_owned(),
            Error::Escape { .. } => self.escape(),
            other => self.renamed(other.to_string()),
        }
    }

    fn escape(&self) -> String {
        format!("Path {} would escape {} directory", self.shown, self.root)
    }

    /// `message` with paths in the agent's terms: the store's canonical root (`/notes`)
    /// written as the root the agent uses for it (`/memories`), wherever it starts a path.
    fn renamed(&self, message: String) -> String {
        if self.store_root == self.root {
            return message;
        }
        let mut out = String::with_capacity(message.len());
        let mut rest = message.as_str();
        while let Some(at) = rest.find(&self.store_root) {
            let after = &rest[at + self.store_root.len()..];
            let before = rest[..at].chars().next_back();
            let starts_path = !before.is_some_and(|c| c.is_alphanumeric() || c == '/');
            let ends_segment = after
                .chars()
                .next()
                .is_none_or(|c| matches!(c, '/' | '`' | ' ' | ',' | ';' | ')' | '\''));
            out.push_str(&rest[..at]);
            out.push_str(if starts_path && ends_segment {
                &self.root
            } else {
                &self.store_root
            });
            rest = after;
        }
        out.push_str(rest);
        out
    }
}

/// Maps an agent path: `/memories[/...]` is the first store, `/<name>[/...]` another.
fn map<'a>(m: &Memdir, shown: &'a str) -> Result<Mapped<'a>, String> {
    let stores = m.stores();
    let under = |root: &str| {
        shown
            .strip_prefix(root)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .map(str::to_owned)
    };
    let (root, store_root, canonical) = if let Some(rest) = under(ROOT) {
        let store_root = format!("/{}", stores[0].name);
        let canonical = format!("{store_root}{rest}");
        (ROOT.to_owned(), store_root, canonical)
    } else {
        stores
            .iter()
            .skip(1)
            .map(|s| format!("/{}", s.name))
            .find(|root| root != ROOT && under(root).is_some())
            .map(|root| (root.clone(), root, shown.to_owned()))
            .ok_or_else(|| {
                // Cut only where no path could be valid: the answer does not grow with
                // what it answers.
                let shown = crate::text::head_chars(shown, 1100);
                format!("Path must start with {ROOT}, got: {shown}")
            })?
    };
    let mapped = Mapped {
        shown,
        canonical,
        root,
        store_root,
    };
    if shown.split('/').any(|segment| segment == "..") {
        return Err(mapped.escape());
    }
    Ok(mapped)
}

fn missing(shown: &str) -> String {
    format!("The path {shown} does not exist. Please provide a valid path.")
}

fn view(m: &Memdir, shown: &str, range: Option<&[i64]>) -> Result<String, String> {
    let at = map(m, shown)?;
    match m.tree(&at.canonical, 2) {
        Ok(tree) => return Ok(folder(m, &at, &tree)),
        Err(Error::NotAFolder { .. }) => {}
        Err(e) => return Err(at.error(e, &missing(shown))),
    }
    let range = match range {
        None => None,
        // The tool reads a start before line 1 as line 1.
        Some(&[start, end]) => Some((start.max(1), end)),
        Some(_) => return Err("Invalid `view_range`. It should be a list of two integers.".into()),
    };
    let header = format!("Here's the content of {shown} with line numbers:\n");
    // Room is kept for memory_read's notes as well, though this view does not show them:
    // both tools cut a long memory at the same line.
    let room = |freshness: Freshness<'_>| header.len() + render::read_notes_len(freshness);
    let read = m
        .read(&at.canonical, range, &room)
        .map_err(|e| at.error(e, &missing(shown)))?;
    if read.total_lines > MAX_LINES {
        return Err(format!(
            "File {shown} exceeds maximum line limit of 999,999 lines."
        ));
    }
    let lines = text::lines(&read.content);
    let mut out = header;
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        text::numbered_line(&mut out, read.start_line + i, line);
    }
    if let Some((n, len, shown_bytes)) = read.long_line {
        out.push_str(&format!(
            "\n[Line {n} is {len} bytes, longer than one result can hold: only its first {shown_bytes} bytes are shown.{} To change it, use str_replace with old_str taken from the part shown.]",
            if n < read.total_lines {
                format!(" The next lines continue with view_range [{}, -1].", n + 1)
            } else {
                String::new()
            }
        ));
    } else if read.truncated {
        out.push_str(&format!(
            "\n[Showing lines {}-{} of {}: the rest does not fit in one result. View the rest with view_range [{}, -1].]",
            read.start_line,
            read.end_line,
            read.total_lines,
            read.end_line + 1
        ));
    }
    Ok(out)
}

/// A folder two levels deep: its total size and path, then each entry's.
fn folder(m: &Memdir, at: &Mapped, tree: &crate::memory::Tree) -> String {
    let mut out = format!(
        "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:\n{}\t{}",
        at.shown,
        human_size(tree.size_bytes),
        at.shown
    );
    let base = at.shown.trim_end_matches('/');
    let budget = m.settings.result_budget.saturating_sub(NOTE_ROOM);
    for (i, e) in tree.entries.iter().enumerate() {
        let line = format!(
            "\n{}\t{base}/{}{}",
            human_size(e.size_bytes),
            e.rel,
            if e.is_dir { "/" } else { "" }
        );
        if out.len() + line.len() > budget {
            out.push_str(&format!(
                "\n[... {} more entries not shown: view a subfolder to see them]",
                tree.entries.len() - i
            ));
            break;
        }
        out.push_str(&line);
    }
    out
}

/// Sizes as the tool prints them: `512B`, `1.5K`, `4.0K`, `2.1M`.
fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    // 1023.96K prints as 1.0M, not 1024.0K.
    while size >= 1023.95 && unit < 3 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1}{}", ['K', 'M', 'G', 'T'][unit])
}

fn create(m: &Memdir, shown: &str, content: &str, actor: &str) -> Result<String, String> {
    let at = map(m, shown)?;
    let exists = || format!("File {shown} already exists");
    if at.is_root() {
        return Err(exists());
    }
    let written = m.write(&WriteRequest {
        path: &at.canonical,
        content,
        if_absent: true,
        expected_sha256: None,
        actor,
    });
    match written {
        // A create-only write of the content already there is a no-op; the tool says
        // the file exists.
        Ok(w) if w.created => Ok(format!("File created successfully at: {shown}")),
        Ok(_)
        | Err(Error::Occupied { .. } | Error::AlreadyExists { .. } | Error::IsFolder { .. }) => {
            Err(exists())
        }
        Err(e) => Err(at.error(e, &missing(shown))),
    }
}

/// Runs a content edit of the file at `at`, with the tool's errors for a missing path
/// and a folder.
fn edit(m: &Memdir, at: &Mapped, op: EditOp, actor: &str) -> Result<String, String> {
    let not_a_file = || format!("The path {} is not a file.", at.shown);
    if at.is_root() || at.shown.ends_with('/') {
        return Err(not_a_file());
    }
    m.edit(&EditRequest {
        path: &at.canonical,
        op,
        expected_sha256: None,
        actor,
    })
    .map(|edited| edited.snippet)
    .map_err(|e| match e {
        Error::IsFolder { .. } => not_a_file(),
        Error::Edit(EditFault::NoMatch { old, .. }) => format!(
            "No replacement was performed, old_str `{}` did not appear verbatim in {}.",
            text::head_chars(&old, QUOTED_CHARS),
            at.shown
        ),
        Error::Edit(EditFault::Ambiguous {
            old,
            lines,
            more_lines,
            count,
            ..
        }) => {
            // The tool's words list each line once; past the listed lines, the count.
            let mut numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
            if more_lines {
                numbers.push(format!("… ({count} occurrences in all)"));
            }
            format!(
                "No replacement was performed. Multiple occurrences of old_str `{}` in lines: {}. Please ensure it is unique",
                text::head_chars(&old, QUOTED_CHARS),
                numbers.join(", ")
            )
        }
        e => at.error(e, &missing(at.shown)),
    })
}

fn str_replace(
    m: &Memdir,
    shown: &str,
    old: &str,
    new: &str,
    actor: &str,
) -> Result<String, String> {
    let at = map(m, shown)?;
    let op = EditOp::Replace {
        old,
        new,
        all: false,
    };
    let snippet = edit(m, &at, op, actor)?;
    Ok(format!(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{snippet}"
    ))
}

fn insert(m: &Memdir, shown: &str, line: i64, text: &str, actor: &str) -> Result<String, String> {
    let at = map(m, shown)?;
    let op = EditOp::Insert {
        after_line: line,
        text,
    };
    edit(m, &at, op, actor)?;
    Ok(format!("The file {shown} has been edited."))
}

fn delete(m: &Memdir, shown: &str, actor: &str) -> Result<String, String> {
    let at = map(m, shown)?;
    if at.is_root() {
        return Err(format!("Cannot delete the {} directory itself", at.root));
    }
    m.delete(&at.canonical, None, None, actor)
        .map(|_| format!("Successfully deleted {shown}"))
        .map_err(|e| at.error(e, &format!("The path {shown} does not exist")))
}

fn rename(m: &Memdir, from: &str, to: &str, actor: &str) -> Result<String, String> {
    let source = map(m, from)?;
    let target = map(m, to)?;
    let taken = || format!("The destination {to} already exists");
    if source.canonical.trim_end_matches('/') == target.canonical.trim_end_matches('/') {
        // Onto itself: taken if it exists at all.
        return Err(match m.tree(&source.canonical, 1) {
            Ok(_) | Err(Error::NotAFolder { .. }) => taken(),
            Err(e) => source.error(e, &format!("The path {from} does not exist")),
        });
    }
    let moved = m.edit(&EditRequest {
        path: &source.canonical,
        op: EditOp::Rename {
            new_path: &target.canonical,
        },
        expected_sha256: None,
        actor,
    });
    match moved {
        Ok(_) => Ok(format!("Successfully renamed {from} to {to}")),
        Err(Error::AlreadyExists { .. }) => Err(taken()),
        Err(e @ Error::Escape { .. }) => Err(match e {
            Error::Escape { path } if path == target.canonical => target.escape(),
            _ => source.escape(),
        }),
        Err(e) => Err(target.renamed(source.error(e, &format!("The path {from} does not exist")))),
    }
}

#[cfg(test)]
mod tests {
    use super::human_size;

    #[test]
    fn sizes_read_like_the_memory_tool() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(1023), "1023B");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(4096), "4.0K");
        assert_eq!(human_size(2_200_000), "2.1M");
        assert_eq!(human_size(1_048_575), "1.0M");
        assert_eq!(human_size(1_048_500), "1023.9K");
    }
}
