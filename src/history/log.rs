//! The log itself: what a version records ([`Record`], [`Op`], [`Draft`]), and records as
//! JSON lines, written and read back.

use serde::{Deserialize, Serialize};

use super::base64::base64_decode;
use crate::error::{Error, Result};
use crate::store::Store;

pub(super) const LOG: &str = ".memdir/history/log.jsonl";
pub(super) const HISTORY: &str = ".memdir/history";

/// What a version records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Created,
    Modified,
    Renamed,
    Deleted,
}

/// One immutable version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub version: u64,
    pub op: Op,
    /// Path relative to the store root ("" once redacted). For a rename, the new path.
    pub path: String,
    /// For a rename, the old path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// RFC 3339 UTC.
    pub at: String,
    /// The MCP client's name and version, `cli`, or `external` for changes noticed on disk.
    pub actor: String,
    /// The content of this version ("" once redacted). For a deletion, the content deleted.
    pub sha256: String,
    pub size: u64,
    #[serde(default)]
    pub redacted: bool,
    /// Why, as the deleting agent or person said (`memory_delete`'s `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Once redacted: the sha256 of the path it had, so the version stays listed in that
    /// path's history while the path itself is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_sha256: Option<String>,
    /// The content, on the first record of each distinct content (UTF-8 text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The content, when it is not UTF-8 (a file removed with its folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_base64: Option<String>,
}

impl Record {
    pub(super) fn has_content(&self) -> bool {
        self.content.is_some() || self.content_base64.is_some()
    }

    pub(super) fn without_content(&self) -> Record {
        Record {
            version: self.version,
            op: self.op,
            path: self.path.clone(),
            from: self.from.clone(),
            at: self.at.clone(),
            actor: self.actor.clone(),
            sha256: self.sha256.clone(),
            size: self.size,
            redacted: self.redacted,
            reason: self.reason.clone(),
            path_sha256: self.path_sha256.clone(),
            content: None,
            content_base64: None,
        }
    }

    pub(super) fn take_content(&mut self) -> (Option<String>, Option<String>) {
        (self.content.take(), self.content_base64.take())
    }

    pub(super) fn content_bytes(&self) -> Option<Vec<u8>> {
        match (&self.content, &self.content_base64) {
            (Some(text), _) => Some(text.clone().into_bytes()),
            (None, Some(b64)) => base64_decode(b64),
            _ => None,
        }
    }
}

/// A record to be made: everything but its number.
#[derive(Clone, Debug)]
pub struct Draft {
    pub op: Op,
    pub path: String,
    pub from: Option<String>,
    pub actor: String,
    pub sha256: String,
    pub size: u64,
    /// The content, to be stored unless the log already has it.
    pub bytes: Option<Vec<u8>>,
    /// Why (a deletion's reason).
    pub reason: Option<String>,
}

/// Parses complete log lines with their offsets (relative to `bytes`); a malformed line
/// (which repair removes) is skipped.
pub(super) fn parse(bytes: &[u8]) -> (Vec<(u64, Record)>, u64) {
    let mut out = Vec::new();
    // Reading from a slice cannot fail.
    let consumed = read_records(bytes, |at, r| out.push((at, r))).unwrap_or_default();
    (out, consumed)
}

/// A record read from the log: its line's offset, whether that line carries the content
/// (dropped from the record), and the record.
type LogRecord = (u64, bool, Record);

/// Reads the log from `offset` one line at a time, as [`parse`] does, keeping only the
/// records without their content (whether a line carried one is kept alongside): memory
/// holds one line at a time, not the log.
pub(super) fn parse_log(store: &Store, offset: u64) -> Result<(Vec<LogRecord>, u64)> {
    let mut out = Vec::new();
    let Some(reader) = store.state_reader(LOG, offset)? else {
        return Ok((out, 0));
    };
    let consumed = read_records(reader, |at, mut r| {
        let kept = r.has_content();
        r.take_content();
        out.push((at, kept, r));
    })
    .map_err(|e| Error::io(LOG, &e))?;
    Ok((out, consumed))
}

/// Hands each record of the complete lines of `input` to `each` with its line's offset,
/// skipping a malformed line (which repair removes) and stopping before an unfinished
/// last one; returns the bytes of complete lines.
fn read_records(
    mut input: impl std::io::BufRead,
    mut each: impl FnMut(u64, Record),
) -> std::io::Result<u64> {
    let mut consumed = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        input.read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\n") {
            return Ok(consumed);
        }
        match serde_json::from_slice::<Record>(&line) {
            Ok(r) => each(consumed, r),
            Err(e) => tracing::warn!(error = %e, "skipped a malformed history record"),
        }
        consumed += line.len() as u64;
    }
}

pub(super) fn to_line(r: &Record, out: &mut Vec<u8>) -> Result<()> {
    serde_json::to_writer(&mut *out, r)
        .map_err(|e| Error::Internal(format!("writing a history record: {e}")))?;
    out.push(b'\n');
    Ok(())
}

/// Every record, oldest first, without their content.
pub fn records(store: &Store) -> Result<Vec<Record>> {
    Ok(parse_log(store, 0)?
        .0
        .into_iter()
        .map(|(_, _, r)| r)
        .collect())
}

/// Every record, oldest first, with the content the log carries (for an export).
pub fn export_records(store: &Store) -> Result<Vec<Record>> {
    Ok(parse(&store.state_read_from(LOG, 0)?)
        .0
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_complete_lines_only() {
        let r = Record {
            version: 1,
            op: Op::Created,
            path: "a.md".into(),
            from: None,
            at: "2026-11-22T08:00:00Z".into(),
            actor: "cli".into(),
            sha256: "ab".repeat(32),
            size: 3,
            redacted: false,
            reason: Some("obsolete".into()),
            path_sha256: None,
            content: Some("abc".into()),
            content_base64: None,
        };
        let mut bytes = serde_json::to_vec(&r).unwrap();
        bytes.push(b'\n');
        let whole = bytes.len() as u64;
        bytes.extend_from_slice(b"{\"version\":2,\"op\":\"mod");
        let (records, consumed) = parse(&bytes);
        assert_eq!((records, consumed), (vec![(0, r)], whole));
    }
}
