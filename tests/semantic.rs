//! Search by meaning switched on without a usable model: every command that takes
//! `--semantic` (the server over stdio and HTTP, `memdir search`, `memdir reindex`,
//! `memdir console`) refuses to start, exits non-zero, says what is wrong and the fix,
//! and prints nothing on stdout (a client reading JSON-RPC there reads nothing).
//! Never a silent fall-back to words. These need no model; the cases that do are in
//! `tests/semantic_model.rs` (under `external-tests`).

#[path = "common/child.rs"]
mod child;
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One refusal: the arguments (after `--root STORE`), the environment, and words the
/// message must hold.
struct Case {
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    says: &'static [&'static str],
}

/// Runs `memdir` with `args` in a fresh home (`HOME`, data and cache folders inside
/// `tmp`), stdin closed; `{missing}` and `{garbage}` in an argument or variable become
/// those files. Returns (exit success, stdout, stderr).
fn run(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let fill = |s: &str| {
        s.replace("{missing}", tmp.join("no-such-model.bin").to_str().unwrap())
            .replace("{garbage}", tmp.join("garbage.bin").to_str().unwrap())
            .replace("{store}", tmp.join("store").to_str().unwrap())
    };
    let mut c = Command::new(common::BIN);
    c.args(args.iter().map(|a| fill(a)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .env("HOME", tmp.join("home"))
        .env("XDG_DATA_HOME", tmp.join("data"))
        .env("XDG_CACHE_HOME", tmp.join("cache"));
    for (k, v) in env {
        c.env(k, fill(v));
    }
    let mut child = c.spawn().unwrap();
    let status = child::wait_timeout(&mut child, Duration::from_secs(30));
    let Some(status) = status else {
        let _ = child.kill();
        panic!("memdir {args:?} did not exit: it should refuse at start-up");
    };
    let out = child.wait_with_output().unwrap();
    (
        status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const INSTALL: &str = "memdir model install";

#[test]
fn meaning_without_a_usable_model_is_refused_at_start_up_with_the_fix() {
    let cases = [
        // The model named on the command line is not there.
        Case {
            args: &["--root", "{store}", "--semantic", "--model", "{missing}"],
            env: &[],
            says: &["no-such-model.bin", INSTALL],
        },
        // A file that is not a model.
        Case {
            args: &["--root", "{store}", "--semantic", "--model", "{garbage}"],
            env: &[],
            says: &["garbage.bin", INSTALL],
        },
        // The same through the environment.
        Case {
            args: &["--root", "{store}"],
            env: &[("MEMDIR_SEMANTIC", "1"), ("MEMDIR_MODEL", "{garbage}")],
            says: &["garbage.bin", INSTALL],
        },
        // Nothing installed where `memdir model install` puts the model.
        Case {
            args: &["--root", "{store}", "--semantic"],
            env: &[],
            says: &["multilingual-e5-small-q4.bin", INSTALL],
        },
        // Over HTTP too.
        Case {
            args: &[
                "serve",
                "--root",
                "{store}",
                "--http",
                "127.0.0.1:0",
                "--semantic",
                "--model",
                "{garbage}",
            ],
            env: &[],
            says: &["garbage.bin", INSTALL],
        },
        // The command-line search and reindex.
        Case {
            args: &[
                "search",
                "--root",
                "{store}",
                "--semantic",
                "--model",
                "{missing}",
                "deploy",
            ],
            env: &[],
            says: &["no-such-model.bin", INSTALL],
        },
        Case {
            args: &[
                "reindex",
                "--root",
                "{store}",
                "--semantic",
                "--model",
                "{garbage}",
            ],
            env: &[],
            says: &["garbage.bin", INSTALL],
        },
        Case {
            args: &[
                "console",
                "--root",
                "{store}",
                "--semantic",
                "--model",
                "{garbage}",
            ],
            env: &[],
            says: &["garbage.bin", INSTALL],
        },
        // Meaning keeps its vectors in the index.
        Case {
            args: &[
                "--root",
                "{store}",
                "--semantic",
                "--no-index",
                "--model",
                "{garbage}",
            ],
            env: &[],
            says: &["--no-index"],
        },
        // A model without meaning on is a mistake, not ignored.
        Case {
            args: &["--root", "{store}", "--model", "{garbage}"],
            env: &[],
            says: &["--semantic"],
        },
        // A value of MEMDIR_SEMANTIC that means neither.
        Case {
            args: &["--root", "{store}"],
            env: &[("MEMDIR_SEMANTIC", "maybe")],
            says: &["MEMDIR_SEMANTIC", "1"],
        },
    ];
    for case in cases {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("store")).unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        // Not a model: text, then bytes no model file starts with.
        let mut garbage = b"this is not an embedding model\n".to_vec();
        garbage.extend((0..4096u32).map(|i| (i * 7919 % 251) as u8));
        std::fs::write(tmp.path().join("garbage.bin"), garbage).unwrap();
        let (ok, out, err) = run(tmp.path(), case.args, case.env);
        let what = format!("memdir {:?} {:?}", case.args, case.env);
        assert!(!ok, "{what} started: {err}");
        assert_eq!(out, "", "{what}: stdout must stay empty");
        for word in case.says {
            assert!(
                err.contains(word),
                "{what}: the message should say {word:?}: {err}"
            );
        }
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

#[test]
fn meaning_off_is_the_default_and_says_nothing_of_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("store")).unwrap();
    std::fs::create_dir_all(tmp.path().join("home")).unwrap();
    // `MEMDIR_SEMANTIC=0` is off, as unset is: the search runs by words, no model needed.
    for env in [&[][..], &[("MEMDIR_SEMANTIC", "0")][..]] {
        let (ok, out, err) = run(tmp.path(), &["search", "--root", "{store}", "deploy"], env);
        assert!(ok, "{env:?}: {err}");
        assert!(out.contains("no memory matches"), "{env:?}: {out}");
    }
}
