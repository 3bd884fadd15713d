//! Crash safety: a server killed with SIGKILL at any stage of a write leaves exactly the
//! old or the new content, no temp files after the next start, and a lock others can take.

mod common;

use std::time::Duration;

use common::{Sandbox, Server, temp_files};
use serde_json::json;

fn content(fill: char, bytes: usize) -> String {
    let line: String = std::iter::repeat_n(fill, 99)
        .chain(std::iter::once('\n'))
        .collect();
    line.repeat(bytes / 100)
}

/// Kills the server while it is paused at `stage` in the middle of replacing a memory.
async fn kill_at(stage: &str, expect_new: bool) {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let old = content('o', 90_000);
    let new = content('n', 90_000);
    std::fs::write(sb.store().join("big.md"), &old).unwrap();

    let mut s = Server::start(&["--root", &root], &[("MEMDIR_TEST_PAUSE", stage)]).await;
    s.kill_paused_call(
        "memory_write",
        json!({"path": "big.md", "content": new}),
        stage,
    )
    .await;

    let on_disk = std::fs::read_to_string(sb.store().join("big.md")).unwrap();
    let expected = if expect_new { &new } else { &old };
    assert!(
        on_disk == *expected,
        "{stage}: the file is neither whole old nor whole new ({} bytes)",
        on_disk.len()
    );

    let restarted = Server::start(&["--root", &root], &[]).await;
    assert_eq!(
        temp_files(&sb.store()),
        Vec::<std::path::PathBuf>::new(),
        "{stage}: temp files left after restart"
    );
    let r = restarted.ok("memory_read", json!({"path": "big.md"})).await;
    assert_eq!(
        r["content_sha256"],
        common::sha256_hex(expected.as_bytes()),
        "{stage}"
    );
    // The dead writer's lock is gone: a mutation goes through.
    restarted
        .ok(
            "memory_write",
            json!({"path": "big.md", "content": "after"}),
        )
        .await;
    restarted.stop().await;
}

#[tokio::test]
async fn sigkill_after_temp_write_keeps_old_content() {
    kill_at("after-temp-write", false).await;
}

#[tokio::test]
async fn sigkill_after_fsync_keeps_old_content() {
    kill_at("after-fsync", false).await;
}

#[tokio::test]
async fn sigkill_after_rename_has_new_content() {
    kill_at("after-rename", true).await;
}

/// A server on `root` that holds the store lock, paused right after taking it for a
/// `memory_write` of `path` (the call runs in the background until the server dies).
async fn hold_the_lock(root: &str, path: &str) -> (Server, tokio::task::JoinHandle<()>) {
    let mut holder = Server::start(&["--root", root], &[("MEMDIR_TEST_PAUSE", "locked")]).await;
    let peer = holder.client.peer().clone();
    let args = json!({"path": path, "content": "x"});
    let call = tokio::spawn(async move {
        let _ = peer
            .call_tool(
                rmcp::model::CallToolRequestParams::new("memory_write")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await;
    });
    holder.wait_for_stderr("test pause at locked").await;
    (holder, call)
}

#[tokio::test]
async fn sigkill_while_holding_the_lock_does_not_block_others() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let (holder, call) = hold_the_lock(&root, "a.md").await;
    let other = Server::start(&["--root", &root], &[]).await;
    holder.kill9();
    let _ = tokio::time::timeout(Duration::from_secs(5), call).await;
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        other.ok("memory_write", json!({"path": "b.md", "content": "y"})),
    )
    .await;
    assert!(done.is_ok(), "a dead lock holder blocked another process");
    other.stop().await;
}

/// The state folder removed by hand while a process waits for the lock: once the holder
/// goes, the waiter must not go on with the lock of the removed file (anyone opening
/// `.memdir/lock` anew would get a second, free lock); it locks the folder made anew.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_writer_waiting_when_the_state_folder_goes_locks_the_folder_made_anew() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    std::fs::write(
        sb.store().join("a.md"),
        "---\nname: a\ndescription: the first memory\n---\nx\n",
    )
    .unwrap();
    let (holder, _call) = hold_the_lock(&root, "b.md").await;

    // `memdir index` writes MEMORY.md under the lock: it waits for the holder.
    let mut waiter = std::process::Command::new(common::BIN)
        .args(["--root", &root, "index"])
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The kernel lists a process blocked in flock with `->` before its pid.
    let pid = waiter.id().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let locks = std::fs::read_to_string("/proc/locks").unwrap();
        let waiting = locks.lines().any(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.get(1) == Some(&"->") && fields.contains(&pid.as_str())
        });
        if waiting {
            break;
        }
        if let Some(status) = waiter.try_wait().unwrap() {
            panic!("`memdir index` ended without waiting for the lock: {status}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "`memdir index` never waited for the lock"
        );
        std::thread::yield_now();
    }

    remove_by_hand(&sb.store().join(".memdir"));
    holder.kill9();
    let out = waiter.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sb.store().join("MEMORY.md").exists());
    assert!(
        sb.store().join(".memdir/lock").exists(),
        "the waiter went on with the lock of the removed folder"
    );
}

