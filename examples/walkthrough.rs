//! # A walk through memdir's tools
//!
//! memdir is an MCP server: an AI agent's client application starts it as a child process
//! and talks JSON-RPC to it over stdin/stdout. This example plays the client's part with
//! the [rmcp](https://docs.rs/rmcp) client, exactly as an agent's host would, and walks
//! through the life of one memory:
//!
//! write → read → edit (guarded by a hash) → a stale-hash failure → append → search →
//! list → rename → delete.
//!
//! Run it after building the binary:
//!
//! ```text
//! cargo build && cargo run --example walkthrough
//! ```
//!
//! Set `MEMDIR_BIN` to use a memdir binary from somewhere else.

use std::path::Path;

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

// The walkthrough does not report the file system.
#[allow(dead_code)]
#[path = "common/host.rs"]
mod host;
use host::memdir_bin;

/// The client side of one MCP session.
type Client = RunningService<RoleClient, ()>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // ## Step 0: a store to play in
    //
    // A store is just a folder. memdir creates it if it is missing; we make a fresh one in
    // the temp folder (with our pid in its name, so parallel runs do not collide) and
    // remove it at the end, whatever happens in between.
    //
    // memdir also keeps a search index (a disposable SQLite cache), by default in the
    // user's cache folder; `--index-dir` puts it next to the store so nothing outlives
    // the example.
    let dir = std::env::temp_dir().join(format!("memdir-walkthrough-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let result = walkthrough(&dir.join("store"), &dir.join("index")).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn walkthrough(store: &Path, index_dir: &Path) -> anyhow::Result<()> {
    let bin = memdir_bin()?;
    println!("memdir binary: {}", bin.display());
    println!("store folder:  {}\n", store.display());

    // ## Step 1: start the server
    //
    // `memdir --root DIR` serves DIR as the store named `memories` (created if missing;
    // there is no setup step): paths look like
    // `/memories/notes/rust.md`. `TokioChildProcess` spawns it with piped stdio, and
    // `().serve(transport)` runs the MCP `initialize` handshake (the unit type `()` is a
    // client with no handlers of its own). Logs go to stderr; we keep them quiet.
    let cmd = Command::new(&bin).configure(|c| {
        c.arg("--root")
            .arg(store)
            .arg("--index-dir")
            .arg(index_dir)
            .env("RUST_LOG", "memdir=warn");
    });
    let transport = TokioChildProcess::new(cmd).context("spawning memdir")?;
    let client: Client = ().serve(transport).await.context("MCP handshake")?;

    // The server introduces itself; its instructions tell the agent how to use memory.
    if let Some(info) = client.peer_info() {
        if let Some(server) = &info.server_info {
            println!("== server: {} {}", server.name, server.version);
        }
        println!("{}\n", info.instructions.as_deref().unwrap_or(""));
    }

    // ## Step 2: which tools are there?
    //
    // Each tool comes with an input schema and an output schema (the shape of its
    // `structuredContent`); an agent's host hands these to the model.
    let tools = client.list_all_tools().await?;
    println!("== tools/list: {} tools", tools.len());
    for t in &tools {
        let first_line = t
            .description
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        println!("  {:<14} {first_line}", t.name);
    }
    println!();

    // ## Step 3: write a memory
    //
    // A memory is a UTF-8 text file. An optional YAML frontmatter block gives it a
    // description and a type, which `memory_list` and `memory_search` show. The write is
    // durable (temp file, fsync, rename, fsync folder) before the server answers.
    let content = "---\n\
        description: How this project is built and released\n\
        type: project\n\
        tags: [rust, release]\n\
        ---\n\
        # Build notes\n\
        Build with cargo build --release.\n\
        Run clippy before every commit.\n";
    let w = call(
        &client,
        "step 3: memory_write",
        "memory_write",
        json!({"path": "/memories/projects/build.md", "content": content}),
    )
    .await?;
    ensure(
        w.structured["created"] == true,
        "the write created the file",
    )?;

    // ## Step 4: read it back
    //
    // The text result is numbered like `cat -n`, so the model can point at lines; the
    // structured result carries the raw content and its `content_sha256`, the version
    // stamp that guards later changes. A path without a leading `/` is in the first store.
    let r = call(
        &client,
        "step 4: memory_read",
        "memory_read",
        json!({"path": "projects/build.md"}),
    )
    .await?;
    let sha = r.sha()?;
    println!("(content_sha256 = {sha})\n");

    // ## Step 5: edit, guarded by the hash we read
    //
    // `old_str` must occur exactly once. `expected_sha256` says "only if the memory is
    // still what I read": the edit is applied, and the answer carries the new hash.
    let e = call(
        &client,
        "step 5: memory_edit old_str/new_str with expected_sha256",
        "memory_edit",
        json!({
            "path": "/memories/projects/build.md",
            "old_str": "Run clippy before every commit.",
            "new_str": "Run cargo clippy --all-targets -- -D warnings before every commit.",
            "expected_sha256": sha,
        }),
    )
    .await?;
    let new_sha = e.sha()?;
    ensure(new_sha != sha, "the edit changed the hash")?;

    // ## Step 6: a stale hash is refused
    //
    // Sending the *old* hash again simulates an agent that did not see the last change.
    // Nothing is written; the error is a tool result with `isError: true` (not a protocol
    // error), and its text gives the current hash so the agent can re-read and retry.
    let stale = call(
        &client,
        "step 6: memory_edit with a stale expected_sha256 (fails on purpose)",
        "memory_edit",
        json!({
            "path": "/memories/projects/build.md",
            "old_str": "# Build notes",
            "new_str": "# Overwritten notes",
            "expected_sha256": sha,
        }),
    )
    .await?;
    ensure(stale.is_error, "the stale hash was refused")?;

    // ## Step 7: append
    //
    // `append_text` adds text at the end, starting on a new line. No hash this time: an
    // append cannot destroy what someone else wrote.
    call(
        &client,
        "step 7: memory_edit append_text",
        "memory_edit",
        json!({
            "path": "/memories/projects/build.md",
            "append_text": "Release: tag vX.Y.Z, then cargo publish.",
        }),
    )
    .await?;

    // ## Step 8: search
    //
    // Full-text search ranked by BM25. Words are ANDed; each hit shows its best lines,
    // numbered, and the memory's frontmatter description.
    let s = call(
        &client,
        "step 8: memory_search \"clippy\"",
        "memory_search",
        json!({"query": "clippy"}),
    )
    .await?;
    ensure(
        s.structured["total_hits"] == 1,
        "the search found the memory",
    )?;

    // ## Step 9: list
    //
    // Every file below a folder, with size, update time and hash; `depth: 1` would show
    // only the immediate children, folders summarised.
    call(
        &client,
        "step 9: memory_list",
        "memory_list",
        json!({"path": "/memories/"}),
    )
    .await?;

    // ## Step 10: rename
    //
    // `new_path` moves a memory (creating folders); it never replaces an existing one.
    call(
        &client,
        "step 10: memory_edit new_path (rename)",
        "memory_edit",
        json!({
            "path": "/memories/projects/build.md",
            "new_path": "/memories/archive/build.md",
        }),
    )
    .await?;

    // ## Step 11: delete
    //
    // A file, or a folder with everything in it (never a store itself). After this the
    // store holds no memories.
    call(
        &client,
        "step 11: memory_delete",
        "memory_delete",
        json!({"path": "/memories/archive/build.md"}),
    )
    .await?;
    let l = call(
        &client,
        "finally: memory_list (empty again)",
        "memory_list",
        json!({}),
    )
    .await?;
    ensure(l.structured["total"] == 0, "the store is empty again")?;

    // ## Done
    //
    // Cancelling the client closes the server's stdin; memdir exits on end of input.
    client.cancel().await?;
    println!("walkthrough finished");
    Ok(())
}

/// What a tool call answered: `isError`, the text content and `structuredContent`.
struct Answer {
    is_error: bool,
    structured: Value,
}

impl Answer {
    fn sha(&self) -> anyhow::Result<String> {
        self.structured["content_sha256"]
            .as_str()
            .map(str::to_owned)
            .context("no content_sha256 in the result")
    }
}

/// Calls one tool and prints its text result under a heading.
async fn call(client: &Client, heading: &str, tool: &str, args: Value) -> anyhow::Result<Answer> {
    let Value::Object(map) = args else {
        bail!("tool arguments must be a JSON object");
    };
    println!("== {heading}");
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await
        .with_context(|| format!("{tool}: protocol error"))?;
    let is_error = result.is_error.unwrap_or(false);
    for text in result.content.iter().filter_map(|c| c.as_text()) {
        println!("{}", text.text.trim_end());
    }
    if is_error {
        println!("(isError: true)");
    }
    println!();
    Ok(Answer {
        is_error,
        structured: result.structured_content.unwrap_or(Value::Null),
    })
}

fn ensure(ok: bool, what: &str) -> anyhow::Result<()> {
    if !ok {
        bail!("expected: {what}");
    }
    Ok(())
}
