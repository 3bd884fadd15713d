//! Races and faults through the real binary: a folder swapped for an outward symlink while
//! tools work under it, a disk that fills up mid-write, and SIGKILL at each stage of a
//! mutation's history append. What must hold: zero escapes, the canary untouched, old
//! content intact on failure, and history and files consistent after a restart.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::{CANARY, Sandbox, Server, sha256_hex, temp_files};
use serde_json::{Value, json};

// ---- symlink swap race ------------------------------------------------------------------

/// Swaps the entries at `a` and `b` with `renameat2(RENAME_EXCHANGE)` as fast as it can,
/// counting swaps, until told to stop.
fn swapper(
    a: PathBuf,
    b: PathBuf,
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                &a,
                rustix::fs::CWD,
                &b,
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .expect("renameat2(RENAME_EXCHANGE)");
            swaps.fetch_add(1, Ordering::Relaxed);
        }
    })
}

/// Rounds of ten calls per worker (four workers) while the swapper runs.
const ROUNDS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folder_swapped_for_an_outward_symlink_never_lets_a_tool_out() {
    let sb = Sandbox::new();
    let store = sb.store();
    std::fs::create_dir(store.join("sw")).unwrap();
    std::fs::write(store.join("sw/canary.txt"), "inside copy\n").unwrap();
    std::fs::write(store.join("sw/notes.md"), "inside notes\n").unwrap();
    std::os::unix::fs::symlink("../outside", store.join("sw_alt")).unwrap();
    let before = sb.outside_snapshot();

    let server = Arc::new(sb.serve().await);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    // `sw` (a real folder) and `sw_alt` (a symlink to `../outside`) trade places.
    let thread = swapper(
        store.join("sw"),
        store.join("sw_alt"),
        Arc::clone(&stop),
        Arc::clone(&swaps),
    );

    // Four clients' worth of concurrent calls, every tool that touches `sw/`.
    let mut tasks = Vec::new();
    for worker in 0..4 {
        let server = Arc::clone(&server);
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut refused) = (0u32, 0u32);
            for i in 0..ROUNDS {
                let name = format!("sw/w{worker}-{i}.md");
                let calls = [
                    ("memory_read", json!({"path": "sw/canary.txt"})),
                    ("memory_write", json!({"path": name, "content": "planted\n"})),
                    ("memory_edit", json!({"path": "sw/notes.md", "append_text": "more\n"})),
                    ("memory_edit", json!({"path": "sw/canary.txt", "old_str": "CANARY", "new_str": "x"})),
                    ("memory_list", json!({"path": "sw/"})),
                    ("memory_list", json!({"path": "/memories/", "depth": 2})),
                    ("memory_search", json!({"query": "canary"})),
                    ("memory_delete", json!({"path": name})),
                    ("memory_edit", json!({"path": "sw/notes.md", "new_path": format!("sw/moved{worker}-{i}.md")})),
                    ("memory_read", json!({"path": format!("sw/moved{worker}-{i}.md")})),
                ];
                for (tool, args) in calls {
                    let out = no_hang(tool, server.call(tool, args.clone())).await;
                    let all = format!("{} {}", out.text, out.structured);
                    assert!(
                        !all.contains("CANARY-7f3a"),
                        "{tool} {args} showed outside content: {all}"
                    );
                    assert!(
                        !all.contains(sb_marker()),
                        "{tool} {args} showed a host path: {all}"
                    );
                    if out.is_error {
                        refused += 1;
                    } else {
                        ok += 1;
                    }
                }
                // Put notes.md back for the next round, wherever the move left it.
                let _ = server
                    .call(
                        "memory_edit",
                        json!({"path": format!("sw/moved{worker}-{i}.md"), "new_path": "sw/notes.md"}),
                    )
                    .await;
            }
            (ok, refused)
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for t in tasks {
        let (o, r) = t.await.unwrap();
        ok += o;
        refused += r;
    }
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("{swaps} swaps; {ok} calls succeeded, {refused} were refused");

    assert_eq!(sb.outside_snapshot(), before, "the outside folder changed");
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("canary.txt")).unwrap(),
        CANARY
    );
    // The race was real: the swapper ran throughout and both outcomes happened.
    assert!(swaps > 1000, "only {swaps} swaps: the race did not run");
    assert!(ok > 0 && refused > 0, "ok {ok}, refused {refused}");
    Arc::try_unwrap(server).ok().unwrap().stop().await;
}

