//! `memory_search`: the request checked and turned into a search plan (which paths, which
//! filter, which page), run by the search wing (`crate::search::operation`) over the
//! stores as this context reads them.

use super::Memdir;
use super::sync::Progress;
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::search::Query;
use crate::search::filter::Filter;
use crate::search::index::{Index, Order};
use crate::search::meaning::Dense;
use crate::search::operation::{self, Corpus, Doc, Plan};
use crate::store::EntryKind;
use crate::text;

pub use crate::search::operation::{SearchHit, SearchResult};

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
    /// Only memories whose frontmatter `importance` is at least this (1–5; a memory
    /// without one counts as 3).
    pub min_importance: Option<i64>,
    pub order: Order,
}

/// `min_importance` checked: an integer from 1 to 5.
fn min_importance(raw: Option<i64>) -> Result<Option<u8>> {
    raw.map(|n| {
        u8::try_from(n)
            .ok()
            .filter(|n| crate::frontmatter::IMPORTANCE_RANGE.contains(n))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "min_importance must be an integer from 1 to 5 (memories without an importance count as 3); got {n}"
                ))
            })
    })
    .transpose()
}

/// Where a page starts: the `next_cursor` of a previous search of the same query, path,
/// filters and order (`OFFSET-SEARCH`, the second part naming the search), or the first
/// hit.
/// A cursor's offset, and the fingerprint of the stores the search that gave it went
/// without (`OFFSET-SEARCH[-LEFT]`), if it went without any.
fn cursor_offset(cursor: Option<&str>, search: &str) -> Result<(usize, Option<String>)> {
    let Some(c) = cursor.filter(|c| !c.is_empty()) else {
        return Ok((0, None));
    };
    let invalid = || {
        Error::InvalidArgument(format!(
            "invalid cursor `{}`; pass the next_cursor of a previous search unchanged",
            text::head_chars(c, 100)
        ))
    };
    let (offset, of) = c.split_once('-').ok_or_else(invalid)?;
    let offset = offset.parse::<usize>().map_err(|_| invalid())?;
    let (of, left) = match of.split_once('-') {
        Some((of, left)) if left.len() == 8 && left.bytes().all(|b| b.is_ascii_hexdigit()) => {
            (of, Some(left.to_owned()))
        }
        Some(_) => return Err(invalid()),
        None => (of, None),
    };
    if of != search {
        return Err(Error::InvalidArgument(format!(
            "cursor `{}` is of another search: a cursor continues the search that gave it, with the same query, path, filters, sort and limit; search again without it",
            text::head_chars(c, 100)
        )));
    }
    Ok((offset, left))
}

/// What names the stores a search went without, in its cursors: 8 hex digits of a
/// SHA-256 over their paths; `None` when every store answered.
fn left_out(unavailable: &[crate::error::Unavailable]) -> Option<String> {
    if unavailable.is_empty() {
        return None;
    }
    let mut stores: Vec<&str> = unavailable.iter().map(|u| u.store.as_str()).collect();
    stores.sort_unstable();
    Some(text::sha256_hex(stores.join("\n").as_bytes())[..8].to_string())
}

/// Whether `query` holds something besides punctuation and spaces (a letter, a digit,
/// an emoji or another symbol): what meaning can be asked of when it has no word.
fn has_symbols(query: &str) -> bool {
    query
        .chars()
        .any(|c| c.is_alphanumeric() || !(c.is_whitespace() || c.is_control() || is_punctuation(c)))
}

