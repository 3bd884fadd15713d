//! `memdir export` / `memdir import`: a store with its history as one portable file. The
//! archive is JSON Lines: a header, one line per memory, one line per history record
//! (with the content the log carries), so it can be read, diffed and checked with
//! ordinary tools:
//!
//! ```text
//! {"memdir_archive":1,"store":"memories","files":2,"versions":3}
//! {"file":"notes/rust.md","content":"..."}
//! {"record":{"version":1,"op":"created","path":"notes/rust.md",...,"content":"..."}}
//! ```
//!
//! An archive is untrusted input: every path meets the path policy, every memory the size
//! limit and UTF-8, every version its hash; and it goes only into a store that has no
//! memories and no history yet, so an import never overwrites anything.

use std::collections::HashSet;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use super::Memdir;
use crate::error::{Error, Result};
use crate::history::{self, Record};
use crate::path::MemPath;
use crate::store::{EntryKind, WriteMode};

const FORMAT: u64 = 1;

/// One line of an archive.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header {
        memdir_archive: u64,
        store: String,
        files: usize,
        versions: usize,
    },
    File {
        file: String,
        content: String,
    },
    Record {
        record: Record,
    },
}

/// What an export or import moved.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ArchiveSummary {
    pub files: usize,
    pub versions: usize,
    /// Files left out of an export: not UTF-8, hard-linked, special, or out of the store.
    pub skipped: Vec<String>,
}

impl Memdir {
    /// Writes a store (the first if `None`): its visible memories and its whole history.
    pub fn export(&self, store: Option<&str>, out: &mut dyn Write) -> Result<ArchiveSummary> {
        let root = self.store_root(store)?;
        let s = self.store(&root);
        let mut summary = ArchiveSummary::default();
        let mut files = Vec::new();
        let mut entries = s.walk(&root, None)?;
        entries.sort_by(|a, b| a.path.segments.cmp(&b.path.segments));
        for e in entries.into_iter().filter(|e| e.kind == EntryKind::File) {
            match self.current(&e.path) {
                Ok(Some(cur)) => files.push((e.path.rel(), cur.text)),
                Ok(None) => {}
                Err(err) => summary
                    .skipped
                    .push(format!("{}: {err}", e.path.canonical())),
            }
        }
        let records = if self.settings.history {
            history::export_records(s)?
        } else {
            Vec::new()
        };
        let io = |e: std::io::Error| Error::io("the archive", &e);
        let mut line = |l: &Line| -> Result<()> {
            serde_json::to_writer(&mut *out, l).map_err(|e| io(e.into()))?;
            out.write_all(b"\n").map_err(io)
        };
        line(&Line::Header {
            memdir_archive: FORMAT,
            store: s.name.clone(),
            files: files.len(),
            versions: records.len(),
        })?;
        summary.files = files.len();
        summary.versions = records.len();
        for (file, content) in files {
            line(&Line::File { file, content })?;
        }
        for record in records {
            line(&Line::Record { record })?;
        }
        out.flush().map_err(io)?;
        Ok(summary)
    }

    /// Reads an archive into a store (the first if `None`), which must have no memories
    /// and no history.
    /// Everything is checked before anything is written; files are written durably, then
    /// the history in one durable write.
    pub fn import(&self, store: Option<&str>, input: &mut dyn BufRead) -> Result<ArchiveSummary> {
        let root = self.store_root(store)?;
        let s = self.store(&root);
        let bad = |n: usize, why: String| {
            Error::InvalidArgument(format!(
                "the archive's line {n} {why}; nothing was imported"
            ))
        };
        let mut files: Vec<(MemPath, String)> = Vec::new();
        let mut seen = HashSet::new();
        let mut records = Vec::new();
        let mut header = None;
        for (i, raw) in input.lines().enumerate() {
            let n = i + 1;
            let raw = raw.map_err(|e| Error::io("the archive", &e))?;
            if raw.trim().is_empty() {
                continue;
            }
            let parsed: Line = serde_json::from_str(&raw)
                .map_err(|e| bad(n, format!("is not an archive line ({e})")))?;
            match parsed {
                Line::Header {
                    memdir_archive,
                    files,
                    versions,
                    ..
                } if n == 1 => {
                    if memdir_archive != FORMAT {
                        return Err(bad(
                            n,
                            format!(
                                "is format {memdir_archive}; this memdir reads format {FORMAT}"
                            ),
                        ));
                    }
                    header = Some((files, versions));
                }
                _ if header.is_none() => {
                    return Err(bad(
                        n,
                        "should be the header ({\"memdir_archive\":1,...})".into(),
                    ));
                }
                Line::Header { .. } => return Err(bad(n, "is a second header".into())),
                Line::File { file, content } => {
                    let p = self
                        .path(&format!("/{}/{file}", s.name))
                        .map_err(|e| bad(n, format!("names a path memdir refuses: {e}")))?;
                    if p.is_root() {
                        return Err(bad(n, "names the store itself".into()));
                    }
                    let max = self.settings.max_file_bytes;
                    if content.len() as u64 > max {
                        return Err(bad(
                            n,
                            format!("holds {file}, {} bytes; the limit is {max}", content.len()),
                        ));
                    }
                    if !seen.insert(p.canonical()) {
                        return Err(bad(n, format!("repeats {file}")));
                    }
                    files.push((p, content));
                }
                Line::Record { record } => records.push(record),
            }
        }
        let Some((want_files, want_versions)) = header else {
            return Err(Error::InvalidArgument(
                "the archive is empty; nothing was imported".into(),
            ));
        };
        if (files.len(), records.len()) != (want_files, want_versions) {
            return Err(Error::InvalidArgument(format!(
                "the archive is incomplete: its header promises {want_files} files and {want_versions} versions, it holds {} and {}; nothing was imported",
                files.len(),
                records.len()
            )));
        }
        let lock = s.lock()?;
        if s.walk(&root, None)?
            .iter()
            .any(|e| e.kind == EntryKind::File)
        {
            return Err(Error::InvalidArgument(format!(
                "the store /{} already has memories; import into an empty store",
                s.name
            )));
        }
        if !records.is_empty() {
            if !self.settings.history {
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
            history::check_import(&records)?;
        }
        // The files first, then their history: the log is never ahead of the files.
        for (p, content) in &files {
            s.write(p, content.as_bytes(), WriteMode::CreateNew)?;
        }
        if !records.is_empty() {
            history::import_records(s, &lock, &records)?;
        }
        drop(lock);
        Ok(ArchiveSummary {
            files: files.len(),
            versions: records.len(),
            skipped: Vec::new(),
        })
    }
}