/// A call that takes this long has hung (the suite's calls take milliseconds).
const HANG: Duration = Duration::from_secs(30);

async fn no_hang<T>(what: &str, call: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG, call)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish in {HANG:?}"))
}

/// Regression: a search drained file-change events until the queue was empty and
/// re-watched a moved folder once per event, so while two folders were swapped in a loop
/// each search fell further behind (over 30 s per search here). A drain now reads a
/// bounded number of events, re-watches each folder once, and rescans past the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_while_folders_are_swapped_in_a_loop_does_not_livelock() {
    let sb = Sandbox::new();
    let store = sb.store();
    std::fs::create_dir_all(store.join("storm/a")).unwrap();
    std::fs::create_dir_all(store.join("storm/b")).unwrap();
    std::fs::write(store.join("storm/a/note.md"), "storm marker\n").unwrap();
    std::fs::write(store.join("storm/b/other.md"), "other marker\n").unwrap();
    std::fs::write(store.join("calm.md"), "calm marker\n").unwrap();
    let s = sb.serve().await;
    // The first search sets up the index and its watches.
    s.ok("memory_search", json!({"query": "marker"})).await;
    let stop = Arc::new(AtomicBool::new(false));
    let renames = Arc::new(AtomicU64::new(0));
    let thread = swapper(
        store.join("storm/a"),
        store.join("storm/b"),
        Arc::clone(&stop),
        Arc::clone(&renames),
    );
    // At least 20 searches, and on until the storm has really run (on a busy machine
    // the swapper may get little time while the searches are quick).
    let deadline = std::time::Instant::now() + HANG;
    let mut searches = 0;
    while searches < 20
        || (renames.load(Ordering::Relaxed) <= 1000 && std::time::Instant::now() < deadline)
    {
        let hits = no_hang(
            "memory_search",
            s.ok("memory_search", json!({"query": "calm"})),
        )
        .await;
        assert_eq!(hits["hits"][0]["path"], "/memories/calm.md", "{hits}");
        searches += 1;
    }
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    assert!(
        renames.load(Ordering::Relaxed) > 1000,
        "the storm did not run"
    );
    // Once the storm is over, the note is found where the last swap left it.
    let at = if store.join("storm/a/note.md").exists() {
        "/memories/storm/a/note.md"
    } else {
        "/memories/storm/b/note.md"
    };
    let hits = s.ok("memory_search", json!({"query": "storm"})).await;
    assert_eq!(hits["hits"][0]["path"], at, "{hits}");
    assert_eq!(hits["total_hits"], 1, "{hits}");
    s.stop().await;
}

/// Host paths must never appear in results; every sandbox lives under the temp folder.
fn sb_marker() -> &'static str {
    static MARKER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARKER.get_or_init(|| std::env::temp_dir().to_string_lossy().into_owned())
}

// ---- disk full --------------------------------------------------------------------------

/// Starts a server whose files may not grow beyond `limit` bytes (`RLIMIT_FSIZE`): the
/// kernel answers a write past it with `EFBIG`, as a full disk answers `ENOSPC`. The
/// server must survive it: SIGXFSZ is not ignored here, memdir ignores it itself.
async fn start_with_file_limit(root: &str, extra: &[&str], limit: u64) -> Server {
    let mut args = vec!["--root", root];
    args.extend_from_slice(extra);
    Server::start_with(&args, &[], move |c| {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            c.pre_exec(move || {
                let lim = rustix::process::Rlimit {
                    current: Some(limit),
                    maximum: Some(limit),
                };
                rustix::process::setrlimit(rustix::process::Resource::Fsize, lim)
                    .map_err(std::io::Error::from)
            });
        }
    })
    .await
}

