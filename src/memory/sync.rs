//! Keeping each store's search index in step with its files. The files are the truth and
//! the index a cache shared by every process serving the store:
//! - on first use a process reconciles the index with a stat walk (size, mtime, inode)
//!   and starts watching the store;
//! - before every search it drains its watcher and re-syncs what changed (an editor, `git
//!   pull`, another memdir process), so a search sees every change completed before it;
//! - its own mutations reach the index the same way, through its watcher (their events are
//!   queued before the reply, so the next search sees them: read-your-writes); without a
//!   watcher they update the index under the store lock;
//! - a search re-checks the files of the hits it shows (see `search`).
//!
//! An index that cannot be opened leaves search to the scan.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use super::record::Recorder;
use super::{Level, Memdir};
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::search::index::{Built, Index, IndexResult, IndexedDoc, Stamp};
use crate::store::cache;
use crate::store::{EntryKind, Store, Watcher};

pub use crate::store::IndexLocation;

/// Reports progress of a long (re)index: `(files done, files to do)`.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Files indexed per write transaction during a reconcile.
const BATCH: usize = 256;

/// One store's index in this process.
#[derive(Debug, Default)]
pub(crate) enum Slot {
    #[default]
    Closed,
    Open(Box<Synced>),
    /// Could not be opened: search scans.
    Unavailable,
}

#[derive(Debug)]
pub(crate) struct Synced {
    pub index: Index,
    watcher: Option<Watcher>,
    reconciled: bool,
}

/// One store's index slot, and the progress of a reconcile running in it, published so a
/// search waiting for the slot can report it.
#[derive(Debug, Default)]
pub(crate) struct IndexSlot {
    slot: Mutex<Slot>,
    done: AtomicU64,
    total: AtomicU64,
}

pub(crate) fn slots(count: usize) -> Vec<IndexSlot> {
    (0..count).map(|_| IndexSlot::default()).collect()
}

