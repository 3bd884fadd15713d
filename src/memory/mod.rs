//! The memory operations behind the tools, independent of MCP: each validates its input,
//! resolves paths (layer 1), then works through a [`Store`] (layer 2). Results are plain
//! structs; `crate::mcp` turns them into tool results.
//!
//! Layout: this file holds the shared state and reading; `write` holds every mutation;
//! `record` records mutations in the history and `history` reads it back;
//! `list` lists; `memory_md` renders a store's `MEMORY.md` index; `search` searches (with `crate::search` for matching and ranking);
//! `sync` keeps the search index in step with the files.

mod archive;
mod check;
pub mod delete;
mod edit;
mod feed;
mod history;
mod list;
mod memory_md;
mod mutation;
mod notice;
mod record;
mod rename;
mod search;
mod sync;
mod upkeep;
mod write;

use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::frontmatter::{self, Frontmatter};
use crate::path::{self, MemPath, Target};
use crate::store::{Store, StoreConfig};
use crate::text;

pub use crate::history::EXTERNAL;
pub use crate::store::IndexLocation;
pub use archive::ArchiveSummary;
pub use check::StoreCheck;
pub use delete::DeleteResult;
pub use edit::{EditOp, EditRequest, EditResult};
pub use feed::{Feed, FeedEvents};
pub use history::{HistoryRequest, HistoryResult, Version};
pub use list::{ListEntry, ListOrder, ListRequest, ListResult, Tree, TreeEntry};
pub use memory_md::{INDEX_FILE, MemoryIndex, encode_path};
pub use notice::{Level, Notice, Notices};
pub use search::{SearchHit, SearchRequest, SearchResult};
pub use sync::Progress;
pub use upkeep::Expired;
pub use write::{RestoreRequest, WriteRequest, WriteResult};

/// Limits and switches that apply to every store.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Largest memory, in bytes (default 100 KiB).
    pub max_file_bytes: u64,
    /// Largest tool result text, in bytes (default 64 KiB); larger results paginate.
    pub result_budget: usize,
    /// Skip the credential scan on writes.
    pub allow_secrets: bool,
    /// Where search indexes live (or none).
    pub index: IndexLocation,
    /// Record every mutation in the store's history.
    pub history: bool,
    /// How much history to keep.
    pub retention: crate::history::Retention,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_file_bytes: 102_400,
            result_budget: 64 * 1024,
            allow_secrets: false,
            index: IndexLocation::UserCache,
            history: true,
            retention: crate::history::Retention::default(),
        }
    }
}

/// The served stores and their settings.
#[derive(Debug)]
pub struct Memdir {
    stores: Vec<Store>,
    names: Vec<String>,
    pub settings: Settings,
    /// Each store's search index in this process.
    indexes: Vec<sync::StoreIndex>,
    /// What this process knows of each store's history log.
    heads: Vec<std::sync::Mutex<crate::history::Heads>>,
    /// What the operator should hear of (see `notice`).
    notices: Notices,
}

/// `memory_read`'s result.
#[derive(Debug)]
pub struct ReadResult {
    pub path: String,
    /// The selected lines, byte for byte (the whole file when no range was asked).
    pub content: String,
    /// Hash of the whole file, for `expected_sha256`.
    pub content_sha256: String,
    pub size_bytes: u64,
    pub total_lines: usize,
    pub start_line: usize,
    pub end_line: usize,
    pub updated_at: String,
    pub age_days: u64,
    /// Frontmatter `expires` (or `expires_at`) as an RFC 3339 UTC time.
    pub expires_at: Option<String>,
    /// That time has passed.
    pub expired: bool,
    /// The selection did not fit the result budget and was cut at `end_line`.
    pub truncated: bool,
    /// `(line, its length, bytes shown)` when one line alone was longer than the budget
    /// and only its head is shown (it is then `end_line`).
    pub long_line: Option<(usize, usize, usize)>,
}

/// How fresh a memory is: what a reader is told before its lines (see [`Memdir::read`]).
#[derive(Clone, Copy, Debug)]
pub struct Freshness<'a> {
    pub updated_at: &'a str,
    pub age_days: u64,
    /// Frontmatter `expires` as an RFC 3339 UTC time.
    pub expires_at: Option<&'a str>,
    pub expired: bool,
}

/// A file read and decoded, as several operations need it.
pub(crate) struct Current {
    pub text: String,
    pub sha256: String,
    pub modified: SystemTime,
    pub stamp: crate::store::Stamp,
}

impl Memdir {
    pub fn open(configs: &[StoreConfig], settings: Settings) -> Result<Memdir> {
        let mut stores = configs
            .iter()
            .map(Store::open)
            .collect::<Result<Vec<_>>>()?;
        for store in &mut stores {
            store.set_intents(settings.history);
        }
        let names = stores.iter().map(|s| s.name.clone()).collect();
        let memdir = Memdir {
            indexes: (settings.index.index_files(&stores).into_iter())
                .map(sync::StoreIndex::new)
                .collect(),
            heads: stores.iter().map(|_| Default::default()).collect(),
            stores,
            names,
            settings,
            notices: Notices::default(),
        };
        for store in &memdir.stores {
            memdir.notice_temps_removed(store, 0);
        }
        Ok(memdir)
    }

