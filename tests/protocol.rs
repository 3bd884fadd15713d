//! Protocol abuse: raw newline-delimited JSON-RPC written straight to the real binary's
//! stdin (not through the rmcp client, which refuses to send garbage). Every line the
//! server prints must be valid JSON-RPC, nothing may hang or crash, and after each abuse
//! a real `memory_write` + `memory_read` round trip must still work.

mod common;

use std::collections::{BTreeSet, VecDeque};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{StderrLog, peak_rss_mib};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_memdir");

/// How long any one reply may take. Generous: debug builds on a shared 2-core machine.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// The spec's target for close(stdin) → process exit.
const EXIT_TARGET: Duration = Duration::from_millis(100);

/// A server spoken to in raw JSON-RPC lines.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Messages read while waiting for another one, kept in arrival order.
    stash: VecDeque<Value>,
    /// Ids for requests the helpers make up (barriers, round trips).
    next_id: u64,
    /// How long a reply may take before the test fails.
    reply_timeout: Duration,
    tmp: tempfile::TempDir,
    /// The server's log, shown if the test fails (a panic message of the server too).
    _stderr: StderrLog,
}

impl Raw {
    /// Spawns `memdir --root <tmp>/store`, sends `initialize`, checks its reply and sends
    /// `notifications/initialized`.
    async fn start() -> Raw {
        Raw::start_with(&[]).await
    }

    /// [`Raw::start`] with extra arguments.
    async fn start_with(args: &[&str]) -> Raw {
        let mut raw = Raw::spawn_with(args);
        raw.handshake().await;
        raw
    }

    /// Sends `initialize`, checks its reply and sends `notifications/initialized`.
    async fn handshake(&mut self) {
        self.send_line(
            &json!({
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "protocol-test", "version": "1.0"}
                }
            })
            .to_string(),
        )
        .await;
        let init = self.recv().await;
        assert_eq!(init["id"], json!(0), "initialize reply: {init}");
        assert!(
            init["result"]["protocolVersion"].is_string(),
            "initialize reply: {init}"
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "memdir");
        self.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
    }

    /// Spawns `memdir --root <tmp>/store` and says nothing yet.
    fn spawn() -> Raw {
        Raw::spawn_with(&[])
    }

    /// [`Raw::spawn`] with extra arguments.
    fn spawn_with(args: &[&str]) -> Raw {
        let tmp = tempfile::tempdir().expect("temp dir");
        let store = tmp.path().join("store");
        let mut child = Command::new(BIN)
            .arg("--root")
            .arg(&store)
            .args(args)
            // Search indexes go to the build's temp folder, never the user's cache.
            .env("RUST_LOG", "memdir=warn")
            .env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn memdir");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let stderr = StderrLog::read_async(child.stderr.take().expect("piped stderr"), "memdir");
        Raw {
            child,
            stdin,
            stdout,
            stash: VecDeque::new(),
            next_id: 1_000_000,
            reply_timeout: REPLY_TIMEOUT,
            tmp,
            _stderr: stderr,
        }
    }

    fn store(&self) -> PathBuf {
        self.tmp.path().join("store")
    }

    /// Sends one line (a newline is appended).
    async fn send_line(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.send_bytes(&bytes).await;
    }

    /// Sends bytes exactly as given.
    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).await.expect("write to memdir");
        stdin.flush().await.expect("flush to memdir");
    }

    /// The next line of stdout, which must be one valid JSON-RPC message.
    async fn recv(&mut self) -> Value {
        match tokio::time::timeout(REPLY_TIMEOUT, read_message(&mut self.stdout)).await {
            Ok(Some(message)) => message,
            Ok(None) => panic!("memdir closed stdout (exited?) while a reply was due"),
            Err(_) => panic!("no reply within {REPLY_TIMEOUT:?}"),
        }
    }

    /// The reply to the request with this id (exact JSON equality); other messages that
    /// arrive first are stashed for later.
    async fn reply(&mut self, id: &Value) -> Value {
        if let Some(i) = self.stash.iter().position(|m| m.get("id") == Some(id)) {
            return self.stash.remove(i).unwrap();
        }
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(id) {
                return message;
            }
            self.stash.push_back(message);
        }
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a `ping` and returns every message that arrived before its reply. The server
    /// answers a line it cannot take as a request before it reads the next line, so an
    /// answer to such a line is among these.
    async fn barrier(&mut self) -> Vec<Value> {
        let id = json!(format!("barrier-{}", self.fresh_id()));
        self.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string())
            .await;
        let mut before: Vec<Value> = self.stash.drain(..).collect();
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(&id) {
                assert!(message.get("result").is_some(), "ping failed: {message}");
                return before;
            }
            before.push(message);
        }
    }

    /// `tools/call` with any arguments value (not necessarily an object); returns the reply.
    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let id = json!(self.fresh_id());
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        });
        self.send_line(&request.to_string()).await;
        self.reply(&id).await
    }

    /// A real write and read back: the server still serves.
    async fn assert_still_serves(&mut self) {
        let n = self.fresh_id();
        let path = format!("/memories/alive/{n}.md");
        let content = format!("still alive {n}\n");
        let wrote = self
            .call("memory_write", json!({"path": path, "content": content}))
            .await;
        let wrote = tool_result(&wrote);
        assert_ne!(wrote["isError"], json!(true), "write failed: {wrote}");
        assert_eq!(
            wrote["structuredContent"]["content_sha256"],
            json!(memdir::text::sha256_hex(content.as_bytes()))
        );
        let read = self.call("memory_read", json!({"path": path})).await;
        let read = tool_result(&read);
        assert_ne!(read["isError"], json!(true), "read failed: {read}");
        assert_eq!(read["structuredContent"]["content"], json!(content));
    }

    /// Closes stdin and waits for the process to exit; returns how long that took.
    async fn close(&mut self) -> (Duration, ExitStatus) {
        let stdin = self.stdin.take().expect("stdin is open");
        let t0 = Instant::now();
        drop(stdin);
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("memdir did not exit within 10 s of EOF")
            .expect("wait for memdir");
        (t0.elapsed(), status)
    }

    /// Closes stdin, checks the exit status, and returns every message the server printed
    /// that no one has read yet (each checked as valid JSON-RPC).
    async fn finish(mut self) -> Vec<Value> {
        let (_, status) = self.close().await;
        assert!(status.success(), "memdir exited with {status}");
        let mut rest: Vec<Value> = self.stash.drain(..).collect();
        while let Some(message) = read_message(&mut self.stdout).await {
            rest.push(message);
        }
        rest
    }
}

