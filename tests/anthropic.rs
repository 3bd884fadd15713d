//! The compatibility profile (`--tools anthropic|all`): Anthropic's memory tool as the MCP
//! tool `memory`, through the real binary and the rmcp client. Every success and error
//! string is compared byte for byte with docs/anthropic-memory-tool.md.

mod common;

use common::{Sandbox, Server};
use serde_json::{Value, json};

async fn memory_ok(s: &Server, args: Value) -> String {
    let out = s.call("memory", args.clone()).await;
    assert!(!out.is_error, "memory {args} failed: {}", out.text);
    out.text
}

async fn memory_err(s: &Server, args: Value) -> String {
    s.err("memory", args).await
}

#[tokio::test]
async fn the_tool_sets_offer_memory_alone_beside_the_others_or_not_at_all() {
    let sb = Sandbox::new();
    let s = sb.serve_with(&["--tools", "anthropic"]).await;
    let tools = s.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, "memory");
    let a = tool.annotations.as_ref().expect("annotations");
    assert_eq!(
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint
        ),
        (Some(false), Some(true), Some(false), Some(false))
    );
    let schema = serde_json::to_value(&tool.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["command"]), "{schema}");
    assert_eq!(
        schema["properties"]["command"]["enum"],
        json!([
            "view",
            "create",
            "str_replace",
            "insert",
            "delete",
            "rename"
        ]),
        "{schema}"
    );
    for field in [
        "path",
        "view_range",
        "file_text",
        "old_str",
        "new_str",
        "insert_line",
        "insert_text",
        "old_path",
        "new_path",
    ] {
        assert!(schema["properties"][field].is_object(), "{field}: {schema}");
    }
    let instructions = s
        .client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default();
    assert!(
        instructions.contains("view /memories") && !instructions.contains("memory_search"),
        "{instructions}"
    );
    s.stop().await;

    let s = sb.serve_with(&["--tools", "all"]).await;
    let names = s.tool_names().await;
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(names.iter().any(|n| n == "memory") && names.iter().any(|n| n == "memory_read"));
    s.stop().await;

    let s = sb.serve().await;
    assert!(!s.tool_names().await.iter().any(|n| n == "memory"));
    s.stop().await;
}

#[tokio::test]
async fn every_success_string_is_the_memory_tools_own() {
    let sb = Sandbox::new();
    let s = sb.serve_with(&["--tools", "anthropic"]).await;

    assert_eq!(
        memory_ok(&s, json!({"command": "view", "path": "/memories"})).await,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories"
    );
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "create", "path": "/memories/notes.md", "file_text": "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\n"})
        )
        .await,
        "File created successfully at: /memories/notes.md"
    );
    // Parent folders are created; sizes read like `ls -h`.
    let big = "x".repeat(1536);
    memory_ok(
        &s,
        json!({"command": "create", "path": "/memories/projects/bot/plan.md", "file_text": big}),
    )
    .await;
    memory_ok(
        &s,
        json!({"command": "create", "path": "/memories/projects/a/b/deep.md", "file_text": "y".repeat(512)}),
    )
    .await;
    std::fs::write(sb.store().join(".hidden.md"), "not listed").unwrap();
    std::fs::create_dir_all(sb.store().join("node_modules/pkg")).unwrap();
    std::fs::write(sb.store().join("node_modules/pkg/x.md"), "not listed").unwrap();
    assert_eq!(
        memory_ok(&s, json!({"command": "view", "path": "/memories"})).await,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n\
         2.0K\t/memories\n\
         40B\t/memories/notes.md\n\
         2.0K\t/memories/projects/\n\
         512B\t/memories/projects/a/\n\
         1.5K\t/memories/projects/bot/"
    );
    assert_eq!(
        memory_ok(&s, json!({"command": "view", "path": "/memories/projects"})).await,
        "Here're the files and directories up to 2 levels deep in /memories/projects, excluding hidden items and node_modules:\n\
         2.0K\t/memories/projects\n\
         512B\t/memories/projects/a/\n\
         512B\t/memories/projects/a/b/\n\
         1.5K\t/memories/projects/bot/\n\
         1.5K\t/memories/projects/bot/plan.md"
    );

    assert_eq!(
        memory_ok(&s, json!({"command": "view", "path": "/memories/notes.md"})).await,
        "Here's the content of /memories/notes.md with line numbers:\n     1\talpha\n     2\tbeta\n     3\tgamma\n     4\tdelta\n     5\tepsilon\n     6\tzeta\n     7\teta"
    );
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [6, -1]})
        )
        .await,
        "Here's the content of /memories/notes.md with line numbers:\n     6\tzeta\n     7\teta"
    );
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]})
        )
        .await,
        "Here's the content of /memories/notes.md with line numbers:\n     2\tbeta\n     3\tgamma"
    );

    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "delta", "new_str": "DELTA"})
        )
        .await,
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     2\tbeta\n     3\tgamma\n     4\tDELTA\n     5\tepsilon\n     6\tzeta"
    );
    // Occurrences are counted over the whole text, so a multi-line old_str works.
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "alpha\nbeta", "new_str": "one"})
        )
        .await,
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tone\n     2\tgamma\n     3\tDELTA"
    );
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "top\n"})
        )
        .await,
        "The file /memories/notes.md has been edited."
    );
    assert_eq!(
        std::fs::read_to_string(sb.store().join("notes.md")).unwrap(),
        "top\none\ngamma\nDELTA\nepsilon\nzeta\neta\n"
    );

    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/archive/2026/notes.md"})
        )
        .await,
        "Successfully renamed /memories/notes.md to /memories/archive/2026/notes.md"
    );
    assert!(sb.store().join("archive/2026/notes.md").is_file());
    assert!(!sb.store().join("notes.md").exists());
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "rename", "old_path": "/memories/projects/bot", "new_path": "/memories/bots"})
        )
        .await,
        "Successfully renamed /memories/projects/bot to /memories/bots"
    );
    assert!(sb.store().join("bots/plan.md").is_file());

    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "delete", "path": "/memories/archive/2026/notes.md"})
        )
        .await,
        "Successfully deleted /memories/archive/2026/notes.md"
    );
    assert_eq!(
        memory_ok(
            &s,
            json!({"command": "delete", "path": "/memories/projects"})
        )
        .await,
        "Successfully deleted /memories/projects"
    );
    assert!(!sb.store().join("projects").exists());
    assert!(
        sb.store().join(".hidden.md").is_file(),
        "delete stays on its path"
    );
    s.stop().await;
}

