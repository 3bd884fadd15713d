//! Test harness: starts the real `memdir` binary and talks to it through the rmcp client
//! over stdio, exactly as an MCP client application does.

#![allow(dead_code)]

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio::sync::Notify;

pub const BIN: &str = env!("CARGO_BIN_EXE_memdir");

/// What one tool call answered.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub is_error: bool,
    pub text: String,
    pub structured: Value,
}

/// A running server and its client.
pub struct Server {
    pub client: RunningService<RoleClient, ()>,
    pub pid: u32,
    stderr: Option<StderrLog>,
}

/// A temp folder holding `store/` (the served store) and `outside/` (with a canary).
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

pub const CANARY: &str = "CANARY-7f3a: this file lives outside the store and must never change\n";

impl Sandbox {
    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(tmp.path().join("store")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside/dir")).unwrap();
        std::fs::write(tmp.path().join("outside/canary.txt"), CANARY).unwrap();
        std::fs::write(tmp.path().join("outside/dir/canary.txt"), CANARY).unwrap();
        Sandbox { tmp }
    }

    pub fn store(&self) -> PathBuf {
        self.tmp.path().join("store")
    }

    pub fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    /// Every file outside the store, with its bytes: must stay identical.
    pub fn outside_snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(self.outside())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| (e.path().to_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    }

    pub async fn serve(&self) -> Server {
        self.serve_with(&[]).await
    }

    /// `memdir --root <store>` with extra arguments.
    pub async fn serve_with(&self, extra: &[&str]) -> Server {
        let store = self.store();
        let mut args = vec!["--root", store.to_str().unwrap()];
        args.extend_from_slice(extra);
        Server::start(&args, &[]).await
    }
}

impl Server {
    /// Starts `memdir ARGS` with extra environment variables.
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_with(args, env, |_| {}).await
    }

    /// Starts `memdir ARGS` with extra environment variables and a last say on the
    /// command (e.g. resource limits set in `pre_exec`).
    pub async fn start_with(
        args: &[&str],
        env: &[(&str, &str)],
        adjust: impl FnOnce(&mut Command),
    ) -> Server {
        let cmd = Command::new(BIN).configure(|c| {
            // Search indexes go to the build's temp folder, never the user's cache.
            c.args(args).env("RUST_LOG", "memdir=warn").env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
            );
            for (k, v) in env {
                c.env(k, v);
            }
            adjust(c);
        });
        let (transport, stderr) = spawn_mcp(cmd);
        let pid = transport.id().expect("child pid");
        let client = ().serve(transport).await.expect("MCP handshake");
        Server {
            client,
            pid,
            stderr: Some(stderr),
        }
    }

    /// A server started some other way (over HTTP), driven through `client`.
    pub fn attach(client: RunningService<RoleClient, ()>, pid: u32) -> Server {
        Server {
            client,
            pid,
            stderr: None,
        }
    }

    pub async fn call(&self, tool: &str, args: Value) -> Outcome {
        let Value::Object(map) = args else {
            panic!("tool arguments must be an object")
        };
        let result: CallToolResult = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
            .await
            .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"));
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Outcome {
            is_error: result.is_error.unwrap_or(false),
            text,
            structured: result.structured_content.unwrap_or(Value::Null),
        }
    }

    /// Calls a tool that must succeed; returns its structured content.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let out = self.call(tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args} failed: {}", out.text);
        out.structured
    }

    /// Calls a tool that must fail; returns the error text.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args.clone()).await;
        assert!(out.is_error, "{tool} {args} should fail, got: {}", out.text);
        assert!(
            out.structured.is_null(),
            "errors carry no structured content"
        );
        out.text
    }

    /// Waits until the server prints `needle` on stderr (e.g. a test pause point), after
    /// the line an earlier wait found.
    pub async fn wait_for_stderr(&mut self, needle: &str) {
        self.stderr
            .as_mut()
            .expect("a server started by this harness")
            .wait_for(needle)
            .await;
    }

    /// Calls `tool` in the background on a server started with `MEMDIR_TEST_PAUSE=stage`,
    /// waits until the call is paused at that stage, SIGKILLs the server, and waits (at
    /// most 5 s) for the call to end.
    pub async fn kill_paused_call(&mut self, tool: &str, args: Value, stage: &str) {
        let peer = self.client.peer().clone();
        let request = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().expect("arguments are an object").clone());
        let call = tokio::spawn(async move {
            let _ = peer.call_tool(request).await;
        });
        self.wait_for_stderr(&format!("test pause at {stage}"))
            .await;
        self.kill9();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), call).await;
    }

    pub fn kill9(&self) {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.pid as i32).expect("pid"),
            rustix::process::Signal::KILL,
        )
        .expect("SIGKILL");
    }

    /// The names of the tools offered, sorted.
    pub async fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .client
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        names
    }

    pub async fn stop(self) {
        let _ = self.client.cancel().await;
    }
}

