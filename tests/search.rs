//! Search through the real binary: ranking, multilingual recall against a substring scan,
//! staying true to files changed outside the server and by other processes, the index as a
//! disposable cache, hostile queries, and progress while indexing.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::{Sandbox, Server};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, NumberOrString, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

/// `memdir --root STORE --no-index` for a sandbox: every search scans the files.
async fn serve_scan(sb: &Sandbox) -> Server {
    Server::start(&["--root", sb.store().to_str().unwrap(), "--no-index"], &[]).await
}

/// `memdir --root STORE --index-dir INDEX` for a sandbox.
async fn serve(sb: &Sandbox) -> Server {
    let index = index_dir(sb);
    Server::start(
        &[
            "--root",
            sb.store().to_str().unwrap(),
            "--index-dir",
            index.to_str().unwrap(),
        ],
        &[],
    )
    .await
}

fn index_dir(sb: &Sandbox) -> std::path::PathBuf {
    sb.tmp.path().join("index")
}

async fn hit_paths(s: &Server, query: &str) -> BTreeSet<String> {
    let r = s
        .ok("memory_search", json!({"query": query, "limit": 100}))
        .await;
    assert_eq!(r["relaxed"], false, "{query}: {r}");
    r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Files under the store whose lowercased text contains `needle` lowercased.
fn substring_scan(store: &Path, needle: &str) -> BTreeSet<String> {
    let needle = needle.to_lowercase();
    walkdir::WalkDir::new(store)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_type().is_file() && !e.path().components().any(|c| c.as_os_str() == ".memdir")
        })
        .filter(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .to_lowercase()
                .contains(&needle)
        })
        .map(|e| {
            format!(
                "/memories/{}",
                e.path().strip_prefix(store).unwrap().to_string_lossy()
            )
        })
        .collect()
}

#[tokio::test]
async fn dense_documents_rank_above_single_mentions() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("once.md"), "A long note that mentions compaction once among many other words about unrelated topics, lists and plans.\n").unwrap();
    std::fs::write(
        sb.store().join("dense.md"),
        "compaction\ncompaction strategy\nwhen compaction runs\n",
    )
    .unwrap();
    std::fs::write(sb.store().join("none.md"), "nothing relevant\n").unwrap();
    let s = serve(&sb).await;
    let r = s.ok("memory_search", json!({"query": "compaction"})).await;
    assert_eq!(r["total_hits"], 2);
    assert_eq!(r["hits"][0]["path"], "/memories/dense.md");
    assert!(r["hits"][0]["score"].as_f64().unwrap() > r["hits"][1]["score"].as_f64().unwrap());
    s.stop().await;
}

