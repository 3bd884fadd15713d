//! Test harness: starts the real `memdir` binary and talks to it through the rmcp client
//! over stdio, exactly as an MCP client application does.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

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
    stderr: Option<tokio::process::ChildStderr>,
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
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn memdir");
        let pid = transport.id().expect("child pid");
        let client = ().serve(transport).await.expect("MCP handshake");
        Server {
            client,
            pid,
            stderr,
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

    /// Waits until the server prints `needle` on stderr (e.g. a test pause point).
    pub async fn wait_for_stderr(&mut self, needle: &str) {
        let stderr = self.stderr.take().expect("stderr is piped once");
        let mut lines = BufReader::new(stderr).lines();
        let found = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(needle) {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        assert!(found, "server never printed {needle:?}");
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
