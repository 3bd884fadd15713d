//! `memory_search`: candidates and ranks come from each store's index (or, without one,
//! from a scan of the files); the hits shown are then read from disk for their snippets.
//! A shown hit whose file no longer matches what the index holds is re-synced and the
//! query re-run, so no result ever shows text that is not in the file.

use super::Memdir;
use super::sync::Progress;
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::search::index::{Combine, Order, Scope, Stamp};
use crate::search::snippet::clip;
use crate::search::{DocMatch, Query, Scorer, shown_lines};
use crate::store::EntryKind;
use crate::text;

/// `memory_search`'s input.
#[derive(Debug, Default)]
pub struct SearchRequest<'a> {
    pub query: &'a str,
    pub path: Option<&'a str>,
    pub limit: usize,
    pub cursor: Option<&'a str>,
    /// Frontmatter `type` that hits must have.
    pub kind: Option<&'a str>,
    /// Frontmatter tag that hits must carry.
    pub tag: Option<&'a str>,
    /// Also show memories whose frontmatter `expires` has passed.
    pub include_expired: bool,
    /// Only memories modified at or after this (RFC 3339 date-time or date).
    pub updated_after: Option<&'a str>,
    /// Only memories modified before this (RFC 3339 date-time or date).
    pub updated_before: Option<&'a str>,
    pub order: Order,
}

#[derive(Debug, Clone)]
pub struct SearchHit {
    pub path: String,
    /// Relevance relative to the best hit of the search (1 for it): raw BM25 is not a
    /// figure a person can read (a word in most memories scores 1e-6, as its IDF floors).
    pub score: f64,
    /// The best matching line (1-based).
    pub line: usize,
    /// Up to 3 matching lines, numbered.
    pub snippet: String,
    /// Frontmatter `name`.
    pub name: Option<String>,
    pub description: Option<String>,
    /// Its frontmatter expiry has passed (shown only with `include_expired`).
    pub expired: bool,
    pub updated_at: String,
}

#[derive(Debug)]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
    pub total_hits: usize,
    pub next_cursor: Option<String>,
    /// No file had every word, so files with any of them are shown.
    pub relaxed: bool,
    /// The query went past its bounds: only its first part was searched.
    pub query_cut: bool,
}

/// Nanoseconds since the epoch, as the index stores a file's modification time.
fn nanos(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// `score` as a share of `best`, the top score of the search, in (0, 1].
fn relative(score: f64, best: f64) -> f64 {
    if best > 0.0 && score.is_finite() {
        (score / best).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Re-runs of a query after finding stale hits, before showing what there is.
const ATTEMPTS: usize = 3;

/// A ranked candidate: where, how good, and the stamp the index holds (none for a scan).
struct Candidate {
    path: MemPath,
    score: f64,
    /// Modification time, for the most recent first.
    modified_ns: i64,
    indexed: Option<Stamp>,
}

/// What every store's matches add up to: how many, the best score, the top candidates.
#[derive(Default)]
struct Ranking {
    total: usize,
    best: f64,
    candidates: Vec<Candidate>,
}

/// A search's filters, as the index and the scan apply them.
#[derive(Clone, Copy)]
struct Filters<'a> {
    kind: Option<&'a str>,
    tag: Option<&'a str>,
    live_at: Option<i64>,
    after_ns: Option<i64>,
    before_ns: Option<i64>,
    order: Order,
}

/// Where a page starts: the `next_cursor` of a previous search, or the first hit.
fn cursor_offset(cursor: Option<&str>) -> Result<usize> {
    match cursor {
        None | Some("") => Ok(0),
        Some(c) => c.parse::<usize>().map_err(|_| {
            Error::InvalidArgument(format!(
                "invalid cursor `{}`; pass the next_cursor of a previous search unchanged",
                text::head_chars(c, 100)
            ))
        }),
    }
}

/// A time filter's value in nanoseconds since the epoch, or an error naming `name`.
fn instant_ns(name: &str, raw: Option<&str>) -> Result<Option<i64>> {
    raw.map(|r| {
        text::parse_instant(r)
            .map(|s| s.saturating_mul(1_000_000_000))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{name} must be a date or an RFC 3339 date-time, e.g. `2026-03-01` or `2026-03-01T09:00:00Z`; got `{}`",
                    text::head_chars(r, 100)
                ))
            })
    })
    .transpose()
}

