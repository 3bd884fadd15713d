//! BM25, once: its constants, the term weight both rankers compute, and the two ways an
//! inverse document frequency is taken. The index's FTS5 ranking function (`index`'s
//! `fts_rank`, which must equal FTS5's own `bm25()` bit for bit) and the scan's [`Scorer`]
//! (ranking the files read when a store has no index) both score with
//! [`term_weight`].

use super::matching::DocMatch;

/// Term-frequency saturation. FTS5's `bm25()` has 1.2; memdir's memories are short (a
/// note, a dialog turn), where a lower saturation and a flatter length normalisation rank
/// better (docs/decisions/search-engine.md, "BM25's constants").
pub const K1: f64 = 0.6;
/// Document-length normalisation (FTS5's `bm25()`: 0.75).
pub const B: f64 = 0.3;
/// FTS5's own `bm25()` constants: the index's tests rank with them to compare its
/// ranking function with `bm25()` bit for bit ([`with_constants`]).
#[cfg(test)]
pub const FTS5: (f64, f64) = (1.2, 0.75);

#[cfg(test)]
thread_local! {
    static CONSTANTS: std::cell::Cell<(f64, f64)> = const { std::cell::Cell::new((K1, B)) };
}

/// The (k1, b) in force: [`K1`] and [`B`], or a test's.
#[cfg(not(test))]
fn constants() -> (f64, f64) {
    (K1, B)
}

#[cfg(test)]
fn constants() -> (f64, f64) {
    CONSTANTS.with(std::cell::Cell::get)
}

/// Runs `f` with BM25's constants `(k1, b)` on this thread (the index ranks on the
/// calling thread), then puts [`K1`] and [`B`] back.
#[cfg(test)]
pub fn with_constants<T>(constants: (f64, f64), f: impl FnOnce() -> T) -> T {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            CONSTANTS.with(|c| c.set((K1, B)));
        }
    }
    CONSTANTS.with(|c| c.set(constants));
    let _restore = Restore;
    f()
}

/// What an occurrence as another form of a word counts for, against 1 for the word as
/// typed (the index's stem column weight; the scan's form frequencies).
pub const FORM_WEIGHT: f64 = 0.3;

/// What a memory's `importance` multiplies its score by: 1 for the neutral 3, and
/// [`IMPORTANCE_STEP`] more (or less) per step above (or below), so 5 → 1.1 and 1 → 0.9.
/// Both rankers apply it, the index to each match's score and the scan to each file's.
pub fn importance_factor(importance: u8) -> f64 {
    1.0 + IMPORTANCE_STEP
        * (f64::from(importance) - f64::from(crate::frontmatter::NEUTRAL_IMPORTANCE))
}

/// The lift of one step of importance: small, so that importance orders near-equal
/// matches and never lifts a memory above one that matches clearly better (a match more
/// than 1.1 / 0.9 ≈ 1.22 times as good stays first whatever the importances;
/// docs/decisions/search-engine.md measures how often scores are that close).
pub const IMPORTANCE_STEP: f64 = 0.05;

/// A clause's BM25 weight in one document before its IDF: its (column-weighted)
/// frequency `tf`, saturated by [`K1`] and normalised by [`B`] for a document of `len`
/// tokens where the average is `avg_len`. Written in the order of FTS5's `bm25()`, whose
/// floating-point steps the index's ranking function repeats.
pub fn term_weight(tf: f64, len: f64, avg_len: f64) -> f64 {
    let (k1, b) = constants();
    (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * len / avg_len))
}

/// The inverse document frequency as FTS5 computes it: `hits` of `rows` documents hold
/// the phrase; a phrase in more than half of them gets a tiny positive weight.
pub fn idf(rows: i64, hits: i64) -> f64 {
    let idf = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The scan's inverse document frequency, smoothed so that it never falls below zero
/// (Lucene's): `df` of `docs` documents hold the clause.
fn smoothed_idf(docs: f64, df: u32) -> f64 {
    (1.0 + (docs - df as f64 + 0.5) / (df as f64 + 0.5)).ln()
}

/// BM25 over a collection the scan read, from its document frequencies.
#[derive(Debug)]
pub struct Scorer {
    idf: Vec<f64>,
    avg_len: f64,
}

impl Scorer {
    /// `df[i]` = documents containing clause `i`; `docs` = documents in the collection.
    pub fn new(df: &[u32], docs: u64, total_len: u64) -> Scorer {
        let n = docs.max(1) as f64;
        Scorer {
            idf: df.iter().map(|&d| smoothed_idf(n, d)).collect(),
            avg_len: (total_len as f64 / n).max(1.0),
        }
    }

    pub fn score(&self, m: &DocMatch) -> f64 {
        m.tf.iter()
            .zip(&m.forms)
            .zip(&self.idf)
            .map(|((&tf, &forms), idf)| {
                let tf = tf as f64 + FORM_WEIGHT * forms as f64;
                idf * term_weight(tf, m.len as f64, self.avg_len)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Query;

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
    fn idf_floors_common_phrases() {
        assert_eq!(idf(10, 9), 1e-6);
        assert!(idf(10, 1) > idf(10, 4));
        assert!(smoothed_idf(10.0, 9) > 0.0);
    }
}
