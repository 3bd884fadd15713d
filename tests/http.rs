//! The HTTP transport (`memdir serve --http`) through the real binary: rmcp's streamable
//! HTTP client for the tools, raw HTTP requests for the gate (tokens, Origin, Host, bodies),
//! and signals for reloading tokens and shutting down.

mod common;

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{BIN, Sandbox, Server, sha256_hex};
use rmcp::model::{GetPromptRequestParams, ProtocolVersion, ReadResourceRequestParams};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef01";

/// A `memdir serve --http` process on a free loopback port.
struct HttpServer {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`
    base: String,
    log: Arc<(Mutex<Vec<String>>, Notify)>,
}

impl HttpServer {
    /// `memdir ARGS serve --http 127.0.0.1:0 SERVE_ARGS`; waits for its "listening" line.
    async fn start(args: &[&str], serve_args: &[&str]) -> HttpServer {
        let mut child = tokio::process::Command::new(BIN)
            .args(args)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(serve_args)
            .env("RUST_LOG", "memdir=info")
            .env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn memdir");
        let log = Arc::new((Mutex::new(Vec::new()), Notify::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.0.lock().unwrap().push(line);
                sink.1.notify_waiters();
            }
            sink.0.lock().unwrap().push("<stderr closed>".into());
            sink.1.notify_waiters();
        });
        let mut server = HttpServer {
            child,
            base: String::new(),
            log,
        };
        let line = server.wait_for_log("listening on http://").await;
        let url = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("listening line names the URL");
        server.base = url.trim_end_matches("/mcp").to_string();
        server
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Waits (at most 20 s) for a stderr line containing `needle` and returns it.
    async fn wait_for_log(&mut self, needle: &str) -> String {
        let log = Arc::clone(&self.log);
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            let mut seen = 0;
            loop {
                let notified = log.1.notified();
                {
                    let lines = log.0.lock().unwrap();
                    if let Some(line) = lines[seen..].iter().find(|l| l.contains(needle)) {
                        return line.clone();
                    }
                    if lines.last().is_some_and(|l| l == "<stderr closed>") {
                        panic!("memdir exited without printing {needle:?}: {lines:#?}");
                    }
                    seen = lines.len();
                }
                notified.await;
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("memdir never printed {needle:?}"))
    }

    fn log_text(&self) -> String {
        self.log.0.lock().unwrap().join("\n")
    }

    /// An rmcp client over streamable HTTP, with `token` as its bearer token.
    async fn client(&self, token: Option<&str>) -> Server {
        self.client_with(token, ClientLifecycleMode::Initialize)
            .await
            .expect("MCP handshake over HTTP")
    }

    async fn client_with(
        &self,
        token: Option<&str>,
        lifecycle: ClientLifecycleMode,
    ) -> Result<Server, rmcp::service::ClientInitializeError> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url());
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        let client = ().serve_with_lifecycle(transport, lifecycle).await?;
        Ok(Server::attach(client, self.pid()))
    }

    fn signal(&self, signal: rustix::process::Signal) {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.pid() as i32).unwrap(),
            signal,
        )
        .expect("signal");
    }

    /// Sends SIGTERM and waits (at most 30 s) for a clean exit.
    async fn terminate(mut self) -> String {
        self.signal(rustix::process::Signal::TERM);
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("exit within 30 s of SIGTERM")
            .unwrap();
        assert!(
            status.success(),
            "exit status {status}: {}",
            self.log_text()
        );
        self.log_text()
    }
}

/// A tokens file (mode 600) in `dir` naming alice and bob.
fn tokens_file(dir: &std::path::Path) -> String {
    let path = dir.join("tokens");
    std::fs::write(
        &path,
        format!("# team tokens\nalice {ALICE}\n\nbob {BOB}\n"),
    )
    .unwrap();
    set_mode(&path, 0o600);
    path.to_str().unwrap().to_string()
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// One raw JSON-RPC POST to `/mcp` with the headers a Streamable HTTP client sends, plus
/// `extra`.
async fn post(url: &str, body: impl Into<reqwest::Body>, extra: &[(&str, &str)]) -> (u16, String) {
    try_post(url, body, extra).await.expect("HTTP request")
}

/// `post`, with the transport error when the request could not be sent whole.
async fn try_post(
    url: &str,
    body: impl Into<reqwest::Body>,
    extra: &[(&str, &str)],
) -> Result<(u16, String), reqwest::Error> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("Content-Type", "application/json".parse().unwrap());
    headers.insert(
        "Accept",
        "application/json, text/event-stream".parse().unwrap(),
    );
    for (name, value) in extra {
        let name: reqwest::header::HeaderName = name.parse().unwrap();
        headers.insert(
            name,
            reqwest::header::HeaderValue::from_bytes(value.as_bytes()).unwrap(),
        );
    }
    let response = reqwest::Client::new()
        .post(url)
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.unwrap_or_default()))
}

/// A body over the limit is refused without being read to its end: the client sees 413,
/// or, when it is still sending as the server answers and closes, a connection error.
async fn refused_as_too_large(url: &str, body: impl Into<reqwest::Body>, extra: &[(&str, &str)]) {
    match try_post(url, body, extra).await {
        Ok((status, text)) => {
            assert_eq!(status, 413, "{text}");
            assert!(text.contains("Payload Too Large"), "{text}");
        }
        Err(e) => assert!(e.is_request() || e.is_body(), "{e:?}"),
    }
}

fn write_call(path: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": "memory_write", "arguments": {"path": path, "content": "x"}}})
    .to_string()
}

#[tokio::test]
async fn every_tool_resource_and_prompt_works_over_http() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server = HttpServer::start(
        &["--root", store.to_str().unwrap(), "--tools", "all"],
        &["--tokens", &tokens],
    )
    .await;
    let c = server.client(Some(ALICE)).await;
    let mut names = c.tool_names().await;
    names.sort();
    assert_eq!(
        names,
        [
            "memory",
            "memory_delete",
            "memory_edit",
            "memory_history",
            "memory_list",
            "memory_read",
            "memory_search",
            "memory_write"
        ]
    );

    let w = c
        .ok(
            "memory_write",
            json!({"path": "/memories/notes/deploy.md", "content": "---\ndescription: how we deploy\n---\nDeploys go through the blue pipeline.\n"}),
        )
        .await;
    assert_eq!(w["created"], true);
    let r = c
        .ok("memory_read", json!({"path": "/memories/notes/deploy.md"}))
        .await;
    assert!(r["content"].as_str().unwrap().contains("blue pipeline"));
    let e = c
        .ok(
            "memory_edit",
            json!({"path": "/memories/notes/deploy.md", "old_str": "blue", "new_str": "green",
                   "expected_sha256": r["content_sha256"]}),
        )
        .await;
    assert_eq!(e["version"], 2);
    let s = c
        .ok("memory_search", json!({"query": "green pipeline"}))
        .await;
    assert_eq!(s["hits"][0]["path"], "/memories/notes/deploy.md");
    let l = c.ok("memory_list", json!({"path": "/memories/"})).await;
    assert_eq!(l["entries"][0]["path"], "/memories/notes/deploy.md");
    let stale = c
        .err(
            "memory_write",
            json!({"path": "/memories/notes/deploy.md", "content": "x", "expected_sha256": r["content_sha256"]}),
        )
        .await;
    assert!(
        stale.contains(e["content_sha256"].as_str().unwrap()),
        "{stale}"
    );

    // The Anthropic profile's exact strings.
    let created = c
        .call(
            "memory",
            json!({"command": "create", "path": "/memories/todo.txt", "file_text": "ship it\n"}),
        )
        .await;
    assert_eq!(
        created.text,
        "File created successfully at: /memories/todo.txt"
    );
    let viewed = c
        .call(
            "memory",
            json!({"command": "view", "path": "/memories/todo.txt"}),
        )
        .await;
    assert!(viewed.text.contains("     1\tship it"), "{}", viewed.text);

    let d = c
        .ok("memory_delete", json!({"path": "/memories/todo.txt"}))
        .await;
    assert_eq!(d["deleted_files"], json!(["/memories/todo.txt"]));
    let h = c.ok("memory_history", json!({"path": "/memories/"})).await;
    let versions = h["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 4, "{h}");
    // Every version is alice's: the token's NAME, not what the client claims to be.
    assert!(versions.iter().all(|v| v["actor"] == "alice"), "{h}");

    // Resources and prompts.
    let resources = c.client.list_all_resources().await.unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r.uri == "memory://memories/notes/deploy.md"),
        "{resources:?}"
    );
    let read = c
        .client
        .read_resource(ReadResourceRequestParams::new(
            "memory://memories/notes/deploy.md",
        ))
        .await
        .unwrap();
    assert!(format!("{read:?}").contains("green pipeline"));
    let index = c
        .client
        .read_resource(ReadResourceRequestParams::new(
            "memory://memories/MEMORY.md",
        ))
        .await
        .unwrap();
    assert!(format!("{index:?}").contains("how we deploy"), "{index:?}");
    let prompt = c
        .client
        .get_prompt(GetPromptRequestParams::new("memory_protocol"))
        .await
        .unwrap();
    assert!(format!("{prompt:?}").contains("Assume interruption"));

    // The same through a client of the 2026-07-28 era (server/discover, no handshake).
    let modern = server
        .client_with(
            Some(BOB),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover over HTTP");
    let r2 = modern
        .ok("memory_read", json!({"path": "/memories/notes/deploy.md"}))
        .await;
    assert_eq!(r2["content_sha256"], e["content_sha256"]);
    modern
        .ok(
            "memory_write",
            json!({"path": "/memories/bob.md", "content": "by bob\n"}),
        )
        .await;
    let h = c
        .ok("memory_history", json!({"path": "/memories/bob.md"}))
        .await;
    assert_eq!(h["versions"][0]["actor"], "bob", "{h}");

    // One access-log line per request, never a token or a memory's content.
    let log = server.terminate().await;
    assert!(
        log.contains("tool=\"memory_write\"") || log.contains("tool=memory_write"),
        "{log}"
    );
    assert!(
        log.contains("actor=\"alice\"") || log.contains("actor=alice"),
        "{log}"
    );
    assert!(
        !log.contains(ALICE) && !log.contains(BOB),
        "a token was logged"
    );
    assert!(
        !log.contains("pipeline") && !log.contains("ship it"),
        "content was logged"
    );
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401_and_change_nothing() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server =
        HttpServer::start(&["--root", store.to_str().unwrap()], &["--tokens", &tokens]).await;
    let url = server.url();
    let wrong = format!("Bearer {ALICE}x");
    let prefix = format!("Bearer {}", &ALICE[..ALICE.len() - 1]);
    let basic = format!("Basic {ALICE}");
    let bare = ALICE.to_string();
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("no header", &[]),
        ("wrong token", &[("Authorization", &wrong)]),
        ("a prefix of a token", &[("Authorization", &prefix)]),
        ("another scheme", &[("Authorization", &basic)]),
        ("no scheme", &[("Authorization", &bare)]),
        ("empty bearer", &[("Authorization", "Bearer ")]),
        ("scheme only", &[("Authorization", "Bearer")]),
        (
            "not text",
            &[("Authorization", "Bearer \u{00e9}\u{00e9}\u{00e9}")],
        ),
    ];
    for (i, (what, headers)) in cases.iter().enumerate() {
        let (status, body) = post(&url, write_call(&format!("/memories/f{i}.md")), headers).await;
        assert_eq!(status, 401, "{what}: {body}");
        assert!(body.contains("Authorization: Bearer"), "{what}: {body}");
        assert!(!body.contains(ALICE), "{what}: the answer echoes a token");
    }
    // A client with a wrong token cannot even start.
    assert!(
        server
            .client_with(
                Some("not-a-listed-token-at-all"),
                ClientLifecycleMode::Initialize
            )
            .await
            .is_err()
    );
    let files: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(files.is_empty(), "a refused request wrote {files:?}");

    // The scheme is case-insensitive; the token is not.
    let (status, body) = post(
        &url,
        write_call("/memories/ok.md"),
        &[("Authorization", &format!("bearer {ALICE}"))],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(store.join("ok.md").is_file());
    let upper = format!("Bearer {}", ALICE.to_uppercase());
    let (status, _) = post(
        &url,
        write_call("/memories/upper.md"),
        &[("Authorization", &upper)],
    )
    .await;
    assert_eq!(status, 401);
    server.terminate().await;
}

#[tokio::test]
async fn foreign_origins_and_hosts_get_403() {
    let sb = Sandbox::new();
    let store = sb.store();
    let server = HttpServer::start(
        &["--root", store.to_str().unwrap()],
        &[
            "--allow-origin",
            "https://app.example.com",
            "--allow-host",
            "memory.example.com",
        ],
    )
    .await;
    let url = server.url();
    let cases: &[(&[(&str, &str)], u16)] = &[
        (&[("Origin", "http://evil.example")], 403),
        (&[("Origin", "http://localhost.evil.example:8080")], 403),
        (&[("Origin", "null")], 403),
        (&[("Origin", "https://app.example.com.evil.example")], 403),
        (&[("Host", "evil.example")], 403),
        (&[("Host", "127.0.0.1.evil.example")], 403),
        (&[("Origin", "http://localhost:6274")], 200),
        (&[("Origin", "https://app.example.com")], 200),
        (&[("Host", "memory.example.com:8080")], 200),
        (&[], 200),
    ];
    for (i, (headers, expect)) in cases.iter().enumerate() {
        let path = format!("/memories/o{i}.md");
        let (status, body) = post(&url, write_call(&path), headers).await;
        assert_eq!(status, *expect, "{headers:?}: {body}");
        assert_eq!(
            store.join(format!("o{i}.md")).exists(),
            *expect == 200,
            "{headers:?}"
        );
        if *expect == 403 {
            assert!(body.starts_with("Forbidden"), "{body}");
        }
    }
    server.terminate().await;
}

#[tokio::test]
async fn hostile_http_input_gets_a_clear_error_and_the_server_goes_on() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server = HttpServer::start(
        &["--root", store.to_str().unwrap()],
        &["--tokens", &tokens, "--max-body-bytes", "65536"],
    )
    .await;
    let url = server.url();
    let auth = format!("Bearer {ALICE}");
    let a = ("Authorization", auth.as_str());
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"memory_write\",\"arguments\":{{\"path\":\"/memories/big.md\",\"content\":\"{}\"}}}}}}",
        "a".repeat(70_000)
    );
    let many = format!("[{}0]", "0,".repeat(30_000));
    // (what, body, extra headers, status, text the answer holds)
    type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "invalid JSON",
            "{\"jsonrpc\": \"2.0\", ".into(),
            vec![a],
            400,
            "-32700",
        ),
        (
            "not JSON at all",
            "\u{0}\u{1}binary".into(),
            vec![a],
            400,
            "-32700",
        ),
        ("empty body", String::new(), vec![a], 400, "-32700"),
        (
            "a batch",
            format!("[{}]", write_call("/memories/batch.md")),
            vec![a],
            400,
            "-32600",
        ),
        ("many values", many, vec![a], 400, "-32600"),
        (
            "a JSON string",
            "\"tools/list\"".into(),
            vec![a],
            400,
            "-32600",
        ),
        (
            "no method",
            "{\"jsonrpc\":\"2.0\",\"id\":3}".into(),
            vec![a],
            400,
            "-32600",
        ),
        (
            "bad id",
            "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"tools/list\"}".into(),
            vec![a],
            400,
            "-32600",
        ),
        (
            "wrong content type",
            write_call("/memories/ct.md"),
            vec![a, ("Content-Type", "text/plain")],
            415,
            "Content-Type",
        ),
        (
            "wrong Accept",
            write_call("/memories/acc.md"),
            vec![a, ("Accept", "text/html")],
            406,
            "Not Acceptable",
        ),
    ];
    for (what, body, headers, status, holds) in cases {
        let (got, text) = post(&url, body, &headers).await;
        assert_eq!(got, status, "{what}: {text}");
        assert!(text.contains(holds), "{what}: {text}");
    }
    // Other methods and paths.
    let http = reqwest::Client::new();
    let get = http
        .get(&url)
        .header("Authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 405);
    // Every refusal says what it is, so a browser never guesses a type.
    for (what, r) in [
        ("GET /mcp", get),
        (
            "a bad protocol version",
            http.post(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "1999-01-01")
                .body(write_call("/memories/v.md"))
                .send()
                .await
                .unwrap(),
        ),
    ] {
        assert!(r.status().is_client_error(), "{what}: {}", r.status());
        assert_eq!(r.headers()["x-content-type-options"], "nosniff", "{what}");
        assert!(r.headers().contains_key("content-type"), "{what}");
    }
    let other = http
        .get(format!("{}/etc/passwd", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 404);
    let health = http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.text().await.unwrap(), "{\"status\":\"ok\"}");
    // A body that never ends is cut off at the limit, not buffered.
    refused_as_too_large(&url, big.clone(), &[a]).await;
    let endless = futures_stream_of(200, 4096);
    refused_as_too_large(&url, reqwest::Body::wrap_stream(endless), &[a]).await;
    // Nothing was written, and the server still serves.
    assert!(!store.join("big.md").exists() && !store.join("batch.md").exists());
    let c = server.client(Some(ALICE)).await;
    c.ok(
        "memory_write",
        json!({"path": "/memories/after.md", "content": "still here\n"}),
    )
    .await;
    server.terminate().await;
}

/// A chunked body of `chunks` chunks of `size` bytes, without a Content-Length.
fn futures_stream_of(
    chunks: usize,
    size: usize,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::iter((0..chunks).map(move |_| Ok(vec![b' '; size])))
}

#[tokio::test]
async fn sixteen_clients_increment_one_memory_exactly() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server =
        HttpServer::start(&["--root", store.to_str().unwrap()], &["--tokens", &tokens]).await;
    let first = server.client(Some(ALICE)).await;
    first
        .ok(
            "memory_write",
            json!({"path": "/memories/counter.md", "content": "0"}),
        )
        .await;
    const CLIENTS: usize = 16;
    const INCREMENTS: usize = 25;
    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let client = server
            .client(Some(if i % 2 == 0 { ALICE } else { BOB }))
            .await;
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..INCREMENTS {
                loop {
                    let r = client
                        .ok("memory_read", json!({"path": "/memories/counter.md"}))
                        .await;
                    let n: u64 = r["content"].as_str().unwrap().trim().parse().unwrap();
                    let w = client
                        .call(
                            "memory_write",
                            json!({"path": "/memories/counter.md", "content": (n + 1).to_string(),
                                   "expected_sha256": r["content_sha256"]}),
                        )
                        .await;
                    // Retried on `isError` alone: a racer that read the same n as
                    // another writes the same n + 1, and must fail, not succeed as a no-op.
                    if !w.is_error {
                        break;
                    }
                    assert!(w.text.contains("precondition failed"), "{}", w.text);
                    conflicts += 1;
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let r = first
        .ok("memory_read", json!({"path": "/memories/counter.md"}))
        .await;
    assert_eq!(
        r["content"],
        (CLIENTS * INCREMENTS).to_string(),
        "conflicts: {conflicts}"
    );
    // Every increment is a version (pages end at the result budget).
    let mut versions = Vec::new();
    let mut cursor = serde_json::Value::Null;
    loop {
        let mut args = json!({"path": "/memories/counter.md", "limit": 500});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let h = first.ok("memory_history", args).await;
        versions.extend(h["versions"].as_array().unwrap().iter().cloned());
        cursor = h["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(versions.len(), CLIENTS * INCREMENTS + 1);
    let by_bob = versions.iter().filter(|v| v["actor"] == "bob").count();
    assert_eq!(by_bob, CLIENTS / 2 * INCREMENTS);
    server.terminate().await;
}

#[tokio::test]
async fn a_stdio_server_and_an_http_server_on_one_store_see_each_others_writes() {
    let sb = Sandbox::new();
    let store = sb.store();
    let http = HttpServer::start(&["--root", store.to_str().unwrap()], &[]).await;
    let over_http = http.client(None).await;
    let over_stdio = sb.serve().await;
    let w = over_stdio
        .ok(
            "memory_write",
            json!({"path": "/memories/shared.md", "content": "from stdio\n"}),
        )
        .await;
    let r = over_http
        .ok("memory_read", json!({"path": "/memories/shared.md"}))
        .await;
    assert_eq!(r["content"], "from stdio\n");
    over_http
        .ok(
            "memory_write",
            json!({"path": "/memories/shared.md", "content": "from http\n", "expected_sha256": w["content_sha256"]}),
        )
        .await;
    let r = over_stdio
        .ok("memory_read", json!({"path": "/memories/shared.md"}))
        .await;
    assert_eq!(r["content"], "from http\n");
    let s = over_stdio
        .ok("memory_search", json!({"query": "http"}))
        .await;
    assert_eq!(s["hits"][0]["path"], "/memories/shared.md");
    // Without tokens, a loopback client's versions are recorded as `http`.
    let h = over_stdio
        .ok("memory_history", json!({"path": "/memories/shared.md"}))
        .await;
    assert_eq!(h["versions"][0]["actor"], "http", "{h}");
    over_stdio.stop().await;
    http.terminate().await;
}

#[tokio::test]
async fn sigterm_mid_load_loses_no_acknowledged_write() {
    let sb = Sandbox::new();
    let store = sb.store();
    let server = HttpServer::start(&["--root", store.to_str().unwrap()], &[]).await;
    let acknowledged: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let started = Arc::new(Notify::new());
    let mut tasks = Vec::new();
    for i in 0..8 {
        let client = server.client(None).await;
        let acknowledged = Arc::clone(&acknowledged);
        let started = Arc::clone(&started);
        tasks.push(tokio::spawn(async move {
            for n in 0.. {
                let path = format!("/memories/w{i}/{n}.md");
                let content = format!("client {i} write {n}\n");
                let args = json!({"path": path, "content": content})
                    .as_object()
                    .unwrap()
                    .clone();
                let call = client
                    .client
                    .call_tool(
                        rmcp::model::CallToolRequestParams::new("memory_write")
                            .with_arguments(args),
                    )
                    .await;
                match call {
                    Ok(result) if result.is_error != Some(true) => {
                        acknowledged
                            .lock()
                            .unwrap()
                            .insert(path, sha256_hex(content.as_bytes()));
                        if n == 5 {
                            started.notify_one();
                        }
                    }
                    // Refused (503) or the connection closed: the server is going away.
                    _ => return n,
                }
            }
            unreachable!()
        }));
    }
    started.notified().await;
    server.signal(rustix::process::Signal::TERM);
    for t in tasks {
        t.await.unwrap();
    }
    let mut server = server;
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("exit after SIGTERM")
        .unwrap();
    assert!(status.success(), "{}", server.log_text());
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 6, "{}", acknowledged.len());
    // Every acknowledged write is on disk, whole, and in the history.
    let restarted = sb.serve().await;
    for (path, sha) in &acknowledged {
        let on_disk = std::fs::read(store.join(path.trim_start_matches("/memories/"))).unwrap();
        assert_eq!(&sha256_hex(&on_disk), sha, "{path}");
        let h = restarted.ok("memory_history", json!({"path": path})).await;
        assert_eq!(h["versions"][0]["content_sha256"], json!(sha), "{path}");
    }
    assert!(common::temp_files(&store).is_empty());
    restarted.stop().await;
}

#[tokio::test]
async fn sighup_rereads_the_tokens_file() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let mut server =
        HttpServer::start(&["--root", store.to_str().unwrap()], &["--tokens", &tokens]).await;
    let url = server.url();
    let bearer = |t: &str| format!("Bearer {t}");
    assert_eq!(
        post(
            &url,
            write_call("/memories/a.md"),
            &[("Authorization", &bearer(ALICE))]
        )
        .await
        .0,
        200
    );
    let mut stream = open_listen(&url, Some(ALICE), 7, "memory://memories/watched.md").await;
    // Revoke alice: the file now lists only carol.
    let carol = "carol-token-0123456789abcdef";
    std::fs::write(&tokens, format!("carol {carol}\n")).unwrap();
    server.signal(rustix::process::Signal::HUP);
    server.wait_for_log("tokens re-read").await;
    // Alice's open listen stream ends at its next message instead of carrying it.
    assert_eq!(
        post(
            &url,
            write_call("/memories/watched.md"),
            &[("Authorization", &bearer(carol))]
        )
        .await
        .0,
        200
    );
    let mut after = String::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            after.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the revoked token's stream stayed open: {after}"));
    assert!(!after.contains("notifications/resources"), "{after}");
    assert_eq!(
        post(
            &url,
            write_call("/memories/b.md"),
            &[("Authorization", &bearer(ALICE))]
        )
        .await
        .0,
        401
    );
    assert_eq!(
        post(
            &url,
            write_call("/memories/c.md"),
            &[("Authorization", &bearer(carol))]
        )
        .await
        .0,
        200
    );
    // A broken file keeps the tokens in force.
    std::fs::write(&tokens, "carol\n").unwrap();
    server.signal(rustix::process::Signal::HUP);
    server.wait_for_log("tokens not re-read").await;
    assert_eq!(
        post(
            &url,
            write_call("/memories/d.md"),
            &[("Authorization", &bearer(carol))]
        )
        .await
        .0,
        200
    );
    assert!(!store.join("b.md").exists());
    let log = server.terminate().await;
    assert!(!log.contains(carol) && !log.contains(ALICE));
}

/// A process that may open few files serves fewer connections at once, so that a full
/// server never runs out of descriptors for its stores (or fails to accept).
#[test]
fn the_connection_cap_leaves_descriptors_for_the_stores() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["--root", sb.store().to_str().unwrap()])
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("RUST_LOG", "memdir=info")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is a plain system call; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            use rustix::process::{Resource, Rlimit, setrlimit};
            let limit = Rlimit {
                current: Some(256),
                maximum: Some(256),
            };
            setrlimit(Resource::Nofile, limit).map_err(std::io::Error::from)
        });
    }
    let mut child = cmd.spawn().expect("spawn memdir");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let line = stderr
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("listening on http://"))
        .expect("a listening line");
    let _ = child.kill();
    let _ = child.wait();
    // 256 files, 128 of them kept for the rest.
    assert!(line.contains("connections=128"), "{line}");
}

/// Start-up refusals: each exits non-zero with a message that says what to do.
#[test]
fn unsafe_configurations_are_refused_at_start_up() {
    let sb = Sandbox::new();
    let store = sb.store();
    let open = sb.tmp.path().join("open-tokens");
    std::fs::write(&open, format!("alice {ALICE}\n")).unwrap();
    set_mode(&open, 0o644);
    let short = sb.tmp.path().join("short-tokens");
    std::fs::write(&short, "alice tiny\n").unwrap();
    set_mode(&short, 0o600);
    let empty = sb.tmp.path().join("empty-tokens");
    std::fs::write(&empty, "# nobody yet\n").unwrap();
    set_mode(&empty, 0o600);
    let cases: &[(&[&str], &str)] = &[
        (&["--http", "0.0.0.0:0"], "--tokens FILE"),
        (
            &["--http", "127.0.0.1:0", "--tokens", open.to_str().unwrap()],
            "chmod 600",
        ),
        (
            &["--http", "127.0.0.1:0", "--tokens", short.to_str().unwrap()],
            "at least 16",
        ),
        (
            &["--http", "127.0.0.1:0", "--tokens", empty.to_str().unwrap()],
            "lists no token",
        ),
        (
            &["--http", "127.0.0.1:0", "--tokens", "/nonexistent/tokens"],
            "cannot open",
        ),
        (&["--tokens", empty.to_str().unwrap()], "--http"),
    ];
    for (args, expect) in cases {
        let out = std::process::Command::new(BIN)
            .args(["--root", store.to_str().unwrap(), "serve"])
            .args(*args)
            .env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
            )
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(!stderr.contains(ALICE), "{args:?}: the token was printed");
    }
}

#[tokio::test]
async fn a_listen_stream_over_http_carries_changes_made_by_another_client() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server =
        HttpServer::start(&["--root", store.to_str().unwrap()], &["--tokens", &tokens]).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listener", "version": "1"}
    });
    let listen = json!({
        "jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {
            "resourcesListChanged": true,
            "resourceSubscriptions": ["memory://memories/watched.md"]}}
    });
    let mut stream = reqwest::Client::new()
        .post(server.url())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .header("Authorization", format!("Bearer {ALICE}"))
        .body(listen.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200, "{:?}", stream.headers());
    // Reads the event stream until `needle` has arrived (at most 20 s).
    let mut seen = String::new();
    let mut until = async |needle: &str, seen: &mut String| {
        tokio::time::timeout(Duration::from_secs(20), async {
            while !seen.contains(needle) {
                let chunk = stream
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream stays open");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {needle:?} in the stream: {seen}"));
    };
    until("notifications/subscriptions/acknowledged", &mut seen).await;
    let writer = server.client(Some(BOB)).await;
    writer
        .ok(
            "memory_write",
            json!({"path": "/memories/watched.md", "content": "changed\n"}),
        )
        .await;
    until("notifications/resources/updated", &mut seen).await;
    let updated = seen
        .split("notifications/resources/updated")
        .nth(1)
        .unwrap();
    assert!(updated.contains("memory://memories/watched.md"), "{seen}");
    until("notifications/resources/list_changed", &mut seen).await;
    // SIGTERM ends the stream, and the server exits.
    server.terminate().await;
}

/// The `_meta` a 2026-07-28 request carries.
fn meta_2026() -> serde_json::Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listener", "version": "1"}
    })
}

/// A 2026-07-28 POST of `body` (JSON-RPC method `method`) to `url`, as `token`.
fn post_2026(
    url: &str,
    token: Option<&str>,
    method: &str,
    body: &serde_json::Value,
) -> reqwest::RequestBuilder {
    // A client of its own: the connection ends with the response.
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .body(body.to_string());
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    request
}

/// Opens a `subscriptions/listen` stream with request id `id` on `uri` and reads it until
/// its acknowledgement; the stream stays open while the response lives.
async fn open_listen(url: &str, token: Option<&str>, id: u64, uri: &str) -> reqwest::Response {
    let listen = json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": meta_2026(), "notifications": {
            "resourcesListChanged": true, "resourceSubscriptions": [uri]}}
    });
    let mut stream = post_2026(url, token, "subscriptions/listen", &listen)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200, "{:?}", stream.headers());
    let mut seen = String::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !seen.contains("notifications/subscriptions/acknowledged") {
            let chunk = stream
                .chunk()
                .await
                .unwrap()
                .expect("the stream stays open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no acknowledgement: {seen}"));
    stream
}

/// Whether a store is watched through inotify (else by the portable watcher's walks).
const WATCHED_BY_INOTIFY: bool = cfg!(all(target_os = "linux", not(feature = "portable")));

/// What a process holds: inotify instances, threads, resident memory (KiB).
#[derive(Clone, Copy, Debug)]
struct Holdings {
    inotify: usize,
    threads: usize,
    rss_kib: u64,
}

fn holdings(pid: u32) -> Holdings {
    let inotify = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("proc fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_str() == Some("anon_inode:inotify"))
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {status}"))
    };
    Holdings {
        inotify,
        threads: field("Threads:") as usize,
        rss_kib: field("VmRSS:"),
    }
}

/// Polls (at most 30 s) until `pid`'s holdings satisfy `ok`; returns the last seen.
async fn holdings_until(pid: u32, ok: impl Fn(Holdings) -> bool) -> Holdings {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = holdings(pid);
        if ok(now) || std::time::Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The time 50 writes take, one after the other.
async fn fifty_writes(client: &Server, round: &str) -> Duration {
    let started = std::time::Instant::now();
    for n in 0..50 {
        client
            .ok(
                "memory_write",
                json!({"path": format!("/memories/burst/{round}-{n}.md"), "content": format!("write {n}\n")}),
            )
            .await;
    }
    started.elapsed()
}

#[tokio::test]
async fn abandoned_listen_streams_are_released() {
    let sb = Sandbox::new();
    let store = sb.store();
    // Enough folders that a watch over the store costs something.
    for d in 0..40 {
        std::fs::create_dir_all(store.join(format!("d{d}"))).unwrap();
        for f in 0..5 {
            std::fs::write(store.join(format!("d{d}/m{f}.md")), "memory\n").unwrap();
        }
    }
    let server = HttpServer::start(&["--root", store.to_str().unwrap()], &[]).await;
    let pid = server.pid();
    let writer = server.client(None).await;
    writer.ok("memory_search", json!({"query": "memory"})).await;
    let fresh_writes = fifty_writes(&writer, "fresh").await;
    let idle = holdings(pid);

    // 300 streams opened, acknowledged and dropped, ten at a time.
    let url = server.url();
    for batch in 0..30 {
        let opened =
            (0..10).map(|i| {
                let url = url.clone();
                async move {
                    open_listen(&url, None, batch * 10 + i, "memory://memories/d0/m0.md").await
                }
            });
        drop(futures::future::join_all(opened).await);
    }

    let after = holdings_until(pid, |h| {
        h.inotify <= idle.inotify && h.threads <= idle.threads + 4
    })
    .await;
    let late_writes = fifty_writes(&writer, "late").await;
    eprintln!(
        "idle {idle:?}, after 300 abandoned streams {after:?}; 50 writes: {fresh_writes:?} fresh, {late_writes:?} after"
    );
    assert_eq!(
        after.inotify, idle.inotify,
        "inotify instances left: {after:?} vs {idle:?}"
    );
    assert!(
        after.threads <= idle.threads + 4,
        "threads left: {after:?} vs {idle:?}"
    );
    assert!(
        after.rss_kib <= idle.rss_kib + 16 * 1024,
        "memory not released: {after:?} vs {idle:?}"
    );
    assert!(
        // Before the fix, 19.6 s against 1.3 s; the slack is for a busy machine.
        late_writes <= fresh_writes * 5 + Duration::from_secs(2),
        "writes slowed down: {fresh_writes:?} fresh, {late_writes:?} after the streams"
    );
    server.terminate().await;
}

#[tokio::test]
async fn a_cancelled_listen_stream_is_released() {
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server =
        HttpServer::start(&["--root", store.to_str().unwrap()], &["--tokens", &tokens]).await;
    let pid = server.pid();
    let writer = server.client(Some(BOB)).await;
    writer.ok("memory_search", json!({"query": "memory"})).await;
    let idle = holdings(pid);
    let mut stream = open_listen(&server.url(), Some(ALICE), 41, "memory://memories/a.md").await;
    // The portable watcher walks the store instead: it holds no inotify instance.
    if WATCHED_BY_INOTIFY {
        assert!(
            holdings(pid).inotify > idle.inotify,
            "the stream watches the store"
        );
    }

    // Another client's cancel of the same request id does not end it: a change made
    // after it still arrives...
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 41, "_meta": meta_2026()}});
    let bob = post_2026(&server.url(), Some(BOB), "notifications/cancelled", &cancel)
        .send()
        .await
        .unwrap();
    assert_eq!(bob.status().as_u16(), 202);
    writer
        .ok(
            "memory_write",
            json!({"path": "/memories/a.md", "content": "after bob's cancel\n"}),
        )
        .await;
    let mut seen = String::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !seen.contains("notifications/resources/updated") {
            let chunk = stream
                .chunk()
                .await
                .unwrap()
                .expect("the stream stays open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no update after bob's cancel: {seen}"));
    // ...its own does: the stream ends, and with it the watch.
    let alice = post_2026(
        &server.url(),
        Some(ALICE),
        "notifications/cancelled",
        &cancel,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(alice.status().as_u16(), 202);
    tokio::time::timeout(Duration::from_secs(20), async {
        while stream.chunk().await.unwrap().is_some() {}
    })
    .await
    .expect("the cancelled stream ends");
    let after = holdings_until(pid, |h| h.inotify <= idle.inotify).await;
    assert_eq!(after.inotify, idle.inotify, "{after:?} vs {idle:?}");
    server.terminate().await;
}

#[tokio::test]
async fn one_token_cannot_hold_every_listen_stream() {
    const PER_TOKEN: u64 = 16;
    let sb = Sandbox::new();
    let store = sb.store();
    let tokens = tokens_file(sb.tmp.path());
    let server =
        HttpServer::start(&["--root", store.to_str().unwrap()], &["--tokens", &tokens]).await;
    let url = server.url();
    let uri = "memory://memories/a.md";
    let mut alice = Vec::new();
    for id in 0..PER_TOKEN {
        alice.push(open_listen(&url, Some(ALICE), id, uri).await);
    }
    // One more by the same token is refused, saying why...
    let listen = json!({
        "jsonrpc": "2.0", "id": PER_TOKEN, "method": "subscriptions/listen",
        "params": {"_meta": meta_2026(), "notifications": {"resourceSubscriptions": [uri]}}
    });
    let refused = post_2026(&url, Some(ALICE), "subscriptions/listen", &listen)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 429);
    let why = refused.text().await.unwrap();
    assert!(why.contains("tokens of this name hold 16"), "{why}");
    // ...while another token still gets one.
    let _bob = open_listen(&url, Some(BOB), 1, uri).await;
    // Once one of hers is cancelled, alice has a place again.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 0, "_meta": meta_2026()}});
    let ok = post_2026(&url, Some(ALICE), "notifications/cancelled", &cancel)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 202);
    let mut first = alice.remove(0);
    tokio::time::timeout(Duration::from_secs(20), async {
        while first.chunk().await.unwrap().is_some() {}
    })
    .await
    .expect("the cancelled stream ends");
    alice.push(open_listen(&url, Some(ALICE), PER_TOKEN, uri).await);
    server.terminate().await;
}

// `resources/subscribe` is the 2025 era's model, which rmcp marks deprecated.
#[allow(deprecated)]
#[tokio::test]
async fn the_http_handshake_advertises_only_the_notifications_it_serves() {
    use rmcp::model::SubscribeRequestParams;
    let sb = Sandbox::new();
    let store = sb.store();
    let server = HttpServer::start(&["--root", store.to_str().unwrap()], &[]).await;
    let c = server.client(None).await;
    let resources = c
        .client
        .peer_info()
        .expect("server info")
        .capabilities
        .resources
        .clone()
        .expect("resources capability");
    // `resources/subscribe` works exactly when it is advertised.
    let subscribed = c
        .client
        .subscribe(SubscribeRequestParams::new("memory://memories/a.md"))
        .await;
    assert_eq!(
        resources.subscribe == Some(true),
        subscribed.is_ok(),
        "advertised {resources:?}, subscribe gave {subscribed:?}"
    );
    // Nothing can follow a stateless response: no list changes are sent either.
    assert_ne!(resources.list_changed, Some(true), "{resources:?}");
    // The 2026-07-28 era's listen streams do carry resource updates: there the
    // capabilities say so, and the stream accepts the URI.
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                          "params": {"_meta": meta_2026()}});
    let found = post_2026(&server.url(), None, "server/discover", &discover)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let found: serde_json::Value = serde_json::from_str(&found).expect(&found);
    let caps = &found["result"]["capabilities"]["resources"];
    assert_eq!(
        (&caps["subscribe"], &caps["listChanged"]),
        (&json!(true), &json!(true)),
        "{found}"
    );
    server.terminate().await;
}

#[tokio::test]
async fn after_sigterm_new_requests_get_503_while_calls_in_flight_finish() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let sb = Sandbox::new();
    let store = sb.store();
    let mut server = HttpServer::start(&["--root", store.to_str().unwrap()], &[]).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    // A call in flight: its headers are in, and the server reads its body (it asked for
    // it with `100 Continue`), which the client holds back.
    let body = write_call("/memories/in-flight.md");
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !String::from_utf8_lossy(&answer).contains("100 Continue\r\n\r\n") {
            let mut buf = [0u8; 1024];
            let n = slow.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("100 Continue");

    server.signal(rustix::process::Signal::TERM);
    server.wait_for_log("shutting down").await;
    // A new connection is answered, with 503, and so is the health check.
    let (status, text) = post(&server.url(), write_call("/memories/late.md"), &[]).await;
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("shutting down"), "{text}");
    let health = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 503);
    assert!(
        health.headers().contains_key("retry-after"),
        "{:?}",
        health.headers()
    );
    // The console too: a change it began now could be cut off by the exit.
    let console = reqwest::get(format!("{}/", server.base)).await.unwrap();
    assert_eq!(console.status().as_u16(), 503);

    // The call in flight completes and is answered; then the process exits.
    slow.write_all(body.as_bytes()).await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), slow.read_to_end(&mut rest))
        .await
        .expect("the answer, then the connection closed")
        .unwrap();
    let rest = String::from_utf8_lossy(&rest);
    assert!(rest.starts_with("HTTP/1.1 200"), "{rest}");
    assert!(rest.contains("\"created\":true"), "{rest}");
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("exit after the calls in flight")
        .unwrap();
    assert!(status.success(), "{}", server.log_text());
    assert!(store.join("in-flight.md").exists());
    assert!(!store.join("late.md").exists());
}
