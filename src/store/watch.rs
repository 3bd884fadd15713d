//! Noticing changes made outside this process (an editor, `git pull`, `rm`, another memdir
//! process) with inotify, so the search index can follow the files. Watches are added
//! through `/proc/self/fd/N` of folders opened beneath the store handle, so watching is as
//! confined as everything else. Events are read without blocking, at the moment a search
//! asks: every change completed before the search began is already queued by then.

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use super::walk::{EntryKind, visible_name};
use super::{Changes, FolderStore};
use crate::path::MemPath;

/// An inotify instance with one watch per visible folder of a store.
#[derive(Debug)]
pub struct Watcher {
    fd: OwnedFd,
    dirs: HashMap<i32, MemPath>,
    /// A watch could not be added (e.g. the per-user watch limit): changes may be missed.
    degraded: bool,
}

/// Events read per drain at most; beyond it a rescan is cheaper than following them.
const DRAIN_BUDGET: usize = 4096;

const MASK: WatchFlags = WatchFlags::CLOSE_WRITE
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::CREATE)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::ONLYDIR);

impl Watcher {
    pub fn new() -> std::io::Result<Watcher> {
        Ok(Watcher {
            fd: inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?,
            dirs: HashMap::new(),
            degraded: false,
        })
    }

    /// Reads the queued events of store folder `root`'s watches without blocking. At most
    /// [`DRAIN_BUDGET`] events are read: when changes arrive faster than they can be read
    /// (a script renaming in a loop), a drain that waited for an empty queue would never
    /// end, so past the budget it reports an overflow and the caller rescans instead.
    /// Events report every change, so what a caller found later needs no record.
    pub fn observed(&mut self, _path: &MemPath, _found: super::Observed) {}

    pub fn drain(&mut self, store: &FolderStore, root: &MemPath) -> Changes {
        let mut changes = Changes {
            overflow: std::mem::take(&mut self.degraded),
            ..Changes::default()
        };
        let mut seen = HashSet::new();
        let mut new_dirs = HashSet::new();
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        let mut read = 0usize;
        loop {
            read += 1;
            if read > DRAIN_BUDGET {
                changes.overflow = true;
                break;
            }
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "reading file change events failed; rescanning");
                    changes.overflow = true;
                    break;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                changes.overflow = true;
                continue;
            }
            if flags.contains(ReadFlags::IGNORED) {
                self.dirs.remove(&event.wd());
                continue;
            }
            let Some(dir) = self.dirs.get(&event.wd()) else {
                continue;
            };
            let path = match event.file_name().map(|n| n.to_str()) {
                Some(Ok(name)) if visible_name(name) => dir.child(name),
                Some(_) => continue,
                None => dir.clone(),
            };
            if flags.contains(ReadFlags::ISDIR)
                && flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
            {
                new_dirs.insert(path.clone());
            }
            if seen.insert(path.clone()) {
                changes.paths.push(path);
            }
        }
        if changes.overflow {
            // Events were lost or skipped, and with them perhaps new folders: watch the
            // whole tree again (a folder watched already keeps its watch).
            store.watch_tree(self, root);
        } else {
            for dir in &new_dirs {
                store.watch_tree(self, dir);
            }
        }
        changes.overflow |= std::mem::take(&mut self.degraded);
        changes
    }
}

impl FolderStore {
    /// Watches folder `dir` and every visible folder below it.
    pub fn watch_tree(&self, watcher: &mut Watcher, dir: &MemPath) {
        self.watch_dir(watcher, dir);
        if let Ok(entries) = self.walk(dir, None) {
            for e in entries.iter().filter(|e| e.kind == EntryKind::Dir) {
                self.watch_dir(watcher, &e.path);
            }
        }
    }

    /// A readable handle on folder `dir`, opened beneath the store.
    fn open_dir_handle(&self, dir: &MemPath) -> std::io::Result<cap_std::fs::Dir> {
        let file = self
            .dir
            .open_with(super::rel_path(dir), &super::platform::dir_options())?;
        Ok(cap_std::fs::Dir::from_std_file(file.into_std()))
    }

    fn watch_dir(&self, watcher: &mut Watcher, dir: &MemPath) {
        let added = self.open_dir_handle(dir).and_then(|handle| {
            let proc_path = format!("/proc/self/fd/{}", handle.as_raw_fd());
            inotify::add_watch(&watcher.fd, proc_path, MASK).map_err(std::io::Error::from)
        });
        match added {
            Ok(wd) => {
                watcher.dirs.insert(wd, dir.clone());
            }
            // The folder was removed, replaced or swapped for a symlink since its event:
            // that change has an event of its own, nothing is missed.
            Err(e) if entry_changed(&e) => {}
            Err(e) => {
                tracing::debug!(path = %dir.canonical(), error = %e, "cannot watch a folder");
                watcher.degraded = true;
            }
        }
    }
}

/// Whether opening a folder failed because the entry is no longer that folder.
fn entry_changed(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    let errno = e.raw_os_error().map(Errno::from_raw_os_error);
    matches!(errno, Some(Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::XDEV))
        // cap-std's "a path led outside": a symlink now stands where the folder was.
        || (e.kind() == std::io::ErrorKind::PermissionDenied && errno.is_none())
}
