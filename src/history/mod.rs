//! Version history of a store: an append-only log of every mutation with who and when,
//! and the content of every version, deduplicated by sha256. It lives in the store's
//! `.memdir/history/` folder, works for every process serving the store (appends happen
//! under the store lock) and survives crashes:
//!
//! 1. the new content is written as an object (durable) before anything else;
//! 2. the records about to be appended are written to `pending`;
//! 3. the mutation happens (durable);
//! 4. the records are appended to `log.jsonl` (fsync) and `pending` is removed.
//!
//! Repair, done by the next holder of the store lock: a torn last line of the log is cut
//! off; `pending` records are appended only if the files are in the state they describe.
//! Nothing rewrites the log except redaction and retention.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::Store;

const LOG: &str = ".memdir/history/log.jsonl";
const OBJECTS: &str = ".memdir/history/objects";
const PENDING: &str = ".memdir/history/pending";
const HISTORY: &str = ".memdir/history";

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
}

/// What a process knows of the log: the latest record per path, up to an offset. Kept
/// per process and brought forward by reading only what others appended since.
#[derive(Debug, Default)]
pub struct Heads {
    offset: u64,
    last_version: u64,
    heads: HashMap<String, Record>,
}

/// Retention: how many versions per path, and for how long.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retention {
    pub keep_versions: Option<usize>,
    pub keep_days: Option<u64>,
}

fn object_path(sha: &str) -> String {
    format!("{OBJECTS}/{}/{sha}", &sha[..2])
}

/// Parses complete log lines; a malformed line (which repair removes) is skipped.
fn parse(bytes: &[u8]) -> (Vec<Record>, u64) {
    let mut out = Vec::new();
    let mut consumed = 0u64;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if !line.ends_with(b"\n") {
            break;
        }
        consumed += line.len() as u64;
        match serde_json::from_slice::<Record>(line) {
            Ok(r) => out.push(r),
            Err(e) => tracing::warn!(error = %e, "skipped a malformed history record"),
        }
    }
    (out, consumed)
}

impl Heads {
    /// Reads what was appended since the last call (the caller holds the store lock).
    pub fn refresh(&mut self, store: &Store) -> Result<()> {
        let len = store.state_len(LOG)?;
        if len < self.offset {
            // The log was rewritten (redaction, retention): start over.
            *self = Heads::default();
        }
        if len == self.offset {
            return Ok(());
        }
        let bytes = store.state_read_from(LOG, self.offset)?;
        let (records, consumed) = parse(&bytes);
        self.offset += consumed;
        for r in records {
            self.last_version = self.last_version.max(r.version);
            if !r.redacted {
                if let Some(from) = &r.from {
                    self.heads.remove(from);
                }
                self.heads.insert(r.path.clone(), r);
            }
        }
        Ok(())
    }

    /// The latest record of `rel`, if it has any.
    pub fn head(&self, rel: &str) -> Option<&Record> {
        self.heads.get(rel)
    }
}

/// Makes the history consistent after a crash: cuts a torn last line, and appends the
/// `pending` records whose mutation happened (`happened` checks one against the files).
pub fn repair(store: &Store, happened: impl Fn(&Record) -> bool) -> Result<()> {
    let len = store.state_len(LOG)?;
    if len > 0 {
        let tail = store.state_read_from(LOG, len.saturating_sub(64 * 1024))?;
        if !tail.ends_with(b"\n") {
            let cut = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let keep = len - tail.len() as u64 + cut as u64;
            tracing::warn!(bytes = len - keep, "cut a torn record off the history log");
            store.state_truncate(LOG, keep)?;
        }
    }
    if !store.state_exists(PENDING) {
        return Ok(());
    }
    let pending = store.state_read_from(PENDING, 0)?;
    let (records, _) = parse(&pending);
    let done: Vec<&Record> = records.iter().filter(|r| happened(r)).collect();
    if !done.is_empty() {
        tracing::info!(
            records = done.len(),
            "completed history records of an interrupted mutation"
        );
        append(store, done.into_iter())?;
    }
    store.state_remove(PENDING)
}

fn append<'r>(store: &Store, records: impl Iterator<Item = &'r Record>) -> Result<()> {
    let mut bytes = Vec::new();
    for r in records {
        serde_json::to_writer(&mut bytes, r).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        bytes.push(b'\n');
    }
    store.state_append(LOG, &bytes)
}

/// Stores content as an object (once per distinct content).
pub fn save_object(store: &Store, sha: &str, bytes: &[u8]) -> Result<()> {
    let path = object_path(sha);
    if store.state_exists(&path) {
        return Ok(());
    }
    store.state_dirs(&format!("{OBJECTS}/{}", &sha[..2]))?;
    store.state_write(&path, bytes)
}

/// The content of an object, if it is still there.
pub fn read_object(store: &Store, sha: &str) -> Result<Option<Vec<u8>>> {
    if sha.len() < 2 {
        return Ok(None);
    }
    let path = object_path(sha);
    if !store.state_exists(&path) {
        return Ok(None);
    }
    store.state_read_from(&path, 0).map(Some)
}

