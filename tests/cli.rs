//! The command line for people: list, read, search, history, restore, redact, check.

mod common;

use std::process::Command;

use common::Sandbox;

/// `memdir --root <store> ARGS`, with the sandbox as home and cache folder.
fn memdir(sb: &Sandbox, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(common::BIN)
        .args(["--root", sb.store().to_str().unwrap()])
        .args(args)
        .env_clear()
        .env("HOME", sb.tmp.path())
        .env("XDG_CACHE_HOME", sb.tmp.path().join("cache"))
        .output()
        .unwrap();
    let err = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        if out.status.success() {
            String::new()
        } else {
            format!(" [{}]", out.status)
        }
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        err,
    )
}

#[test]
fn subcommands_work_end_to_end() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store().join("notes")).unwrap();
    std::fs::write(sb.store().join("notes/a.md"), "alpha line\nbeta line\n").unwrap();

    let (ok, out, _) = memdir(&sb, &["list"]);
    assert!(ok && out.contains("/memories/notes/a.md"), "{out}");
    let (ok, out, _) = memdir(&sb, &["read", "/memories/notes/a.md"]);
    assert!(ok && out.contains("     2\tbeta line"), "{out}");
    let (ok, out, _) = memdir(&sb, &["search", "beta"]);
    assert!(ok && out.contains("/memories/notes/a.md"), "{out}");

    // Looking at a file's history records the state it was found in (version 1).
    let (ok, out, err) = memdir(&sb, &["history", "notes/a.md"]);
    assert!(ok && out.contains("by external"), "{out}{err}");
    let (ok, _, err) = memdir(&sb, &["restore", "notes/b.md", "--version", "9"]);
    assert!(!ok && err.contains("no version 9"), "{err}");
    // Version 1 is of notes/a.md: putting it at another path takes --force.
    let (ok, out, err) = memdir(&sb, &["restore", "notes/b.md", "--version", "1"]);
    assert!(
        !ok && err.contains("version 1 is of /memories/notes/a.md, not /memories/notes/b.md")
            && err.contains("--force"),
        "{out}{err}"
    );
    assert!(!sb.store().join("notes/b.md").exists());
    let (ok, out, err) = memdir(&sb, &["restore", "notes/b.md", "--version", "1", "--force"]);
    assert!(ok && out.contains("now version 2"), "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(sb.store().join("notes/b.md")).unwrap(),
        "alpha line\nbeta line\n"
    );
}

#[test]
fn history_restore_and_redact() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("a.md"), "first\n").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = sb.serve().await;
        s.ok(
            "memory_write",
            serde_json::json!({"path": "a.md", "content": "second\n"}),
        )
        .await;
        s.stop().await;
    });
    let (ok, out, _) = memdir(&sb, &["history", "/memories/a.md", "--json"]);
    assert!(ok);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[1]["actor"], "external");
    let (ok, out, _) = memdir(&sb, &["history", "/memories", "--version", "1"]);
    assert!(ok && out == "first\n", "{out}");
    let (ok, out, _) = memdir(&sb, &["restore", "a.md", "--version", "1"]);
    assert!(ok && out.contains("now version 3"), "{out}");
    assert_eq!(
        std::fs::read_to_string(sb.store().join("a.md")).unwrap(),
        "first\n"
    );
    let (ok, out, _) = memdir(&sb, &["history", "a.md", "--json"]);
    assert!(
        ok && out.lines().next().unwrap().contains("\"actor\":\"cli\""),
        "{out}"
    );
    let (ok, out, _) = memdir(&sb, &["redact", "--version", "2", "memories"]);
    assert!(ok && out.contains("redacted version 2"), "{out}");
    let (ok, _, err) = memdir(&sb, &["redact", "--version", "2", "nosuch"]);
    assert!(!ok && err.contains("no store named"), "{err}");
    // Restoring what the memory holds already changes nothing, and says so.
    let (ok, out, err) = memdir(&sb, &["restore", "a.md", "--version", "1"]);
    assert!(
        ok && out.contains("already holds version 1's content: nothing changed"),
        "{out}{err}"
    );
    // A rename shows where it came from, as --json does.
    rt.block_on(async {
        let s = sb.serve().await;
        s.ok(
            "memory_edit",
            serde_json::json!({"path": "a.md", "new_path": "b.md"}),
        )
        .await;
        s.stop().await;
    });
    let (ok, out, _) = memdir(&sb, &["history", "b.md"]);
    assert!(
        ok && out.contains("renamed   /memories/b.md from /memories/a.md"),
        "{out}"
    );
}

/// The version a live memory holds now is not redacted from the history alone: the file
/// still holds it, and the next read would record it again as an outside change.
#[test]
fn redacting_what_a_memory_holds_now_asks_to_change_it_first() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("a.md"), "password hunter2\n").unwrap();
    let (ok, _, err) = memdir(&sb, &["history", "a.md"]);
    assert!(ok, "{err}");
    let log = || std::fs::read_to_string(sb.store().join(".memdir/history/log.jsonl")).unwrap();
    let before = log();
    let (ok, _, err) = memdir(&sb, &["redact", "--version", "1"]);
    assert!(
        !ok && err.contains("change or delete that memory first"),
        "{err}"
    );
    assert_eq!(log(), before, "a refused redaction changed the history");
    // Once the memory holds something else, the version is redacted, and stays so.
    std::fs::write(sb.store().join("a.md"), "rotated\n").unwrap();
    let (ok, _, err) = memdir(&sb, &["history", "a.md"]);
    assert!(ok, "{err}");
    let (ok, out, err) = memdir(&sb, &["redact", "--version", "1"]);
    assert!(ok && out.contains("redacted version 1"), "{out}{err}");
    let (ok, _, _) = memdir(&sb, &["history", "a.md"]);
    assert!(ok);
    assert!(!log().contains("hunter2"), "{}", log());
}

