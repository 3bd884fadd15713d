//! Keeping each store's search index in step with its files. The files are the truth and
//! the index a cache shared by every process serving the store:
//! - on first use a process reconciles the index with a stat walk (size, mtime, inode)
//!   and starts watching the store;
//! - before every search it drains its watcher and re-syncs what changed (an editor, `git
//!   pull`, another memdir process), so a search sees every change completed before it;
//! - its own mutations reach the index the same way, through its watcher (their events are
//!   queued before the reply, so the next search sees them: read-your-writes); without a
//!   watcher the mutation tells the index itself once its history is committed
//!   ([`StoreIndex::changed`]);
//! - a search re-checks the files of the hits it shows (`memory::search`).
//!
//! An index that cannot be opened leaves search to the scan. Where each index lives comes
//! in as an [`IndexFile`], resolved once by `store::cache`; what the operator should hear
//! goes out as [`IndexEvent`]s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use super::index::{Built, FORMAT, Index, IndexResult, IndexedDoc, Stamp, Writer};
use crate::error::{Error, Result};
use crate::frontmatter;
use crate::path::MemPath;
use crate::store::{EntryKind, IndexFile, Observed, Store, Watcher};

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
    index: Index,
    watcher: Option<Watcher>,
    reconciled: bool,
}

/// One store's index in this process: where it lives, its slot, and the progress of a
/// reconcile running in it, published so a search waiting for the slot can report it.
#[derive(Debug)]
pub struct StoreIndex {
    file: Option<IndexFile>,
    slot: Mutex<Slot>,
    done: AtomicU64,
    total: AtomicU64,
}

/// What the operator should hear of a store's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexEvent {
    /// The index is being built from the files, for this reason.
    Building(String),
    /// It cannot be opened (why): searches scan.
    Unavailable(String),
    /// Bringing it up to date failed (why): searches scan.
    UpdateFailed(String),
}

impl IndexEvent {
    /// Whether it is a warning (else news).
    pub fn is_warning(&self) -> bool {
        !matches!(self, IndexEvent::Building(_))
    }

    /// What to say of it, for store `name`.
    pub fn text(&self, name: &str) -> String {
        match self {
            IndexEvent::Building(why) => {
                format!("store /{name}: building the search index from the files: {why}")
            }
            IndexEvent::Unavailable(e) => {
                format!("store /{name}: search index unavailable ({e}); searching by scan")
            }
            IndexEvent::UpdateFailed(e) => {
                format!("store /{name}: search index update failed ({e}); searching by scan")
            }
        }
    }
}

/// A store whose index is to be brought up to date: the store, its root, and whom to
/// tell of progress and events.
pub struct Syncing<'a> {
    pub store: &'a Store,
    pub root: MemPath,
    pub progress: Progress<'a>,
    pub tell: &'a dyn Fn(IndexEvent),
}

impl StoreIndex {
    /// The index of a store, at `file` (`None`: indexing is off).
    pub fn new(file: Option<IndexFile>) -> StoreIndex {
        StoreIndex {
            file,
            slot: Mutex::default(),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }

    /// Where the index lives, if indexing is on.
    pub fn file(&self) -> Option<&IndexFile> {
        self.file.as_ref()
    }

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

    /// Runs `f` on the index, brought up to date first (reporting progress if that takes
    /// a reconcile), and returns its result with the outside changes found on the way
    /// ([`Fresh`]; after a first reconcile it holds on to the index until dropped, so
    /// whoever takes it next finds those changes handled). `None` when the store has no
    /// usable index; an error when the database holding the store is away (a scan could
    /// not do better).
    pub fn with_fresh<T>(
        &self,
        sync: &Syncing,
        f: impl FnOnce(&Index) -> T,
    ) -> Result<Option<Fresh<'_, T>>> {
        let mut slot = self.lock(sync.progress);
        let publishing = self.publishing(sync.progress);
        let progress: Progress = &publishing;
        self.open(&mut slot, sync.tell);
        let Slot::Open(synced) = &mut *slot else {
            return Ok(None);
        };
        let (result, found) = synced.catch_up(sync.store, &sync.root, progress);
        let changed = match result {
            Ok(changed) => changed,
            // The database is away: try the index again at the next search.
            Err(SyncError::Store(e @ Error::Database { .. })) => {
                *slot = Slot::Closed;
                return Err(e);
            }
            Err(e) => {
                (sync.tell)(IndexEvent::UpdateFailed(e.to_string()));
                *slot = Slot::Unavailable;
                return Ok(None);
            }
        };
        let value = f(&synced.index);
        let hold = matches!(found, Found::FirstSync { .. }).then_some(slot);
        Ok(Some(Fresh {
            value,
            outside: Outside { changed, found },
            hold: Hold(hold),
        }))
    }

