//! Cross-process serialisation of mutations: an exclusive lock on `.memdir/lock` through
//! std's `File::lock` (`flock` on Unix, `LockFileEx` on Windows, where the lock is
//! mandatory: only the holder's own handle, which reads and writes the intent, may use
//! the file meanwhile).
//! Each acquisition opens the file anew (its own open file description), so threads of one
//! process exclude each other as processes do. The kernel drops the lock when its holder
//! dies, so a crashed writer never blocks the others.
//!
//! The lock file's content is the *intent* of the mutation in progress (the history
//! records it is about to append): only the holder writes it, the next holder reads it to
//! complete what a crash interrupted. Rewriting one existing file costs far less than
//! creating and removing an intent file per mutation.

use std::sync::atomic::Ordering;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::OpenOptions;

use super::{FolderStore, LOCK_FILE, STATE_DIR, platform};
use crate::error::{Error, Result};
use crate::path::MemPath;

/// How many times a lock is taken again when its file was removed meanwhile before the
/// lock gives up (someone removing the state folder over and over).
const LOCK_ATTEMPTS: u32 = 100;

/// Held while one mutation runs; dropping it releases the lock.
#[derive(Debug)]
pub struct FolderLock {
    _file: std::fs::File,
}

impl FolderLock {
    /// The intent left in the lock file (empty when the last holder finished cleanly).
    pub fn intent(&self) -> Result<Vec<u8>> {
        let len = self._file.metadata().map_err(lock_io)?.len();
        let mut bytes = vec![0; len as usize];
        platform::read_exact_at(&self._file, &mut bytes, 0).map_err(lock_io)?;
        Ok(bytes)
    }

    /// Records the intent of the mutation about to happen (not synced: it only has to
    /// survive a crash of this process).
    pub fn set_intent(&self, bytes: &[u8]) -> Result<()> {
        self._file.set_len(0).map_err(lock_io)?;
        platform::write_all_at(&self._file, bytes, 0).map_err(lock_io)
    }

    /// The mutation finished (or never started): no intent.
    pub fn clear_intent(&self) -> Result<()> {
        self._file.set_len(0).map_err(lock_io)
    }
}

fn lock_io(e: std::io::Error) -> Error {
    Error::io(super::LOCK_FILE, &e)
}

impl FolderStore {
    /// Blocks until this process holds the store's mutation lock, then clears temp files
    /// that a crashed writer left: at this process's first acquisition, whenever the lock
    /// file holds an intent (its last holder died mid-mutation), and at every acquisition
    /// when mutations leave no intent (history off). A temp file exists only between an
    /// intent being written and cleared, so an empty lock file means there is none.
    pub fn lock(&self) -> Result<FolderLock> {
        self.check_writable("changing memories")?;
        let mut attempts = 0;
        let file = loop {
            let file = self.open_lock_file()?;
            file.lock().map_err(|e| self.lock_error(e))?;
            if self.is_lock_file(&file) {
                break file;
            }
            attempts += 1;
            if attempts == LOCK_ATTEMPTS {
                return Err(Error::Io {
                    path: format!("/{}/{LOCK_FILE}", self.name),
                    source: std::io::Error::other(format!(
                        "it was removed or replaced each of {LOCK_ATTEMPTS} times it was locked"
                    )),
                });
            }
        };
        self.pause("locked");
        let interrupted = || file.metadata().map_or(true, |m| m.len() > 0);
        if !self.intents || !self.swept.load(Ordering::Relaxed) || interrupted() {
            self.remove_stale_temps();
            self.swept.store(true, Ordering::Relaxed);
        }
        Ok(FolderLock { _file: file })
    }

    /// Takes the lock only if it is free right now.
    pub fn try_lock(&self) -> Result<Option<FolderLock>> {
        let file = self.open_lock_file()?;
        match file.try_lock() {
            Ok(()) if self.is_lock_file(&file) => Ok(Some(FolderLock { _file: file })),
            Ok(()) => Ok(None),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(self.lock_error(e)),
        }
    }

    /// Whether the file just locked is still the one at `.memdir/lock`. Someone may have
    /// removed the state folder by hand while this process waited for the lock: a lock on
    /// the removed file excludes no one who opens the path anew, so the caller opens
    /// again. (Windows refuses to remove an open file, so there it always is.)
    #[cfg(unix)]
    fn is_lock_file(&self, file: &std::fs::File) -> bool {
        use cap_std::fs::MetadataExt as _;
        use std::os::unix::fs::MetadataExt as _;
        match (file.metadata(), self.dir.symlink_metadata(LOCK_FILE)) {
            (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
            (_, Err(e)) if super::is_missing(&e) => false,
            // Nothing to compare: go on as without the check.
            _ => true,
        }
    }

    #[cfg(not(unix))]
    fn is_lock_file(&self, _file: &std::fs::File) -> bool {
        true
    }

    fn open_lock_file(&self) -> Result<std::fs::File> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true);
        // The lock file holds the intent: never write it through a link to a memory.
        self.own_path_unlinked(LOCK_FILE)?;
        options.follow(FollowSymlinks::No);
        let file = self
            .open_own(LOCK_FILE, &options, STATE_DIR)
            .map_err(|e| self.lock_error(e))?;
        Ok(file.into_std())
    }

    fn lock_error(&self, e: std::io::Error) -> Error {
        // The state folder is made when missing, so "not found" here means something else
        // is in its way (a file named `.memdir`): say where, not that the store is gone.
        if super::is_missing(&e) {
            return Error::io(format!("/{}/{STATE_DIR}", self.name), &e);
        }
        super::map_io(&MemPath::root(0, &self.name), e)
    }
}
