//! Version history of a store: an append-only log of every mutation with who and when,
//! and the content of every version, deduplicated by sha256: the first record of a given
//! content carries it inline, later ones refer to it. It lives in the store's
//! `.memdir/history/` folder, works for every process serving the store (appends happen
//! under the store lock) and survives crashes:
//!
//! 1. the records about to be appended (with any new content) are written as the intent
//!    in the store's lock file;
//! 2. the mutation happens (durable);
//! 3. the records are appended to `log.jsonl` in one write and fdatasync'd; the intent is
//!    cleared.
//!
//! A record and the content it introduces are one line, so no version can point at
//! missing content. Repair, done by the next holder of the store lock: a torn last line
//! is cut off; intended records are appended only if the files are in the state they
//! describe. Nothing rewrites the log except redaction and retention, which move content
//! to a surviving record of the same bytes before dropping it.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::{Store, StoreLock};

const LOG: &str = ".memdir/history/log.jsonl";
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
    fn has_content(&self) -> bool {
        self.content.is_some() || self.content_base64.is_some()
    }

    fn without_content(&self) -> Record {
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

    fn take_content(&mut self) -> (Option<String>, Option<String>) {
        (self.content.take(), self.content_base64.take())
    }

    fn content_bytes(&self) -> Option<Vec<u8>> {
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

/// What a process knows of the log: the latest record per path, and where the log keeps
/// each content, up to an offset. Kept per process and brought forward by reading only
/// what others appended since.
#[derive(Debug, Default)]
pub struct Heads {
    offset: u64,
    last_version: u64,
    heads: HashMap<String, Record>,
    /// sha256 → offset of the line that carries the content.
    contents: HashMap<String, u64>,
}

/// Retention: how many versions per path, and for how long.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retention {
    pub keep_versions: Option<usize>,
    pub keep_days: Option<u64>,
}

/// Parses complete log lines with their offsets (relative to `bytes`); a malformed line
/// (which repair removes) is skipped.
fn parse(bytes: &[u8]) -> (Vec<(u64, Record)>, u64) {
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
fn parse_log(store: &Store, offset: u64) -> Result<(Vec<LogRecord>, u64)> {
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

fn to_line(r: &Record, out: &mut Vec<u8>) -> Result<()> {
    serde_json::to_writer(&mut *out, r).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    out.push(b'\n');
    Ok(())
}

impl Heads {
    /// Reads what was appended since the last call (the caller holds the store lock).
    pub fn refresh(&mut self, store: &Store) -> Result<()> {
        let len = store.state_len(LOG)?;
        self.refresh_to(store, len)
    }

    /// [`refresh`](Self::refresh), with the log's length already known.
    fn refresh_to(&mut self, store: &Store, len: u64) -> Result<()> {
        if len < self.offset {
            // The log was rewritten (redaction, retention): start over.
            *self = Heads::default();
        }
        if len == self.offset {
            return Ok(());
        }
        let (records, consumed) = parse_log(store, self.offset)?;
        self.apply(records.into_iter(), consumed);
        Ok(())
    }

    /// Takes in records without their content, each with its offset from `self.offset`
    /// and whether its line keeps the content; they end `consumed` bytes further on.
    fn apply(&mut self, records: impl Iterator<Item = (u64, bool, Record)>, consumed: u64) {
        let base = self.offset;
        self.offset += consumed;
        for (at, kept, r) in records {
            self.last_version = self.last_version.max(r.version);
            if kept {
                self.contents.entry(r.sha256.clone()).or_insert(base + at);
            }
            if !r.redacted {
                if let Some(from) = &r.from {
                    self.heads.remove(from);
                }
                self.heads.insert(r.path.clone(), r);
            }
        }
    }

    /// The latest record of `rel`, if it has any.
    pub fn head(&self, rel: &str) -> Option<&Record> {
        self.heads.get(rel)
    }

    /// The paths whose latest record says they hold a memory (not deleted).
    pub fn live_paths(&self) -> impl Iterator<Item = &str> {
        self.heads
            .iter()
            .filter(|(_, r)| r.op != Op::Deleted)
            .map(|(rel, _)| rel.as_str())
    }

    /// Whether the log already keeps this content.
    pub fn has_content(&self, sha: &str) -> bool {
        self.contents.contains_key(sha)
    }

    /// The content with this sha256, if the log keeps it.
    pub fn content(&mut self, store: &Store, sha: &str) -> Result<Option<Vec<u8>>> {
        for _ in 0..2 {
            self.refresh(store)?;
            let Some(&at) = self.contents.get(sha) else {
                return Ok(None);
            };
            // Only the line that carries it.
            let mut line = Vec::new();
            if let Some(mut reader) = store.state_reader(LOG, at)? {
                std::io::BufRead::read_until(&mut reader, b'\n', &mut line)
                    .map_err(|e| Error::io(LOG, &e))?;
            }
            match serde_json::from_slice::<Record>(&line) {
                Ok(r) if r.sha256 == sha && r.has_content() => return Ok(r.content_bytes()),
                // The log was rewritten under us: read it again from the start.
                _ => *self = Heads::default(),
            }
        }
        Ok(None)
    }
}

/// What [`repair`] put right.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// Bytes of a torn last line cut off the log.
    pub torn_bytes: u64,
    /// Records of an interrupted mutation appended from its intent.
    pub completed: usize,
}

/// Makes the history consistent after a crash: cuts a torn last line, and appends the
/// intended records whose mutation happened (`happened` checks one against the files)
/// and that the log does not hold yet (a crash between the append and clearing the
/// intent leaves records that are already there). Leaves `heads` up to date.
pub fn repair(
    store: &Store,
    lock: &StoreLock,
    heads: &mut Heads,
    happened: impl Fn(&Record) -> bool,
) -> Result<Repaired> {
    let mut repaired = Repaired::default();
    let mut len = store.state_len(LOG)?;
    // Whole records end with a newline: one byte tells whether the last append was torn.
    // Up to `heads.offset` the log is known to end with one.
    if len > 0 && len != heads.offset && store.state_read_from(LOG, len - 1)? != b"\n" {
        let tail = store.state_read_from(LOG, len.saturating_sub(1024 * 1024))?;
        {
            let cut = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let keep = len - tail.len() as u64 + cut as u64;
            store.state_truncate(LOG, keep)?;
            repaired.torn_bytes = len - keep;
            len = keep;
        }
    }
    heads.refresh_to(store, len)?;
    let intent = lock.intent()?;
    if intent.is_empty() {
        return Ok(repaired);
    }
    let (records, _) = parse(&intent);
    let done: Vec<&Record> = records
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.version > heads.last_version && happened(r))
        .collect();
    if !done.is_empty() {
        repaired.completed = done.len();
        append(store, heads, done.into_iter())?;
    }
    lock.clear_intent()?;
    Ok(repaired)
}

/// Appends `records` to the log and takes them into `heads`, without reading back what
/// was just written unless someone else appended in between (they cannot while the
/// caller holds the store lock; reading back keeps `heads` right regardless).
fn append<'r>(
    store: &Store,
    heads: &mut Heads,
    records: impl Iterator<Item = &'r Record>,
) -> Result<()> {
    let mut bytes = Vec::new();
    let mut lines = Vec::new();
    for r in records {
        let at = bytes.len() as u64;
        to_line(r, &mut bytes)?;
        lines.push((at, r.has_content(), r.without_content()));
    }
    let end = store.state_append(LOG, &bytes)?;
    if end == heads.offset + bytes.len() as u64 {
        heads.apply(lines.into_iter(), bytes.len() as u64);
        Ok(())
    } else {
        heads.refresh_to(store, end)
    }
}