    /// Opens the index if the slot is closed, or if someone deleted it (the index is a
    /// cache: a new one is built), telling why it is built or cannot be had.
    fn open(&self, slot: &mut Slot, tell: &dyn Fn(IndexEvent)) {
        let mut deleted = false;
        if let Slot::Open(synced) = &*slot
            && !super::index::exists(&synced.index.path)
        {
            deleted = true;
            *slot = Slot::Closed;
        }
        if !matches!(*slot, Slot::Closed) {
            return;
        }
        let Some(file) = &self.file else {
            *slot = Slot::Unavailable;
            return;
        };
        file.record_store();
        *slot = match Index::open(file.db()) {
            Ok(index) => {
                let why = match &index.built {
                    None => None,
                    Some(_) if deleted => Some("it was deleted".to_owned()),
                    Some(Built::Missing) => Some("there was none".to_owned()),
                    Some(Built::Format(old)) => {
                        Some(format!("its format changed (from {old} to {FORMAT})"))
                    }
                    Some(Built::Damaged(e)) => Some(format!("it was damaged ({e})")),
                };
                if let Some(why) = why {
                    tell(IndexEvent::Building(why));
                }
                Slot::Open(Box::new(Synced {
                    index,
                    watcher: None,
                    reconciled: false,
                }))
            }
            Err(e) => {
                tell(IndexEvent::Unavailable(e.to_string()));
                Slot::Unavailable
            }
        };
    }

    /// Re-syncs one path of the store with its index (a hit found stale by a search).
    pub fn resync(&self, store: &Store, p: &MemPath) {
        let mut slot = self.lock(&|_, _| {});
        if let Slot::Open(synced) = &mut *slot
            && let Err(e) = sync_paths(
                store,
                &synced.index,
                std::slice::from_ref(p),
                &|_, _| {},
                &mut |_, _| {},
            )
        {
            tracing::warn!(error = %e, "search index update failed");
        }
    }

    /// Tells the index what a mutation of `p` did, once its history is committed. Only a
    /// process that has the store's index open and reconciled but cannot watch the store
    /// does anything: a watching process leaves it to its watcher, which queued the
    /// mutation's own change when it happened (before the reply), so the next search
    /// applies it as it applies everyone else's: the mutation never waits on the index,
    /// and read-your-writes holds. If the index is busy (a reconcile or a search holds
    /// it), nothing is done for the same reason. Whatever is missed (or applied out of
    /// order with another process's mutation), the next search's stat walk corrects.
    pub fn changed(&self, store: &Store, p: &MemPath, change: Change) {
        let Ok(slot) = self.slot.try_lock() else {
            return;
        };
        let Slot::Open(synced) = &*slot else { return };
        if !synced.reconciled || synced.watcher.is_some() {
            return;
        }
        let rel = p.rel();
        let result = synced.index.write(|w| match &change {
            Change::Written { text, stamp } => upsert(w, &rel, text, *stamp),
            Change::Removed => w.remove_tree(&rel),
            Change::Tree => Ok(()),
        });
        if matches!(change, Change::Tree)
            && let Err(e) = reconcile(store, &synced.index, p, &|_, _| {}).map(drop)
        {
            tracing::warn!(error = %e, "search index update failed; the next search re-syncs");
        }
        if let Err(e) = result {
            tracing::warn!(error = %e, "search index update failed; the next search re-syncs");
        }
    }
}

impl Synced {
    /// Brings the index up to date with the store: what changed, and how it was found.
    /// The first reconcile of a process compares with an index that may be days old, or
    /// new and empty (then every file looks changed, and only those the history knows
    /// are compared with it).
    fn catch_up(
        &mut self,
        store: &Store,
        root: &MemPath,
        progress: Progress,
    ) -> (SyncResult<Vec<String>>, Found) {
        if !self.reconciled {
            // Watch first, so changes made during the walk are queued, not lost.
            self.watcher = store.watcher(root);
            let done = reconcile(store, &self.index, root, progress);
            self.reconciled = done.is_ok();
            let rebuilt = self.index.built.is_some();
            return (done, Found::FirstSync { rebuilt });
        }
        let done = match self.watcher.as_mut() {
            Some(watcher) => {
                let changes = watcher.drain(store, root);
                if changes.overflow {
                    reconcile(store, &self.index, root, progress)
                } else {
                    sync_paths(store, &self.index, &changes.paths, progress, &mut |p, o| {
                        watcher.observed(p, o)
                    })
                }
            }
            // No change notification on this system: a stat walk per search.
            None => reconcile(store, &self.index, root, progress),
        };
        (done, Found::Watching)
    }
}

/// What [`StoreIndex::with_fresh`] returns: `f`'s value, the changes it found made
/// outside this process (for the caller to record), and the index held until the caller
/// has done so.
#[derive(Debug)]
pub struct Fresh<'a, T> {
    pub value: T,
    pub outside: Outside,
    pub hold: Hold<'a>,
}

/// The changes a catch-up found: paths (relative to the store) changed, new or gone.
#[derive(Debug)]
pub struct Outside {
    pub changed: Vec<String>,
    pub found: Found,
}

