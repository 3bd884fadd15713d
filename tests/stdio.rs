//! The kinds of stdin/stdout a host may hand the server: pipes (most hosts), sockets
//! (hosts built on libuv, such as Node.js, connect a child's stdio with socket pairs),
//! and plain files or terminals (a person redirecting a file). Pipes and sockets are
//! served non-blocking on the event loop; the rest through blocking reads and writes.
//! Each kind must serve, end at EOF with status 0, and leave the descriptors' flags as
//! it found them, since a shell or the host may share them.

#[path = "common/child.rs"]
mod child;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, StderrLog};
use rustix::fs::OFlags;
use serde_json::{Value, json};

/// How long the server may take to answer or to exit. Generous: debug builds on a
/// shared 2-core machine.
const TIMEOUT: Duration = Duration::from_secs(10);

/// `memdir --root STORE` on these stdin and stdout, its stderr captured (shown if the
/// test fails).
fn spawn(store: &std::path::Path, stdin: Stdio, stdout: Stdio) -> (Child, StderrLog) {
    let mut child = spawn_with(store, stdin, stdout, Stdio::piped(), "memdir=warn");
    let log = StderrLog::read_blocking(child.stderr.take().expect("piped stderr"), "memdir");
    (child, log)
}

fn spawn_with(
    store: &std::path::Path,
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
    log: &str,
) -> Child {
    let child = Command::new(BIN)
        .arg("--root")
        .arg(store)
        .env("RUST_LOG", log)
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn memdir");
    // A server that stops answering is killed, so a blocked read in the test ends (and
    // fails) instead of hanging the run. This sleep is a deadline, not an ordering; the
    // signal goes through a pidfd, so a pid reused after the exit is never hit.
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(child.id() as i32).expect("a child pid"),
        rustix::process::PidfdFlags::empty(),
    )
    .expect("pidfd_open");
    std::thread::spawn(move || {
        std::thread::sleep(TIMEOUT * 3);
        let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
    });
    child
}

/// The newline-delimited requests of one session: the handshake, a write, a read of it
/// and a ping.
fn session(content: &str) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "1.0"}
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_write", "arguments": {"path": "note.md", "content": content}
        }}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "memory_read", "arguments": {"path": "note.md"}
        }}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ]
}

/// Sends each request and waits for its reply before the next (notifications get none),
/// checking every reply; then closes `to` and waits for the exit.
fn converse(child: &mut Child, to: impl Write, from: impl Read, content: &str) {
    converse_checking(child, to, from, content, |_| {});
}

/// `converse`, calling `serving` once the handshake is answered.
fn converse_checking(
    child: &mut Child,
    mut to: impl Write,
    from: impl Read,
    content: &str,
    serving: impl Fn(&Child),
) {
    let mut from = BufReader::new(from);
    for request in session(content) {
        writeln!(to, "{request}").expect("write a request");
        to.flush().expect("flush");
        let Some(id) = request.get("id") else {
            continue;
        };
        let mut line = String::new();
        from.read_line(&mut line).expect("read a reply");
        let reply: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("reply to {id} is not JSON ({e}): {line:?}"));
        assert_eq!(&reply["id"], id, "{reply}");
        assert!(
            reply.get("result").is_some(),
            "request {id} failed: {reply}"
        );
        if id == 1 {
            serving(child);
        }
        if id == 3 {
            assert_eq!(
                reply["result"]["structuredContent"]["content"],
                json!(content)
            );
        }
    }
    drop(to);
    let status = wait(child);
    assert!(status.success(), "memdir exited with {status}");
}

/// Waits for the exit; kills the server and fails if it takes longer than `TIMEOUT`.
fn wait(child: &mut Child) -> ExitStatus {
    child::wait_timeout(child, TIMEOUT).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("memdir did not exit within {TIMEOUT:?} of EOF");
    })
}