#[tokio::test]
async fn cjk_and_cyrillic_recall_equals_a_substring_scan() {
    let sb = Sandbox::new();
    let lines = [
        "我们的数据库很快",
        "数据库设计",
        "数据很重要",
        // The bigrams of 数据库 touch across two runs here, but the word is not in it.
        "数据 据库分开",
        "大数据库集群",
        "没有相关内容",
        "用数据库存储",
        "데이터베이스를 사용합니다",
        "데이터베이스 설계",
        "메모리에 저장",
        "メモリを使う",
        "キャッシュメモリ",
        "Память агента",
        "ПАМЯТЬ и диск",
        "в память записано",
        "памятка не то",
        "plain English memory notes",
    ];
    for (i, line) in lines.iter().enumerate() {
        std::fs::create_dir_all(sb.store().join(format!("d{}", i % 3))).unwrap();
        std::fs::write(
            sb.store().join(format!("d{}/f{i}.md", i % 3)),
            format!("title {i}\n{line}\nend\n"),
        )
        .unwrap();
    }
    let s = serve(&sb).await;
    for query in [
        "数据库",
        "数据",
        "데이터베이스",
        "메모리",
        "メモリ",
        "память",
        "ПАМЯТЬ",
        "Память",
    ] {
        let expected = substring_scan(&sb.store(), query);
        assert!(!expected.is_empty(), "{query}: the fixture has matches");
        // The memories that hold the word first; after them, relaxed, those that hold
        // only a piece of a longer CJK word.
        let r = s
            .ok("memory_search", json!({"query": query, "limit": 100}))
            .await;
        let got: Vec<&str> = r["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap())
            .collect();
        let whole: BTreeSet<String> = got
            .iter()
            .take(expected.len())
            .map(|p| p.to_string())
            .collect();
        assert_eq!(whole, expected, "{query}: {r}");
        assert_eq!(r["relaxed"], got.len() > expected.len(), "{query}: {r}");
    }
    s.stop().await;
}

/// Memories for the word-form and word-order queries of Japanese and Chinese.
fn cjk_form_store(sb: &Sandbox) {
    for (name, text) in [
        ("ate.md", "昨日は新宿でラーメンを食べた。\n"),
        ("will-eat.md", "明日は大阪で寿司を食べる予定です。\n"),
        ("backup.md", "每天晚上做一次数据库备份。\n"),
        ("meeting.md", "会议改到周五下午。\n"),
    ] {
        std::fs::write(sb.store().join(name), text).unwrap();
    }
}

#[tokio::test]
async fn cjk_words_are_found_in_another_form_or_order() {
    let sb = Sandbox::new();
    cjk_form_store(&sb);
    let s = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for server in [&s, &scan] {
        // A Japanese verb in another form: its kanji, whatever the ending.
        for (query, other_form) in [("食べた", "will-eat.md"), ("食べる", "ate.md")] {
            let got = hit_paths(server, query).await;
            assert!(
                got.contains(&format!("/memories/{other_form}")),
                "{query}: {got:?}"
            );
            assert!(!got.contains("/memories/meeting.md"), "{query}: {got:?}");
        }
        // A phrase with its particles: its words, wherever they stand (then, relaxed,
        // memories with some of them).
        let r = server
            .ok("memory_search", json!({"query": "新宿で食べる"}))
            .await;
        assert_eq!(r["hits"][0]["path"], "/memories/ate.md", "{r}");
        assert_eq!(r["total_hits"], 2, "{r}");
        // A Chinese compound in another order: after every memory holding it whole (none
        // here), the memories holding its pieces.
        let r = server
            .ok("memory_search", json!({"query": "备份数据库"}))
            .await;
        assert_eq!(r["relaxed"], true, "{r}");
        assert_eq!(r["total_hits"], 1, "{r}");
        assert_eq!(r["hits"][0]["path"], "/memories/backup.md", "{r}");
        // Quoted, a phrase is found only as written.
        for (query, expect) in [
            ("\"新宿で食べる\"", vec![]),
            ("\"新宿でラーメンを食べた\"", vec!["/memories/ate.md"]),
            ("\"备份数据库\"", vec![]),
        ] {
            let r = server.ok("memory_search", json!({"query": query})).await;
            assert_eq!(r["relaxed"], false, "{query}: {r}");
            let got: Vec<&str> = r["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["path"].as_str().unwrap())
                .collect();
            assert_eq!(got, expect, "{query}: {r}");
        }
    }
    s.stop().await;
    scan.stop().await;
}

#[tokio::test]
async fn edits_on_disk_are_seen_by_the_next_search() {
    let sb = Sandbox::new();
    let s = serve(&sb).await;
    s.ok(
        "memory_write",
        json!({"path": "notes/a.md", "content": "the aardvark sleeps\n"}),
    )
    .await;
    assert_eq!(hit_paths(&s, "aardvark").await.len(), 1);

    // An editor rewrites the file in place, another creates one, `rm` removes one.
    std::fs::write(sb.store().join("notes/a.md"), "the okapi sleeps\n").unwrap();
    std::fs::write(sb.store().join("notes/new.md"), "a fresh okapi note\n").unwrap();
    assert_eq!(hit_paths(&s, "okapi").await.len(), 2);
    assert!(
        hit_paths(&s, "aardvark").await.is_empty(),
        "the old text is no longer found"
    );
    std::fs::remove_file(sb.store().join("notes/new.md")).unwrap();
    assert_eq!(
        hit_paths(&s, "okapi").await,
        BTreeSet::from(["/memories/notes/a.md".to_owned()])
    );

    // A whole folder moved in from elsewhere, then renamed, then removed.
    let incoming = sb.tmp.path().join("incoming");
    std::fs::create_dir_all(incoming.join("deep")).unwrap();
    std::fs::write(incoming.join("deep/x.md"), "quokka facts\n").unwrap();
    std::fs::rename(&incoming, sb.store().join("moved")).unwrap();
    assert_eq!(
        hit_paths(&s, "quokka").await,
        BTreeSet::from(["/memories/moved/deep/x.md".to_owned()])
    );
    std::fs::rename(sb.store().join("moved"), sb.store().join("renamed")).unwrap();
    assert_eq!(
        hit_paths(&s, "quokka").await,
        BTreeSet::from(["/memories/renamed/deep/x.md".to_owned()])
    );
    std::fs::remove_dir_all(sb.store().join("renamed")).unwrap();
    assert!(hit_paths(&s, "quokka").await.is_empty());

    // Snippets come from the file as it is now.
    std::fs::write(sb.store().join("notes/a.md"), "line one\nthe okapi wakes\n").unwrap();
    let r = s.ok("memory_search", json!({"query": "okapi"})).await;
    assert_eq!(r["hits"][0]["snippet"], "     2\tthe okapi wakes");
    s.stop().await;
}

#[tokio::test]
async fn equal_scores_page_by_path_without_gaps_or_repeats() {
    // Identical files score the same: pages must walk them in path order, each once,
    // whichever order they were indexed in.
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("best.md"), "tern tern tern\n").unwrap();
    let s = serve(&sb).await;
    assert_eq!(hit_paths(&s, "tern").await.len(), 1);
    // Indexed after the start, in this order (not the paths' order).
    for name in ["m", "c", "x", "a", "q", "e", "k"] {
        s.ok(
            "memory_write",
            json!({"path": format!("{name}.md"), "content": "the same tern note\n"}),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"query": "tern", "limit": 3});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = s.ok("memory_search", args).await;
        assert_eq!(page["total_hits"], 8);
        for h in page["hits"].as_array().unwrap() {
            seen.push(h["path"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let want: Vec<String> = ["best", "a", "c", "e", "k", "m", "q", "x"]
        .iter()
        .map(|n| format!("/memories/{n}.md"))
        .collect();
    assert_eq!(seen, want);
    s.stop().await;
}

#[tokio::test]
async fn own_mutations_are_seen_by_the_next_search() {
    // A watching process leaves its own changes to its watcher: each search right after a
    // mutation must already see it, new folders included.
    let sb = Sandbox::new();
    let s = serve(&sb).await;
    assert!(
        hit_paths(&s, "heron").await.is_empty(),
        "index built, watching"
    );
    let one = |p: &str| BTreeSet::from([format!("/memories/{p}")]);
    for i in 0..20 {
        let path = format!("deep/n{i}/er/h{i}.md");
        s.ok(
            "memory_write",
            json!({"path": path, "content": format!("a heron{i} here\n")}),
        )
        .await;
        assert_eq!(hit_paths(&s, &format!("heron{i}")).await, one(&path));
    }
    s.ok(
        "memory_edit",
        json!({"path": "deep/n3/er/h3.md", "old_str": "heron3", "new_str": "ibis"}),
    )
    .await;
    assert!(hit_paths(&s, "heron3").await.is_empty());
    assert_eq!(hit_paths(&s, "ibis").await, one("deep/n3/er/h3.md"));
    s.ok(
        "memory_edit",
        json!({"path": "deep/n3/er/h3.md", "insert_line": 0, "insert_text": "kestrel\n"}),
    )
    .await;
    assert_eq!(hit_paths(&s, "kestrel").await, one("deep/n3/er/h3.md"));
    s.ok(
        "memory_edit",
        json!({"path": "deep/n3/er/h3.md", "new_path": "other/h3.md"}),
    )
    .await;
    assert_eq!(hit_paths(&s, "ibis").await, one("other/h3.md"));
    s.ok(
        "memory_edit",
        json!({"path": "deep/n4", "new_path": "moved/n4"}),
    )
    .await;
    assert_eq!(hit_paths(&s, "heron4").await, one("moved/n4/er/h4.md"));
    s.ok("memory_delete", json!({"path": "deep"})).await;
    for i in [0, 5, 19] {
        assert!(hit_paths(&s, &format!("heron{i}")).await.is_empty());
    }
    s.ok("memory_delete", json!({"path": "other/h3.md"})).await;
    assert!(hit_paths(&s, "kestrel").await.is_empty());
    assert_eq!(hit_paths(&s, "heron4").await, one("moved/n4/er/h4.md"));
    s.stop().await;
}

#[tokio::test]
async fn a_write_by_another_process_is_found() {
    let sb = Sandbox::new();
    let a = serve(&sb).await;
    let b = serve(&sb).await;
    assert!(hit_paths(&a, "zebra").await.is_empty());
    assert!(hit_paths(&b, "zebra").await.is_empty());
    b.ok(
        "memory_write",
        json!({"path": "b.md", "content": "a zebra crossing\n"}),
    )
    .await;
    assert_eq!(
        hit_paths(&a, "zebra").await,
        BTreeSet::from(["/memories/b.md".to_owned()])
    );
    a.ok(
        "memory_edit",
        json!({"path": "b.md", "old_str": "zebra", "new_str": "pelican"}),
    )
    .await;
    assert!(hit_paths(&b, "zebra").await.is_empty());
    assert_eq!(hit_paths(&b, "pelican").await.len(), 1);
    b.ok(
        "memory_edit",
        json!({"path": "b.md", "new_path": "birds/b.md"}),
    )
    .await;
    assert_eq!(
        hit_paths(&a, "pelican").await,
        BTreeSet::from(["/memories/birds/b.md".to_owned()])
    );
    a.ok("memory_delete", json!({"path": "birds"})).await;
    assert!(hit_paths(&b, "pelican").await.is_empty());
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn deleting_the_index_changes_no_result() {
    let sb = Sandbox::new();
    for i in 0..40 {
        std::fs::write(
            sb.store().join(format!("n{i}.md")),
            format!(
                "note {i} about rust and {}\n",
                if i % 3 == 0 { "tokio" } else { "serde" }
            ),
        )
        .unwrap();
    }
    let queries = ["rust", "tokio", "\"about rust\"", "ser*", "tokio serde"];
    let s = serve(&sb).await;
    let mut before = Vec::new();
    for q in queries {
        before.push(
            s.ok("memory_search", json!({"query": q, "limit": 100}))
                .await,
        );
    }
    std::fs::remove_dir_all(index_dir(&sb)).unwrap();
    for (q, expected) in queries.iter().zip(&before) {
        assert_eq!(
            &s.ok("memory_search", json!({"query": q, "limit": 100}))
                .await,
            expected,
            "{q}"
        );
    }
    assert!(index_dir(&sb).exists(), "the index was rebuilt");
    s.stop().await;
    std::fs::remove_dir_all(index_dir(&sb)).unwrap();
    let fresh = serve(&sb).await;
    for (q, expected) in queries.iter().zip(&before) {
        assert_eq!(
            &fresh
                .ok("memory_search", json!({"query": q, "limit": 100}))
                .await,
            expected,
            "{q}"
        );
    }
    fresh.stop().await;
}

#[tokio::test]
async fn indexed_search_agrees_with_the_scan() {
    let sb = Sandbox::new();
    let words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "数据库",
        "Память",
        "메모리에",
        "epsilon",
    ];
    for i in 0..60 {
        let text: String = (0..(i % 7 + 2))
            .map(|j| {
                format!(
                    "{} {}\n",
                    words[(i * 3 + j) % words.len()],
                    words[(i + j * 5) % words.len()]
                )
            })
            .collect();
        std::fs::write(sb.store().join(format!("f{i}.md")), text).unwrap();
    }
    let indexed = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for q in [
        "alpha",
        "alpha beta",
        "\"alpha beta\"",
        "gam*",
        "数据库",
        "память",
        "메모리",
        "zzz alpha",
        "데이",
        "库",
    ] {
        let a = indexed
            .ok("memory_search", json!({"query": q, "limit": 100}))
            .await;
        let b = scan
            .ok("memory_search", json!({"query": q, "limit": 100}))
            .await;
        let paths = |v: &Value| -> BTreeSet<String> {
            v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["path"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(a["total_hits"], b["total_hits"], "{q}");
        assert_eq!(a["relaxed"], b["relaxed"], "{q}");
        assert_eq!(paths(&a), paths(&b), "{q}");
    }
}

#[tokio::test]
async fn hostile_queries_never_fail() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.store().join("a.md"),
        "near the (paren) and a:b here, x-ray\n",
    )
    .unwrap();
    let s = serve(&sb).await;
    let long = "lorem ipsum dolor ".repeat(600);
    for q in [
        "\"",
        "-x",
        "a:b",
        "(",
        ")",
        "*",
        "NEAR(",
        "NEAR(a b)",
        "\0",
        "!!!",
        "\"\"\"",
        "AND",
        "OR NOT",
        "{body}:x",
        "^",
        "x\"y",
        "a*b*",
        "* *",
        long.as_str(),
        "💥",
        "\u{202e}",
    ] {
        let out = s.call("memory_search", json!({"query": q})).await;
        assert!(
            !out.is_error,
            "query {:?} failed: {}",
            &q[..q.len().min(30)],
            out.text
        );
    }
    assert_eq!(hit_paths(&s, "a:b").await.len(), 1);
    assert_eq!(hit_paths(&s, "NEAR(").await.len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn huge_queries_are_read_within_their_bounds() {
    // A phrase of 20,000 words (its first 16 are matched), a query whose words after its
    // first KiB are not read, 26 prefixes (8 count), and long lines with long query words
    // to find in them for the snippet: all answered, each by its bounded form (these took
    // 0.6–3 GB or minutes before the bounds).
    let sb = Sandbox::new();
    let run = "a ".repeat(30_000);
    std::fs::write(sb.store().join("run.md"), format!("common\n{run}\n")).unwrap();
    for i in 0..3 {
        let long = "x".repeat(90_000);
        std::fs::write(
            sb.store().join(format!("long{i}.md")),
            format!("common {long}\n"),
        )
        .unwrap();
    }
    let s = serve(&sb).await;
    let phrase = format!("\"{}b\"", "a ".repeat(20_000));
    assert_eq!(
        hit_paths(&s, &phrase).await.into_iter().collect::<Vec<_>>(),
        ["/memories/run.md"]
    );
    let padded = format!("common {} absentword", " ".repeat(2000));
    assert_eq!(hit_paths(&s, &padded).await.len(), 4);
    let prefixes = ('a'..='z').map(|c| format!("{c}{c}* ")).collect::<String>() + "common";
    let out = s.call("memory_search", json!({"query": prefixes})).await;
    assert!(!out.is_error, "{}", out.text);
    let words = format!("common {}", vec!["x".repeat(5_000); 60].join(" "));
    let out = s.call("memory_search", json!({"query": words})).await;
    assert_eq!(out.structured["total_hits"], 4, "{}", out.text);
    // Each of these says it was cut; a short query does not.
    assert_eq!(out.structured["query_cut"], true);
    assert!(
        out.text
            .starts_with("The query is longer than a search reads"),
        "{}",
        out.text
    );
    let short = s.ok("memory_search", json!({"query": "common"})).await;
    assert!(short.get("query_cut").is_none(), "{short}");
    // A long query that finds nothing is not echoed whole.
    let nothing = format!("zzzz{}", "q".repeat(200_000));
    let out = s.call("memory_search", json!({"query": nothing})).await;
    assert!(out.text.len() < 1_000, "{} bytes", out.text.len());
    s.stop().await;
}

/// A client that records the progress notifications it receives.
#[derive(Clone, Default)]
struct ProgressRecorder(Arc<Mutex<Vec<Seen>>>, Arc<tokio::sync::Notify>);

impl ProgressRecorder {
    /// Waits (at most 20 s) until a notification has come, and returns every one
    /// received by then.
    async fn wait_for_any(&self) -> Vec<Seen> {
        let seen = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            loop {
                // Registered before looking, so a notification meanwhile still wakes it.
                let more = self.1.notified();
                let seen = self.0.lock().unwrap().clone();
                if !seen.is_empty() {
                    return seen;
                }
                more.await;
            }
        })
        .await;
        seen.unwrap_or_default()
    }
}

/// One progress notification: progress and total.
type Seen = (f64, Option<f64>);

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push((params.progress, params.total));
        self.1.notify_waiters();
    }
}

#[tokio::test]
async fn a_long_index_build_reports_progress() {
    let sb = Sandbox::new();
    for d in 0..30 {
        std::fs::create_dir_all(sb.store().join(format!("d{d}"))).unwrap();
        for f in 0..100 {
            std::fs::write(
                sb.store().join(format!("d{d}/f{f}.md")),
                format!("note {d} {f} with some words to index\n").repeat(20),
            )
            .unwrap();
        }
    }
    let recorder = ProgressRecorder::default();
    let index = index_dir(&sb);
    let cmd = tokio::process::Command::new(common::BIN);
    let mut cmd = cmd;
    cmd.args([
        "--root",
        sb.store().to_str().unwrap(),
        "--index-dir",
        index.to_str().unwrap(),
    ])
    .env("RUST_LOG", "memdir=warn");
    let (transport, _stderr) = common::spawn_mcp(cmd);
    let client = recorder.clone().serve(transport).await.unwrap();
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::String("search-1".into())));
    let mut params = CallToolRequestParams::new("memory_search")
        .with_arguments(json!({"query": "words"}).as_object().unwrap().clone());
    params.meta = Some(meta);
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(result.structured_content.unwrap()["total_hits"], 3000);
    // Notifications are sent on tasks of their own, so the last may trail the result: a
    // round trip after it lets those through first; then at least one must have come.
    client.list_tools(None).await.expect("tools/list");
    let seen = recorder.wait_for_any().await;
    assert!(
        !seen.is_empty(),
        "no progress notification during a 3,000-file index build"
    );
    assert!(
        seen.iter().all(|(_, total)| *total == Some(3000.0)),
        "{seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0].0 <= w[1].0),
        "progress only grows: {seen:?}"
    );
    let _ = client.cancel().await;
}

