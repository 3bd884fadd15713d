//! The only door to the file system. A [`Store`] is a directory handle (capability
//! style, `cap-std`): every open, create, rename, list and delete resolves relative to it,
//! component by component and beneath it (`openat2(RESOLVE_BENEATH)` on Linux), at the
//! moment of the operation. Nothing else in the crate calls `std::fs` on store data.
//!
//! Layout: `io` reads and durably writes single files, `walk` lists folders, `lock`
//! serialises mutations across processes, `watch` notices changes made by others,
//! `platform` holds what differs between operating systems (Linux fast paths, portable
//! paths for macOS and Windows, forced on Linux by the `portable` feature), `cache` where
//! search indexes live on the host, `seam` the one `Store` over a folder or (`postgres`)
//! a database. Layer 1 of the path policy is `crate::path`.

// The door to the file system, the user's folders and PostgreSQL (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod cache;
pub mod config;
pub mod folder;
mod io;
mod local;
mod lock;
pub mod model_file;
mod platform;
pub mod postgres;
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

mod seam;

use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::error::Error;
use crate::path::MemPath;

pub use cache::{IndexFile, IndexLocation};
pub use io::{FileData, WriteMode};
pub use local::FolderStore;
pub use lock::FolderLock;
pub use postgres::PgStore;
pub use seam::{Store, StoreLock, Watcher};
pub use walk::{EntryKind, WalkEntry, hidden_name, visible_name};

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
    pub location: Location,
    pub read_only: bool,
    pub description: Option<String>,
}

/// What holds a store's memories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A folder on this machine.
    Folder(PathBuf),
    /// A PostgreSQL database, by its libpq URL (which may hold a password: never show it;
    /// [`postgres::redact_url`] gives the form to print).
    Postgres(String),
}

impl Location {
    /// The folder, for a folder store.
    pub fn folder(&self) -> Option<&std::path::Path> {
        match self {
            Location::Folder(dir) => Some(dir),
            Location::Postgres(_) => None,
        }
    }
}

impl std::fmt::Display for Location {
    /// The location as a person may see it: a folder's path, or the database URL without
    /// its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Folder(dir) => write!(f, "{}", dir.display()),
            Location::Postgres(url) => f.write_str(&postgres::redact_url(url)),
        }
    }
}

/// What changed in a watched store since the last drain.
#[derive(Debug, Default)]
pub struct Changes {
    /// Paths (files or folders) created, changed, moved or removed.
    pub paths: Vec<MemPath>,
    /// Events were dropped (or a folder could not be watched): trust nothing, rescan.
    pub overflow: bool,
}

/// What a watcher's caller found at a path it was told had changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    Nothing,
    Folder,
    File(Stamp),
}

/// What identifies a version of a file without reading it: size, modification time
/// (nanoseconds since the epoch) and inode (an atomic replace changes it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