/// A reader that stops early (`memdir list | head -1`) ends the listing quietly: no
/// panic, the status a shell gives a process ended by SIGPIPE.
#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    let sb = Sandbox::new();
    for i in 0..5_000 {
        std::fs::write(sb.store().join(format!("m{i:04}.md")), "x\n").unwrap();
    }
    let mut child = Command::new(common::BIN)
        .args(["--root", sb.store().to_str().unwrap(), "list"])
        .env_clear()
        .env("HOME", sb.tmp.path())
        .env("XDG_CACHE_HOME", sb.tmp.path().join("cache"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("m0000.md"), "{first}");
    // The reader is gone (its end of the pipe dropped with the reader above).
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}

#[test]
fn bad_options_fail_with_a_message() {
    for args in [
        vec!["--store", "bad name=/tmp/x"],
        vec!["--store", "x"],
        vec!["--store", "x", "list"],
        vec!["--tools", "all", "list"],
        vec!["list", "--max-file-bytes", "9"],
        vec!["read", "a.md", "--lines", "3:2"],
        vec!["read", "a.md", "--lines", "0:2"],
        vec!["read", "a.md", "--lines", "x"],
        vec!["--root", "/tmp", "cache", "prune"],
        vec!["--root", "/tmp", "list", "--root", "/tmp"],
    ] {
        let out = Command::new(common::BIN)
            .args(&args)
            .env_clear()
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "nothing on stdout: {args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    // A subcommand's own option given before its name: the message says where it goes,
    // and one the subcommand does not take is the server's.
    for (args, says) in [
        (
            vec!["--index-dir", "/tmp/i", "check"],
            "`memdir check` takes --index-dir after its name",
        ),
        (
            vec!["--tools", "all", "list"],
            "--tools is an option of the server, not of `memdir list`",
        ),
    ] {
        let out = Command::new(common::BIN)
            .args(&args)
            .env_clear()
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

/// Regression: `--store 'team=postgresq://memdir:SECRET@/memdir' list` printed the whole
/// URL, password included, in its error. Every store URL memdir refuses is shown without
/// its password, from the flag or `MEMDIR_STORES`, for every command that opens stores.
#[test]
fn a_refused_store_url_never_prints_its_password() {
    const SECRET: &str = "SECRETpw";
    // A URL with its `//` missing is refused, not taken for a folder named after it.
    for url in [
        format!("postgresql:/memdir:{SECRET}@127.0.0.1/memdir"),
        format!("Postgres:memdir:{SECRET}@db.example/memdir"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(common::BIN)
            .args(["--store", &format!("team={url}"), "list"])
            .current_dir(dir.path())
            .env_clear()
            .env("HOME", dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url}: {err}");
        assert!(
            err.contains("without its `//`") && err.contains("team"),
            "{err}"
        );
        assert!(!err.contains(SECRET), "{err}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "a folder was made"
        );
    }
    let urls = [
        format!("postgresq://memdir:{SECRET}@/memdir"),
        format!("postgresql+asyncpg://memdir:{SECRET}@db.example:5432/memdir"),
        format!("pgsql://memdir:{SECRET}@/memdir?host=/run/postgresql"),
        format!("mysql://memdir:{SECRET}@db.example/memdir"),
        format!("pgsql://memdir:pa/ss?w@rd{SECRET}@db.example/memdir"),
        format!("pgsql://memdir@/memdir?password={SECRET}&host=/run/postgresql"),
    ];
    let home = tempfile::tempdir().unwrap();
    for url in &urls {
        for spec in [
            format!("team={url}"),
            format!("team={url}:ro"),
            // No `NAME=`: refused before the URL is looked at.
            format!("team:{url}"),
        ] {
            let by_flag = |command: &[&str]| {
                let mut args: Vec<String> = vec!["--store".into(), spec.clone()];
                args.extend(command.iter().map(|a| a.to_string()));
                (args, None)
            };
            let by_env = |command: &[&str]| {
                let args: Vec<String> = command.iter().map(|a| a.to_string()).collect();
                (args, Some(spec.clone()))
            };
            let runs = [
                by_flag(&["list"]),
                by_flag(&["serve"]),
                by_flag(&[]),
                by_flag(&["serve", "--http", "127.0.0.1:0"]),
                by_env(&["list"]),
                by_env(&["serve"]),
                by_env(&[]),
            ];
            for (args, env) in runs {
                let mut cmd = Command::new(common::BIN);
                cmd.args(&args)
                    .env_clear()
                    .env("HOME", home.path())
                    .env("RUST_LOG", "debug")
                    .stdin(std::process::Stdio::null());
                if let Some(stores) = &env {
                    cmd.env("MEMDIR_STORES", stores);
                }
                let out = cmd.output().unwrap();
                let (stdout, stderr) = (
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                );
                let what = format!("{args:?} MEMDIR_STORES={env:?}");
                assert!(!out.status.success(), "{what} succeeded: {stderr}");
                assert!(!stderr.is_empty(), "{what}: no error");
                assert!(
                    !stdout.contains(SECRET) && !stderr.contains(SECRET),
                    "{what} prints the password:\n{stdout}{stderr}"
                );
                assert!(
                    stderr.contains("team"),
                    "{what}: the error names the store it refuses: {stderr}"
                );
            }
        }
    }
}

#[test]
fn check_passes_a_sound_store_and_names_every_problem_of_a_damaged_one() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store().join("notes")).unwrap();
    std::fs::write(sb.store().join("notes/a.md"), "alpha\n").unwrap();
    // Restoring records versions: a history log with content.
    let (ok, _, err) = memdir(&sb, &["history", "notes/a.md"]);
    assert!(ok, "{err}");
    let (ok, _, err) = memdir(&sb, &["restore", "notes/b.md", "--version", "1", "--force"]);
    assert!(ok, "{err}");
    let (ok, out, err) = memdir(&sb, &["check"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.starts_with("/memories: 2 file(s), 2 version(s): OK"),
        "{out}"
    );

    // Damage: a FIFO, a hard link, a symlink out, a name no path can spell, a temp file of
    // an interrupted write, a line of the log that is not a record, a changed file.
    let st = sb.store();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        st.join("pipe.md").as_path(),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    std::fs::hard_link(sb.outside().join("canary.txt"), st.join("hard.md")).unwrap();
    std::os::unix::fs::symlink(sb.outside().join("canary.txt"), st.join("out.md")).unwrap();
    std::fs::write(st.join("bad\nname.md"), "x").unwrap();
    // A name that is not UTF-8 (Latin-1 `é`), which a walk cannot even name.
    let latin1 = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"caf\xe9.md");
    std::fs::write(st.join("notes").join(latin1), "x").unwrap();
    std::fs::write(st.join("big.md"), "x".repeat(200_000)).unwrap();
    std::fs::create_dir_all(st.join(".memdir/tmp")).unwrap();
    std::fs::write(st.join(".memdir/tmp/.memdir-tmp-1-1"), "half a write").unwrap();
    let log = st.join(".memdir/history/log.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{not a record\n");
    std::fs::write(&log, bytes).unwrap();
    std::fs::write(st.join("notes/a.md"), "edited in an editor\n").unwrap();

    let (ok, out, err) = memdir(&sb, &["check"]);
    assert!(
        !ok && err.contains("problems found in 1 store"),
        "{out}{err}"
    );
    for part in [
        "6 problem(s)",
        "symlinks leading out of the store",
        "/memories/out.md",
        "more than one hard link",
        "/memories/hard.md",
        "FIFOs",
        "/memories/pipe.md",
        "names no path can spell",
        "/memories/bad\\nname.md",
        "/memories/notes/caf\u{fffd}.md",
        "over the size limit",
        "/memories/big.md",
        "are not records (lines 3)",
        "note: removed 1 temp file(s)",
        "changed or created outside memdir",
        "/memories/notes/a.md",
    ] {
        assert!(out.contains(part), "{part:?} in {out}");
    }
    assert!(!st.join(".memdir/tmp/.memdir-tmp-1-1").exists());
    let (ok, out, _) = memdir(&sb, &["check", "--json"]);
    assert!(!ok);
    let report: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["problems"].as_array().unwrap().len(), 6, "{report}");
    // The canary behind the hard link is untouched.
    assert_eq!(
        std::fs::read_to_string(sb.outside().join("canary.txt")).unwrap(),
        common::CANARY
    );
}

/// A read-only store is never changed, so `check` cannot remove the temp files of an
/// interrupted write: it says they are there, and leaves them.
#[test]
fn check_of_a_read_only_store_reports_the_temp_files_it_leaves() {
    let sb = Sandbox::new();
    let st = sb.store();
    std::fs::write(st.join("a.md"), "alpha\n").unwrap();
    std::fs::create_dir_all(st.join(".memdir/tmp")).unwrap();
    std::fs::write(st.join(".memdir/tmp/.memdir-tmp-1-1"), "half a write").unwrap();
    let out = Command::new(common::BIN)
        .args(["--store", &format!("m={}:ro", st.display()), "check"])
        .env("HOME", sb.tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 temp file(s) in `.memdir/tmp`, left by an interrupted write")
            && text.contains("read-only"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(st.join(".memdir/tmp/.memdir-tmp-1-1").exists());
}

/// Runs memdir on store folder `root` with `input` on stdin.
fn memdir_at(root: &std::path::Path, args: &[&str], input: &[u8]) -> (bool, Vec<u8>, String) {
    use std::io::Write as _;
    let mut child = Command::new(common::BIN)
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .env_clear()
        .env("HOME", root.parent().unwrap())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn export_and_import_move_a_store_with_its_history() {
    let sb = Sandbox::new();
    let a = sb.store();
    std::fs::create_dir_all(a.join("notes")).unwrap();
    std::fs::write(a.join("notes/a.md"), "first\n").unwrap();
    // Versions: the file as found, as changed in an editor, and restored to a second path.
    assert!(memdir_at(&a, &["history", "notes/a.md"], b"").0);
    std::fs::write(a.join("notes/a.md"), "second, ünïcode\n").unwrap();
    assert!(memdir_at(&a, &["history", "notes/a.md"], b"").0);
    let (ok, _, err) = memdir_at(&a, &["restore", "b.md", "--version", "1", "--force"], b"");
    assert!(ok, "{err}");
    let (ok, archive, err) = memdir_at(&a, &["export"], b"");
    assert!(
        ok && err.contains("exported 2 memories and 3 versions"),
        "{err}"
    );
    let text = String::from_utf8(archive.clone()).unwrap();
    assert!(text.starts_with("{\"memdir_archive\":1,"), "{text}");

    let b = sb.tmp.path().join("restored");
    let (ok, out, err) = memdir_at(&b, &["import"], &archive);
    assert!(ok, "{err}");
    assert!(String::from_utf8_lossy(&out).contains("imported 2 memories and 3 versions"));
    for rel in ["notes/a.md", "b.md"] {
        assert_eq!(
            std::fs::read(a.join(rel)).unwrap(),
            std::fs::read(b.join(rel)).unwrap(),
            "{rel}"
        );
    }
    let history = |root: &std::path::Path| {
        let (ok, out, err) = memdir_at(root, &["history", "--json", "--limit", "50"], b"");
        assert!(ok, "{err}");
        String::from_utf8(out).unwrap()
    };
    assert_eq!(history(&a), history(&b));
    // The restored store's history is whole: an old version can be restored from it.
    let (ok, _, err) = memdir_at(&b, &["restore", "c.md", "--version", "1", "--force"], b"");
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(b.join("c.md")).unwrap(), "first\n");
    let (ok, out, err) = memdir_at(&b, &["check"], b"");
    assert!(ok, "{}{err}", String::from_utf8_lossy(&out));

    // Never over something: a store with memories refuses, unchanged.
    let (ok, _, err) = memdir_at(&a, &["import"], &archive);
    assert!(!ok && err.contains("already has memories"), "{err}");
    assert_eq!(std::fs::read_to_string(a.join("b.md")).unwrap(), "first\n");
}

/// Regression: an import wrote every memory afresh, so a restored backup's memories all
/// looked new (review found nothing stale, the freshness note said nothing). A memory
/// whose content is its last version's takes that version's time.
#[test]
fn an_import_keeps_each_memory_s_age_from_its_last_version() {
    let sb = Sandbox::new();
    let a = sb.store();
    std::fs::create_dir_all(a.join("notes")).unwrap();
    std::fs::write(a.join("notes/a.md"), "an old note\n").unwrap();
    assert!(memdir_at(&a, &["history", "notes/a.md"], b"").0);
    // Last changed in May 2024: the archive says so, and the import dates the file so.
    let aged = std::fs::File::options()
        .write(true)
        .open(a.join("notes/a.md"))
        .unwrap();
    aged.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_715_000_000))
        .unwrap();
    drop(aged);
    let (ok, archive, err) = memdir_at(&a, &["export"], b"");
    assert!(ok, "{err}");
    let dated = sb.tmp.path().join("dated");
    let (ok, _, err) = memdir_at(&dated, &["import"], &archive);
    assert!(ok, "{err}");
    let (ok, out, err) = memdir_at(&dated, &["list", "--json"], b"");
    assert!(ok, "{err}");
    assert!(
        String::from_utf8_lossy(&out).contains("\"updated_at\":\"2024-05-06T12:53:20"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    // An archive of an earlier memdir, without file times, its versions made in January
    // 2025: a memory whose content is its last version's takes that version's time.
    let text: String = String::from_utf8(archive)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if let Some(line) = v.as_object_mut() {
                line.remove("modified");
            }
            format!("{v}\n")
        })
        .collect();
    let mut old = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\"at\":\"") {
        let end = at + 6 + rest[at + 6..].find('"').unwrap();
        old.push_str(&rest[..at + 6]);
        old.push_str("2025-01-02T03:04:05Z");
        rest = &rest[end..];
    }
    old.push_str(rest);
    assert!(old.contains("2025-01-02T03:04:05Z"), "{old}");

    let b = sb.tmp.path().join("restored");
    let (ok, _, err) = memdir_at(&b, &["import"], old.as_bytes());
    assert!(ok, "{err}");
    let (ok, out, err) = memdir_at(&b, &["list", "--json"], b"");
    assert!(ok, "{err}");
    let listed: serde_json::Value =
        serde_json::from_str(String::from_utf8(out).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(listed["path"], "/memories/notes/a.md");
    assert!(
        listed["updated_at"]
            .as_str()
            .unwrap()
            .starts_with("2025-01-02T03:04:05"),
        "{listed}"
    );
    let (ok, out, err) = memdir_at(&b, &["review", "--older-than", "90d"], b"");
    assert!(ok, "{err}");
    assert!(
        String::from_utf8_lossy(&out).contains("notes/a.md"),
        "stale after the move"
    );
    // Dating the file is not a change made outside memdir.
    let (ok, out, err) = memdir_at(&b, &["history", "--json", "notes/a.md"], b"");
    assert!(ok, "{err}");
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1);

    // Moved in March 2026, unchanged: a move keeps the content's time, as a move on disk
    // keeps the file's. And an archive's time in the future is taken as now.
    let mut lines: Vec<serde_json::Value> = old
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["versions"] = 2.into();
    lines[1]["file"] = "notes/b.md".into();
    let mut moved = lines[2].clone();
    let record = moved["record"].as_object_mut().unwrap();
    record.insert("version".into(), 2.into());
    record.insert("op".into(), "renamed".into());
    record.insert("path".into(), "notes/b.md".into());
    record.insert("from".into(), "notes/a.md".into());
    record.insert("at".into(), "2026-03-01T00:00:00Z".into());
    record.remove("content");
    lines.push(moved);
    let c = sb.tmp.path().join("moved");
    let archive: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (ok, _, err) = memdir_at(&c, &["import"], archive.as_bytes());
    assert!(ok, "{err}");
    let (ok, out, err) = memdir_at(&c, &["list", "--json"], b"");
    assert!(ok, "{err}");
    assert!(
        String::from_utf8_lossy(&out).contains("\"updated_at\":\"2025-01-02T03:04:05"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let future = old.replace("2025-01-02T03:04:05Z", "2999-01-01T00:00:00Z");
    let d = sb.tmp.path().join("future");
    let (ok, _, err) = memdir_at(&d, &["import"], future.as_bytes());
    assert!(ok, "{err}");
    let (ok, out, err) = memdir_at(&d, &["list", "--json"], b"");
    assert!(ok, "{err}");
    assert!(
        !String::from_utf8_lossy(&out).contains("2999"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

/// Hidden memories and those under `node_modules` (a tool can write them; list and search
/// skip them) travel in an archive too; an import that fails part way leaves nothing, so
/// it can be retried.
#[test]
fn an_archive_holds_hidden_memories_and_a_failed_import_leaves_nothing() {
    let sb = Sandbox::new();
    let a = sb.store();
    std::fs::create_dir_all(a.join(".private")).unwrap();
    std::fs::create_dir_all(a.join("node_modules")).unwrap();
    std::fs::create_dir_all(a.join("notes")).unwrap();
    std::fs::write(a.join(".private/plan.md"), "hidden plan\n").unwrap();
    std::fs::write(a.join("node_modules/x.md"), "nm\n").unwrap();
    std::fs::write(a.join("notes/n.md"), "a note\n").unwrap();
    std::fs::write(a.join("top.md"), "visible\n").unwrap();
    let (ok, archive, err) = memdir_at(&a, &["export"], b"");
    assert!(ok && err.contains("exported 4 memories"), "{err}");

    // A link out of the store where a folder of the archive goes: the import fails at
    // that file, and what it wrote before is removed.
    let b = sb.tmp.path().join("restored");
    let outside = sb.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, b.join("notes")).unwrap();
    let (ok, _, err) = memdir_at(&b, &["import"], &archive);
    assert!(!ok && err.contains("nothing was imported"), "{err}");
    for rel in [".private/plan.md", "node_modules/x.md", "top.md"] {
        assert!(!b.join(rel).exists(), "{rel} was left behind");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // Without the link, the same archive imports, hidden memories included.
    std::fs::remove_file(b.join("notes")).unwrap();
    let (ok, _, err) = memdir_at(&b, &["import"], &archive);
    assert!(ok, "{err}");
    for rel in [
        ".private/plan.md",
        "node_modules/x.md",
        "notes/n.md",
        "top.md",
    ] {
        assert_eq!(
            std::fs::read(a.join(rel)).unwrap(),
            std::fs::read(b.join(rel)).unwrap(),
            "{rel}"
        );
    }
    // And a store whose only memory is hidden is not empty.
    let c = sb.tmp.path().join("hidden-only");
    std::fs::create_dir_all(c.join(".h")).unwrap();
    std::fs::write(c.join(".h/m.md"), "mine\n").unwrap();
    let (ok, _, err) = memdir_at(&c, &["import"], &archive);
    assert!(!ok && err.contains("already has memories"), "{err}");
}

#[test]
fn a_hostile_or_damaged_archive_imports_nothing() {
    let sb = Sandbox::new();
    let header = |files: usize, versions: usize| {
        format!(
            "{{\"memdir_archive\":1,\"store\":\"memories\",\"files\":{files},\"versions\":{versions}}}\n"
        )
    };
    let record_at = |version: u64, path: &str, content: &str, sha: &str| {
        format!(
            "{{\"record\":{{\"version\":{version},\"op\":\"created\",\"path\":{path:?},\"at\":\"2026-11-23T00:00:00Z\",\"actor\":\"x\",\"sha256\":\"{sha}\",\"size\":{},\"content\":{content:?}}}}}\n",
            content.len()
        )
    };
    let record = |version: u64, content: &str, sha: &str| record_at(version, "a.md", content, sha);
    let good_sha = common::sha256_hex(b"hi\n");
    let renamed_from = |from: &str| {
        format!(
            "{{\"record\":{{\"version\":1,\"op\":\"renamed\",\"path\":\"b.md\",\"from\":{from:?},\"at\":\"2026-11-23T00:00:00Z\",\"actor\":\"x\",\"sha256\":\"{good_sha}\",\"size\":3,\"content\":\"hi\\n\"}}}}\n"
        )
    };
    let mut cases = vec![];
    for path in [
        "../../etc/passwd",
        ".memdir/lock",
        "",
        "a//b.md",
        "/abs.md",
        "a/./b.md",
    ] {
        cases.push((
            format!("{}{}", header(0, 1), record_at(1, path, "hi\n", &good_sha)),
            "cannot be in a store's history",
        ));
    }
    cases.push((
        format!("{}{}", header(0, 1), renamed_from("../x.md")),
        "cannot be in a store's history",
    ));
    cases.extend([
        (
            format!(
                "{}{{\"file\":\"../escape.md\",\"content\":\"x\"}}\n",
                header(1, 0)
            ),
            "names a path memdir refuses",
        ),
        (
            format!(
                "{}{{\"file\":\".memdir/lock\",\"content\":\"x\"}}\n",
                header(1, 0)
            ),
            "names a path memdir refuses",
        ),
        (
            format!(
                "{}{{\"file\":\"a.md\",\"content\":\"{}\"}}\n",
                header(1, 0),
                "x".repeat(200_000)
            ),
            "the limit is",
        ),
        (
            format!("{}{{\"file\":\"a.md\",\"content\":\"x\"}}\n", header(2, 0)),
            "incomplete",
        ),
        (
            format!("{}{}", header(0, 1), record(1, "hi\n", &"0".repeat(64))),
            "does not match its sha256",
        ),
        (
            format!(
                "{}{}{}",
                header(0, 2),
                record(2, "hi\n", &good_sha),
                record(1, "hi\n", &good_sha)
            ),
            "out of order",
        ),
        (
            "{\"file\":\"a.md\",\"content\":\"x\"}\n".to_owned(),
            "header",
        ),
        ("not json\n".to_owned(), "is not an archive line"),
        (String::new(), "empty"),
    ]);
    for (archive, expect) in cases {
        let root = sb.tmp.path().join("target");
        let (ok, _, err) = memdir_at(&root, &["import"], archive.as_bytes());
        assert!(!ok && err.contains(expect), "{expect:?}: {err}");
        let left: Vec<_> = std::fs::read_dir(&root)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name())
                    .filter(|n| n != ".memdir")
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "{expect:?}: wrote {left:?}");
        assert!(
            !root.join(".memdir/history/log.jsonl").exists(),
            "{expect:?}"
        );
        assert!(!sb.tmp.path().join("escape.md").exists());
    }
}

/// Sets a file's modification time to `days` days ago.
fn age(path: &std::path::Path, days: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn prune_deletes_expired_memories_as_restorable_versions() {
    let sb = Sandbox::new();
    let gone = "---\nname: Freeze\nexpires: 2020-01-01\n---\ncode freeze until Friday\n";
    std::fs::write(sb.store().join("freeze.md"), gone).unwrap();
    std::fs::write(
        sb.store().join("keep.md"),
        "---\nexpires: 2999-01-01\n---\nstill true\n",
    )
    .unwrap();
    let (ok, out, err) = memdir(&sb, &["prune", "--expired", "--dry-run"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("would delete  /memories/freeze.md  expired at 2020-01-01T00:00:00Z")
            && !out.contains("keep.md"),
        "{out}"
    );
    assert!(
        sb.store().join("freeze.md").exists(),
        "a dry run deletes nothing"
    );
    let (ok, _, err) = memdir(&sb, &["prune"]);
    assert!(!ok && err.contains("--expired"), "{err}");

    let (ok, out, err) = memdir(&sb, &["prune", "--expired", "--json"]);
    assert!(ok, "{err}");
    let line: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(line["path"], "/memories/freeze.md");
    assert_eq!(line["deleted"], true);
    assert!(!sb.store().join("freeze.md").exists());
    assert!(sb.store().join("keep.md").exists());
    let (ok, out, _) = memdir(&sb, &["history", "/memories/freeze.md", "--json"]);
    assert!(ok);
    assert!(
        out.contains("\"reason\":\"expired at 2020-01-01T00:00:00Z (memdir prune --expired)\""),
        "{out}"
    );
    let version = line["version"].as_u64().unwrap() - 1;
    let (ok, _, err) = memdir(
        &sb,
        &[
            "restore",
            "/memories/freeze.md",
            "--version",
            &version.to_string(),
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(sb.store().join("freeze.md")).unwrap(),
        gone
    );
}

#[test]
fn review_lists_what_is_old_oldest_first_and_memory_list_filters_alike() {
    let sb = Sandbox::new();
    for (file, days) in [("fresh.md", 1), ("old.md", 100), ("older.md", 400)] {
        let path = sb.store().join(file);
        std::fs::write(
            &path,
            format!("---\nname: N {file}\ndescription: d {file}\n---\nx\n"),
        )
        .unwrap();
        age(&path, days);
    }
    let (ok, out, err) = memdir(&sb, &["review"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("/memories/older.md") && lines[0].contains("N older.md: d older.md"),
        "{out}"
    );
    assert!(lines[0].trim_start().starts_with("400 days"), "{out}");
    assert!(lines[1].contains("/memories/old.md"), "{out}");
    assert!(
        !out.contains("fresh.md") && out.contains("2 memories not updated for 90 days"),
        "{out}"
    );
    let (ok, out, _) = memdir(&sb, &["review", "--older-than", "52w", "--json"]);
    assert!(ok);
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(
        (rows[0]["path"].clone(), rows[0]["age_days"].clone()),
        (
            serde_json::json!("/memories/older.md"),
            serde_json::json!(400)
        )
    );
    let (ok, _, err) = memdir(&sb, &["review", "--older-than", "soon"]);
    assert!(!ok && err.contains("not an age"), "{err}");
}

#[test]
fn index_writes_the_generated_memory_md_into_the_store() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.store().join("a.md"),
        "---\nname: Alpha\ndescription: the first\n---\nx\n",
    )
    .unwrap();
    let (ok, out, err) = memdir(&sb, &["index"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("wrote /memories/MEMORY.md: 1 memory listed"),
        "{out}"
    );
    let written = std::fs::read_to_string(sb.store().join("MEMORY.md")).unwrap();
    assert!(
        written.contains("- [Alpha](a.md) — the first\n"),
        "{written}"
    );
    let (ok, out, _) = memdir(&sb, &["index", "--json"]);
    assert!(ok);
    let r: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (r["unchanged"].clone(), r["listed"].clone()),
        (serde_json::json!(true), serde_json::json!(1))
    );
}

#[test]
fn subcommands_that_print_results_take_json() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.store().join("a.md"),
        "---\nname: Alpha\n---\ncargo build\n",
    )
    .unwrap();
    for (args, key, want) in [
        (vec!["list", "--json"], "name", serde_json::json!("Alpha")),
        (
            vec!["read", "a.md", "--json"],
            "total_lines",
            serde_json::json!(4),
        ),
        (
            vec!["search", "cargo", "--json"],
            "path",
            serde_json::json!("/memories/a.md"),
        ),
    ] {
        let (ok, out, err) = memdir(&sb, &args);
        assert!(ok, "{args:?}: {err}");
        let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap())
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        assert_eq!(first[key], want, "{args:?}: {out}");
    }
}

#[test]
fn every_command_says_something_when_there_is_nothing() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store().join("notes")).unwrap();
    std::fs::write(sb.store().join("notes/empty.md"), "").unwrap();
    std::fs::write(sb.store().join("notes/a.md"), "alpha\n").unwrap();
    std::fs::create_dir_all(sb.store().join("void")).unwrap();
    for (args, says) in [
        (
            vec!["list", "/memories/void"],
            "no memories in /memories/void\n",
        ),
        (vec!["search", "zebra"], "no memory matches \"zebra\"\n"),
        (
            vec!["search", "alpha", "--path", "void"],
            "no memory matches \"alpha\" in /memories/void\n",
        ),
        (
            vec!["history", "/memories/void"],
            "no versions of /memories/void\n",
        ),
        (
            vec!["read", "notes/empty.md"],
            "/memories/notes/empty.md is empty\n",
        ),
    ] {
        let (ok, out, err) = memdir(&sb, &args);
        assert!(ok, "{args:?}: {err}");
        assert_eq!(out, says, "{args:?}");
    }
    let empty = Sandbox::new();
    let (ok, out, err) = memdir(&empty, &["list"]);
    assert!(ok && out == "no memories in /memories\n", "{out}{err}");
    let (ok, out, err) = memdir(&empty, &["history"]);
    assert!(ok && out == "no versions of /memories\n", "{out}{err}");
    // A limit of 0 would say "no memory matches" of memories that match: refused.
    for args in [
        vec!["search", "alpha", "--limit", "0"],
        vec!["history", "--limit", "0"],
    ] {
        let (ok, out, err) = memdir(&sb, &args);
        assert!(!ok && out.is_empty(), "{args:?}: {out}");
        assert!(err.contains("--limit"), "{args:?}: {err}");
    }
}