/// Three memories of the kind an agent keeps, one in Russian.
fn word_form_store(sb: &Sandbox) {
    for (name, text) in [
        (
            "testing.md",
            "Don't mock the database in tests: a mocked database hid a broken migration.\n",
        ),
        (
            "deploy.md",
            "The deployment pipeline runs on GitHub Actions; releases are tagged v*.\n",
        ),
        (
            "answers.md",
            "Пользователь предпочитает короткие ответы без вступлений.\n",
        ),
        (
            "other.md",
            "Lunch is at noon on Fridays; the team orders pizza.\n",
        ),
    ] {
        std::fs::write(sb.store().join(name), text).unwrap();
    }
}

/// Each query finds `expect` first, as another form of its words.
async fn check_forms(s: &Server, cases: &[(&str, &str)]) {
    for (query, expect) in cases {
        let r = s.ok("memory_search", json!({"query": query})).await;
        let hit = &r["hits"][0];
        assert_eq!(hit["path"], format!("/memories/{expect}"), "{query}: {r}");
        assert!(
            hit["matched"]
                .as_array()
                .unwrap()
                .contains(&json!("word forms")),
            "{query}: {r}"
        );
    }
}

#[tokio::test]
async fn words_are_found_in_their_other_forms() {
    let sb = Sandbox::new();
    word_form_store(&sb);
    let s = serve(&sb).await;
    check_forms(
        &s,
        &[
            ("testing", "testing.md"),
            ("mocking", "testing.md"),
            ("deploying", "deploy.md"),
            ("release process", "deploy.md"),
            ("released", "deploy.md"),
            ("предпочтения пользователя", "answers.md"),
            ("пользователю нужен короткий ответ", "answers.md"),
        ],
    )
    .await;
    // Every form is found, exactly as typed or not.
    let r = s.ok("memory_search", json!({"query": "mocked"})).await;
    assert_eq!(r["hits"][0]["matched"], json!(["words"]), "{r}");
    let out = s.call("memory_search", json!({"query": "deploying"})).await;
    assert!(out.text.contains("matched word forms"), "{}", out.text);
    s.stop().await;
    // The scan (no index) finds the same.
    let scan = serve_scan(&sb).await;
    check_forms(
        &scan,
        &[
            ("testing", "testing.md"),
            ("предпочтения пользователя", "answers.md"),
        ],
    )
    .await;
    scan.stop().await;
}