#[tokio::test]
async fn every_error_string_is_the_memory_tools_own_and_changes_nothing() {
    let sb = Sandbox::new();
    let snapshot = sb.outside_snapshot();
    let s = sb.serve_with(&["--tools", "anthropic"]).await;
    memory_ok(
        &s,
        json!({"command": "create", "path": "/memories/a.md", "file_text": "x = 1\ny = 2\nx = 1\n"}),
    )
    .await;
    memory_ok(
        &s,
        json!({"command": "create", "path": "/memories/dir/b.md", "file_text": "b\n"}),
    )
    .await;
    let before = std::fs::read(sb.store().join("a.md")).unwrap();

    let cases = [
        (
            json!({"command": "view", "path": "/memories/missing.md"}),
            "The path /memories/missing.md does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/missing.md", "old_str": "a", "new_str": "b"}),
            "The path /memories/missing.md does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "insert", "path": "/memories/missing.md", "insert_line": 0, "insert_text": "a"}),
            "The path /memories/missing.md does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "delete", "path": "/memories/missing.md"}),
            "The path /memories/missing.md does not exist",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/missing.md", "new_path": "/memories/c.md"}),
            "The path /memories/missing.md does not exist",
        ),
        (
            json!({"command": "create", "path": "/memories/a.md", "file_text": "other"}),
            "File /memories/a.md already exists",
        ),
        (
            // The same content too: create never replaces.
            json!({"command": "create", "path": "/memories/a.md", "file_text": "x = 1\ny = 2\nx = 1\n"}),
            "File /memories/a.md already exists",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/dir/b.md"}),
            "The destination /memories/dir/b.md already exists",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/a.md"}),
            "The destination /memories/a.md already exists",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/gone.md"}),
            "The path /memories/gone.md does not exist",
        ),
        (
            // Every occurrence counts, listed by line.
            json!({"command": "str_replace", "path": "/memories/a.md", "old_str": "1", "new_str": "w"}),
            "No replacement was performed. Multiple occurrences of old_str `1` in lines: 1, 3. Please ensure it is unique",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/a.md", "old_str": "z = 3", "new_str": "w"}),
            "No replacement was performed, old_str `z = 3` did not appear verbatim in /memories/a.md.",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/a.md", "old_str": "x = 1", "new_str": "w"}),
            "No replacement was performed. Multiple occurrences of old_str `x = 1` in lines: 1, 3. Please ensure it is unique",
        ),
        (
            json!({"command": "insert", "path": "/memories/a.md", "insert_line": 4, "insert_text": "w"}),
            "Invalid `insert_line` parameter: 4. It should be within the range of lines of the file: [0, 3]",
        ),
        (
            json!({"command": "insert", "path": "/memories/a.md", "insert_line": -1, "insert_text": "w"}),
            "Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 3]",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/dir", "old_str": "b", "new_str": "c"}),
            "The path /memories/dir is not a file.",
        ),
        (
            json!({"command": "insert", "path": "/memories/dir", "insert_line": 0, "insert_text": "c"}),
            "The path /memories/dir is not a file.",
        ),
        (
            json!({"command": "view", "path": "/etc/passwd"}),
            "Path must start with /memories, got: /etc/passwd",
        ),
        (
            // A plain prefix test would take this for /memories/X/a.
            json!({"command": "create", "path": "/memoriesX/a.md", "file_text": "x"}),
            "Path must start with /memories, got: /memoriesX/a.md",
        ),
        (
            json!({"command": "view", "path": "memories/a.md"}),
            "Path must start with /memories, got: memories/a.md",
        ),
        (
            json!({"command": "view", "path": "/memories/../outside/canary.txt"}),
            "Path /memories/../outside/canary.txt would escape /memories directory",
        ),
        (
            json!({"command": "create", "path": "/memories/dir/../../x.md", "file_text": "x"}),
            "Path /memories/dir/../../x.md would escape /memories directory",
        ),
        (
            json!({"command": "delete", "path": "/memories"}),
            "Cannot delete the /memories directory itself",
        ),
        (
            json!({"command": "delete", "path": "/memories/"}),
            "Cannot delete the /memories directory itself",
        ),
        (
            json!({"command": "move", "path": "/memories/a.md"}),
            "Unrecognized command move. The allowed commands for the memory tool are: view, create, str_replace, insert, delete, rename",
        ),
        (
            json!({"command": "create", "path": "/memories/c.md"}),
            "Parameter `file_text` is required for command: create",
        ),
        (
            json!({"command": "view", "path": "/memories/a.md", "view_range": [1]}),
            "Invalid `view_range`. It should be a list of two integers.",
        ),
        // A range of the wrong kind gets the same string, not a decoding error.
        (
            json!({"command": "view", "path": "/memories/a.md", "view_range": "1,2"}),
            "Invalid `view_range`. It should be a list of two integers.",
        ),
        (
            json!({"command": "view", "path": "/memories/a.md", "view_range": [1.5, 2]}),
            "Invalid `view_range`. It should be a list of two integers.",
        ),
        (
            json!({"command": "view", "path": "/memories/a.md", "view_range": [1, "2"]}),
            "Invalid `view_range`. It should be a list of two integers.",
        ),
        (
            json!({"command": "view", "path": "/memories/a.md", "view_range": {"start": 1}}),
            "Invalid `view_range`. It should be a list of two integers.",
        ),
    ];
    for (args, want) in cases {
        let got = memory_err(&s, args.clone()).await;
        assert_eq!(got, want, "{args}");
    }
    assert_eq!(std::fs::read(sb.store().join("a.md")).unwrap(), before);
    assert!(!sb.store().join("c.md").exists());
    assert!(sb.store().join("dir/b.md").is_file());
    assert!(!sb.tmp.path().join("x.md").exists());
    assert_eq!(sb.outside_snapshot(), snapshot);
    s.stop().await;
}