/// Reads one line and checks that it is one valid JSON-RPC message; `None` at EOF.
async fn read_message(stdout: &mut BufReader<ChildStdout>) -> Option<Value> {
    let mut line = Vec::new();
    let n = stdout
        .read_until(b'\n', &mut line)
        .await
        .expect("read memdir's stdout");
    if n == 0 {
        return None;
    }
    assert_eq!(
        line.last(),
        Some(&b'\n'),
        "stdout ended inside a line: {:?}",
        String::from_utf8_lossy(&line)
    );
    let message: Value = serde_json::from_slice(&line).unwrap_or_else(|e| {
        panic!(
            "stdout carried a line that is not JSON ({e}): {:?}",
            String::from_utf8_lossy(&line)
        )
    });
    check_json_rpc(&message);
    Some(message)
}

/// Panics unless `message` is a JSON-RPC 2.0 message a server may send: a response with
/// exactly one of `result` / `error`, or a request / notification of its own.
fn check_json_rpc(message: &Value) {
    let obj = message
        .as_object()
        .unwrap_or_else(|| panic!("not a JSON-RPC object: {message}"));
    assert_eq!(obj.get("jsonrpc"), Some(&json!("2.0")), "{message}");
    if let Some(method) = obj.get("method") {
        assert!(method.is_string(), "method must be a string: {message}");
        assert!(!obj.contains_key("result") && !obj.contains_key("error"));
        return;
    }
    let id = obj.get("id");
    let is_request_id = |id: &Value| id.is_string() || id.is_i64() || id.is_u64();
    match (obj.get("result"), obj.get("error")) {
        (Some(_), None) => assert!(
            id.is_some_and(is_request_id),
            "a result needs the request's id: {message}"
        ),
        (None, Some(error)) => {
            assert!(
                error["code"].is_i64() && error["message"].is_string(),
                "malformed error object: {message}"
            );
            // MCP 2025-11-25 makes the id of an error response optional (when the
            // request's id could not be read); JSON-RPC 2.0 writes that case as null.
            assert!(
                id.is_none_or(|id| id.is_null() || is_request_id(id)),
                "bad id on an error: {message}"
            );
        }
        _ => panic!("a response needs exactly one of result and error: {message}"),
    }
}

/// The `result` of a `tools/call` reply (panics on a JSON-RPC error).
fn tool_result(reply: &Value) -> &Value {
    reply
        .get("result")
        .unwrap_or_else(|| panic!("expected a tool result, got {reply}"))
}

/// An answer to a line that is not a request: a parse error or an invalid request,
/// without an id (it could not be read).
fn assert_id_less_error(message: &Value, line: &str) {
    let code = message["error"]["code"].as_i64();
    assert!(
        matches!(code, Some(-32700) | Some(-32600)),
        "{line:?} was answered with {message}, expected a parse error or invalid request"
    );
    assert!(
        message.get("id").is_none_or(Value::is_null),
        "{line:?} was answered with an id: {message}"
    );
}

/// A tool call that must fail: an `isError` result or a JSON-RPC invalid-params error.
fn assert_refused(reply: &Value, what: &str) {
    if let Some(result) = reply.get("result") {
        assert_eq!(
            result["isError"],
            json!(true),
            "{what}: expected an error, got {reply}"
        );
    } else {
        assert_eq!(
            reply["error"]["code"],
            json!(-32602),
            "{what}: expected invalid params (-32602), got {reply}"
        );
    }
}

/// Every regular file under the store, outside memdir's own `.memdir` folder.
fn memories(store: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(store)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".memdir")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(store).unwrap().to_owned())
        .collect();
    files.sort();
    files
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

#[tokio::test]
async fn every_malformed_line_gets_the_json_rpc_error_it_calls_for() {
    // JSON-RPC 2.0: not JSON → -32700 with a null id; JSON that is no request → -32600,
    // with the request's id when it has a usable one (so the client can match the answer),
    // else null; a known method whose params do not parse → -32602 with the id. A
    // malformed notification or response, and a blank line, get nothing.
    let mut server = Raw::start().await;
    let null = Value::Null;
    let cases: &[(&str, Option<(i64, Value)>)] = &[
        ("{", Some((-32700, null.clone()))),
        ("not json", Some((-32700, null.clone()))),
        (
            r#"{"jsonrpc":"2.0","id":20,"method":"ping""#,
            Some((-32700, null.clone())),
        ),
        ("[]", Some((-32600, null.clone()))),
        ("[1, 2]", Some((-32600, null.clone()))),
        (
            r#"[{"jsonrpc":"2.0","id":21,"method":"ping"}]"#,
            Some((-32600, null.clone())),
        ),
        (r#"{"jsonrpc":"2.0"}"#, Some((-32600, null.clone()))),
        ("{}", Some((-32600, null.clone()))),
        ("42", Some((-32600, null.clone()))),
        (r#""a JSON string""#, Some((-32600, null.clone()))),
        ("null", Some((-32600, null.clone()))),
        ("true", Some((-32600, null.clone()))),
        (r#"{"jsonrpc":"2.0","id":1}"#, Some((-32600, json!(1)))),
        (
            r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#,
            Some((-32600, json!(2))),
        ),
        (r#"{"id":3,"method":"ping"}"#, Some((-32600, json!(3)))),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":5}"#,
            Some((-32600, json!(4))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"five","method":"ping","params":[1]}"#,
            Some((-32602, json!("five"))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"memory_list","arguments":{},"_meta":"x"}}"#,
            Some((-32602, json!(6))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"an":"object"},"method":"ping"}"#,
            Some((-32600, null.clone())),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","result":"for nobody"}"#, None),
        ("   ", None),
        ("\r", None),
    ];
    for (line, expected) in cases {
        server.send_line(line).await;
        let answers = server.barrier().await;
        match (expected, answers.as_slice()) {
            (None, []) => {}
            (Some((code, id)), [answer]) => {
                check_json_rpc(answer);
                assert_eq!(answer["error"]["code"], json!(code), "{line:?} → {answer}");
                assert_eq!(&answer["id"], id, "{line:?} → {answer}");
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(message.len() > 15, "{line:?}: say what is wrong: {answer}");
            }
            _ => panic!("{line:?} expected {expected:?}, was answered {answers:?}"),
        }
    }
    server.assert_still_serves().await;
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
}

#[tokio::test]
async fn a_second_initialize_is_refused_and_changes_nothing() {
    let mut server = Raw::start().await;
    let id = json!(server.fresh_id());
    server
        .send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "impostor", "version": "9"}}})
            .to_string(),
        )
        .await;
    let reply = server.reply(&id).await;
    assert_eq!(reply["error"]["code"], json!(-32600), "{reply}");
    let written = server
        .call("memory_write", json!({"path": "who.md", "content": "x"}))
        .await;
    assert!(tool_result(&written)["isError"] != json!(true), "{written}");
    let history = server
        .call("memory_history", json!({"path": "who.md"}))
        .await;
    let actor = &tool_result(&history)["structuredContent"]["versions"][0]["actor"];
    assert!(
        !actor.as_str().unwrap_or_default().contains("impostor"),
        "the second initialize re-labelled the actor: {history}"
    );
    server.assert_still_serves().await;
}

