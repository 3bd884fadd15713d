//! Every tool end to end through the real binary and the rmcp client: success paths,
//! error paths, schemas and annotations.

mod common;

use std::collections::BTreeSet;

use common::{Sandbox, Server, sha256_hex};
use serde_json::{Value, json};

/// What one tool call must answer.
enum Expect {
    /// Success, with these fields in the structured content (others may be there too).
    Ok(Value),
    /// A tool error (no structured content) whose text holds every part of `has` and
    /// none of `lacks`.
    Err {
        has: Vec<String>,
        lacks: Vec<String>,
    },
}

/// Success, with these fields in the structured content (`{}`: any).
fn ok(fields: Value) -> Expect {
    Expect::Ok(fields)
}

/// A tool error whose text holds every one of `has`.
fn err(has: &[&str]) -> Expect {
    err_without(has, &[])
}

/// A tool error whose text holds every one of `has` and none of `lacks`.
fn err_without(has: &[&str], lacks: &[&str]) -> Expect {
    let owned = |parts: &[&str]| parts.iter().map(|p| (*p).to_owned()).collect();
    Expect::Err {
        has: owned(has),
        lacks: owned(lacks),
    }
}

/// Calls `tool` with each row's arguments, in order, and checks the answer against the
/// row's expectation.
async fn check(s: &Server, tool: &str, rows: Vec<(Value, Expect)>) {
    for (args, expect) in rows {
        let out = s.call(tool, args.clone()).await;
        // Arguments can be megabytes long: a failure names them by their start.
        let call = format!("{tool} {:.200}", args.to_string());
        match expect {
            Expect::Ok(fields) => {
                assert!(!out.is_error, "{call} failed: {}", out.text);
                for (field, want) in fields.as_object().expect("fields are an object") {
                    assert_eq!(
                        &out.structured[field], want,
                        "{call}: {field} in {}",
                        out.structured
                    );
                }
            }
            Expect::Err { has, lacks } => {
                assert!(out.is_error, "{call} should fail, got: {}", out.text);
                assert!(
                    out.structured.is_null(),
                    "{call}: errors carry no structured content"
                );
                assert!(!out.text.is_empty(), "{call}: an empty error");
                for part in has {
                    assert!(out.text.contains(&part), "{call}: {part:?} in {}", out.text);
                }
                for part in lacks {
                    assert!(
                        !out.text.contains(&part),
                        "{call}: {part:?} must not be in {}",
                        out.text
                    );
                }
            }
        }
    }
}

async fn check_write(s: &Server, rows: Vec<(Value, Expect)>) {
    check(s, "memory_write", rows).await;
}

async fn check_edit(s: &Server, rows: Vec<(Value, Expect)>) {
    check(s, "memory_edit", rows).await;
}

async fn check_delete(s: &Server, rows: Vec<(Value, Expect)>) {
    check(s, "memory_delete", rows).await;
}

async fn check_list(s: &Server, rows: Vec<(Value, Expect)>) {
    check(s, "memory_list", rows).await;
}

async fn check_read(s: &Server, rows: Vec<(Value, Expect)>) {
    check(s, "memory_read", rows).await;
}

async fn check_search(s: &Server, rows: Vec<(Value, Expect)>) {
    check(s, "memory_search", rows).await;
}

#[tokio::test]
async fn lists_seven_tools_with_schemas_and_annotations() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let tools = s.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "memory_delete",
            "memory_edit",
            "memory_history",
            "memory_list",
            "memory_read",
            "memory_search",
            "memory_write"
        ]
    );
    for t in &tools {
        assert!(t.output_schema.is_some(), "{} has an outputSchema", t.name);
        let a = t.annotations.as_ref().expect("annotations");
        assert_eq!(a.open_world_hint, Some(false));
        let read_only = matches!(
            t.name.as_ref(),
            "memory_list" | "memory_read" | "memory_search" | "memory_history"
        );
        assert_eq!(a.read_only_hint, Some(read_only), "{}", t.name);
        assert_eq!(a.destructive_hint, Some(!read_only), "{}", t.name);
        let schema = serde_json::to_string(&t.input_schema).unwrap();
        assert!(
            !schema.contains("uint") && !schema.contains("\"null\""),
            "{}: {schema}",
            t.name
        );
    }
    let info = s.client.peer_info().expect("server info");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("/memories (read-write)"),
        "{instructions}"
    );
    s.stop().await;
}

#[tokio::test]
async fn write_read_edit_delete_round_trip() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let content = "# Rust\nuse cargo\nfmt before commit\n";
    let w = s
        .ok(
            "memory_write",
            json!({"path": "/memories/notes/rust.md", "content": content}),
        )
        .await;
    assert_eq!(w["created"], true);
    assert_eq!(w["content_sha256"], sha256_hex(content.as_bytes()));
    assert_eq!(
        std::fs::read_to_string(sb.store().join("notes/rust.md")).unwrap(),
        content
    );

    let r = s
        .call("memory_read", json!({"path": "notes/rust.md"}))
        .await;
    assert!(!r.is_error);
    assert_eq!(r.structured["content"], content);
    assert_eq!(r.structured["total_lines"], 3);
    assert_eq!(r.structured["path"], "/memories/notes/rust.md");
    assert_eq!(
        r.text,
        "     1\t# Rust\n     2\tuse cargo\n     3\tfmt before commit"
    );
    // An empty memory says so, rather than answer with no text at all.
    s.ok(
        "memory_write",
        json!({"path": "/memories/notes/empty.md", "content": ""}),
    )
    .await;
    let empty = s
        .call("memory_read", json!({"path": "notes/empty.md"}))
        .await;
    assert!(!empty.is_error);
    assert_eq!(empty.structured["content"], "");
    assert_eq!(empty.structured["total_lines"], 0);
    assert_eq!(empty.text, "[The memory is empty: 0 lines.]");

    let range = s
        .ok(
            "memory_read",
            json!({"path": "/memories/notes/rust.md", "view_range": [2, -1]}),
        )
        .await;
    assert_eq!(range["content"], "use cargo\nfmt before commit\n");
    assert_eq!(
        (range["start_line"].clone(), range["end_line"].clone()),
        (json!(2), json!(3))
    );

    let e = s
        .ok("memory_edit", json!({"path": "/memories/notes/rust.md", "old_str": "use cargo", "new_str": "use cargo build"}))
        .await;
    assert_eq!(
        e["snippet"],
        "     1\t# Rust\n     2\tuse cargo build\n     3\tfmt before commit"
    );
    let now = std::fs::read_to_string(sb.store().join("notes/rust.md")).unwrap();
    assert_eq!(e["content_sha256"], sha256_hex(now.as_bytes()));

    let d = s
        .ok("memory_delete", json!({"path": "/memories/notes/rust.md"}))
        .await;
    assert_eq!(d["deleted_files"], json!(["/memories/notes/rust.md"]));
    assert!(!sb.store().join("notes/rust.md").exists());
    let gone = s
        .err("memory_read", json!({"path": "/memories/notes/rust.md"}))
        .await;
    assert!(gone.contains("does not exist"), "{gone}");
    s.stop().await;
}

