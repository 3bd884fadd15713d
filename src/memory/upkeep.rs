//! Upkeep a person asks for from the command line: deleting expired memories (as
//! versions, so each can be restored) and writing the generated `MEMORY.md` into a store.
//! Reviewing old memories is a listing (`ListRequest::older_than_days`).

use super::memory_md::{INDEX_FILE, MemoryIndex, generated_index};
use super::{ListRequest, Memdir, WriteRequest, WriteResult, delete};
use crate::error::{Error, Result};

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
    // One walk of the store, then every file read in one batch: what a memory's expiry
    // is, only its frontmatter says.
    let rows = ListRequest {
        path: Some(&root.canonical()),
        ..Default::default()
    }
    .rows(md)?;
    let found: Vec<_> = super::list::entries(md, &rows)
        .into_iter()
        .filter(|e| e.expired)
        .map(|e| (e.path, e.content_sha256, e.expires_at.unwrap_or_default()))
        .collect();
    let mut out = Vec::new();
    for (path, sha, expires_at) in found {
        let version = if dry_run {
            None
        } else {
            let reason = format!("expired at {expires_at} (memdir prune --expired)");
            match delete::delete(md, &path, sha.as_deref(), Some(&reason), actor) {
                Ok(r) => r.versions.first().copied(),
                // Changed or gone since the listing: not this prune's to delete.
                Err(Error::Precondition { .. } | Error::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            }
        };
        out.push(Expired {
            path,
            expires_at,
            version,
        });
    }
    Ok(out)
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
