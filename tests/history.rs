//! Version history through the real binary: versions per mutation with the client as
//! actor, restore, redaction, several processes appending, crashes, and the history folder
//! staying invisible to every tool.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Sandbox, Server, peak_rss_mib, sha256_hex};
use serde_json::{Value, json};

fn log_lines(store: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(store.join(".memdir/history/log.jsonl")).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "the log ends with a whole record"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a well-formed record"))
        .collect()
}

fn versions(r: &Value) -> Vec<Value> {
    r["versions"].as_array().unwrap().clone()
}

/// Checks the `(operation, path)` of each version in a `memory_history` result, newest
/// first.
fn check_operations(r: &Value, expected: &[(&str, &str)], why: &str) {
    let versions = versions(r);
    let got: Vec<(&str, &str)> = versions
        .iter()
        .map(|v| {
            (
                v["operation"].as_str().unwrap(),
                v["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected, "{why}");
}

#[tokio::test]
async fn mutations_make_versions_with_the_client_as_actor() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let w = s
        .ok("memory_write", json!({"path": "a.md", "content": "one\n"}))
        .await;
    assert_eq!(w["version"], 1);
    let e = s
        .ok(
            "memory_edit",
            json!({"path": "a.md", "append_text": "two\n"}),
        )
        .await;
    assert_eq!(e["version"], 2);
    s.ok(
        "memory_edit",
        json!({"path": "a.md", "new_path": "notes/a.md"}),
    )
    .await;
    let d = s.ok("memory_delete", json!({"path": "notes"})).await;
    assert_eq!(d["versions"], json!([4]));
    let unchanged = s
        .ok("memory_write", json!({"path": "b.md", "content": "same"}))
        .await;
    let again = s
        .ok("memory_write", json!({"path": "b.md", "content": "same"}))
        .await;
    assert!(again.get("version").is_none(), "a no-op makes no version");

    let h = s.ok("memory_history", json!({"path": "/memories/"})).await;
    let v = versions(&h);
    check_operations(
        &h,
        &[
            ("created", "/memories/b.md"),
            ("deleted", "/memories/notes/a.md"),
            ("renamed", "/memories/notes/a.md"),
            ("modified", "/memories/a.md"),
            ("created", "/memories/a.md"),
        ],
        "every mutation of the store, newest first",
    );
    assert_eq!(v[0]["version"], unchanged["version"]);
    assert_eq!(v[2]["from"], "/memories/a.md");
    for version in &v {
        let actor = version["actor"].as_str().unwrap();
        assert!(
            actor.starts_with("rmcp/"),
            "the MCP client's clientInfo is the actor: {actor}"
        );
        assert_eq!(version["redacted"], false);
    }
    assert_eq!(
        v[1]["content_sha256"],
        sha256_hex(b"one\ntwo\n"),
        "a deletion records what was deleted"
    );

    // A memory's own history follows it across the rename.
    let mine = s
        .ok("memory_history", json!({"path": "/memories/notes/a.md"}))
        .await;
    check_operations(
        &mine,
        &[
            ("deleted", "/memories/notes/a.md"),
            ("renamed", "/memories/notes/a.md"),
            ("modified", "/memories/a.md"),
            ("created", "/memories/a.md"),
        ],
        "the versions before the move, at the old path, belong to its history",
    );
    let one = s
        .ok("memory_history", json!({"path": "/memories", "version": 1}))
        .await;
    assert_eq!(one["content"], "one\n");
    // A path narrower than the store names the memory the version must be of.
    let own = s
        .ok(
            "memory_history",
            json!({"path": "/memories/a.md", "version": 1}),
        )
        .await;
    assert_eq!(own["content"], "one\n");
    // Its history follows it back through its move: so does a version asked for there.
    let moved = s
        .ok(
            "memory_history",
            json!({"path": "/memories/notes/a.md", "version": 1}),
        )
        .await;
    assert_eq!(moved["content"], "one\n");
    let e = s
        .err(
            "memory_history",
            json!({"path": "/memories/elsewhere.md", "version": 1}),
        )
        .await;
    assert!(e.contains("version 1 is not in the history of `/memories/elsewhere.md` (it is of `/memories/a.md`)"), "{e}");

    // Pagination, newest first.
    let page = s.ok("memory_history", json!({"limit": 2})).await;
    assert_eq!(versions(&page).len(), 2);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let rest = s
        .ok("memory_history", json!({"limit": 10, "cursor": cursor}))
        .await;
    assert_eq!(versions(&rest).len(), 3);
    assert_eq!(versions(&rest)[0]["version"], 3);
    s.stop().await;
}

#[tokio::test]
async fn files_changed_outside_are_recorded_as_external() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("pre.md"), "written by a person\n").unwrap();
    let s = sb.serve().await;
    s.ok(
        "memory_edit",
        json!({"path": "pre.md", "append_text": "agent line\n"}),
    )
    .await;
    std::fs::write(sb.store().join("pre.md"), "edited in an editor\n").unwrap();
    let h = s.ok("memory_history", json!({"path": "pre.md"})).await;
    let v = versions(&h);
    let seen: Vec<(&str, &str)> = v
        .iter()
        .map(|v| {
            (
                v["operation"].as_str().unwrap(),
                v["actor"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen[0],
        ("modified", "external"),
        "the editor's change, noticed: {seen:?}"
    );
    assert_eq!(v[0]["content_sha256"], sha256_hex(b"edited in an editor\n"));
    // The editor's write truncates, then writes: only the settled content is a version,
    // never the empty file in between.
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[1].1.starts_with("rmcp/"), "the agent's edit: {seen:?}");
    assert_eq!(
        seen[2],
        ("created", "external"),
        "the state before the first edit: {seen:?}"
    );
    // The original, never written through memdir, can be restored.
    let first = v.last().unwrap()["version"].as_u64().unwrap();
    s.ok(
        "memory_write",
        json!({"path": "pre.md", "restore_version": first}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("pre.md")).unwrap(),
        "written by a person\n"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_file_rewritten_in_place_while_a_server_watches_is_recorded_once_settled() {
    // A script rewrites a memory in place (truncate, then several chunks with pauses)
    // while an agent keeps searching: the history gets one `external` version, of the
    // finished file, never the empty or half-written states the searches ran into.
    use std::io::Write as _;
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "plan.md", "content": "v1 rollout\n"}),
    )
    .await;
    let search = json!({"query": "rollout"});
    s.ok("memory_search", search.clone()).await;

    let chunks: Vec<String> = (0..5)
        .map(|i| format!("rollout step {i}: {}\n", "x".repeat(200)))
        .collect();
    let finished = chunks.concat();
    let file = sb.store().join("plan.md");
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(file)
            .unwrap();
        for chunk in &chunks {
            // The pauses are the writer's own pace (input), not an ordering of events.
            std::thread::sleep(std::time::Duration::from_millis(15));
            f.write_all(chunk.as_bytes()).unwrap();
        }
    });
    // Searches while the file is being written: each drains the watcher.
    while !writer.is_finished() {
        s.ok("memory_search", search.clone()).await;
    }
    writer.join().unwrap();

    let external = json!({"actor": "external"});
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let got = loop {
        s.ok("memory_search", search.clone()).await;
        let got = versions(&s.ok("memory_history", external.clone()).await);
        if got
            .iter()
            .any(|v| v["content_sha256"] == sha256_hex(finished.as_bytes()))
        {
            break got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rewrite was never recorded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let shas: Vec<&str> = got
        .iter()
        .map(|v| v["content_sha256"].as_str().unwrap())
        .collect();
    assert_eq!(
        shas,
        [sha256_hex(finished.as_bytes())],
        "one version, the finished file (empty is {})",
        sha256_hex(b"")
    );
    // Reading the memory's own history finds nothing more to record.
    let mine = versions(&s.ok("memory_history", json!({"path": "plan.md"})).await);
    assert_eq!(mine.len(), 2, "{mine:?}");
    s.stop().await;
}

#[tokio::test]
async fn restore_brings_back_a_deleted_memory_byte_for_byte() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let content = "línea 1 — ünïcödé\r\nno final newline 数据库";
    let w = s
        .ok(
            "memory_write",
            json!({"path": "keep/me.md", "content": content}),
        )
        .await;
    s.ok("memory_delete", json!({"path": "keep/me.md"})).await;
    assert!(!sb.store().join("keep/me.md").exists());
    let r = s
        .ok(
            "memory_write",
            json!({"path": "keep/me.md", "restore_version": w["version"]}),
        )
        .await;
    assert_eq!(r["created"], true);
    assert_eq!(
        std::fs::read(sb.store().join("keep/me.md")).unwrap(),
        content.as_bytes()
    );
    let h = s
        .ok("memory_history", json!({"path": "keep/me.md", "limit": 1}))
        .await;
    assert_eq!(
        versions(&h)[0]["version"],
        r["version"],
        "the restore is itself a version"
    );
    let e = s
        .err(
            "memory_write",
            json!({"path": "x.md", "restore_version": 999}),
        )
        .await;
    assert!(e.contains("no version 999"), "{e}");
    let e = s
        .err(
            "memory_write",
            json!({"path": "x.md", "content": "a", "restore_version": 1}),
        )
        .await;
    assert!(e.contains("not both"), "{e}");
    s.stop().await;
}

#[tokio::test]
async fn redaction_erases_content_but_keeps_who_and_when() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = Server::start(&["--root", &root, "--allow-secrets"], &[]).await;
    let secret = "api password hunter2-f00ba4-leaked";
    let leaked = s
        .ok(
            "memory_write",
            json!({"path": "ops.md", "content": format!("{secret}\n")}),
        )
        .await;
    s.ok(
        "memory_write",
        json!({"path": "ops.md", "content": "rotated; see the vault\n"}),
    )
    .await;
    s.stop().await;

    let out = std::process::Command::new(common::BIN)
        .args([
            "--root",
            &root,
            "redact",
            "--version",
            &leaked["version"].to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let grep = walkdir::WalkDir::new(sb.store())
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).contains(secret))
        .map(|e| e.path().to_owned())
        .collect::<Vec<_>>();
    assert!(grep.is_empty(), "the secret is still on disk in {grep:?}");
    let s = Server::start(&["--root", &root], &[]).await;
    let h = s.ok("memory_history", json!({})).await;
    let v = versions(&h);
    let redacted = v
        .iter()
        .find(|v| v["version"] == leaked["version"])
        .expect("the record remains");
    assert_eq!(redacted["redacted"], true);
    assert_eq!(redacted["path"], "");
    assert!(redacted["actor"].as_str().unwrap().starts_with("rmcp/"));
    assert!(!redacted["at"].as_str().unwrap().is_empty());
    // Still listed, marked, in its own path's history (its path is gone, its hash kept).
    let own = versions(&s.ok("memory_history", json!({"path": "ops.md"})).await);
    assert_eq!(own.len(), 2, "{own:?}");
    assert_eq!(own[1]["version"], leaked["version"]);
    assert_eq!(
        (own[1]["redacted"].clone(), own[1]["path"].clone()),
        (json!(true), json!(""))
    );
    let other = versions(&s.ok("memory_history", json!({"path": "other.md"})).await);
    assert!(other.is_empty(), "{other:?}");
    let e = s
        .err(
            "memory_write",
            json!({"path": "ops.md", "restore_version": leaked["version"]}),
        )
        .await;
    assert!(e.contains("redacted"), "{e}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_append_exactly_400_records() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let mut tasks = Vec::new();
    for p in 0..4 {
        let s = Arc::new(Server::start(&["--root", &root, "--no-index"], &[]).await);
        tasks.push(tokio::spawn(async move {
            for k in 0..100 {
                match k % 4 {
                    0 | 1 => s.ok("memory_write", json!({"path": "shared.md", "content": format!("process {p} step {k}\n")})).await,
                    2 => s.ok("memory_write", json!({"path": format!("own/{p}.md"), "content": format!("{p}/{k}")})).await,
                    _ => s.ok("memory_edit", json!({"path": format!("own/{p}.md"), "append_text": format!("+{k}")})).await,
                };
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let records = log_lines(&sb.store());
    assert_eq!(records.len(), 400);
    let mut numbers: Vec<u64> = records
        .iter()
        .map(|r| r["version"].as_u64().unwrap())
        .collect();
    numbers.sort();
    assert_eq!(
        numbers,
        (1..=400).collect::<Vec<_>>(),
        "versions are unique and contiguous"
    );
    // Every version's content is in the log, on the first record of that content.
    let carried: std::collections::HashMap<&str, &str> = records
        .iter()
        .filter_map(|r| Some((r["sha256"].as_str()?, r.get("content")?.as_str()?)))
        .collect();
    for r in &records {
        let sha = r["sha256"].as_str().unwrap();
        let content = carried
            .get(sha)
            .unwrap_or_else(|| panic!("no content for {sha}"));
        assert_eq!(sha256_hex(content.as_bytes()), sha);
    }
    let duplicates = records
        .iter()
        .filter(|r| r.get("content").is_some())
        .count();
    assert_eq!(duplicates, carried.len(), "each content is kept once");
}

/// Kills the server paused at `stage` of a write with history on; after a restart the
/// history and the file agree.
async fn history_survives_kill_at(stage: &str, expect_new: bool) {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = Server::start(&["--root", &root], &[]).await;
    s.ok("memory_write", json!({"path": "m.md", "content": "old\n"}))
        .await;
    s.stop().await;
    let mut paused = Server::start(&["--root", &root], &[("MEMDIR_TEST_PAUSE", stage)]).await;
    paused
        .kill_paused_call(
            "memory_write",
            json!({"path": "m.md", "content": "new\n"}),
            stage,
        )
        .await;

    let s = Server::start(&["--root", &root], &[]).await;
    let h = s.ok("memory_history", json!({"path": "m.md"})).await;
    let on_disk = std::fs::read(sb.store().join("m.md")).unwrap();
    assert_eq!(
        on_disk,
        if expect_new {
            b"new\n".as_slice()
        } else {
            b"old\n".as_slice()
        },
        "{stage}"
    );
    assert_eq!(
        versions(&h)[0]["content_sha256"],
        sha256_hex(&on_disk),
        "{stage}: the newest version is the file"
    );
    assert_eq!(
        std::fs::read(sb.store().join(".memdir/lock")).unwrap(),
        b"",
        "{stage}: the intent was resolved"
    );
    let records = log_lines(&sb.store());
    let mut numbers: Vec<u64> = records
        .iter()
        .map(|r| r["version"].as_u64().unwrap())
        .collect();
    numbers.dedup();
    assert_eq!(numbers.len(), records.len(), "{stage}: no version twice");
    s.ok(
        "memory_write",
        json!({"path": "m.md", "content": "after\n"}),
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn sigkill_before_the_rename_leaves_history_and_file_consistent() {
    history_survives_kill_at("after-fsync", false).await;
}

#[tokio::test]
async fn sigkill_after_the_rename_leaves_history_and_file_consistent() {
    history_survives_kill_at("after-rename", true).await;
}

#[tokio::test]
async fn a_torn_log_line_is_cut_at_restart() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = Server::start(&["--root", &root], &[]).await;
    s.ok("memory_write", json!({"path": "a.md", "content": "1"}))
        .await;
    s.stop().await;
    let log = sb.store().join(".memdir/history/log.jsonl");
    let mut torn = std::fs::read(&log).unwrap();
    torn.extend_from_slice(b"{\"version\":2,\"op\":\"modi");
    std::fs::write(&log, torn).unwrap();
    let s = Server::start(&["--root", &root], &[]).await;
    let w = s
        .ok("memory_write", json!({"path": "a.md", "content": "2"}))
        .await;
    assert_eq!(w["version"], 2);
    assert_eq!(log_lines(&sb.store()).len(), 2);
    s.stop().await;
}

#[tokio::test]
async fn retention_keeps_the_current_version() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = Server::start(&["--root", &root], &[]).await;
    for i in 0..6 {
        s.ok(
            "memory_write",
            json!({"path": "a.md", "content": format!("v{i}")}),
        )
        .await;
    }
    s.ok("memory_write", json!({"path": "gone.md", "content": "bye"}))
        .await;
    s.ok("memory_delete", json!({"path": "gone.md"})).await;
    s.stop().await;
    let mut s = Server::start(
        &["--root", &root, "--keep-versions", "2"],
        &[("RUST_LOG", "memdir=info")],
    )
    .await;
    // Retention runs in the background at start, and says so when it is done.
    s.wait_for_stderr("history upkeep dropped").await;
    let h = s.ok("memory_history", json!({"path": "a.md"})).await;
    let v = versions(&h);
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(
        v[0]["content_sha256"],
        sha256_hex(b"v5"),
        "the current version is kept"
    );
    let gone = s.ok("memory_history", json!({"path": "gone.md"})).await;
    assert_eq!(versions(&gone).len(), 2);
    let carrying: Vec<String> = log_lines(&sb.store())
        .iter()
        .filter_map(|r| r.get("content").map(|c| c.as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        carrying,
        ["v4", "v5", "bye"],
        "the log keeps only the content of kept versions"
    );
    s.stop().await;
}

#[tokio::test]
async fn the_history_folder_is_invisible_to_every_tool() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "a.md", "content": "the word xylograph\n"}),
    )
    .await;
    s.ok(
        "memory_write",
        json!({"path": "a.md", "content": "replaced\n"}),
    )
    .await;
    let all = s.ok("memory_list", json!({})).await;
    assert_eq!(all["total"], 1, "{all}");
    let shallow = s.ok("memory_list", json!({"depth": 3})).await;
    assert!(!shallow.to_string().contains(".memdir"), "{shallow}");
    let found = s.ok("memory_search", json!({"query": "xylograph"})).await;
    assert_eq!(
        found["total_hits"], 0,
        "old content lives only in history, which is not searched"
    );
    for path in [
        "/memories/.memdir",
        "/memories/.memdir/history/log.jsonl",
        ".memdir/history",
        "/memories/.memdir/history/objects",
    ] {
        for (tool, args) in [
            ("memory_read", json!({"path": path})),
            ("memory_list", json!({"path": path})),
            ("memory_write", json!({"path": path, "content": "x"})),
            ("memory_delete", json!({"path": path})),
            ("memory_history", json!({"path": path})),
        ] {
            let e = s.err(tool, args).await;
            assert!(e.contains("reserved"), "{tool} {path}: {e}");
        }
    }
    s.stop().await;
}

/// Regression (found by the state-machine test): `restore_version` ignored `if_absent` and
/// overwrote an existing memory.
#[tokio::test]
async fn restore_with_if_absent_never_overwrites() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let first = s
        .ok("memory_write", json!({"path": "d.md", "content": ""}))
        .await;
    s.ok("memory_write", json!({"path": "d.md", "content": "\n"}))
        .await;
    let e = s
        .err(
            "memory_write",
            json!({"path": "d.md", "restore_version": first["version"], "if_absent": true}),
        )
        .await;
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(std::fs::read(sb.store().join("d.md")).unwrap(), b"\n");
    // Where nothing is, the same restore creates the memory.
    let r = s
        .ok(
            "memory_write",
            json!({"path": "copy.md", "restore_version": first["version"], "if_absent": true}),
        )
        .await;
    assert_eq!(r["created"], true);
    s.stop().await;
}

#[tokio::test]
async fn paging_the_history_of_every_store_shows_each_version_once() {
    // Each store numbers its versions from 1, so versions of different stores share
    // numbers: a page must end at a version of one store, not at a number.
    let sb = Sandbox::new();
    let one = sb.store();
    let two = sb.tmp.path().join("two");
    let s = Server::start(
        &[
            "--store",
            &format!("one={}", one.display()),
            "--store",
            &format!("two={}", two.display()),
        ],
        &[],
    )
    .await;
    for i in 0..3 {
        for store in ["one", "two"] {
            s.ok(
                "memory_write",
                json!({"path": format!("/{store}/m{i}.md"), "content": format!("{i}")}),
            )
            .await;
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let mut args = json!({"path": "/", "limit": 1});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = s.ok("memory_history", args).await;
        for v in page["versions"].as_array().unwrap() {
            seen.push(v["path"].as_str().unwrap().to_owned());
        }
        match page.get("next_cursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "/one/m0.md",
            "/one/m1.md",
            "/one/m2.md",
            "/two/m0.md",
            "/two/m1.md",
            "/two/m2.md"
        ],
        "every version once"
    );
    s.stop().await;
}

#[tokio::test]
async fn history_is_read_a_line_at_a_time() {
    // 60 versions of 100 KB of control characters, which the log holds escaped six times
    // over: a 36 MB log. A fresh server reads the history of one memory, one version's
    // content and then writes, without holding the log in memory: its peak stays within
    // a few MiB of a server doing the same on a one-version log.
    let baseline = {
        let sb = Sandbox::new();
        let s = sb.serve().await;
        let content = format!("{:08}\n{}", 0, "\u{1}".repeat(100_000));
        s.ok("memory_write", json!({"path": "a.md", "content": content}))
            .await;
        s.stop().await;
        let s = sb.serve().await;
        s.ok("memory_history", json!({"path": "a.md", "limit": 1}))
            .await;
        s.ok("memory_history", json!({"version": 1})).await;
        s.ok("memory_write", json!({"path": "b.md", "content": "b\n"}))
            .await;
        let peak = peak_rss_mib(s.pid);
        s.stop().await;
        peak
    };
    let sb = Sandbox::new();
    let s = sb.serve().await;
    for i in 0..60 {
        let content = format!("{i:08}\n{}", "\u{1}".repeat(100_000));
        s.ok("memory_write", json!({"path": "a.md", "content": content}))
            .await;
    }
    s.stop().await;
    let log = sb.store().join(".memdir/history/log.jsonl");
    assert!(std::fs::metadata(&log).unwrap().len() > 35_000_000);
    let s = sb.serve().await;
    let page = s
        .ok("memory_history", json!({"path": "a.md", "limit": 1}))
        .await;
    assert_eq!(page["versions"][0]["version"], 60, "{page}");
    let first = s.ok("memory_history", json!({"version": 1})).await;
    assert!(
        first["content"].as_str().unwrap().starts_with("00000000\n"),
        "{first}"
    );
    s.ok("memory_write", json!({"path": "b.md", "content": "b\n"}))
        .await;
    let peak = peak_rss_mib(s.pid);
    assert!(
        peak < baseline + 12,
        "peak memory {peak} MiB with a 36 MB log, {baseline} MiB with a one-version log"
    );
    s.stop().await;
}

#[tokio::test]
async fn history_filters_by_operation_actor_and_time_and_keeps_a_deletions_reason() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = Server::start(&["--root", &root], &[]).await;
    for (path, content) in [("a.md", "a1"), ("a.md", "a2"), ("b.md", "b1")] {
        s.ok("memory_write", json!({"path": path, "content": content}))
            .await;
    }
    let long = "x".repeat(1001);
    let e = s
        .err("memory_delete", json!({"path": "b.md", "reason": long}))
        .await;
    assert!(e.contains("1001 bytes") && e.contains("1000"), "{e}");
    assert!(
        sb.store().join("b.md").exists(),
        "a refused delete deletes nothing"
    );
    let d = s
        .ok(
            "memory_delete",
            json!({"path": "b.md", "reason": "superseded by a.md"}),
        )
        .await;
    // A person's edit, noticed on disk.
    std::fs::write(sb.store().join("a.md"), "a3 by hand").unwrap();
    s.ok("memory_history", json!({"path": "a.md"})).await;

    let deleted = s
        .call("memory_history", json!({"operation": "deleted"}))
        .await;
    let v = versions(&deleted.structured);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0]["version"], d["versions"][0]);
    assert_eq!(v[0]["reason"], "superseded by a.md");
    assert!(
        deleted.text.contains("reason: superseded by a.md"),
        "{}",
        deleted.text
    );
    let modified = versions(
        &s.ok("memory_history", json!({"operation": "modified"}))
            .await,
    );
    assert_eq!(modified.len(), 2, "{modified:?}");
    assert!(modified.iter().all(|v| v.get("reason").is_none()));
    let external = versions(&s.ok("memory_history", json!({"actor": "external"})).await);
    assert_eq!(external.len(), 1, "{external:?}");
    assert_eq!(external[0]["path"], "/memories/a.md");
    // The client's name matches without its version; a name it does not have matches nothing.
    let by_client = versions(&s.ok("memory_history", json!({"actor": "rmcp"})).await);
    assert_eq!(by_client.len(), 4, "{by_client:?}");
    assert!(versions(&s.ok("memory_history", json!({"actor": "rmc"})).await).is_empty());

    let at = |v: &Value| v["at"].as_str().unwrap().to_owned();
    let everything = versions(&s.ok("memory_history", json!({})).await);
    assert_eq!(everything.len(), 5);
    let first = at(everything.last().unwrap());
    assert!(
        versions(&s.ok("memory_history", json!({"until": first})).await).is_empty(),
        "until is exclusive"
    );
    assert_eq!(
        versions(&s.ok("memory_history", json!({"since": first})).await).len(),
        5
    );
    assert_eq!(
        versions(&s.ok("memory_history", json!({"since": "2999-01-01"})).await).len(),
        0
    );
    let both = versions(
        &s.ok("memory_history", json!({"path": "a.md", "operation": "created", "since": "2000-01-01", "until": "2999-01-01"}))
            .await,
    );
    assert_eq!(both.len(), 1, "{both:?}");
    for (args, says) in [
        (json!({"since": "yesterday"}), "since must be a date"),
        (json!({"until": "2026-02-30"}), "until must be a date"),
        (json!({"operation": "edited"}), "operation"),
    ] {
        let e = s.err("memory_history", args).await;
        assert!(e.contains(says), "{e}");
    }
    s.stop().await;
}

