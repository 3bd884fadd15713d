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
pub const LEXICAL_WEIGHT: f64 = 0.5;
pub const DENSE_WEIGHT: f64 = 0.5;

/// The similarity (the model's raw cosine, before centring) below which a memory is not
/// said to match by meaning: one found by meaning alone is left out, and one that matches
/// the words is not labelled `meaning`. Measured for multilingual-e5-small on the
/// multilingual set against off-topic queries (docs/decisions/hybrid-search-fusion.md);
/// a different model needs it measured again.
pub const MEANING_FLOOR: f64 = 0.79;

/// How strongly a script group's mean similarity is shrunk toward the scope's mean
/// before it is taken off (see [`centre`]): as if each group had this many more
/// memories at the overall mean.
pub const CENTRING_SHRINK: f64 = 10.0;

/// The script a memory is written in, as far as the model's bias goes: the model ranks a
/// query's own-language memories first whatever they say, so similarities are centred
/// per script group ([`centre`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Script {
    Latin,
    Cyrillic,
    Han,
    /// Any kana: Japanese (whose text also holds Han).
    Kana,
    Hangul,
    Other,
}

impl Script {
    /// The script of a text: Japanese if it holds any kana, else the script most of its
    /// letters are in (`Other` without letters).
    pub fn of(text: &str) -> Script {
        let mut counts = [0usize; 6];
        for c in text.chars() {
            let script = match c as u32 {
                0x3040..=0x30FF | 0xFF66..=0xFF9D => return Script::Kana,
                0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => Script::Hangul,
                0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF => {
                    Script::Han
                }
                0x0400..=0x052F => Script::Cyrillic,
                _ if c.is_ascii_alphabetic() => Script::Latin,
                0x00C0..=0x024F if c.is_alphabetic() => Script::Latin,
                _ if c.is_alphabetic() => Script::Other,
                _ => continue,
            };
            counts[script.code() as usize] += 1;
        }
        let best = (0..counts.len())
            .filter(|&i| counts[i] > 0)
            .max_by_key(|&i| (counts[i], std::cmp::Reverse(i)));
        best.map_or(Script::Other, |i| Script::from_code(i as u8))
    }

    /// Its code as stored beside a vector.
    pub fn code(self) -> u8 {
        match self {
            Script::Latin => 0,
            Script::Cyrillic => 1,
            Script::Han => 2,
            Script::Kana => 3,
            Script::Hangul => 4,
            Script::Other => 5,
        }
    }

    pub fn from_code(code: u8) -> Script {
        match code {
            0 => Script::Latin,
            1 => Script::Cyrillic,
            2 => Script::Han,
            3 => Script::Kana,
            4 => Script::Hangul,
            _ => Script::Other,
        }
    }
}

/// Takes off each similarity its script group's mean over the search's scope, shrunk
/// toward the scope's mean by [`CENTRING_SHRINK`]: `cos − (Σ_group cos + k·mean) /
/// (n_group + k)`. A memory then ranks by how much closer to the query it is than its
/// language's memories are, so a question in one language finds a memory in another.
/// In a one-script scope it is a constant shift, which the fusion's z-scores ignore.
pub fn centre(scored: &mut [(Script, f64)]) {
    if scored.is_empty() {
        return;
    }
    let mean = scored.iter().map(|s| s.1).sum::<f64>() / scored.len() as f64;
    let mut groups: HashMap<Script, (f64, f64)> = HashMap::new();
    for (script, cos) in scored.iter() {
        let g = groups.entry(*script).or_default();
        g.0 += cos;
        g.1 += 1.0;
    }
    for (script, cos) in scored.iter_mut() {
        let (sum, n) = groups[script];
        *cos -= (sum + CENTRING_SHRINK * mean) / (n + CENTRING_SHRINK);
    }
}

/// How much a long memory's best passage counts in its similarity to a query, against
/// the mean of its passages' vectors: `w · best chunk + (1 − w) · mean`. Measured on
/// LoCoMo's session memories (docs/decisions/embedding-model.md, "Long memories").
pub const BEST_PASSAGE_WEIGHT: f32 = 0.5;

/// A memory's vectors as the index and the database store them, one run of `f32`s: the
/// mean vector, then, for a memory of more than one chunk, each chunk's vector.
pub fn pack(mean: &[f32], chunks: &[Vec<f32>]) -> Vec<f32> {
    let mut packed = mean.to_vec();
    if chunks.len() > 1 {
        for c in chunks {
            packed.extend_from_slice(c);
        }
    }
    packed
}

/// A memory's vectors in memory: the mean at full precision, and its chunks' (if more
/// than one) at 8 bits with a scale each, a quarter of the room: a store of long
/// memories keeps about eight chunks per memory.
#[derive(Debug)]
pub struct Vectors {
    mean: Box<[f32]>,
    chunks: Box<[i8]>,
    scales: Box<[f32]>,
}

