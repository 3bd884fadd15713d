//! Writing an imported history into a store that has none, after checking it: versions
//! increasing, every path one a store's history can hold, every content present and
//! matching its hash.

use std::collections::HashSet;

use super::log::{HISTORY, LOG, Record, to_line};
use crate::error::{Error, Result};
use crate::store::{Store, StoreLock};

/// Writes `records` as the whole history of a store that has none (an import), durably,
/// under the store lock, after [`check_import`].
pub fn import_records(store: &Store, _lock: &StoreLock, records: &[Record]) -> Result<()> {
    if store.state_len(LOG)? > 0 {
        return Err(Error::InvalidArgument(
            "the store already has a history; import into a store without one".into(),
        ));
    }
    check_import(records)?;
    let mut bytes = Vec::new();
    for r in records {
        to_line(r, &mut bytes)?;
    }
    store.state_dirs(HISTORY)?;
    store.state_write(LOG, &bytes)
}

/// Checks records about to be imported: increasing versions, every version's content
/// present (carried by it or an earlier record) and matching its hash.
pub fn check_import(records: &[Record]) -> Result<()> {
    let mut last = 0u64;
    let mut contents = HashSet::new();
    for r in records {
        let paths = std::iter::once(r.path.as_str()).chain(r.from.as_deref());
        if let Some(bad) = paths
            .filter(|p| !(r.redacted && p.is_empty()))
            .find(|p| !recordable(p))
        {
            return Err(Error::InvalidArgument(format!(
                "the archive's version {} names the path {}, which cannot be in a store's history",
                r.version,
                crate::text::head_chars(&crate::path::printable(bad), 120)
            )));
        }
        if r.version <= last {
            return Err(Error::InvalidArgument(format!(
                "the archive's history is out of order at version {}",
                r.version
            )));
        }
        last = r.version;
        if let Some(bytes) = r.content_bytes() {
            if crate::text::sha256_hex(&bytes) != r.sha256 {
                return Err(Error::InvalidArgument(format!(
                    "the archive's version {} does not match its sha256",
                    r.version
                )));
            }
            contents.insert(r.sha256.as_str());
        } else if !r.redacted && !contents.contains(r.sha256.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "the archive's version {} has no content (no earlier record carries it)",
                r.version
            )));
        }
    }
    Ok(())
}

/// Whether `rel` can be the path of a version: one a tool can name, or a file a folder
/// delete removed (hidden, or a name no path can spell, so not held to the path policy),
/// but never a way out of the store or into its state folder: no empty, `.` or `..`
/// segment, no leading `/`, no NUL, not under `.memdir`, at most 4,096 bytes.
fn recordable(rel: &str) -> bool {
    rel.len() <= 4096
        && !rel.starts_with(".memdir/")
        && rel != ".memdir"
        && rel
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != ".." && !seg.contains('\0'))
}