#[tokio::test]
async fn a_question_is_searched_by_its_content_words() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.store().join("testing.md"),
        "User says: testing runs against a real database only.\n",
    )
    .unwrap();
    std::fs::write(
        sb.store().join("lunch.md"),
        "What did the team decide about lunch? Pizza.\n",
    )
    .unwrap();
    let s = serve(&sb).await;
    for query in [
        "What did the user say about testing?",
        "what does the user say about the tests",
    ] {
        let r = s.ok("memory_search", json!({"query": query})).await;
        assert_eq!(r["relaxed"], false, "{query}: {r}");
        assert_eq!(r["total_hits"], 1, "{query}: {r}");
        assert_eq!(r["hits"][0]["path"], "/memories/testing.md", "{query}: {r}");
    }
    // A query of stopwords alone still searches them.
    let r = s
        .ok("memory_search", json!({"query": "what did the"}))
        .await;
    assert_eq!(r["hits"][0]["path"], "/memories/lunch.md", "{r}");
    s.stop().await;
}

#[tokio::test]
async fn an_exact_form_ranks_above_another_form() {
    let sb = Sandbox::new();
    for (name, word) in [
        ("a.md", "deploying"),
        ("b.md", "deployment"),
        ("c.md", "deploys"),
    ] {
        std::fs::write(
            sb.store().join(name),
            format!("Notes on {word} the service to staging.\n"),
        )
        .unwrap();
    }
    let s = serve(&sb).await;
    for (query, first) in [
        ("deploying", "a.md"),
        ("deployment", "b.md"),
        ("deploys", "c.md"),
    ] {
        let r = s.ok("memory_search", json!({"query": query})).await;
        assert_eq!(r["total_hits"], 3, "{query}: {r}");
        assert_eq!(
            r["hits"][0]["path"],
            format!("/memories/{first}"),
            "{query}: {r}"
        );
        assert_eq!(r["hits"][0]["matched"], json!(["words"]), "{query}: {r}");
        assert_eq!(
            r["hits"][1]["matched"],
            json!(["word forms"]),
            "{query}: {r}"
        );
        assert!(
            r["hits"][0]["score"].as_f64().unwrap() > r["hits"][1]["score"].as_f64().unwrap(),
            "{query}: {r}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn phrases_and_prefixes_stay_exact() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("a.md"), "The tests pass on CI.\n").unwrap();
    std::fs::write(sb.store().join("b.md"), "Testing passes locally.\n").unwrap();
    let s = serve(&sb).await;
    for (query, expect) in [
        ("\"tests pass\"", vec!["/memories/a.md"]),
        ("\"testing\"", vec!["/memories/b.md"]),
        ("\"passes\"", vec!["/memories/b.md"]),
        ("testi*", vec!["/memories/b.md"]),
        ("test*", vec!["/memories/a.md", "/memories/b.md"]),
        ("testing", vec!["/memories/a.md", "/memories/b.md"]),
    ] {
        let got = hit_paths(&s, query).await;
        assert_eq!(
            got,
            expect.into_iter().map(String::from).collect(),
            "{query}"
        );
    }
    s.stop().await;
}

/// An unquoted word written joined (`Export-Jobs`, `build-stages`) is first looked for as
/// written; when nothing has it, each of its words is, by its forms. Quoted, it stays exact.
#[tokio::test]
async fn a_joined_word_is_found_by_its_words_in_other_forms() {
    let sb = Sandbox::new();
    for (name, text) in [
        (
            "export.md",
            "Wenn der Export-Job hängt, einfach den Pod löschen.\n",
        ),
        ("build.md", "The build stage caches its dependencies.\n"),
        ("lunch.md", "Lunch is at noon on Fridays.\n"),
    ] {
        std::fs::write(sb.store().join(name), text).unwrap();
    }
    let index = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for s in [&index, &scan] {
        for (query, expect) in [
            ("Export-Jobs", "/memories/export.md"),
            (
                "Was tun, wenn Export-Jobs hängen bleiben?",
                "/memories/export.md",
            ),
            ("build-stages", "/memories/build.md"),
        ] {
            let r = s.ok("memory_search", json!({"query": query})).await;
            assert_eq!(r["hits"][0]["path"], expect, "{query}: {r}");
            assert_eq!(r["relaxed"], true, "{query}: {r}");
        }
        // Written as in the memory, it is found without relaxing, and the first hit's
        // score is 1 whatever the page (the relaxed query's own scores, which the page
        // asked for when the words matched fewer memories than it holds, were taken for
        // the reference and left it at 0.23).
        for limit in [1, 10] {
            let r = s
                .ok(
                    "memory_search",
                    json!({"query": "Export-Job", "limit": limit}),
                )
                .await;
            assert_eq!(r["hits"][0]["path"], "/memories/export.md", "{r}");
            assert_eq!(r["relaxed"], false, "{r}");
            assert_eq!(r["hits"][0]["score"], 1.0, "limit {limit}: {r}");
        }
        for query in ["\"Export-Jobs\"", "\"build-stages\""] {
            let r = s.ok("memory_search", json!({"query": query})).await;
            assert_eq!(r["total_hits"], 0, "quoted stays exact: {query}: {r}");
        }
    }
    index.stop().await;
    scan.stop().await;
}

/// Whether a search relaxes to memories with some of its words depends on the page size,
/// never on the page: every page of a query has the same total, and memories with some
/// of the words are reachable through the cursor whenever the first page shows them.
#[tokio::test]
async fn relaxing_is_decided_once_for_every_page_of_a_query() {
    let sb = Sandbox::new();
    let store = sb.store();
    for i in 0..4 {
        std::fs::write(
            store.join(format!("both{i}.md")),
            format!("apple banana {i}\n"),
        )
        .unwrap();
    }
    for i in 0..2 {
        std::fs::write(
            store.join(format!("only{i}.md")),
            format!("apple cherry {i}\n"),
        )
        .unwrap();
    }
    let index = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for s in [&index, &scan] {
        // limit 3, 4 memories with both words: no relaxing on any page.
        // limit 5: relaxed on both pages, 6 in all.
        for (limit, relaxed, total) in [(3, false, 4), (5, true, 6), (10, true, 6)] {
            let mut seen = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let mut args = json!({"query": "apple banana", "limit": limit});
                if let Some(c) = &cursor {
                    args["cursor"] = json!(c);
                }
                let r = s.ok("memory_search", args).await;
                assert_eq!(r["total_hits"], total, "limit {limit}: {r}");
                for h in r["hits"].as_array().unwrap() {
                    seen.push(h["path"].as_str().unwrap().to_owned());
                }
                match r.get("next_cursor").and_then(Value::as_str) {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => {
                        // The last page says whether the query relaxed, as every page
                        // showing memories with some of the words does.
                        assert_eq!(r["relaxed"], relaxed, "limit {limit}: {r}");
                        break;
                    }
                }
            }
            assert_eq!(seen.len(), total, "limit {limit}: {seen:?}");
            let with_both = seen.iter().take_while(|p| p.contains("both")).count();
            assert_eq!(with_both, 4, "those with every word first: {seen:?}");
        }
    }
    index.stop().await;
    scan.stop().await;
}

/// Keywords alone do not say their language: a memory in Italian, Dutch or Hungarian is
/// found by them in other forms, as a whole question in its language finds it.
#[tokio::test]
async fn keywords_find_other_forms_in_any_latin_language() {
    let sb = Sandbox::new();
    for (name, text) in [
        (
            "it.md",
            "L'utente preferisce risposte brevi, senza introduzioni.\n",
        ),
        (
            "nl.md",
            "De certificaten van de testserver worden elke maand vernieuwd.\n",
        ),
        (
            "hu.md",
            "A tesztszerver tanúsítványait minden hónapban megújítjuk.\n",
        ),
        ("en.md", "The user prefers short answers.\n"),
    ] {
        std::fs::write(sb.store().join(name), text).unwrap();
    }
    let index = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for s in [&index, &scan] {
        for (query, expect) in [
            ("risposta breve", "/memories/it.md"),
            ("certificaat vernieuwen", "/memories/nl.md"),
            ("tanúsítvány", "/memories/hu.md"),
            ("short answer", "/memories/en.md"),
        ] {
            let r = s.ok("memory_search", json!({"query": query})).await;
            assert_eq!(r["hits"][0]["path"], expect, "{query}: {r}");
            let matched = r["hits"][0]["matched"].as_array().unwrap();
            assert!(matched.contains(&json!("word forms")), "{query}: {r}");
        }
    }
    index.stop().await;
    scan.stop().await;
}

#[tokio::test]
async fn an_index_of_an_older_format_is_rebuilt() {
    let sb = Sandbox::new();
    word_form_store(&sb);
    let s = serve(&sb).await;
    assert_eq!(hit_paths(&s, "deployment").await.len(), 1);
    s.stop().await;
    // Make it an index as the version before word forms left it: its format, its
    // columns, and no text in it (the stamps say every file is indexed).
    let db = walkdir::WalkDir::new(index_dir(&sb))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".sqlite3"))
        .expect("the index database")
        .into_path();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DROP TABLE fts;
         CREATE VIRTUAL TABLE fts USING fts5(body, tail, tri, content='',
            contentless_delete=1, tokenize=\"ascii tokenchars '_'\", detail=full);
         UPDATE meta SET value = 'memdir-index-4;tokenizer-3' WHERE key = 'format';",
    )
    .unwrap();
    drop(conn);
    let s = serve(&sb).await;
    check_forms(&s, &[("deploying", "deploy.md")]).await;
    s.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let format: String = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_ne!(format, "memdir-index-4;tokenizer-3");
    conn.execute_batch("SELECT stem FROM fts LIMIT 0").unwrap();
}