#[tokio::test]
async fn write_preconditions() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let p = "/memories/state.md";
    let v1 = sha256_hex(b"v1");
    let stale = sha256_hex(b"something else");
    check_write(
        &s,
        vec![
            (
                json!({"path": p, "content": "v1", "if_absent": true}),
                ok(json!({})),
            ),
            // Same content too: create-only never succeeds on an existing memory.
            (
                json!({"path": p, "content": "v1", "if_absent": true}),
                err(&["already exists", &v1]),
            ),
            (
                json!({"path": p, "content": "v2", "if_absent": true}),
                err(&["already exists", &v1]),
            ),
            // The error states the current sha256.
            (
                json!({"path": p, "content": "v2", "expected_sha256": stale}),
                err(&[&v1]),
            ),
            // Create-only and replace-only together can never both hold: said as such.
            (
                json!({"path": p, "content": "v2", "if_absent": true, "expected_sha256": v1}),
                err(&["cannot both hold"]),
            ),
        ],
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("state.md")).unwrap(),
        "v1"
    );
    check_write(
        &s,
        vec![
            (
                json!({"path": p, "content": "v2", "expected_sha256": v1.to_uppercase()}),
                ok(json!({"created": false})),
            ),
            (
                json!({"path": "/memories/none.md", "content": "x", "expected_sha256": sha256_hex(b"x!")}),
                err(&["does not exist"]),
            ),
            (
                json!({"path": p, "content": "v3", "expected_sha256": "abc"}),
                err(&["64 hex"]),
            ),
        ],
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn write_limits_and_refusals() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let secret = format!("deploy key: {}{}\n", "AKIA", "ABCDEFGHIJKLMNOP");
    check_write(
        &s,
        vec![
            (
                json!({"path": "big.md", "content": "x".repeat(102_401)}),
                err(&["102401", "102400"]),
            ),
            (
                json!({"path": "exact.md", "content": "x".repeat(102_400)}),
                ok(json!({})),
            ),
            // Never echoes the secret.
            (
                json!({"path": "creds.md", "content": secret}),
                err_without(&["AWS access key id", "line 1"], &["ABCDEFGHIJKLMNOP"]),
            ),
        ],
    )
    .await;
    assert!(!sb.store().join("creds.md").exists());
    check_write(
        &s,
        vec![
            (
                json!({"path": "/memories", "content": "x"}),
                err(&["store folder itself"]),
            ),
            (json!({"path": "dir/a.md", "content": "a"}), ok(json!({}))),
            (json!({"path": "dir", "content": "x"}), err(&["folder"])),
            (json!({"path": "dir/a.md/b.md", "content": "x"}), err(&[])),
        ],
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn non_utf8_and_secrets_switch() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("bin.md"), [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let s = Server::start(
        &["--root", sb.store().to_str().unwrap(), "--allow-secrets"],
        &[],
    )
    .await;
    let e = s.err("memory_read", json!({"path": "bin.md"})).await;
    assert!(e.contains("UTF-8"), "{e}");
    let secret = format!("key {}{}", "AKIA", "ABCDEFGHIJKLMNOP");
    s.ok(
        "memory_write",
        json!({"path": "creds.md", "content": secret}),
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn edits_replace_insert_append_rename() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let p = "/memories/todo.md";
    check_write(
        &s,
        vec![(json!({"path": p, "content": "a\nb\na\n"}), ok(json!({})))],
    )
    .await;
    check_edit(
        &s,
        vec![
            (
                json!({"path": p, "old_str": "a", "new_str": "x"}),
                err(&["Multiple occurrences", "1, 3"]),
            ),
            (
                json!({"path": p, "old_str": "zzz", "new_str": "x"}),
                err(&["did not appear verbatim"]),
            ),
            (
                json!({"path": p, "old_str": "a", "new_str": "x", "replace_all": true}),
                ok(json!({"content_sha256": sha256_hex(b"x\nb\nx\n")})),
            ),
            (
                json!({"path": p, "insert_line": 0, "insert_text": "top"}),
                ok(json!({})),
            ),
            (
                json!({"path": p, "insert_line": 2, "insert_text": "mid"}),
                ok(json!({})),
            ),
            (
                json!({"path": p, "insert_line": 99, "insert_text": "x"}),
                err(&["[0, 5]"]),
            ),
            (json!({"path": p, "append_text": "end"}), ok(json!({}))),
        ],
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("todo.md")).unwrap(),
        "top\nx\nmid\nb\nx\nend"
    );

    let stale = sha256_hex(b"stale");
    check_edit(
        &s,
        vec![
            (json!({"path": p}), err(&["say what to change"])),
            (
                json!({"path": p, "append_text": ""}),
                err(&["append_text is empty"]),
            ),
            (
                json!({"path": p, "append_text": "x", "new_path": "y.md"}),
                err(&["exactly one"]),
            ),
            (
                json!({"path": p, "append_text": "x", "expected_sha256": stale}),
                err(&["current content_sha256"]),
            ),
        ],
    )
    .await;
    check_write(
        &s,
        vec![(
            json!({"path": "/memories/taken.md", "content": "t"}),
            ok(json!({})),
        )],
    )
    .await;
    check_edit(
        &s,
        vec![
            (
                json!({"path": p, "new_path": "/memories/taken.md"}),
                err(&["already exists"]),
            ),
            (
                json!({"path": p, "new_path": "/memories/archive/2026/todo.md"}),
                ok(json!({
                    "path": "/memories/archive/2026/todo.md",
                    "renamed_from": "/memories/todo.md"
                })),
            ),
        ],
    )
    .await;
    assert!(!sb.store().join("todo.md").exists());
    assert!(sb.store().join("archive/2026/todo.md").exists());
    check_edit(
        &s,
        vec![
            (
                json!({"path": "/memories/nope.md", "append_text": "x"}),
                err(&["does not exist"]),
            ),
            (
                json!({"path": "/memories/archive", "new_path": "/memories/archive/inner"}),
                err(&["into itself"]),
            ),
        ],
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn deletes_files_and_folders() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    for p in [
        "proj/a.md",
        "proj/sub/b.md",
        "proj/sub/deeper/c.md",
        "keep.md",
    ] {
        s.ok("memory_write", json!({"path": p, "content": p})).await;
    }
    std::fs::write(sb.store().join("proj/.hidden"), "h").unwrap();
    check_delete(
        &s,
        vec![
            (json!({"path": "/memories"}), err(&["store folder itself"])),
            (
                json!({"path": "/memories/proj", "expected_sha256": sha256_hex(b"x")}),
                err(&["files, not folders"]),
            ),
        ],
    )
    .await;
    let d = s
        .ok("memory_delete", json!({"path": "/memories/proj/"}))
        .await;
    let files: Vec<&str> = d["deleted_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"/memories/proj/sub/deeper/c.md") && files.len() == 4,
        "{files:?}"
    );
    assert!(!sb.store().join("proj").exists());
    assert!(sb.store().join("keep.md").exists());
    let keep = sha256_hex(b"keep.md");
    check_delete(
        &s,
        vec![
            (json!({"path": "/memories/proj"}), err(&["does not exist"])),
            (
                json!({"path": "keep.md", "expected_sha256": sha256_hex(b"nope")}),
                err(&[&keep]),
            ),
            (
                json!({"path": "keep.md", "expected_sha256": keep}),
                ok(json!({})),
            ),
        ],
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn lists_with_prefix_depth_and_cursor() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok("memory_write", json!({"path": "notes/a.md", "content": "---\ndescription: Alpha notes\ntype: project\n---\nbody\n"})).await;
    for p in ["notes/sub/b.md", "notes_old/c.md", "top.md"] {
        s.ok("memory_write", json!({"path": p, "content": p})).await;
    }
    std::fs::write(sb.store().join("notes/.secret"), "hidden").unwrap();
    std::fs::create_dir_all(sb.store().join("node_modules")).unwrap();
    std::fs::write(sb.store().join("node_modules/x.md"), "x").unwrap();

    let all = s.ok("memory_list", json!({})).await;
    let paths: Vec<&str> = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "/memories/notes/a.md",
            "/memories/notes/sub/b.md",
            "/memories/notes_old/c.md",
            "/memories/top.md"
        ]
    );
    let a = &all["entries"][0];
    assert_eq!(a["description"], "Alpha notes");
    assert_eq!(a["type"], "project");
    assert_eq!(a["kind"], "file");
    assert_eq!(a["content_sha256"].as_str().unwrap().len(), 64);

    let notes = s
        .ok("memory_list", json!({"path": "/memories/notes/"}))
        .await;
    assert_eq!(
        notes["entries"].as_array().unwrap().len(),
        2,
        "segment-aware: notes_old is not under notes"
    );

    let shallow = s
        .ok("memory_list", json!({"path": "/memories", "depth": 1}))
        .await;
    let entries = shallow["entries"].as_array().unwrap();
    let dir = entries
        .iter()
        .find(|e| e["path"] == "/memories/notes/")
        .expect("notes folder rolled up");
    assert_eq!(
        (dir["kind"].clone(), dir["file_count"].clone()),
        (json!("dir"), json!(2))
    );
    assert_eq!(entries.len(), 3);

    let page1 = s.ok("memory_list", json!({"limit": 3})).await;
    assert_eq!(page1["entries"].as_array().unwrap().len(), 3);
    let cursor = page1["next_cursor"].as_str().expect("a cursor").to_owned();
    let page2 = s
        .ok("memory_list", json!({"limit": 3, "cursor": cursor}))
        .await;
    assert_eq!(page2["entries"][0]["path"], "/memories/top.md");
    assert!(page2.get("next_cursor").is_none());
    // A cursor that no page gave is refused, not answered with an empty page.
    check_list(
        &s,
        ["garbage!!", "/elsewhere/a.md", "/memoriesX/a.md"]
            .into_iter()
            .map(|bad| (json!({"cursor": bad}), err(&["cursor"])))
            .collect(),
    )
    .await;

    let stores = s.ok("memory_list", json!({"path": "/", "depth": 1})).await;
    assert_eq!(stores["entries"][0]["path"], "/memories/");
    check_list(
        &s,
        vec![
            (
                json!({"path": "/memories/nothing"}),
                err(&["does not exist"]),
            ),
            (json!({"depth": 0}), err(&["depth"])),
        ],
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn reads_paginate_within_the_budget() {
    let sb = Sandbox::new();
    let s = sb.serve_with(&["--result-budget", "4096"]).await;
    let content: String = (1..=500).map(|i| format!("line number {i}\n")).collect();
    s.ok(
        "memory_write",
        json!({"path": "long.md", "content": content}),
    )
    .await;
    let r = s.call("memory_read", json!({"path": "long.md"})).await;
    assert!(r.text.len() <= 4096 + 200, "{}", r.text.len());
    assert_eq!(r.structured["truncated"], true);
    let end = r.structured["end_line"].as_u64().unwrap();
    assert!(
        r.text.contains(&format!("view_range [{}, -1]", end + 1)),
        "{}",
        r.text
    );
    assert_eq!(
        r.structured["content_sha256"],
        sha256_hex(content.as_bytes())
    );
    let rest = s
        .ok(
            "memory_read",
            json!({"path": "long.md", "view_range": [end + 1, -1]}),
        )
        .await;
    assert_eq!(rest["start_line"], end + 1);
    check_read(
        &s,
        vec![(
            json!({"path": "long.md", "view_range": [501, -1]}),
            err(&["500 lines"]),
        )],
    )
    .await;

    // One line longer than the budget: its head is shown, and the text says so.
    let line = "0123456789".repeat(2_000);
    let one = format!("{line}\nsecond\n");
    s.ok("memory_write", json!({"path": "one.md", "content": one}))
        .await;
    let r = s.call("memory_read", json!({"path": "one.md"})).await;
    assert!(r.text.len() <= 4096, "{}", r.text.len());
    assert_eq!(r.structured["truncated"], true);
    assert_eq!(r.structured["end_line"], 1);
    let head = r.structured["content"].as_str().unwrap();
    assert!(!head.is_empty() && line.starts_with(head), "{head}");
    assert!(r.text.contains("Line 1 is 20000 bytes"), "{}", r.text);
    assert!(r.text.contains("view_range [2, -1]"), "{}", r.text);

    // A version's content is held to the budget too.
    let h = s.ok("memory_history", json!({"path": "long.md"})).await;
    let version = h["versions"][0]["version"].as_u64().unwrap();
    let v = s
        .call(
            "memory_history",
            json!({"path": "long.md", "version": version}),
        )
        .await;
    assert!(v.text.len() <= 4096, "{}", v.text.len());
    assert_eq!(v.structured["content_truncated"], true);
    let head = v.structured["content"].as_str().unwrap();
    assert!(head.len() > 1000 && content.starts_with(head), "{head}");
    assert!(v.text.contains("restore_version"), "{}", v.text);
    s.stop().await;
}

#[tokio::test]
async fn old_memories_carry_a_freshness_note() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("old.md"), "observed long ago\n").unwrap();
    let f = std::fs::File::options()
        .write(true)
        .open(sb.store().join("old.md"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 86_400 + 60))
        .unwrap();
    let s = sb.serve().await;
    let r = s.call("memory_read", json!({"path": "old.md"})).await;
    assert_eq!(r.structured["age_days"], 3);
    assert!(
        r.text
            .starts_with("Note: this memory was last updated 3 days ago"),
        "{}",
        r.text
    );
    s.stop().await;
}

#[tokio::test]
async fn searches_rank_filter_and_relax() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let docs = [
        (
            "dense.md",
            "tokio runtime\ntokio tasks and tokio channels\nthe tokio way\n",
        ),
        (
            "once.md",
            "a long note about many things, among them tokio once, and much more text here\n",
        ),
        ("other/zh.md", "我们的数据库很快\n"),
        ("other/ru.md", "Память агента хранится в файлах\n"),
        (
            "fm.md",
            "---\ndescription: Frontmatter note\ntype: reference\ntags: [db]\n---\ndatabase tuning\n",
        ),
    ];
    for (p, c) in docs {
        s.ok("memory_write", json!({"path": p, "content": c})).await;
    }
    let r = s.ok("memory_search", json!({"query": "Tokio"})).await;
    assert_eq!(r["total_hits"], 2);
    assert_eq!(
        r["hits"][0]["path"], "/memories/dense.md",
        "dense document ranks first"
    );
    assert!(
        r["hits"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("     2\ttokio tasks and tokio channels")
    );
    assert_eq!(r["hits"][0]["line"], 2);

    let zh = s.ok("memory_search", json!({"query": "数据库"})).await;
    assert_eq!(zh["hits"][0]["path"], "/memories/other/zh.md");
    let ru = s.ok("memory_search", json!({"query": "ПАМЯТЬ"})).await;
    assert_eq!(ru["hits"][0]["path"], "/memories/other/ru.md");

    check_search(
        &s,
        vec![
            (
                json!({"query": "tokio database"}),
                ok(json!({"relaxed": true, "total_hits": 3})),
            ),
            (
                json!({"query": "tokio", "path": "/memories/other/"}),
                ok(json!({"total_hits": 0})),
            ),
            (
                json!({"query": "database", "tag": "nope"}),
                ok(json!({"total_hits": 0})),
            ),
        ],
    )
    .await;
    let typed = s
        .ok(
            "memory_search",
            json!({"query": "database", "type": "reference"}),
        )
        .await;
    assert_eq!(typed["hits"][0]["description"], "Frontmatter note");

    let page = s
        .ok("memory_search", json!({"query": "tokio", "limit": 1}))
        .await;
    let next = page["next_cursor"].as_str().unwrap().to_owned();
    let page2 = s
        .ok(
            "memory_search",
            json!({"query": "tokio", "limit": 1, "cursor": next}),
        )
        .await;
    assert_eq!(page2["hits"][0]["path"], "/memories/once.md");
    // A cursor continues the search that gave it, never another one.
    for other in [
        json!({"query": "tokio", "limit": 2, "cursor": next}),
        json!({"query": "database", "limit": 1, "cursor": next}),
        json!({"query": "tokio", "limit": 1, "sort": "recent", "cursor": next}),
        json!({"query": "tokio", "limit": 1, "path": "/memories/once.md", "cursor": next}),
    ] {
        let e = s.err("memory_search", other.clone()).await;
        assert!(e.contains("of another search"), "{other}: {e}");
    }
    // Any offset a client puts in it is safe: past the end, an empty page.
    let search = next.split_once('-').unwrap().1;
    let far = format!("{}-{search}", usize::MAX);
    let r = s
        .ok(
            "memory_search",
            json!({"query": "tokio", "limit": 1, "cursor": far}),
        )
        .await;
    assert_eq!(r["hits"].as_array().unwrap().len(), 0, "{r}");

    for q in [
        "\"",
        "-x",
        "a:b",
        "(",
        "*",
        "NEAR(",
        "\u{0}",
        "!!!",
        &"long text ".repeat(1000),
    ] {
        let out = s.call("memory_search", json!({"query": q})).await;
        assert!(!out.is_error, "query {q:?} must not fail: {}", out.text);
    }
    s.stop().await;
}

#[tokio::test]
async fn read_only_stores_refuse_mutations() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("fixed.md"), "fixed").unwrap();
    let rw = sb.tmp.path().join("rw");
    let spec_ro = format!("team={}:ro", sb.store().display());
    let spec_rw = format!("scratch={}", rw.display());
    let s = Server::start(
        &[
            "--store",
            &spec_rw,
            "--store",
            &spec_ro,
            "--describe",
            "team=Shared team knowledge",
        ],
        &[],
    )
    .await;
    let info = s.client.peer_info().unwrap().instructions.clone().unwrap();
    assert!(
        info.contains("/team (read-only): Shared team knowledge"),
        "{info}"
    );
    assert_eq!(
        s.ok("memory_read", json!({"path": "/team/fixed.md"})).await["content"],
        "fixed"
    );
    let read_only = || err(&["read-only"]);
    check_write(
        &s,
        vec![(json!({"path": "/team/x.md", "content": "x"}), read_only())],
    )
    .await;
    check_edit(
        &s,
        vec![(
            json!({"path": "/team/fixed.md", "append_text": "x"}),
            read_only(),
        )],
    )
    .await;
    check_delete(&s, vec![(json!({"path": "/team/fixed.md"}), read_only())]).await;
    s.ok(
        "memory_write",
        json!({"path": "note.md", "content": "relative paths go to the first store"}),
    )
    .await;
    assert!(rw.join("note.md").exists());
    assert_eq!(
        std::fs::read_to_string(sb.store().join("fixed.md")).unwrap(),
        "fixed"
    );
    s.stop().await;

    let only_ro = Server::start(&["--store", &spec_ro], &[]).await;
    let names = only_ro.tool_names().await;
    assert_eq!(names.len(), 4, "mutating tools are not offered: {names:?}");
    only_ro.stop().await;
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_or_protocol_errors_never_hangs() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    check_list(&s, vec![(json!({"limit": 0}), err(&["limit"]))]).await;
    check_search(
        &s,
        vec![(json!({"query": "x", "cursor": "garbage"}), err(&["cursor"]))],
    )
    .await;
    // Wrong types are rejected before the tool runs; the server keeps serving.
    let wrong = s
        .client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("memory_read")
                .with_arguments(json!({"path": 42}).as_object().unwrap().clone()),
        )
        .await;
    assert!(wrong.is_err() || wrong.unwrap().is_error == Some(true));
    let still: Value = s.ok("memory_list", json!({})).await;
    assert_eq!(still["total"], 0);
    // A whole number written with a fraction is the integer (JSON Schema's `integer`);
    // a fraction is refused, naming the field.
    for i in 1..=3 {
        s.ok(
            "memory_write",
            json!({"path": format!("n{i}.md"), "content": "one\ntwo\nthree\n"}),
        )
        .await;
    }
    let page: Value = s.ok("memory_list", json!({"limit": 2.0})).await;
    assert_eq!(page["entries"].as_array().unwrap().len(), 2, "{page}");
    let lines: Value = s
        .ok(
            "memory_read",
            json!({"path": "n1.md", "view_range": [2.0, -1.0]}),
        )
        .await;
    assert_eq!(lines["content"], "two\nthree\n", "{lines}");
    let e = s.err("memory_list", json!({"limit": 2.5})).await;
    assert!(e.contains("`limit`"), "{e}");
    for i in 1..=3 {
        s.ok("memory_delete", json!({"path": format!("n{i}.md")}))
            .await;
    }
    // An error quotes what it is about, cut short: not a megabyte string or field name.
    let huge = "x".repeat(1_000_000);
    for (tool, args) in [
        (
            "memory_edit",
            json!({"path": "a.md", "insert_line": huge, "insert_text": "y"}),
        ),
        ("memory_read", json!({"path": "a.md", "view_range": huge})),
        ("memory_read", json!({"path": "a.md", huge.clone(): 1})),
        ("memory_list", json!({"cursor": huge})),
        ("memory_search", json!({"query": "x", "cursor": huge})),
        ("memory_history", json!({"cursor": huge})),
    ] {
        let e = s.err(tool, args).await;
        assert!(e.len() < 2_000, "{tool}: a {} byte error", e.len());
        assert!(
            ["invalid type", "unknown field", "invalid cursor"]
                .iter()
                .any(|w| e.contains(w)),
            "{e}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn edit_results_show_each_changed_place_and_stay_within_the_budget() {
    let sb = Sandbox::new();
    let s = sb.serve_with(&["--result-budget", "4096"]).await;
    // Two matches far apart: two windows of context, not every line between them.
    let text: String = (1..=32)
        .map(|i| {
            if i == 1 || i == 32 {
                "match\n".to_owned()
            } else {
                format!("line {i}\n")
            }
        })
        .collect();
    s.ok("memory_write", json!({"path": "two.md", "content": text}))
        .await;
    let r = s
        .ok(
            "memory_edit",
            json!({"path": "two.md", "old_str": "match", "new_str": "MATCH", "replace_all": true}),
        )
        .await;
    let snippet = r["snippet"].as_str().unwrap();
    let numbers: Vec<&str> = snippet
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(str::trim)
        .collect();
    assert_eq!(
        numbers,
        ["1", "2", "3", "...", "30", "31", "32"],
        "{snippet}"
    );

    // Thousands of changed lines in a row: the snippet stops at the budget and says so.
    let many = "ab\n".repeat(30_000);
    s.ok("memory_write", json!({"path": "many.md", "content": many}))
        .await;
    let r = s
        .call(
            "memory_edit",
            json!({"path": "many.md", "old_str": "a", "new_str": "c", "replace_all": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    assert!(r.text.len() <= 4096, "{} bytes", r.text.len());
    assert!(r.text.contains("not shown: read the memory"), "{}", r.text);

    // An ambiguous old_str found thousands of times: the error lists a few lines.
    let e = s
        .err(
            "memory_edit",
            json!({"path": "many.md", "old_str": "cb", "new_str": "x"}),
        )
        .await;
    assert!(e.len() < 1000, "{} bytes: {e}", e.len());
    assert!(e.contains("30000 occurrences"), "{e}");

    // A replace_all that would grow the memory past the cap is refused before it is built.
    let e = s
        .err(
            "memory_edit",
            json!({"path": "many.md", "old_str": "c", "new_str": "x".repeat(10_000), "replace_all": true}),
        )
        .await;
    assert!(e.contains("102400"), "{e}");
    let after = s
        .ok(
            "memory_read",
            json!({"path": "many.md", "view_range": [1, 1]}),
        )
        .await;
    assert_eq!(after["content"], "cb\n");
    s.stop().await;
}

#[tokio::test]
async fn history_pages_and_folder_deletions_stay_within_the_budget() {
    let sb = Sandbox::new();
    let s = sb.serve_with(&["--result-budget", "4096"]).await;
    let name = |i: usize| format!("folder/a-rather-long-memory-name-for-paging-{i:03}.md");
    for i in 0..120 {
        s.ok("memory_write", json!({"path": name(i), "content": "x"}))
            .await;
    }
    // The default limit would list them all; the budget ends the page first.
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"limit": 500});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = s.call("memory_history", args).await;
        assert!(!page.is_error, "{}", page.text);
        assert!(page.text.len() <= 4096, "{} bytes", page.text.len());
        seen += page.structured["versions"].as_array().unwrap().len();
        match page.structured.get("next_cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, 120, "paging by budget lost or repeated versions");

    let deleted = s.call("memory_delete", json!({"path": "folder"})).await;
    assert!(!deleted.is_error, "{}", deleted.text);
    assert_eq!(
        deleted.structured["deleted_files"]
            .as_array()
            .unwrap()
            .len(),
        120
    );
    assert!(deleted.text.contains("and 20 more"), "{}", deleted.text);
    s.stop().await;
}

#[tokio::test]
async fn lists_and_searches_of_long_frontmatter_stay_within_the_budget() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let budget = 65_536;
    // Names and descriptions of 2,500 characters (1,000 of each shown): 60 of them are
    // past the budget.
    for i in 0..60 {
        let content = format!(
            "---\nname: {}\ndescription: {}\ntype: note\n---\nbudget memo {i}\n",
            "n".repeat(2_500),
            "d".repeat(2_500)
        );
        s.ok(
            "memory_write",
            json!({"path": format!("m{i:02}.md"), "content": content}),
        )
        .await;
    }
    // One field longer than a result shows: its head, cut with an ellipsis.
    let long = format!(
        "---\ndescription: {}\n---\nbudget memo long\n",
        "L".repeat(5_000)
    );
    s.ok("memory_write", json!({"path": "long.md", "content": long}))
        .await;
    for (tool, args, key) in [
        (
            "memory_search",
            json!({"query": "budget memo", "limit": 100}),
            "hits",
        ),
        ("memory_list", json!({"limit": 100}), "entries"),
    ] {
        let mut seen = BTreeSet::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut args = args.clone();
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let page = s.call(tool, args).await;
            assert!(!page.is_error, "{tool}: {}", page.text);
            assert!(
                page.text.len() <= budget,
                "{tool}: {} bytes",
                page.text.len()
            );
            for item in page.structured[key].as_array().unwrap() {
                let path = item["path"].as_str().unwrap().to_owned();
                if path.ends_with("long.md") {
                    let shown = item["description"].as_str().unwrap();
                    assert!(shown.len() <= 1_000, "{tool}: {} bytes", shown.len());
                    assert!(shown.len() > 990 && shown.ends_with("L…"), "{tool}");
                }
                assert!(seen.insert(path), "{tool}: a memory shown twice");
            }
            pages += 1;
            match page.structured.get("next_cursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen.len(), 61, "{tool}: paging by budget lost memories");
        assert!(pages > 1, "{tool}: one page held them all");
    }
    s.stop().await;
}

#[tokio::test]
async fn folder_paths_are_refused_as_files_and_hidden_names_are_flagged() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    // A trailing `/` names a folder: never a file named like the folder.
    check_write(
        &s,
        vec![(
            json!({"path": "/memories/sub/", "content": "x"}),
            err(&["names a folder"]),
        )],
    )
    .await;
    assert!(!sb.store().join("sub").exists());
    check_write(
        &s,
        vec![(json!({"path": "sub/a.md", "content": "x"}), ok(json!({})))],
    )
    .await;
    check_edit(
        &s,
        vec![
            (
                json!({"path": "sub/a.md/", "append_text": "y"}),
                err(&["names a folder"]),
            ),
            // A folder still moves with its trailing `/`.
            (
                json!({"path": "sub/", "new_path": "moved"}),
                ok(json!({"path": "/memories/moved"})),
            ),
        ],
    )
    .await;
    // Searching or asking the history of a file written as a folder is refused as
    // listing it is; the folder itself is taken with its `/`.
    for (tool, args) in [
        (
            "memory_search",
            json!({"query": "x", "path": "moved/a.md/"}),
        ),
        ("memory_history", json!({"path": "moved/a.md/"})),
        ("memory_list", json!({"path": "moved/a.md/"})),
    ] {
        let e = s.err(tool, args).await;
        assert!(e.contains("is a file, not a folder"), "{tool}: {e}");
    }
    let hits = s
        .ok("memory_search", json!({"query": "x", "path": "moved/"}))
        .await;
    assert_eq!(hits["total_hits"], 1, "{hits}");
    let history = s.ok("memory_history", json!({"path": "moved/"})).await;
    assert!(
        !history["versions"].as_array().unwrap().is_empty(),
        "{history}"
    );

    // A hidden name is kept and readable, and the result says list and search skip it.
    let r = s
        .call(
            "memory_write",
            json!({"path": ".private/note.md", "content": "x"}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    assert!(r.text.contains("hidden"), "{}", r.text);
    let r = s
        .call(
            "memory_write",
            json!({"path": "visible.md", "content": "x"}),
        )
        .await;
    assert!(!r.text.contains("hidden"), "{}", r.text);
    s.ok("memory_read", json!({"path": ".private/note.md"}))
        .await;
    s.stop().await;
}

#[tokio::test]
async fn a_file_in_the_way_of_the_state_folder_is_named_in_the_error() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store()).unwrap();
    std::fs::write(sb.store().join(".memdir"), "not a folder").unwrap();
    let s = sb.serve().await;
    let e = s
        .err("memory_write", json!({"path": "a.md", "content": "x"}))
        .await;
    assert!(e.contains("/memories/.memdir"), "{e}");
    assert!(!e.contains("does not exist"), "{e}");
    assert!(!sb.store().join("a.md").exists());
    s.stop().await;
}

#[tokio::test]
async fn a_search_hit_deep_in_a_long_line_is_shown_around_the_match() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let line = format!(
        "{} Needle here {}",
        "filler ".repeat(2_000),
        "tail ".repeat(500)
    );
    s.ok("memory_write", json!({"path": "long.md", "content": line}))
        .await;
    let r = s.ok("memory_search", json!({"query": "needle"})).await;
    let snippet = r["hits"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("Needle here"), "{snippet}");
    assert!(snippet.contains('…'), "the cut should show: {snippet}");
    assert!(snippet.len() < 1_200, "{} bytes", snippet.len());
    s.stop().await;
}

#[tokio::test]
async fn results_for_long_paths_and_long_lines_stay_within_the_default_budget() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let budget = 65_536;
    // Paths near the 1,024-byte limit take room in every header.
    let dir = "d".repeat(200);
    let long = |tag: &str| format!("{dir}/{dir}/{dir}/{dir}/{tag}{}.md", "n".repeat(180));
    let a = long("a");
    let b = long("b");
    s.ok(
        "memory_write",
        json!({"path": a, "content": format!("{}NEEDLE\n", "x".repeat(99_990))}),
    )
    .await;
    let edit = s
        .call(
            "memory_edit",
            json!({"path": a, "old_str": "NEEDLE", "new_str": "NEEDLF"}),
        )
        .await;
    assert!(!edit.is_error, "{}", edit.text);
    assert!(edit.text.len() <= budget, "edit: {} bytes", edit.text.len());
    s.ok("memory_edit", json!({"path": a, "new_path": b})).await;
    let history = s.ok("memory_history", json!({"path": b})).await;
    let renamed = history["versions"][0]["version"].as_u64().unwrap();
    let version = s
        .call("memory_history", json!({"path": b, "version": renamed}))
        .await;
    assert!(!version.is_error, "{}", version.text);
    assert!(
        version.text.len() <= budget,
        "version: {} bytes",
        version.text.len()
    );
    assert_eq!(version.structured["content_truncated"], true);

    // A first line that fits with the note is shown whole.
    let sb2 = Sandbox::new();
    let small = sb2.serve_with(&["--result-budget", "4096"]).await;
    let content = format!("{}END\n{}\n", "y".repeat(3_800), "z".repeat(400));
    small
        .ok(
            "memory_write",
            json!({"path": "fit.md", "content": content}),
        )
        .await;
    let r = small.call("memory_read", json!({"path": "fit.md"})).await;
    assert!(r.text.len() <= 4096, "{} bytes", r.text.len());
    assert!(
        r.structured["content"].as_str().unwrap().ends_with("END\n"),
        "{}",
        r.text
    );
    assert!(r.text.contains("view_range [2, -1]"), "{}", r.text);
    // An empty cursor is the first page, as in search and history.
    small.ok("memory_list", json!({"cursor": ""})).await;
    small.stop().await;
    s.stop().await;
}