/// Files whose name marks them as memdir temp files, anywhere under `dir`.
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".memdir-tmp-"))
        .map(|e| e.path().to_owned())
        .collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    memdir::text::sha256_hex(bytes)
}

/// The peak resident memory of process `pid` in MiB (`VmHWM`).
pub fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib / 1024
}

/// How long [`StderrLog::wait_for`] waits for a line.
const LOG_WAIT: Duration = Duration::from_secs(20);

/// A child process's stderr, read line by line into memory, so that the server's log
/// neither reaches the test output nor fills a pipe the server would block on. When it is
/// dropped it prints what it holds to the test's captured output, which the test runner
/// shows only for a test that fails.
pub struct StderrLog {
    label: String,
    shared: Arc<LogLines>,
    /// Lines already matched by [`StderrLog::wait_for`].
    seen: usize,
}

#[derive(Default)]
struct LogLines {
    lines: Mutex<Vec<String>>,
    /// Set once the child has closed its stderr.
    closed: Mutex<bool>,
    grew: Notify,
}

impl LogLines {
    fn push(&self, line: &[u8]) {
        let line = String::from_utf8_lossy(line);
        let line = line.strip_suffix('\n').unwrap_or(&line);
        self.lines.lock().unwrap().push(line.to_owned());
        self.grew.notify_waiters();
    }

    fn close(&self) {
        *self.closed.lock().unwrap() = true;
        self.grew.notify_waiters();
    }
}

impl StderrLog {
    /// Reads `stderr` on a task of the current tokio runtime.
    pub fn read_async(stderr: impl AsyncRead + Unpin + Send + 'static, label: &str) -> StderrLog {
        let shared = Arc::new(LogLines::default());
        let sink = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            while let Ok(n) = stderr.read_until(b'\n', &mut line).await {
                if n == 0 {
                    break;
                }
                sink.push(&line);
                line.clear();
            }
            sink.close();
        });
        StderrLog {
            label: label.to_owned(),
            shared,
            seen: 0,
        }
    }

    /// Reads `stderr` on a thread of its own (for children started without tokio).
    pub fn read_blocking(stderr: impl std::io::Read + Send + 'static, label: &str) -> StderrLog {
        let shared = Arc::new(LogLines::default());
        let sink = Arc::clone(&shared);
        std::thread::spawn(move || {
            let mut stderr = std::io::BufReader::new(stderr);
            let mut line = Vec::new();
            while let Ok(n) = stderr.read_until(b'\n', &mut line) {
                if n == 0 {
                    break;
                }
                sink.push(&line);
                line.clear();
            }
            sink.close();
        });
        StderrLog {
            label: label.to_owned(),
            shared,
            seen: 0,
        }
    }

    /// Everything read so far, one line each.
    pub fn text(&self) -> String {
        self.shared.lines.lock().unwrap().join("\n")
    }

    /// Waits (at most 20 s) for a line containing `needle` after the lines earlier waits
    /// matched, and returns it; panics if the child closes its stderr first.
    pub async fn wait_for(&mut self, needle: &str) -> String {
        let shared = Arc::clone(&self.shared);
        let from = self.seen;
        let found = tokio::time::timeout(LOG_WAIT, async {
            loop {
                // Registered before looking, so a line pushed meanwhile still wakes it.
                let grew = shared.grew.notified();
                {
                    let lines = shared.lines.lock().unwrap();
                    if let Some(i) = lines[from..].iter().position(|l| l.contains(needle)) {
                        return Some((from + i, lines[from + i].clone()));
                    }
                }
                if *shared.closed.lock().unwrap() {
                    return None;
                }
                grew.await;
            }
        })
        .await;
        match found {
            Ok(Some((i, line))) => {
                self.seen = i + 1;
                line
            }
            Ok(None) => panic!(
                "{} closed its stderr without printing {needle:?}:\n{}",
                self.label,
                self.text()
            ),
            Err(_) => panic!(
                "{} did not print {needle:?} within {LOG_WAIT:?}:\n{}",
                self.label,
                self.text()
            ),
        }
    }
}

impl Drop for StderrLog {
    fn drop(&mut self) {
        let text = self.text();
        if !text.is_empty() {
            // Captured by the test runner: shown only if this test fails.
            eprintln!("---- stderr of {} ----\n{text}", self.label);
        }
    }
}

/// Spawns an MCP server command for an rmcp client, its stderr captured in a
/// [`StderrLog`].
pub fn spawn_mcp(cmd: Command) -> (TokioChildProcess, StderrLog) {
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memdir");
    let log = StderrLog::read_async(stderr.expect("stderr is piped"), "memdir");
    (transport, log)
}
