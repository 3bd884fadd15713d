//! The search operation: each scope's candidates and ranks from its store's index (or,
//! without one, from a scan of its files), the rankings of every scope merged into one
//! page, and the hits on it read from their files for their lines. A shown hit whose file
//! no longer matches what the index holds is re-synced and the query re-run, so no result
//! ever shows text that is not in the file.
//!
//! With meaning on (a query vector in the plan), the memories closest in meaning join
//! the BM25 ranking and every candidate is ranked by the weighted fusion of both
//! (`search::meaning`); filters apply to both alike, as both read the same `docs` rows.
//! A memory less similar than the floor (`MEANING_FLOOR`) is not said to match by
//! meaning, so an off-topic query is not answered with the whole store.
//!
//! It reads the stores through a [`Corpus`] (the memory operations' context implements
//! it), so this wing knows no `Memdir`.

use std::collections::HashMap;
use std::time::SystemTime;

use super::filter::Filter;
use super::index::{Combine, Index, Order, Stamp};
use super::matching::{Matched, Shown, opening_lines, shown_lines};
use super::meaning::{Dense, Fusion, MEANING_FLOOR, POOL, centre};
use super::snippet::clip;
use super::{DocMatch, Query, Scorer, bm25};
use crate::error::{Error, Result};
use crate::frontmatter;
use crate::path::MemPath;
use crate::text;

/// A memory file as a search reads it.
#[derive(Debug)]
pub struct Doc {
    pub text: String,
    pub modified: SystemTime,
    pub stamp: Stamp,
}

/// What a search reads the stores through.
pub trait Corpus {
    /// Runs `f` on the index of store `store`, brought up to date first. `None` when the
    /// store has no usable index; an error when the database holding the store is away.
    fn with_index<T>(&self, store: usize, f: impl FnOnce(&Index) -> T) -> Result<Option<T>>;
    /// The files at or under `scope` (an error only when the database holding the store
    /// is away).
    fn files_under(&self, scope: &MemPath) -> Result<Vec<MemPath>>;
    /// One file; `Ok(None)` if nothing is there.
    fn read(&self, p: &MemPath) -> Result<Option<Doc>>;
    /// Several files, read together where the store can.
    fn read_many(&self, paths: &[MemPath]) -> Vec<Result<Option<Doc>>>;
    /// Re-syncs one path with its store's index (a hit found stale).
    fn resync(&self, p: &MemPath);
    /// The memories of store `store` the filter admits, each with its similarity to the
    /// query vector, and how many lack a vector yet. `None` when the store has no usable
    /// index (meaning needs one).
    fn dense(&self, store: usize, filter: &Filter, query: &[f32]) -> Result<Option<Dense>>;
}

/// One search: the query, where (each scope with its path prefix in the index), which
/// memories, in what order, which page, and how many bytes of results at most.
#[derive(Debug)]
pub struct Plan<'a> {
    pub query: &'a Query,
    /// Every path searched, with its prefix in the index (`None` for a store's root).
    pub scopes: &'a [(MemPath, Option<String>)],
    pub filter: Filter<'a>,
    pub order: Order,
    pub offset: usize,
    pub limit: usize,
    /// Hits stop once their text passes this many bytes.
    pub budget: usize,
    /// The query's vector, when search by meaning is on.
    pub meaning: Option<&'a [f32]>,
    /// The query holds more than punctuation: without a word, meaning alone is asked.
    pub symbols: bool,
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
    /// How it matched the query.
    pub matched: Vec<Matched>,
    /// Its frontmatter `importance` (1–5), when it has a valid one.
    pub importance: Option<u8>,
}

#[derive(Debug)]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
    pub total_hits: usize,
    pub next_cursor: Option<String>,
    /// Fewer memories than the page asks for hold every word, so the page goes on with
    /// memories that hold some of them.
    pub relaxed: bool,
    /// The query went past its bounds: only its first part was searched.
    pub query_cut: bool,
    /// With meaning on: how many memories in the search's scope have a vector, of how
    /// many.
    pub coverage: Option<Coverage>,
    /// Stores a search over every store went on without (their database away).
    pub unavailable: Vec<crate::error::Unavailable>,
}

/// How much of a search's scope meaning covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    pub covered: usize,
    pub total: usize,
}