/// Whether a thread of process `pid` sleeps in a write to `pipe` (as `/proc` names it,
/// `pipe:[INODE]`): `/proc/PID/task/*/syscall` gives the system call a thread is blocked
/// in and its arguments, the first being the descriptor. Polled: a blocked write is no
/// event another process can wait on.
fn blocked_writing_to(pid: u32, pipe: &std::path::Path) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|task| {
        let Ok(call) = std::fs::read_to_string(task.path().join("syscall")) else {
            return false;
        };
        let mut fields = call.split_whitespace();
        let number = fields.next().and_then(|n| n.parse::<libc::c_long>().ok());
        let fd = fields
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        let writes = [libc::SYS_write, libc::SYS_writev, libc::SYS_pwrite64];
        match (number, fd) {
            (Some(n), Some(fd)) if writes.contains(&n) => {
                std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|p| p == pipe)
            }
            _ => false,
        }
    })
}

fn set_send_buffer(socket: &UnixStream, bytes: libc::c_int) {
    // SAFETY: a valid socket descriptor and a pointer to a c_int of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_SNDBUF)");
}

fn flags(fd: &OwnedFd) -> OFlags {
    rustix::fs::fcntl_getfl(fd.as_fd()).expect("F_GETFL")
}

#[test]
fn pipes_are_served_non_blocking_and_their_flags_restored_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let (in_read, in_write) = std::io::pipe().unwrap();
    let (out_read, out_write) = std::io::pipe().unwrap();
    // The test keeps a descriptor of each end the server gets: they share its open file
    // descriptions, so their flags are the server's.
    let in_shared = OwnedFd::from(in_read.try_clone().unwrap());
    let out_shared = OwnedFd::from(out_write.try_clone().unwrap());
    assert!(!flags(&in_shared).contains(OFlags::NONBLOCK));
    let (mut child, _log) = spawn(
        &tmp.path().join("store"),
        Stdio::from(in_read),
        Stdio::from(out_write),
    );
    let mut to = in_write;
    let mut from = BufReader::new(out_read);
    writeln!(to, "{}", session("")[0]).unwrap();
    let mut line = String::new();
    from.read_line(&mut line).unwrap();
    assert!(line.contains(r#""serverInfo""#), "{line}");
    // Serving: both ends are non-blocking (the event loop reads and writes them).
    assert!(flags(&in_shared).contains(OFlags::NONBLOCK));
    assert!(flags(&out_shared).contains(OFlags::NONBLOCK));
    drop(to);
    let status = wait(&mut child);
    assert!(status.success(), "memdir exited with {status}");
    // Gone: the flags are as they were, for whoever else holds these descriptors.
    assert!(!flags(&in_shared).contains(OFlags::NONBLOCK));
    assert!(!flags(&out_shared).contains(OFlags::NONBLOCK));
}

#[test]
fn a_full_session_over_pipes() {
    let tmp = tempfile::tempdir().unwrap();
    let (in_read, in_write) = std::io::pipe().unwrap();
    let (out_read, out_write) = std::io::pipe().unwrap();
    let (mut child, _log) = spawn(
        &tmp.path().join("store"),
        Stdio::from(in_read),
        Stdio::from(out_write),
    );
    converse(&mut child, in_write, out_read, "over pipes\n");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("store/note.md")).unwrap(),
        "over pipes\n"
    );
}

#[test]
fn a_full_session_over_socket_pairs_as_node_hosts_give() {
    let tmp = tempfile::tempdir().unwrap();
    let (in_ours, in_theirs) = UnixStream::pair().unwrap();
    let (out_ours, out_theirs) = UnixStream::pair().unwrap();
    // A small send buffer, so the server's larger replies take several non-blocking
    // writes with waits for readiness between them.
    set_send_buffer(&out_theirs, 4096);
    let in_shared = OwnedFd::from(in_theirs.try_clone().unwrap());
    let out_shared = OwnedFd::from(out_theirs.try_clone().unwrap());
    let (mut child, _log) = spawn(
        &tmp.path().join("store"),
        Stdio::from(OwnedFd::from(in_theirs)),
        Stdio::from(OwnedFd::from(out_theirs)),
    );
    out_ours.set_read_timeout(Some(TIMEOUT)).unwrap();
    let content = "a line long enough to fill buffers\n".repeat(900);
    let serving = |_: &Child| {
        // The event loop serves the sockets, non-blocking.
        assert!(flags(&in_shared).contains(OFlags::NONBLOCK));
        assert!(flags(&out_shared).contains(OFlags::NONBLOCK));
    };
    converse_checking(&mut child, in_ours, out_ours, &content, serving);
    assert!(!flags(&in_shared).contains(OFlags::NONBLOCK));
    assert!(!flags(&out_shared).contains(OFlags::NONBLOCK));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("store/note.md")).unwrap(),
        content
    );
}

