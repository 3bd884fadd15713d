//! MCP logging through the real binary and rmcp's client: `logging/setLevel` and the
//! `notifications/message` that tell an operator of index rebuilds and history repairs.
#![allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); the protocol has it.

mod common;

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::ConfigureCommandExt;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

use common::{BIN, Sandbox};

/// How long a notice may take. Generous: debug builds on a shared 2-core machine.
const NOTICE_TIMEOUT: Duration = Duration::from_secs(20);

/// A client that hands every log message to the test.
#[derive(Clone)]
struct Collector(mpsc::UnboundedSender<LoggingMessageNotificationParam>);

impl ClientHandler for Collector {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

struct Client {
    service: RunningService<RoleClient, Collector>,
    messages: mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    /// The server's log, shown if the test fails.
    _stderr: common::StderrLog,
}

impl Client {
    /// `memdir --root <store> --index-dir <index>` with a collecting client.
    async fn start(store: &Path, index: &Path) -> Client {
        let cmd = Command::new(BIN).configure(|c| {
            c.arg("--root")
                .arg(store)
                .arg("--index-dir")
                .arg(index)
                .env("RUST_LOG", "memdir=warn");
        });
        let (transport, stderr) = common::spawn_mcp(cmd);
        let (tx, messages) = mpsc::unbounded_channel();
        let service = Collector(tx).serve(transport).await.expect("MCP handshake");
        Client {
            service,
            messages,
            _stderr: stderr,
        }
    }

    async fn set_level(&self, level: LoggingLevel) {
        self.service
            .set_level(SetLevelRequestParams::new(level))
            .await
            .expect("logging/setLevel");
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        let Value::Object(map) = args else {
            panic!("tool arguments must be an object")
        };
        let result = self
            .service
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(result.is_error != Some(true), "{tool} failed: {result:?}");
        result.structured_content.unwrap_or(Value::Null)
    }

    /// Waits for a message whose text holds `needle`; returns it and those before it.
    async fn wait_for(
        &mut self,
        needle: &str,
    ) -> (
        LoggingMessageNotificationParam,
        Vec<LoggingMessageNotificationParam>,
    ) {
        let mut before = Vec::new();
        let found = tokio::time::timeout(NOTICE_TIMEOUT, async {
            while let Some(m) = self.messages.recv().await {
                if text(&m).contains(needle) {
                    return Some(m);
                }
                before.push(m);
            }
            None
        })
        .await;
        match found {
            Ok(Some(m)) => (m, before),
            _ => panic!("no log message with {needle:?}; had {before:?}"),
        }
    }
}

fn text(m: &LoggingMessageNotificationParam) -> String {
    m.data.as_str().unwrap_or_default().to_owned()
}

/// Ends the history log of `store` with half a record, as an append cut short does.
fn tear_history(store: &Path) {
    use std::io::Write;
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(store.join(".memdir/history/log.jsonl"))
        .expect("history log");
    log.write_all(br#"{"version":99,"path":"a.m"#).unwrap();
}

#[tokio::test]
async fn a_torn_history_log_found_at_start_up_is_reported_once_the_level_is_set() {
    let sandbox = Sandbox::new();
    let index = sandbox.tmp.path().join("index");
    let first = Client::start(&sandbox.store(), &index).await;
    first
        .ok("memory_write", json!({"path": "a.md", "content": "one\n"}))
        .await;
    let _ = first.service.cancel().await;
    tear_history(&sandbox.store());

    let mut client = Client::start(&sandbox.store(), &index).await;
    client.set_level(LoggingLevel::Info).await;
    let (m, _) = client.wait_for("torn last line").await;
    assert_eq!(m.level, LoggingLevel::Warning);
    assert_eq!(m.logger.as_deref(), Some("memdir"));
    assert!(text(&m).contains("/memories"), "{m:?}");
    // The log holds whole records again, and history goes on.
    let log = std::fs::read(sandbox.store().join(".memdir/history/log.jsonl")).unwrap();
    assert!(log.ends_with(b"\n"));
    client
        .ok("memory_write", json!({"path": "a.md", "content": "two\n"}))
        .await;
}

#[tokio::test]
async fn a_search_index_deleted_while_serving_is_rebuilt_and_reported() {
    let sandbox = Sandbox::new();
    let index = sandbox.tmp.path().join("index");
    let mut client = Client::start(&sandbox.store(), &index).await;
    client.set_level(LoggingLevel::Info).await;
    client
        .ok(
            "memory_write",
            json!({"path": "a.md", "content": "apples\n"}),
        )
        .await;
    client.ok("memory_search", json!({"query": "apples"})).await;
    client.wait_for("there was none").await;

    std::fs::remove_dir_all(&index).unwrap();
    let found = client.ok("memory_search", json!({"query": "apples"})).await;
    assert_eq!(found["total_hits"], json!(1), "{found}");
    let (m, _) = client.wait_for("it was deleted").await;
    assert_eq!(m.level, LoggingLevel::Info);
    assert!(
        !text(&m).contains("apples"),
        "no memory contents in logs: {m:?}"
    );
}

#[tokio::test]
async fn notices_below_the_level_set_are_held_back_until_it_is_lowered() {
    let sandbox = Sandbox::new();
    let index = sandbox.tmp.path().join("index");
    let mut client = Client::start(&sandbox.store(), &index).await;
    client.set_level(LoggingLevel::Error).await;
    // An info notice: the index is built for the first time (at start-up, or by this
    // search at the latest).
    client
        .ok("memory_write", json!({"path": "a.md", "content": "one\n"}))
        .await;
    client.ok("memory_search", json!({"query": "one"})).await;
    // A warning, once the level allows warnings: a torn history line, cut by the next
    // write. Notices go out in the order they happened, so had the info one been sent,
    // it would arrive first.
    client.set_level(LoggingLevel::Warning).await;
    tear_history(&sandbox.store());
    client
        .ok("memory_write", json!({"path": "a.md", "content": "two\n"}))
        .await;
    let (m, before) = client.wait_for("torn last line").await;
    assert_eq!(m.level, LoggingLevel::Warning);
    assert!(before.is_empty(), "held-back notices were sent: {before:?}");
    // Lowering the level replays what was held back, once.
    client.set_level(LoggingLevel::Info).await;
    let (m, before) = client.wait_for("building the search index").await;
    assert_eq!(m.level, LoggingLevel::Info);
    assert!(
        before.iter().all(|b| !text(b).contains("torn")),
        "sent twice: {before:?}"
    );
}

/// Whatever `RUST_LOG` asks, the log never holds a memory's content: the libraries that
/// see whole requests (rmcp logs a call's arguments at debug and trace) are held to info.
#[test]
fn rust_log_trace_never_logs_contents() {
    use std::io::Write;
    use std::process::Stdio;
    let sb = Sandbox::new();
    let marker = "CONTENT-MARKER-5d1e";
    let mut child = std::process::Command::new(BIN)
        .arg("--root")
        .arg(sb.store())
        .arg("--index-dir")
        .arg(sb.tmp.path().join("index"))
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_write",
            "arguments": {"path": "/memories/m.md", "content": format!("{marker}\n")}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The call was served (its reply is on stdout), and the log says something.
    assert!(stdout.contains("\"id\":2"), "{stdout}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(sb.store().join("m.md")).unwrap(),
        format!("{marker}\n")
    );
    assert!(!stderr.is_empty());
    assert!(
        !stderr.contains(marker),
        "the log holds the content:\n{stderr}"
    );
}