impl IndexSlot {
    /// Takes the slot; while another thread holds it (a reconcile), relays its progress.
    fn lock(&self, progress: Progress) -> MutexGuard<'_, Slot> {
        let mut last = (u64::MAX, u64::MAX);
        loop {
            match self.slot.try_lock() {
                Ok(guard) => return guard,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    let now = (
                        self.done.load(Ordering::Relaxed),
                        self.total.load(Ordering::Relaxed),
                    );
                    if now != last && now.1 > 0 {
                        progress(now.0, now.1);
                        last = now;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// A progress callback that also publishes to waiters.
    fn publishing<'a>(&'a self, progress: Progress<'a>) -> impl Fn(u64, u64) + Sync + 'a {
        move |done, total| {
            self.done.store(done, Ordering::Relaxed);
            self.total.store(total, Ordering::Relaxed);
            progress(done, total);
        }
    }
}

impl Memdir {
    /// The database file of store `i`'s index, if indexing is on.
    pub fn index_path(&self, i: usize) -> Option<PathBuf> {
        self.index_file(i).map(|f| f.db().to_owned())
    }

    fn index_file(&self, i: usize) -> Option<cache::IndexFile> {
        let store = &self.stores()[i];
        self.settings
            .index
            .index_file(store, cache::user_cache_dir().as_deref())
    }

    /// Runs `f` on store `i`'s index, brought up to date first (reporting progress if that
    /// takes a reconcile). `None` when the store has no usable index; an error when the
    /// database holding the store is away (a scan could not do better).
    pub(crate) fn with_index<T>(
        &self,
        i: usize,
        progress: Progress,
        f: impl FnOnce(&Synced) -> T,
    ) -> Result<Option<T>> {
        let shared = &self.indexes[i];
        let mut slot = shared.lock(progress);
        let publishing = shared.publishing(progress);
        let progress: Progress = &publishing;
        let name = &self.stores()[i].name;
        // The index is a cache: if someone deleted it, build a new one.
        let mut deleted = false;
        if let Slot::Open(synced) = &*slot
            && !synced.index.path.exists()
        {
            deleted = true;
            *slot = Slot::Closed;
        }
        if matches!(*slot, Slot::Closed) {
            let file = self.index_file(i);
            if let Some(file) = &file {
                file.record_store();
            }
            *slot = match file.map(|f| Index::open(f.db())) {
                Some(Ok(index)) => {
                    let why = match &index.built {
                        None => None,
                        Some(_) if deleted => Some("it was deleted".to_owned()),
                        Some(Built::Missing) => Some("there was none".to_owned()),
                        Some(Built::Format(old)) => Some(format!(
                            "its format changed (from {old} to {})",
                            crate::search::index::FORMAT
                        )),
                        Some(Built::Damaged(e)) => Some(format!("it was damaged ({e})")),
                    };
                    if let Some(why) = why {
                        self.notices().send(
                            Level::Info,
                            format!(
                                "store /{name}: building the search index from the files: {why}"
                            ),
                        );
                    }
                    Slot::Open(Box::new(Synced {
                        index,
                        watcher: None,
                        reconciled: false,
                    }))
                }
                Some(Err(e)) => {
                    self.notices().send(
                        Level::Warning,
                        format!("store /{name}: search index unavailable ({e}); searching by scan"),
                    );
                    Slot::Unavailable
                }
                None => Slot::Unavailable,
            };
        }
        let Slot::Open(synced) = &mut *slot else {
            return Ok(None);
        };
        let store = &self.stores()[i];
        let root = MemPath::root(i, &store.name);
        // What changed, and how it was found: the first reconcile of a process compares
        // with an index that may be days old, or new and empty (then every file looks
        // changed, and only those the history knows are compared with it).
        let (result, found) = if !synced.reconciled {
            // Watch first, so changes made during the walk are queued, not lost.
            synced.watcher = store.watcher(&root);
            let done = reconcile(store, &synced.index, &root, progress);
            synced.reconciled = done.is_ok();
            let rebuilt = synced.index.built.is_some();
            (done, Found::FirstSync { rebuilt })
        } else {
            match synced.watcher.as_mut() {
                Some(watcher) => {
                    let changes = watcher.drain(store, &root);
                    if changes.overflow {
                        (
                            reconcile(store, &synced.index, &root, progress),
                            Found::Watching,
                        )
                    } else {
                        (
                            sync_paths(store, &synced.index, &changes.paths, progress),
                            Found::Watching,
                        )
                    }
                }
                // No change notification on this system: a stat walk per search.
                None => (
                    reconcile(store, &synced.index, &root, progress),
                    Found::Watching,
                ),
            }
        };
        let changed = match result {
            Ok(changed) => changed,
            // The database is away: try the index again at the next search.
            Err(SyncError::Store(e @ Error::Database { .. })) => {
                *slot = Slot::Closed;
                return Err(e);
            }
            Err(e) => {
                self.notices().send(
                    Level::Warning,
                    format!("store /{name}: search index update failed ({e}); searching by scan"),
                );
                *slot = Slot::Unavailable;
                return Ok(None);
            }
        };
        let out = f(synced);
        if let Found::FirstSync { .. } = found {
            // Recorded before the slot is let go, so whoever takes it next (a search, the
            // start-up warm-up) finds what changed while no process watched in the history.
            self.notice_external(i, changed, found);
            drop(slot);
        } else {
            drop(slot);
            self.notice_external(i, changed, found);
        }
        Ok(Some(out))
    }

    /// Re-syncs one path of store `i` with its index (a hit found stale by a search).
    pub(crate) fn resync(&self, p: &MemPath) {
        let mut slot = self.indexes[p.store].lock(&|_, _| {});
        if let Slot::Open(synced) = &mut *slot
            && let Err(e) = sync_paths(
                self.store(p),
                &synced.index,
                std::slice::from_ref(p),
                &|_, _| {},
            )
        {
            tracing::warn!(error = %e, "search index update failed");
        }
    }

    /// Brings every store's index up to date and learns its document lengths (at
    /// start-up, in the background).
    pub fn warm_indexes(&self) {
        for i in 0..self.stores().len() {
            let learned = self.with_index(i, &|_, _| {}, |synced| synced.index.learn_lengths());
            if let Ok(Some(Err(e))) = learned {
                self.notices().send(
                    Level::Warning,
                    format!(
                        "store /{}: could not read document lengths ahead of searches ({e})",
                        self.stores()[i].name
                    ),
                );
            }
        }
    }

    /// Whether a mutation of store `i` must tell the index itself: only when this process
    /// has the store's index open and reconciled but cannot watch the store. A watching
    /// process leaves it to its watcher, which queued the mutation's own change when it
    /// happened (before the reply), so the next search applies it as it applies everyone
    /// else's: the mutation never waits on the index, and read-your-writes holds. If the
    /// index is busy (a reconcile or a search holds it), the answer is no for the same
    /// reason.
    fn index_wants(&self, i: usize) -> bool {
        match self.indexes[i].slot.try_lock() {
            Ok(slot) => matches!(&*slot, Slot::Open(s) if s.reconciled && s.watcher.is_none()),
            Err(TryLockError::Poisoned(_)) | Err(TryLockError::WouldBlock) => false,
        }
    }

    /// Appends the mutation's history records and, if [`index_wants`](Self::index_wants)
    /// it, tells the index what happened meanwhile (CPU, while the append waits for the
    /// disk). Called under the store lock, so index updates keep the mutation order.
    pub(crate) fn commit_indexed(
        &self,
        rec: Recorder,
        p: &MemPath,
        change: Change,
    ) -> Result<Vec<u64>> {
        if self.index_wants(p.store) {
            rec.commit_while(|| self.indexed(p, change))
        } else {
            rec.commit()
        }
    }

    /// Tells the index what a mutation just did, if [`index_wants`](Self::index_wants) it.
    /// Called under the store lock.
    pub(crate) fn indexed(&self, p: &MemPath, change: Change) {
        let Ok(slot) = self.indexes[p.store].slot.try_lock() else {
            return;
        };
        let Slot::Open(synced) = &*slot else { return };
        if !synced.reconciled || synced.watcher.is_some() {
            return;
        }
        let rel = p.rel();
        let result = synced.index.write(|w| match &change {
            Change::Written { text, stamp } => {
                let fm = Memdir::frontmatter(text);
                w.upsert(&IndexedDoc {
                    rel: &rel,
                    stamp: *stamp,
                    text,
                    frontmatter: fm.as_ref(),
                })
            }
            Change::Removed => w.remove_tree(&rel),
            Change::Tree => Ok(()),
        });
        if matches!(change, Change::Tree)
            && let Err(e) = reconcile(self.store(p), &synced.index, p, &|_, _| {}).map(drop)
        {
            tracing::warn!(error = %e, "search index update failed; the next search re-syncs");
        }
        if let Err(e) = result {
            tracing::warn!(error = %e, "search index update failed; the next search re-syncs");
        }
    }
}

/// How the changes handed to [`Memdir::notice_external`] were found.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Found {
    /// By this process's watcher, or a reconcile after it lost events: changes made while
    /// the process ran.
    Watching,
    /// By the process's first reconcile: changes made since any process last synced the
    /// index, perhaps while no memdir ran. `rebuilt`: the index was built from scratch,
    /// so every file is among them, changed or not.
    FirstSync { rebuilt: bool },
}

/// A mutation, as the index needs to know it.
pub(crate) enum Change<'a> {
    Written {
        text: &'a str,
        stamp: Stamp,
    },
    /// A file or a folder (with everything below it) is gone.
    Removed,
    /// A folder appeared (moved here): index what is in it.
    Tree,
}

/// Makes the index agree with the files at or below folder `scope`; returns the paths
/// (relative to the store) of the files it found changed, new or gone.
fn reconcile(
    store: &Store,
    index: &Index,
    scope: &MemPath,
    progress: Progress,
) -> SyncResult<Vec<String>> {
    let files: HashMap<String, Stamp> = match store.walk(scope, None) {
        Ok(entries) => entries
            .into_iter()
            .filter_map(|e| Some((e.path.rel(), e.stamp?)))
            .collect(),
        // The database is away: nothing can be told of what is there.
        Err(e @ Error::Database { .. }) => return Err(SyncError::Store(e)),
        Err(_) => HashMap::new(),
    };
    let base = scope.rel();
    let inside = |rel: &str| base.is_empty() || rel.starts_with(&format!("{base}/"));
    let indexed: HashMap<String, Stamp> = index
        .stamps()?
        .into_iter()
        .filter(|(rel, _)| inside(rel))
        .collect();
    let mut stale: Vec<&String> = files
        .iter()
        .filter(|(rel, stamp)| indexed.get(*rel) != Some(stamp))
        .map(|(rel, _)| rel)
        .collect();
    stale.sort();
    let gone: Vec<&String> = indexed
        .keys()
        .filter(|rel| !files.contains_key(*rel))
        .collect();
    let total = stale.len() as u64;
    if !gone.is_empty() {
        index.write(|w| gone.iter().try_for_each(|rel| w.remove(rel)))?;
    }
    for (n, chunk) in stale.chunks(BATCH).enumerate() {
        let paths: Vec<MemPath> = chunk.iter().map(|rel| scope.with_rel(rel)).collect();
        let texts = paths
            .iter()
            .zip(store.read_many(&paths))
            .map(|(p, read)| text_of(p, read))
            .collect::<Result<Vec<_>, _>>()?;
        index.write(|w| {
            for (rel, text) in chunk.iter().zip(&texts) {
                match text {
                    Some((text, stamp)) => {
                        let fm = Memdir::frontmatter(text);
                        w.upsert(&IndexedDoc {
                            rel,
                            stamp: *stamp,
                            text,
                            frontmatter: fm.as_ref(),
                        })?
                    }
                    None => w.remove(rel)?,
                }
            }
            Ok(())
        })?;
        progress(((n * BATCH + chunk.len()) as u64).min(total), total);
    }
    Ok(stale.into_iter().chain(gone).cloned().collect())
}

/// One change of the index that a synced path needs.
enum Step {
    Upsert {
        rel: String,
        text: String,
        stamp: Stamp,
    },
    Remove(String),
    RemoveTree(String),
}

/// Makes the index agree with the file system at each of `paths` (files, folders or
/// nothing, as a watcher reports them). Folders are reconciled; the files' changes go in
/// write transactions of up to [`BATCH`] files, so a search that follows many writes (its
/// own, or other processes') pays one commit for them, not one each.
fn sync_paths(
    store: &Store,
    index: &Index,
    paths: &[MemPath],
    progress: Progress,
) -> SyncResult<Vec<String>> {
    let mut steps = Vec::new();
    let mut changed = Vec::new();
    for p in paths {
        match store.metadata(p) {
            Err(e @ Error::Database { .. }) => return Err(SyncError::Store(e)),
            Ok(Some(m)) if m.kind == EntryKind::Dir => {
                changed.extend(reconcile(store, index, p, progress)?)
            }
            Ok(Some(m)) if m.kind == EntryKind::File => {
                let rel = p.rel();
                if index.stamp(&rel)? == Some(m.stamp) {
                    continue;
                }
                changed.push(rel.clone());
                steps.push(match read_text(store, p)? {
                    Some((text, stamp)) => Step::Upsert { rel, text, stamp },
                    None => Step::Remove(rel),
                });
            }
            _ => {
                changed.push(p.rel());
                steps.push(Step::RemoveTree(p.rel()))
            }
        }
        if steps.len() >= BATCH {
            apply(index, std::mem::take(&mut steps))?;
        }
    }
    apply(index, steps)?;
    Ok(changed)
}

fn apply(index: &Index, steps: Vec<Step>) -> IndexResult<()> {
    if steps.is_empty() {
        return Ok(());
    }
    index.write(|w| {
        for step in &steps {
            match step {
                Step::Upsert { rel, text, stamp } => {
                    let fm = Memdir::frontmatter(text);
                    w.upsert(&IndexedDoc {
                        rel,
                        stamp: *stamp,
                        text,
                        frontmatter: fm.as_ref(),
                    })?
                }
                Step::Remove(rel) => w.remove(rel)?,
                Step::RemoveTree(rel) => w.remove_tree(rel)?,
            }
        }
        Ok(())
    })
}

/// A file's text and the stamp of the handle it was read through; `None` if it cannot be
/// indexed (gone, not UTF-8, refused). Fails only when the database holding the store is
/// away (the file's state is then unknown).
fn read_text(store: &Store, p: &MemPath) -> Result<Option<(String, Stamp)>, SyncError> {
    text_of(p, store.read(p))
}

/// [`read_text`] of a read already made.
fn text_of(
    p: &MemPath,
    read: crate::error::Result<crate::store::FileData>,
) -> Result<Option<(String, Stamp)>, SyncError> {
    match read {
        Ok(data) => Ok(String::from_utf8(data.bytes).ok().map(|t| (t, data.stamp))),
        Err(Error::NotFound { .. }) => Ok(None),
        Err(e @ Error::Database { .. }) => Err(SyncError::Store(e)),
        Err(e) => {
            tracing::debug!(path = %p.canonical(), error = %e, "not indexed");
            Ok(None)
        }
    }
}

/// Why the index could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SyncError {
    #[error("{0}")]
    Index(#[from] rusqlite::Error),
    #[error("{0}")]
    Store(Error),
}

type SyncResult<T> = std::result::Result<T, SyncError>;