impl Vectors {
    /// From the packed form ([`pack`]) of vectors `dim` wide; anything after the last
    /// whole chunk is ignored.
    pub fn unpack(packed: &[f32], dim: usize) -> Vectors {
        let dim = dim.max(1);
        let (mean, rest) = packed.split_at(packed.len().min(dim));
        let mut chunks = Vec::new();
        let mut scales = Vec::new();
        for c in rest.chunks_exact(dim) {
            let top = c.iter().fold(0f32, |m, x| m.max(x.abs()));
            let scale = if top > 0.0 { top / 127.0 } else { 1.0 };
            chunks.extend(
                c.iter()
                    .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
            );
            scales.push(scale);
        }
        Vectors {
            mean: mean.into(),
            chunks: chunks.into(),
            scales: scales.into(),
        }
    }

    /// The similarity of this memory to a query vector: the cosine of its mean, or for a
    /// memory of several chunks [`BEST_PASSAGE_WEIGHT`] of its best chunk's cosine and
    /// the rest of the mean's.
    pub fn similarity(&self, query: &[f32]) -> f32 {
        let mean = cosine(query, &self.mean);
        if self.scales.is_empty() {
            return mean;
        }
        let dim = self.mean.len();
        let best = self
            .chunks
            .chunks_exact(dim)
            .zip(self.scales.iter())
            .map(|(c, s)| dot_i8(query, c) * s)
            .fold(f32::MIN, f32::max);
        BEST_PASSAGE_WEIGHT * best + (1.0 - BEST_PASSAGE_WEIGHT) * mean
    }

    /// How many chunk vectors beside the mean (0 for a memory of one chunk).
    pub fn chunks(&self) -> usize {
        self.scales.len()
    }
}

/// One store's vectors in memory, by content sha256, for one model, each with its
/// content's script.
#[derive(Debug, Default)]
pub struct VectorCache {
    by_sha: HashMap<String, (Arc<Vectors>, Script)>,
}

impl VectorCache {
    pub fn get(&self, sha256: &str) -> Option<&(Arc<Vectors>, Script)> {
        self.by_sha.get(sha256)
    }

    /// Keeps a content's packed vectors ([`pack`]), each `dim` wide.
    pub fn insert(&mut self, sha256: String, packed: &[f32], dim: usize, script: Script) {
        self.by_sha
            .insert(sha256, (Arc::new(Vectors::unpack(packed, dim)), script));
    }

    pub fn len(&self) -> usize {
        self.by_sha.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_sha.is_empty()
    }
}

/// The vectors of the last few queries, by their exact text, the least recently used
/// forgotten first: a client that pages through a search, repeats it, or polls it until
/// `pending_vectors` is 0 costs the model nothing after the first time (a query's
/// embedding is most of a hybrid search's time).
#[derive(Debug)]
pub struct RecentQueries {
    /// Oldest first.
    entries: std::collections::VecDeque<(String, Arc<[f32]>)>,
    capacity: usize,
}

impl RecentQueries {
    pub fn new(capacity: usize) -> RecentQueries {
        RecentQueries {
            entries: std::collections::VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// The query's vector if it is kept, now the most recently used.
    pub fn get(&mut self, query: &str) -> Option<Arc<[f32]>> {
        let i = self.entries.iter().position(|(q, _)| q == query)?;
        let entry = self.entries.remove(i)?;
        let vector = Arc::clone(&entry.1);
        self.entries.push_back(entry);
        Some(vector)
    }

    /// Keeps the query's vector, forgetting the least recently used beyond the capacity.
    pub fn put(&mut self, query: &str, vector: Arc<[f32]>) {
        if self.capacity == 0 {
            return;
        }
        if let Some(i) = self.entries.iter().position(|(q, _)| q == query) {
            self.entries.remove(i);
        }
        while self.entries.len() >= self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back((query.to_string(), vector));
    }
}

/// The dot product of a vector with an 8-bit one, before the latter's scale.
fn dot_i8(a: &[f32], b: &[i8]) -> f32 {
    dot(a, b)
}

/// The dot product of two vectors: their cosine, as both are unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    dot(a, b)
}

/// The dot product of a vector with one of `f32`s or of 8-bit numbers. Eight running
/// sums, so the compiler can keep them in one SIMD register (one sum would be a chain of
/// dependent additions: several times slower over ten thousand memories).
fn dot<T: Copy + Into<f32>>(a: &[f32], b: &[T]) -> f32 {
    let mut sums = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * (*y).into())
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            sums[i] += x[i] * y[i].into();
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// What a search by meaning found in one scope: every memory with a vector, with its
/// similarity to the query, and how many lack a vector yet.
#[derive(Debug, Default)]
pub struct Dense {
    /// (relative path, indexed stamp, cosine, script).
    pub scored: Vec<(String, Stamp, f32, Script)>,
    /// Memories in the scope whose vector is not computed yet.
    pending: usize,
}

impl Dense {
    pub fn new(scored: Vec<(String, Stamp, f32, Script)>, pending: usize) -> Dense {
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
    #[test]
    fn recent_queries_forget_the_least_recently_used() {
        let v = |x: f32| -> std::sync::Arc<[f32]> { vec![x].into() };
        let mut recent = RecentQueries::new(2);
        recent.put("a", v(1.0));
        recent.put("b", v(2.0));
        // Using "a" makes "b" the least recent: the third query forgets "b".
        assert_eq!(recent.get("a").as_deref(), Some(&[1.0][..]));
        recent.put("c", v(3.0));
        assert!(recent.get("b").is_none());
        assert_eq!(recent.get("a").as_deref(), Some(&[1.0][..]));
        assert_eq!(recent.get("c").as_deref(), Some(&[3.0][..]));
        // The same text again replaces its vector rather than keeping two.
        recent.put("c", v(4.0));
        recent.put("a", v(5.0));
        assert_eq!(recent.get("c").as_deref(), Some(&[4.0][..]));
        assert_eq!(recent.get("a").as_deref(), Some(&[5.0][..]));
        // Exact text only: another spelling is another query.
        assert!(recent.get("A").is_none());
        assert!(RecentQueries::new(0).get("a").is_none());
    }

    use super::*;

    #[test]
    fn fusion_weighs_z_scores() {
        // Lexical scores 0, 2 (mean 1, sd 1); cosines 0.5, 0.7 (mean 0.6, sd 0.1).
        let f = Fusion::new(&[(0.0, Some(0.7)), (2.0, Some(0.5))]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(f.score(0.0, Some(0.7)), -0.5 + 0.5));
        assert!(close(f.score(2.0, Some(0.5)), 0.5 - 0.5));
        assert!(close(f.score(2.0, Some(0.7)), 1.0));
        assert!(close(f.score(1.0, None), 0.0));
        // All equal: no division by zero.
        let flat = Fusion::new(&[(1.0, Some(0.5)), (1.0, Some(0.5))]);
        assert!(close(flat.score(1.0, Some(0.5)), 0.0));
    }

    #[test]
    fn cosine_is_the_dot_product() {
        for n in [0, 3, 8, 19, 384] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((cosine(&a, &b) - want).abs() < 1e-4, "{n}");
        }
    }

