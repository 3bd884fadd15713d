//! A memory or a folder moved within its store (`memory_edit {rename}`), recorded as one
//! `Renamed` version per file that moves, under the store's lock.

use super::mutation::check_precondition;
use super::{Current, EditResult, Memdir};
use crate::error::{Error, MoveFault, Result};
use crate::history::{Draft, Op, Recorder};
use crate::path::MemPath;
use crate::search::fresh::Change;
use crate::store::{EntryKind, Store};
use crate::text;

/// A file that moves, with its content.
struct Moving {
    old: String,
    new: String,
    sha256: String,
    bytes: Vec<u8>,
}

/// Moves `from` (a file or a folder) to `new_path`; `expected` is for a file only.
pub(super) fn rename(
    md: &Memdir,
    from: &MemPath,
    new_path: &str,
    expected: Option<&str>,
    actor: &str,
) -> Result<EditResult> {
    let to = md.mutable_path(new_path)?;
    if to.store != from.store {
        return Err(Error::Move(MoveFault::AcrossStores {
            from: from.canonical(),
            to: to.canonical(),
        }));
    }
    if to == *from {
        return Err(Error::Move(MoveFault::OntoItself {
            path: from.canonical(),
        }));
    }
    let store = md.store(from);
    let mut rec = md.recorder(from)?;
    let kind = store.entry_kind(from)?.ok_or_else(|| Error::NotFound {
        path: from.canonical(),
    })?;
    let (moving, moved) = if kind == EntryKind::Dir {
        if expected.is_some() {
            return Err(Error::Sha256OnFolder);
        }
        (folder_moves(md, store, from, &to)?, None)
    } else {
        let cur = md.current(from)?.ok_or_else(|| Error::NotFound {
            path: from.canonical(),
        })?;
        check_precondition(from, expected, Some(&cur), None)?;
        let one = Moving {
            old: from.rel(),
            new: to.rel(),
            sha256: cur.sha256.clone(),
            bytes: cur.text.as_bytes().to_vec(),
        };
        (vec![one], Some(cur))
    };
    note_moves(&mut rec, &moving, actor)?;
    rec.begin()?;
    if let Err(e) = store.rename(from, &to) {
        rec.abandon();
        return Err(match e {
            Error::AlreadyExists { .. } => Error::AlreadyExists {
                path: to.canonical(),
            },
            other => other,
        });
    }
    let version = rec.commit()?.last().copied();
    index_moved(md, from, &to, moved.as_ref());
    let (content_sha256, size_bytes, file_count) = match moved {
        Some(cur) => (Some(cur.sha256), cur.text.len() as u64, None),
        None => (
            None,
            moving.iter().map(|m| m.bytes.len() as u64).sum(),
            Some(moving.len() as u64),
        ),
    };
    Ok(EditResult {
        path: to.canonical(),
        content_sha256,
        size_bytes,
        file_count,
        snippet: String::new(),
        unchanged: false,
        renamed_from: Some(from.canonical()),
        stored_secret: None,
        version,
    })
}

/// Every file under the folder `from` that could be a memory, hidden ones too (they move
/// with it), with where it lands under `to`.
fn folder_moves(md: &Memdir, store: &Store, from: &MemPath, to: &MemPath) -> Result<Vec<Moving>> {
    let mut moving = Vec::new();
    for entry in store
        .walk_everything(from)?
        .into_iter()
        .filter(|e| e.kind == EntryKind::File)
    {
        if let Ok(data) = store.read(&entry.path)
            && super::delete::could_be_memory(md, &data.bytes)
        {
            let suffix = &entry.path.segments[from.segments.len()..];
            let mut target = to.clone();
            target.segments.extend(suffix.iter().cloned());
            moving.push(Moving {
                old: entry.path.rel(),
                new: target.rel(),
                sha256: text::sha256_hex(&data.bytes),
                bytes: data.bytes,
            });
        }
    }
    Ok(moving)
}

fn note_moves(rec: &mut Recorder<'_>, moving: &[Moving], actor: &str) -> Result<()> {
    for m in moving {
        rec.note_current(&m.old, Some((&m.sha256, &m.bytes)))?;
        rec.note(
            Draft {
                op: Op::Renamed,
                path: m.new.clone(),
                from: Some(m.old.clone()),
                actor: actor.to_owned(),
                sha256: m.sha256.clone(),
                size: m.bytes.len() as u64,
                bytes: None,
                reason: None,
            },
            None,
        )?;
    }
    Ok(())
}

/// Tells the search index of a move: a file keeps its inode and mtime, so its stamp
/// moves with it; a folder's whole subtree changed.
fn index_moved(md: &Memdir, from: &MemPath, to: &MemPath, moved: Option<&Current>) {
    md.index_changed(from, Change::Removed);
    match moved {
        Some(cur) => md.index_changed(
            to,
            Change::Written {
                text: &cur.text,
                stamp: cur.stamp,
            },
        ),
        None => md.index_changed(to, Change::Tree),
    }
}
