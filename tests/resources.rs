//! MCP resources through the real binary and the rmcp client: every memory is
//! `memory://<store>/<path>`, each store has a `MEMORY.md` index, and resource URIs are
//! held to the same path policy as tool paths.

mod common;

use common::{Sandbox, Server};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;

async fn read(s: &Server, uri: &str) -> Result<(String, Option<String>), String> {
    match s
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
    {
        Ok(result) => {
            assert_eq!(result.contents.len(), 1);
            match &result.contents[0] {
                ResourceContents::TextResourceContents {
                    uri: got,
                    mime_type,
                    text,
                    ..
                } => {
                    assert_eq!(got, uri);
                    Ok((text.clone(), mime_type.clone()))
                }
                other => panic!("{uri}: not text: {other:?}"),
            }
        }
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test]
async fn every_memory_is_a_resource_and_each_store_has_an_index() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "/memories/notes/rust.md", "content": "---\ndescription: Rust conventions\n---\nuse cargo fmt\n"}),
    )
    .await;
    s.ok(
        "memory_write",
        json!({"path": "/memories/a b/ü.txt", "content": "plain\n"}),
    )
    .await;
    std::fs::write(sb.store().join(".hidden.md"), "not a resource").unwrap();

    let resources = s.client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "memory://memories/MEMORY.md",
            "memory://memories/a%20b/%C3%BC.txt",
            "memory://memories/notes/rust.md"
        ]
    );
    let rust = &resources[2];
    assert_eq!(rust.name, "/memories/notes/rust.md");
    assert_eq!(rust.description.as_deref(), Some("Rust conventions"));
    assert_eq!(rust.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(rust.size, Some(52));
    assert_eq!(resources[1].mime_type.as_deref(), Some("text/plain"));

    let templates = s.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "memory://{store}/{+path}");

    let (text, mime) = read(&s, "memory://memories/notes/rust.md").await.unwrap();
    assert_eq!(
        text,
        "---\ndescription: Rust conventions\n---\nuse cargo fmt\n"
    );
    assert_eq!(mime.as_deref(), Some("text/markdown"));
    let (text, _) = read(&s, "memory://memories/a%20b/%C3%BC.txt")
        .await
        .unwrap();
    assert_eq!(text, "plain\n");

    // No MEMORY.md: one is generated from the frontmatter descriptions.
    let (index, _) = read(&s, "memory://memories/MEMORY.md").await.unwrap();
    assert!(
        index.contains("- [notes/rust.md](notes/rust.md) — Rust conventions")
            && index.contains("- [a b/ü.txt](a%20b/%C3%BC.txt)")
            && !index.contains("hidden"),
        "{index}"
    );
    // With one, it is the file, and it is listed like any memory.
    s.ok(
        "memory_write",
        json!({"path": "/memories/MEMORY.md", "content": "# Index\n- notes/rust.md\n"}),
    )
    .await;
    let (index, _) = read(&s, "memory://memories/MEMORY.md").await.unwrap();
    assert_eq!(index, "# Index\n- notes/rust.md\n");
    let listed = s.client.list_all_resources().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .filter(|r| r.uri == "memory://memories/MEMORY.md")
            .count(),
        1
    );
    s.stop().await;
}

#[tokio::test]
async fn resource_uris_are_held_to_the_path_policy() {
    let sb = Sandbox::new();
    std::os::unix::fs::symlink(sb.outside().join("canary.txt"), sb.store().join("link.md"))
        .unwrap();
    let snapshot = sb.outside_snapshot();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "/memories/x.md", "content": "x\n"}),
    )
    .await;
    let host = sb.tmp.path().to_string_lossy().into_owned();
    for (uri, expect) in [
        ("memory://memories/missing.md", "-32002"),
        ("memory://memories/%2e%2e/outside/canary.txt", "`..`"),
        ("memory://memories/../outside/canary.txt", "`..`"),
        ("memory://memories/link.md", "outside the store"),
        ("memory://memories/%zz", "hex digits"),
        ("memory://nostore/x.md", "no store named"),
        ("file:///etc/passwd", "memory://"),
        ("memory://memories/.memdir/lock", "reserved"),
        ("memory://memories", "-32002"),
        ("memory://memories/x.md?v=2", "no query or fragment"),
        ("memory://memories/x.md#top", "no query or fragment"),
        ("memory://memories/x.md/", "names a folder"),
    ] {
        let e = read(&s, uri).await.expect_err(uri);
        assert!(e.contains(expect), "{uri}: {e}");
        assert!(!e.contains(&host), "{uri}: {e}");
    }
    assert_eq!(sb.outside_snapshot(), snapshot);
    s.stop().await;
}

