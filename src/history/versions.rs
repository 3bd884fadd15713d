//! `memory_history`'s reading of the log: the versions of a memory or of everything
//! under a folder (following renames back), filtered, newest first, paged within the
//! result budget; and the head of one version's content. Pure: the records come in read.

use std::collections::HashSet;

use super::log::{Op, Record};
use crate::error::{Error, Result};
use crate::path::MemPath;

/// `memory_history`'s input.
#[derive(Debug, Default)]
pub struct HistoryRequest<'a> {
    /// A memory, or a folder (everything under it); `None` or `/` = every store.
    pub path: Option<&'a str>,
    pub limit: usize,
    /// The `next_cursor` of a previous call.
    pub cursor: Option<&'a str>,
    /// Return this version with its content.
    pub version: Option<u64>,
    /// Only versions that did this.
    pub operation: Option<Op>,
    /// Only versions by this actor: its whole name (`claude-code/1.2.0`), or the name
    /// before the `/` (`claude-code`).
    pub actor: Option<&'a str>,
    /// Only versions made at or after this (a date or an RFC 3339 date-time).
    pub since: Option<&'a str>,
    /// Only versions made before this (a date or an RFC 3339 date-time).
    pub until: Option<&'a str>,
}

/// `memory_history`'s filters, parsed.
#[derive(Default)]
pub(crate) struct Filter<'a> {
    operation: Option<Op>,
    actor: Option<&'a str>,
    since: Option<i64>,
    until: Option<i64>,
}

impl<'a> Filter<'a> {
    pub(crate) fn of(req: &HistoryRequest<'a>) -> Result<Filter<'a>> {
        let instant = |name: &str, raw: Option<&str>| {
            raw.map(|r| {
                crate::text::parse_instant(r).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{name} must be a date or an RFC 3339 date-time, e.g. `2026-03-01` or `2026-03-01T09:00:00Z`; got `{}`",
                        crate::text::head_chars(r, 100)
                    ))
                })
            })
            .transpose()
        };
        Ok(Filter {
            operation: req.operation,
            actor: req.actor,
            since: instant("since", req.since)?,
            until: instant("until", req.until)?,
        })
    }

    fn keeps(&self, r: &Record) -> bool {
        if self.operation.is_some_and(|op| op != r.op) {
            return false;
        }
        if let Some(actor) = self.actor
            && r.actor != actor
            && r.actor
                .split_once('/')
                .is_none_or(|(name, _)| name != actor)
        {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let Some(at) = crate::text::parse_instant(&r.at) else {
                return false;
            };
            if self.since.is_some_and(|s| at < s) || self.until.is_some_and(|u| at >= u) {
                return false;
            }
        }
        true
    }
}

/// One version, as shown.
#[derive(Debug, Clone)]
pub struct Version {
    pub version: u64,
    /// Canonical path ("" when redacted).
    pub path: String,
    pub from: Option<String>,
    pub operation: Op,
    pub at: String,
    pub actor: String,
    pub content_sha256: String,
    pub size_bytes: u64,
    pub redacted: bool,
    /// Why (a deletion's reason).
    pub reason: Option<String>,
}

#[derive(Debug)]
pub struct HistoryResult {
    pub versions: Vec<Version>,
    pub next_cursor: Option<String>,
    /// With `version`: that version's content (none for a redacted version), or its head
    /// when the whole does not fit the result budget.
    pub content: Option<String>,
    /// `content` is only the head of the version's content.
    pub content_truncated: bool,
}

/// Bytes of the result budget kept for the notes around a version's content or a page.
pub(crate) const VERSION_NOTE_ROOM: usize = 512;
/// At most the bytes a version's line takes in a result's text (`v7\t<time>\tModified\t
/// <path> (from <path>)\tby <actor>\t<size> bytes\tsha256 <64 hex>`), numbers counted at
/// their widest.
pub(crate) fn version_line_bytes(v: &Version) -> usize {
    const FIXED: usize = "v\t\tModified\t\tby \t bytes\tsha256 \n".len() + 20 + 20 + 64;
    FIXED
        + v.at.len()
        + v.path.len().max("[redacted]".len())
        + v.from.as_ref().map_or(0, |f| f.len() + " (from )".len())
        + v.actor.len()
        + v.reason
            .as_ref()
            .map_or(0, |r| r.len() + "\treason: ".len())
}

/// Where a page of versions ends: at a (version, store index) pair, as the cursor
/// `<version>.<store index>` says (a bare version: that version in every store).
pub(crate) type Cursor = Option<(u64, usize)>;

