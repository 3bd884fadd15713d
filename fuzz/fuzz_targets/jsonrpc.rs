//! Fuzz target `jsonrpc`: raw bytes as what an MCP client writes to memdir's stdin, served
//! by `memdir::mcp::serve` over an in-memory pipe, in a fresh store per run.
//!
//! Each run opens a session (a valid `initialize` and `notifications/initialized`), writes
//! the input as it is (lines), then, if it had several lines, the input again with its
//! newlines turned into spaces (one raw line), closes the pipe, and reads everything the
//! server writes until it ends. Inputs of even length are served with a search index,
//! odd ones without (searches scan the files), so both paths are fuzzed reproducibly.
//!
//! Invariants (a panic is a finding; a panic on any server thread aborts the process):
//! - the server ends after end of input, within `SESSION_LIMIT` ("hang" otherwise), and
//!   `serve` returns `Ok`;
//! - every line it writes is one JSON-RPC 2.0 message (a JSON object, `"jsonrpc":"2.0"`),
//!   and the first is the answer to our `initialize`;
//! - nothing it writes shows the host path of the store, or the canary that lives outside
//!   the store (reachable only through the symlink `out -> ../outside`). The canary is
//!   new per run and nothing ever compares input with it, so the fuzzer cannot learn it.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use memdir::memory::{IndexLocation, Memdir, Settings};
use memdir::store::StoreConfig;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long one session may take before it counts as a hang.
const SESSION_LIMIT: Duration = Duration::from_secs(10);

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
);

fuzz_target!(|data: &[u8]| session(data));

/// A fresh store (with a note and the escape bait) and a canary outside it.
struct Sandbox {
    tmp: tempfile::TempDir,
    canary: String,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::Builder::new()
            .prefix("memdir-fuzz-jsonrpc-")
            .tempdir()
            .expect("temp dir");
        let root = tmp.path();
        // The temp folder's random name makes the canary unique to this run.
        let canary = format!(
            "CANARY-{}",
            root.file_name().unwrap_or_default().to_string_lossy()
        );
        std::fs::create_dir_all(root.join("store/notes")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("outside/canary.md"), &canary).unwrap();
        std::fs::write(
            root.join("store/notes/rust.md"),
            "---\ndescription: Rust notes\ntype: reference\ntags: [rust]\n---\nRust is crash safe.\n数据库很快\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("../outside", root.join("store/out")).unwrap();
        Sandbox { tmp, canary }
    }

    fn memdir(&self, indexed: bool) -> Memdir {
        let root = self.tmp.path();
        let config = StoreConfig {
            name: "memories".into(),
            location: memdir::store::Location::Folder(root.join("store")),
            read_only: false,
            description: Some("fuzzed".into()),
        };
        let settings = Settings {
            index: if indexed {
                IndexLocation::Dir(root.join("index"))
            } else {
                IndexLocation::Off
            },
            ..Settings::default()
        };
        Memdir::open(&[config], settings).expect("open the store")
    }
}

fn session(input: &[u8]) {
    let sandbox = Sandbox::new();
    let memdir = sandbox.memdir(input.len().is_multiple_of(2));
    let mut request = HANDSHAKE.as_bytes().to_vec();
    request.extend_from_slice(input);
    // A last line without a newline is an incomplete message: end it, so it is read.
    if !request.ends_with(b"\n") {
        request.push(b'\n');
    }
    if input.trim_ascii_end().contains(&b'\n') {
        request.extend(input.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
        request.push(b'\n');
    }
    // A runtime per session: dropping it waits for the blocking work `serve` leaves
    // behind (index warm-up, history upkeep), so the store is removed only after it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let output = runtime.block_on(async move {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(memdir::mcp::serve(
            memdir,
            memdir::mcp::ToolSet::All,
            (server_read, server_write),
        ));
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let write = async move {
            // The server may stop reading early; what it wrote is still checked.
            let _ = client_write.write_all(&request).await;
            let _ = client_write.shutdown().await;
        };
        let read = async move {
            let mut out = Vec::new();
            let _ = client_read.read_to_end(&mut out).await;
            out
        };
        let all = async move {
            let ((), out) = tokio::join!(write, read);
            (serving.await, out)
        };
        match tokio::time::timeout(SESSION_LIMIT, all).await {
            Ok((Ok(served), out)) => {
                if let Err(e) = served {
                    panic!("serve failed: {e:#}");
                }
                out
            }
            Ok((Err(join), _)) => std::panic::resume_unwind(join.into_panic()),
            Err(_) => {
                panic!("hang: the server did not end within {SESSION_LIMIT:?} of end of input")
            }
        }
    });
    drop(runtime);
    check_output(&output, input, &sandbox);
}

fn check_output(output: &[u8], input: &[u8], sandbox: &Sandbox) {
    let text = std::str::from_utf8(output).expect("the server wrote invalid UTF-8");
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "the last message is not ended by a newline"
    );
    for (i, line) in text.lines().enumerate() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {i} is not JSON ({e}): {line:?}"));
        assert_eq!(
            message.get("jsonrpc").and_then(Value::as_str),
            Some("2.0"),
            "line {i} is not a JSON-RPC 2.0 message: {line}"
        );
        if i == 0 {
            assert_eq!(
                message["id"], 0,
                "the first message answers initialize: {line}"
            );
            assert_eq!(
                message["result"]["serverInfo"]["name"], "memdir",
                "initialize failed: {line}"
            );
        }
    }
    assert!(!text.is_empty(), "no answer to initialize");
    // Errors echo what the agent wrote; only what the input did not spell is a leak.
    let input = String::from_utf8_lossy(input);
    let shown = |secret: &str| text.contains(secret) && !input.contains(secret);
    // The temp folder's random name is part of every host path of the store.
    let host = sandbox
        .tmp
        .path()
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    assert!(!shown(&host), "the output shows the host path of the store");
    assert!(
        !shown(&sandbox.canary),
        "the output shows the canary from outside the store"
    );
}
