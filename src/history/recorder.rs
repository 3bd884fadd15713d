//! Recording a mutation in the store's history. A mutation takes a [`Recorder`]: it holds
//! the store lock (so history appends of all processes are serialised; repair has already
//! completed what a crashed mutation left) and notes versions in three steps: `note` (the
//! versions to record), `begin` (intent written, before the files are touched), `commit`
//! (log appended, lock released). Telling the search index is the caller's next step,
//! never part of the commit.

use std::sync::MutexGuard;

use super::append;
use super::heads::Heads;
use super::log::{Draft, Op, Record};
use crate::error::Result;
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

impl<'m> Recorder<'m> {
    /// A mutation of `store` under `lock` (after any repair); `heads` is what this process
    /// knows of the store's log, `None` when history is off.
    pub(crate) fn new(
        store: &'m Store,
        lock: StoreLock,
        heads: Option<MutexGuard<'m, Heads>>,
    ) -> Recorder<'m> {
        Recorder {
            store,
            heads,
            drafts: Vec::new(),
            records: Vec::new(),
            lock,
        }
    }

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
        self.records = append::begin(
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
        if let Err(e) = append::commit(self.store, &self.lock, heads, &self.records) {
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