/// Numbers the drafts and writes them as the pending intent (before the mutation).
pub fn begin(store: &Store, heads: &Heads, drafts: Vec<Draft>, at: &str) -> Result<Vec<Record>> {
    store.state_dirs(HISTORY)?;
    let records: Vec<Record> = drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| Record {
            version: heads.last_version + 1 + i as u64,
            op: d.op,
            path: d.path,
            from: d.from,
            at: at.to_owned(),
            actor: d.actor,
            sha256: d.sha256,
            size: d.size,
            redacted: false,
        })
        .collect();
    let mut bytes = Vec::new();
    for r in &records {
        serde_json::to_writer(&mut bytes, r).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        bytes.push(b'\n');
    }
    store.state_write_unsynced(PENDING, &bytes)?;
    Ok(records)
}

/// Appends the records of a completed mutation and clears the intent.
pub fn commit(store: &Store, heads: &mut Heads, records: &[Record]) -> Result<()> {
    append(store, records.iter())?;
    store.state_remove(PENDING)?;
    heads.refresh(store)
}

/// Drops the intent of a mutation that failed before touching the files.
pub fn abandon(store: &Store) -> Result<()> {
    store.state_remove(PENDING)
}

/// Every record, oldest first.
pub fn records(store: &Store) -> Result<Vec<Record>> {
    Ok(parse(&store.state_read_from(LOG, 0)?).0)
}

/// Rewrites the log with `keep` applied to each record (redaction, retention), then removes
/// objects no remaining (unredacted) record refers to, unless `live` still needs them.
fn rewrite(
    store: &Store,
    live: &HashSet<String>,
    mut keep: impl FnMut(Record) -> Option<Record>,
) -> Result<usize> {
    let all = records(store)?;
    let before = all.len();
    let kept: Vec<Record> = all.into_iter().filter_map(&mut keep).collect();
    let mut bytes = Vec::new();
    for r in &kept {
        serde_json::to_writer(&mut bytes, r).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        bytes.push(b'\n');
    }
    store.state_write(LOG, &bytes)?;
    let referenced: HashSet<&str> = kept
        .iter()
        .filter(|r| !r.redacted)
        .map(|r| r.sha256.as_str())
        .chain(live.iter().map(String::as_str))
        .collect();
    for prefix in store.state_list(OBJECTS) {
        for name in store.state_list(&format!("{OBJECTS}/{prefix}")) {
            if !referenced.contains(name.as_str()) {
                store.state_remove(&format!("{OBJECTS}/{prefix}/{name}"))?;
            }
        }
    }
    Ok(before - kept.len())
}

/// Erases version `version`'s content and path, keeping who and when. The content leaves
/// the disk unless another unredacted version holds the same bytes.
pub fn redact(store: &Store, version: u64) -> Result<Record> {
    let mut found = None;
    rewrite(store, &HashSet::new(), |mut r| {
        if r.version == version {
            r.path.clear();
            r.from = None;
            r.sha256.clear();
            r.size = 0;
            r.redacted = true;
            found = Some(r.clone());
        }
        Some(r)
    })?;
    found.ok_or_else(|| Error::InvalidArgument(format!("there is no version {version}")))
}

/// Drops versions beyond the retention, never the current version of a live memory
/// (`live`: relative path → sha256 of the file now). Returns how many were dropped.
pub fn prune(
    store: &Store,
    retention: Retention,
    live: &HashMap<String, String>,
    now_days: u64,
) -> Result<usize> {
    if retention.keep_versions.is_none() && retention.keep_days.is_none() {
        return Ok(0);
    }
    let all = records(store)?;
    // Newest first per path: the rank of each version within its path.
    let mut rank: HashMap<u64, usize> = HashMap::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for r in all.iter().rev() {
        let n = seen.entry(r.path.as_str()).or_default();
        rank.insert(r.version, *n);
        *n += 1;
    }
    let current: HashSet<u64> = all
        .iter()
        .rev()
        .filter(|r| live.get(&r.path) == Some(&r.sha256) && r.op != Op::Deleted)
        .fold(HashMap::<&str, u64>::new(), |mut m, r| {
            m.entry(r.path.as_str()).or_insert(r.version);
            m
        })
        .into_values()
        .collect();
    let live_shas: HashSet<String> = live.values().cloned().collect();
    rewrite(store, &live_shas, |r| {
        let too_many = retention
            .keep_versions
            .is_some_and(|k| rank[&r.version] >= k);
        let too_old = retention
            .keep_days
            .is_some_and(|d| days_of(&r.at).is_some_and(|day| now_days.saturating_sub(day) > d));
        (current.contains(&r.version) || !(too_many || too_old)).then_some(r)
    })
}

/// Days since the epoch of an RFC 3339 date (`YYYY-MM-DD...`).
fn days_of(at: &str) -> Option<u64> {
    let y: i64 = at.get(0..4)?.parse().ok()?;
    let m: i64 = at.get(5..7)?.parse().ok()?;
    let d: i64 = at.get(8..10)?.parse().ok()?;
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
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
        };
        let mut bytes = serde_json::to_vec(&r).unwrap();
        bytes.push(b'\n');
        let whole = bytes.len() as u64;
        bytes.extend_from_slice(b"{\"version\":2,\"op\":\"mod");
        let (records, consumed) = parse(&bytes);
        assert_eq!((records, consumed), (vec![r], whole));
    }

    #[test]
    fn dates_to_days() {
        assert_eq!(days_of("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(days_of("2026-11-22T08:00:00Z"), Some(20_779));
        assert_eq!(days_of("garbage"), None);
    }
}