async fn disk_full_case(extra: &[&str]) {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let old = "old content\n".repeat(100);
    std::fs::write(sb.store().join("a.md"), &old).unwrap();
    let s = start_with_file_limit(&root, extra, 32 * 1024).await;

    let big = "new content that does not fit\n".repeat(2500); // 75 KB < the 100 KiB cap
    let error = s
        .err("memory_write", json!({"path": "a.md", "content": big}))
        .await;
    assert!(
        error.contains("size limit") && error.contains("nothing was changed"),
        "{extra:?}: unclear error: {error}"
    );
    assert!(!error.contains(&root), "host path in the error: {error}");
    let created = s
        .err("memory_write", json!({"path": "new/b.md", "content": big}))
        .await;
    assert!(created.contains("size limit"), "{created}");

    assert_eq!(
        std::fs::read_to_string(sb.store().join("a.md")).unwrap(),
        old
    );
    assert!(!sb.store().join("new/b.md").exists());
    assert_eq!(temp_files(&sb.store()), Vec::<std::path::PathBuf>::new());
    // Still serving, and small writes still go through.
    let r = s.ok("memory_read", json!({"path": "a.md"})).await;
    assert_eq!(r["content_sha256"], sha256_hex(old.as_bytes()));
    s.ok(
        "memory_write",
        json!({"path": "c.md", "content": "small\n"}),
    )
    .await;
    s.ok(
        "memory_edit",
        json!({"path": "a.md", "append_text": "tail\n"}),
    )
    .await;
    s.stop().await;

    // After a restart without the limit, history and files agree.
    let s = sb.serve().await;
    assert_eq!(temp_files(&sb.store()), Vec::<std::path::PathBuf>::new());
    check_history_matches_files(&s, &sb.store(), extra.contains(&"--no-history")).await;
    s.stop().await;
}

#[tokio::test]
async fn disk_full_during_a_write_is_a_clear_error_and_changes_nothing() {
    disk_full_case(&["--no-history"]).await;
}

#[tokio::test]
async fn disk_full_while_recording_history_is_a_clear_error_and_changes_nothing() {
    disk_full_case(&[]).await;
}

// ---- SIGKILL at each stage of a history append -------------------------------------------

/// Every version number appears once, and the newest version of each path describes the
/// file on disk (its sha256, or a deletion when the file is gone).
async fn check_history_matches_files(s: &Server, store: &Path, no_history: bool) {
    if no_history {
        return;
    }
    let mut versions: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"path": "/memories/", "limit": 100});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = s.ok("memory_history", args).await;
        versions.extend(page["versions"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => break,
        }
    }
    let numbers: Vec<u64> = versions
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    let unique: HashSet<u64> = numbers.iter().copied().collect();
    assert_eq!(
        unique.len(),
        numbers.len(),
        "duplicate versions: {numbers:?}"
    );
    let mut seen = HashSet::new();
    // Newest first: the first record of a path is its head.
    for v in &versions {
        let path = v["path"].as_str().unwrap().to_owned();
        if !seen.insert(path.clone()) {
            continue;
        }
        if let Some(from) = v["from"].as_str() {
            // Moved away: whatever the source's older versions say is no longer its head.
            let from = if from.starts_with('/') {
                from.to_owned()
            } else {
                format!("/memories/{from}")
            };
            seen.insert(from);
        }
        let rel = path.strip_prefix("/memories/").unwrap();
        let on_disk = std::fs::read(store.join(rel)).ok();
        match (v["operation"].as_str().unwrap(), on_disk) {
            ("deleted", None) => {}
            ("deleted", Some(_)) => panic!("{path}: history says deleted, the file exists"),
            (op, Some(bytes)) => assert_eq!(
                v["content_sha256"].as_str().unwrap(),
                sha256_hex(&bytes),
                "{path}: the newest version ({op}) is not the file"
            ),
            (op, None) => panic!("{path}: newest version is {op}, but the file is gone"),
        }
    }
}