#[tokio::test]
async fn invalid_utf8_writes_nothing_and_the_server_keeps_serving() {
    let mut server = Raw::start().await;
    let store = server.store();
    let lines: [&[u8]; 4] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"memory_write\",\"arguments\":{\"path\":\"a.md\",\"content\":\"\xff\xfe\"}}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"memory_write\",\"arguments\":{\"path\":\"b\xc3\x28.md\",\"content\":\"x\"}}}\n",
        // A lone surrogate escape is valid JSON syntax but no Unicode scalar value.
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"memory_write\",\"arguments\":{\"path\":\"c.md\",\"content\":\"\\ud800\"}}}\n",
        b"\xff\xfe\xfd\n",
    ];
    for line in lines {
        server.send_bytes(line).await;
        let answers = server.barrier().await;
        let text = String::from_utf8_lossy(line);
        for answer in &answers {
            assert_id_less_error(answer, &text);
        }
    }
    server.assert_still_serves().await;
    // A reply to one of the ids may come late (tool calls run concurrently): whatever
    // arrived must be a refusal.
    for message in server.finish().await {
        if message.get("id").is_some_and(|id| !id.is_null()) {
            assert_refused(&message, "an invalid UTF-8 write");
        } else {
            assert_id_less_error(&message, "an invalid UTF-8 line");
        }
    }
    let files = memories(&store);
    assert!(
        files.iter().all(|f| f.starts_with("alive")),
        "invalid UTF-8 reached the store: {files:?}"
    );
}

#[tokio::test]
async fn a_10_mb_line_is_refused_without_a_hang() {
    let mut server = Raw::start().await;
    let content = "x".repeat(10 * 1024 * 1024);
    let request = json!({
        "jsonrpc": "2.0",
        "id": "big",
        "method": "tools/call",
        "params": {"name": "memory_write", "arguments": {"path": "big.md", "content": content}}
    })
    .to_string();
    drop(content);
    assert!(request.len() > 10 * 1024 * 1024);
    let t0 = Instant::now();
    server.send_line(&request).await;
    let reply = server.reply(&json!("big")).await;
    println!("10 MB line answered in {:?}", t0.elapsed());
    assert_refused(&reply, "a 10 MB memory_write");
    if let Some(result) = reply.get("result") {
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("102400"),
            "the error should name the cap: {text}"
        );
    }
    server.assert_still_serves().await;
    let store = server.store();
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
    assert!(
        !store.join("big.md").exists(),
        "the 10 MB memory was written"
    );
}

#[tokio::test]
async fn a_line_beyond_the_transport_cap_is_dropped_without_harm() {
    // The transport drops a line over 16 MiB unread (bounded memory) and says so with an
    // invalid-request error; the server must survive that and write nothing.
    let mut server = Raw::start().await;
    let content = "y".repeat(17 * 1024 * 1024);
    let request = json!({
        "jsonrpc": "2.0",
        "id": "huge",
        "method": "tools/call",
        "params": {"name": "memory_write", "arguments": {"path": "huge.md", "content": content}}
    })
    .to_string();
    drop(content);
    server.send_line(&request).await;
    // Answered once, with an invalid-request error that carries the request's id: it is
    // read from the head of the line, so the client is not left waiting for a reply.
    let answers = server.barrier().await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], json!(-32600), "{answers:?}");
    assert_eq!(answers[0]["id"], json!("huge"), "{answers:?}");
    server.assert_still_serves().await;
    let store = server.store();
    for message in server.finish().await {
        assert_refused(&message, "a 17 MiB memory_write");
    }
    assert!(
        !store.join("huge.md").exists(),
        "the 17 MiB memory was written"
    );
}

#[tokio::test]
async fn an_oversized_request_is_answered_with_its_id_unless_the_id_comes_last() {
    // Regression: a request over 16 MiB was answered with `id: null`, so a client (the
    // Python SDK) waited for its own timeout. An id after megabytes of params is past
    // what is read of the line, and stays `null`.
    let mut server = Raw::start().await;
    let content = "z".repeat(17 * 1024 * 1024);
    let arguments = json!({"path": "big.md", "content": content}).to_string();
    drop(content);
    let first = format!(
        r#"{{"jsonrpc":"2.0","id":91,"method":"tools/call","params":{{"name":"memory_write","arguments":{arguments}}}}}"#
    );
    server.send_line(&first).await;
    drop(first);
    let answers = server.barrier().await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(
        (&answers[0]["id"], &answers[0]["error"]["code"]),
        (&json!(91), &json!(-32600)),
        "{answers:?}"
    );
    let last = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"memory_write","arguments":{arguments}}},"id":92}}"#
    );
    drop(arguments);
    server.send_line(&last).await;
    drop(last);
    let answers = server.barrier().await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers[0]["id"].is_null(), "{answers:?}");
    server.assert_still_serves().await;
    let store = server.store();
    server.finish().await;
    assert!(
        !store.join("big.md").exists(),
        "the 17 MiB memory was written"
    );
}

#[tokio::test]
async fn unknown_methods_are_not_found_and_unknown_notifications_are_ignored() {
    let mut server = Raw::start().await;
    let long = "m".repeat(1_000_000);
    for (id, method) in [
        (json!(11), "foo/bar"),
        (json!("x"), "tools/frobnicate"),
        (json!(12), ""),
        (json!(13), "rpc.discover"),
        (json!(14), long.as_str()),
    ] {
        server
            .send_line(&json!({"jsonrpc": "2.0", "id": id, "method": method}).to_string())
            .await;
        let reply = server.reply(&id).await;
        assert_eq!(
            reply["error"]["code"],
            json!(-32601),
            "{:?} should be method not found: {reply}",
            &method[..method.len().min(20)]
        );
        // The answer names the method, cut short.
        assert!(
            reply.to_string().len() < 500,
            "{} bytes",
            reply.to_string().len()
        );
    }
    for notification in [
        r#"{"jsonrpc":"2.0","method":"foo/bar"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/foo","params":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","method":"foo/bar","params":[1,2,3]}"#,
    ] {
        server.send_line(notification).await;
        let answers = server.barrier().await;
        assert!(
            answers.is_empty(),
            "a notification got a reply: {notification} → {answers:?}"
        );
    }
    server.assert_still_serves().await;
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
}

