//! The memory operations' hold on the search indexes: each store's [`StoreIndex`] (from
//! `crate::search::fresh`, which keeps it in step with the files), with its events sent
//! as notices and the outside changes it returns recorded in the history
//! (`notice_external`).

use std::path::PathBuf;

use super::{Level, Memdir};
use crate::error::Result;
use crate::path::MemPath;
use crate::search::fresh::{Change, Fresh, IndexEvent, Syncing};
use crate::search::index::Index;

pub use crate::search::fresh::{Progress, StoreIndex};

impl Memdir {
    /// The database file of store `i`'s index, if indexing is on.
    pub fn index_path(&self, i: usize) -> Option<PathBuf> {
        self.indexes[i].file().map(|f| f.db().to_owned())
    }

    /// Runs `f` on store `i`'s index, brought up to date first (reporting progress if that
    /// takes a reconcile). `None` when the store has no usable index; an error when the
    /// database holding the store is away (a scan could not do better).
    pub(crate) fn with_index<T>(
        &self,
        i: usize,
        progress: Progress,
        f: impl FnOnce(&Index) -> T,
    ) -> Result<Option<T>> {
        let store = &self.stores()[i];
        let tell = |event: IndexEvent| {
            let level = if event.is_warning() {
                Level::Warning
            } else {
                Level::Info
            };
            self.notices().send(level, event.text(&store.name));
        };
        let syncing = Syncing {
            store,
            root: MemPath::root(i, &store.name),
            progress,
            tell: &tell,
        };
        let Some(fresh) = self.indexes[i].with_fresh(&syncing, f)? else {
            return Ok(None);
        };
        let Fresh {
            value,
            outside,
            hold,
        } = fresh;
        if !outside.changed.is_empty() {
            // Outside edits may bring contents without a vector.
            self.wake_backfill();
        }
        self.notice_external(i, outside.changed, outside.found);
        drop(hold);
        Ok(Some(value))
    }

    /// Re-syncs one path with its store's index (a hit found stale by a search).
    pub(crate) fn resync(&self, p: &MemPath) {
        self.indexes[p.store].resync(self.store(p), p);
    }

    /// Tells `p`'s store index what a mutation did, after its history is committed (see
    /// [`StoreIndex::changed`]).
    pub(crate) fn index_changed(&self, p: &MemPath, change: Change) {
        self.indexes[p.store].changed(self.store(p), p, change);
        // The new content's vector is computed in the background, never on the write's
        // path.
        self.wake_backfill();
    }
}

/// Brings every store's index up to date and learns its document lengths (at
/// start-up, in the background).
pub fn warm_indexes(md: &Memdir) {
    for i in 0..md.stores().len() {
        let learned = md.with_index(i, &|_, _| {}, Index::learn_lengths);
        if let Ok(Some(Err(e))) = learned {
            md.notices().send(
                Level::Warning,
                format!(
                    "store /{}: could not read document lengths ahead of searches ({e})",
                    md.stores()[i].name
                ),
            );
        }
    }
}

/// Brings every store's index up to date with its files (`memdir reindex`), reporting
/// progress while one is built; how many memories each index holds (`None`: the store
/// has no usable index).
pub fn reindex(md: &Memdir, progress: Progress) -> Result<Vec<Option<usize>>> {
    (0..md.stores().len())
        .map(|i| {
            let count = md.with_index(i, progress, |index| index.stamps().map(|s| s.len()))?;
            Ok(count.and_then(|c| c.ok()))
        })
        .collect()
}