impl Coverage {
    /// Memories whose vector is still being computed.
    pub fn pending(&self) -> usize {
        self.total - self.covered
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
    /// It holds only some of the query's words (ranked after every one that holds all).
    partial: bool,
    /// It matches the words (else it was found by meaning alone).
    lexical: bool,
    /// It is among the closest in meaning, and above the floor.
    meaning: bool,
}

/// What every scope's matches add up to: how many (and how many hold every word), the
/// best score, the top candidates.
#[derive(Default)]
struct Ranking {
    total: usize,
    complete: usize,
    best: f64,
    /// The best score of the relaxed query too, which partial matches are relative to
    /// (its clauses are more, so its scores run higher).
    best_any: f64,
    candidates: Vec<Candidate>,
}

impl Ranking {
    /// These matches of every word, then `some`'s (matches of any word) not among them.
    fn then(mut self, some: Ranking) -> Ranking {
        let have: std::collections::HashSet<String> =
            self.candidates.iter().map(|c| c.path.canonical()).collect();
        self.candidates.extend(
            some.candidates
                .into_iter()
                .filter(|c| !have.contains(&c.path.canonical()))
                .map(|c| Candidate { partial: true, ..c }),
        );
        // Scores are relative to the first hit: the best of the memories holding every
        // word when there are any. The relaxed query's own scores of those memories are
        // higher (it has more clauses: a joined word's parts, a CJK word's pieces), and
        // taken as the reference they left the first hit below 1.
        self.best_any = self.best.max(some.best);
        if self.candidates.iter().all(|c| c.partial) {
            self.best = self.best_any;
        }
        self.total = some.total;
        self
    }
}

/// Nanoseconds since the epoch, as the index stores a file's modification time.
fn nanos(t: SystemTime) -> i64 {
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

/// Runs a search: the memories that hold every word, then (relaxed) those that hold some,
/// when the first are fewer than the page needs; the page asked for.
pub fn search(corpus: &impl Corpus, plan: &Plan) -> Result<SearchResult> {
    let query = plan.query;
    let mut result = SearchResult {
        hits: Vec::new(),
        total_hits: 0,
        next_cursor: None,
        relaxed: false,
        query_cut: query.cut,
        coverage: None,
        unavailable: Vec::new(),
    };
    // No word: meaning alone is asked of a query of symbols (an emoji); of one of
    // punctuation only what it covers, as every search with meaning on says.
    if query.is_empty() && !(plan.symbols && plan.meaning.is_some()) {
        if let Some(q) = plan.meaning {
            result.coverage = Some(dense(corpus, plan, q)?.coverage);
        }
        return Ok(result);
    }
    // A cursor's offset is any number a client sends.
    let need = plan.offset.saturating_add(plan.limit);
    // With meaning on, the pieces of a CJK word or of a joined word are not looked for
    // apart: meaning finds its other forms and orders, and the pieces' weak matches
    // outranked memories in other languages (docs/decisions/search-engine.md).
    let loose = match plan.meaning {
        Some(_) => query.clone(),
        None => query.relaxed(),
    };
    for attempt in 0..ATTEMPTS {
        // With meaning, the lexical ranking's top POOL sets the fusion's statistics.
        let need = if plan.meaning.is_some() {
            need.max(POOL)
        } else {
            need
        };
        // Without a word (meaning alone), no memory matches by words: the scan would
        // take every one for a match of nothing.
        let mut ranking = if query.is_empty() {
            Ranking::default()
        } else {
            rank(corpus, plan, query, Combine::All, need)?
        };
        // Fewer memories than a page holds have every word: the search goes on with those
        // that hold some of them (or some piece of a CJK run), ranked after every one
        // that holds them all. Decided by the page's size, never its offset, so every
        // page of a query has the same hits to draw on and the same total.
        let enough = match plan.meaning {
            Some(_) => plan.limit.max(POOL),
            None => plan.limit,
        };
        let relaxed = ranking.total < enough && loose.clauses.len() > 1;
        if relaxed {
            let some = rank(corpus, plan, &loose, Combine::Any, need)?;
            ranking = ranking.then(some);
        }
        let relaxed = relaxed && ranking.total > ranking.complete;
        let mut coverage = None;
        if let Some(q) = plan.meaning {
            let dense = dense(corpus, plan, q)?;
            coverage = Some(dense.coverage);
            ranking = fuse(ranking, dense);
        }
        let Ranking {
            total,
            best,
            best_any,
            candidates: mut ranked,
            ..
        } = ranking;
        match plan.order {
            // Fused scores already rank the partial matches where they belong.
            Order::Relevance if plan.meaning.is_some() => ranked.sort_by(|a, b| {
                b.score
                    .total_cmp(&a.score)
                    .then_with(|| a.path.canonical().cmp(&b.path.canonical()))
            }),
            Order::Relevance => ranked.sort_by(|a, b| {
                a.partial
                    .cmp(&b.partial)
                    .then_with(|| b.score.total_cmp(&a.score))
                    .then_with(|| a.path.canonical().cmp(&b.path.canonical()))
            }),
            Order::Recent => ranked.sort_by(|a, b| {
                a.partial
                    .cmp(&b.partial)
                    .then_with(|| b.modified_ns.cmp(&a.modified_ns))
                    .then_with(|| a.path.canonical().cmp(&b.path.canonical()))
            }),
        }
        let page = ranked.iter().skip(plan.offset).take(plan.limit);
        // Fused, the page mixes memories with every word and with some: relaxed says
        // whether it holds any of the latter.
        let relaxed = if plan.meaning.is_some() {
            page.clone().any(|c| c.partial && c.lexical)
        } else {
            relaxed
        };
        // Partial matches of a search by words are relative to the relaxed query's best
        // (fused scores are all on one scale already).
        let partial: std::collections::HashSet<String> = page
            .clone()
            .filter(|c| c.partial && plan.meaning.is_none())
            .map(|c| c.path.canonical())
            .collect();
        let (mut hits, stale) = show(corpus, [query, &loose], plan.budget, page);
        for hit in &mut hits {
            let reference = if partial.contains(&hit.path) {
                best.max(best_any)
            } else {
                best
            };
            hit.score = relative(hit.score, reference);
        }
        result = SearchResult {
            next_cursor: (plan.offset.saturating_add(hits.len()) < total && !hits.is_empty())
                .then(|| (plan.offset + hits.len()).to_string()),
            hits,
            total_hits: total,
            relaxed,
            query_cut: query.cut,
            coverage,
            unavailable: Vec::new(),
        };
        if !stale {
            break;
        }
        tracing::debug!(attempt, "a search hit was stale; re-running the query");
    }
    Ok(result)
}

/// Every scope's matches of `query`: the total, the best score, and the top `need` of each.
fn rank(
    corpus: &impl Corpus,
    plan: &Plan,
    query: &Query,
    combine: Combine,
    need: usize,
) -> Result<Ranking> {
    let mut out = Ranking::default();
    for (scope, prefix) in plan.scopes {
        let filter = Filter {
            prefix: prefix.as_deref(),
            ..plan.filter
        };
        let indexed = corpus.with_index(scope.store, |index| {
            index.query_page(&query.clauses, combine, &filter, plan.order, 0, need)
        })?;
        match indexed {
            Some(Ok(page)) => {
                out.total += page.total;
                out.complete += page.total;
                out.best = out.best.max(page.best);
                out.candidates
                    .extend(page.rows.into_iter().map(|r| Candidate {
                        path: scope.with_rel(&r.rel),
                        score: r.score,
                        modified_ns: r.stamp.mtime_ns,
                        indexed: Some(r.stamp),
                        partial: false,
                        lexical: true,
                        meaning: false,
                    }));
            }
            other => {
                if let Some(Err(e)) = other {
                    tracing::warn!(error = %e, "index query failed; scanning");
                }
                let rows = scan(corpus, query, scope, &filter, combine)?;
                out.total += rows.len();
                out.complete += rows.len();
                out.best = rows.iter().map(|c| c.score).fold(out.best, f64::max);
                out.candidates.extend(rows);
            }
        }
    }
    Ok(out)
}

/// Reads each hit to show it, by the lines that match `[query, relaxed]` (the second for
/// a hit of the relaxed stage). Returns the hits and whether any was stale (its file
/// changed since it was indexed, or no longer matches).
fn show<'c>(
    corpus: &impl Corpus,
    [strict, relaxed]: [&Query; 2],
    budget: usize,
    page: impl Iterator<Item = &'c Candidate>,
) -> (Vec<SearchHit>, bool) {
    let mut hits = Vec::new();
    let mut stale = false;
    let mut used = 0usize;
    // The page's memories, read together (one query for a database store).
    let page: Vec<&Candidate> = page.collect();
    let paths: Vec<MemPath> = page.iter().map(|c| c.path.clone()).collect();
    let docs = corpus.read_many(&paths);
    for (c, doc) in page.into_iter().zip(docs) {
        let doc = doc.ok().flatten();
        let fresh = match (&doc, c.indexed) {
            (Some(doc), Some(stamp)) => doc.stamp == stamp,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let Some(doc) = doc.filter(|_| fresh) else {
            corpus.resync(&c.path);
            stale = true;
            continue;
        };
        let query = if c.partial && c.lexical {
            relaxed
        } else {
            strict
        };
        let shown = match shown_lines(query, &doc.text, 3) {
            Some(shown) => Some(shown),
            // Found by meaning alone: its opening lines.
            None if !c.lexical => {
                let (line, lines) = opening_lines(&doc.text, 3);
                Some(Shown {
                    line,
                    lines,
                    matched: Vec::new(),
                })
            }
            None => None,
        };
        let Some(Shown {
            line,
            lines,
            mut matched,
        }) = shown
        else {
            corpus.resync(&c.path);
            stale = true;
            continue;
        };
        if c.meaning {
            matched.push(Matched::Meaning);
        }
        let mut snippet = String::new();
        for (n, l) in lines {
            if !snippet.is_empty() {
                snippet.push('\n');
            }
            text::numbered_line(&mut snippet, n, &clip(l, query));
        }
        let fm = frontmatter::parse(&doc.text);
        let hit = SearchHit {
            path: c.path.canonical(),
            score: c.score,
            line,
            snippet,
            expired: fm.as_ref().is_some_and(|f| f.expired_at(text::now_secs())),
            name: text::shown_field(fm.as_ref().and_then(|f| f.name.clone())),
            importance: fm.as_ref().and_then(|f| f.importance),
            description: text::shown_field(fm.and_then(|f| f.description)),
            updated_at: text::rfc3339(doc.modified),
            matched,
        };
        // The page ends before the hit that would take it past the budget (a first hit
        // is always shown: its lines and fields are clipped).
        let field = |f: &Option<String>| f.as_ref().map_or(0, String::len);
        let cost =
            hit.snippet.len() + hit.path.len() + field(&hit.name) + field(&hit.description) + 100;
        if !hits.is_empty() && used + cost > budget {
            break;
        }
        used += cost;
        hits.push(hit);
    }
    (hits, stale)
}

/// The scan: every visible file under `scope` read and matched, BM25 over that set.
fn scan(
    corpus: &impl Corpus,
    query: &Query,
    scope: &MemPath,
    filter: &Filter,
    combine: Combine,
) -> Result<Vec<Candidate>> {
    let mut matched = Vec::new();
    let (mut docs, mut total_len) = (0u64, 0u64);
    let mut df = vec![0u32; query.clauses.len()];
    for path in corpus.files_under(scope)? {
        let doc = match corpus.read(&path) {
            Ok(Some(doc)) => doc,
            Err(e @ Error::Database { .. }) => return Err(e),
            _ => continue,
        };
        let modified_ns = nanos(doc.modified);
        let fm = frontmatter::parse(&doc.text);
        if !filter.admits(fm.as_ref(), modified_ns) {
            continue;
        }
        let weight = bm25::importance_factor(frontmatter::importance(fm.as_ref()));
        let m = DocMatch::of(query, &doc.text);
        docs += 1;
        total_len += m.len as u64;
        for (i, d) in df.iter_mut().enumerate() {
            *d += u32::from(m.tf[i] > 0 || m.forms[i] > 0);
        }
        let keep = match combine {
            Combine::All => m.all(),
            Combine::Any => m.any(),
        };
        if keep {
            matched.push((path, m, modified_ns, weight));
        }
    }
    let scorer = Scorer::new(&df, docs, total_len);
    // Each score times its memory's importance factor, as the index weighs its matches.
    Ok(matched
        .into_iter()
        .map(|(path, m, modified_ns, weight)| Candidate {
            score: scorer.score(&m) * weight,
            path,
            modified_ns,
            indexed: None,
            partial: false,
            lexical: true,
            meaning: false,
        })
        .collect())
}

/// Every scope's memories by similarity to the query, and how many have a vector.
struct DenseRanking {
    /// The similarity of every memory with a vector, by store and relative path.
    cosine: HashMap<(usize, String), f64>,
    /// The [`POOL`] most similar: (path, indexed stamp, cosine, raw cosine), best first.
    top: Vec<(MemPath, Stamp, f64, f64)>,
    coverage: Coverage,
}

impl DenseRanking {
    fn cosine(&self, p: &MemPath) -> Option<f64> {
        self.cosine.get(&(p.store, p.rel())).copied()
    }
}

fn dense(corpus: &impl Corpus, plan: &Plan, query: &[f32]) -> Result<DenseRanking> {
    // (scope, relative path, stamp, centred cosine, raw cosine) of every memory with a
    // vector.
    let mut all: Vec<(usize, String, Stamp, f64, f64)> = Vec::new();
    let mut scripts = Vec::new();
    let mut pending = 0;
    for (i, (scope, prefix)) in plan.scopes.iter().enumerate() {
        let filter = Filter {
            prefix: prefix.as_deref(),
            ..plan.filter
        };
        // A store without an index has no vectors: all of it is pending.
        let Some(found) = corpus.dense(scope.store, &filter, query)? else {
            pending += corpus.files_under(scope)?.len();
            continue;
        };
        pending += found.pending();
        for (rel, stamp, cos, script) in found.scored {
            scripts.push((script, f64::from(cos)));
            all.push((i, rel, stamp, 0.0, f64::from(cos)));
        }
    }
    // Each similarity relative to its script's in the scope: the model's bias toward the
    // query's own language taken off.
    centre(&mut scripts);
    for (a, (_, cos)) in all.iter_mut().zip(scripts) {
        a.3 = cos;
    }
    let covered = all.len();
    type Scored = (usize, String, Stamp, f64, f64);
    let best_first = |a: &Scored, b: &Scored| {
        b.3.total_cmp(&a.3)
            .then_with(|| plan.scopes[a.0].0.store.cmp(&plan.scopes[b.0].0.store))
            .then_with(|| a.1.cmp(&b.1))
    };
    if all.len() > POOL {
        all.select_nth_unstable_by(POOL - 1, best_first);
    }
    let (mut top, rest): (Vec<_>, Vec<_>) = {
        let rest = all.split_off(all.len().min(POOL));
        (all, rest)
    };
    top.sort_by(best_first);
    let mut cosine = HashMap::with_capacity(covered);
    let top = top
        .into_iter()
        .map(|(i, rel, stamp, cos, raw)| {
            let scope = &plan.scopes[i].0;
            let path = scope.with_rel(&rel);
            cosine.insert((scope.store, rel), cos);
            (path, stamp, cos, raw)
        })
        .collect();
    for (i, rel, _, cos, _) in rest {
        cosine.insert((plan.scopes[i].0.store, rel), cos);
    }
    Ok(DenseRanking {
        cosine,
        top,
        coverage: Coverage {
            covered,
            total: covered + pending,
        },
    })
}

/// The lexical candidates and the dense top [`POOL`], each scored by the fusion of its
/// BM25 score (0 if it does not match the words) and its similarity; scores shown
/// relative to the best, from 0 for the worst candidate to 1.
fn fuse(lexical: Ranking, dense: DenseRanking) -> Ranking {
    let mut candidates = lexical.candidates;
    let mut by_score: Vec<f64> = candidates.iter().map(|c| c.score).collect();
    by_score.sort_by(|a, b| b.total_cmp(a));
    // The pool: the lexical top POOL and the dense top POOL.
    let mut pool: Vec<(f64, Option<f64>)> = Vec::new();
    let cut = by_score.get(POOL - 1).copied().unwrap_or(f64::NEG_INFINITY);
    for c in &candidates {
        if c.score >= cut {
            pool.push((c.score, dense.cosine(&c.path)));
        }
    }
    let have: HashMap<String, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.path.canonical(), i))
        .collect();
    let mut added = 0;
    for (path, stamp, cos, raw) in dense.top.iter().cloned() {
        // Every one of the dense top counts in the statistics, so that each page of a
        // search is ranked alike; only those close enough are said to match by meaning.
        let close = raw >= MEANING_FLOOR;
        match have.get(&path.canonical()) {
            Some(&i) => candidates[i].meaning = close,
            None => {
                pool.push((0.0, Some(cos)));
                if !close {
                    continue;
                }
                added += 1;
                candidates.push(Candidate {
                    modified_ns: stamp.mtime_ns,
                    indexed: Some(stamp),
                    path,
                    score: 0.0,
                    partial: true,
                    lexical: false,
                    meaning: true,
                });
            }
        }
    }
    let fusion = Fusion::new(&pool);
    for c in &mut candidates {
        c.score = fusion.score(c.score, dense.cosine(&c.path));
    }
    let best = candidates
        .iter()
        .map(|c| c.score)
        .fold(f64::NEG_INFINITY, f64::max);
    let worst = candidates
        .iter()
        .map(|c| c.score)
        .fold(f64::INFINITY, f64::min);
    for c in &mut candidates {
        c.score = if best > worst {
            (c.score - worst) / (best - worst)
        } else {
            1.0
        };
    }
    Ranking {
        total: lexical.total + added,
        complete: lexical.complete,
        best: 1.0,
        best_any: 1.0,
        candidates,
    }
}