/// memdir's own state (the lock file, the history log, its folder, the temp folder) that
/// is a symbolic link, to a memory or a memory folder, is refused, not followed: through
/// it, the lock's intent or the history would be written into memories. Mutations say
/// which path is in the way and change nothing; once it is removed, they go on.
#[cfg(unix)]
#[tokio::test]
async fn state_that_is_a_link_is_refused_not_followed() {
    for (link, target) in [
        (".memdir/lock", "../x.md"),
        (".memdir/history/log.jsonl", "../../x.md"),
        (".memdir/history", "../sub"),
        (".memdir/tmp", "../sub"),
    ] {
        let sb = Sandbox::new();
        std::fs::write(sb.store().join("x.md"), "kept\n").unwrap();
        std::fs::create_dir_all(sb.store().join("sub")).unwrap();
        std::fs::create_dir_all(sb.store().join(".memdir/history")).unwrap();
        let at = sb.store().join(link);
        let _ = std::fs::remove_dir(&at);
        std::os::unix::fs::symlink(target, &at).unwrap();
        let s = sb.serve().await;
        let e = s
            .err("memory_write", json!({"path": "b.md", "content": "b\n"}))
            .await;
        assert!(
            e.contains(&format!("/memories/{link}")) && e.contains("symbolic link"),
            "{link}: {e}"
        );
        assert!(!sb.store().join("b.md").exists(), "{link}");
        let unchanged = |why: &str| {
            assert_eq!(
                std::fs::read_to_string(sb.store().join("x.md")).unwrap(),
                "kept\n",
                "{link}: {why}"
            );
            assert_eq!(
                std::fs::read_dir(sb.store().join("sub")).unwrap().count(),
                0,
                "{link}: {why}"
            );
        };
        unchanged("refused");
        s.ok("memory_read", json!({"path": "x.md"})).await;
        std::fs::remove_file(&at).unwrap();
        s.ok("memory_write", json!({"path": "b.md", "content": "b\n"}))
            .await;
        unchanged("after the link was removed");
        s.stop().await;
    }
}

/// Kills the server at moments spread over a large write (and past its end); whatever
/// the moment, the file is whole, and an acknowledged write is never lost.
#[tokio::test]
async fn sigkill_at_many_moments_during_large_writes() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let size = 8 * 1024 * 1024;
    let versions: Vec<String> = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']
        .iter()
        .map(|&c| content(c, size))
        .collect();
    std::fs::write(sb.store().join("large.md"), &versions[0]).unwrap();
    let args = [
        "--root",
        root.as_str(),
        "--max-file-bytes",
        "16777216",
        "--allow-secrets",
    ];
    // Calibrate: how long one whole write takes here, so kill moments fall before, during
    // and after the write.
    let calibrate = Server::start(&args, &[]).await;
    let started = std::time::Instant::now();
    calibrate
        .ok(
            "memory_write",
            json!({"path": "calibrate.md", "content": versions[0]}),
        )
        .await;
    let whole = started.elapsed();
    calibrate.stop().await;
    // Kill points spread over the write and past its end, as fractions of its duration.
    let fractions = [0.02, 0.25, 0.5, 0.75, 0.9, 1.0, 1.2, 1.6, 2.5];
    for (round, fraction) in (1..versions.len()).zip(fractions) {
        let delay = whole.mul_f64(fraction);
        let s = Server::start(&args, &[]).await;
        let peer = s.client.peer().clone();
        let args = json!({"path": "large.md", "content": versions[round]});
        let call = tokio::spawn(async move {
            peer.call_tool(
                rmcp::model::CallToolRequestParams::new("memory_write")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
        });
        // The kill moment itself is what is tested: a point in time during the write.
        tokio::time::sleep(delay).await;
        s.kill9();
        let acknowledged = matches!(
            tokio::time::timeout(Duration::from_secs(5), call).await,
            Ok(Ok(Ok(ref r))) if r.is_error != Some(true)
        );
        let on_disk = std::fs::read_to_string(sb.store().join("large.md")).unwrap();
        let which = versions.iter().position(|v| *v == on_disk);
        assert!(
            which.is_some(),
            "round {round}: torn file of {} bytes",
            on_disk.len()
        );
        if acknowledged {
            assert_eq!(
                which,
                Some(round),
                "round {round}: an acknowledged write was lost"
            );
        }
        eprintln!(
            "round {round}: killed after {delay:?}, file holds version {which:?}, acknowledged {acknowledged}"
        );
        if which == Some(round) {
            continue;
        }
        // Keep the versions in step: the next round replaces whatever is there.
        std::fs::write(sb.store().join("large.md"), &versions[round]).unwrap();
    }
    let s = Server::start(&["--root", &root], &[]).await;
    assert!(
        temp_files(&sb.store()).is_empty(),
        "temp files left after restart"
    );
    s.stop().await;
}