#[test]
fn list_on_a_fresh_machine_finds_no_memories_and_creates_nothing() {
    // No store given and none made yet: the home and data folders are empty.
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(common::BIN)
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["list", "/memories/notes"],
    ] {
        let (code, out, err) = run(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(
            err.contains("no memories yet") && err.contains("does not exist yet"),
            "{args:?} says so on stderr: {err}"
        );
        // One JSON object per memory, and there are none: no lines at all.
        assert_eq!(out, "", "{args:?}");
    }
    let (code, out, err) = run(&["list", "../x"]);
    assert!(
        code == Some(1) && out.is_empty() && err.contains(".."),
        "{err}"
    );
    let left: Vec<_> = walkdir::WalkDir::new(home.path())
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    assert!(left.is_empty(), "a listing created {left:?}");
}

#[test]
fn read_lines_prints_a_range() {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("a.md"), "one\ntwo\nthree\nfour\n").unwrap();
    for (lines, says) in [
        ("2:3", "     2\ttwo\n     3\tthree\n"),
        ("3:", "     3\tthree\n     4\tfour\n"),
        ("4", "     4\tfour\n"),
    ] {
        let (ok, out, err) = memdir(&sb, &["read", "a.md", "--lines", lines]);
        assert!(ok, "{lines}: {err}");
        assert_eq!(
            out.trim_end_matches('\n'),
            says.trim_end_matches('\n'),
            "{lines}"
        );
    }
    let (ok, _, err) = memdir(&sb, &["read", "a.md", "--lines", "9:10"]);
    assert!(!ok && err.contains("4 lines"), "{err}");
}

