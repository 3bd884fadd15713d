//! Matching and ranking: per-clause term frequencies of one document, BM25 over a set of
//! documents, and the best matching lines of a hit for its snippet.

use std::collections::HashMap;

use super::query::{Clause, Query};
use super::tokenize::{Mode, tokenize};

/// How one document meets each clause of a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocMatch {
    /// Occurrences per clause, in query order.
    pub tf: Vec<u32>,
    /// Tokens in the document.
    pub len: u32,
}

impl DocMatch {
    /// Every clause occurs.
    pub fn all(&self) -> bool {
        self.tf.iter().all(|&n| n > 0)
    }

    pub fn any(&self) -> bool {
        self.tf.iter().any(|&n| n > 0)
    }

    /// Matches `query` against a whole document.
    pub fn of(query: &Query, text: &str) -> DocMatch {
        let mut positions: HashMap<String, Vec<u32>> = HashMap::new();
        let mut tails: HashMap<String, u32> = HashMap::new();
        let mut len = 0u32;
        tokenize(text, Mode::Document, |t, pos, tail| {
            if tail {
                *tails.entry(t.to_owned()).or_default() += 1;
                return;
            }
            len += 1;
            match positions.get_mut(t) {
                Some(v) => v.push(pos),
                None => {
                    positions.insert(t.to_owned(), vec![pos]);
                }
            }
        });
        DocMatch {
            tf: query
                .clauses
                .iter()
                .map(|c| occurrences(c, &positions, &tails))
                .collect(),
            len,
        }
    }
}

fn occurrences(
    clause: &Clause,
    positions: &HashMap<String, Vec<u32>>,
    tails: &HashMap<String, u32>,
) -> u32 {
    match clause {
        Clause::Term(t) => {
            positions.get(t).map_or(0, |v| v.len() as u32) + tails.get(t).copied().unwrap_or(0)
        }
        Clause::Prefix(p) => {
            positions
                .iter()
                .filter(|(k, _)| k.starts_with(p.as_str()))
                .map(|(_, v)| v.len() as u32)
                .sum::<u32>()
                + tails
                    .iter()
                    .filter(|(k, _)| k.starts_with(p.as_str()))
                    .map(|(_, n)| n)
                    .sum::<u32>()
        }
        Clause::Phrase(words) => {
            let Some(first) = positions.get(&words[0]) else {
                return 0;
            };
            let rest: Option<Vec<&Vec<u32>>> =
                words[1..].iter().map(|w| positions.get(w)).collect();
            let Some(rest) = rest else { return 0 };
            first
                .iter()
                .filter(|&&p| {
                    rest.iter()
                        .enumerate()
                        .all(|(i, v)| v.binary_search(&(p + 1 + i as u32)).is_ok())
                })
                .count() as u32
        }
    }
}

/// BM25 over a collection, from its document frequencies.
#[derive(Debug)]
pub struct Scorer {
    idf: Vec<f64>,
    avg_len: f64,
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

impl Scorer {
    /// `df[i]` = documents containing clause `i`; `docs` = documents in the collection.
    pub fn new(df: &[u32], docs: u64, total_len: u64) -> Scorer {
        let n = docs.max(1) as f64;
        Scorer {
            idf: df
                .iter()
                .map(|&d| (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln())
                .collect(),
            avg_len: (total_len as f64 / n).max(1.0),
        }
    }

    pub fn score(&self, m: &DocMatch) -> f64 {
        let norm = K1 * (1.0 - B + B * m.len as f64 / self.avg_len);
        m.tf.iter()
            .zip(&self.idf)
            .map(|(&tf, idf)| {
                let tf = tf as f64;
                idf * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum()
    }
}

/// Up to `max` lines that best match `query` (most distinct clauses first), returned in
/// line order as `(1-based line number, line)`. The first line returned with the most
/// clauses is the hit's line; it is also returned separately.
pub fn best_lines<'t>(query: &Query, text: &'t str, max: usize) -> (usize, Vec<(usize, &'t str)>) {
    let mut scored: Vec<(usize, u32, usize, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let m = DocMatch::of(query, line);
        let distinct = m.tf.iter().filter(|&&n| n > 0).count();
        if distinct > 0 {
            scored.push((distinct, m.tf.iter().sum(), i + 1, line));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    scored.truncate(max);
    let best = scored.first().map_or(1, |s| s.2);
    let mut lines: Vec<(usize, &str)> = scored.into_iter().map(|s| (s.2, s.3)).collect();
    lines.sort_by_key(|l| l.0);
    (best, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_terms_prefixes_and_phrases() {
        let q = Query::parse("rust \"crash safe\" tok*");
        let m = DocMatch::of(
            &q,
            "Rust is crash safe. rust tokio tokens; crash, then safe",
        );
        assert_eq!(m.tf, [2, 1, 2]);
        assert!(m.all());
        let zh = Query::parse("数据库");
        assert_eq!(DocMatch::of(&zh, "我们的数据库很快").tf, [1]);
        assert_eq!(DocMatch::of(&zh, "数据 库").tf, [0]);
        assert_eq!(
            DocMatch::of(&Query::parse("库"), "我们的数据库很快").tf,
            [1],
            "a tail-only character"
        );
        assert_eq!(
            DocMatch::of(&Query::parse("\"数据库 rust\""), "数据库 rust").tf,
            [1],
            "phrase across a run end"
        );
    }

    #[test]
    fn dense_documents_rank_higher() {
        let q = Query::parse("memory");
        let dense = DocMatch::of(&q, "memory memory memory notes");
        let once = DocMatch::of(
            &q,
            "memory and many other words in a much longer note about things",
        );
        let scorer = Scorer::new(&[2], 10, dense.len as u64 + once.len as u64);
        assert!(scorer.score(&dense) > scorer.score(&once));
    }

    #[test]
    fn picks_the_best_lines() {
        let q = Query::parse("alpha beta");
        let text = "nothing\nalpha here\nalpha and beta\nbeta\n";
        let (best, lines) = best_lines(&q, text, 2);
        assert_eq!(best, 3);
        assert_eq!(lines, [(2, "alpha here"), (3, "alpha and beta")]);
    }
}
