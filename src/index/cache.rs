//! Where search indexes live on the host: one folder per store under a cache base, each
//! recording which store folder it is for, so `memdir cache prune` can remove those whose
//! store is gone. Not the index itself (that is `mod.rs`); nothing here reads a store.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::text;

/// The index database's file name in its folder.
const DB: &str = "index.sqlite3";
/// The file in an index folder that holds the store folder's canonical path.
const RECORD: &str = "store-folder";
/// Hex digits of the store key in an index folder's name.
const KEY_LEN: usize = 16;

/// The user's cache folder for memdir (`$XDG_CACHE_HOME/memdir` or `~/.cache/memdir`,
/// `~/Library/Caches/memdir`, `%LOCALAPPDATA%\memdir`).
pub fn user_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("memdir"))
}

/// The index database of store `name` at canonical path `host_key`, under `base`:
/// `<base>/<name>-<16 hex digits of sha256(host_key)>/index.sqlite3`. Every process
/// serving the store computes the same one.
pub fn db_path(base: &Path, name: &str, host_key: &str) -> PathBuf {
    let key = &text::sha256_hex(host_key.as_bytes())[..KEY_LEN];
    base.join(format!("{name}-{key}")).join(DB)
}

/// Records in the folder of index `db` which store folder it is for (written once; an
/// index that is never recorded is only pruned as one of unknown origin). A cache, so a
/// failure is only logged.
pub fn record_store(db: &Path, host_key: &str) {
    let Some(dir) = db.parent() else { return };
    let record = dir.join(RECORD);
    if std::fs::read_to_string(&record).is_ok_and(|r| r == host_key) {
        return;
    }
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&record, host_key)) {
        tracing::debug!(folder = %dir.display(), error = %e, "could not record the index's store");
    }
}

/// One index folder removed by [`prune`].
#[derive(Debug)]
pub struct Pruned {
    /// The index folder.
    pub folder: PathBuf,
    /// The store folder it was for; `None` when it did not say (made by an older memdir).
    pub store: Option<String>,
}

/// Removes the index folders under `base` whose store folder no longer exists, or that do
/// not say which store they are for (any index is rebuilt from its store on first use).
/// The index of a database store (recorded by its URL) is kept: whether the database is
/// gone cannot be told from here.
/// Only folders named like an index folder are looked at. A missing `base` has nothing.
pub fn prune(base: &Path) -> std::io::Result<Vec<Pruned>> {
    let entries = match std::fs::read_dir(base) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut pruned = Vec::new();
    for entry in entries {
        let entry = entry?;
        let folder = entry.path();
        let ours = entry.file_type()?.is_dir()
            && entry.file_name().to_str().is_some_and(index_folder_name)
            && (folder.join(DB).exists() || folder.join(RECORD).exists());
        if !ours {
            continue;
        }
        let store = std::fs::read_to_string(folder.join(RECORD)).ok();
        if store
            .as_deref()
            .is_some_and(|s| s.contains("://") || Path::new(s).is_dir())
        {
            continue;
        }
        std::fs::remove_dir_all(&folder)?;
        pruned.push(Pruned { folder, store });
    }
    pruned.sort_by(|a, b| a.folder.cmp(&b.folder));
    Ok(pruned)
}

/// `<store name>-<16 lowercase hex digits>`.
fn index_folder_name(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(store, key)| {
        !store.is_empty()
            && key.len() == KEY_LEN
            && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_folder_names() {
        for (name, ours) in [
            ("memories-0123456789abcdef", true),
            ("my-notes-0123456789abcdef", true),
            ("memories-0123456789ABCDEF", false),
            ("memories-0123456789abcde", false),
            ("-0123456789abcdef", false),
            ("memories", false),
            ("photos", false),
        ] {
            assert_eq!(super::index_folder_name(name), ours, "{name}");
        }
    }
}