#[tokio::test]
async fn logging_set_level_takes_the_spec_levels_only() {
    let mut server = Raw::start().await;
    for (id, level, code) in [
        (21, json!("info"), None),
        (22, json!("emergency"), None),
        (23, json!("verbose"), Some(-32602)),
        (24, json!(3), Some(-32602)),
    ] {
        server
            .send_line(
                &json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": level}})
                    .to_string(),
            )
            .await;
        let reply = server.reply(&json!(id)).await;
        match code {
            None => assert_eq!(reply["result"], json!({}), "{level}: {reply}"),
            Some(code) => assert_eq!(reply["error"]["code"], json!(code), "{level}: {reply}"),
        }
    }
    server.assert_still_serves().await;
}

#[tokio::test]
async fn tool_calls_with_wrong_types_are_errors() {
    let mut server = Raw::start().await;
    let cases = [
        ("memory_write", json!({"path": 5, "content": "x"})),
        ("memory_write", json!({"path": "t1.md", "content": []})),
        ("memory_write", json!({"path": "t2.md", "content": null})),
        (
            "memory_write",
            json!({"path": "t3.md", "content": {"a": 1}}),
        ),
        (
            "memory_write",
            json!({"path": "t4.md", "content": "x", "if_absent": "yes"}),
        ),
        (
            "memory_write",
            json!({"path": "t5.md", "content": "x", "expected_sha256": 7}),
        ),
        (
            "memory_write",
            json!({"path": "t6.md", "restore_version": "one"}),
        ),
        (
            "memory_write",
            json!({"path": "t7.md", "restore_version": -1}),
        ),
        ("memory_write", json!({})),
        ("memory_write", json!({"content": "no path"})),
        ("memory_write", json!({"path": "t8.md"})),
        ("memory_read", json!({"path": "t.md", "view_range": "x"})),
        ("memory_read", json!({"path": "t.md", "view_range": [1]})),
        (
            "memory_read",
            json!({"path": "t.md", "view_range": [1, 2, 3]}),
        ),
        (
            "memory_read",
            json!({"path": "t.md", "view_range": ["1", "2"]}),
        ),
        (
            "memory_read",
            json!({"path": "t.md", "view_range": [1.5, 2]}),
        ),
        ("memory_read", json!({})),
        ("memory_read", json!({"path": ["a", "b"]})),
        ("memory_list", json!({"limit": -1})),
        ("memory_list", json!({"limit": "ten"})),
        ("memory_list", json!({"depth": -3})),
        ("memory_list", json!({"limit": 1e300})),
        ("memory_search", json!({"query": "x", "limit": -1})),
        ("memory_search", json!({"query": 42})),
        ("memory_search", json!({})),
        ("memory_edit", json!({"path": "t.md"})),
        (
            "memory_edit",
            json!({"path": "t.md", "insert_line": "2", "insert_text": "a"}),
        ),
        ("memory_edit", json!({"path": "t.md", "append_text": 3})),
        (
            "memory_edit",
            json!({"path": "t.md", "old_str": "a", "new_str": "b", "replace_all": 1}),
        ),
        ("memory_delete", json!({})),
        ("memory_delete", json!({"path": true})),
        ("memory_history", json!({"limit": -1})),
        ("memory_history", json!({"version": "v1"})),
        ("no_such_tool", json!({})),
        ("", json!({})),
    ];
    for (tool, arguments) in cases {
        let what = format!("{tool} {arguments}");
        let reply = server.call(tool, arguments).await;
        assert_refused(&reply, &what);
    }
    // A value of the wrong type is named by its field, so the model knows what to fix.
    for (tool, arguments, field) in [
        ("memory_write", json!({"path": 5, "content": "x"}), "`path`"),
        (
            "memory_edit",
            json!({"path": "t.md", "insert_line": "2", "insert_text": "a"}),
            "`insert_line`",
        ),
        (
            "memory_read",
            json!({"path": "t.md", "view_range": ["1", "2"]}),
            "`view_range[0]`",
        ),
    ] {
        let reply = server.call(tool, arguments).await;
        let text = tool_result(&reply)["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(text.contains(field), "{tool}: {text}");
    }
    server.assert_still_serves().await;
    let store = server.store();
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
    let files = memories(&store);
    assert!(
        files.iter().all(|f| f.starts_with("alive")),
        "a refused call wrote: {files:?}"
    );
}

#[tokio::test]
async fn malformed_tools_call_params_are_invalid_params() {
    // A known method whose params do not fit is "invalid params" (-32602), not "method
    // not found": the client must learn that its request was wrong, not that the server
    // lacks tools/call.
    let mut server = Raw::start().await;
    let cases = [
        json!({"name": "memory_read", "arguments": "x"}),
        json!({"name": "memory_read", "arguments": [1, 2]}),
        json!({"name": 5, "arguments": {}}),
        json!({"arguments": {"path": "a.md"}}),
        json!({}),
    ];
    let mut wrong = Vec::new();
    for params in cases {
        let id = json!(server.fresh_id());
        server
            .send_line(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                    .to_string(),
            )
            .await;
        let reply = server.reply(&id).await;
        let refused = reply["error"]["code"] == json!(-32602)
            || (reply.get("result").is_some() && reply["result"]["isError"] == json!(true));
        if !refused {
            wrong.push(format!("params {params} → {reply}"));
        }
    }
    let id = json!(server.fresh_id());
    server
        .send_line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"}).to_string())
        .await;
    let reply = server.reply(&id).await;
    if reply["error"]["code"] != json!(-32602) {
        wrong.push(format!("no params → {reply}"));
    }
    server.assert_still_serves().await;
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
    assert!(
        wrong.is_empty(),
        "malformed tools/call answered without invalid params:\n{}",
        wrong.join("\n")
    );
}

#[tokio::test]
async fn a_thousand_pipelined_requests_are_all_answered() {
    const N: u64 = 1000;
    let mut server = Raw::start().await;
    let seed = "seed memory, read 500 times\n";
    let wrote = server
        .call("memory_write", json!({"path": "seed.md", "content": seed}))
        .await;
    assert_ne!(tool_result(&wrote)["isError"], json!(true), "{wrote}");

    // Odd ids write their own file, even ids read the seed. Reads of files written in the
    // same batch would race (requests run concurrently), so reads go to the seed.
    let content = |id: u64| format!("pipelined write {id}\n");
    let mut batch = String::new();
    for id in 1..=N {
        let request = if id % 2 == 1 {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "memory_write",
                "arguments": {"path": format!("p/{id:04}.md"), "content": content(id)}
            }})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "memory_read", "arguments": {"path": "seed.md"}
            }})
        };
        batch.push_str(&request.to_string());
        batch.push('\n');
    }
    // All requests are written before any reply is read, from another task, so neither
    // side can block the other on a full pipe.
    let mut stdin = server.stdin.take().expect("stdin");
    let writer = tokio::spawn(async move {
        for line in batch.lines() {
            stdin.write_all(line.as_bytes()).await.expect("write");
            stdin.write_all(b"\n").await.expect("write");
        }
        stdin.flush().await.expect("flush");
        stdin
    });

    let t0 = Instant::now();
    let mut seen = BTreeSet::new();
    for _ in 0..N {
        let reply = server.recv().await;
        let id = reply["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("reply without a request id: {reply}"));
        assert!((1..=N).contains(&id), "reply to an unknown id: {reply}");
        assert!(seen.insert(id), "two replies to id {id}");
        let result = tool_result(&reply);
        assert_ne!(
            result["isError"],
            json!(true),
            "request {id} failed: {reply}"
        );
        let structured = &result["structuredContent"];
        if id % 2 == 1 {
            assert_eq!(structured["created"], json!(true), "{reply}");
            assert_eq!(
                structured["content_sha256"],
                json!(memdir::text::sha256_hex(content(id).as_bytes())),
                "{reply}"
            );
        } else {
            assert_eq!(structured["content"], json!(seed), "{reply}");
        }
    }
    println!("{N} pipelined requests answered in {:?}", t0.elapsed());
    assert_eq!(seen.len() as u64, N);
    server.stdin = Some(writer.await.expect("writer task"));
    let extra = server.barrier().await;
    assert!(extra.is_empty(), "replies beyond the {N}: {extra:?}");

    let store = server.store();
    for id in (1..=N).filter(|id| id % 2 == 1) {
        let bytes = std::fs::read(store.join(format!("p/{id:04}.md")))
            .unwrap_or_else(|e| panic!("p/{id:04}.md was acknowledged but is missing: {e}"));
        assert_eq!(bytes, content(id).as_bytes());
    }
    assert_eq!(
        std::fs::read_dir(store.join("p")).unwrap().count() as u64,
        N / 2
    );
    server.assert_still_serves().await;
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
}