#[tokio::test]
async fn an_edit_made_outside_memdir_is_recorded_when_any_process_notices_it() {
    // A person edits a memory in an editor, then deletes it by hand: both are in the
    // history, noticed by a search of a process that never touched the file.
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let writer = Server::start(&["--root", &root], &[]).await;
    writer
        .ok(
            "memory_write",
            json!({"path": "plan.md", "content": "v1 deploy\n"}),
        )
        .await;
    let watcher = Server::start(&["--root", &root], &[]).await;
    // Its first search reconciles and starts watching.
    watcher
        .ok("memory_search", json!({"query": "deploy"}))
        .await;
    std::fs::write(sb.store().join("plan.md"), "v2 deploy, edited by hand\n").unwrap();
    std::fs::write(sb.store().join("new.md"), "a note made by hand\n").unwrap();
    watcher
        .ok("memory_search", json!({"query": "deploy"}))
        .await;
    std::fs::remove_file(sb.store().join("plan.md")).unwrap();
    watcher
        .ok("memory_search", json!({"query": "deploy"}))
        .await;

    let plan = versions(
        &writer
            .ok("memory_history", json!({"path": "plan.md"}))
            .await,
    );
    let ops: Vec<(&str, &str)> = plan
        .iter()
        .map(|v| {
            (
                v["operation"].as_str().unwrap(),
                v["actor"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("deleted", "external"),
            ("modified", "external"),
            ("created", ops[2].1)
        ],
        "{plan:?}"
    );
    assert_eq!(
        plan[1]["content_sha256"],
        sha256_hex(b"v2 deploy, edited by hand\n")
    );
    // The hand-made edit can be restored although the file is gone.
    writer
        .ok(
            "memory_write",
            json!({"path": "plan.md", "restore_version": plan[1]["version"]}),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("plan.md")).unwrap(),
        "v2 deploy, edited by hand\n"
    );
    let new = versions(&writer.ok("memory_history", json!({"path": "new.md"})).await);
    assert_eq!(
        (new.len(), new[0]["actor"].clone()),
        (1, json!("external")),
        "{new:?}"
    );
    // The watcher's own writes are not taken for outside changes.
    watcher
        .ok(
            "memory_write",
            json!({"path": "own.md", "content": "deploy mine\n"}),
        )
        .await;
    watcher
        .ok("memory_search", json!({"query": "deploy"}))
        .await;
    let external = versions(
        &writer
            .ok("memory_history", json!({"actor": "external"}))
            .await,
    );
    assert_eq!(external.len(), 3, "{external:?}");
    watcher.stop().await;
    writer.stop().await;
}

#[tokio::test]
async fn a_process_that_records_nothing_does_not_hide_a_change_from_one_that_does() {
    // A read-only process and one with history off search first after a person's edit,
    // with the same index location as the writable process that comes next: the edit
    // must still become an `external` version when that process syncs.
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let search = json!({"query": "rollout"});
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "plan.md", "content": "v1 rollout\n"}),
    )
    .await;
    s.ok("memory_search", search.clone()).await;
    s.stop().await;

    std::fs::write(sb.store().join("plan.md"), "v2 rollout, edited by hand\n").unwrap();
    let store_ro = format!("memories={root}:ro");
    for args in [
        vec!["--store", store_ro.as_str()],
        vec!["--root", &root, "--no-history"],
    ] {
        let other = Server::start(&args, &[]).await;
        let hits = other.ok("memory_search", json!({"query": "hand"})).await;
        assert_eq!(hits["total_hits"], 1, "{args:?} sees the edit: {hits}");
        other.stop().await;
    }

    let s = sb.serve().await;
    s.ok("memory_search", search).await;
    // (Not asked by path: reading a memory's history records what it finds by itself.)
    let got = versions(&s.ok("memory_history", json!({"actor": "external"})).await);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0]["content_sha256"],
        sha256_hex(b"v2 rollout, edited by hand\n")
    );
    s.stop().await;
}

