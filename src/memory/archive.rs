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
use crate::store::{EntryKind, WriteMode};

pub use crate::history::archive::ArchiveSummary;

/// Writes a store (the first if `None`): its visible memories and its whole history.
pub fn export(md: &Memdir, store: Option<&str>, out: &mut dyn Write) -> Result<ArchiveSummary> {
    let root = md.store_root(store)?;
    let s = md.store(&root);
    let mut summary = ArchiveSummary::default();
    let mut files = Vec::new();
    let mut entries = s.walk(&root, None)?;
    entries.sort_by(|a, b| a.path.segments.cmp(&b.path.segments));
    for e in entries.into_iter().filter(|e| e.kind == EntryKind::File) {
        match md.current(&e.path) {
            Ok(Some(cur)) => files.push((e.path.rel(), cur.text)),
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

/// Writes an archive's memories and history into the store at `root`, under its lock,
/// if it has neither yet: the files first, then their history, so the log is never
/// ahead of the files.
fn fill(
    md: &Memdir,
    root: &MemPath,
    files: &[(MemPath, String)],
    records: &[Record],
) -> Result<()> {
    let s = md.store(root);
    let lock = s.lock()?;
    if s.walk(root, None)?
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
    for (p, content) in files {
        s.write(p, content.as_bytes(), WriteMode::CreateNew)?;
    }
    if !records.is_empty() {
        history::import_records(s, &lock, records)?;
    }
    drop(lock);
    Ok(())
}
