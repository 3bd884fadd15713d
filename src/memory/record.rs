//! Recording mutations in the store's history. A mutation takes a [`Recorder`]: it holds
//! the store lock (so history appends of all processes are serialised), repairs what a
//! crashed mutation left, and notes versions in three steps: `note` (content saved as an
//! object), `begin` (intent written), `commit` (log appended).

use std::sync::MutexGuard;

use super::{Level, Memdir};
use crate::error::Result;
use crate::history::{self, Draft, Heads, Op, Record};
use crate::path::MemPath;
use crate::store::{Store, StoreLock};
use crate::text;

/// The actor of changes noticed on disk rather than made through memdir.
pub const EXTERNAL: &str = "external";

/// A mutation in progress: the store lock, and the versions it will record.
pub(crate) struct Recorder<'m> {
    store: &'m Store,
    /// `None` when history is off.
    heads: Option<MutexGuard<'m, Heads>>,
    drafts: Vec<Draft>,
    records: Vec<Record>,
    lock: StoreLock,
}

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
        Ok(Recorder {
            store,
            heads,
            drafts: Vec::new(),
            records: Vec::new(),
            lock,
        })
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

    /// Redacts version `version` of store `store_name` (the first store if `None`): its
    /// content and path are erased, who and when stay.
    pub fn redact(&self, store_name: Option<&str>, version: u64) -> Result<Record> {
        let root = self.store_root(store_name)?;
        let rec = self.recorder(&root)?;
        let redacted = history::redact(self.store(&root), version)?;
        rec.finish()?;
        Ok(redacted)
    }

    /// Start-up upkeep of every writable store's history: completes what a crash left
    /// (repair happens whenever the lock is taken) and applies the retention settings.
    /// Returns how many versions the retention dropped.
    pub fn maintain(&self) -> Result<usize> {
        let retention = self.settings.retention;
        if !self.settings.history {
            return Ok(0);
        }
        let mut dropped = 0;
        for (i, store) in self.stores().iter().enumerate() {
            if store.read_only {
                continue;
            }
            let root = MemPath::root(i, &store.name);
            let rec = self.recorder(&root)?;
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

impl Recorder<'_> {
    /// Notes what is at `rel` before the mutation: if the history does not know this state
    /// (a file never recorded, or changed or removed outside memdir), an `external`
    /// version of it is recorded first, so the mutation can always be undone.
    pub fn note_current(&mut self, rel: &str, current: Option<(&str, &[u8])>) -> Result<()> {
        let Some(heads) = &self.heads else {
            return Ok(());
        };
        let head = heads.head(rel);
        let draft = match (head, current) {
            (None, Some((sha, bytes))) => {
                Some((Op::Created, sha.to_owned(), bytes.len() as u64, Some(bytes)))
            }
            (Some(h), Some((sha, bytes))) if h.op == Op::Deleted || h.sha256 != sha => {
                let op = if h.op == Op::Deleted {
                    Op::Created
                } else {
                    Op::Modified
                };
                Some((op, sha.to_owned(), bytes.len() as u64, Some(bytes)))
            }
            (Some(h), None) if h.op != Op::Deleted => {
                Some((Op::Deleted, h.sha256.clone(), h.size, None))
            }
            _ => None,
        };
        if let Some((op, sha, size, bytes)) = draft {
            self.drafts.push(Draft {
                op,
                path: rel.to_owned(),
                from: None,
                actor: EXTERNAL.to_owned(),
                sha256: sha,
                size,
                bytes: bytes.map(<[u8]>::to_vec),
                reason: None,
            });
        }
        Ok(())
    }

    /// Adds the version this mutation makes; `bytes` is the content to keep (none for a
    /// deletion or rename, whose content is already kept).
    pub fn note(&mut self, mut draft: Draft, bytes: Option<&[u8]>) -> Result<()> {
        if self.heads.is_none() {
            return Ok(());
        }
        draft.bytes = bytes.map(<[u8]>::to_vec);
        self.drafts.push(draft);
        Ok(())
    }

    /// Writes the intent, just before the mutation touches the files.
    pub fn begin(&mut self) -> Result<()> {
        let Some(heads) = &self.heads else {
            return Ok(());
        };
        if self.drafts.is_empty() {
            return Ok(());
        }
        let now = text::rfc3339_millis(std::time::SystemTime::now());
        self.records = history::begin(
            self.store,
            &self.lock,
            heads,
            std::mem::take(&mut self.drafts),
            &now,
        )?;
        Ok(())
    }

    /// Appends the records after the mutation succeeded and ends it (a database commits
    /// its transaction here); returns the versions made.
    pub fn commit(mut self) -> Result<Vec<u64>> {
        let versions = self.append();
        self.finish_with(versions)
    }

    /// Ends a mutation that records nothing itself (redaction, retention, repair).
    pub fn finish(self) -> Result<()> {
        self.finish_with(Vec::new()).map(drop)
    }

    fn finish_with(self, versions: Vec<u64>) -> Result<Vec<u64>> {
        let Recorder {
            lock, mut heads, ..
        } = self;
        if let Err(e) = lock.finish() {
            // Nothing was stored: what this process learnt of the log is wrong, re-read it.
            if let Some(heads) = heads.as_mut() {
                **heads = Heads::default();
            }
            return Err(e);
        }
        Ok(versions)
    }

    fn append(&mut self) -> Vec<u64> {
        let Some(heads) = self.heads.as_mut() else {
            return Vec::new();
        };
        if self.records.is_empty() {
            return Vec::new();
        }
        if let Err(e) = history::commit(self.store, &self.lock, heads, &self.records) {
            // The mutation is durable; the intent stays and the next lock holder appends it.
            tracing::error!(error = %e, "could not append to the history log; it will be completed later");
        }
        self.records
            .iter()
            .filter(|r| r.actor != EXTERNAL)
            .map(|r| r.version)
            .collect()
    }

    /// The mutation failed: drop the intent, or roll the transaction back (nothing
    /// happened).
    pub fn abandon(self) {
        self.lock.abandon();
    }
}
