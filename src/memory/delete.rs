//! `memory_delete`: removing a memory or a folder with everything in it, recorded as one
//! `Deleted` version per file (with the caller's reason), under the store's lock.

use super::Memdir;
use super::mutation::{check_precondition, names_folder, normalise_sha, not_a_folder};
use crate::error::{Error, Result};
use crate::history::{Draft, Op, Recorder};
use crate::path::MemPath;
use crate::search::fresh::Change;
use crate::store::EntryKind;
use crate::text;

/// Longest `reason` a deletion keeps, in bytes.
pub const MAX_REASON_BYTES: usize = 1000;

/// `memory_delete`'s result.
#[derive(Debug)]
pub struct DeleteResult {
    pub path: String,
    /// Canonical paths of every file removed.
    pub deleted_files: Vec<String>,
    /// The history versions recording the deletions.
    pub versions: Vec<u64>,
}

/// Deletes a memory or a folder; `reason`, if given, is kept in each version made.
pub fn delete(
    md: &Memdir,
    raw: &str,
    expected_sha256: Option<&str>,
    reason: Option<&str>,
    actor: &str,
) -> Result<DeleteResult> {
    if let Some(r) = reason
        && r.len() > MAX_REASON_BYTES
    {
        return Err(Error::InvalidArgument(format!(
            "reason is {} bytes; at most {MAX_REASON_BYTES} are kept: say why in a sentence",
            r.len()
        )));
    }
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    let p = md.mutable_path(raw)?;
    let expected = expected_sha256.map(normalise_sha).transpose()?;
    let store = md.store(&p);
    let rec = md.recorder(&p)?;
    let kind = store.entry_kind(&p)?.ok_or_else(|| Error::NotFound {
        path: p.canonical(),
    })?;
    // A trailing `/` names a folder: never a file's name with the slash dropped.
    if names_folder(raw) && kind != EntryKind::Dir {
        return Err(not_a_folder(&p, kind));
    }
    let deletion = Deletion { reason, actor };
    let (rec, deleted_files) = if kind == EntryKind::Dir {
        if expected.is_some() {
            return Err(Error::Sha256OnFolder);
        }
        delete_folder(md, rec, &p, &deletion)?
    } else {
        delete_file(md, rec, &p, expected.as_deref(), &deletion)?
    };
    let versions = rec.commit()?;
    md.index_changed(&p, Change::Removed);
    Ok(DeleteResult {
        path: p.canonical(),
        deleted_files,
        versions,
    })
}

/// Who deletes, and why.
struct Deletion<'a> {
    reason: Option<&'a str>,
    actor: &'a str,
}

impl Deletion<'_> {
    /// Records the deletion of the file at `rel` holding `bytes`.
    fn note(&self, rec: &mut Recorder<'_>, rel: String, sha256: &str, bytes: &[u8]) -> Result<()> {
        rec.note_current(&rel, Some((sha256, bytes)))?;
        rec.note(
            Draft {
                op: Op::Deleted,
                path: rel,
                from: None,
                actor: self.actor.to_owned(),
                sha256: sha256.to_owned(),
                size: bytes.len() as u64,
                bytes: None,
                reason: self.reason.map(str::to_owned),
            },
            None,
        )
    }
}

/// Removes the file `p`; returns the recorder, ready to commit, and the file removed.
fn delete_file<'m>(
    md: &Memdir,
    mut rec: Recorder<'m>,
    p: &MemPath,
    expected: Option<&str>,
    deletion: &Deletion,
) -> Result<(Recorder<'m>, Vec<String>)> {
    let cur = md.current(p).ok().flatten();
    if expected.is_some() {
        let cur = md.current(p)?;
        check_precondition(p, expected, cur.as_ref(), None)?;
    }
    if let Some(cur) = &cur {
        deletion.note(&mut rec, p.rel(), &cur.sha256, cur.text.as_bytes())?;
    }
    rec.begin()?;
    if let Err(e) = md.store(p).remove_file(p) {
        rec.abandon();
        return Err(e);
    }
    Ok((rec, vec![p.canonical()]))
}

/// Removes the folder `p` and everything in it; returns the recorder, ready to commit,
/// and the files removed. Every file removed that could be a memory is recorded, hidden
/// ones too (`.name`, `node_modules`: list and search skip them, but a tool can write
/// them, and what a delete removes is never lost).
fn delete_folder<'m>(
    md: &Memdir,
    mut rec: Recorder<'m>,
    p: &MemPath,
    deletion: &Deletion,
) -> Result<(Recorder<'m>, Vec<String>)> {
    let store = md.store(p);
    let mut entries = store.walk_everything(p)?;
    for entry in entries.iter().filter(|e| e.kind == EntryKind::File) {
        if let Ok(data) = store.read(&entry.path)
            && could_be_memory(md, &data.bytes)
        {
            let sha = text::sha256_hex(&data.bytes);
            deletion.note(&mut rec, entry.path.rel(), &sha, &data.bytes)?;
        }
    }
    rec.begin()?;
    // Deepest first, so every folder is empty when its turn comes.
    entries.sort_by(|a, b| {
        b.depth
            .cmp(&a.depth)
            .then(a.path.segments.cmp(&b.path.segments))
    });
    let mut deleted_files = Vec::new();
    let removed = (|| {
        for entry in &entries {
            if entry.kind == EntryKind::Dir {
                store.remove_empty_dir(&entry.path)?;
            } else {
                store.remove_file(&entry.path)?;
                deleted_files.push(entry.path.canonical());
            }
        }
        store.remove_empty_dir(p)
    })();
    // Whatever was removed is recorded (repair keeps the records that happened).
    if let Err(e) = removed {
        drop(rec);
        md.index_changed(p, Change::Removed);
        return Err(e);
    }
    deleted_files.sort();
    Ok((rec, deleted_files))
}

/// Whether a file's bytes could be a memory (UTF-8 text within the size limit), so its
/// removal or move is recorded: a binary file under `.git` or `node_modules` is not.
pub(super) fn could_be_memory(md: &Memdir, bytes: &[u8]) -> bool {
    bytes.len() as u64 <= md.settings.max_file_bytes && std::str::from_utf8(bytes).is_ok()
}
