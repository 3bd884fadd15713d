//! `memory_history`: the versions of a memory or of everything under a folder, newest
//! first, and the content of one version. Reading a single memory's history first notices
//! (and records, as `external`) a change made to it outside memdir.

use std::collections::HashSet;

use super::Memdir;
use crate::error::{Error, Result};
use crate::history::{self, Op, Record};
use crate::path::{MemPath, Target};
use crate::search::fresh::Found;

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
struct Filter<'a> {
    operation: Option<Op>,
    actor: Option<&'a str>,
    since: Option<i64>,
    until: Option<i64>,
}

impl<'a> Filter<'a> {
    fn of(req: &HistoryRequest<'a>) -> Result<Filter<'a>> {
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
const VERSION_NOTE_ROOM: usize = 512;
/// At most the bytes a version's line takes in a result's text (`v7\t<time>\tModified\t
/// <path> (from <path>)\tby <actor>\t<size> bytes\tsha256 <64 hex>`), numbers counted at
/// their widest.
fn version_line_bytes(v: &Version) -> usize {
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

impl Memdir {
    pub fn history(&self, req: &HistoryRequest) -> Result<HistoryResult> {
        let filter = Filter::of(req)?;
        let scopes: Vec<MemPath> = match self.target(req.path.unwrap_or("/"))? {
            Target::AllStores => self
                .stores()
                .iter()
                .enumerate()
                .map(|(i, s)| MemPath::root(i, &s.name))
                .collect(),
            Target::Path(p) => vec![p],
        };
        if let Some(version) = req.version {
            let [scope] = scopes.as_slice() else {
                return Err(Error::InvalidArgument(
                    "with `version`, name the store (or a path in it), e.g. `/memories/`".into(),
                ));
            };
            return self.one_version(scope, version);
        }
        // Versions are numbered per store, so a page ends at a (version, store) pair:
        // the cursor `<version>.<store index>` (a bare version: that version in every store).
        let before: Option<(u64, usize)> = match req.cursor {
            None | Some("") => None,
            Some(c) => {
                let (v, i) = c.split_once('.').unwrap_or((c, ""));
                let parsed = v.parse::<u64>().ok().zip(if i.is_empty() {
                    Some(usize::MAX)
                } else {
                    i.parse::<usize>().ok()
                });
                Some(parsed.ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "invalid cursor `{}`; pass next_cursor unchanged",
                        crate::text::head_chars(c, 100)
                    ))
                })?)
            }
        };
        let mut out = Vec::new();
        for scope in &scopes {
            if self.settings.history && !self.store(scope).read_only {
                if scope.is_root() {
                    // Taking the lock completes the history of an interrupted mutation.
                    drop(self.recorder(scope)?);
                } else {
                    self.notice(scope)?;
                }
            }
            let rel = scope.rel();
            let under = format!("{rel}/");
            // A redacted version has no path, but the hash of the one it had: it stays
            // listed in that memory's history.
            let rel_sha = crate::text::sha256_hex(rel.as_bytes());
            // Earlier names of the memories in scope: a history follows renames back.
            let mut earlier: HashSet<String> = HashSet::new();
            let matches = |p: &str, earlier: &HashSet<String>| {
                rel.is_empty() || p == rel || p.starts_with(&under) || earlier.contains(p)
            };
            for r in history::records(self.store(scope))?.into_iter().rev() {
                let in_scope = matches(&r.path, &earlier);
                let relevant = in_scope
                    || r.from.as_deref().is_some_and(|f| matches(f, &earlier))
                    || (r.redacted
                        && (rel.is_empty() || r.path_sha256.as_deref() == Some(&rel_sha)));
                if in_scope && let Some(from) = &r.from {
                    earlier.insert(from.clone());
                }
                // Shown already: later in the order (version down, then store up).
                if before
                    .is_some_and(|(v, i)| r.version > v || (r.version == v && scope.store <= i))
                {
                    continue;
                }
                if relevant && filter.keeps(&r) {
                    out.push((scope.store, shown(scope, r)));
                }
            }
        }
        out.sort_by(|(sa, a), (sb, b)| b.version.cmp(&a.version).then(sa.cmp(sb)));
        let next = |(store, v): &(usize, Version)| format!("{}.{store}", v.version);
        let mut more = out.len() > req.limit;
        out.truncate(req.limit);
        // The page also ends where its text would pass the result budget (at least one
        // version per page, so paging always moves on).
        let room = self
            .settings
            .result_budget
            .saturating_sub(VERSION_NOTE_ROOM);
        let mut used = 0;
        if let Some(fit) = out.iter().position(|(_, v)| {
            used += version_line_bytes(v);
            used > room
        }) {
            more = true;
            out.truncate(fit.max(1));
        }
        Ok(HistoryResult {
            next_cursor: more.then(|| out.last().map(next)).flatten(),
            versions: out.into_iter().map(|(_, v)| v).collect(),
            content: None,
            content_truncated: false,
        })
    }

