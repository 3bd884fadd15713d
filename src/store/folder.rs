//! A store's folder as the user named it, looked at before its handle is opened: is it
//! there, is it a folder, can memdir write in it. Not for anything inside the store (that
//! goes through the handle).

use std::io::ErrorKind;
use std::path::Path;

use super::{FolderStore, LOCK_FILE, STATE_DIR};

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

impl FolderStore {
    /// Why this user may not write in this store, if the system refuses it (permissions,
    /// a read-only file system): opens (creating if need be) the store's own lock file
    /// for writing, through the handle, as the first mutation would. Other failures (a
    /// file where `.memdir` belongs, a symlink out) are left to the operations, whose
    /// errors name the memory path.
    pub fn write_denied(&self) -> Option<std::io::Error> {
        let mut options = cap_std::fs::OpenOptions::new();
        options.write(true).create(true);
        let e = self.open_own(LOCK_FILE, &options, STATE_DIR).err()?;
        // cap-std reports an escape as `PermissionDenied` without an OS error code.
        let denied = (e.kind() == ErrorKind::PermissionDenied && e.raw_os_error().is_some())
            || e.kind() == ErrorKind::ReadOnlyFilesystem;
        denied.then_some(e)
    }
}
