//! Upkeep a person asks for from the command line: deleting expired memories (as
//! versions, so each can be restored) and writing the generated `MEMORY.md` into a store.
//! Which memories have expired, the search index says (each then read to confirm).
//! Reviewing old memories is a listing (`ListRequest::older_than_days`).

use super::memory_md::{INDEX_FILE, MemoryIndex, generated_index};
use super::{Expiry, ListRequest, Memdir, WriteRequest, WriteResult, delete};
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::text;

/// An expired memory found by [`prune_expired`].
#[derive(Debug)]
pub struct Expired {
    pub path: String,
    /// RFC 3339 UTC.
    pub expires_at: String,
    /// The version recording its deletion (none on a dry run or with history off).
    pub version: Option<u64>,
}

/// Every expired memory of a store (the first if `None`), deleted unless `dry_run`.
/// A memory changed since it was looked at is left alone (its expiry may be new).
pub fn prune_expired(
    md: &Memdir,
    store: Option<&str>,
    dry_run: bool,
    actor: &str,
) -> Result<Vec<Expired>> {
    let root = md.store_root(store)?;
    let mut out = Vec::new();
    for found in find_expired(md, &root)? {
        let version = if dry_run {
            None
        } else {
            let reason = format!("expired at {} (memdir prune --expired)", found.expires_at);
            match delete::delete(md, &found.path, Some(&found.sha256), Some(&reason), actor) {
                Ok(r) => r.versions.first().copied(),
                // Changed or gone since the listing: not this prune's to delete.
                Err(Error::Precondition { .. } | Error::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            }
        };
        out.push(Expired {
            path: found.path,
            expires_at: found.expires_at,
            version,
        });
    }
    Ok(out)
}

/// A memory read and found expired.
struct Found {
    path: String,
    /// Of the bytes read.
    sha256: String,
    /// RFC 3339 UTC.
    expires_at: String,
}

/// Memories read at once to confirm the index's word.
const BATCH: usize = 256;

/// The expired memories of the store at `root`, in path order. Only a memory's
/// frontmatter says when it expires, and the search index holds that of every memory:
/// brought up to date as a search brings it (the store's watcher drained, or a stat
/// walk where there is none), it names the memories whose expiry has passed, and only
/// those are read, to confirm, as a search reads its hits. Without a usable index,
/// one walk and every file read.
fn find_expired(md: &Memdir, root: &MemPath) -> Result<Vec<Found>> {
    let now = text::now_secs();
    let named = match md.with_index(root.store, &|_, _| {}, |index| index.expired(now))? {
        Some(Ok(named)) => named,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "search index unreadable; reading every memory for expiries");
            return scan_expired(md, root);
        }
        None => return scan_expired(md, root),
    };
    let paths: Vec<MemPath> = named.iter().map(|rel| root.with_rel(rel)).collect();
    let mut out = Vec::new();
    for paths in paths.chunks(BATCH) {
        for (p, read) in paths.iter().zip(md.current_many(paths)) {
            // Gone or unreadable since it was indexed: not expired, as a scan would say.
            let Ok(Some(current)) = read else { continue };
            let expiry = Expiry::of_frontmatter(Memdir::frontmatter(&current.text).as_ref());
            if expiry.expired {
                out.push(Found {
                    path: p.canonical(),
                    sha256: current.sha256,
                    expires_at: expiry.at.unwrap_or_default(),
                });
            }
        }
    }
    Ok(out)
}

/// [`find_expired`] without the index: one walk of the store, then every file read in
/// batches.
fn scan_expired(md: &Memdir, root: &MemPath) -> Result<Vec<Found>> {
    let rows = ListRequest {
        path: Some(&root.canonical()),
        ..Default::default()
    }
    .rows(md)?;
    Ok(super::list::entries(md, &rows)
        .into_iter()
        .filter(|e| e.expired)
        .filter_map(|e| {
            Some(Found {
                path: e.path,
                sha256: e.content_sha256?,
                expires_at: e.expires_at.unwrap_or_default(),
            })
        })
        .collect())
}

/// Writes the generated index of a store (the first if `None`) to its `MEMORY.md`,
/// as a new version (a no-op when it is already that).
pub fn write_index(
    md: &Memdir,
    store: Option<&str>,
    actor: &str,
) -> Result<(WriteResult, MemoryIndex)> {
    let root = md.store_root(store)?;
    let index = generated_index(md, &root)?;
    let written = WriteRequest {
        path: &root.child(INDEX_FILE).canonical(),
        content: &index.text,
        if_absent: false,
        expected_sha256: None,
        actor,
    }
    .run(md)?;
    Ok((written, index))
}
