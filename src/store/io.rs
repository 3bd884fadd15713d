//! Reading and durably writing single files inside a store.
//!
//! Reads open non-blocking and check the opened handle (`fstat`): only regular files with
//! one link are read, so a FIFO cannot hang the server and a hard link cannot alias data
//! outside. Writes go temp file → write → fsync → rename into place → fsync folder, so a
//! crash leaves the old content or the new, never a torn file; a create-only write renames
//! without replacing (`platform::rename_noreplace`), so exactly one of several racing
//! creators wins.

use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use cap_std::fs::{Dir, OpenOptions};

use super::platform::{self, dir_options, sync_dir};
use super::{EntryKind, FolderStore, Stamp, TEMP_DIR, TEMP_PREFIX, map_io, rel_path, release};
use crate::error::{Error, MoveFault, Result};
use crate::path::MemPath;

/// Largest file the server will read at all (people may put big files in a store; agents
/// page through them with `view_range`).
pub const READ_LIMIT: u64 = 16 * 1024 * 1024;

/// A file's bytes and metadata, read through one handle.
#[derive(Debug)]
pub struct FileData {
    pub bytes: Vec<u8>,
    pub modified: SystemTime,
    /// The stamp of the handle the bytes were read through.
    pub stamp: Stamp,
}

/// Whether a write may replace an existing memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Create or replace.
    Replace,
    /// Create only; fails with `AlreadyExists` if anything is at the path.
    CreateNew,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FolderStore {
    /// Reads a regular file, following symlinks only while they stay inside the store.
    pub fn read(&self, path: &MemPath) -> Result<FileData> {
        self.clear_of_state(path)?;
        let file = self
            .dir
            .open_with(rel_path(path), &platform::read_options())
            .map_err(|e| map_io(path, e))?;
        let meta = file.metadata().map_err(|e| map_io(path, e))?;
        let links = match platform::nlink(&meta) {
            2 if self.linking_in(&file, &meta) => 1,
            links => links,
        };
        check_regular(path, &EntryKind::of(&meta.file_type()), links)?;
        if meta.len() > READ_LIMIT {
            return Err(Error::TooLarge {
                path: path.canonical(),
                size: meta.len(),
                max: READ_LIMIT,
            });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(READ_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| map_io(path, e))?;
        Ok(FileData {
            bytes,
            stamp: Stamp::of(&meta),
            modified: meta
                .modified()
                .map(|t| t.into_std())
                .unwrap_or(SystemTime::UNIX_EPOCH),
        })
    }

    /// Whether the second link of an opened file with two is a create-only write of another
    /// process caught between its two steps (`platform::rename_noreplace` without
    /// `RENAME_NOREPLACE`: the temp file is linked to its name, then unlinked). Either the
    /// temp name is found with the file's inode, or it is gone, and then the file has
    /// one link by the time the folder has been read.
    fn linking_in(&self, file: &cap_std::fs::File, meta: &cap_std::fs::Metadata) -> bool {
        let Ok(temps) = self.dir.open_dir(TEMP_DIR) else {
            return false;
        };
        let Ok(entries) = temps.entries() else {
            return false;
        };
        let ino = platform::ino(meta);
        let temp_holds_it = entries.flatten().any(|entry| {
            entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
                && entry
                    .metadata()
                    .is_ok_and(|m| m.is_file() && platform::ino(&m) == ino)
        });
        temp_holds_it || file.metadata().is_ok_and(|m| platform::nlink(&m) == 1)
    }

    /// Durably writes `bytes` at `path`, creating parent folders, and returns the stamp of
    /// the new file. The caller holds the store lock. A symlink at the destination is
    /// replaced, never followed.
    pub fn write(&self, path: &MemPath, bytes: &[u8], mode: WriteMode) -> Result<Stamp> {
        self.write_dated(path, bytes, mode, None)
    }

    /// [`write`](Self::write), the new file's modification time `modified` when given (an
    /// import keeps a memory's age).
    pub fn write_dated(
        &self,
        path: &MemPath,
        bytes: &[u8],
        mode: WriteMode,
        modified: Option<std::time::SystemTime>,
    ) -> Result<Stamp> {
        self.check_writable("writing")?;
        let name = target_name(path)?;
        let parent = self.ensure_parent(path)?;
        let mut replaced = None;
        if let Some((kind, links)) = entry_at(&parent, name, path)? {
            match (mode, kind) {
                (WriteMode::CreateNew, _) => {
                    return Err(Error::AlreadyExists {
                        path: path.canonical(),
                    });
                }
                (_, EntryKind::Dir) => {
                    return Err(Error::IsFolder {
                        path: path.canonical(),
                    });
                }
                (_, EntryKind::Symlink) => {}
                (_, kind) => {
                    check_regular(path, &kind, links)?;
                    replaced = release::hold(&parent, name);
                }
            }
        }
        let temp_dir = self.temp_dir(path)?;
        let temp_name = format!(
            "{TEMP_PREFIX}{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut result = self.write_temp_and_rename(
            &temp_dir, &temp_name, &parent, name, bytes, mode, path, modified,
        );
        // The space of files replaced or deleted just before may still be on its way back
        // (see `release`): once that is done, try once more.
        if matches!(result, Err(Error::StorageFull { .. })) && release::settle() {
            let _ = temp_dir.remove_file(&temp_name);
            result = self.write_temp_and_rename(
                &temp_dir, &temp_name, &parent, name, bytes, mode, path, modified,
            );
        }
        match &result {
            Ok(_) => {
                if let Some(old) = replaced {
                    release::release_later(old);
                }
            }
            Err(_) => {
                let _ = temp_dir.remove_file(&temp_name);
            }
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn write_temp_and_rename(
        &self,
        temp_dir: &Dir,
        temp_name: &str,
        parent: &Dir,
        name: &str,
        bytes: &[u8],
        mode: WriteMode,
        path: &MemPath,
        modified: Option<std::time::SystemTime>,
    ) -> Result<Stamp> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut temp = temp_dir
            .open_with(temp_name, &options)
            .map_err(|e| map_io(path, e))?;
        temp.write_all(bytes).map_err(|e| map_io(path, e))?;
        if let Some(at) = modified {
            let handle = temp.try_clone().map_err(|e| map_io(path, e))?.into_std();
            handle.set_modified(at).map_err(|e| map_io(path, e))?;
        }
        self.pause("after-temp-write");
        temp.sync_all().map_err(|e| map_io(path, e))?;
        // Rename keeps inode and mtime: this is the stamp the file will have in place.
        let stamp = Stamp::of(&temp.metadata().map_err(|e| map_io(path, e))?);
        drop(temp);
        self.pause("after-fsync");
        let renamed = match mode {
            WriteMode::Replace => platform::rename_replace(temp_dir, temp_name, parent, name),
            WriteMode::CreateNew => platform::rename_noreplace(temp_dir, temp_name, parent, name),
        };
        renamed.map_err(|e| map_io(path, e))?;
        self.pause("after-rename");
        sync_dir(parent).map_err(|e| map_io(path, e))?;
        Ok(stamp)
    }

    /// Moves a file or folder to a free destination (never replaces), creating the
    /// destination's parent folders. The caller holds the store lock.
    pub fn rename(&self, from: &MemPath, to: &MemPath) -> Result<()> {
        self.check_writable("renaming")?;
        let from_name = target_name(from)?;
        let to_name = target_name(to)?;
        let from_parent = self.open_dir(&from.parent().unwrap_or_else(|| from.clone()), from)?;
        match entry_at(&from_parent, from_name, from)? {
            None => {
                return Err(Error::NotFound {
                    path: from.canonical(),
                });
            }
            Some((kind @ (EntryKind::File | EntryKind::Special(_)), links)) => {
                check_regular(from, &kind, links)?
            }
            Some(_) => {}
        }
        if to.starts_with(from) {
            return Err(Error::Move(MoveFault::IntoItself {
                from: from.canonical(),
                to: to.canonical(),
            }));
        }
        let to_parent = self.ensure_parent(to)?;
        platform::rename_noreplace(&from_parent, from_name, &to_parent, to_name)
            .map_err(|e| map_io(to, e))?;
        sync_dir(&to_parent).map_err(|e| map_io(to, e))?;
        sync_dir(&from_parent).map_err(|e| map_io(from, e))?;
        Ok(())
    }

    /// Removes one non-folder entry (a file, or a symlink itself). The caller holds the lock.
    pub fn remove_file(&self, path: &MemPath) -> Result<()> {
        self.check_writable("deleting")?;
        let name = target_name(path)?;
        let parent = self.open_dir(&path.parent().unwrap_or_else(|| path.clone()), path)?;
        match entry_at(&parent, name, path)? {
            None => Err(Error::NotFound {
                path: path.canonical(),
            }),
            Some((EntryKind::Dir, _)) => Err(Error::IsFolder {
                path: path.canonical(),
            }),
            Some(_) => {
                let removed = release::hold(&parent, name);
                parent.remove_file(name).map_err(|e| map_io(path, e))?;
                sync_dir(&parent).map_err(|e| map_io(path, e))?;
                if let Some(old) = removed {
                    release::release_later(old);
                }
                Ok(())
            }
        }
    }

    /// Removes an empty folder. The caller holds the lock.
    pub fn remove_empty_dir(&self, path: &MemPath) -> Result<()> {
        self.check_writable("deleting")?;
        let name = target_name(path)?;
        let parent = self.open_dir(&path.parent().unwrap_or_else(|| path.clone()), path)?;
        parent.remove_dir(name).map_err(|e| map_io(path, e))?;
        sync_dir(&parent).map_err(|e| map_io(path, e))?;
        Ok(())
    }

    /// The kind of entry at `path` without following a final symlink; `None` if absent.
    pub fn entry_kind(&self, path: &MemPath) -> Result<Option<EntryKind>> {
        let Some(parent_path) = path.parent() else {
            return Ok(Some(EntryKind::Dir));
        };
        let parent = match self.open_dir(&parent_path, path) {
            Ok(p) => p,
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(entry_at(&parent, target_name(path)?, path)?.map(|(k, _)| k))
    }

    /// Opens folder `dir` for `*at` calls and fsync (readable, not `O_PATH`).
    fn open_dir(&self, dir: &MemPath, for_path: &MemPath) -> Result<Dir> {
        self.clear_of_state(dir).map_err(|_| Error::StateLink {
            path: for_path.canonical(),
        })?;
        let file = match self.dir.open_with(rel_path(dir), &dir_options()) {
            Ok(file) => file,
            // Something other than a folder is there (a file, a FIFO, a device), or on
            // the way to it: the first is named as such, the second is a missing path.
            Err(e) if platform::is_not_dir(&e) => {
                return Err(match self.dir.metadata(rel_path(dir)) {
                    Ok(meta) if !meta.is_dir() => Error::NotAFolder {
                        path: dir.canonical(),
                    },
                    _ => map_io(for_path, e),
                });
            }
            Err(e) => return Err(map_io(for_path, e)),
        };
        if !file.metadata().map_err(|e| map_io(for_path, e))?.is_dir() {
            return Err(Error::NotAFolder {
                path: dir.canonical(),
            });
        }
        Ok(Dir::from_std_file(file.into_std()))
    }

    /// Creates the parent folders of `path` (each new entry fsynced into its parent) and
    /// opens the immediate parent.
    fn ensure_parent(&self, path: &MemPath) -> Result<Dir> {
        let parent = path.parent().unwrap_or_else(|| path.clone());
        // Before any folder is made: one made through a link would land in `.memdir`.
        self.clear_of_state(&parent).map_err(|_| Error::StateLink {
            path: path.canonical(),
        })?;
        for depth in 1..=parent.segments.len() {
            let mut sub = parent.clone();
            sub.segments.truncate(depth);
            match self.dir.create_dir(rel_path(&sub)) {
                Ok(()) => {
                    let above =
                        self.open_dir(&sub.parent().unwrap_or_else(|| sub.clone()), path)?;
                    sync_dir(&above).map_err(|e| map_io(path, e))?;
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(map_io(&sub, e)),
            }
        }
        self.open_dir(&parent, path)
    }

    /// The temp folder, made on first use (or again, if someone removed it).
    fn temp_dir(&self, for_path: &MemPath) -> Result<Dir> {
        self.own_path_unlinked(TEMP_DIR)?;
        let file = self
            .open_own(TEMP_DIR, &dir_options(), TEMP_DIR)
            .map_err(|e| map_io(for_path, e))?;
        Ok(Dir::from_std_file(file.into_std()))
    }

    /// How many temp files of interrupted writes the store holds (a read-only store keeps
    /// them: it is never changed).
    pub fn temps_left(&self) -> usize {
        let Ok(dir) = self.dir.open_dir(TEMP_DIR) else {
            return 0;
        };
        let Ok(entries) = dir.entries() else { return 0 };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(TEMP_PREFIX))
            .count()
    }

    /// Removes every temp file. Only called while holding the store lock, when no writer
    /// can be between creating a temp file and renaming it.
    pub(super) fn remove_stale_temps(&self) {
        let Ok(dir) = self.dir.open_dir(TEMP_DIR) else {
            return;
        };
        let Ok(entries) = dir.entries() else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(TEMP_PREFIX) && dir.remove_file(&name).is_ok() {
                self.temps_removed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(store = %self.name, "removed a temp file left by an interrupted write");
            }
        }
    }
}

/// The last segment of a mutable path; the store root is never a target.
fn target_name(path: &MemPath) -> Result<&str> {
    path.name().ok_or_else(|| {
        Error::invalid_path(
            &path.canonical(),
            "the store folder itself cannot be written, edited, moved or deleted",
        )
    })
}

/// What is at `name` in `parent`, not following a final symlink: kind and link count.
fn entry_at(parent: &Dir, name: &str, path: &MemPath) -> Result<Option<(EntryKind, u64)>> {
    match parent.symlink_metadata(name) {
        Ok(m) => Ok(Some((EntryKind::of(&m.file_type()), platform::nlink(&m)))),
        Err(e) if super::is_missing(&e) => Ok(None),
        Err(e) => Err(map_io(path, e)),
    }
}

/// Regular files with a single link only.
fn check_regular(path: &MemPath, kind: &EntryKind, links: u64) -> Result<()> {
    match kind {
        EntryKind::File if links > 1 => Err(Error::HardLinked {
            path: path.canonical(),
            links,
        }),
        EntryKind::File => Ok(()),
        EntryKind::Dir => Err(Error::IsFolder {
            path: path.canonical(),
        }),
        EntryKind::Symlink => Err(Error::SpecialFile {
            path: path.canonical(),
            kind: "symlink",
        }),
        EntryKind::Special(kind) => Err(Error::SpecialFile {
            path: path.canonical(),
            kind,
        }),
    }
}