#[tokio::test]
async fn the_memory_protocol_prompt_speaks_of_the_offered_tools_and_the_topic() {
    use rmcp::model::GetPromptRequestParams;

    let text_of = |r: rmcp::model::GetPromptResult| {
        assert_eq!(r.messages.len(), 1);
        r.messages[0]
            .content
            .as_text()
            .expect("a text message")
            .text
            .clone()
    };
    let sb = Sandbox::new();
    let s = sb
        .serve_with(&["--describe", "memories=Project notes"])
        .await;
    let prompts = s.client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "memory_protocol");
    let args = prompts[0].arguments.as_ref().expect("arguments");
    assert_eq!(
        (args[0].name.as_str(), args[0].required),
        ("topic", Some(false))
    );

    let plain = text_of(
        s.client
            .get_prompt(GetPromptRequestParams::new("memory_protocol"))
            .await
            .unwrap(),
    );
    for part in [
        "- /memories (read-write): Project notes",
        "memory_search",
        "Record progress as you go",
        "Assume interruption",
        "`expires` date in its frontmatter",
        "include_expired: true",
        "older_than_days 90 and sort `oldest`",
    ] {
        assert!(plain.contains(part), "{part:?} in {plain}");
    }
    let mut topic = serde_json::Map::new();
    topic.insert("topic".into(), json!("the billing migration"));
    let about = text_of(
        s.client
            .get_prompt(GetPromptRequestParams::new("memory_protocol").with_arguments(topic))
            .await
            .unwrap(),
    );
    assert!(
        about.contains("memory_search for \"the billing migration\""),
        "{about}"
    );
    let unknown = s
        .client
        .get_prompt(GetPromptRequestParams::new("other"))
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("memory_protocol"), "{unknown}");
    s.stop().await;

    // With only Anthropic's memory tool, the protocol names its commands.
    let s = sb.serve_with(&["--tools", "anthropic"]).await;
    let only = text_of(
        s.client
            .get_prompt(GetPromptRequestParams::new("memory_protocol"))
            .await
            .unwrap(),
    );
    assert!(
        only.contains("view /memories") && !only.contains("memory_search"),
        "{only}"
    );
    s.stop().await;
}

