//! The memory operations' hold on each store's history: taking a `Recorder` (the
//! store lock, after repairing what a crashed mutation left, with its repairs sent as
//! notices), redaction, start-up retention, and reading kept content.

use super::{Level, Memdir};
use crate::error::{Error, Result};
use crate::history::{self, EXTERNAL, Op, Record, Recorder};

use crate::path::MemPath;
use crate::store::Store;
use crate::text;

impl Memdir {
    /// Takes `p`'s store lock for a mutation, first completing the history of any
    /// mutation a crash interrupted.
    pub(crate) fn recorder(&self, p: &MemPath) -> Result<Recorder<'_>> {
        let store = self.store(p);
        let temps = store.temps_removed();
        let lock = store.lock()?;
        self.notice_temps_removed(store, temps);
        let heads = if self.settings.history {
            let mut heads = self.heads[p.store]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let repaired = history::repair(store, &lock, &mut heads, |r| self.happened(p, r))?;
            self.notice_repaired(store, repaired);
            Some(heads)
        } else {
            None
        };
        Ok(Recorder::new(store, lock, heads))
    }

    /// Tells what a history repair put right.
    fn notice_repaired(&self, store: &Store, repaired: history::Repaired) {
        if repaired.torn_bytes > 0 {
            self.notices().send(
                Level::Warning,
                format!(
                    "store /{}: repaired the history log: cut a torn last line ({} bytes) left by an interrupted append",
                    store.name, repaired.torn_bytes
                ),
            );
        }
        if repaired.completed > 0 {
            self.notices().send(
                Level::Warning,
                format!(
                    "store /{}: repaired the history log: recorded {} version(s) of a change a crash interrupted",
                    store.name, repaired.completed
                ),
            );
        }
    }

    pub(super) fn store_root(&self, store_name: Option<&str>) -> Result<MemPath> {
        let i = match store_name {
            None => 0,
            Some(name) => self
                .stores()
                .iter()
                .position(|s| s.name == name)
                .ok_or_else(|| {
                    crate::error::Error::InvalidArgument(format!("no store named `{name}`"))
                })?,
        };
        Ok(MemPath::root(i, &self.stores()[i].name))
    }

    /// The content with this sha256 in store `i`'s history, if kept.
    pub(crate) fn history_content(&self, i: usize, sha: &str) -> Result<Option<Vec<u8>>> {
        let mut heads = self.heads[i].lock().unwrap_or_else(|e| e.into_inner());
        heads.content(&self.stores()[i], sha)
    }

    /// Whether the files are in the state a pending record describes.
    fn happened(&self, p: &MemPath, r: &Record) -> bool {
        if r.actor == EXTERNAL {
            // A noticed state: true whether or not the mutation after it happened.
            return true;
        }
        let at = p.with_rel(&r.path);
        let sha = self.current(&at).ok().flatten().map(|c| c.sha256);
        match r.op {
            Op::Deleted => sha.is_none() && matches!(self.store(&at).entry_kind(&at), Ok(None)),
            Op::Renamed => {
                let from_gone = r
                    .from
                    .as_deref()
                    .is_some_and(|f| matches!(self.store(p).entry_kind(&p.with_rel(f)), Ok(None)));
                sha.as_deref() == Some(r.sha256.as_str()) && from_gone
            }
            Op::Created | Op::Modified => sha.as_deref() == Some(r.sha256.as_str()),
        }
    }
}

/// Redacts version `version` of store `store_name` (the first store if `None`): its
/// content and path are erased, who and when stay.
pub fn redact(md: &Memdir, store_name: Option<&str>, version: u64) -> Result<Record> {
    let root = md.store_root(store_name)?;
    let rec = md.recorder(&root)?;
    // The content a live memory holds now cannot be erased from the history alone: the
    // file still holds it, and the next read would record it again as a change made
    // outside memdir.
    let records = history::records(md.store(&root))?;
    if let Some(r) = records.iter().find(|r| r.version == version && !r.redacted)
        && r.op != Op::Deleted
        && records
            .iter()
            .rev()
            .find(|later| later.path == r.path)
            .is_some_and(|latest| latest.version == r.version)
        && md
            .current(&root.with_rel(&r.path))
            .ok()
            .flatten()
            .is_some_and(|cur| cur.sha256 == r.sha256)
    {
        return Err(Error::InvalidArgument(format!(
            "version {version} is what /{}/{} holds now: change or delete that memory first (its content stays on disk otherwise, and would be recorded again), then redact this version",
            root.store_name, r.path
        )));
    }
    let redacted = history::redact(md.store(&root), version)?;
    rec.finish()?;
    Ok(redacted)
}

/// Start-up upkeep of every writable store's history: completes what a crash left
/// (repair happens whenever the lock is taken) and applies the retention settings.
/// Returns how many versions the retention dropped.
pub fn maintain(md: &Memdir) -> Result<usize> {
    let retention = md.settings.retention;
    if !md.settings.history {
        return Ok(0);
    }
    let mut dropped = 0;
    for (i, store) in md.stores().iter().enumerate() {
        if store.read_only {
            continue;
        }
        let root = MemPath::root(i, &store.name);
        let rec = md.recorder(&root)?;
        if retention.keep_versions.is_none() && retention.keep_days.is_none() {
            rec.finish()?;
            continue;
        }
        let live: std::collections::HashMap<String, String> = store
            .walk(&root, None)?
            .into_iter()
            .filter(|e| e.kind == crate::store::EntryKind::File)
            .filter_map(|e| {
                store
                    .read(&e.path)
                    .ok()
                    .map(|d| (e.path.rel(), text::sha256_hex(&d.bytes)))
            })
            .collect();
        let today = text::days_since_epoch(std::time::SystemTime::now());
        dropped += history::prune(store, retention, &live, today)?;
        rec.finish()?;
    }
    Ok(dropped)
}
