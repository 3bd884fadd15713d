//! Where search indexes live on the host, decided in one place: the setting
//! ([`IndexLocation`]), the user's cache folder (the one read of the environment for it),
//! and each store's index file ([`IndexFile`]: `<base>/<name>-<16 hex of the store's
//! canonical path>/index.sqlite3`), resolved once when the stores open. Each index folder
//! records which store folder it is for, so `memdir cache prune` can remove those whose
//! store is gone. Not the index itself (that is `crate::search::index`, which is handed an
//! [`IndexFile`] and never looks at the environment); nothing here reads a store.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::Store;
use crate::text;

/// The index database's file name in its folder.
const DB: &str = "index.sqlite3";
/// The index of the processes that record no history of the store (it is read-only to
/// them, or they run with history off). Kept apart because the index also says what the
/// recording processes have seen: a change another process indexed first would look
/// already known to them, and a person's edit would not become an `external` version.
const DB_UNRECORDED: &str = "index-unrecorded.sqlite3";
/// The file in an index folder that holds the store folder's canonical path.
const RECORD: &str = "store-folder";
/// Hex digits of the store key in an index folder's name.
const KEY_LEN: usize = 16;

/// Where search indexes live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexLocation {
    /// No index: every search scans the files.
    Off,
    /// The user's cache folder (`$XDG_CACHE_HOME/memdir` or `~/.cache/memdir`,
    /// `~/Library/Caches/memdir`, `%LOCALAPPDATA%\memdir`): see [`user_cache_dir`].
    UserCache,
    /// Under this folder.
    Dir(PathBuf),
}

/// The user's cache folder for memdir (`$XDG_CACHE_HOME/memdir` or `~/.cache/memdir`,
/// `~/Library/Caches/memdir`, `%LOCALAPPDATA%\memdir`): the environment, read here and
/// nowhere else in the search index's story.
pub fn user_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("memdir"))
}

impl IndexLocation {
    /// The index file of `store`, if indexing is on; `user_cache` is the user's cache
    /// folder ([`user_cache_dir`], passed in as data). Without one, a store's index lives
    /// in its own `.memdir/cache`. A process that records no history of the store
    /// ([`History::Unrecorded`]) has an index of its own beside it.
    pub fn index_file(
        &self,
        store: &Store,
        user_cache: Option<&Path>,
        history: History,
    ) -> Option<IndexFile> {
        let base = match self {
            IndexLocation::Off => return None,
            IndexLocation::Dir(dir) => dir.clone(),
            IndexLocation::UserCache => user_cache.map(Path::to_owned).unwrap_or_else(|| {
                PathBuf::from(store.host_key())
                    .join(".memdir")
                    .join("cache")
            }),
        };
        let mut db = db_path(&base, &store.name, store.host_key());
        if history == History::Unrecorded {
            db.set_file_name(DB_UNRECORDED);
        }
        Some(IndexFile {
            db,
            host_key: store.host_key().to_owned(),
        })
    }

    /// [`index_file`](Self::index_file) of every store, with the user's cache folder read
    /// once (only when it is needed); `history`: this process records history (where the
    /// store is writable).
    pub fn index_files(&self, stores: &[Store], history: bool) -> Vec<Option<IndexFile>> {
        let user_cache = match self {
            IndexLocation::UserCache => user_cache_dir(),
            _ => None,
        };
        stores
            .iter()
            .map(|s| {
                let records = if history && !s.read_only {
                    History::Recorded
                } else {
                    History::Unrecorded
                };
                self.index_file(s, user_cache.as_deref(), records)
            })
            .collect()
    }
}

/// Whether the process that uses an index records the store's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum History {
    Recorded,
    Unrecorded,
}

/// One store's index database on the host, and the store it is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexFile {
    db: PathBuf,
    /// The store's canonical path (or URL), recorded beside the index.
    host_key: String,
}

impl IndexFile {
    /// The database file.
    pub fn db(&self) -> &Path {
        &self.db
    }

    /// Records in the index's folder which store folder it is for (written once; an
    /// index that is never recorded is only pruned as one of unknown origin). A cache, so
    /// a failure is only logged.
    pub fn record_store(&self) {
        let Some(dir) = self.db.parent() else { return };
        let record = dir.join(RECORD);
        if std::fs::read_to_string(&record).is_ok_and(|r| r == self.host_key) {
            return;
        }
        if let Err(e) =
            std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&record, &self.host_key))
        {
            tracing::debug!(folder = %dir.display(), error = %e, "could not record the index's store");
        }
    }
}

/// The index database of store `name` at canonical path `host_key`, under `base`:
/// `<base>/<name>-<16 hex digits of sha256(host_key)>/index.sqlite3`. Every process
/// serving the store computes the same one.
fn db_path(base: &Path, name: &str, host_key: &str) -> PathBuf {
    let key = &text::sha256_hex(host_key.as_bytes())[..KEY_LEN];
    base.join(format!("{name}-{key}")).join(DB)
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
            && [DB, DB_UNRECORDED, RECORD]
                .iter()
                .any(|f| folder.join(f).exists());
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
