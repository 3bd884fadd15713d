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
        self.walk_with(start, max_depth, false)
    }

    /// Every entry below folder `start`, hidden ones and special files included (for
    /// deleting a folder). Symlinks are reported as `Symlink`, never followed.
    pub fn walk_everything(&self, start: &MemPath) -> Result<Vec<WalkEntry>> {
        self.walk_with(start, None, true)
    }

    fn walk_with(
        &self,
        start: &MemPath,
        max_depth: Option<usize>,
        everything: bool,
    ) -> Result<Vec<WalkEntry>> {
        match self.metadata(start)? {
            Some(EntryMeta {
                kind: EntryKind::Dir,
                ..
            }) => {}
            Some(_) => {
                return Err(Error::NotAFolder {
                    path: start.canonical(),
                });
            }
            None => {
                return Err(Error::NotFound {
                    path: start.canonical(),
                });
            }
        }
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
                if !everything && !visible_name(&name) {
                    continue;
                }
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                let path = dir.child(&name);
                let epoch = SystemTime::UNIX_EPOCH;
                let (kind, size, modified, stamp) = match EntryKind::of(&file_type) {
                    EntryKind::Symlink if everything => (EntryKind::Symlink, 0, epoch, None),
                    EntryKind::Special(kind) if everything => {
                        (EntryKind::Special(kind), 0, epoch, None)
                    }
                    EntryKind::Symlink => match self.dir.metadata(rel_path(&path)) {
                        Ok(m) if m.is_file() => (
                            EntryKind::File,
                            m.len(),
                            modified_of(&m),
                            Some(Stamp::of(&m)),
                        ),
                        _ => continue,
                    },
                    EntryKind::Dir => (EntryKind::Dir, 0, epoch, None),
                    EntryKind::File => match entry.metadata() {
                        Ok(m) => (
                            EntryKind::File,
                            m.len(),
                            modified_of(&m),
                            Some(Stamp::of(&m)),
                        ),
                        Err(_) => continue,
                    },
                    EntryKind::Special(_) => continue,
                };
                if kind == EntryKind::Dir && max_depth.is_none_or(|m| depth + 1 < m) {
                    pending.push((path.clone(), depth + 1));
                }
                out.push(WalkEntry {
                    path,
                    kind,
                    size,
                    modified,
                    stamp,
                    depth: depth + 1,
                });
            }
        }
        Ok(out)
    }
}

fn modified_of(m: &cap_std::fs::Metadata) -> SystemTime {
    m.modified()
        .map(|t| t.into_std())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}