/// A writer killed mid-write while another server keeps running: the running server's
/// next mutation removes the dead writer's temp file (not only a restart does), with
/// history on (the dead writer's intent says so) and off (every acquisition sweeps).
async fn survivor_sweeps(extra: &[&str]) {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let mut args = vec!["--root", root.as_str()];
    args.extend_from_slice(extra);
    let survivor = Server::start(&args, &[]).await;
    // The survivor has taken the lock before (its first sweep is behind it).
    survivor
        .ok("memory_write", json!({"path": "a.md", "content": "a\n"}))
        .await;

    let mut dying = Server::start(&args, &[("MEMDIR_TEST_PAUSE", "after-temp-write")]).await;
    dying
        .kill_paused_call(
            "memory_write",
            json!({"path": "b.md", "content": content('n', 5_000)}),
            "after-temp-write",
        )
        .await;
    assert_eq!(
        temp_files(&sb.store()).len(),
        1,
        "{extra:?}: the killed writer should have left its temp file"
    );
    assert!(!sb.store().join("b.md").exists());

    survivor
        .ok("memory_write", json!({"path": "c.md", "content": "c\n"}))
        .await;
    assert_eq!(
        temp_files(&sb.store()),
        Vec::<std::path::PathBuf>::new(),
        "{extra:?}: the survivor's next write left the dead writer's temp file"
    );
    if extra.is_empty() {
        // The dead writer's intended version was not recorded: its file never appeared.
        let h = survivor
            .ok("memory_history", json!({"path": "/memories/"}))
            .await;
        assert!(!h.to_string().contains("b.md"), "{h}");
    }
    survivor.stop().await;
}

#[tokio::test]
async fn a_running_server_sweeps_a_dead_writers_temp_file() {
    survivor_sweeps(&[]).await;
}

#[tokio::test]
async fn a_running_server_sweeps_a_dead_writers_temp_file_without_history() {
    survivor_sweeps(&["--no-history"]).await;
}

/// Someone removes the whole state folder (lock, temp folder, history) while a server
/// runs: the next mutations make what they need again and history goes on.
#[tokio::test]
async fn the_state_folder_removed_by_hand_is_made_again() {
    let sb = Sandbox::new();
    let s = sb.serve().await;
    s.ok("memory_write", json!({"path": "a.md", "content": "a\n"}))
        .await;
    remove_by_hand(&sb.store().join(".memdir"));
    s.ok("memory_write", json!({"path": "b.md", "content": "b\n"}))
        .await;
    s.ok(
        "memory_edit",
        json!({"path": "b.md", "append_text": "more\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.store().join("b.md")).unwrap(),
        "b\nmore\n"
    );
    let h = s
        .ok("memory_history", json!({"path": "/memories/b.md"}))
        .await;
    let versions = h["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{h}");
    assert_eq!(versions[0]["operation"], "modified", "{h}");
    assert_eq!(
        versions[0]["content_sha256"],
        common::sha256_hex(b"b\nmore\n"),
        "{h}"
    );
    assert_eq!(versions[1]["operation"], "created", "{h}");
    s.stop().await;
}

/// `rm -rf DIR` while a server runs: its upkeep (history, the lock) may create a file
/// between the listing and the removal of a folder, as it may for a person, so try again
/// until the folder is gone.
fn remove_by_hand(dir: &std::path::Path) {
    for _ in 0..1000 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
            Err(e) => panic!("removing {}: {e}", dir.display()),
        }
    }
    panic!("{} kept coming back", dir.display());
}
