//! What the example programs in `examples/` need to know about the machine they run on:
//! where the memdir binary is, and what file system a folder is on (included with
//! `#[path]`; not an example of its own).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The memdir binary: `$MEMDIR_BIN`, else `memdir` in this program's profile folder
/// (`target/<profile>/examples/..`), else `target/release` or `target/debug`. A binary
/// found that way must be newer than the sources it is built from.
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
    let bin = candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "memdir binary not found (tried {candidates:?}); run `cargo build --release` first or set MEMDIR_BIN"
            )
        })?;
    // `cargo run --example` builds the example, not the binary: a binary older than the
    // sources would measure or show code that is no longer there.
    let sources = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let (Ok(built), Some((newest, changed))) = (
        std::fs::metadata(&bin).and_then(|m| m.modified()),
        newest_source(sources),
    ) && newest > built
    {
        anyhow::bail!(
            "{} is older than {} (changed since it was built); run `cargo build{}` first, or set MEMDIR_BIN to use it anyway",
            bin.display(),
            changed.display(),
            if bin.parent().is_some_and(|d| d.ends_with("release")) {
                " --release"
            } else {
                ""
            }
        );
    }
    Ok(bin)
}

/// The most recently modified file the binary is built from (`Cargo.toml`, `Cargo.lock`,
/// `src/**`), if the source tree is there.
fn newest_source(root: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let manifests = ["Cargo.toml", "Cargo.lock"].map(|f| root.join(f));
    let sources = walkdir::WalkDir::new(root.join("src"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path);
    manifests
        .into_iter()
        .chain(sources)
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
}

/// The file system type of the mount holding `path`, from /proc/self/mounts.
pub fn fs_type(path: &Path) -> String {
    mount_of(path).map_or_else(|| "unknown fs".into(), |(_, kind)| kind)
}

/// Whether `path` is on ext4 without a journal: its device's journal thread is `<none>`
/// (/sys/fs/ext4/<device>/journal_task), or, on kernels without that file, /proc/fs/jbd2
/// lists no journal (`<device>-<inode>`) for it.
#[allow(dead_code)]
pub fn ext4_without_journal(path: &Path) -> bool {
    let Some((device, kind)) = mount_of(path) else {
        return false;
    };
    let Some(name) = device.strip_prefix("/dev/").filter(|_| kind == "ext4") else {
        return false;
    };
    if let Ok(task) = std::fs::read_to_string(format!("/sys/fs/ext4/{name}/journal_task")) {
        return task.trim() == "<none>";
    }
    !std::fs::read_dir("/proc/fs/jbd2").is_ok_and(|journals| {
        journals.flatten().any(|j| {
            j.file_name()
                .to_string_lossy()
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('-'))
        })
    })
}

/// The device and file system type of the innermost mount holding `path`.
fn mount_of(path: &Path) -> Option<(String, String)> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (device, mount, kind) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), device.to_owned(), kind.to_owned()))
        })
        .max()
        .map(|(_, device, kind)| (device, kind))
}