/// Numbers the drafts, attaches content the log does not keep yet, and writes them as the
/// intent (before the mutation).
pub fn begin(
    store: &Store,
    lock: &StoreLock,
    heads: &Heads,
    drafts: Vec<Draft>,
    at: &str,
) -> Result<Vec<Record>> {
    // The first record makes the history folder; after that it exists (and the append
    // makes it again should someone remove it meanwhile).
    if heads.offset == 0 {
        store.state_dirs(HISTORY)?;
    }
    let mut carried: HashSet<String> = HashSet::new();
    let records: Vec<Record> = drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let new = !heads.has_content(&d.sha256) && !carried.contains(&d.sha256);
            let (content, content_base64) = match d.bytes.filter(|_| new) {
                Some(bytes) => {
                    carried.insert(d.sha256.clone());
                    match String::from_utf8(bytes) {
                        Ok(text) => (Some(text), None),
                        Err(e) => (None, Some(base64_encode(e.as_bytes()))),
                    }
                }
                None => (None, None),
            };
            Record {
                version: heads.last_version + 1 + i as u64,
                op: d.op,
                path: d.path,
                from: d.from,
                at: at.to_owned(),
                actor: d.actor,
                sha256: d.sha256,
                size: d.size,
                redacted: false,
                reason: d.reason,
                path_sha256: None,
                content,
                content_base64,
            }
        })
        .collect();
    let mut bytes = Vec::new();
    for r in &records {
        to_line(r, &mut bytes)?;
    }
    lock.set_intent(&bytes)?;
    store.pause("history-intent");
    Ok(records)
}