#[test]
fn the_help_of_a_subcommand_shows_only_what_it_takes() {
    let help = |args: &[&str]| {
        let out = Command::new(common::BIN)
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let server_only = [
        "--tools",
        "--describe",
        "--result-budget",
        "--no-history",
        "--keep-versions",
        "--keep-days",
    ];
    for (args, takes, not) in [
        (
            vec!["list"],
            vec!["--root", "--store", "--depth"],
            vec!["--index-dir", "--lines", "--max-file-bytes"],
        ),
        (
            vec!["read"],
            vec!["--root", "--lines"],
            vec!["--index-dir", "--depth"],
        ),
        (
            vec!["search"],
            vec!["--root", "--index-dir", "--no-index", "--limit"],
            vec!["--max-file-bytes"],
        ),
        (
            vec!["check"],
            vec!["--json", "--index-dir"],
            vec!["--allow-secrets"],
        ),
        (
            vec!["restore"],
            vec![
                "--version",
                "--force",
                "--max-file-bytes",
                "--allow-secrets",
            ],
            vec!["--index-dir"],
        ),
        (
            vec!["export"],
            vec!["--root"],
            vec!["--index-dir", "--allow-secrets"],
        ),
        (
            vec!["cache", "prune"],
            vec!["--index-dir"],
            vec!["--no-index", "--root", "--store"],
        ),
        (
            vec!["serve"],
            server_only.to_vec(),
            vec!["--depth", "--lines"],
        ),
        (vec![], server_only.to_vec(), vec!["--depth", "--lines"]),
    ] {
        let text = help(&args);
        for t in takes {
            assert!(text.contains(t), "{args:?} takes {t}: {text}");
        }
        let mut not = not;
        if !args.is_empty() && args[0] != "serve" {
            not.extend(server_only);
        }
        for n in not {
            assert!(!text.contains(n), "{args:?} does not take {n}: {text}");
        }
    }
}

#[test]
fn cache_prune_removes_the_indexes_of_stores_that_are_gone() {
    let sb = Sandbox::new();
    let cache = sb.tmp.path().join("cache/memdir");
    let run = |args: &[&str]| {
        let out = Command::new(common::BIN)
            .args(args)
            .env_clear()
            .env("HOME", sb.tmp.path())
            .env("XDG_CACHE_HOME", sb.tmp.path().join("cache"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let search = |root: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["--root", root.to_str().unwrap(), "search", "alpha"];
        args.extend(extra);
        run(&args)
    };
    let kept = sb.store();
    let gone = sb.tmp.path().join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    for root in [&kept, &gone] {
        std::fs::write(root.join("a.md"), "alpha\n").unwrap();
        assert!(search(root, &[]).contains("/memories/a.md"));
    }
    let indexes = || {
        let mut names: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(indexes().len(), 2, "{:?}", indexes());
    // Not ours: left alone. An index of an older memdir (no record of its store): removed.
    std::fs::create_dir_all(cache.join("photos")).unwrap();
    std::fs::create_dir_all(cache.join("old-0123456789abcdef")).unwrap();
    std::fs::write(cache.join("old-0123456789abcdef/index.sqlite3"), "").unwrap();

    std::fs::remove_dir_all(&gone).unwrap();
    let out = run(&["cache", "prune"]);
    assert!(
        out.contains(&format!("(its store {} no longer exists)", gone.display())),
        "{out}"
    );
    assert!(
        out.contains("old-0123456789abcdef (made by an older memdir"),
        "{out}"
    );
    let left = indexes();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.contains(&"photos".to_owned()), "{left:?}");
    assert!(left.iter().any(|n| n.starts_with("memories-")), "{left:?}");
    // The kept store's index still serves it; a second prune finds nothing.
    assert!(search(&kept, &[]).contains("/memories/a.md"));
    let out = run(&["cache", "prune"]);
    assert!(out.starts_with("no search index to prune in"), "{out}");
    // Under --index-dir too.
    let elsewhere = sb.tmp.path().join("idx");
    let elsewhere_arg = elsewhere.to_str().unwrap();
    assert!(search(&kept, &["--index-dir", elsewhere_arg]).contains("a.md"));
    std::fs::remove_dir_all(&kept).unwrap();
    let out = run(&["cache", "prune", "--index-dir", elsewhere_arg]);
    assert!(out.contains("no longer exists"), "{out}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn review_puts_low_importance_first_and_search_filters_by_importance() {
    let sb = Sandbox::new();
    // (file, importance field, days since the last update)
    for (file, field, days) in [
        ("vital-old.md", "importance: 5", 400),
        ("plain-older.md", "name: plain", 500),
        ("plain-old.md", "name: plain", 200),
        ("trivial.md", "importance: 1", 100),
        ("minor.md", "importance: 2", 300),
        ("fresh.md", "importance: 1", 1),
    ] {
        let path = sb.store().join(file);
        std::fs::write(
            &path,
            format!("---\n{field}\n---\nrotate the signing keys\n"),
        )
        .unwrap();
        age(&path, days);
    }
    let (ok, out, err) = memdir(&sb, &["review"]);
    assert!(ok, "{err}");
    let order: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|p| p.starts_with("/memories/"))
        .collect();
    // Least important first; within one importance (none counts as 3), oldest first.
    assert_eq!(
        order,
        [
            "/memories/trivial.md",
            "/memories/minor.md",
            "/memories/plain-older.md",
            "/memories/plain-old.md",
            "/memories/vital-old.md",
        ],
        "{out}"
    );
    assert!(out.contains("[importance 1]"), "{out}");
    let (ok, out, _) = memdir(&sb, &["review", "--json"]);
    assert!(ok);
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["importance"], 1, "{out}");

    let (ok, out, err) = memdir(&sb, &["search", "signing keys", "--min-importance", "4"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("/memories/vital-old.md") && out.contains("importance 5"),
        "{out}"
    );
    assert!(
        !out.contains("plain-old") && !out.contains("trivial"),
        "{out}"
    );
    let (ok, out, err) = memdir(
        &sb,
        &["search", "signing keys", "--min-importance", "3", "--json"],
    );
    assert!(ok, "{err}");
    let hits: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 3, "{out}");
    assert_eq!(hits[0]["path"], "/memories/vital-old.md", "{out}");
    assert_eq!(hits[0]["importance"], 5, "{out}");
    let (ok, out, err) = memdir(&sb, &["search", "signing keys", "--min-importance", "9"]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(
        err.contains("min_importance must be an integer from 1 to 5"),
        "{err}"
    );
    let (ok, out, _) = memdir(&sb, &["list", "--json"]);
    assert!(ok);
    assert!(out.contains("\"importance\":5"), "{out}");
}