/// The index, held after a first reconcile until the changes it found are recorded (a
/// process that takes it next then finds them recorded); nothing otherwise. Dropping it
/// lets go.
#[derive(Debug)]
pub struct Hold<'a>(#[allow(dead_code)] Option<MutexGuard<'a, Slot>>);

/// How the changes a catch-up found were found.
#[derive(Clone, Copy, Debug)]
pub enum Found {
    /// By this process's watcher, or a reconcile after it lost events: changes made while
    /// the process ran.
    Watching,
    /// By the process's first reconcile: changes made since any process last synced the
    /// index, perhaps while no memdir ran. `rebuilt`: the index was built from scratch,
    /// so every file is among them, changed or not.
    FirstSync { rebuilt: bool },
}

/// A mutation, as the index needs to know it.
pub enum Change<'a> {
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
                    Some((text, stamp)) => upsert(w, rel, text, *stamp)?,
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

/// Whether a folder on the way to `p` is a symbolic link.
fn behind_link(store: &Store, p: &MemPath) -> bool {
    let mut up = p.parent();
    while let Some(dir) = up {
        if dir.segments.is_empty() {
            return false;
        }
        if store.entry_kind(&dir).ok().flatten() == Some(EntryKind::Symlink) {
            return true;
        }
        up = dir.parent();
    }
    false
}

/// Makes the index agree with the file system at each of `paths` (files, folders or
/// nothing, as a watcher reports them). Folders are reconciled; the files' changes go in
/// write transactions of up to [`BATCH`] files, so a search that follows many writes (its
/// own, or other processes') pays one commit for them, not one each. `seen` is told what
/// was found at each path that is now folder, file or nothing in the index (the watcher
/// compares its next look with that).
fn sync_paths(
    store: &Store,
    index: &Index,
    paths: &[MemPath],
    progress: Progress,
    seen: &mut dyn FnMut(&MemPath, Observed),
) -> SyncResult<Vec<String>> {
    let mut steps = Vec::new();
    let mut changed = Vec::new();
    for p in paths {
        // A path below a link to a folder is no path a walk reaches: as if nothing were
        // there (a watcher that polls reports the files of a folder replaced by a link).
        let found = if behind_link(store, p) {
            Ok(None)
        } else {
            store.metadata(p)
        };
        match found {
            Err(e @ Error::Database { .. }) => return Err(SyncError::Store(e)),
            // A link to a folder is left out, as every walk leaves it out: through it each
            // memory below would be indexed, and recorded, a second time under another
            // path (`loop -> .` made every memory of the store appear twice).
            Ok(Some(m))
                if m.kind == EntryKind::Dir
                    && store.entry_kind(p).ok().flatten() == Some(EntryKind::Symlink) =>
            {
                seen(p, Observed::Nothing);
                // A folder replaced by a link: what was indexed under it is gone.
                changed.push(p.rel());
                steps.push(Step::RemoveTree(p.rel()));
            }
            Ok(Some(m)) if m.kind == EntryKind::Dir => {
                seen(p, Observed::Folder);
                changed.extend(reconcile(store, index, p, progress)?)
            }
            Ok(Some(m)) if m.kind == EntryKind::File => {
                let rel = p.rel();
                if index.stamp(&rel)? == Some(m.stamp) {
                    seen(p, Observed::File(m.stamp));
                    continue;
                }
                changed.push(rel.clone());
                let read = store.read(p);
                match &read {
                    Ok(data) => seen(p, Observed::File(data.stamp)),
                    Err(Error::NotFound { .. }) => seen(p, Observed::Nothing),
                    Err(_) => {}
                }
                steps.push(match text_of(p, read)? {
                    Some((text, stamp)) => Step::Upsert { rel, text, stamp },
                    None => Step::Remove(rel),
                });
            }
            Ok(None) => {
                seen(p, Observed::Nothing);
                changed.push(p.rel());
                steps.push(Step::RemoveTree(p.rel()))
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
                Step::Upsert { rel, text, stamp } => upsert(w, rel, text, *stamp)?,
                Step::Remove(rel) => w.remove(rel)?,
                Step::RemoveTree(rel) => w.remove_tree(rel)?,
            }
        }
        Ok(())
    })
}

/// Adds or replaces the document of memory `rel` in the index, with its frontmatter.
fn upsert(w: &Writer, rel: &str, text: &str, stamp: Stamp) -> IndexResult<()> {
    let fm = frontmatter::parse(text);
    w.upsert(&IndexedDoc {
        rel,
        stamp,
        text,
        frontmatter: fm.as_ref(),
    })
}

/// The text of a read and the stamp of the handle it was read through; `None` if it
/// cannot be indexed (gone, not UTF-8, refused). Fails only when the database holding the
/// store is away (the file's state is then unknown).
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
enum SyncError {
    #[error("{0}")]
    Index(#[from] rusqlite::Error),
    #[error("{0}")]
    Store(Error),
}

type SyncResult<T> = std::result::Result<T, SyncError>;
