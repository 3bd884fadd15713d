//! What the example programs in `examples/` need to know about the machine they run on:
//! where the memdir binary is, and what file system a folder is on (included with
//! `#[path]`; not an example of its own).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The memdir binary: `$MEMDIR_BIN`, else `memdir` in this program's profile folder
/// (`target/<profile>/examples/..`), else `target/release` or `target/debug`.
pub fn memdir_bin() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("MEMDIR_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().context("locating this program")?;
    let mut candidates = Vec::new();
    if let Some(profile_dir) = exe.parent().and_then(Path::parent) {
        candidates.push(profile_dir.join("memdir"));
        if let Some(target) = profile_dir.parent() {
            candidates.push(target.join("release/memdir"));
            candidates.push(target.join("debug/memdir"));
        }
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "memdir binary not found (tried {candidates:?}); run `cargo build --release` first or set MEMDIR_BIN"
            )
        })
}

/// The file system type of the mount holding `path`, from /proc/self/mounts.
pub fn fs_type(path: &Path) -> String {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return "unknown fs".into();
    };
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mount, kind) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), kind.to_owned()))
        })
        .max()
        .map(|(_, kind)| kind)
        .unwrap_or_else(|| "unknown fs".into())
}