    /// What the operator should hear of: index rebuilds, history repairs, leftovers of
    /// crashed writes.
    pub fn notices(&self) -> &Notices {
        &self.notices
    }

    /// Tells of temp files of interrupted writes `store` removed beyond `before`.
    pub(crate) fn notice_temps_removed(&self, store: &Store, before: usize) {
        let removed = store.temps_removed().saturating_sub(before);
        if removed > 0 {
            self.notices.send(
                Level::Warning,
                format!(
                    "store /{}: removed {removed} temp file(s) left by an interrupted write (the memories they were for kept their old content)",
                    store.name
                ),
            );
        }
    }

    pub fn stores(&self) -> &[Store] {
        &self.stores
    }

    pub fn all_read_only(&self) -> bool {
        self.stores.iter().all(|s| s.read_only)
    }

    fn names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    pub(crate) fn target(&self, raw: &str) -> Result<Target> {
        path::parse(raw, &self.names())
    }

    pub(crate) fn path(&self, raw: &str) -> Result<MemPath> {
        path::parse_path(raw, &self.names())
    }

    pub(crate) fn store(&self, p: &MemPath) -> &Store {
        &self.stores[p.store]
    }

    /// Reads and decodes a memory; `Ok(None)` if nothing is there.
    pub(crate) fn current(&self, p: &MemPath) -> Result<Option<Current>> {
        Self::decode(p, self.store(p).read(p))
    }

