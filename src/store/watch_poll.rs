//! Noticing changes made outside this process (an editor, `git pull`, `rm`, another memdir
//! process) by comparing stat walks: the portable watcher, used on macOS and Windows, and
//! on Linux with the `portable` feature (the Linux path is inotify, `watch.rs`).
//!
//! A drain walks the store through its confined handle, as a listing does, and compares
//! each visible entry with what the previous look saw: a folder, or a file's stamp (size,
//! modification time in nanoseconds, inode). So, as with inotify, every change completed
//! before a search began is seen by it (read-your-writes), and nothing leaves the store.
//! A cross-platform event library (FSEvents, `ReadDirectoryChangesW`) was not used: it
//! delivers events on its own thread some time after the change (FSEvents coalesces over a
//! latency window), so a search right after a write could miss it, and it watches host
//! paths rather than confined handles. The price is a stat walk per drain (one per search,
//! and one per subscription poll while a client wants notifications); a file rewritten in
//! place with the same size within the file system's timestamp granularity is missed, as
//! it is by the index's own stamps.

use std::collections::HashMap;

use super::walk::EntryKind;
use super::{Changes, FolderStore, Observed, Stamp};
use crate::path::MemPath;

/// What each visible entry of a store looked like at the last look.
#[derive(Debug, Default)]
pub struct Watcher {
    seen: HashMap<MemPath, Seen>,
    /// A look failed (the store folder could not be walked): changes may be missed.
    degraded: bool,
}

/// One entry as last seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Folder,
    File(Option<Stamp>),
}

impl Watcher {
    pub fn new() -> std::io::Result<Watcher> {
        Ok(Watcher::default())
    }

    /// Walks store folder `root` and reports what differs from the last look: entries
    /// that appeared, went or changed stamp. A walk that fails reports an overflow, so the
    /// caller rescans.
    pub fn drain(&mut self, store: &FolderStore, root: &MemPath) -> Changes {
        let mut changes = Changes {
            overflow: std::mem::take(&mut self.degraded),
            ..Changes::default()
        };
        let Some(now) = look(store, root) else {
            changes.overflow = true;
            return changes;
        };
        for (path, seen) in &now {
            if self.seen.get(path) != Some(seen) {
                changes.paths.push(path.clone());
            }
        }
        for path in self.seen.keys() {
            if path.starts_with(root) && !now.contains_key(path) {
                changes.paths.push(path.clone());
            }
        }
        self.seen.retain(|path, _| !path.starts_with(root));
        self.seen.extend(now);
        changes
    }
}

impl Watcher {
    /// Takes what a caller found at `path` after a drain as the last look at it: the walk
    /// and the caller's read are not one moment, and if they saw different things the
    /// next drain must compare with what the caller acted on.
    pub fn observed(&mut self, path: &MemPath, found: Observed) {
        match found {
            Observed::Folder => {
                self.seen.insert(path.clone(), Seen::Folder);
            }
            Observed::File(stamp) => {
                self.seen.insert(path.clone(), Seen::File(Some(stamp)));
            }
            Observed::Nothing => {
                self.seen.remove(path);
            }
        }
    }
}

impl FolderStore {
    /// Takes the first look at folder `dir` and everything below it: later drains report
    /// changes against it.
    pub fn watch_tree(&self, watcher: &mut Watcher, dir: &MemPath) {
        match look(self, dir) {
            Some(now) => {
                watcher.seen.retain(|path, _| !path.starts_with(dir));
                watcher.seen.extend(now);
            }
            None => watcher.degraded = true,
        }
    }
}

/// Every visible entry below `dir`, as seen now; `None` if `dir` cannot be walked.
fn look(store: &FolderStore, dir: &MemPath) -> Option<HashMap<MemPath, Seen>> {
    let entries = match store.walk(dir, None) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::debug!(path = %dir.canonical(), error = %e, "cannot look for changes");
            return None;
        }
    };
    Some(
        entries
            .into_iter()
            .map(|e| {
                let seen = match e.kind {
                    EntryKind::Dir => Seen::Folder,
                    _ => Seen::File(e.stamp),
                };
                (e.path, seen)
            })
            .collect(),
    )
}