/// `(path, score, importance)` of each hit, in order.
fn ranked(r: &Value) -> Vec<(String, f64, Option<u64>)> {
    r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["path"].as_str().unwrap().to_owned(),
                h["score"].as_f64().unwrap(),
                h["importance"].as_u64(),
            )
        })
        .collect()
}

/// Memories that match `rollback billing` equally well (the same words, the same
/// length), with importance 5, none (a `priority` field memdir does not read: 3) and 1;
/// and a clearly better match of `compaction` with importance 1 next to a weaker one
/// with importance 5.
fn importance_store(sb: &Sandbox) {
    for (name, field) in [
        ("a-low.md", "importance: 1"),
        ("b-none.md", "priority: 5"),
        ("c-vital.md", "importance: 5"),
    ] {
        std::fs::write(
            sb.store().join(name),
            format!("---\n{field}\n---\nRollback steps for the billing service.\n"),
        )
        .unwrap();
    }
    std::fs::write(
        sb.store().join("better.md"),
        "---\nimportance: 1\n---\ncompaction\ncompaction strategy\nwhen compaction runs\n",
    )
    .unwrap();
    std::fs::write(
        sb.store().join("weaker.md"),
        "---\nimportance: 5\n---\nA long note that mentions compaction once among many other words about unrelated topics, lists and plans.\n",
    )
    .unwrap();
}