#[tokio::test]
async fn eof_ends_the_process_promptly_with_status_0() {
    const RUNS: usize = 5;
    let mut idle = Vec::new();
    let mut in_flight = Vec::new();
    for run in 0..RUNS {
        // Idle: the handshake and one round trip done, nothing pending.
        let mut server = Raw::start().await;
        server.assert_still_serves().await;
        let (elapsed, status) = server.close().await;
        assert!(
            status.success(),
            "idle run {run}: memdir exited with {status}"
        );
        idle.push(elapsed);

        // In flight: stdin closes right after a search was sent.
        let mut server = Raw::start().await;
        server.assert_still_serves().await;
        server
            .send_line(
                &json!({"jsonrpc": "2.0", "id": "search", "method": "tools/call", "params": {
                    "name": "memory_search", "arguments": {"query": "still alive"}
                }})
                .to_string(),
            )
            .await;
        let (elapsed, status) = server.close().await;
        assert!(
            status.success(),
            "in-flight run {run}: memdir exited with {status}"
        );
        in_flight.push(elapsed);
        // Whatever it printed before exiting must still be JSON-RPC.
        while let Some(message) = read_message(&mut server.stdout).await {
            assert_eq!(message["id"], json!("search"), "{message}");
        }
    }
    let ms = |d: &Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
    println!(
        "close(stdin) → exit, idle:      {} ms (median {} ms)",
        idle.iter().map(ms).collect::<Vec<_>>().join(", "),
        ms(&median(&idle))
    );
    println!(
        "close(stdin) → exit, in flight: {} ms (median {} ms)",
        in_flight.iter().map(ms).collect::<Vec<_>>().join(", "),
        ms(&median(&in_flight))
    );
    assert!(
        median(&idle) < EXIT_TARGET,
        "idle exit median {:?} ≥ {EXIT_TARGET:?} (runs: {idle:?})",
        median(&idle)
    );
    assert!(
        median(&in_flight) < EXIT_TARGET,
        "in-flight exit median {:?} ≥ {EXIT_TARGET:?} (runs: {in_flight:?})",
        median(&in_flight)
    );
}

/// The size and modification time of the write-ahead log of the one index under `dir`.
fn wal_of(dir: &std::path::Path) -> Option<(u64, std::time::SystemTime)> {
    let wal = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".sqlite3-wal"))?;
    let meta = wal.metadata().ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

#[tokio::test]
async fn eof_after_a_run_of_odd_messages_ends_the_process_promptly() {
    // Malformed JSON, wrong types, unknown tools and methods, then a valid call answered,
    // then stdin closes: the process must be gone at once, every time.
    const RUNS: usize = 20;
    // Each exit must be prompt; the bound leaves room for a busy machine, the median
    // below must stay well under it, and the log check above catches the cause itself.
    const BOUND: Duration = Duration::from_secs(3);
    let odd = [
        "{".to_owned(),
        "not json".to_owned(),
        r#"{"jsonrpc":"2.0","id":1}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"p","method":"ping","params":[1]}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#.to_owned(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "memory_write", "arguments": {"path": 5, "content": []}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "no_such_tool", "arguments": {}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": 7}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
            "params": {"name": "memory_read", "arguments": "not an object"}})
        .to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#.to_owned(),
    ];
    let mut took = Vec::new();
    for run in 0..RUNS {
        let index = tempfile::tempdir().unwrap();
        let mut server = Raw::start_with(&["--index-dir", index.path().to_str().unwrap()]).await;
        for line in &odd {
            server.send_line(line).await;
        }
        server.assert_still_serves().await;
        // A search waits for the index, so it is built and holds the write just made.
        let found = server
            .call("memory_search", json!({"query": "still alive"}))
            .await;
        assert_eq!(tool_result(&found)["structuredContent"]["total_hits"], 1);
        let wal = wal_of(index.path());
        assert!(wal.is_some(), "the index has a write-ahead log");
        let (elapsed, status) = server.close().await;
        assert!(status.success(), "run {run}: memdir exited with {status}");
        took.push(elapsed);
        // The exit did no work on the index, a cache: closing it would checkpoint its
        // log into the database with an fsync, which a busy disk stretches past a second,
        // and then remove or empty the log. (Its size and time may still change before
        // the exit: upkeep runs in the background.)
        let left = wal_of(index.path());
        assert!(
            left.is_some_and(|(len, _)| len > 0),
            "run {run}: the exit checkpointed the index (log before {wal:?}, after {left:?})"
        );
    }
    let ms = |d: &Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
    let max = *took.iter().max().unwrap();
    println!(
        "odd messages, a call, close(stdin) → exit: median {} ms, max {} ms ({})",
        ms(&median(&took)),
        ms(&max),
        took.iter().map(ms).collect::<Vec<_>>().join(", ")
    );
    assert!(max < BOUND, "an exit took {max:?} (runs: {took:?})");
    assert!(
        median(&took) < Duration::from_secs(1),
        "exits took {took:?}"
    );
}

