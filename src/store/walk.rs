//! Listing folders inside a store. Every folder is opened through the store handle at the
//! moment it is read, so a folder swapped for a symlink to outside is refused, not entered.
//! Symlinked folders are not descended (no cycles); symlinked files are listed when they
//! resolve to a regular file inside the store. Hidden entries, `node_modules` and names
//! that the path policy would refuse are skipped: an agent could not address them.

use std::time::SystemTime;

use cap_std::fs::FileType;

use super::{EntryMeta, FolderStore, Stamp, map_io, rel_path};
use crate::error::{Error, Result};
use crate::path::{MemPath, addressable_name};

/// What an entry is, without following symlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Special(&'static str),
}

impl EntryKind {
    pub fn of(ft: &FileType) -> EntryKind {
        if ft.is_file() {
            EntryKind::File
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_symlink() {
            EntryKind::Symlink
        } else {
            special_kind(ft)
        }
    }
}

/// What kind of special file (neither file, folder nor symlink) this is.
#[cfg(unix)]
fn special_kind(ft: &FileType) -> EntryKind {
    use cap_std::fs::FileTypeExt;
    if ft.is_fifo() {
        EntryKind::Special("FIFO")
    } else if ft.is_socket() {
        EntryKind::Special("socket")
    } else if ft.is_block_device() || ft.is_char_device() {
        EntryKind::Special("device")
    } else {
        EntryKind::Special("special file")
    }
}

/// Windows has no FIFOs, sockets or devices in folders.
#[cfg(not(unix))]
fn special_kind(_: &FileType) -> EntryKind {
    EntryKind::Special("special file")
}

/// One listed entry.
#[derive(Clone, Debug)]
pub struct WalkEntry {
    pub path: MemPath,
    /// `File` or `Dir`; symlinks are reported as what they resolve to, except by
    /// `walk_everything`.
    pub kind: EntryKind,
    pub size: u64,
    pub modified: SystemTime,
    /// For files: size, mtime and inode (of the symlink's target for symlinked files).
    pub stamp: Option<Stamp>,
    /// 1 for the children of the walked folder.
    pub depth: usize,
}

/// Whether a listed name is visible to agents: not hidden, and one a path can name.
pub fn visible_name(name: &str) -> bool {
    !hidden_name(name) && addressable_name(name)
}

/// Whether a name is hidden by convention: `.name`, or a `node_modules` folder.
pub fn hidden_name(name: &str) -> bool {
    name.starts_with('.') || name == "node_modules"
}

impl FolderStore {
    /// Every visible entry below folder `start` down to `max_depth` levels (`None` = all).
    /// Unordered.
    pub fn walk(&self, start: &MemPath, max_depth: Option<usize>) -> Result<Vec<WalkEntry>> {
        self.walk_with(start, max_depth, Reach::Visible)
    }

    /// Every entry below folder `start`, hidden ones and special files included (for
    /// deleting a folder). Symlinks are reported as `Symlink`, never followed.
    pub fn walk_everything(&self, start: &MemPath) -> Result<Vec<WalkEntry>> {
        self.walk_with(start, None, Reach::Everything)
    }

    /// The entries of the folders `dirs` whose names are not UTF-8 (a walk skips them: no
    /// memory path can spell them), each as its folder's path and the name with the bytes
    /// that are not UTF-8 shown as U+FFFD. A folder that cannot be read is passed over.
    pub fn names_not_utf8(&self, dirs: &[MemPath]) -> Vec<String> {
        let mut out = Vec::new();
        for dir in dirs {
            let Ok(entries) = self.dir.read_dir(rel_path(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_str().is_none() {
                    let base = dir.canonical();
                    out.push(format!(
                        "{}/{}",
                        base.trim_end_matches('/'),
                        name.to_string_lossy()
                    ));
                }
            }
        }
        out.sort();
        out
    }

    fn walk_with(
        &self,
        start: &MemPath,
        max_depth: Option<usize>,
        reach: Reach,
    ) -> Result<Vec<WalkEntry>> {
        self.require_folder(start)?;
        let mut out = Vec::new();
        let mut pending = vec![(start.clone(), 0usize)];
        while let Some((dir, depth)) = pending.pop() {
            let entries = match self.dir.read_dir(rel_path(&dir)) {
                Ok(entries) => entries,
                // A folder removed or swapped while we walk is skipped, never followed.
                Err(e) if dir != *start => {
                    tracing::debug!(path = %dir.canonical(), error = %e, "skipped a folder during a walk");
                    continue;
                }
                Err(e) => return Err(map_io(&dir, e)),
            };
            for entry in entries.flatten() {
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                if reach == Reach::Visible && !visible_name(&name) {
                    continue;
                }
                let Some(found) = self.describe(&entry, dir.child(&name), depth + 1, reach) else {
                    continue;
                };
                if found.kind == EntryKind::Dir && max_depth.is_none_or(|m| depth + 1 < m) {
                    pending.push((found.path.clone(), depth + 1));
                }
                out.push(found);
            }
        }
        Ok(out)
    }

    /// `NotAFolder` or `NotFound` unless `start` is a folder.
    fn require_folder(&self, start: &MemPath) -> Result<()> {
        match self.metadata(start)? {
            Some(EntryMeta {
                kind: EntryKind::Dir,
                ..
            }) => Ok(()),
            Some(_) => Err(Error::NotAFolder {
                path: start.canonical(),
            }),
            None => Err(Error::NotFound {
                path: start.canonical(),
            }),
        }
    }

    /// What a walk reports of one entry at `path`; `None` to leave it out (a special
    /// file, a symlink to anything but a file, or one that vanished meanwhile), except
    /// that `Reach::Everything` reports symlinks and special files as they are.
    fn describe(
        &self,
        entry: &cap_std::fs::DirEntry,
        path: MemPath,
        depth: usize,
        reach: Reach,
    ) -> Option<WalkEntry> {
        let file_type = entry.file_type().ok()?;
        let metadata = match (EntryKind::of(&file_type), reach) {
            (kind @ (EntryKind::Symlink | EntryKind::Special(_)), Reach::Everything)
            | (kind @ EntryKind::Dir, _) => {
                return Some(WalkEntry {
                    path,
                    kind,
                    size: 0,
                    modified: SystemTime::UNIX_EPOCH,
                    stamp: None,
                    depth,
                });
            }
            // A symlink is shown as the file it resolves to, inside the store.
            (EntryKind::Symlink, Reach::Visible) => {
                let target = self.dir.metadata(rel_path(&path)).ok()?;
                if !target.is_file() {
                    return None;
                }
                target
            }
            (EntryKind::File, _) => entry.metadata().ok()?,
            (EntryKind::Special(_), Reach::Visible) => return None,
        };
        Some(WalkEntry {
            kind: EntryKind::File,
            size: metadata.len(),
            modified: modified_of(&metadata),
            stamp: Some(Stamp::of(&metadata)),
            path,
            depth,
        })
    }
}

/// Which entries a walk reports.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// What agents may see: no hidden names, symlinks to files followed, others left out.
    Visible,
    /// Everything, as it is on disk (for deleting a folder).
    Everything,
}

fn modified_of(m: &cap_std::fs::Metadata) -> SystemTime {
    m.modified()
        .map(|t| t.into_std())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}