#[tokio::test]
async fn names_no_path_can_name_are_left_out_of_listings() {
    // Made outside memdir: a name with a newline (which would forge a line in a text
    // listing), one in decomposed Unicode, one with a look-alike slash. No tool can
    // address them, so no listing shows them; ordinary names beside them are listed.
    let sb = Sandbox::new();
    for name in [
        "evil\n1.0K\tfake.md",
        "e\u{301}.md",
        "a\u{2215}b.md",
        "ok.md",
    ] {
        std::fs::write(sb.store().join(name), "x\n").unwrap();
    }
    let s = sb.serve_with(&["--tools", "all"]).await;
    let listed = s.ok("memory_list", json!({})).await;
    let paths: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(paths, ["/memories/ok.md"]);
    let view = s
        .call("memory", json!({"command": "view", "path": "/memories"}))
        .await;
    assert_eq!(view.text.lines().count(), 3, "{}", view.text);
    assert!(
        view.text.ends_with("\n2B\t/memories\n2B\t/memories/ok.md"),
        "{}",
        view.text
    );
    s.stop().await;
}

#[tokio::test]
async fn a_trailing_slash_names_a_folder_in_lists_deletes_and_moves_too() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok("memory_write", json!({"path": "a.md", "content": "a\n"}))
        .await;
    s.ok(
        "memory_write",
        json!({"path": "dir/b.md", "content": "b\n"}),
    )
    .await;
    check_delete(
        &s,
        vec![(json!({"path": "a.md/"}), err(&["is a file, not a folder"]))],
    )
    .await;
    for path in ["a.md/", "/memories/a.md/"] {
        let out = s.call("memory_list", json!({"path": path})).await;
        assert!(
            out.is_error
                && out
                    .text
                    .contains("`/memories/a.md` is a file, not a folder"),
            "{path}: {}",
            out.text
        );
    }
    // Without the slash a file lists as itself, and a folder takes the slash.
    let listed = s.ok("memory_list", json!({"path": "a.md"})).await;
    assert_eq!(listed["entries"][0]["path"], "/memories/a.md", "{listed}");
    let listed = s.ok("memory_list", json!({"path": "dir/"})).await;
    assert_eq!(
        listed["entries"][0]["path"], "/memories/dir/b.md",
        "{listed}"
    );
    check_edit(
        &s,
        vec![
            (
                json!({"path": "a.md", "new_path": "q/"}),
                err(&["names a folder"]),
            ),
            (
                json!({"path": "a.md/", "new_path": "q.md"}),
                err(&["is a file, not a folder"]),
            ),
        ],
    )
    .await;
    assert!(sb.store().join("a.md").is_file());
    assert!(!sb.store().join("q").exists() && !sb.store().join("q.md").exists());
    // Folders take it, either way.
    s.ok("memory_edit", json!({"path": "dir/", "new_path": "dir2/"}))
        .await;
    assert!(sb.store().join("dir2/b.md").is_file());
    s.ok("memory_delete", json!({"path": "dir2/"})).await;
    assert!(!sb.store().join("dir2").exists());
    s.stop().await;
}