impl SearchRequest<'_> {
    pub fn run(&self, md: &Memdir, progress: Progress) -> Result<SearchResult> {
        let offset = cursor_offset(self.cursor)?;
        let filters = Filters {
            kind: self.kind,
            tag: self.tag,
            live_at: (!self.include_expired).then(text::now_secs),
            after_ns: instant_ns("updated_after", self.updated_after)?,
            before_ns: instant_ns("updated_before", self.updated_before)?,
            order: self.order,
        };
        let query = Query::parse(self.query);
        let scopes = scopes(md, self.path)?;
        let mut result = SearchResult {
            hits: Vec::new(),
            total_hits: 0,
            next_cursor: None,
            relaxed: false,
            query_cut: query.cut,
        };
        if query.is_empty() {
            return Ok(result);
        }
        let need = offset + self.limit;
        for attempt in 0..ATTEMPTS {
            let mut ranking = rank(md, &query, &scopes, &filters, Combine::All, need, progress)?;
            let relaxed = ranking.total == 0 && query.clauses.len() > 1;
            if relaxed {
                ranking = rank(md, &query, &scopes, &filters, Combine::Any, need, progress)?;
            }
            let Ranking {
                total,
                best,
                candidates: mut ranked,
            } = ranking;
            match self.order {
                Order::Relevance => ranked.sort_by(|a, b| {
                    b.score
                        .total_cmp(&a.score)
                        .then_with(|| a.path.canonical().cmp(&b.path.canonical()))
                }),
                Order::Recent => ranked.sort_by(|a, b| {
                    b.modified_ns
                        .cmp(&a.modified_ns)
                        .then_with(|| a.path.canonical().cmp(&b.path.canonical()))
                }),
            }
            let (mut hits, stale) = show(md, &query, ranked.iter().skip(offset).take(self.limit));
            for hit in &mut hits {
                hit.score = relative(hit.score, best);
            }
            result = SearchResult {
                next_cursor: (offset + hits.len() < total && !hits.is_empty())
                    .then(|| (offset + hits.len()).to_string()),
                hits,
                total_hits: total,
                relaxed,
                query_cut: query.cut,
            };
            if !stale {
                break;
            }
            tracing::debug!(attempt, "a search hit was stale; re-running the query");
        }
        Ok(result)
    }
}

/// Where to search: every store, or one path; each with its prefix in the index.
fn scopes(md: &Memdir, path: Option<&str>) -> Result<Vec<(MemPath, Option<String>)>> {
    md.targets(path.unwrap_or("/"))?
        .into_iter()
        .map(|p| {
            let prefix = scope_prefix(md, &p)?;
            Ok((p, prefix))
        })
        .collect()
}

/// `None` for a store root; `rel/` for a folder; `rel` for a file.
fn scope_prefix(md: &Memdir, p: &MemPath) -> Result<Option<String>> {
    if p.is_root() {
        return Ok(None);
    }
    match md.store(p).metadata(p)? {
        None => Err(Error::NotFound {
            path: p.canonical(),
        }),
        Some(m) if m.kind == EntryKind::Dir => Ok(Some(format!("{}/", p.rel()))),
        Some(_) => Ok(Some(p.rel())),
    }
}

/// Every scope's matches: the total, the best score, and the top `need` of each.
fn rank(
    md: &Memdir,
    query: &Query,
    scopes: &[(MemPath, Option<String>)],
    filters: &Filters,
    combine: Combine,
    need: usize,
    progress: Progress,
) -> Result<Ranking> {
    let mut out = Ranking::default();
    for (scope, prefix) in scopes {
        let filter = Scope {
            prefix: prefix.as_deref(),
            kind: filters.kind,
            tag: filters.tag,
            live_at: filters.live_at,
            updated_after_ns: filters.after_ns,
            updated_before_ns: filters.before_ns,
        };
        let indexed = md.with_index(scope.store, progress, |index| {
            index.query_page(&query.clauses, combine, &filter, filters.order, 0, need)
        })?;
        match indexed {
            Some(Ok(page)) => {
                out.total += page.total;
                out.best = out.best.max(page.best);
                out.candidates
                    .extend(page.rows.into_iter().map(|r| Candidate {
                        path: scope.with_rel(&r.rel),
                        score: r.score,
                        modified_ns: r.stamp.mtime_ns,
                        indexed: Some(r.stamp),
                    }));
            }
            other => {
                if let Some(Err(e)) = other {
                    tracing::warn!(error = %e, "index query failed; scanning");
                }
                let rows = scan(md, query, scope, filters, combine)?;
                out.total += rows.len();
                out.best = rows.iter().map(|c| c.score).fold(out.best, f64::max);
                out.candidates.extend(rows);
            }
        }
    }
    Ok(out)
}

