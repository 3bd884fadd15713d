//! The two steps of a mutation's append, under the store lock: [`begin`] numbers the
//! records and writes them as the intent (before the files are touched), [`commit`]
//! appends them to the log in one write and clears the intent.

use std::collections::HashSet;

use super::base64::base64_encode;
use super::heads::Heads;
use super::log::{Draft, HISTORY, LOG, Record, to_line};
use crate::error::Result;
use crate::store::{Store, StoreLock};

/// Appends `records` to the log and takes them into `heads`, without reading back what
/// was just written unless someone else appended in between (they cannot while the
/// caller holds the store lock; reading back keeps `heads` right regardless).
pub(super) fn append<'r>(
    store: &Store,
    heads: &mut Heads,
    records: impl Iterator<Item = &'r Record>,
) -> Result<()> {
    let mut bytes = Vec::new();
    let mut lines = Vec::new();
    for r in records {
        let at = bytes.len() as u64;
        to_line(r, &mut bytes)?;
        lines.push((at, r.has_content(), r.without_content()));
    }
    let end = store.state_append(LOG, &bytes)?;
    if end == heads.offset + bytes.len() as u64 {
        heads.apply(lines.into_iter(), bytes.len() as u64);
        Ok(())
    } else {
        heads.refresh_to(store, end)
    }
}

/// Numbers the drafts, attaches content the log does not keep yet, and writes them as the
/// intent (before the mutation).
pub(super) fn begin(
    store: &Store,
    lock: &StoreLock,
    heads: &Heads,
    drafts: Vec<Draft>,
    at: &str,
) -> Result<Vec<Record>> {
    // The first record makes the history folder; after that it exists (and the append
    // makes it again should someone remove it meanwhile).
    if heads.offset == 0 {
        store.state_dirs(HISTORY)?;
    }
    let mut carried: HashSet<String> = HashSet::new();
    let records: Vec<Record> = drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let new = !heads.has_content(&d.sha256) && !carried.contains(&d.sha256);
            let (content, content_base64) = match d.bytes.filter(|_| new) {
                Some(bytes) => {
                    carried.insert(d.sha256.clone());
                    match String::from_utf8(bytes) {
                        Ok(text) => (Some(text), None),
                        Err(e) => (None, Some(base64_encode(e.as_bytes()))),
                    }
                }
                None => (None, None),
            };
            Record {
                version: heads.last_version + 1 + i as u64,
                op: d.op,
                path: d.path,
                from: d.from,
                at: at.to_owned(),
                actor: d.actor,
                sha256: d.sha256,
                size: d.size,
                redacted: false,
                reason: d.reason,
                path_sha256: None,
                content,
                content_base64,
            }
        })
        .collect();
    let mut bytes = Vec::new();
    for r in &records {
        to_line(r, &mut bytes)?;
    }
    lock.set_intent(&bytes)?;
    store.pause("history-intent");
    Ok(records)
}

/// Appends the records of a completed mutation and clears the intent.
pub(super) fn commit(
    store: &Store,
    lock: &StoreLock,
    heads: &mut Heads,
    records: &[Record],
) -> Result<()> {
    append(store, heads, records.iter())?;
    store.pause("history-appended");
    lock.clear_intent()
}