#[test]
fn one_socket_for_both_stdin_and_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let (ours, theirs) = UnixStream::pair().unwrap();
    let theirs_too = theirs.try_clone().unwrap();
    let shared = OwnedFd::from(theirs.try_clone().unwrap());
    ours.set_read_timeout(Some(TIMEOUT)).unwrap();
    let (mut child, _log) = spawn(
        &tmp.path().join("store"),
        Stdio::from(OwnedFd::from(theirs)),
        Stdio::from(OwnedFd::from(theirs_too)),
    );
    let to = ours.try_clone().unwrap();
    // EOF for the server is the shutdown of our writing half.
    let mut from = BufReader::new(&ours);
    let mut to = &to;
    for request in session("one socket\n") {
        writeln!(to, "{request}").unwrap();
        if let Some(id) = request.get("id") {
            let mut line = String::new();
            from.read_line(&mut line).unwrap();
            let reply: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(&reply["id"], id, "{reply}");
            assert!(reply.get("result").is_some(), "{reply}");
        }
    }
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let status = wait(&mut child);
    assert!(status.success(), "memdir exited with {status}");
    // stdin and stdout are one open file here: restoring one half must not leave the
    // file non-blocking.
    assert!(!flags(&shared).contains(OFlags::NONBLOCK));
}

#[test]
fn stdout_shared_with_stderr_stays_blocking_and_every_reply_arrives() {
    // `2>&1`: the log and the protocol share one pipe. Making it non-blocking would make
    // the log's blocking writes fail whenever the pipe is full, and a failed log write
    // must never cost a reply. So that pipe is left blocking; a debug log makes sure
    // there is plenty of logging in between.
    let tmp = tempfile::tempdir().unwrap();
    let (in_read, in_write) = std::io::pipe().unwrap();
    let (out_read, out_write) = std::io::pipe().unwrap();
    let out_shared = OwnedFd::from(out_write.try_clone().unwrap());
    let pipe = std::fs::read_link(format!("/proc/self/fd/{}", out_read.as_raw_fd()))
        .expect("the output pipe's name");
    let err_write = out_write.try_clone().unwrap();
    let mut child = spawn_with(
        &tmp.path().join("store"),
        Stdio::from(in_read),
        Stdio::from(out_write),
        Stdio::from(err_write),
        "memdir=debug,rmcp=debug",
    );
    let mut to = in_write;
    let mut from = BufReader::new(out_read);
    // The next JSON-RPC message; log lines in between are skipped.
    let mut next_message = |what: &str| -> Value {
        loop {
            let mut line = String::new();
            let n = from.read_line(&mut line).expect("read");
            assert!(n > 0, "output ended before {what}");
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message.get("jsonrpc").is_some()
            {
                return message;
            }
        }
    };
    for request in session("shared with stderr\n") {
        writeln!(to, "{request}").unwrap();
        if let Some(id) = request.get("id") {
            let reply = next_message("a reply");
            assert_eq!(&reply["id"], id, "{reply}");
            assert!(reply.get("result").is_some(), "{reply}");
            assert!(!flags(&out_shared).contains(OFlags::NONBLOCK));
        }
    }
    // Many requests written before any reply is read, so the pipe fills up while the
    // server is logging.
    const N: u64 = 300;
    let batch: String = (0..N)
        .map(|id| {
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/call", "params": {
                    "name": "memory_read", "arguments": {"path": "note.md"}
                }})
            )
        })
        .collect();
    let writer = std::thread::spawn(move || {
        to.write_all(batch.as_bytes()).unwrap();
        to
    });
    // Replies are read only once the server is stuck writing into the full pipe.
    let t0 = Instant::now();
    while !blocked_writing_to(child.id(), &pipe) {
        assert!(
            t0.elapsed() < TIMEOUT,
            "the server never filled its output pipe"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut answered = std::collections::BTreeSet::new();
    while (answered.len() as u64) < N {
        let reply = next_message("every reply");
        assert!(reply.get("result").is_some(), "{reply}");
        answered.insert(reply["id"].as_u64().expect("numeric id"));
    }
    drop(writer.join().unwrap());
    // Whatever it logs on the way out is read, so a full pipe cannot hold up its exit.
    let drain = std::thread::spawn(move || std::io::copy(&mut from, &mut std::io::sink()));
    let status = wait(&mut child);
    assert!(status.success(), "memdir exited with {status}");
    drop(out_shared);
    drain.join().unwrap().unwrap();
}

#[test]
fn requests_from_a_file_and_replies_to_a_file_are_served_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let requests = tmp.path().join("requests.jsonl");
    let replies = tmp.path().join("replies.jsonl");
    let mut text = String::new();
    for request in session("from a file\n") {
        text.push_str(&request.to_string());
        text.push('\n');
    }
    std::fs::write(&requests, text).unwrap();
    let (mut child, _log) = spawn(
        &tmp.path().join("store"),
        Stdio::from(std::fs::File::open(&requests).unwrap()),
        Stdio::from(std::fs::File::create(&replies).unwrap()),
    );
    // A regular file cannot be polled: the server must fall back to blocking reads
    // rather than fail, and end at the file's end.
    let status = wait(&mut child);
    assert!(status.success(), "memdir exited with {status}");
    let printed = std::fs::read_to_string(&replies).unwrap();
    let replies: Vec<Value> = printed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect();
    // The whole file is read at once, so requests still running at its end may go
    // unanswered; the handshake is answered before anything else is read.
    assert_eq!(
        replies.first().map(|r| &r["id"]),
        Some(&json!(1)),
        "{printed}"
    );
    assert!(replies[0]["result"]["serverInfo"].is_object(), "{printed}");
    for reply in &replies {
        assert!(reply.get("result").is_some(), "{reply}");
    }
}

