//! The command line for people: list, read, search, history, restore, redact.

mod common;

use std::process::Command;

use common::Sandbox;

fn memdir(sb: &Sandbox, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(common::BIN)
        .args([
            "--root",
            sb.store().to_str().unwrap(),
            "--index-dir",
            sb.tmp.path().join("index").to_str().unwrap(),
        ])
        .args(args)
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
    let (ok, out, err) = memdir(&sb, &["restore", "notes/b.md", "--version", "1"]);
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
}

#[test]
fn bad_options_fail_with_a_message() {
    for args in [
        vec![],
        vec!["--store", "bad name=/tmp/x"],
        vec!["--store", "x"],
    ] {
        let out = Command::new(common::BIN).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "nothing on stdout: {args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}