#[tokio::test]
async fn unusual_request_ids_are_echoed() {
    let mut server = Raw::start().await;
    // Written as raw text so the echo is compared digit for digit (2^53 + 1 does not
    // survive a round trip through an f64).
    let ids = [
        r#""abc""#,
        r#""""#,
        r#""7""#,
        r#""🦀 id with spaces""#,
        r#""\u0000\n""#,
        "0",
        "-1",
        "9007199254740993",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    for id in ids {
        server
            .send_line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
        let expected: Value = serde_json::from_str(id).unwrap();
        let reply = server.reply(&expected).await;
        assert!(reply.get("result").is_some(), "ping {id}: {reply}");
        assert_eq!(reply["id"].to_string(), expected.to_string(), "{reply}");
    }
    // A tool call with a string id: the id of a real tool reply is echoed too.
    server
        .send_line(
            r#"{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"memory_list","arguments":{}}}"#,
        )
        .await;
    let reply = server.reply(&json!("call-1")).await;
    assert!(tool_result(&reply).is_object());

    // Ids MCP does not allow (null: "MUST NOT be null"; a fraction; a number beyond
    // 64-bit signed) must still be answered, not left hanging: with their id, or with an
    // invalid-request error that carries none.
    for id in ["null", "1.5", "18446744073709551615"] {
        server
            .send_line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
        let answers = server.barrier().await;
        let answer = match answers.as_slice() {
            // Not refused on sight: then it is a request, and its reply must come.
            [] => server.reply(&serde_json::from_str(id).unwrap()).await,
            [answer] => answer.clone(),
            _ => panic!("id {id} answered several times: {answers:?}"),
        };
        if answer.get("error").is_some() && answer["id"].is_null() {
            assert_id_less_error(&answer, id);
        } else {
            assert_eq!(answer["id"].to_string(), id, "{answer}");
        }
    }
    server.assert_still_serves().await;
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
}

/// Sends a request of the 2026-07-28 era, which carries the protocol version, the
/// client's capabilities and its identity in `_meta` (there is no `initialize`), and
/// returns its reply.
async fn era_request(
    server: &mut Raw,
    id: u64,
    method: &str,
    mut params: Value,
    client: &str,
) -> Value {
    params["_meta"] = era_meta(client);
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    server.send_line(&request.to_string()).await;
    server.reply(&json!(id)).await
}

/// The `_meta` every 2026-07-28 request carries: version, capabilities, client.
fn era_meta(client: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "2.0"}
    })
}

/// `tools/call` in the 2026-07-28 era; returns the tool result.
async fn era_call(server: &mut Raw, id: u64, tool: &str, arguments: Value, client: &str) -> Value {
    let params = json!({"name": tool, "arguments": arguments});
    let reply = era_request(server, id, "tools/call", params, client).await;
    tool_result(&reply).clone()
}

#[tokio::test]
async fn the_2026_07_28_era_serves_without_a_handshake_and_records_each_requests_client() {
    let mut server = Raw::spawn();
    let discover = era_request(&mut server, 1, "server/discover", json!({}), "agent-a").await;
    let versions = discover["result"]["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("no supportedVersions: {discover}"));
    assert!(versions.contains(&json!("2026-07-28")), "{discover}");
    assert!(versions.contains(&json!("2025-11-25")), "{discover}");
    let instructions = discover["result"]["instructions"].as_str().unwrap_or("");
    assert!(instructions.contains("/memories"), "{discover}");

    let listed = era_request(&mut server, 2, "tools/list", json!({}), "agent-a").await;
    let names: BTreeSet<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains("memory_write") && names.contains("memory_history"),
        "{names:?}"
    );

    let write = json!({"path": "era.md", "content": "first\n"});
    let wrote = era_call(&mut server, 3, "memory_write", write, "agent-a").await;
    assert_ne!(wrote["isError"], json!(true), "{wrote}");
    let append = json!({"path": "era.md", "append_text": "second\n"});
    let edited = era_call(&mut server, 4, "memory_edit", append, "agent-b").await;
    assert_ne!(edited["isError"], json!(true), "{edited}");
    let path = json!({"path": "era.md"});
    let read = era_call(&mut server, 5, "memory_read", path.clone(), "agent-a").await;
    assert_eq!(
        read["structuredContent"]["content"],
        json!("first\nsecond\n")
    );
    // Each version names the client that made it, taken from that request's `_meta`.
    let history = era_call(&mut server, 6, "memory_history", path, "agent-a").await;
    let versions = history["structuredContent"]["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("no versions: {history}"))
        .clone();
    let actors: Vec<&str> = versions
        .iter()
        .filter_map(|v| v["actor"].as_str())
        .collect();
    assert_eq!(actors, ["agent-b/2.0", "agent-a/2.0"], "{history}");
    let rest = server.finish().await;
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
}

#[tokio::test]
async fn answers_to_bad_lines_keep_their_order_and_reading_goes_on_while_stdout_is_full() {
    // Alternating bad lines and pings, all written before any reply is read: the answers
    // (about 200 KB) overflow the stdout pipe long before the last line is sent, so the
    // server must go on reading while it waits to write; each answer must be a whole
    // line, and a bad line's answer must come before the reply to the ping after it.
    let mut server = Raw::start().await;
    let n = 1500;
    for i in 0..n {
        server.send_line("not json").await;
        server
            .send_line(
                &json!({"jsonrpc": "2.0", "id": format!("p{i}"), "method": "ping"}).to_string(),
            )
            .await;
    }
    // A reply is made by a task of its own, so it may come after answers to later lines;
    // but the answer to bad line i is always out before the reply to ping i.
    let (mut errors, mut pongs) = (0, 0);
    while errors < n || pongs < n {
        let message = server.recv().await;
        if message["error"]["code"] == json!(-32700) {
            errors += 1;
            continue;
        }
        let id = message["id"].as_str().unwrap_or_default();
        let i: usize = id
            .strip_prefix('p')
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("unexpected message {message}"));
        assert!(message["result"].is_object(), "{message}");
        assert!(
            errors > i,
            "the reply to ping {i} came before the answer to bad line {i}"
        );
        pongs += 1;
    }
    server.assert_still_serves().await;
}

