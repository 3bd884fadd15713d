//! `memory_search` as a scan: every visible file under the path filter is read and
//! matched, then ranked with BM25 over the scanned set. Correct and always current (it
//! reads the files as they are at the call); the indexed engine replaces only the
//! candidate step.

use super::Memdir;
use crate::error::{Error, Result};
use crate::path::{MemPath, Target};
use crate::search::{DocMatch, Query, Scorer, best_lines};
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
}

#[derive(Debug, Clone)]
pub struct SearchHit {
    pub path: String,
    pub score: f64,
    /// The best matching line (1-based).
    pub line: usize,
    /// Up to 3 matching lines, numbered.
    pub snippet: String,
    pub description: Option<String>,
}

#[derive(Debug)]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
    pub total_hits: usize,
    pub next_cursor: Option<String>,
    /// No file had every word, so files with any of them are shown.
    pub relaxed: bool,
}

/// Longest snippet line, in characters.
const SNIPPET_LINE_CHARS: usize = 240;

struct Candidate {
    path: MemPath,
    text: String,
    matched: DocMatch,
    description: Option<String>,
}

impl Memdir {
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResult> {
        let offset = match req.cursor {
            None | Some("") => 0,
            Some(c) => c.parse::<usize>().map_err(|_| {
                Error::InvalidArgument(format!(
                    "invalid cursor `{c}`; pass the next_cursor of a previous search unchanged"
                ))
            })?,
        };
        let query = Query::parse(req.query);
        let scopes: Vec<MemPath> = match self.target(req.path.unwrap_or("/"))? {
            Target::AllStores => self
                .stores()
                .iter()
                .enumerate()
                .map(|(i, s)| MemPath::root(i, &s.name))
                .collect(),
            Target::Path(p) => vec![p],
        };
        let mut candidates = Vec::new();
        let (mut docs, mut total_len) = (0u64, 0u64);
        let mut df = vec![0u32; query.clauses.len()];
        for scope in &scopes {
            for path in self.files_under(scope)? {
                let Ok(Some(cur)) = self.current(&path) else {
                    continue;
                };
                let fm = Self::frontmatter(&cur.text);
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
                let matched = DocMatch::of(&query, &cur.text);
                docs += 1;
                total_len += matched.len as u64;
                for (d, &tf) in df.iter_mut().zip(&matched.tf) {
                    *d += (tf > 0) as u32;
                }
                if matched.any() {
                    candidates.push(Candidate {
                        path,
                        text: cur.text,
                        matched,
                        description: fm.and_then(|f| f.description),
                    });
                }
            }
        }
        let strict: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].matched.all())
            .collect();
        let relaxed = strict.is_empty() && !candidates.is_empty();
        let chosen: Vec<usize> = if relaxed {
            (0..candidates.len()).collect()
        } else {
            strict
        };
        let scorer = Scorer::new(&df, docs, total_len);
        let mut ranked: Vec<(f64, usize)> = chosen
            .into_iter()
            .map(|i| (scorer.score(&candidates[i].matched), i))
            .collect();
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0).then_with(|| {
                candidates[a.1]
                    .path
                    .canonical()
                    .cmp(&candidates[b.1].path.canonical())
            })
        });
        let total_hits = ranked.len();
        let mut hits = Vec::new();
        let mut used = 0usize;
        for &(score, i) in ranked.iter().skip(offset) {
            if hits.len() == req.limit || used > self.settings.result_budget {
                break;
            }
            let c = &candidates[i];
            let (line, lines) = best_lines(&query, &c.text, 3);
            let mut snippet = String::new();
            for (n, l) in lines {
                if !snippet.is_empty() {
                    snippet.push('\n');
                }
                text::numbered_line(&mut snippet, n, &clip(l));
            }
            let hit = SearchHit {
                path: c.path.canonical(),
                score: (score * 1000.0).round() / 1000.0,
                line,
                snippet,
                description: c.description.clone(),
            };
            used += hit.snippet.len() + hit.path.len() + 100;
            hits.push(hit);
        }
        let shown = offset + hits.len();
        Ok(SearchResult {
            next_cursor: (shown < total_hits).then(|| shown.to_string()),
            hits,
            total_hits,
            relaxed,
        })
    }

    /// The visible files at or under `scope`.
    fn files_under(&self, scope: &MemPath) -> Result<Vec<MemPath>> {
        let store = self.store(scope);
        match store.metadata(scope)? {
            None => Err(Error::NotFound {
                path: scope.canonical(),
            }),
            Some(m) if m.kind != EntryKind::Dir => Ok(vec![scope.clone()]),
            Some(_) => Ok(store
                .walk(scope, None)?
                .into_iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| e.path)
                .collect()),
        }
    }
}

/// A line cut to a readable length.
fn clip(line: &str) -> String {
    if line.chars().count() <= SNIPPET_LINE_CHARS {
        return line.to_owned();
    }
    let mut s: String = line.chars().take(SNIPPET_LINE_CHARS).collect();
    s.push('…');
    s
}
