//! The only door to the file system. A [`Store`] is a directory handle (capability
//! style, `cap-std`): every open, create, rename, list and delete resolves relative to it,
//! component by component and beneath it (`openat2(RESOLVE_BENEATH)` on Linux), at the
//! moment of the operation. Nothing else in the crate calls `std::fs` on store data.
//!
//! Layout: `io` reads and durably writes single files, `walk` lists folders, `lock`
//! serialises mutations across processes, `watch` notices changes made by others,
//! `platform` holds what differs between operating systems (Linux fast paths, portable
//! paths for macOS and Windows, forced on Linux by the `portable` feature). Layer 1 of the
//! path policy is `crate::path`.

pub mod config;
pub mod folder;
mod io;
mod lock;
mod platform;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod release;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
#[path = "release_off.rs"]
mod release;
mod state;
mod walk;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod watch;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
#[path = "watch_poll.rs"]
mod watch;

use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::{Error, Result};
use crate::path::MemPath;

pub use io::{FileData, WriteMode};
pub use lock::StoreLock;
pub use walk::{EntryKind, WalkEntry, hidden_name, visible_name};
pub use watch::Watcher;

/// Whether this build uses the Linux-only mechanisms (inotify, `renameat2`, deferred
/// inode release) or the portable ones (see `platform`).
pub const LINUX_FAST: bool = platform::LINUX_FAST;

/// Name of the reserved state folder inside every store.
pub const STATE_DIR: &str = ".memdir";
/// Temp files live here while being written; anything found here while holding the store
/// lock is a leftover of a crashed writer.
const TEMP_DIR: &str = ".memdir/tmp";
const LOCK_FILE: &str = ".memdir/lock";
/// Prefix of temp-file names (reserved by the path policy).
const TEMP_PREFIX: &str = ".memdir-tmp-";

/// How a store is opened.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub name: String,
    pub dir: PathBuf,
    pub read_only: bool,
    pub description: Option<String>,
}

/// One served store: a confined directory handle plus its settings.
#[derive(Debug)]
pub struct Store {
    pub name: String,
    pub read_only: bool,
    pub description: Option<String>,
    dir: Dir,
    /// The canonical host path of the store folder: only for keying caches, never shown.
    host_key: String,
    /// Test hook: a write stage at which the process stops (see `io::pause`).
    pause_at: Option<String>,
    /// Whether this process has swept the temp folder since it opened the store.
    swept: AtomicBool,
    /// Temp files of interrupted writes this process removed.
    temps_removed: std::sync::atomic::AtomicUsize,
    /// Whether every mutation leaves an intent in the lock file while it runs (history on).
    /// Then a lock file found empty means its last holder finished, temp files included,
    /// and the sweep can be skipped; without intents every acquisition sweeps.
    pub(crate) intents: bool,
}

/// What changed in a watched store since the last drain.
#[derive(Debug, Default)]
pub struct Changes {
    /// Paths (files or folders) created, changed, moved or removed.
    pub paths: Vec<MemPath>,
    /// Events were dropped (or a folder could not be watched): trust nothing, rescan.
    pub overflow: bool,
}

/// What identifies a version of a file without reading it: size, modification time
/// (nanoseconds since the epoch) and inode (an atomic replace changes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ino: u64,
}

impl Stamp {
    fn of(meta: &cap_std::fs::Metadata) -> Stamp {
        Stamp {
            size: meta.len(),
            mtime_ns: platform::mtime_ns(meta),
            ino: platform::ino(meta),
        }
    }
}

/// Metadata of one entry, as the store sees it (following in-store symlinks).
#[derive(Clone, Debug)]
pub struct EntryMeta {
    pub kind: EntryKind,
    pub size: u64,
    pub modified: SystemTime,
    pub stamp: Stamp,
}

impl Store {
    /// Opens (and for writable stores, creates) the store directory. This is the one place
    /// that uses ambient authority: everything after goes through the handle.
    pub fn open(config: &StoreConfig) -> anyhow::Result<Store> {
        if !config.read_only {
            std::fs::create_dir_all(&config.dir).map_err(|e| {
                anyhow::anyhow!("cannot create store folder {}: {e}", config.dir.display())
            })?;
        }
        let dir = Dir::open_ambient_dir(&config.dir, ambient_authority()).map_err(|e| {
            anyhow::anyhow!("cannot open store folder {}: {e}", config.dir.display())
        })?;
        let host_key = std::fs::canonicalize(&config.dir)
            .unwrap_or_else(|_| config.dir.clone())
            .to_string_lossy()
            .into_owned();
        let store = Store {
            host_key,
            name: config.name.clone(),
            read_only: config.read_only,
            description: config.description.clone(),
            dir,
            pause_at: std::env::var("MEMDIR_TEST_PAUSE").ok(),
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

    /// Opens `rel` (a path of memdir's own under `.memdir/`); if that fails because its
    /// folder `dir` is missing (first use, or someone removed it), makes `dir` and tries
    /// once more. Writes do not make folders that exist on every call.
    fn open_own(
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
    fn recover(&self) {
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

    fn check_writable(&self, what: &'static str) -> Result<()> {
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

/// The handle-relative path of a memory path (`.` for the store root).
fn rel_path(path: &MemPath) -> PathBuf {
    if path.segments.is_empty() {
        PathBuf::from(".")
    } else {
        path.segments.iter().collect()
    }
}

fn is_missing(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::NotFound || platform::is_not_dir(e)
}

/// The one constructor of [`Error::Escape`]: cap-std reports a path that would leave the
/// directory as `PermissionDenied` without an OS error code, unlike a real `EACCES`.
fn escape(path: &MemPath, e: &std::io::Error) -> Option<Error> {
    let loops = platform::is_loop_or_crossing(e);
    if (e.kind() == ErrorKind::PermissionDenied && e.raw_os_error().is_none()) || loops {
        Some(Error::Escape {
            path: path.canonical(),
        })
    } else {
        None
    }
}

/// Maps an OS error on `path` to the library error, without any host path in it.
fn map_io(path: &MemPath, e: std::io::Error) -> Error {
    if let Some(err) = escape(path, &e) {
        return err;
    }
    if is_missing(&e) {
        return Error::NotFound {
            path: path.canonical(),
        };
    }
    match e.kind() {
        ErrorKind::AlreadyExists => Error::AlreadyExists {
            path: path.canonical(),
        },
        ErrorKind::IsADirectory => Error::IsFolder {
            path: path.canonical(),
        },
        _ => Error::io(path.canonical(), &e),
    }
}