/// Punctuation of the scripts memdir reads: ASCII's, Latin-1's (`«»¿¡·`), the General
/// and Supplemental Punctuation blocks (`—…“”`), CJK's (`。、「」`) and the full-width
/// forms' (`！？，`).
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(c,
            '\u{a1}'..='\u{bf}'
            | '\u{2000}'..='\u{206f}'
            | '\u{2e00}'..='\u{2e7f}'
            | '\u{3000}'..='\u{303f}'
            | '\u{ff01}'..='\u{ff0f}'
            | '\u{ff1a}'..='\u{ff20}'
            | '\u{ff3b}'..='\u{ff40}'
            | '\u{ff5b}'..='\u{ff65}')
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
    /// What names this search in its cursors: 12 hex digits of a SHA-256 over the query,
    /// path, filters, order and page size (which decides whether the search relaxes to
    /// memories with some of the words, so pages of another size would skip some).
    fn fingerprint(&self) -> String {
        let fields = format!(
            "{:?}",
            (
                self.limit,
                self.query,
                self.path,
                self.kind,
                self.tag,
                self.include_expired,
                self.updated_after,
                self.updated_before,
                self.min_importance,
                self.order == Order::Recent,
            )
        );
        text::sha256_hex(fields.as_bytes())[..12].to_string()
    }

    pub fn run(&self, md: &Memdir, progress: Progress) -> Result<SearchResult> {
        let search = self.fingerprint();
        let (offset, left_before) = cursor_offset(self.cursor, &search)?;
        let filter = Filter {
            prefix: None,
            kind: self.kind,
            tag: self.tag,
            live_at: (!self.include_expired).then(text::now_secs),
            updated_after_ns: instant_ns("updated_after", self.updated_after)?,
            updated_before_ns: instant_ns("updated_before", self.updated_before)?,
            min_importance: min_importance(self.min_importance)?,
        };
        let query = Query::parse(self.query);
        let mut scopes = scopes(md, self.path)?;
        // Meaning is asked of every query but a blank one: a query without words still
        // says what meaning covers, and one of symbols (emoji) is searched by meaning.
        let vector = (!self.query.trim().is_empty())
            .then(|| md.embed_query(self.query))
            .flatten();
        // A search over every store goes on without a store whose database is away, and
        // says so; a search of one store fails with it.
        let mut unavailable = Vec::new();
        let mut result = loop {
            let plan = Plan {
                query: &query,
                scopes: &scopes,
                filter,
                order: self.order,
                offset,
                limit: self.limit,
                budget: md.settings.result_budget,
                meaning: vector.as_deref(),
                symbols: has_symbols(self.query),
            };
            let error = match operation::search(&Reading { md, progress }, &plan) {
                Ok(result) => break result,
                Err(e) => e,
            };
            let names: Vec<&str> = scopes.iter().map(|(p, _)| p.store_name.as_str()).collect();
            let left = match error.unavailable_store(&names) {
                Some(gone) if self.path.is_none_or(|p| p == "/") && names.len() > 1 => gone,
                _ => return Err(error),
            };
            scopes.retain(|(p, _)| format!("/{}", p.store_name) != left.store);
            unavailable.push(left);
        };
        // A page's offset counts the hits of the stores that answered the first page: a
        // store gone or back since then would shift them, skipping or repeating hits.
        let left = left_out(&unavailable);
        if self.cursor.is_some_and(|c| !c.is_empty()) && left != left_before {
            return Err(Error::InvalidArgument(
                "the stores that answered this search have changed since its first page (a store's database went away or came back); search again without the cursor".into(),
            ));
        }
        result.unavailable = unavailable;
        result.next_cursor = result.next_cursor.map(|at| match &left {
            Some(left) => format!("{at}-{search}-{left}"),
            None => format!("{at}-{search}"),
        });
        Ok(result)
    }
}

/// The stores as a search reads them: through this context, each index brought up to
/// date (and the outside changes it found recorded) before it is queried.
struct Reading<'a> {
    md: &'a Memdir,
    progress: Progress<'a>,
}

impl Corpus for Reading<'_> {
    fn with_index<T>(&self, store: usize, f: impl FnOnce(&Index) -> T) -> Result<Option<T>> {
        self.md.with_index(store, self.progress, f)
    }

    fn files_under(&self, scope: &MemPath) -> Result<Vec<MemPath>> {
        files_under(self.md, scope)
    }

    fn read(&self, p: &MemPath) -> Result<Option<Doc>> {
        self.md.current(p).map(|c| c.map(doc))
    }

    fn read_many(&self, paths: &[MemPath]) -> Vec<Result<Option<Doc>>> {
        self.md
            .current_many(paths)
            .into_iter()
            .map(|r| r.map(|c| c.map(doc)))
            .collect()
    }

    fn resync(&self, p: &MemPath) {
        self.md.resync(p);
    }

    fn dense(&self, store: usize, filter: &Filter, query: &[f32]) -> Result<Option<Dense>> {
        self.md.dense(store, filter, query, self.progress)
    }
}

fn doc(c: super::Current) -> Doc {
    Doc {
        text: c.text,
        modified: c.modified,
        stamp: c.stamp,
    }
}

/// Where to search: every store, or one path; each with its prefix in the index.
fn scopes(md: &Memdir, path: Option<&str>) -> Result<Vec<(MemPath, Option<String>)>> {
    md.targets(path.unwrap_or("/"))?
        .into_iter()
        .map(|p| {
            super::mutation::folder_form_fits(md, path.unwrap_or("/"), &p)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_told_from_punctuation() {
        for q in ["🍅", "a", "7", "数", "✓", "€"] {
            assert!(has_symbols(q), "{q}");
        }
        for q in ["", "  ", "?!", "«»—…", "。、「」", "！？", "¿¡", "\u{0}\t"] {
            assert!(!has_symbols(q), "{q:?}");
        }
    }
}