    /// [`current`](Self::current) of several memories (of one store or several), read
    /// together where the store can (one query for a database).
    pub(crate) fn current_many(&self, paths: &[MemPath]) -> Vec<Result<Option<Current>>> {
        let mut out: Vec<Option<Result<Option<Current>>>> = paths.iter().map(|_| None).collect();
        for (i, store) in self.stores.iter().enumerate() {
            let (at, mine): (Vec<usize>, Vec<MemPath>) = paths
                .iter()
                .enumerate()
                .filter(|(_, p)| p.store == i)
                .map(|(n, p)| (n, p.clone()))
                .unzip();
            if mine.is_empty() {
                continue;
            }
            for ((n, p), read) in at.into_iter().zip(&mine).zip(store.read_many(&mine)) {
                out[n] = Some(Self::decode(p, read));
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    fn decode(p: &MemPath, read: Result<crate::store::FileData>) -> Result<Option<Current>> {
        match read {
            Ok(data) => {
                let sha256 = text::sha256_hex(&data.bytes);
                let text = String::from_utf8(data.bytes).map_err(|_| Error::NotUtf8 {
                    path: p.canonical(),
                })?;
                Ok(Some(Current {
                    text,
                    sha256,
                    modified: data.modified,
                    stamp: data.stamp,
                }))
            }
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a memory, whole or a line range, within the result budget less the bytes
    /// the caller puts before the numbered lines: `header` gives them from the memory's
    /// freshness (the notes of `memory_read`, the compatibility profile's heading).
    pub fn read(
        &self,
        raw: &str,
        view_range: Option<(i64, i64)>,
        header: &dyn Fn(Freshness<'_>) -> usize,
    ) -> Result<ReadResult> {
        let (p, cur) = self.existing(raw)?;
        let all: Vec<&str> = cur.text.split_inclusive('\n').collect();
        let total = all.len();
        let (start, end) = resolve_range(view_range, total)?;
        let age_days = text::age_days(cur.modified);
        let updated_at = text::rfc3339(cur.modified);
        let expiry = Expiry::of(&cur.text);
        let reserve = header(Freshness {
            updated_at: &updated_at,
            age_days,
            expires_at: expiry.at.as_deref(),
            expired: expiry.expired,
        });
        let budget = self.settings.result_budget.saturating_sub(reserve);
        let mut last = start.saturating_sub(1);
        let mut body = String::new();
        // The first line alone may not fit (one long line of minified JSON, say): then
        // only its head is shown, and `content` holds just that head.
        let mut cut_line = None;
        // When the selection does not fit whole, room is kept for the note that says
        // where to continue.
        let whole: usize = (start..=end).map(|n| all[n - 1].len() + 8).sum();
        let limit = if whole <= budget {
            budget
        } else {
            budget.saturating_sub(READ_NOTE_ROOM)
        };
        for n in start..=end {
            let line = all[n - 1].strip_suffix('\n').unwrap_or(all[n - 1]);
            let line = line.strip_suffix('\r').unwrap_or(line);
            let before = body.len();
            if n > start {
                body.push('\n');
            }
            text::numbered_line(&mut body, n, line);
            if body.len() > limit {
                body.truncate(before);
                if n > start {
                    break;
                }
                let room = budget.saturating_sub(LONG_LINE_NOTE_ROOM);
                let head = &line[..text::floor_char_boundary(line, room)];
                text::numbered_line(&mut body, n, head);
                cut_line = Some((n, line.len(), head.len()));
                last = n;
                break;
            }
            last = n;
        }
        let truncated = last < end || cut_line.is_some();
        let content = if let Some((n, _, shown)) = cut_line {
            all[n - 1][..shown].to_owned()
        } else if start == 1 && last == total {
            cur.text.clone()
        } else {
            all[start.saturating_sub(1).min(last)..last].concat()
        };
        Ok(ReadResult {
            path: p.canonical(),
            content,
            size_bytes: cur.text.len() as u64,
            content_sha256: cur.sha256,
            total_lines: total,
            start_line: start.min(last.max(1)),
            end_line: last,
            updated_at,
            age_days,
            expires_at: expiry.at,
            expired: expiry.expired,
            truncated,
            long_line: cut_line,
        })
    }

    /// A memory's whole text (for MCP resources, which are read whole).
    pub fn text(&self, raw: &str) -> Result<String> {
        Ok(self.existing(raw)?.1.text)
    }

    /// The memory at `raw`, read: a store itself is a folder, nothing there is not found.
    fn existing(&self, raw: &str) -> Result<(MemPath, Current)> {
        let p = self.path(raw)?;
        if p.is_root() {
            return Err(Error::IsFolder {
                path: p.canonical(),
            });
        }
        let cur = self.current(&p)?.ok_or_else(|| Error::NotFound {
            path: p.canonical(),
        })?;
        // A trailing `/` names a folder, as delete and move read it: a file is never
        // read under its name with the slash dropped.
        if raw.len() > 1 && raw.ends_with('/') {
            return Err(Error::NotAFolder {
                path: p.canonical(),
            });
        }
        Ok((p, cur))
    }

    /// Frontmatter of a memory's text, for list and search results.
    pub(crate) fn frontmatter(text: &str) -> Option<Frontmatter> {
        frontmatter::parse(text)
    }
}

/// A memory's expiry from its frontmatter, as results show it.
#[derive(Debug, Default)]
pub(crate) struct Expiry {
    /// RFC 3339 UTC; `None` without a valid `expires`.
    pub at: Option<String>,
    pub expired: bool,
}

impl Expiry {
    pub(crate) fn of(text: &str) -> Expiry {
        if !frontmatter::may_have(text, "expires") {
            return Expiry::default();
        }
        Self::of_frontmatter(frontmatter::parse(text).as_ref())
    }

    pub(crate) fn of_frontmatter(fm: Option<&Frontmatter>) -> Expiry {
        match fm.and_then(Frontmatter::expires) {
            Some(secs) => Expiry {
                at: Some(text::rfc3339_secs(secs)),
                expired: secs <= text::now_secs(),
            },
            None => Expiry::default(),
        }
    }
}

/// Bytes of the result budget kept for the note that ends a read cut after a line.
const READ_NOTE_ROOM: usize = 160;
/// Bytes kept for the note after a line cut short, and its line-number prefix.
const LONG_LINE_NOTE_ROOM: usize = 320;

/// Turns an optional `[start, end]` (1-based, inclusive, `-1` = to the end) into a range
/// of existing lines. An empty file reads as the empty range `1..=0`.
fn resolve_range(range: Option<(i64, i64)>, total: usize) -> Result<(usize, usize)> {
    let Some((start, end)) = range else {
        return Ok((1, total));
    };
    let bad = |why: String| Err(Error::ViewRange { start, end, why });
    if start < 1 {
        return bad("lines are numbered from 1".into());
    }
    if start as usize > total.max(1) {
        return bad(format!(
            "the memory has {total} lines; start must be at most {}",
            total.max(1)
        ));
    }
    let end = if end == -1 { total as i64 } else { end };
    if end < start {
        if total == 0 {
            return Ok((1, 0));
        }
        return bad("end must be at least start, or -1 for the end of the memory".into());
    }
    Ok((start as usize, (end as usize).min(total)))
}

#[cfg(test)]
mod tests {
    use super::resolve_range;

    #[test]
    fn resolves_view_ranges() {
        assert_eq!(resolve_range(None, 5).unwrap(), (1, 5));
        assert_eq!(resolve_range(Some((2, -1)), 5).unwrap(), (2, 5));
        assert_eq!(resolve_range(Some((2, 99)), 5).unwrap(), (2, 5));
        assert_eq!(resolve_range(Some((1, -1)), 0).unwrap(), (1, 0));
        assert!(resolve_range(Some((0, 2)), 5).is_err());
        assert!(resolve_range(Some((6, -1)), 5).is_err());
        assert!(resolve_range(Some((3, 2)), 5).is_err());
    }
}
