//! Search by meaning, the part that is arithmetic: the vectors of a store held in memory
//! ([`VectorCache`]), cosine similarity, and the weighted fusion of a BM25 ranking with a
//! ranking by similarity. Where vectors come from (the model, the backfill) is the memory
//! layer's; where they are stored is the index's (`index/vectors.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use super::index::Stamp;

/// How many of the best matches of each kind a search pools: the dense ones it may
/// return, and both kinds' score statistics (fixed, so that every page of a search is
/// ranked alike).
pub const POOL: usize = 100;

/// The weights of the fusion: each ranking's z-scores over the pool, weighted
/// (docs/decisions/hybrid-search.md says how they were measured).
pub const LEXICAL_WEIGHT: f64 = 0.7;
pub const DENSE_WEIGHT: f64 = 0.3;

/// One store's vectors in memory, by content sha256, for one model.
#[derive(Debug, Default)]
pub struct VectorCache {
    by_sha: HashMap<String, Arc<[f32]>>,
}

impl VectorCache {
    pub fn get(&self, sha256: &str) -> Option<&Arc<[f32]>> {
        self.by_sha.get(sha256)
    }

    pub fn insert(&mut self, sha256: String, v: Vec<f32>) {
        self.by_sha.insert(sha256, v.into());
    }

    pub fn len(&self) -> usize {
        self.by_sha.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_sha.is_empty()
    }
}

/// The dot product of two vectors: their cosine, as both are unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// What a search by meaning found in one scope: every memory with a vector, with its
/// similarity to the query, and how many lack a vector yet.
#[derive(Debug, Default)]
pub struct Dense {
    /// (relative path, indexed stamp, cosine).
    pub scored: Vec<(String, Stamp, f32)>,
    /// Memories in the scope whose vector is not computed yet.
    pending: usize,
}

impl Dense {
    pub fn new(scored: Vec<(String, Stamp, f32)>, pending: usize) -> Dense {
        Dense { scored, pending }
    }

    pub fn pending(&self) -> usize {
        self.pending
    }
}

/// Mean and standard deviation of `values` (1 when they are all equal, so a z-score is
/// then 0 rather than undefined).
fn stats(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = values.clone().count().max(1) as f64;
    let mean = values.clone().sum::<f64>() / n;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let sd = var.sqrt();
    (mean, if sd > 1e-12 { sd } else { 1.0 })
}

/// The fusion of one search: each ranking's z-score statistics over the pool (the
/// lexical top [`POOL`] and the dense top [`POOL`]), then any memory's fused score.
#[derive(Debug, Clone, Copy)]
pub struct Fusion {
    lexical: (f64, f64),
    dense: (f64, f64),
}

impl Fusion {
    /// From the pool's (BM25 score, cosine) pairs: a memory that does not match the
    /// words scores 0; one without a vector yet takes the mean similarity.
    pub fn new(pool: &[(f64, Option<f64>)]) -> Fusion {
        let dense = stats(pool.iter().filter_map(|p| p.1));
        Fusion {
            lexical: stats(pool.iter().map(|p| p.0)),
            dense,
        }
    }

    /// The fused score of a memory with this BM25 score (0 for no match) and cosine
    /// (`None`: no vector yet, counted as the mean).
    pub fn score(&self, bm25: f64, cosine: Option<f64>) -> f64 {
        let z_lex = (bm25 - self.lexical.0) / self.lexical.1;
        let z_dense = cosine.map_or(0.0, |c| (c - self.dense.0) / self.dense.1);
        LEXICAL_WEIGHT * z_lex + DENSE_WEIGHT * z_dense
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_weighs_z_scores() {
        // Lexical scores 0, 2 (mean 1, sd 1); cosines 0.5, 0.7 (mean 0.6, sd 0.1).
        let f = Fusion::new(&[(0.0, Some(0.7)), (2.0, Some(0.5))]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(f.score(0.0, Some(0.7)), -0.7 + 0.3));
        assert!(close(f.score(2.0, Some(0.5)), 0.7 - 0.3));
        assert!(close(f.score(1.0, None), 0.0));
        // All equal: no division by zero.
        let flat = Fusion::new(&[(1.0, Some(0.5)), (1.0, Some(0.5))]);
        assert!(close(flat.score(1.0, Some(0.5)), 0.0));
    }
}