// Regressions of issue 19's eight defects, each through the real binary.

#[tokio::test]
async fn reading_a_file_with_a_trailing_slash_is_refused_as_delete_and_move_refuse_it() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok("memory_write", json!({"path": "a.md", "content": "a\n"}))
        .await;
    check_read(
        &s,
        vec![
            (
                json!({"path": "/memories/a.md/"}),
                err(&["is a file, not a folder"]),
            ),
            (json!({"path": "a.md/"}), err(&["is a file, not a folder"])),
            (
                json!({"path": "/memories/a.md"}),
                ok(json!({"content": "a\n"})),
            ),
        ],
    )
    .await;
    s.stop().await;
}

/// Regression: a write of the content already stored succeeded as a no-op despite a
/// stale `expected_sha256`, so two clients that both read `n` and both wrote `n + 1` both
/// succeeded, and a counter guarded by the precondition lost increments. A precondition
/// is strict: any mismatch fails (saying when the memory already holds exactly the content
/// sent, which a retry whose first reply was lost needs to know), and so does `if_absent`
/// on any existing memory. Nothing is written and no version is made.
#[tokio::test]
async fn a_stale_precondition_fails_even_when_the_memory_holds_the_content_sent() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let p = "/memories/plan.md";
    s.ok("memory_write", json!({"path": p, "content": "v1"}))
        .await;
    let v2 = s
        .ok("memory_write", json!({"path": p, "content": "v2"}))
        .await;
    let (stale, current) = (sha256_hex(b"v1"), sha256_hex(b"v2"));
    let held = "exactly the content sent";
    check_write(
        &s,
        vec![
            // A retry whose first reply was lost, or a racer that computed the same n + 1.
            (
                json!({"path": p, "content": "v2", "expected_sha256": stale}),
                err(&["precondition failed", &current, held]),
            ),
            (
                json!({"path": p, "content": "v3", "expected_sha256": stale}),
                err_without(&["precondition failed", &current], &[held]),
            ),
            // A restore of the version already there.
            (
                json!({"path": p, "restore_version": v2["version"], "expected_sha256": stale}),
                err(&["precondition failed", &current, held]),
            ),
            (
                json!({"path": p, "content": "v2", "if_absent": true}),
                err(&["already exists", &current, held]),
            ),
            (
                json!({"path": p, "content": "v3", "if_absent": true}),
                err_without(&["already exists", &current], &[held]),
            ),
        ],
    )
    .await;
    check_edit(
        &s,
        vec![(
            json!({"path": p, "append_text": "v3", "expected_sha256": stale}),
            err(&["precondition failed", &current]),
        )],
    )
    .await;
    check_delete(
        &s,
        vec![(
            json!({"path": p, "expected_sha256": stale}),
            err(&["precondition failed", &current]),
        )],
    )
    .await;
    // With a precondition that holds, or none, the same content is a no-op.
    check_write(
        &s,
        vec![
            (
                json!({"path": p, "content": "v2", "expected_sha256": current}),
                ok(json!({"unchanged": true, "content_sha256": current})),
            ),
            (
                json!({"path": p, "content": "v2"}),
                ok(json!({"unchanged": true, "content_sha256": current})),
            ),
        ],
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("plan.md")).unwrap(),
        "v2"
    );
    let history = s.ok("memory_history", json!({"path": p})).await;
    assert_eq!(
        history["versions"].as_array().unwrap().len(),
        2,
        "no version for a refused write or a no-op: {history}"
    );
    s.stop().await;
}

