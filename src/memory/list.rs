//! `memory_list`: what is stored under a path, sorted by path, paginated by a cursor (the
//! last path returned) and by the result budget. Hashes and frontmatter are read only for
//! the page being returned. `ListRequest::rows` gives the same listing whole from one
//! walk, nothing read, and `entries` completes the rows a caller keeps (the console's
//! sorted pages, the expired memories, the generated MEMORY.md).

use std::collections::HashMap;

use super::Memdir;
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::store::{EntryKind, WalkEntry};
use crate::text;

/// `memory_list`'s input.
#[derive(Debug, Default)]
pub struct ListRequest<'a> {
    pub path: Option<&'a str>,
    /// `None` = every file below, recursively; `Some(n)` = files and folders up to `n`
    /// levels down, folders rolled up.
    pub depth: Option<usize>,
    pub limit: usize,
    pub cursor: Option<&'a str>,
    /// Only entries not updated for at least this many days (a folder: its newest file).
    pub older_than_days: Option<u64>,
    pub order: ListOrder,
}

/// How a listing is sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// By path.
    #[default]
    Path,
    /// Least recently updated first (ties by path): what to review.
    Oldest,
}

/// One listed entry.
#[derive(Debug, Clone)]
pub struct ListEntry {
    pub path: String,
    pub is_dir: bool,
    /// A file's size, or the total size of the files below a folder.
    pub size_bytes: u64,
    pub content_sha256: Option<String>,
    pub updated_at: String,
    /// Frontmatter `name`.
    pub name: Option<String>,
    pub description: Option<String>,
    pub kind: Option<String>,
    /// Files below a folder.
    pub file_count: Option<u64>,
    /// Frontmatter `expires` as an RFC 3339 UTC time.
    pub expires_at: Option<String>,
    /// That time has passed.
    pub expired: bool,
    /// Frontmatter `importance` (1–5), when valid.
    pub importance: Option<u8>,
}

#[derive(Debug)]
pub struct ListResult {
    pub entries: Vec<ListEntry>,
    pub next_cursor: Option<String>,
    /// Entries matching in all (before pagination).
    pub total: usize,
    /// Stores a listing of every store went on without (their database away).
    pub unavailable: Vec<crate::error::Unavailable>,
}

/// A folder and what lies a few levels below it (the compatibility profile's `view`).
#[derive(Debug)]
pub struct Tree {
    /// Total size of the visible files below the folder, at any depth.
    pub size_bytes: u64,
    /// Entries in pre-order: each folder's entries sorted by name, a folder's contents
    /// right after it.
    pub entries: Vec<TreeEntry>,
}

#[derive(Debug)]
pub struct TreeEntry {
    /// The path below the folder, `/`-separated, without a trailing `/`.
    pub rel: String,
    pub is_dir: bool,
    /// A file's size, or the total size of the visible files below a folder.
    pub size_bytes: u64,
}

/// An entry before its page is chosen: what one walk knows of it (path, size, last
/// change), nothing read yet. [`ListRequest::rows`] hands them out, [`entries`] completes
/// them.
#[derive(Debug, Clone)]
pub struct ListRow {
    path: MemPath,
    canonical: String,
    is_dir: bool,
    size: u64,
    modified: std::time::SystemTime,
    file_count: Option<u64>,
}

/// Whether a folder's rows include the folder itself.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    Shown,
    Below,
}

/// Where a page of a listing starts: after the last row of the previous page. A cursor
/// is that row's path (by path) or `<ns>|<path>` (oldest first); empty for the first page.
struct Cursor<'r> {
    order: ListOrder,
    first_page: bool,
    after_ns: u128,
    after: &'r str,
}

impl ListRow {
    /// The canonical path (a folder's ends in `/`).
    pub fn path(&self) -> &str {
        &self.canonical
    }

    pub fn is_dir(&self) -> bool {
        self.is_dir
    }

    /// The file's size on the store, or the total size of the files below a folder.
    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// The file's last change, or the newest file's below a folder (the folder's own when
    /// it holds none).
    pub fn modified(&self) -> std::time::SystemTime {
        self.modified
    }
}