    fn one_version(&self, scope: &MemPath, version: u64) -> Result<HistoryResult> {
        let store = self.store(scope);
        let record = history::records(store)?
            .into_iter()
            .find(|r| r.version == version)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("/{} has no version {version}", store.name))
            })?;
        let mut content = if record.redacted {
            None
        } else {
            self.history_content(scope.store, &record.sha256)?
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        // Within the result budget: the head of the content, cut after a whole line when
        // one ends in its second half.
        let version = shown(scope, record);
        let room = self
            .settings
            .result_budget
            .saturating_sub(VERSION_NOTE_ROOM + version_line_bytes(&version));
        let content_truncated = content.as_ref().is_some_and(|c| c.len() > room);
        if let Some(c) = content.as_mut().filter(|_| content_truncated) {
            let cut = crate::text::floor_char_boundary(c, room);
            let cut = match c[..cut].rfind('\n') {
                Some(nl) if nl >= cut / 2 => nl + 1,
                _ => cut,
            };
            c.truncate(cut);
        }
        Ok(HistoryResult {
            versions: vec![version],
            next_cursor: None,
            content,
            content_truncated,
        })
    }

    /// Records, as `external`, the changes among `rels` (files of store `i` that its
    /// index found changed) that the history does not know: a person's edit is kept as
    /// soon as any process notices it — by its watcher or at its first reconcile — not
    /// only at the next mutation of that file. Most changes are memdir's own writes,
    /// which the history already holds: those are told apart without the store lock,
    /// which is taken only when some differ, and everything is checked again under it (a
    /// write another memdir process is making is then either recorded or not begun).
    pub(crate) fn notice_external(&self, i: usize, rels: Vec<String>, found: Found) {
        let store = &self.stores()[i];
        // In a database every change comes through memdir, recorded as it is made.
        if !self.settings.history || store.read_only || store.is_database() || rels.is_empty() {
            return;
        }
        let root = MemPath::root(i, &store.name);
        if let Found::FirstSync { .. } = found {
            // What this process knows of the history may be old, or not read yet: bring it
            // up to date (taking the lock briefly) before comparing with it.
            if let Err(e) = self.recorder(&root) {
                tracing::warn!(store = %store.name, error = %e, "could not record changes made outside memdir");
                return;
            }
        }
        // A rebuilt index finds every file changed: only those the history knows are
        // compared with it (the others are recorded at their first mutation).
        let known_only = matches!(found, Found::FirstSync { rebuilt: true });
        let candidates: Vec<(String, Option<(Op, String)>)> = {
            let heads = self.heads[i].lock().unwrap_or_else(|e| e.into_inner());
            let mut rels = rels;
            if known_only {
                // Nor does it know which files are gone: those are the memories the history
                // holds that the walk did not find.
                let found: HashSet<&str> = rels.iter().map(String::as_str).collect();
                let gone: Vec<String> = heads
                    .live_paths()
                    .filter(|rel| !found.contains(rel))
                    .map(str::to_owned)
                    .collect();
                rels.extend(gone);
            }
            rels.into_iter()
                .filter(|rel| !rel.split('/').any(crate::store::hidden_name))
                .filter_map(|rel| {
                    let head = heads.head(&rel).map(|h| (h.op, h.sha256.clone()));
                    (!known_only || head.is_some()).then_some((rel, head))
                })
                .collect()
        };
        let unknown: Vec<String> = candidates
            .into_iter()
            .filter(|(rel, head)| {
                let Ok(current) = self.current(&root.with_rel(rel)) else {
                    return false;
                };
                match (head, current) {
                    (Some((op, sha)), Some(c)) => *op == Op::Deleted || *sha != c.sha256,
                    (Some((op, _)), None) => *op != Op::Deleted,
                    (None, Some(_)) => true,
                    (None, None) => false,
                }
            })
            .map(|(rel, _)| rel)
            .collect();
        if unknown.is_empty() {
            return;
        }
        let noticed = (|| {
            let mut rec = self.recorder(&root)?;
            for rel in &unknown {
                // Read again under the lock: the state may have changed meanwhile.
                let current = self.current(&root.with_rel(rel)).ok().flatten();
                rec.note_current(
                    rel,
                    current
                        .as_ref()
                        .map(|c| (c.sha256.as_str(), c.text.as_bytes())),
                )?;
            }
            rec.begin()?;
            rec.commit()?;
            Ok::<_, Error>(())
        })();
        match noticed {
            Ok(()) => {
                tracing::info!(store = %store.name, files = unknown.len(), "recorded changes made outside memdir")
            }
            Err(e) => {
                tracing::warn!(store = %store.name, error = %e, "could not record changes made outside memdir")
            }
        }
    }

    /// Records, as `external`, a state of memory `p` that its history does not know.
    fn notice(&self, p: &MemPath) -> Result<()> {
        let current = match self.current(p) {
            Ok(c) => c,
            Err(Error::IsFolder { .. } | Error::NotAFolder { .. }) => return Ok(()),
            Err(_) => return Ok(()),
        };
        if current.is_none() && !matches!(self.store(p).entry_kind(p), Ok(None)) {
            return Ok(());
        }
        let mut rec = self.recorder(p)?;
        // Re-read under the lock: the state may have changed while we waited.
        let current = self.current(p).ok().flatten();
        rec.note_current(
            &p.rel(),
            current
                .as_ref()
                .map(|c| (c.sha256.as_str(), c.text.as_bytes())),
        )?;
        rec.begin()?;
        rec.commit()?;
        Ok(())
    }
}

fn shown(scope: &MemPath, r: Record) -> Version {
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