#[tokio::test]
async fn with_every_store_read_only_the_protocol_never_asks_to_write() {
    use rmcp::model::GetPromptRequestParams;

    let sb = Sandbox::new();
    let spec = format!("team={}:ro", sb.store().display());
    for tools in ["default", "anthropic"] {
        let s = Server::start(&["--store", &spec, "--tools", tools], &[]).await;
        let instructions = s.client.peer_info().unwrap().instructions.clone().unwrap();
        let prompt = s
            .client
            .get_prompt(GetPromptRequestParams::new("memory_protocol"))
            .await
            .unwrap();
        let prompt = prompt.messages[0].content.as_text().unwrap().text.clone();
        for text in [&instructions, &prompt] {
            assert!(text.contains("read-only"), "{tools}: {text}");
            for asks_to_write in [
                "Record progress",
                "expected_sha256",
                "delete what",
                "update rather",
            ] {
                assert!(
                    !text.contains(asks_to_write),
                    "{tools}: {asks_to_write:?} in {text}"
                );
            }
        }
        s.stop().await;
    }
}

#[tokio::test]
async fn an_empty_store_or_folder_is_listed_with_its_own_time_not_1970() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.store().join("empty")).unwrap();
    let s = sb.serve().await;
    let stores = s.ok("memory_list", json!({"depth": 1})).await;
    let folder = s
        .ok("memory_list", json!({"path": "/memories/", "depth": 1}))
        .await;
    for entry in [&stores["entries"][0], &folder["entries"][0]] {
        assert_eq!(entry["kind"], "dir", "{entry}");
        assert_eq!(entry["file_count"], 0, "{entry}");
        let at = entry["updated_at"].as_str().unwrap();
        assert!(at.starts_with("20"), "{entry}");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_query_matching_one_file_shows_a_score_a_person_can_read() {
    // BM25's IDF floors at 1e-6 for a word in most files: the score shown is relative
    // to the best hit instead.
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "only.md", "content": "deploy with cargo\n"}),
    )
    .await;
    let out = s.call("memory_search", json!({"query": "cargo"})).await;
    assert_eq!(
        out.structured["hits"][0]["score"], 1.0,
        "{}",
        out.structured
    );
    assert!(out.text.contains("(score 1.000)"), "{}", out.text);
    assert!(!out.text.contains("e-"), "{}", out.text);
    for (i, text) in ["cargo cargo cargo\n", "cargo and many other words here\n"]
        .iter()
        .enumerate()
    {
        s.ok(
            "memory_write",
            json!({"path": format!("more/{i}.md"), "content": text}),
        )
        .await;
    }
    let r = s
        .ok("memory_search", json!({"query": "cargo", "limit": 2}))
        .await;
    let first: Vec<f64> = r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert_eq!(first[0], 1.0, "{r}");
    assert!(first[1] > 0.0 && first[1] <= 1.0, "{r}");
    let rest = s
        .ok(
            "memory_search",
            json!({"query": "cargo", "limit": 2, "cursor": r["next_cursor"]}),
        )
        .await;
    let last = rest["hits"][0]["score"].as_f64().unwrap();
    assert!(
        last > 0.0 && last <= first[1],
        "a later page scores against the same best: {rest}"
    );
    s.stop().await;
}