impl<'r> Cursor<'r> {
    /// The cursor of `req`, which must lie in what `roots` list.
    fn parse(req: &ListRequest<'r>, roots: &[MemPath]) -> Result<Cursor<'r>> {
        let raw = req.cursor.unwrap_or("");
        let (after_ns, after) = match req.order {
            ListOrder::Oldest if !raw.is_empty() => raw
                .split_once('|')
                .and_then(|(ns, p)| Some((ns.parse::<u128>().ok()?, p)))
                .ok_or_else(|| Error::Cursor {
                    cursor: text::head_chars(raw, 1100),
                    and_order: " and sort",
                })?,
            _ => (0, raw),
        };
        let inside = roots.iter().any(|root| {
            let top = root.canonical();
            let top = top.trim_end_matches('/');
            after == top
                || after
                    .strip_prefix(top)
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if !after.is_empty() && !inside {
            return Err(Error::Cursor {
                cursor: text::head_chars(after, 1100),
                and_order: "",
            });
        }
        Ok(Cursor {
            order: req.order,
            first_page: raw.is_empty(),
            after_ns,
            after,
        })
    }

    /// Whether `row` comes after the cursor (is on this page or a later one).
    fn is_before(&self, row: &ListRow) -> bool {
        match self.order {
            ListOrder::Path => row.canonical.as_str() > self.after,
            ListOrder::Oldest => {
                self.first_page
                    || (nanos(row.modified), row.canonical.as_str()) > (self.after_ns, self.after)
            }
        }
    }

    /// The cursor of the page that follows `last`.
    fn after(order: ListOrder, last: &ListRow) -> String {
        match order {
            ListOrder::Path => last.canonical.clone(),
            ListOrder::Oldest => format!("{}|{}", nanos(last.modified), last.canonical),
        }
    }
}

impl ListRequest<'_> {
    pub fn run(&self, md: &Memdir) -> Result<ListResult> {
        if self.depth == Some(0) {
            return Err(Error::InvalidArgument(
                "depth must be at least 1 (1 = immediate children); omit it to list every file recursively".into(),
            ));
        }
        let roots = self.roots(md)?;
        let (rows, unavailable) = listed_rows(md, self, &roots)?;
        let cursor = Cursor::parse(self, &roots)?;
        let total = rows.len();
        let mut entries = Vec::new();
        let mut used = 0usize;
        let mut next_cursor = None;
        let mut last: Option<&ListRow> = None;
        for row in rows.iter().filter(|r| cursor.is_before(r)) {
            let entry = (entries.len() < self.limit).then(|| list_entry(md, row));
            // The page ends before the entry that would take it past the budget (a first
            // entry is always shown: its fields are held to SHOWN_FIELD_CHARS).
            let fits = entry.as_ref().is_some_and(|e| {
                entries.is_empty() || used + entry_cost(e) <= md.settings.result_budget
            });
            let Some(entry) = entry.filter(|_| fits) else {
                next_cursor = last.map(|r| Cursor::after(self.order, r));
                break;
            };
            last = Some(row);
            used += entry_cost(&entry);
            entries.push(entry);
        }
        Ok(ListResult {
            entries,
            next_cursor,
            total,
            unavailable,
        })
    }
}

impl ListRequest<'_> {
    /// Every row of the listing, in its order, from one walk of each root: no cursor, no
    /// `limit`, no result budget (those are `memory_list`'s, to keep an answer small),
    /// and no file read. For a caller that sorts, filters and pages a whole folder itself
    /// (the console) and completes only the rows it shows, with [`entries`].
    pub fn rows(&self, md: &Memdir) -> Result<Vec<ListRow>> {
        if self.depth == Some(0) {
            return Err(Error::InvalidArgument(
                "depth must be at least 1 (1 = immediate children); omit it to list every file recursively".into(),
            ));
        }
        let roots = self.roots(md)?;
        let (rows, unavailable) = listed_rows(md, self, &roots)?;
        // A caller that shows the whole listing (the console) shows the store's error.
        match unavailable.into_iter().next() {
            Some(gone) => Err(Error::Database {
                store: gone.store.trim_start_matches('/').to_owned(),
                reason: gone.reason,
            }),
            None => Ok(rows),
        }
    }

    /// The paths listed. A trailing `/` names a folder (or a link to one inside the
    /// store), so a file named so is [`Error::NotAFolder`], as for a delete or a move
    /// (never the file with the slash dropped).
    fn roots(&self, md: &Memdir) -> Result<Vec<MemPath>> {
        let raw = self.path.unwrap_or("/");
        let roots = md.targets(raw)?;
        for root in &roots {
            super::mutation::folder_form_fits(md, raw, root)?;
        }
        Ok(roots)
    }
}

/// Rows whose files [`entries`] reads in one batch: a bound on the texts held at once.
const BATCH: usize = 256;

/// The rows as `memory_list` shows them (hash and frontmatter for files), their files
/// read in batches (one per store and [`BATCH`] rows).
pub fn entries(md: &Memdir, rows: &[ListRow]) -> Vec<ListEntry> {
    let mut out = Vec::with_capacity(rows.len());
    for rows in rows.chunks(BATCH) {
        let files: Vec<MemPath> = rows
            .iter()
            .filter(|r| !r.is_dir)
            .map(|r| r.path.clone())
            .collect();
        let mut read = md.current_many(&files).into_iter();
        out.extend(rows.iter().map(|row| {
            let current = if row.is_dir {
                None
            } else {
                read.next().and_then(|r| r.ok().flatten())
            };
            complete(row, current)
        }));
    }
    out
}

/// Every row a listing shows under `roots`, filtered by age and in its order, and the
/// stores a listing of every store went on without (their database away; a listing of
/// one store fails with it, as does one where no store answered).
fn listed_rows(
    md: &Memdir,
    req: &ListRequest,
    roots: &[MemPath],
) -> Result<(Vec<ListRow>, Vec<crate::error::Unavailable>)> {
    let top_level = req.path.is_none_or(|p| p == "/");
    let mut rows = Vec::new();
    let mut unavailable = Vec::new();
    for root in roots {
        let listed = match (top_level, req.depth) {
            // Listing `/` at depth 1 shows the stores themselves.
            (true, Some(d)) => rows_under(md, root, Some(d - 1), Start::Shown),
            _ => rows_under(md, root, req.depth, Start::Below),
        };
        match listed {
            Ok(listed) => rows.extend(listed),
            Err(e) => match e.unavailable_store(&[root.store_name.as_str()]) {
                Some(gone) if top_level && roots.len() > 1 => unavailable.push(gone),
                _ => return Err(e),
            },
        }
    }
    if !unavailable.is_empty() && unavailable.len() == roots.len() {
        let gone = unavailable.swap_remove(0);
        return Err(Error::Database {
            store: gone.store.trim_start_matches('/').to_owned(),
            reason: gone.reason,
        });
    }
    if let Some(days) = req.older_than_days {
        let cutoff = std::time::SystemTime::now()
            .checked_sub(std::time::Duration::from_secs(days.saturating_mul(86_400)))
            .unwrap_or(std::time::UNIX_EPOCH);
        rows.retain(|r| r.modified <= cutoff);
    }
    match req.order {
        ListOrder::Path => rows.sort_by(|a, b| a.canonical.cmp(&b.canonical)),
        ListOrder::Oldest => rows.sort_by(|a, b| {
            a.modified
                .cmp(&b.modified)
                .then_with(|| a.canonical.cmp(&b.canonical))
        }),
    }
    Ok((rows, unavailable))
}

/// The folder at `raw` with its visible entries up to `depth` levels down (1 = its
/// immediate children). A file is [`Error::NotAFolder`].
pub fn tree(md: &Memdir, raw: &str, depth: usize) -> Result<Tree> {
    let start = md.path(raw)?;
    let mut rows = rows_under(md, &start, Some(depth.max(1)), Start::Shown)?;
    if rows.first().is_none_or(|r| !r.is_dir || r.path != start) {
        return Err(Error::NotAFolder {
            path: start.canonical(),
        });
    }
    let folder = rows.remove(0);
    rows.sort_by(|a, b| a.path.segments.cmp(&b.path.segments));
    let base = start.segments.len();
    Ok(Tree {
        size_bytes: folder.size,
        entries: rows
            .into_iter()
            .map(|r| TreeEntry {
                rel: r.path.segments[base..].join("/"),
                is_dir: r.is_dir,
                size_bytes: r.size,
            })
            .collect(),
    })
}

/// The rows under `start`: itself if it is a file; else its entries (files only when
/// recursive, files and rolled-up folders up to `depth`; `Some(0)` = none).
/// [`Start::Shown`] adds `start` as a rolled-up folder.
fn rows_under(
    md: &Memdir,
    start: &MemPath,
    depth: Option<usize>,
    with: Start,
) -> Result<Vec<ListRow>> {
    let store = md.store(start);
    let meta = store.metadata(start)?.ok_or_else(|| Error::NotFound {
        path: start.canonical(),
    })?;
    if meta.kind != EntryKind::Dir {
        return Ok(vec![ListRow {
            canonical: start.canonical(),
            path: start.clone(),
            is_dir: false,
            size: meta.size,
            modified: meta.modified,
            file_count: None,
        }]);
    }
    let walked = store.walk(start, None)?;
    let base = start.segments.len();
    // Only folder rows show roll-ups: a recursive listing of files needs none.
    let rollup = if depth.is_some() || with == Start::Shown {
        rollup(&walked, base)
    } else {
        HashMap::new()
    };
    let folder_row = |path: &MemPath| {
        let mut total = rollup
            .get(path.segments.as_slice())
            .copied()
            .unwrap_or_default();
        // A folder without files has no newest file: its own time is what it has (not
        // 1970, the time of nothing, which sorted it as the oldest and made it stale).
        if total.files == 0
            && let Ok(Some(meta)) = store.metadata(path)
        {
            total.modified = meta.modified;
        }
        ListRow {
            canonical: format!("{}/", path.canonical()),
            path: path.clone(),
            is_dir: true,
            size: total.bytes,
            modified: total.modified,
            file_count: Some(total.files),
        }
    };
    let mut rows = Vec::new();
    if with == Start::Shown {
        rows.push(folder_row(start));
    }
    for e in &walked {
        let keep = match depth {
            None => e.kind == EntryKind::File,
            Some(d) => e.depth <= d,
        };
        if !keep {
            continue;
        }
        rows.push(if e.kind == EntryKind::Dir {
            folder_row(&e.path)
        } else {
            ListRow {
                canonical: e.path.canonical(),
                path: e.path.clone(),
                is_dir: false,
                size: e.size,
                modified: e.modified,
                file_count: None,
            }
        });
    }
    Ok(rows)
}

/// About how many bytes of a result's text `e` takes: its path, its frontmatter fields
/// and room for the rest of its line.
fn entry_cost(e: &ListEntry) -> usize {
    let field = |f: &Option<String>| f.as_ref().map_or(0, String::len);
    e.path.len() + 160 + field(&e.name) + field(&e.description) + field(&e.kind)
}

/// Completes a row on the page: hash and frontmatter for files.
fn list_entry(md: &Memdir, row: &ListRow) -> ListEntry {
    let current = if row.is_dir {
        None
    } else {
        md.current(&row.path).ok().flatten()
    };
    complete(row, current)
}

/// A row with its file as read now (`None`: a folder, or a file gone or unreadable).
fn complete(row: &ListRow, current: Option<super::Current>) -> ListEntry {
    let mut entry = ListEntry {
        path: row.canonical.clone(),
        is_dir: row.is_dir,
        size_bytes: row.size,
        content_sha256: None,
        updated_at: text::rfc3339(row.modified),
        name: None,
        description: None,
        kind: None,
        file_count: row.file_count,
        expires_at: None,
        expired: false,
        importance: None,
    };
    if let Some(cur) = current {
        entry.size_bytes = cur.text.len() as u64;
        entry.content_sha256 = Some(cur.sha256);
        if let Some(fm) = Memdir::frontmatter(&cur.text) {
            let expiry = super::Expiry::of_frontmatter(Some(&fm));
            (entry.expires_at, entry.expired) = (expiry.at, expiry.expired);
            entry.name = text::shown_field(fm.name);
            entry.description = text::shown_field(fm.description);
            entry.kind = text::shown_field(fm.kind);
            entry.importance = fm.importance;
        }
    }
    entry
}

/// Nanoseconds since the epoch (0 before it).
fn nanos(t: std::time::SystemTime) -> u128 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Files, bytes and newest change below each folder of a walk that starts `base` segments
/// deep, the start included: each file counts in its folder, and each folder, deepest
/// first, adds its totals to its parent, so a path `d` segments deep costs `d` once, not
/// once per folder above it (a 500-deep tree took seconds to list).
fn rollup(walked: &[WalkEntry], base: usize) -> HashMap<&[String], Rollup> {
    let mut totals = Folders {
        totals: HashMap::new(),
        by_depth: Vec::new(),
        base,
    };
    for e in walked.iter().filter(|e| e.kind == EntryKind::File) {
        let segments = e.path.segments.as_slice();
        totals
            .of(&segments[..segments.len() - 1])
            .add(e.size, 1, e.modified);
    }
    for d in (1..totals.by_depth.len()).rev() {
        for folder in std::mem::take(&mut totals.by_depth[d]) {
            let here = totals.totals[folder];
            totals
                .of(&folder[..folder.len() - 1])
                .add(here.bytes, here.files, here.modified);
        }
    }
    totals.totals
}

/// The folders of [`rollup`] so far, and which of them are how deep below the start.
struct Folders<'w> {
    totals: HashMap<&'w [String], Rollup>,
    by_depth: Vec<Vec<&'w [String]>>,
    base: usize,
}