#[tokio::test]
async fn importance_orders_equal_matches_but_never_a_clearly_better_one() {
    let sb = Sandbox::new();
    importance_store(&sb);
    let indexed = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for s in [&indexed, &scan] {
        let r = s
            .ok("memory_search", json!({"query": "rollback billing"}))
            .await;
        let hits = ranked(&r);
        let order: Vec<&str> = hits.iter().map(|h| h.0.as_str()).collect();
        // By path they would come low, none, vital: importance reverses them.
        assert_eq!(
            order,
            [
                "/memories/c-vital.md",
                "/memories/b-none.md",
                "/memories/a-low.md"
            ],
            "{r}"
        );
        // The lift is the measured factor: 1.1 for 5, 1 for none, 0.9 for 1.
        let (vital, none, low) = (hits[0].1, hits[1].1, hits[2].1);
        assert_eq!(vital, 1.0, "{r}");
        assert!((none - 1.0 / 1.1).abs() < 1e-9, "{r}");
        assert!((low - 0.9 / 1.1).abs() < 1e-9, "{r}");
        assert_eq!(
            hits.iter().map(|h| h.2).collect::<Vec<_>>(),
            [Some(5), None, Some(1)],
            "{r}"
        );
        // Importance 1 does not sink a clearly better match below importance 5.
        let r = s.ok("memory_search", json!({"query": "compaction"})).await;
        let hits = ranked(&r);
        assert_eq!(hits[0].0, "/memories/better.md", "{r}");
        assert_eq!(hits[1].0, "/memories/weaker.md", "{r}");
        assert!(hits[1].1 < 0.9, "{r}");
        // `recent` order is untouched by importance, but each hit's score is the same
        // as by relevance: after the lift, in the index as in the scan.
        let r = s
            .ok(
                "memory_search",
                json!({"query": "rollback billing", "sort": "recent"}),
            )
            .await;
        assert_eq!(r["total_hits"], 3, "{r}");
        for (path, score, _) in ranked(&r) {
            let by_relevance = match path.as_str() {
                "/memories/c-vital.md" => 1.0,
                "/memories/b-none.md" => 1.0 / 1.1,
                _ => 0.9 / 1.1,
            };
            assert!((score - by_relevance).abs() < 1e-9, "{path}: {r}");
        }
    }
    indexed.stop().await;
    scan.stop().await;
}

