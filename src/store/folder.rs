//! A store's folder as the user named it, looked at before its handle is opened: is it
//! there, is it a folder, can memdir write in it. Not for anything inside the store (that
//! goes through the handle).

use std::io::ErrorKind;
use std::path::Path;

use super::{LOCK_FILE, STATE_DIR, Store};

/// What is at a store's folder path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Folder {
    Present,
    Missing,
    /// Something that is not a folder (a file, a FIFO, ...).
    NotAFolder,
}

/// What is at `dir`, following symlinks.
pub fn inspect(dir: &Path) -> std::io::Result<Folder> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(Folder::Present),
        Ok(_) => Ok(Folder::NotAFolder),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Folder::Missing),
        Err(e) => Err(e),
    }
}

/// Makes the folder `dir` (and its missing parents).
pub fn create(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

impl Store {
    /// Whether memdir can write in this store: opens (creating if need be) its own lock
    /// file for writing, through the handle, as the first mutation would.
    pub fn probe_writable(&self) -> std::io::Result<()> {
        let mut options = cap_std::fs::OpenOptions::new();
        options.write(true).create(true);
        self.open_own(LOCK_FILE, &options, STATE_DIR).map(drop)
    }
}