impl<'w> Folders<'w> {
    fn of(&mut self, folder: &'w [String]) -> &mut Rollup {
        self.totals.entry(folder).or_insert_with(|| {
            let d = folder.len() - self.base;
            if self.by_depth.len() <= d {
                self.by_depth.resize_with(d + 1, Vec::new);
            }
            self.by_depth[d].push(folder);
            Rollup::default()
        })
    }
}

/// What a folder holds, all levels down.
#[derive(Clone, Copy, Debug)]
struct Rollup {
    bytes: u64,
    files: u64,
    modified: std::time::SystemTime,
}

impl Default for Rollup {
    fn default() -> Rollup {
        Rollup {
            bytes: 0,
            files: 0,
            modified: std::time::SystemTime::UNIX_EPOCH,
        }
    }
}

impl Rollup {
    fn add(&mut self, bytes: u64, files: u64, modified: std::time::SystemTime) {
        self.bytes += bytes;
        self.files += files;
        self.modified = self.modified.max(modified);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn rollup_counts_every_file_in_every_folder_above_it() {
        let root = MemPath::root(0, "m");
        let at = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let file = |path: &MemPath, size, secs| WalkEntry {
            path: path.clone(),
            kind: EntryKind::File,
            size,
            modified: at(secs),
            stamp: None,
            depth: path.segments.len(),
        };
        // a/1 (1 byte), a/b/2 (10), a/b/c/d/3 (100): c holds no file of its own.
        let a = root.child("a");
        let b = a.child("b");
        let d = b.child("c").child("d");
        let walked = [
            file(&a.child("1"), 1, 5),
            file(&b.child("2"), 10, 9),
            file(&d.child("3"), 100, 7),
        ];
        let totals = rollup(&walked, a.segments.len());
        let of = |p: &MemPath| {
            let t = totals[p.segments.as_slice()];
            (t.files, t.bytes, t.modified)
        };
        assert_eq!(of(&a), (3, 111, at(9)));
        assert_eq!(of(&b), (2, 110, at(9)));
        assert_eq!(of(&b.child("c")), (1, 100, at(7)));
        assert_eq!(of(&d), (1, 100, at(7)));
        assert!(
            !totals.contains_key(root.segments.as_slice()),
            "above the start"
        );
        assert_eq!(totals.len(), 4);
    }
}