#[test]
fn a_closed_stderr_is_pointed_at_dev_null_before_anything_is_opened() {
    // Started with `2>&-`: the first file the server opened would get descriptor 2 and
    // receive the log. It must be /dev/null instead (Rust's runtime start-up sees to
    // that before `main`), and the store must hold only what was written to it.
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let (in_read, in_write) = std::io::pipe().unwrap();
    let (out_read, out_write) = std::io::pipe().unwrap();
    let mut command = Command::new(BIN);
    command
        .arg("--root")
        .arg(tmp.path().join("store"))
        .env("RUST_LOG", "memdir=debug")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .stdin(Stdio::from(in_read))
        .stdout(Stdio::from(out_write));
    // SAFETY: only close(2), which is async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::close(2);
            Ok(())
        });
    }
    let mut child = command.spawn().expect("spawn memdir");
    let stderr = std::fs::read_link(format!("/proc/{}/fd/2", child.id()));
    let mut to = in_write;
    let mut from = BufReader::new(out_read);
    let mut replies = 0;
    for request in session("stderr was closed\n") {
        writeln!(to, "{request}").unwrap();
        if request.get("id").is_some() {
            let mut line = String::new();
            from.read_line(&mut line).unwrap();
            let reply: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
            assert!(reply.get("result").is_some(), "{reply}");
            replies += 1;
            if replies == 1 {
                let fd2 = std::fs::read_link(format!("/proc/{}/fd/2", child.id())).unwrap();
                assert_eq!(fd2, std::path::Path::new("/dev/null"), "before: {stderr:?}");
            }
        }
    }
    drop(to);
    let status = wait(&mut child);
    assert!(status.success(), "memdir exited with {status}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("store/note.md")).unwrap(),
        "stderr was closed\n"
    );
    let lock = std::fs::read(tmp.path().join("store/.memdir/lock")).unwrap();
    assert!(lock.is_empty(), "{}", String::from_utf8_lossy(&lock));
}