/// Reads a `next_cursor` given back.
pub(crate) fn parse_cursor(cursor: Option<&str>) -> Result<Cursor> {
    let c = match cursor {
        None | Some("") => return Ok(None),
        Some(c) => c,
    };
    let (v, i) = c.split_once('.').unwrap_or((c, ""));
    let parsed = v.parse::<u64>().ok().zip(if i.is_empty() {
        Some(usize::MAX)
    } else {
        i.parse::<usize>().ok()
    });
    parsed.map(Some).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "invalid cursor `{}`; pass next_cursor unchanged",
            crate::text::head_chars(c, 100)
        ))
    })
}

/// The versions of `scope` among its store's `records` (oldest first) that `filter`
/// keeps and that come after `before` in the order shown (version down, then store up),
/// each with its store index.
pub(crate) fn in_scope(
    scope: &MemPath,
    records: Vec<Record>,
    before: Cursor,
    filter: &Filter,
) -> Vec<(usize, Version)> {
    let rel = scope.rel();
    let under = format!("{rel}/");
    // A redacted version has no path, but the hash of the one it had: it stays listed
    // in that memory's history.
    let rel_sha = crate::text::sha256_hex(rel.as_bytes());
    // Earlier names of the memories in scope: a history follows renames back.
    let mut earlier: HashSet<String> = HashSet::new();
    let matches = |p: &str, earlier: &HashSet<String>| {
        rel.is_empty() || p == rel || p.starts_with(&under) || earlier.contains(p)
    };
    let mut out = Vec::new();
    for r in records.into_iter().rev() {
        let in_scope = matches(&r.path, &earlier);
        let relevant = in_scope
            || r.from.as_deref().is_some_and(|f| matches(f, &earlier))
            || (r.redacted && (rel.is_empty() || r.path_sha256.as_deref() == Some(&rel_sha)));
        if in_scope && let Some(from) = &r.from {
            earlier.insert(from.clone());
        }
        // Shown already: later in the order (version down, then store up).
        if before.is_some_and(|(v, i)| r.version > v || (r.version == v && scope.store <= i)) {
            continue;
        }
        if relevant && filter.keeps(&r) {
            out.push((scope.store, shown(scope, r)));
        }
    }
    out
}

/// The first page of `versions` (of every scope): newest first, at most `limit`, and
/// ending where its text would pass `budget` bytes (at least one version per page, so
/// paging always moves on).
pub(crate) fn page(mut out: Vec<(usize, Version)>, limit: usize, budget: usize) -> HistoryResult {
    out.sort_by(|(sa, a), (sb, b)| b.version.cmp(&a.version).then(sa.cmp(sb)));
    let next = |(store, v): &(usize, Version)| format!("{}.{store}", v.version);
    let mut more = out.len() > limit;
    out.truncate(limit);
    let room = budget.saturating_sub(VERSION_NOTE_ROOM);
    let mut used = 0;
    if let Some(fit) = out.iter().position(|(_, v)| {
        used += version_line_bytes(v);
        used > room
    }) {
        more = true;
        out.truncate(fit.max(1));
    }
    HistoryResult {
        next_cursor: more.then(|| out.last().map(next)).flatten(),
        versions: out.into_iter().map(|(_, v)| v).collect(),
        content: None,
        content_truncated: false,
    }
}

/// One version with its content, within `budget` bytes: the head of the content, cut
/// after a whole line when one ends in its second half.
pub(crate) fn with_content(
    version: Version,
    mut content: Option<String>,
    budget: usize,
) -> HistoryResult {
    let room = budget.saturating_sub(VERSION_NOTE_ROOM + version_line_bytes(&version));
    let content_truncated = content.as_ref().is_some_and(|c| c.len() > room);
    if let Some(c) = content.as_mut().filter(|_| content_truncated) {
        let cut = crate::text::floor_char_boundary(c, room);
        let cut = match c[..cut].rfind('\n') {
            Some(nl) if nl >= cut / 2 => nl + 1,
            _ => cut,
        };
        c.truncate(cut);
    }
    HistoryResult {
        versions: vec![version],
        next_cursor: None,
        content,
        content_truncated,
    }
}

pub(crate) fn shown(scope: &MemPath, r: Record) -> Version {
    let canonical = |rel: &str| {
        if rel.is_empty() {
            String::new()
        } else {
            scope.with_rel(rel).canonical()
        }
    };
    Version {
        version: r.version,
        path: canonical(&r.path),
        from: r.from.as_deref().map(canonical),
        operation: r.op,
        at: r.at,
        actor: r.actor,
        content_sha256: r.sha256,
        size_bytes: r.size,
        redacted: r.redacted,
        reason: r.reason,
    }
}