/// Appends the records of a completed mutation and clears the intent.
pub fn commit(
    store: &Store,
    lock: &StoreLock,
    heads: &mut Heads,
    records: &[Record],
) -> Result<()> {
    append(store, heads, records.iter())?;
    store.pause("history-appended");
    lock.clear_intent()
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

/// What `memdir check` found in a store's history log.
#[derive(Debug, Default)]
pub struct LogCheck {
    pub records: usize,
    /// 1-based line numbers of lines that are not a record.
    pub malformed: Vec<usize>,
    /// Bytes after the last newline (a torn append, cut by the next mutation).
    pub torn_bytes: usize,
    /// Versions whose number is not above the one before.
    pub out_of_order: Vec<u64>,
    /// Versions whose content is in no record of the log.
    pub missing_content: Vec<u64>,
    /// Versions whose stored content does not hash to their sha256.
    pub corrupt_content: Vec<u64>,
    /// The last version of each path that exists in history (path → sha256), for
    /// comparing with the files.
    pub heads: HashMap<String, String>,
}

/// Reads the whole log and checks it: every line a record, versions increasing, every
/// version's content present and matching its hash.
pub fn verify(store: &Store) -> Result<LogCheck> {
    let bytes = store.state_read_from(LOG, 0)?;
    let mut check = LogCheck::default();
    let mut contents: HashSet<String> = HashSet::new();
    let mut needed: Vec<(u64, String)> = Vec::new();
    let mut last = 0u64;
    let mut consumed = 0usize;
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        if !line.ends_with(b"\n") {
            check.torn_bytes = line.len();
            break;
        }
        consumed += line.len();
        let Ok(r) = serde_json::from_slice::<Record>(line) else {
            check.malformed.push(i + 1);
            continue;
        };
        check.records += 1;
        if r.version <= last {
            check.out_of_order.push(r.version);
        }
        last = last.max(r.version);
        if let Some(content) = r.content_bytes() {
            if crate::text::sha256_hex(&content) == r.sha256 {
                contents.insert(r.sha256.clone());
            } else {
                check.corrupt_content.push(r.version);
            }
        } else if !r.redacted {
            needed.push((r.version, r.sha256.clone()));
        }
        match r.op {
            Op::Deleted => {
                check.heads.remove(&r.path);
            }
            _ if r.redacted => {}
            _ => {
                if let Some(from) = &r.from {
                    check.heads.remove(from);
                }
                check.heads.insert(r.path.clone(), r.sha256.clone());
            }
        }
    }
    debug_assert!(consumed <= bytes.len());
    check.missing_content = needed
        .into_iter()
        .filter(|(_, sha)| !contents.contains(sha))
        .map(|(v, _)| v)
        .collect();
    Ok(check)
}

/// What a rewrite does with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    Record,
    Redact,
    Drop,
}

/// Rewrites the log (atomically) with `keep` applied to each record (redaction,
/// retention). Content carried by a record that is dropped or redacted moves to the first
/// surviving unredacted record of the same sha256, or leaves the log.
fn rewrite(store: &Store, mut keep: impl FnMut(&Record) -> Keep) -> Result<usize> {
    let all: Vec<Record> = parse(&store.state_read_from(LOG, 0)?)
        .0
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let before = all.len();
    let mut kept: Vec<Record> = Vec::with_capacity(all.len());
    let mut orphaned: HashMap<String, (Option<String>, Option<String>)> = HashMap::new();
    for mut r in all {
        let decision = keep(&r);
        if decision != Keep::Record && r.has_content() {
            orphaned.insert(r.sha256.clone(), r.take_content());
        }
        match decision {
            Keep::Drop => continue,
            Keep::Redact => {
                if !r.path.is_empty() {
                    r.path_sha256 = Some(crate::text::sha256_hex(r.path.as_bytes()));
                }
                r.reason = None;
                r.path.clear();
                r.from = None;
                r.sha256.clear();
                r.size = 0;
                r.redacted = true;
            }
            Keep::Record => {}
        }
        kept.push(r);
    }
    // Hand each orphaned content to the first surviving record that refers to it.
    for r in kept.iter_mut().filter(|r| !r.redacted && !r.has_content()) {
        if let Some((text, b64)) = orphaned.remove(&r.sha256) {
            r.content = text;
            r.content_base64 = b64;
        }
    }
    let mut bytes = Vec::new();
    for r in &kept {
        to_line(r, &mut bytes)?;
    }
    store.state_write(LOG, &bytes)?;
    Ok(before - kept.len())
}

/// Erases version `version`'s content and path, keeping who and when. The content leaves
/// the disk unless another unredacted version holds the same bytes.
pub fn redact(store: &Store, version: u64) -> Result<Record> {
    let mut found = None;
    rewrite(store, |r| {
        if r.version == version {
            let mut shown = r.clone();
            shown.take_content();
            found = Some(shown);
            Keep::Redact
        } else {
            Keep::Record
        }
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
    rewrite(store, |r| {
        let too_many = retention
            .keep_versions
            .is_some_and(|k| rank[&r.version] >= k);
        let too_old = retention
            .keep_days
            .is_some_and(|d| days_of(&r.at).is_some_and(|day| now_days.saturating_sub(day) > d));
        if current.contains(&r.version) || !(too_many || too_old) {
            Keep::Record
        } else {
            Keep::Drop
        }
    })
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        let mut pad = 0;
        for (i, &c) in chunk.iter().enumerate() {
            let v = match c {
                b'=' => {
                    pad += 1;
                    0
                }
                _ => BASE64.iter().position(|&b| b == c)? as u32,
            };
            n |= v << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
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

    #[test]
    fn base64_round_trips() {
        for bytes in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            &[0xff, 0x00, 0xfe, 0x80, 0x7f],
        ] {
            assert_eq!(base64_decode(&base64_encode(bytes)).unwrap(), bytes);
        }
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
    }

    #[test]
    fn dates_to_days() {
        assert_eq!(days_of("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(days_of("2026-11-22T08:00:00Z"), Some(20_779));
        assert_eq!(days_of("garbage"), None);
    }
}