    #[test]
    fn a_long_memory_is_as_close_as_its_best_passage_and_its_mean() {
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let dim = 16;
        let chunks: Vec<Vec<f32>> = (0..3)
            .map(|k| unit((0..dim).map(|i| ((i * 7 + k * 3) as f32).sin()).collect()))
            .collect();
        let mut mean = vec![0f32; dim];
        chunks
            .iter()
            .for_each(|c| mean.iter_mut().zip(c).for_each(|(m, x)| *m += x));
        let mean = unit(mean);
        let query = unit((0..dim).map(|i| ((i * 5) as f32).cos()).collect());
        let packed = pack(&mean, &chunks);
        assert_eq!(packed.len(), 4 * dim);
        let v = Vectors::unpack(&packed, dim);
        assert_eq!(v.chunks(), 3);
        let best = chunks
            .iter()
            .map(|c| cosine(&query, c))
            .fold(f32::MIN, f32::max);
        let want = BEST_PASSAGE_WEIGHT * best + (1.0 - BEST_PASSAGE_WEIGHT) * cosine(&query, &mean);
        // The chunks are kept at 8 bits: within a few thousandths.
        assert!(
            (v.similarity(&query) - want).abs() < 5e-3,
            "{} {want}",
            v.similarity(&query)
        );
        // One chunk: the mean alone, stored and scored as before.
        let one = pack(&chunks[0], &chunks[..1]);
        assert_eq!(one, chunks[0]);
        let v = Vectors::unpack(&one, dim);
        assert_eq!(
            (v.chunks(), v.similarity(&query)),
            (0, cosine(&query, &chunks[0]))
        );
    }

    #[test]
    fn scripts_of_texts() {
        let cases = [
            ("Deploy on Fridays, never.", Script::Latin),
            (
                "Пользователь предпочитает короткие ответы (short)",
                Script::Cyrillic,
            ),
            ("数据库很快", Script::Han),
            ("データベースは速い", Script::Kana),
            ("日本語の本", Script::Kana),
            ("데이터베이스를 사용", Script::Hangul),
            ("Ελληνικά", Script::Other),
            ("1234 !!", Script::Other),
            ("Crème brûlée", Script::Latin),
        ];
        for (text, want) in cases {
            assert_eq!(Script::of(text), want, "{text}");
            assert_eq!(Script::from_code(want.code()), want);
        }
    }

    #[test]
    fn centring_takes_off_each_scripts_shrunk_mean() {
        // One script: a constant shift (the mean), order and gaps kept.
        let mut one = vec![(Script::Latin, 0.9), (Script::Latin, 0.7)];
        centre(&mut one);
        assert!((one[0].1 - 0.1).abs() < 1e-9 && (one[1].1 + 0.1).abs() < 1e-9);
        // A crowd of same-script memories at 0.85 no longer outranks a memory in another
        // script at 0.82 that stands out among its own (0.75).
        let mut mixed: Vec<(Script, f64)> = (0..20).map(|_| (Script::Han, 0.85)).collect();
        mixed.extend((0..20).map(|_| (Script::Latin, 0.75)));
        mixed.push((Script::Latin, 0.82));
        centre(&mut mixed);
        let answer = mixed.last().unwrap().1;
        assert!(answer > mixed[0].1, "{mixed:?}");
    }
}