/// Reads each hit to show it. Returns the hits and whether any was stale (its file
/// changed since it was indexed, or no longer matches).
fn show<'c>(
    md: &Memdir,
    query: &Query,
    page: impl Iterator<Item = &'c Candidate>,
) -> (Vec<SearchHit>, bool) {
    let mut hits = Vec::new();
    let mut stale = false;
    let mut used = 0usize;
    // The page's memories, read together (one query for a database store).
    let page: Vec<&Candidate> = page.collect();
    let paths: Vec<MemPath> = page.iter().map(|c| c.path.clone()).collect();
    let currents = md.current_many(&paths);
    for (c, current) in page.into_iter().zip(currents) {
        if used > md.settings.result_budget {
            break;
        }
        let current = current.ok().flatten();
        let fresh = match (&current, c.indexed) {
            (Some(cur), Some(stamp)) => cur.stamp == stamp,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let Some(cur) = current.filter(|_| fresh) else {
            md.resync(&c.path);
            stale = true;
            continue;
        };
        let Some((line, lines)) = shown_lines(query, &cur.text, 3) else {
            md.resync(&c.path);
            stale = true;
            continue;
        };
        let mut snippet = String::new();
        for (n, l) in lines {
            if !snippet.is_empty() {
                snippet.push('\n');
            }
            text::numbered_line(&mut snippet, n, &clip(l, query));
        }
        let fm = Memdir::frontmatter(&cur.text);
        let now = text::now_secs();
        let hit = SearchHit {
            path: c.path.canonical(),
            score: c.score,
            line,
            snippet,
            expired: fm
                .as_ref()
                .and_then(|f| f.expires())
                .is_some_and(|e| e <= now),
            name: fm.as_ref().and_then(|f| f.name.clone()),
            description: fm.and_then(|f| f.description),
            updated_at: text::rfc3339(cur.modified),
        };
        used += hit.snippet.len() + hit.path.len() + 100;
        hits.push(hit);
    }
    (hits, stale)
}

/// The scan: every visible file under `scope` read and matched, BM25 over that set.
fn scan(
    md: &Memdir,
    query: &Query,
    scope: &MemPath,
    req: &Filters,
    combine: Combine,
) -> Result<Vec<Candidate>> {
    let mut matched = Vec::new();
    let (mut docs, mut total_len) = (0u64, 0u64);
    let mut df = vec![0u32; query.clauses.len()];
    for path in files_under(md, scope)? {
        let cur = match md.current(&path) {
            Ok(Some(cur)) => cur,
            Err(e @ Error::Database { .. }) => return Err(e),
            _ => continue,
        };
        let fm = Memdir::frontmatter(&cur.text);
        if let Some(kind) = req.kind
            && fm.as_ref().and_then(|f| f.kind.as_deref()) != Some(kind)
        {
            continue;
        }
        if let Some(tag) = req.tag
            && !fm.as_ref().is_some_and(|f| f.tags.iter().any(|t| t == tag))
        {
            continue;
        }
        if let Some(now) = req.live_at
            && fm
                .as_ref()
                .and_then(|f| f.expires())
                .is_some_and(|e| e <= now)
        {
            continue;
        }
        let modified_ns = nanos(cur.modified);
        if req.after_ns.is_some_and(|a| modified_ns < a)
            || req.before_ns.is_some_and(|b| modified_ns >= b)
        {
            continue;
        }
        let m = DocMatch::of(query, &cur.text);
        docs += 1;
        total_len += m.len as u64;
        for (d, &tf) in df.iter_mut().zip(&m.tf) {
            *d += (tf > 0) as u32;
        }
        let keep = match combine {
            Combine::All => m.all(),
            Combine::Any => m.any(),
        };
        if keep {
            matched.push((path, m, modified_ns));
        }
    }
    let scorer = Scorer::new(&df, docs, total_len);
    Ok(matched
        .into_iter()
        .map(|(path, m, modified_ns)| Candidate {
            score: scorer.score(&m),
            path,
            modified_ns,
            indexed: None,
        })
        .collect())
}

/// The visible files at or under `scope` (an error only when the database holding the
/// store is away).
fn files_under(md: &Memdir, scope: &MemPath) -> Result<Vec<MemPath>> {
    let store = md.store(scope);
    Ok(match store.metadata(scope) {
        Ok(Some(m)) if m.kind == EntryKind::Dir => match store.walk(scope, None) {
            Ok(entries) => entries
                .into_iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| e.path)
                .collect(),
            Err(e @ Error::Database { .. }) => return Err(e),
            Err(_) => Vec::new(),
        },
        Ok(Some(_)) => vec![scope.clone()],
        Err(e @ Error::Database { .. }) => return Err(e),
        _ => Vec::new(),
    })
}