/// Runs one mutation in a server paused at `stage`, kills it there, restarts, and checks
/// that the file is whole (old or new as `expect_new` says) and history agrees with it.
async fn kill_mutation_at(stage: &str, tool: &str, args: Value, expect_new: bool) {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    {
        let s = sb.serve().await;
        s.ok("memory_write", json!({"path": "a.md", "content": "one\n"}))
            .await;
        s.ok("memory_write", json!({"path": "a.md", "content": "two\n"}))
            .await;
        s.stop().await;
    }
    let mut s = Server::start(&["--root", &root], &[("MEMDIR_TEST_PAUSE", stage)]).await;
    s.kill_paused_call(tool, args.clone(), stage).await;

    let a = std::fs::read_to_string(sb.store().join("a.md")).ok();
    let moved = std::fs::read_to_string(sb.store().join("b.md")).ok();
    let state = (a.as_deref(), moved.as_deref());
    let (old_state, new_state) = match tool {
        "memory_delete" => ((Some("two\n"), None), (None, None)),
        "memory_edit" if args.get("new_path").is_some() => {
            ((Some("two\n"), None), (None, Some("two\n")))
        }
        _ => ((Some("two\n"), None), (Some("three\n"), None)),
    };
    let expected = if expect_new { new_state } else { old_state };
    assert_eq!(state, expected, "{stage} {tool}: files after the kill");

    let s = sb.serve().await;
    check_history_matches_files(&s, &sb.store(), false).await;
    // A second restart changes nothing more: repair ran once.
    let first = s.ok("memory_history", json!({"path": "/memories/"})).await;
    s.stop().await;
    let s = sb.serve().await;
    let second = s.ok("memory_history", json!({"path": "/memories/"})).await;
    assert_eq!(
        first, second,
        "{stage} {tool}: a second restart changed history"
    );
    // The next mutation is recorded after the repaired ones.
    s.ok(
        "memory_write",
        json!({"path": "z.md", "content": "after\n"}),
    )
    .await;
    check_history_matches_files(&s, &sb.store(), false).await;
    assert!(
        temp_files(&sb.store()).is_empty(),
        "{stage}: temp files left"
    );
    s.stop().await;
}

fn modify() -> Value {
    json!({"path": "a.md", "content": "three\n"})
}

#[tokio::test]
async fn sigkill_after_the_history_intent_keeps_the_old_version() {
    kill_mutation_at("history-intent", "memory_write", modify(), false).await;
}

#[tokio::test]
async fn sigkill_after_the_rename_records_the_new_version_on_restart() {
    kill_mutation_at("after-rename", "memory_write", modify(), true).await;
}

#[tokio::test]
async fn sigkill_after_the_history_append_records_the_version_once() {
    kill_mutation_at("history-appended", "memory_write", modify(), true).await;
}

#[tokio::test]
async fn sigkill_after_a_delete_intent_keeps_the_memory() {
    kill_mutation_at(
        "history-intent",
        "memory_delete",
        json!({"path": "a.md"}),
        false,
    )
    .await;
}

#[tokio::test]
async fn sigkill_after_a_delete_append_records_the_deletion_once() {
    kill_mutation_at(
        "history-appended",
        "memory_delete",
        json!({"path": "a.md"}),
        true,
    )
    .await;
}

#[tokio::test]
async fn sigkill_after_a_rename_append_records_the_move_once() {
    kill_mutation_at(
        "history-appended",
        "memory_edit",
        json!({"path": "a.md", "new_path": "b.md"}),
        true,
    )
    .await;
}

/// Power loss in the middle of an append leaves a torn last line; the next lock holder
/// cuts it and numbering goes on from the last whole record.
#[tokio::test]
async fn a_torn_history_line_is_cut_at_the_next_start() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok("memory_write", json!({"path": "a.md", "content": "one\n"}))
        .await;
    s.stop().await;
    let log = sb.store().join(".memdir/history/log.jsonl");
    let whole = std::fs::read(&log).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(br#"{"version":2,"op":"modified","path":"a.md","at":"#);
    std::fs::write(&log, &torn).unwrap();

    let s = sb.serve().await;
    s.ok("memory_write", json!({"path": "a.md", "content": "two\n"}))
        .await;
    let h = s.ok("memory_history", json!({"path": "a.md"})).await;
    let versions: Vec<u64> = h["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, vec![2, 1]);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "malformed log lines remain:\n{text}"
    );
    check_history_matches_files(&s, &sb.store(), false).await;
    s.stop().await;
}

// ---- replaced files are released ----------------------------------------------------------

/// Descriptors the process holds on files whose last name is gone.
fn deleted_files_held(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("list the server's descriptors")
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.ends_with(" (deleted)"))
        .collect()
}

