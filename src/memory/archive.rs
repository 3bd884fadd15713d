//! `memdir export` / `memdir import`: a store and its history as one file (the format is
//! `crate::history::archive`). An archive is untrusted input: every path meets the path
//! policy, every memory the size limit and UTF-8, every version its hash; and it goes only
//! into a store that has no memories and no history yet, so an import never overwrites
//! anything.

use std::collections::HashSet;
use std::io::{BufRead, Write};

use super::Memdir;
use crate::error::{Error, Result};
use crate::history::{self, Record, archive};
use crate::path::MemPath;
use crate::store::{EntryKind, STATE_DIR, WalkEntry, WriteMode};

pub use crate::history::archive::ArchiveSummary;

/// Every entry of the store at `root` that could be a memory: hidden names and
/// `node_modules` included (a tool can write them, and list and search only skip them),
/// memdir's own state folder not.
fn memory_entries(s: &crate::store::Store, root: &MemPath) -> Result<Vec<WalkEntry>> {
    let mut entries = s.walk_everything(root)?;
    entries.retain(|e| {
        e.path
            .segments
            .first()
            .is_none_or(|first| first.as_str() != STATE_DIR)
    });
    Ok(entries)
}

/// Writes a store (the first if `None`): all its memories, hidden ones included, and its
/// whole history.
pub fn export(md: &Memdir, store: Option<&str>, out: &mut dyn Write) -> Result<ArchiveSummary> {
    let root = md.store_root(store)?;
    let s = md.store(&root);
    let mut summary = ArchiveSummary::default();
    let mut files = Vec::new();
    let mut entries = memory_entries(s, &root)?;
    entries.sort_by(|a, b| a.path.segments.cmp(&b.path.segments));
    for e in entries.into_iter().filter(|e| e.kind == EntryKind::File) {
        match md.current(&e.path) {
            Ok(Some(cur)) => files.push((e.path.rel(), cur.text, cur.modified)),
            Ok(None) => {}
            Err(err) => summary
                .skipped
                .push(format!("{}: {err}", e.path.canonical())),
        }
    }
    let records = if md.settings.history {
        history::export_records(s)?
    } else {
        Vec::new()
    };
    summary.files = files.len();
    summary.versions = records.len();
    archive::write(out, &s.name, files, records)?;
    Ok(summary)
}

/// Reads an archive into a store (the first if `None`), which must have no memories
/// and no history.
/// Everything is checked before anything is written; files are written durably, then
/// the history in one durable write.
pub fn import(md: &Memdir, store: Option<&str>, input: &mut dyn BufRead) -> Result<ArchiveSummary> {
    let root = md.store_root(store)?;
    let name = &md.store(&root).name;
    let mut seen = HashSet::new();
    let archive = archive::read(input, |file, content| {
        let p = md
            .path(&format!("/{name}/{file}"))
            .map_err(|e| format!("names a path memdir refuses: {e}"))?;
        if p.is_root() {
            return Err("names the store itself".into());
        }
        let max = md.settings.max_file_bytes;
        if content.len() as u64 > max {
            return Err(format!(
                "holds {file}, {} bytes; the limit is {max}",
                content.len()
            ));
        }
        if !seen.insert(p.canonical()) {
            return Err(format!("repeats {file}"));
        }
        Ok(p)
    })?;
    fill(md, &root, &archive.files, &archive.records)?;
    Ok(ArchiveSummary {
        files: archive.files.len(),
        versions: archive.records.len(),
        skipped: Vec::new(),
    })
}

/// Each path's last version in `records` that left content there (not a deletion, not
/// redacted): its content's sha256 and its time.
fn last_changes(
    records: &[Record],
) -> std::collections::HashMap<&str, (&str, std::time::SystemTime)> {
    let mut last = std::collections::HashMap::new();
    for r in records {
        if r.op == history::Op::Deleted || r.redacted {
            last.remove(r.path.as_str());
            continue;
        }
        let before = r.from.as_deref().and_then(|from| last.remove(from));
        // A move keeps the file's time (the content did not change); an edit or a
        // creation takes its own. An archive is untrusted: no time after now.
        let at = match before {
            Some((sha, at)) if r.op == history::Op::Renamed && sha == r.sha256 => Some(at),
            _ => archive::time_of(&r.at),
        };
        match at {
            Some(at) => last.insert(r.path.as_str(), (r.sha256.as_str(), at)),
            None => last.remove(r.path.as_str()),
        };
    }
    last
}

/// Writes an archive's memories and history into the store at `root`, under its lock,
/// if it has neither yet: the files first, then their history, so the log is never
/// ahead of the files.
fn fill(
    md: &Memdir,
    root: &MemPath,
    files: &[(MemPath, String, Option<std::time::SystemTime>)],
    records: &[Record],
) -> Result<()> {
    let s = md.store(root);
    let lock = s.lock()?;
    if memory_entries(s, root)?
        .iter()
        .any(|e| e.kind == EntryKind::File)
    {
        return Err(Error::InvalidArgument(format!(
            "the store /{} already has memories; import into an empty store",
            s.name
        )));
    }
    if !records.is_empty() {
        if !md.settings.history {
            return Err(Error::InvalidArgument(
                "the archive has a history and history is off (--no-history)".into(),
            ));
        }
        if !history::records(s)?.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "the store /{} already has a history; import into a store without one",
                s.name
            )));
        }
        history::check_import(records)?;
    }
    // The store held no memory: a failure part way (a link out of the store where a
    // file goes, a full disk) removes what this import wrote, so it can be retried.
    let mut written: Vec<&MemPath> = Vec::new();
    let undo = |written: &[&MemPath], e: Error| {
        for p in written {
            let _ = s.remove_file(p);
        }
        Error::InvalidArgument(format!("{e}; nothing was imported"))
    };
    let ages = last_changes(records);
    for (p, content, modified) in files {
        // A memory keeps its age (review, the freshness note, sort by age): the file's
        // time the archive gives, else, in an archive without file times, its last
        // version's when the content is that version's.
        let dated = modified.or_else(|| match ages.get(p.rel().as_str()) {
            Some((sha, at)) if *sha == crate::text::sha256_hex(content.as_bytes()) => Some(*at),
            _ => None,
        });
        let made = match dated {
            Some(at) => s.create_dated(p, content.as_bytes(), at),
            None => s.write(p, content.as_bytes(), WriteMode::CreateNew),
        };
        if let Err(e) = made {
            let e = undo(&written, e);
            lock.abandon();
            return Err(e);
        }
        written.push(p);
    }
    if !records.is_empty()
        && let Err(e) = history::import_records(s, &lock, records)
    {
        let e = undo(&written, e);
        lock.abandon();
        return Err(e);
    }
    // A database commits here: its failure is the import's (nothing was imported, or,
    // when the commit went unanswered, maybe all of it).
    lock.finish()
}