#[tokio::test]
async fn moving_a_folder_reports_its_files_not_an_empty_hash() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    for (path, content) in [("dir/a.md", "aaa\n"), ("dir/sub/b.md", "bb\n")] {
        s.ok("memory_write", json!({"path": path, "content": content}))
            .await;
    }
    let out = s
        .call("memory_edit", json!({"path": "dir/", "new_path": "moved/"}))
        .await;
    assert!(!out.is_error, "{}", out.text);
    let r = &out.structured;
    assert!(
        r.get("content_sha256").is_none(),
        "a folder has no content hash: {r}"
    );
    assert_eq!(
        (r["file_count"].clone(), r["size_bytes"].clone()),
        (json!(2), json!(7)),
        "{r}"
    );
    assert_eq!(r["renamed_from"], "/memories/dir");
    assert!(
        out.text.contains("folder with 2 files (7 bytes)"),
        "{}",
        out.text
    );
    let file = s
        .ok(
            "memory_edit",
            json!({"path": "moved/a.md", "new_path": "a.md"}),
        )
        .await;
    assert_eq!(file["content_sha256"], sha256_hex(b"aaa\n"));
    assert!(file.get("file_count").is_none(), "{file}");
    s.stop().await;
}

#[tokio::test]
async fn a_secret_stored_by_someone_else_does_not_block_edits_of_other_lines() {
    let sb = Sandbox::new();
    let key = format!("{}{}", "AKIA", "IOSFODNN7EXAMPLX");
    std::fs::write(
        sb.store().join("ops.md"),
        format!("# Ops\nkey = {key}\ntodo\n"),
    )
    .unwrap();
    let s = sb.serve().await;
    let out = s
        .call(
            "memory_edit",
            json!({"path": "ops.md", "old_str": "todo", "new_str": "done"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    let warning = out.structured["warning"].as_str().unwrap();
    assert!(
        warning.contains("line 2") && warning.contains("AWS access key id"),
        "{warning}"
    );
    assert!(out.text.contains("Warning: line 2"), "{}", out.text);
    s.ok(
        "memory_edit",
        json!({"path": "ops.md", "append_text": "more"}),
    )
    .await;
    // What the call adds is still scanned: a new secret, or one made by joining text.
    let gh = format!("ghp_{}", "a".repeat(36));
    let before = std::fs::read_to_string(sb.store().join("ops.md")).unwrap();
    for (args, line) in [
        (
            json!({"path": "ops.md", "append_text": format!("token {gh}")}),
            "line 5",
        ),
        (
            json!({"path": "ops.md", "old_str": "more", "new_str": format!("{}{}", "AKIA", "IOSFODNN7EXAMPLA")}),
            "line 4",
        ),
    ] {
        let e = s.err("memory_edit", args).await;
        assert!(e.contains("looks like a secret") && e.contains(line), "{e}");
    }
    assert_eq!(
        std::fs::read_to_string(sb.store().join("ops.md")).unwrap(),
        before
    );
    // An edit that leaves no secret has no warning.
    let clean = s
        .ok(
            "memory_edit",
            json!({"path": "ops.md", "old_str": format!("key = {key}\n"), "new_str": ""}),
        )
        .await;
    assert!(clean.get("warning").is_none(), "{clean}");
    s.stop().await;
}

#[tokio::test]
async fn memory_list_reviews_what_is_old_oldest_first() {
    let sb = Sandbox::new();
    let day = 86_400;
    for (file, days) in [("a.md", 200u64), ("b.md", 3), ("c.md", 120), ("d.md", 120)] {
        let path = sb.store().join(file);
        std::fs::write(&path, "x\n").unwrap();
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days * day);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
    let s = sb.serve().await;
    let paths = |r: &Value| -> Vec<String> {
        r["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = s
        .ok(
            "memory_list",
            json!({"older_than_days": 90, "sort": "oldest"}),
        )
        .await;
    assert_eq!(
        paths(&r),
        ["/memories/a.md", "/memories/c.md", "/memories/d.md"],
        "{r}"
    );
    assert_eq!(r["total"], 3);
    // Paged one at a time, the same order.
    let mut seen = Vec::new();
    let mut cursor = json!(null);
    loop {
        let mut args = json!({"older_than_days": 90, "sort": "oldest", "limit": 1});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = s.ok("memory_list", args).await;
        seen.extend(paths(&page));
        match page.get("next_cursor") {
            Some(c) => cursor = c.clone(),
            None => break,
        }
    }
    assert_eq!(seen, ["/memories/a.md", "/memories/c.md", "/memories/d.md"]);
    let all = s.ok("memory_list", json!({"sort": "oldest"})).await;
    assert_eq!(paths(&all).last().unwrap(), "/memories/b.md");
    check_list(
        &s,
        vec![
            (json!({"older_than_days": -1}), err(&[])),
            (json!({"sort": "newest"}), err(&[])),
            (json!({"sort": "oldest", "cursor": "nonsense"}), err(&[])),
        ],
    )
    .await;
    s.stop().await;
}