#[tokio::test]
async fn answers_queued_before_a_failed_handshake_are_still_written() {
    // The input ends before `initialize`: the session fails, but what the server already
    // answered (a ping, a line that is not JSON) must reach the client before it exits.
    for (lines, expected) in [
        (
            vec![r#"{"jsonrpc":"2.0","id":"early","method":"ping"}"#],
            "result",
        ),
        (vec!["garbage"], "error"),
        (
            vec![
                r#"{"jsonrpc":"2.0","id":"early","method":"ping"}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ],
            "result",
        ),
    ] {
        let mut server = Raw::spawn();
        for line in &lines {
            server.send_line(line).await;
        }
        let (_, _status) = server.close().await;
        let mut out = Vec::new();
        while let Some(message) = read_message(&mut server.stdout).await {
            out.push(message);
        }
        assert!(
            out.iter().any(|m| m.get(expected).is_some()),
            "{lines:?}: nothing answered, got {out:?}"
        );
    }
}

#[tokio::test]
async fn a_line_of_millions_of_tiny_values_is_refused_without_being_built() {
    // 16 MiB of `0,` is 8 million numbers; parsed, they took 1.5 GB. Such a message is
    // refused (with its id) after a pass that builds nothing, and the server goes on.
    let mut server = Raw::start().await;
    let pid = server.child.id().expect("pid");
    for (id, items) in [("zeros", "0,"), ("arrays", "[],")] {
        let list = items.repeat(8 * 1024 * 1024 / items.len() - 64);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"memory_read","arguments":{{"path":"a.md","x":[{list}0]}}}}}}"#
        );
        assert!(line.len() < 16 << 20);
        server.send_line(&line).await;
        let answer = server.recv().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("at most 100000 JSON values"),
            "{answer}"
        );
    }
    let peak = peak_rss_mib(pid);
    assert!(peak < 100, "the server's peak memory is {peak} MiB");
    server.assert_still_serves().await;
}

/// Whether the server has stopped reading its input: bytes wait in the pipe to its stdin
/// (`input`, a descriptor of that pipe) while every thread of the server sleeps. A server
/// that meant to read would be running, since there is something to read.
fn stopped_reading(pid: u32, input: &OwnedFd) -> bool {
    let waiting = rustix::io::ioctl_fionread(input).expect("FIONREAD on the stdin pipe");
    waiting > 0 && every_thread_sleeps(pid)
}

/// Whether every thread of process `pid` is asleep (state `S` in `/proc/PID/task/*/stat`).
fn every_thread_sleeps(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).all(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            // `pid (comm) state ...`; the name may hold spaces and parentheses.
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('S'))
        })
    })
}

/// Waits until the server has stopped reading (seen twice in a row, so not a passing
/// moment), the writer has sent all `n`, or a minute has passed; polls, as there is no
/// event for a process that chose not to read.
async fn wait_until_reading_stops(pid: u32, input: &OwnedFd, sent: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stopped = 0;
    while sent.load(Ordering::Acquire) < n && stopped < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if stopped_reading(pid, input) {
            stopped += 1;
        } else {
            stopped = 0;
        }
    }
}

#[tokio::test]
async fn a_client_that_never_reads_its_answers_is_not_read_from_without_bound() {
    // 4,000 `tools/list` requests (about 13 KB of answer each, 52 MB in all) sent while
    // nothing is read: the server must stop reading once 16 MiB of answers wait for the
    // client (or 256 requests are being answered), so the sender stalls and the server's
    // memory stays far below what it was asked to answer. Once the client reads, every
    // answer arrives, whole and once.
    let mut server = Raw::start().await;
    let pid = server.child.id().expect("pid");
    let n = 4000usize;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut stdin = server.stdin.take().expect("stdin");
    let input = stdin
        .as_fd()
        .try_clone_to_owned()
        .expect("dup the stdin pipe");
    let progress = Arc::clone(&sent);
    let writer = tokio::spawn(async move {
        for i in 0..n {
            let line =
                json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}).to_string() + "\n";
            stdin
                .write_all(line.as_bytes())
                .await
                .expect("write a request");
            progress.fetch_add(1, Ordering::Release);
        }
        stdin.flush().await.expect("flush");
        stdin
    });
    wait_until_reading_stops(pid, &input, &sent, n).await;
    let stalled_at = sent.load(Ordering::Acquire);
    let peak = peak_rss_mib(pid);
    assert!(
        stalled_at < n,
        "the server read all {n} requests while none of their answers was read"
    );
    assert!(
        peak < 80,
        "the server's peak memory is {peak} MiB with its answers unread"
    );

    let mut seen = vec![false; n];
    for _ in 0..n {
        let message = server.recv().await;
        let id = message["id"].as_u64().expect("an answer to a request") as usize;
        assert!(message["result"]["tools"].is_array(), "{message}");
        assert!(!std::mem::replace(&mut seen[id], true), "answer {id} twice");
    }
    server.stdin = Some(writer.await.expect("writer"));
    assert!(seen.iter().all(|&s| s));
    let peak = peak_rss_mib(pid);
    assert!(peak < 80, "peak memory {peak} MiB after all answers");
    server.assert_still_serves().await;
}