#[tokio::test]
async fn symlinks_out_of_the_store_are_escapes_and_errors_never_show_the_host_path() {
    let sb = Sandbox::new();
    let outside = sb.outside();
    std::os::unix::fs::symlink(outside.join("dir"), sb.store().join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("canary.txt"), sb.store().join("canary.md")).unwrap();
    let snapshot = sb.outside_snapshot();
    let s = sb.serve_with(&["--tools", "anthropic"]).await;
    let host = sb.tmp.path().to_string_lossy().into_owned();
    let attempts = [
        json!({"command": "view", "path": "/memories/out/canary.txt"}),
        json!({"command": "view", "path": "/memories/canary.md"}),
        json!({"command": "create", "path": "/memories/out/new.md", "file_text": "x"}),
        json!({"command": "str_replace", "path": "/memories/canary.md", "old_str": "CANARY", "new_str": "x"}),
        json!({"command": "insert", "path": "/memories/out/canary.txt", "insert_line": 0, "insert_text": "x"}),
        json!({"command": "delete", "path": "/memories/out/canary.txt"}),
        json!({"command": "rename", "old_path": "/memories/out/canary.txt", "new_path": "/memories/stolen.md"}),
    ];
    for args in attempts {
        let e = memory_err(&s, args.clone()).await;
        assert!(!e.contains(&host), "{args}: {e}");
        assert!(
            e.contains("would escape /memories directory") || e.contains("refused"),
            "{args}: {e}"
        );
    }
    assert_eq!(sb.outside_snapshot(), snapshot);
    assert!(!outside.join("dir/new.md").exists());
    assert!(!sb.store().join("stolen.md").exists());
    s.stop().await;
}

