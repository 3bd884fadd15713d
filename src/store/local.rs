//! A store held by a folder: the directory handle and what belongs to it (temp-file
//! sweeping, the test pause points). Its reads and writes are in `io`, listing in `walk`,
//! the lock in `lock`, state files in `state`, change notices in `watch`.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::{EntryKind, EntryMeta, Stamp, is_missing, map_io, rel_path};
use crate::error::{Error, Result};
use crate::path::MemPath;

/// One served store: a confined directory handle plus its settings.
#[derive(Debug)]
pub struct FolderStore {
    pub name: String,
    pub read_only: bool,
    pub(super) dir: Dir,
    /// The canonical host path of the store folder: only for keying caches, never shown.
    pub(super) host_key: String,
    /// Test hook: a write stage at which the process stops (see `io::pause`).
    pub(super) pause_at: Option<String>,
    /// Whether this process has swept the temp folder since it opened the store.
    pub(super) swept: AtomicBool,
    /// Temp files of interrupted writes this process removed.
    pub(super) temps_removed: std::sync::atomic::AtomicUsize,
    /// Whether every mutation leaves an intent in the lock file while it runs (history on).
    /// Then a lock file found empty means its last holder finished, temp files included,
    /// and the sweep can be skipped; without intents every acquisition sweeps.
    pub(crate) intents: bool,
}

impl FolderStore {
    /// Opens (and for writable stores, creates) the store directory. This is the one place
    /// that uses ambient authority: everything after goes through the handle.
    pub fn open(name: &str, dir: &Path, read_only: bool) -> Result<FolderStore> {
        if !read_only {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::Open(format!("cannot create store folder {}: {e}", dir.display()))
            })?;
        }
        let handle = Dir::open_ambient_dir(dir, ambient_authority())
            .map_err(|e| Error::Open(format!("cannot open store folder {}: {e}", dir.display())))?;
        let host_key = std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_owned())
            .to_string_lossy()
            .into_owned();
        let store = FolderStore {
            host_key,
            name: name.to_owned(),
            read_only,
            dir: handle,
            // The crash tests' hook exists only in debug builds (what `cargo test` runs):
            // a release binary cannot be stopped mid-write by its environment.
            pause_at: if cfg!(debug_assertions) {
                std::env::var("MEMDIR_TEST_PAUSE").ok()
            } else {
                None
            },
            swept: AtomicBool::new(false),
            temps_removed: Default::default(),
            intents: false,
        };
        if !store.read_only {
            store.recover();
        }
        Ok(store)
    }

    /// The canonical host path of the store, for keying caches outside the store (the
    /// search index). Never put it in a result.
    pub fn host_key(&self) -> &str {
        &self.host_key
    }

    /// Refuses memdir's own path `rel` (under `.memdir/`) when it, or a folder on the way
    /// to it, is a symbolic link: through one, the history log, its objects or the lock
    /// file's intent would be written into memories. A part that does not exist yet is
    /// fine: memdir makes it, as a real folder or file.
    pub(super) fn own_path_unlinked(&self, rel: &str) -> Result<()> {
        let mut end = 0;
        for part in rel.split('/') {
            end += part.len();
            let prefix = &rel[..end];
            end += 1;
            match self.dir.symlink_metadata(prefix) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(Error::Open(format!(
                        "`/{}/{prefix}` is a symbolic link, where memdir keeps its own state: \
                         remove it; nothing was changed",
                        self.name
                    )));
                }
                Ok(_) => {}
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    /// Refuses a memory path that leads into memdir's own state folder (`.memdir`, a name
    /// no memory path may hold) through a symbolic link on the way: the history log, its
    /// objects and the lock are memdir's alone, never a memory to read, write or delete.
    /// A path without a link costs an `lstat` per part; one with a link is looked up on
    /// the host (only to compare where it leads, never to open anything).
    pub(crate) fn clear_of_state(&self, path: &MemPath) -> Result<()> {
        let mut rel = std::path::PathBuf::new();
        let mut existing = None;
        let mut linked = false;
        for seg in &path.segments {
            rel.push(seg);
            match self.dir.symlink_metadata(&rel) {
                Ok(m) => {
                    linked |= m.file_type().is_symlink();
                    existing = Some(rel.clone());
                }
                Err(_) => break,
            }
        }
        let Some(existing) = existing.filter(|_| linked) else {
            return Ok(());
        };
        let root = Path::new(&self.host_key);
        let Ok(real) = std::fs::canonicalize(root.join(existing)) else {
            return Ok(());
        };
        let into_state = real.strip_prefix(root).is_ok_and(|inside| {
            inside.components().next().is_some_and(|first| {
                first
                    .as_os_str()
                    .to_string_lossy()
                    .to_lowercase()
                    .starts_with(crate::path::RESERVED_PREFIX)
            })
        });
        if into_state {
            return Err(Error::StateLink {
                path: path.canonical(),
            });
        }
        Ok(())
    }

    /// Opens `rel` (a path of memdir's own under `.memdir/`); if that fails because its
    /// folder `dir` is missing (first use, or someone removed it), makes `dir` and tries
    /// once more. Writes do not make folders that exist on every call.
    pub(super) fn open_own(
        &self,
        rel: &str,
        options: &cap_std::fs::OpenOptions,
        dir: &str,
    ) -> std::io::Result<cap_std::fs::File> {
        match self.dir.open_with(rel, options) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                match self.dir.create_dir_all(dir) {
                    Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
                    _ => {}
                }
                self.dir.open_with(rel, options)
            }
            other => other,
        }
    }

    /// Removes temp files a crashed writer left behind, if no other process is mutating
    /// right now (otherwise the next mutation does it under the lock).
    pub(super) fn recover(&self) {
        if let Ok(Some(_lock)) = self.try_lock() {
            self.remove_stale_temps();
            self.swept.store(true, Ordering::Relaxed);
        }
    }

    /// How many temp files of interrupted writes this process has removed (at open, when
    /// the lock was free, and at its first mutation).
    pub fn temps_removed(&self) -> usize {
        self.temps_removed.load(Ordering::Relaxed)
    }

    /// Whether an interrupted mutation left its intent in the lock file (the next
    /// mutation repairs the history from it); `None` when another process holds the lock.
    pub fn pending_intent(&self) -> Result<Option<bool>> {
        self.try_lock()?
            .map(|lock| lock.intent().map(|i| !i.is_empty()))
            .transpose()
    }

    /// Metadata of `path`, following symlinks that stay inside the store.
    /// `Ok(None)` when nothing is there.
    pub fn metadata(&self, path: &MemPath) -> Result<Option<EntryMeta>> {
        self.clear_of_state(path)?;
        let rel = rel_path(path);
        match self.dir.metadata(&rel) {
            Ok(m) => Ok(Some(EntryMeta {
                kind: EntryKind::of(&m.file_type()),
                size: m.len(),
                modified: m
                    .modified()
                    .map(|t| t.into_std())
                    .unwrap_or(SystemTime::UNIX_EPOCH),
                stamp: Stamp::of(&m),
            })),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(map_io(path, e)),
        }
    }

    pub(super) fn check_writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly {
                store: self.name.clone(),
                what,
            });
        }
        Ok(())
    }

    pub(crate) fn pause(&self, stage: &str) {
        if self.pause_at.as_deref() == Some(stage) {
            eprintln!("memdir: test pause at {stage}");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}