#[tokio::test]
async fn a_2026_07_28_listen_stream_carries_resource_changes_until_cancelled() {
    let mut server = Raw::spawn();
    era_request(&mut server, 1, "server/discover", json!({}), "listener").await;
    let meta = era_meta("listener");
    let listen = json!({
        "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {
            "_meta": meta,
            "notifications": {
                "resourcesListChanged": true,
                "resourceSubscriptions": [
                    "memory://memories/a.md",
                    "memory://memories/../x",
                    "memory://memories/a.md",
                    "memory://memories/.hidden.md",
                    "memory://memories/a.md?v=1"
                ]
            }
        }
    });
    server.send_line(&listen.to_string()).await;
    let ack = server.recv().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    // URIs that name no valid memory path, a hidden one, or one already given, are left
    // out.
    let accepted: BTreeSet<&str> = ack["params"]["notifications"]["resourceSubscriptions"]
        .as_array()
        .unwrap_or_else(|| panic!("{ack}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        accepted,
        BTreeSet::from(["memory://memories/a.md"]),
        "{ack}"
    );

    // A second stream, never cancelled, shows when the server has made the notifications
    // of a change: the cancelled one is checked against it, not against a clock.
    let witness = json!({
        "jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen",
        "params": {
            "_meta": meta,
            "notifications": {
                "resourcesListChanged": true,
                "resourceSubscriptions": ["memory://memories/a.md"]
            }
        }
    });
    server.send_line(&witness.to_string()).await;
    let ack = server.recv().await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 8,
        "{ack}"
    );

    std::fs::write(server.store().join("a.md"), "written outside\n").unwrap();
    let mut got = Vec::new();
    let mut witnessed = Vec::new();
    while got.len() < 2 || witnessed.len() < 2 {
        let note = server.recv().await;
        let method = note["method"].as_str().unwrap_or_default().to_owned();
        match &note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] {
            id if *id == 7 => got.push(method),
            id if *id == 8 => witnessed.push(method),
            _ => panic!("a message of neither stream: {note}"),
        }
    }
    got.sort();
    witnessed.sort();
    for got in [&got, &witnessed] {
        assert_eq!(
            got,
            &[
                "notifications/resources/list_changed",
                "notifications/resources/updated"
            ]
        );
    }

    // Cancelled: nothing more on it. The answer to a request sent after the cancel says
    // the cancel has been read.
    server
        .send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
                .to_string(),
        )
        .await;
    let listed = era_request(&mut server, 9, "tools/list", json!({}), "listener").await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    assert!(
        server.stash.is_empty(),
        "before the cancel was read: {:?}",
        server.stash
    );
    std::fs::write(server.store().join("a.md"), "again\n").unwrap();
    std::fs::write(server.store().join("b.md"), "new\n").unwrap();
    // Once the witness has both changes, the cancelled stream would have had them too:
    // one task sends each change to every stream in turn.
    let mut witnessed = BTreeSet::new();
    while witnessed.len() < 2 {
        let note = server.recv().await;
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 8,
            "after cancelling: {note}"
        );
        witnessed.insert(note["method"].as_str().unwrap_or_default().to_owned());
    }
    // The end of input closes the witness with its response; the cancelled stream has
    // none.
    let rest = server.finish().await;
    assert!(
        rest.iter().all(|m| m.get("id") == Some(&json!(8))
            || (m.get("id").is_none()
                && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 8)),
        "after cancelling: {rest:?}"
    );
}

#[tokio::test]
async fn listen_streams_are_capped_and_never_stall_the_connection_or_its_end() {
    // Open streams are not work in flight: 16 may be open, the 17th is refused, and
    // requests are still answered. Closing stdin ends the server promptly.
    let mut server = Raw::spawn();
    era_request(&mut server, 1, "server/discover", json!({}), "listener").await;
    let meta = era_meta("listener");
    for id in 100..117 {
        let listen = json!({
            "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {"resourcesListChanged": true}}
        });
        server.send_line(&listen.to_string()).await;
    }
    let refused = server.reply(&json!(116)).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("16 subscriptions/listen streams are open"),
        "{refused}"
    );
    let listed = era_request(&mut server, 2, "tools/list", json!({}), "listener").await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    // A cancelled stream frees its place.
    server
        .send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 100}})
                .to_string(),
        )
        .await;
    let again = json!({
        "jsonrpc": "2.0", "id": 200, "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"resourcesListChanged": true}}
    });
    server.send_line(&again.to_string()).await;
    let ack = loop {
        let m = server.recv().await;
        if m["method"] == "notifications/subscriptions/acknowledged"
            && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 200
        {
            break m;
        }
        assert_ne!(m["id"], 200, "the stream was refused: {m}");
    };
    assert!(ack["params"]["notifications"].is_object(), "{ack}");
    let (took, status) = server.close().await;
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(2),
        "exit took {took:?} with 16 streams open"
    );
}

#[tokio::test]
async fn a_notification_or_response_before_the_first_request_is_dropped_not_fatal() {
    let mut server = Raw::spawn();
    server
        .send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    server
        .send_line(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#)
        .await;
    server.handshake().await;
    server.assert_still_serves().await;
}

#[tokio::test]
async fn cancelled_requests_count_as_work_until_their_handler_finishes() {
    // With the store lock held by someone else, writes wait. Each is cancelled right
    // after it is sent: rmcp drops their answers, but their handlers still run and hold
    // their requests, so they must keep counting against the in-flight limit (256), and
    // reading must pause rather than take every request.
    let mut server = Raw::start().await;
    let pid = server.child.id().expect("pid");
    let write = json!({"path": "warm.md", "content": "x\n"});
    server.call("memory_write", write).await;
    let lock_file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(server.store().join(".memdir/lock"))
        .expect("lock file");
    rustix::fs::flock(&lock_file, rustix::fs::FlockOperation::LockExclusive).expect("flock");

    let n = 1200usize;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut stdin = server.stdin.take().expect("stdin");
    let input = stdin
        .as_fd()
        .try_clone_to_owned()
        .expect("dup the stdin pipe");
    let progress = Arc::clone(&sent);
    let writer = tokio::spawn(async move {
        for i in 0..n {
            let call = json!({
                "jsonrpc": "2.0", "id": format!("w{i}"), "method": "tools/call",
                "params": {"name": "memory_write", "arguments": {"path": format!("c{i}.md"), "content": "x\n"}}
            });
            let cancel = json!({
                "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": format!("w{i}")}
            });
            let lines = format!("{call}\n{cancel}\n");
            stdin.write_all(lines.as_bytes()).await.expect("write");
            progress.fetch_add(1, Ordering::Release);
        }
        stdin.flush().await.expect("flush");
        stdin
    });
    wait_until_reading_stops(pid, &input, &sent, n).await;
    assert!(
        sent.load(Ordering::Acquire) < n,
        "the server read all {n} cancelled writes while none could finish"
    );
    drop(lock_file);
    server.stdin = Some(writer.await.expect("writer"));
    // The writes queued behind the lock (each with its fsyncs) all run before the next
    // call is read; on a busy machine that alone can take longer than one reply may.
    server.reply_timeout = Duration::from_secs(120);
    server.assert_still_serves().await;
}
