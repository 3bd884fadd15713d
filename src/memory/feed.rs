//! A feed of changes to the stores, for MCP resource subscriptions: which memories
//! changed (through this server, another memdir process, an editor, `git pull`, `rm`), and
//! whether the set of memories changed. Built on the same confined inotify watches as the
//! search index, with a watcher of its own; polled without blocking.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::Memdir;
use crate::path::MemPath;
use crate::store::{EntryKind, Watcher};

/// What a feed knows between polls.
#[derive(Debug)]
pub struct Feed {
    /// One watcher per store (none where inotify is unavailable: then the list of
    /// memories is compared every `WALK_EVERY`, and content changes are not reported).
    watchers: Vec<Option<Watcher>>,
    /// Canonical paths of every visible memory, as of the last poll.
    known: BTreeSet<String>,
    /// When the list of memories was last compared without a watcher's help.
    walked: Instant,
}

/// Without a watcher (inotify unavailable, or out of instances), the list of memories is
/// compared this often; content changes are then not reported.
const WALK_EVERY: Duration = Duration::from_secs(5);

/// What changed since the last poll.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FeedEvents {
    /// Canonical paths of files or folders that changed (a folder stands for everything
    /// below it).
    pub changed: Vec<String>,
    /// Events were lost: anything may have changed.
    pub everything: bool,
    /// Memories were created, removed or moved.
    pub list_changed: bool,
}

impl FeedEvents {
    /// Whether the memory at canonical path `path` is among the changes.
    pub fn touches(&self, path: &str) -> bool {
        self.everything
            || self.changed.iter().any(|c| {
                path == c
                    || path
                        .strip_prefix(c.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
    }
}

impl Feed {
    /// Starts a feed: watches every store and notes the memories there now.
    pub fn start(md: &Memdir) -> Feed {
        let watchers = md
            .stores()
            .iter()
            .enumerate()
            .map(|(i, store)| store.watcher(&MemPath::root(i, &store.name)))
            .collect();
        Feed {
            watchers,
            known: Feed::memory_paths(md),
            walked: Instant::now(),
        }
    }

    /// The changes since the feed's last poll (or its start). Never blocks on events.
    pub fn poll(&mut self, md: &Memdir) -> FeedEvents {
        let mut events = FeedEvents::default();
        let mut recount = false;
        for (i, store) in md.stores().iter().enumerate() {
            let root = MemPath::root(i, &store.name);
            let Some(watcher) = self.watchers[i].as_mut() else {
                if self.walked.elapsed() >= WALK_EVERY {
                    self.walked = Instant::now();
                    recount = true;
                }
                continue;
            };
            let changes = watcher.drain(store, &root);
            if changes.overflow {
                events.everything = true;
                recount = true;
            }
            for p in changes.paths {
                let canonical = p.canonical();
                match store.entry_kind(&p) {
                    Ok(Some(EntryKind::File)) => {
                        if !self.known.contains(&canonical) {
                            recount = true;
                        }
                    }
                    // A folder, or gone: what is below it may have come or gone.
                    _ => recount = true,
                }
                events.changed.push(canonical);
            }
        }
        if recount {
            let now = Feed::memory_paths(md);
            if now != self.known {
                events.list_changed = true;
                self.known = now;
            }
        }
        events
    }

    /// Canonical paths of every visible memory in every store.
    fn memory_paths(md: &Memdir) -> BTreeSet<String> {
        let mut paths = BTreeSet::new();
        for (i, store) in md.stores().iter().enumerate() {
            let root = MemPath::root(i, &store.name);
            if let Ok(entries) = store.walk(&root, None) {
                paths.extend(
                    entries
                        .into_iter()
                        .filter(|e| e.kind == EntryKind::File)
                        .map(|e| e.path.canonical()),
                );
            }
        }
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::FeedEvents;

    #[test]
    fn a_changed_folder_touches_what_is_below_it() {
        let events = FeedEvents {
            changed: vec!["/m/notes".into(), "/m/a.md".into()],
            ..FeedEvents::default()
        };
        assert!(events.touches("/m/a.md"));
        assert!(events.touches("/m/notes/x.md"));
        assert!(!events.touches("/m/notes_old/x.md"));
        assert!(!events.touches("/m/b.md"));
    }
}