#[tokio::test]
async fn it_works_on_the_same_stores_and_history_as_the_memory_tools() {
    let sb = Sandbox::new();
    let notes = sb.tmp.path().join("notes");
    let archive = sb.tmp.path().join("archive");
    std::fs::create_dir_all(&archive).unwrap();
    std::fs::write(archive.join("old.md"), "kept\n").unwrap();
    let notes_spec = format!("notes={}", notes.display());
    let archive_spec = format!("archive={}:ro", archive.display());
    let s = Server::start(
        &[
            "--store",
            &notes_spec,
            "--store",
            &archive_spec,
            "--tools",
            "all",
            "--no-index",
        ],
        &[],
    )
    .await;
    // `/memories` is the first store, whatever its name.
    memory_ok(
        &s,
        json!({"command": "create", "path": "/memories/topic.md", "file_text": "one\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(notes.join("topic.md")).unwrap(),
        "one\n"
    );
    let read = s
        .ok("memory_read", json!({"path": "/notes/topic.md"}))
        .await;
    assert_eq!(read["content"], "one\n");
    s.ok(
        "memory_edit",
        json!({"path": "/notes/topic.md", "append_text": "two\n"}),
    )
    .await;
    assert_eq!(
        memory_ok(&s, json!({"command": "view", "path": "/memories/topic.md"})).await,
        "Here's the content of /memories/topic.md with line numbers:\n     1\tone\n     2\ttwo"
    );
    let history = s
        .ok("memory_history", json!({"path": "/notes/topic.md"}))
        .await;
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{history}");
    assert_eq!(versions[1]["operation"], "created");
    assert!(
        versions[1]["actor"].as_str().unwrap().starts_with("rmcp"),
        "{history}"
    );

    // Other stores by name; a read-only one can be viewed, not changed.
    assert_eq!(
        memory_ok(&s, json!({"command": "view", "path": "/archive/old.md"})).await,
        "Here's the content of /archive/old.md with line numbers:\n     1\tkept"
    );
    let e = memory_err(
        &s,
        json!({"command": "create", "path": "/archive/new.md", "file_text": "x"}),
    )
    .await;
    assert!(e.contains("read-only"), "{e}");
    assert_eq!(
        memory_err(&s, json!({"command": "delete", "path": "/archive"})).await,
        "Cannot delete the /archive directory itself"
    );
    assert_eq!(
        memory_err(&s, json!({"command": "view", "path": "/notes/topic.md"})).await,
        "Path must start with /memories, got: /notes/topic.md"
    );
    // Errors name the path as the agent wrote it, not the store's own name.
    let e = memory_err(
        &s,
        json!({"command": "create", "path": "/memories/big.md", "file_text": "x".repeat(200_000)}),
    )
    .await;
    assert!(
        e.contains("/memories/big.md") && !e.contains("/notes/"),
        "{e}"
    );
    let e = memory_err(
        &s,
        json!({"command": "create", "path": "/memories/topic.md/x.md", "file_text": "x"}),
    )
    .await;
    assert!(
        e.contains("`/memories/topic.md`") && !e.contains("/notes"),
        "{e}"
    );
    assert!(!archive.join("new.md").exists());
    s.stop().await;
}

#[tokio::test]
async fn a_later_store_named_memories_is_refused_with_the_anthropic_tools() {
    let sb = Sandbox::new();
    let first = format!("notes={}", sb.tmp.path().join("n").display());
    let second = format!("memories={}", sb.store().display());
    let out = std::process::Command::new(common::BIN)
        .args([
            "--store",
            &first,
            "--store",
            &second,
            "--tools",
            "anthropic",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("give the store named `memories` first"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn views_stay_within_the_result_budget_and_say_how_to_go_on() {
    let sb = Sandbox::new();
    let long_dir = "d".repeat(200);
    std::fs::create_dir_all(sb.store().join(&long_dir)).unwrap();
    std::fs::write(
        sb.store().join(&long_dir).join("lines.md"),
        "x\n".repeat(51_200),
    )
    .unwrap();
    std::fs::write(
        sb.store().join("one_line.md"),
        format!("{}\nsecond\n", "y".repeat(100_000)),
    )
    .unwrap();
    let s = sb.serve_with(&["--tools", "anthropic"]).await;
    let path = format!("/memories/{long_dir}/lines.md");
    // Page through the whole file by the notes' view_range: every line once, in order.
    let mut view = memory_ok(&s, json!({"command": "view", "path": path})).await;
    let mut seen = 0usize;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(view.len() <= 65_536, "page {pages}: {} bytes", view.len());
        for line in view.lines().skip(1).filter(|l| l.ends_with("\tx")) {
            let n: usize = line
                .trim_start()
                .split('\t')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(n, seen + 1, "page {pages}");
            seen = n;
        }
        let Some(next) = view
            .lines()
            .last()
            .and_then(|note| note.split("view_range [").nth(1))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse::<usize>().ok())
        else {
            break;
        };
        assert_eq!(next, seen + 1);
        view = memory_ok(
            &s,
            json!({"command": "view", "path": path, "view_range": [next, -1]}),
        )
        .await;
    }
    assert_eq!(seen, 51_200);
    assert!(pages > 1);

    // One line longer than a result: its head, and where the next lines are.
    let view = memory_ok(
        &s,
        json!({"command": "view", "path": "/memories/one_line.md"}),
    )
    .await;
    assert!(view.len() <= 65_536, "{} bytes", view.len());
    assert!(
        view.ends_with("The next lines continue with view_range [2, -1]. To change it, use str_replace with old_str taken from the part shown.]"),
        "{}",
        &view[view.len() - 300..]
    );
    let second = memory_ok(
        &s,
        json!({"command": "view", "path": "/memories/one_line.md", "view_range": [2, -1]}),
    )
    .await;
    assert_eq!(
        second,
        "Here's the content of /memories/one_line.md with line numbers:\n     2\tsecond"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_crlf_file_is_edited_from_its_view_and_keeps_its_endings() {
    // A file with Windows line endings views without its `\r`s; a multi-line old_str
    // copied from the view matches, and the file keeps its CRLF endings, also through
    // inserts and appends.
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("win.md"), "one\r\ntwo\r\nthree\r\n").unwrap();
    let s = sb.serve_with(&["--tools", "all"]).await;
    let view = memory_ok(&s, json!({"command": "view", "path": "/memories/win.md"})).await;
    assert!(view.ends_with("     2\ttwo\n     3\tthree"), "{view:?}");
    memory_ok(
        &s,
        json!({"command": "str_replace", "path": "/memories/win.md", "old_str": "one\ntwo", "new_str": "1\n2"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("win.md")).unwrap(),
        "1\r\n2\r\nthree\r\n"
    );
    // Inserted and appended lines take the file's endings too.
    memory_ok(
        &s,
        json!({"command": "insert", "path": "/memories/win.md", "insert_line": 1, "insert_text": "1.5\n"}),
    )
    .await;
    s.ok(
        "memory_edit",
        json!({"path": "win.md", "append_text": "four\nfive"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("win.md")).unwrap(),
        "1\r\n1.5\r\n2\r\nthree\r\nfour\r\nfive"
    );
    let e = s
        .err(
            "memory_edit",
            json!({"path": "win.md", "old_str": "2\nsix", "new_str": "x"}),
        )
        .await;
    assert!(
        e.contains("old_str `2\nsix` did not appear verbatim"),
        "{e}"
    );
    s.stop().await;
}

#[tokio::test]
async fn an_error_does_not_grow_with_what_it_quotes() {
    // The exact strings quote the command and the path: a megabyte of either is cut.
    let sb = Sandbox::new();
    let s = sb.serve_with(&["--tools", "anthropic"]).await;
    let huge = "x".repeat(1_000_000);
    for args in [
        json!({"command": huge, "path": "/memories"}),
        json!({"command": "view", "path": format!("/{huge}")}),
    ] {
        let e = memory_err(&s, args).await;
        assert!(e.len() < 2_000, "a {} byte error", e.len());
        assert!(
            e.starts_with("Unrecognized command xxx") || e.starts_with("Path must start with"),
            "{e}"
        );
    }
    s.stop().await;
}