#[tokio::test]
async fn min_importance_filters_where_none_counts_as_three() {
    let sb = Sandbox::new();
    importance_store(&sb);
    let indexed = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for s in [&indexed, &scan] {
        for (min, want) in [
            (1, vec!["c-vital.md", "b-none.md", "a-low.md"]),
            (2, vec!["c-vital.md", "b-none.md"]),
            (3, vec!["c-vital.md", "b-none.md"]),
            (4, vec!["c-vital.md"]),
            (5, vec!["c-vital.md"]),
        ] {
            let r = s
                .ok(
                    "memory_search",
                    json!({"query": "rollback billing", "min_importance": min}),
                )
                .await;
            let got: Vec<String> = ranked(&r).into_iter().map(|h| h.0).collect();
            let want: Vec<String> = want.iter().map(|p| format!("/memories/{p}")).collect();
            assert_eq!(got, want, "min_importance {min}: {r}");
            assert_eq!(r["total_hits"], want.len(), "{r}");
        }
        let r = s
            .ok(
                "memory_search",
                json!({"query": "compaction", "min_importance": 2}),
            )
            .await;
        assert_eq!(ranked(&r)[0].0, "/memories/weaker.md", "{r}");
        assert_eq!(r["total_hits"], 1, "{r}");
        for bad in [0, 6, -1] {
            let err = s
                .err(
                    "memory_search",
                    json!({"query": "rollback", "min_importance": bad}),
                )
                .await;
            assert!(
                err.contains("min_importance must be an integer from 1 to 5"),
                "{err}"
            );
        }
    }
    indexed.stop().await;
    scan.stop().await;
}