#[tokio::test]
async fn a_change_made_while_no_memdir_ran_is_recorded_at_the_next_start() {
    // A person edits a memory while no memdir runs, then (again while none runs) deletes
    // it by hand: the next process to start records each as it syncs its index, before
    // anything asks for that file's history, so the edit can still be restored.
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let plan = sb.store().join("plan.md");
    let search = json!({"query": "deploy"});
    let external = json!({"actor": "external"});

    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "plan.md", "content": "v1 deploy\n"}),
    )
    .await;
    s.ok("memory_search", search.clone()).await;
    s.stop().await;

    std::fs::write(&plan, "v2 deploy, edited by hand\n").unwrap();
    std::fs::write(sb.store().join("new.md"), "a deploy note made by hand\n").unwrap();
    // A read-only process records nothing. (Here its index is in a folder of its own;
    // by default it would have a file of its own beside the writers' index.)
    let before = log_lines(&sb.store()).len();
    let store_ro = format!("memories={root}:ro");
    let ro_index = sb.tmp.path().join("ro-index");
    let ro = Server::start(
        &[
            "--store",
            &store_ro,
            "--index-dir",
            ro_index.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    ro.ok("memory_search", search.clone()).await;
    ro.stop().await;
    assert_eq!(
        log_lines(&sb.store()).len(),
        before,
        "read-only: no records"
    );

    // The first search waits for the start-up sync, which records what it found.
    let s = sb.serve().await;
    s.ok("memory_search", search.clone()).await;
    let got = versions(&s.ok("memory_history", external.clone()).await);
    let ops: Vec<(&str, &str)> = got
        .iter()
        .map(|v| {
            (
                v["operation"].as_str().unwrap(),
                v["path"].as_str().unwrap(),
            )
        })
        .collect();
    let mut sorted = ops.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            ("created", "/memories/new.md"),
            ("modified", "/memories/plan.md")
        ],
        "{got:?}"
    );
    // Nothing is recorded twice, and memdir's own writes are not taken for outside ones.
    s.ok(
        "memory_write",
        json!({"path": "own.md", "content": "deploy mine\n"}),
    )
    .await;
    s.stop().await;
    let s = sb.serve().await;
    s.ok("memory_search", search.clone()).await;
    assert_eq!(
        versions(&s.ok("memory_history", external.clone()).await).len(),
        2
    );
    s.stop().await;

    // Deleted by hand; the next process also finds it with an index built anew (which
    // cannot tell what changed: the history is compared with the files).
    std::fs::remove_file(&plan).unwrap();
    let fresh = sb.tmp.path().join("fresh-index");
    let s = sb
        .serve_with(&["--index-dir", fresh.to_str().unwrap()])
        .await;
    s.ok("memory_search", search.clone()).await;
    let got = versions(&s.ok("memory_history", external.clone()).await);
    assert_eq!(
        (got[0]["operation"].as_str(), got[0]["path"].as_str()),
        (Some("deleted"), Some("/memories/plan.md")),
        "{got:?}"
    );
    assert_eq!(got.len(), 3, "{got:?}");
    let plan_history = versions(&s.ok("memory_history", json!({"path": "plan.md"})).await);
    let ops: Vec<(&str, &str)> = plan_history
        .iter()
        .map(|v| {
            (
                v["operation"].as_str().unwrap(),
                v["actor"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("deleted", "external"),
            ("modified", "external"),
            ("created", ops[2].1)
        ],
        "{plan_history:?}"
    );
    // The edit made by hand is kept, although the file is gone.
    let edited = s
        .ok(
            "memory_history",
            json!({"path": "/memories/", "version": plan_history[1]["version"]}),
        )
        .await;
    assert_eq!(edited["content"], "v2 deploy, edited by hand\n");
    s.stop().await;
}

/// Regression: a folder delete or move recorded only the visible memories in it, though
/// it removed or moved the hidden ones (`.name`, `node_modules`) too, which a tool can
/// write: their deletion was recorded later, if at all, by "external". Every file a
/// folder delete removes, and every file a folder move moves, now has its version by the
/// client, and a deleted hidden memory can be restored.
#[tokio::test]
async fn folder_deletes_and_moves_record_hidden_memories_too() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    let files = [
        ("f/v.md", "visible\n"),
        ("f/.h.md", "hidden\n"),
        ("f/node_modules/n.md", "module\n"),
    ];
    for (path, content) in files {
        s.ok("memory_write", json!({"path": path, "content": content}))
            .await;
    }
    // A file that could not be a memory (not UTF-8) moves and goes with its folder,
    // unrecorded.
    std::fs::create_dir_all(sb.store().join("f/.git")).unwrap();
    std::fs::write(sb.store().join("f/.git/blob"), [0xff, 0xfe, 0x00, 0x9c]).unwrap();
    let moved = s
        .ok("memory_edit", json!({"path": "f/", "new_path": "g/"}))
        .await;
    assert_eq!(moved["file_count"], 3, "{moved}");
    for (path, _) in files {
        let new = path.replacen("f/", "g/", 1);
        let h = s.ok("memory_history", json!({"path": new})).await;
        let newest = &versions(&h)[0];
        assert_eq!(newest["operation"], "renamed", "{new}: {h}");
        assert_eq!(newest["from"], format!("/memories/{path}"), "{h}");
        assert_ne!(newest["actor"], "external", "{h}");
    }
    let deleted = s.ok("memory_delete", json!({"path": "g/"})).await;
    assert_eq!(
        deleted["versions"].as_array().unwrap().len(),
        3,
        "{deleted}"
    );
    for (path, content) in files {
        let new = path.replacen("f/", "g/", 1);
        let h = s.ok("memory_history", json!({"path": new})).await;
        let newest = &versions(&h)[0];
        assert_eq!(newest["operation"], "deleted", "{new}: {h}");
        assert_ne!(newest["actor"], "external", "{h}");
        // What was deleted comes back whole from its last version.
        let restored = s
            .ok(
                "memory_write",
                json!({"path": new, "restore_version": versions(&h)[1]["version"]}),
            )
            .await;
        assert_eq!(restored["created"], true, "{restored}");
        assert_eq!(
            std::fs::read_to_string(sb.store().join(&new)).unwrap(),
            content
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn without_history_earlier_versions_stay_restorable_and_nothing_is_recorded() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = sb.serve().await;
    for content in ["v1\n", "v2\n"] {
        s.ok("memory_write", json!({"path": "k.md", "content": content}))
            .await;
    }
    s.stop().await;
    let log = log_lines(&sb.store()).len();
    let off = Server::start(&["--root", &root, "--no-history"], &[]).await;
    let r = off
        .ok(
            "memory_write",
            json!({"path": "k.md", "restore_version": 1}),
        )
        .await;
    assert_eq!(r["version"], Value::Null, "{r}");
    assert_eq!(
        std::fs::read_to_string(sb.store().join("k.md")).unwrap(),
        "v1\n"
    );
    off.stop().await;
    assert_eq!(log_lines(&sb.store()).len(), log, "a version was recorded");
}