/// A client that reports the resource notifications it gets.
#[derive(Clone)]
struct Notes(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Notes {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(format!("updated {}", params.uri));
    }

    async fn on_resource_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send("list_changed".into());
    }
}

/// The notifications that arrive within `window`, in order.
async fn notes_within(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    window: std::time::Duration,
) -> Vec<String> {
    let mut got = Vec::new();
    let end = tokio::time::Instant::now() + window;
    while let Ok(Some(note)) = tokio::time::timeout_at(end, rx.recv()).await {
        got.push(note);
    }
    got
}

// `resources/subscribe` is the 2025 era's model, which rmcp marks deprecated in favour of
// 2026-07-28's `subscriptions/listen` (tested in tests/protocol.rs); clients use both.
#[allow(deprecated)]
#[tokio::test]
async fn subscribers_hear_of_changes_made_by_the_server_and_outside_it() {
    use rmcp::ServiceExt;
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use std::time::Duration;

    let sb = Sandbox::new();
    let store = sb.store();
    let cmd = tokio::process::Command::new(common::BIN).configure(|c| {
        c.arg("--root").arg(&store).arg("--no-index");
    });
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn memdir");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Notes(tx).serve(transport).await.expect("handshake");
    let caps = client
        .peer_info()
        .expect("server info")
        .capabilities
        .clone();
    let resources = caps.resources.expect("resources capability");
    assert_eq!(
        (resources.subscribe, resources.list_changed),
        (Some(true), Some(true))
    );
    let call = |path: &str, content: &str| {
        let mut args = serde_json::Map::new();
        args.insert("path".into(), json!(path));
        args.insert("content".into(), json!(content));
        rmcp::model::CallToolRequestParams::new("memory_write").with_arguments(args)
    };
    let window = Duration::from_millis(1000);

    client
        .subscribe(SubscribeRequestParams::new("memory://memories/a.md"))
        .await
        .unwrap();
    // Created through the server: the memory is updated and the list changed.
    client
        .call_tool(call("/memories/a.md", "one\n"))
        .await
        .unwrap();
    let got = notes_within(&mut rx, window).await;
    assert!(
        got.contains(&"updated memory://memories/a.md".to_string()),
        "{got:?}"
    );
    assert!(got.contains(&"list_changed".to_string()), "{got:?}");
    // Changed in an editor: updated, the list is the same.
    std::fs::write(store.join("a.md"), "edited outside\n").unwrap();
    let got = notes_within(&mut rx, window).await;
    assert_eq!(got, ["updated memory://memories/a.md"]);
    // Another memory appears outside: only the list changed.
    std::fs::write(store.join("b.md"), "new\n").unwrap();
    let got = notes_within(&mut rx, window).await;
    assert_eq!(got, ["list_changed"]);
    // Hidden files are not memories.
    std::fs::write(store.join(".scratch"), "x").unwrap();
    assert_eq!(notes_within(&mut rx, window).await, Vec::<String>::new());
    // Unsubscribed: no more updates, still list changes.
    client
        .unsubscribe(UnsubscribeRequestParams::new("memory://memories/a.md"))
        .await
        .unwrap();
    std::fs::remove_file(store.join("a.md")).unwrap();
    let got = notes_within(&mut rx, window).await;
    assert_eq!(got, ["list_changed"]);
    // A URI that names no valid memory path is refused.
    let e = client
        .subscribe(SubscribeRequestParams::new("memory://memories/../x"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("`..`"), "{e}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_generated_index_lists_names_within_claude_codes_caps() {
    // 250 memories with a name and a description: more than 200 lines' worth.
    let sb = Sandbox::new();
    for n in 0..250 {
        std::fs::write(
            sb.store().join(format!("topic-{n:03}.md")),
            format!("---\nname: Topic {n}\ndescription: what topic {n} is about\n---\nbody\n"),
        )
        .unwrap();
    }
    std::fs::write(
        sb.store().join("old.md"),
        "---\nname: Old fact\nexpires: 2020-01-01\n---\nstale\n",
    )
    .unwrap();
    let s = sb.serve().await;
    let (index, _) = read(&s, "memory://memories/MEMORY.md").await.unwrap();
    let lines = index.lines().count();
    assert!(
        lines <= 200 && index.len() <= 25 * 1024,
        "{lines} lines, {} bytes",
        index.len()
    );
    assert!(
        index.contains("- [Old fact](old.md) (expired)\n"),
        "{index}"
    );
    assert!(
        index.contains("- [Topic 0](topic-000.md) — what topic 0 is about\n"),
        "{index}"
    );
    let listed = index.lines().filter(|l| l.starts_with("- [")).count();
    let last = index.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("[{} more memories are not listed", 251 - listed))
            && last.contains("memory_search")
            && last.contains(r#"memory_list {"path": "/memories/"}"#),
        "{last}"
    );

    // Long descriptions: the 25 KB cap holds first.
    let wide = Sandbox::new();
    for n in 0..100 {
        std::fs::write(
            wide.store().join(format!("w{n:02}.md")),
            format!("---\ndescription: {}\n---\n", "d".repeat(600)),
        )
        .unwrap();
    }
    let w = wide.serve().await;
    let (index, _) = read(&w, "memory://memories/MEMORY.md").await.unwrap();
    assert!(index.len() <= 25 * 1024, "{} bytes", index.len());
    assert!(index.contains("more memories are not listed"), "{index}");
    w.stop().await;

    // A stored MEMORY.md over the caps is served cut, with a warning line.
    let stored: String = (1..=300).map(|n| format!("- line {n}\n")).collect();
    s.ok(
        "memory_write",
        json!({"path": "MEMORY.md", "content": stored}),
    )
    .await;
    let (index, _) = read(&s, "memory://memories/MEMORY.md").await.unwrap();
    assert!(index.lines().count() <= 200, "{index}");
    assert!(index.starts_with("- line 1\n") && !index.contains("- line 250\n"));
    assert!(
        index.contains("[WARNING: MEMORY.md is 300 lines and"),
        "{index}"
    );
    // The file itself is whole.
    let read_back = s.ok("memory_read", json!({"path": "MEMORY.md"})).await;
    assert_eq!(read_back["total_lines"], 300);
    s.stop().await;
}

#[tokio::test]
async fn a_memorys_name_is_shown_in_list_and_search() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "deploy.md", "content": "---\nname: Deploy checklist\ndescription: how we ship\n---\nrun cargo release\n"}),
    )
    .await;
    let list = s.call("memory_list", json!({})).await;
    assert_eq!(list.structured["entries"][0]["name"], "Deploy checklist");
    assert!(
        list.text.contains("Deploy checklist:\thow we ship"),
        "{}",
        list.text
    );
    let found = s.call("memory_search", json!({"query": "release"})).await;
    assert_eq!(found.structured["hits"][0]["name"], "Deploy checklist");
    assert!(
        found.text.contains(") Deploy checklist — how we ship"),
        "{}",
        found.text
    );
    s.stop().await;
    let out = std::process::Command::new(common::BIN)
        .args(["--root", sb.store().to_str().unwrap(), "list", "/memories"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("/memories/deploy.md  Deploy checklist"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
