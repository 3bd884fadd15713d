//! The archive format of `memdir export` / `memdir import`: a store with its history as
//! one portable file. The archive is JSON Lines: a header, one line per memory, one line
//! per history record (with the content the log carries), so it can be read, diffed and
//! checked with ordinary tools:
//!
//! ```text
//! {"memdir_archive":1,"store":"memories","files":2,"versions":3}
//! {"file":"notes/rust.md","content":"...","modified":"2026-11-27T15:04:05Z"}
//! {"record":{"version":1,"op":"created","path":"notes/rust.md",...,"content":"..."}}
//! ```
//!
//! An archive is untrusted input: reading it checks its shape and counts, and hands each
//! memory's path and content to the caller to check against the path policy and the size
//! limit (`memory::archive`, which also checks the history with `check_import` and
//! writes it all into an empty store).

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use super::log::Record;
use crate::error::{Error, Result};

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
        /// The file's last change, RFC 3339 UTC (absent in archives of earlier memdir).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        modified: Option<String>,
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

/// An archive read whole, before anything is written: its memories (`P`: where each
/// goes, as the caller checked it) and its history records.
#[derive(Debug)]
pub struct Archive<P> {
    /// Each memory: where it goes, its content, and its last change when the archive
    /// says (never after the time it was read).
    pub files: Vec<(P, String, Option<std::time::SystemTime>)>,
    pub records: Vec<Record>,
}

/// An archive's time, as a time no later than now (an archive is untrusted: a time in
/// the future would keep a memory fresh for ever); `None` if it is not one.
pub fn time_of(text: &str) -> Option<std::time::SystemTime> {
    let secs = u64::try_from(crate::text::parse_instant(text)?).ok()?;
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    Some(at.min(std::time::SystemTime::now()))
}

/// The error for line `n` of an archive.
fn bad(n: usize, why: String) -> Error {
    Error::InvalidArgument(format!(
        "the archive's line {n} {why}; nothing was imported"
    ))
}

/// Writes an archive of store `store`: its memories (`(path in the store, content, last
/// change)`) and its history records.
pub fn write(
    out: &mut dyn Write,
    store: &str,
    files: Vec<(String, String, std::time::SystemTime)>,
    records: Vec<Record>,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("the archive", &e);
    let mut line = |l: &Line| -> Result<()> {
        serde_json::to_writer(&mut *out, l).map_err(|e| io(e.into()))?;
        out.write_all(b"\n").map_err(io)
    };
    line(&Line::Header {
        memdir_archive: FORMAT,
        store: store.to_owned(),
        files: files.len(),
        versions: records.len(),
    })?;
    for (file, content, modified) in files {
        line(&Line::File {
            file,
            content,
            modified: Some(crate::text::rfc3339(modified)),
        })?;
    }
    for record in records {
        line(&Line::Record { record })?;
    }
    out.flush().map_err(io)
}

/// Reads an archive: a header first (of this format), then memories and records, as many
/// as the header promises. `file` checks each memory (its path in the store and its
/// content) and says where it goes, or why it cannot be imported.
pub fn read<P>(
    input: &mut dyn BufRead,
    mut file: impl FnMut(&str, &str) -> std::result::Result<P, String>,
) -> Result<Archive<P>> {
    let mut archive = Archive {
        files: Vec::new(),
        records: Vec::new(),
    };
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
            } if n == 1 => header = Some(header_of(memdir_archive, files, versions)?),
            _ if header.is_none() => {
                return Err(bad(
                    n,
                    "should be the header ({\"memdir_archive\":1,...})".into(),
                ));
            }
            Line::Header { .. } => return Err(bad(n, "is a second header".into())),
            Line::File {
                file: path,
                content,
                modified,
            } => {
                let at = file(&path, &content).map_err(|why| bad(n, why))?;
                let modified = match modified {
                    None => None,
                    Some(m) => Some(time_of(&m).ok_or_else(|| {
                        bad(
                            n,
                            format!(
                                "has a `modified` that is not an RFC 3339 time: `{}`",
                                crate::text::head_chars(&m, 60)
                            ),
                        )
                    })?),
                };
                archive.files.push((at, content, modified));
            }
            Line::Record { record } => archive.records.push(record),
        }
    }
    let Some((want_files, want_versions)) = header else {
        return Err(Error::InvalidArgument(
            "the archive is empty; nothing was imported".into(),
        ));
    };
    if (archive.files.len(), archive.records.len()) != (want_files, want_versions) {
        return Err(Error::InvalidArgument(format!(
            "the archive is incomplete: its header promises {want_files} files and {want_versions} versions, it holds {} and {}; nothing was imported",
            archive.files.len(),
            archive.records.len()
        )));
    }
    Ok(archive)
}

/// What the header (line 1) promises: `(files, versions)`, if its format is this one.
fn header_of(format: u64, files: usize, versions: usize) -> Result<(usize, usize)> {
    if format != FORMAT {
        return Err(bad(
            1,
            format!("is format {format}; this memdir reads format {FORMAT}"),
        ));
    }
    Ok((files, versions))
}
