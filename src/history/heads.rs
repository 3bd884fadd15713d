//! What a process knows of a store's log ([`Heads`]): the latest record of each path and
//! where each content is kept, brought forward by reading only what was appended since.

use std::collections::HashMap;

use super::log::{LOG, Op, Record, parse_log};
use crate::error::{Error, Result};
use crate::store::Store;

/// What a process knows of the log: the latest record per path, and where the log keeps
/// each content, up to an offset. Kept per process and brought forward by reading only
/// what others appended since.
#[derive(Debug, Default)]
pub struct Heads {
    pub(super) offset: u64,
    pub(super) last_version: u64,
    heads: HashMap<String, Record>,
    /// sha256 → offset of the line that carries the content.
    contents: HashMap<String, u64>,
}

impl Heads {
    /// Reads what was appended since the last call (the caller holds the store lock).
    pub fn refresh(&mut self, store: &Store) -> Result<()> {
        let len = store.state_len(LOG)?;
        self.refresh_to(store, len)
    }

    /// [`refresh`](Self::refresh), with the log's length already known.
    pub(super) fn refresh_to(&mut self, store: &Store, len: u64) -> Result<()> {
        if len < self.offset {
            // The log was rewritten (redaction, retention): start over.
            *self = Heads::default();
        }
        if len == self.offset {
            return Ok(());
        }
        let (records, consumed) = parse_log(store, self.offset)?;
        self.apply(records.into_iter(), consumed);
        Ok(())
    }

    /// Takes in records without their content, each with its offset from `self.offset`
    /// and whether its line keeps the content; they end `consumed` bytes further on.
    pub(super) fn apply(
        &mut self,
        records: impl Iterator<Item = (u64, bool, Record)>,
        consumed: u64,
    ) {
        let base = self.offset;
        self.offset += consumed;
        for (at, kept, r) in records {
            self.last_version = self.last_version.max(r.version);
            if kept {
                self.contents.entry(r.sha256.clone()).or_insert(base + at);
            }
            if !r.redacted {
                if let Some(from) = &r.from {
                    self.heads.remove(from);
                }
                self.heads.insert(r.path.clone(), r);
            }
        }
    }

    /// The latest record of `rel`, if it has any.
    pub fn head(&self, rel: &str) -> Option<&Record> {
        self.heads.get(rel)
    }

    /// The paths whose latest record says they hold a memory (not deleted).
    pub fn live_paths(&self) -> impl Iterator<Item = &str> {
        self.heads
            .iter()
            .filter(|(_, r)| r.op != Op::Deleted)
            .map(|(rel, _)| rel.as_str())
    }

    /// Whether the log already keeps this content.
    pub fn has_content(&self, sha: &str) -> bool {
        self.contents.contains_key(sha)
    }

    /// The content with this sha256, if the log keeps it.
    pub fn content(&mut self, store: &Store, sha: &str) -> Result<Option<Vec<u8>>> {
        for _ in 0..2 {
            self.refresh(store)?;
            let Some(&at) = self.contents.get(sha) else {
                return Ok(None);
            };
            // Only the line that carries it.
            let mut line = Vec::new();
            if let Some(mut reader) = store.state_reader(LOG, at)? {
                std::io::BufRead::read_until(&mut reader, b'\n', &mut line)
                    .map_err(|e| Error::io(LOG, &e))?;
            }
            match serde_json::from_slice::<Record>(&line) {
                Ok(r) if r.sha256 == sha && r.has_content() => return Ok(r.content_bytes()),
                // The log was rewritten under us: read it again from the start.
                _ => *self = Heads::default(),
            }
        }
        Ok(None)
    }
}