#[tokio::test]
async fn an_index_without_importance_is_rebuilt() {
    let sb = Sandbox::new();
    importance_store(&sb);
    let s = serve(&sb).await;
    assert_eq!(hit_paths(&s, "billing").await.len(), 3);
    s.stop().await;
    // Make it the index of the version before importance: no such column, its format.
    let db = walkdir::WalkDir::new(index_dir(&sb))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".sqlite3"))
        .expect("the index database")
        .into_path();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DROP INDEX docs_importance;
         ALTER TABLE docs DROP COLUMN importance;
         UPDATE meta SET value = 'memdir-index-5;tokenizer-4' WHERE key = 'format';",
    )
    .unwrap();
    drop(conn);
    let s = serve(&sb).await;
    let r = s
        .ok("memory_search", json!({"query": "rollback billing"}))
        .await;
    assert_eq!(ranked(&r)[0].0, "/memories/c-vital.md", "{r}");
    assert_eq!(r["total_hits"], 3, "{r}");
    s.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stored: Vec<(String, Option<i64>)> = conn
        .prepare("SELECT path, importance FROM docs ORDER BY path")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        stored.contains(&("c-vital.md".to_owned(), Some(5))),
        "{stored:?}"
    );
    assert!(
        stored.contains(&("b-none.md".to_owned(), None)),
        "{stored:?}"
    );
}

/// `type` and `tag` filters ignore ASCII case, in the index as in the scan.
#[tokio::test]
async fn type_and_tag_filters_ignore_case() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.store().join("fb.md"),
        "---\ntype: Feedback\ntags: [Lang, rust]\n---\nPrefer small pull requests.\n",
    )
    .unwrap();
    std::fs::write(
        sb.store().join("other.md"),
        "Small pull requests merge faster.\n",
    )
    .unwrap();
    let index = serve(&sb).await;
    let scan = serve_scan(&sb).await;
    for s in [&index, &scan] {
        for (filter, want) in [
            (json!({"type": "feedback"}), 1),
            (json!({"type": "FEEDBACK"}), 1),
            (json!({"tag": "lang"}), 1),
            (json!({"tag": "RUST"}), 1),
            (json!({"tag": "go"}), 0),
            (json!({"type": "project"}), 0),
        ] {
            let mut args = json!({"query": "pull requests"});
            for (k, v) in filter.as_object().unwrap() {
                args[k] = v.clone();
            }
            let r = s.ok("memory_search", args).await;
            assert_eq!(r["total_hits"], want, "{filter}: {r}");
            if want == 1 {
                assert_eq!(r["hits"][0]["path"], "/memories/fb.md", "{filter}: {r}");
            }
        }
    }
    index.stop().await;
    scan.stop().await;
}