#[tokio::test]
async fn every_replaced_or_deleted_file_is_released() {
    // A replace (or delete) keeps a handle on the old file across its rename (or unlink)
    // and closes it on a helper thread: those handles must all be closed, or a long
    // session would run out of descriptors and keep the disk space of every old version.
    let sb = Sandbox::new();
    let s = sb.serve().await;
    const N: usize = 300;
    for i in 0..N {
        s.ok(
            "memory_write",
            json!({"path": "often.md", "content": format!("revision {i}\n")}),
        )
        .await;
        if i % 3 == 0 {
            s.ok(
                "memory_edit",
                json!({"path": "often.md", "append_text": format!("edit {i}\n")}),
            )
            .await;
        }
    }
    for i in 0..20 {
        s.ok(
            "memory_write",
            json!({"path": format!("gone/{i}.md"), "content": "soon deleted\n"}),
        )
        .await;
    }
    s.ok("memory_delete", json!({"path": "gone/0.md"})).await;
    s.ok("memory_delete", json!({"path": "gone"})).await;
    // Freed on a helper thread, which says nothing when done: the condition polled is the
    // server's open descriptors in /proc naming no deleted file.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut held = deleted_files_held(s.pid);
    while !held.is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        held = deleted_files_held(s.pid);
    }
    assert!(
        held.is_empty(),
        "{} replaced or deleted files still held: {:?}",
        held.len(),
        &held[..held.len().min(5)]
    );
    let read = s.ok("memory_read", json!({"path": "often.md"})).await;
    assert_eq!(read["content"], json!(format!("revision {}\n", N - 1)));
    s.stop().await;
}

// ---- hostile frontmatter -----------------------------------------------------------------

/// Frontmatter that the YAML loader cannot be given: aliases that would expand 500 bytes
/// into 9^9 copies of a list ("billion laughs"), and 6,000 levels of nesting (12 KB) that
/// its recursion would overflow a thread's stack with. The server runs with its heap
/// limited to 512 MiB (`RLIMIT_DATA`), so an expansion fails fast instead of taking the
/// machine's memory. Both files are content: listed and found without a description, in
/// this server and in one started afterwards on the same store (its start-up indexing
/// reads them too).
#[tokio::test]
async fn hostile_frontmatter_is_content() {
    let mut bomb = String::from("---\ndescription: boom\na0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    bomb.push_str("---\nthe body of the bomb\n");
    let deep = format!(
        "---\ndescription: deep\nx:\n  {}a\n---\nthe body of the deep one\n",
        "- ".repeat(6000)
    );
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let s = start_with_heap_limit(&root).await;
    s.ok("memory_write", json!({"path": "bomb.md", "content": bomb}))
        .await;
    s.ok("memory_write", json!({"path": "deep.md", "content": deep}))
        .await;
    as_content(&s).await;
    let restarted = start_with_heap_limit(&root).await;
    as_content(&restarted).await;
    restarted.stop().await;
    s.stop().await;
}

/// `memdir --root ROOT` with its heap limited to 512 MiB (`RLIMIT_DATA`).
async fn start_with_heap_limit(root: &str) -> Server {
    Server::start_with(&["--root", root], &[], |c| {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            c.pre_exec(|| {
                let lim = rustix::process::Rlimit {
                    current: Some(512 << 20),
                    maximum: Some(512 << 20),
                };
                rustix::process::setrlimit(rustix::process::Resource::Data, lim)
                    .map_err(std::io::Error::from)
            });
        }
    })
    .await
}

/// `bomb.md` and `deep.md` of `hostile_frontmatter_is_content` are listed, found and read,
/// without a description.
async fn as_content(s: &Server) {
    let listed = s.ok("memory_list", json!({})).await;
    let entries = listed["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{listed}");
    assert!(
        entries.iter().all(|e| e.get("description").is_none()),
        "{listed}"
    );
    s.ok("memory_list", json!({"depth": 1})).await;
    for (query, path) in [
        ("body bomb", "/memories/bomb.md"),
        ("deep one", "/memories/deep.md"),
    ] {
        let found = s.ok("memory_search", json!({"query": query})).await;
        assert_eq!(found["hits"][0]["path"], path, "{found}");
        assert!(found["hits"][0].get("description").is_none(), "{found}");
    }
    s.ok("memory_read", json!({"path": "deep.md"})).await;
}
