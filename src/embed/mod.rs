//! The embedding engine: a multilingual sentence-embedding model (multilingual-e5-small,
//! 4-bit) run inside memdir, offline, from one weights file. It turns text into unit
//! vectors for semantic search; it does no search and keeps no index itself.
//!
//! Layout: `format` parses and checks the file, `tokenizer` splits text into the
//! model's pieces, `chunk` cuts long passages into chunks, `kernels` multiplies 4-bit
//! weights (AVX2 or portable), `model` runs the encoder, `install` fetches and checks the
//! pinned weights. The file is mapped by
//! `crate::store::model_file`, the door to the host's files.

mod chunk;
mod format;
pub mod install;
mod kernels;
mod model;
mod tokenizer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::store::model_file::{self, MappedFile};
use crate::{Error, Result};
pub use kernels::Kernel;

/// The name the weights are known by; [`Model::id`] adds a digest of the file.
pub const MODEL_NAME: &str = "multilingual-e5-small-q4";
/// How [`Model::embed_passage_chunks`] treats long passages, the end of [`Model::id`]:
/// 128-token chunks, stored as their mean and each chunk's vector (`p`). Vectors
/// computed otherwise (cut at 512 tokens; the mean alone, `c128`) carry another id and
/// are computed again, never mixed with these.
const PASSAGE_LAYOUT: &str = "c128p";
/// The model's file name under the data folder.
pub const MODEL_FILE_NAME: &str = "multilingual-e5-small-q4.bin";
/// Tokens per forward pass (a text longer than this runs alone): bounds the activations'
/// memory, about 3 MB per thread. Larger batches were not faster (embed_bench: 36 ms
/// against 39 ms of CPU per passage at 2048, within the noise).
const BATCH_TOKENS: usize = 256;

/// A passage's vectors: the normalised mean of its chunks' vectors, and each chunk's
/// (one chunk, equal to the mean, for a passage of at most 128 tokens).
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    pub mean: Vec<f32>,
    pub chunks: Vec<Vec<f32>>,
}

/// A loaded embedding model: read-only after load, shared by threads through an `Arc`.
pub struct Model {
    file: Arc<MappedFile>,
    weights: model::Weights,
    tokenizer: tokenizer::Tokenizer,
    kernel: Kernel,
    threads: usize,
    id: String,
}

impl Model {
    /// Opens and validates the file (magic, version, tensor directory in bounds, sizes,
    /// tokenizer tables). A wrong, truncated or garbage file is an error that names the
    /// path, says what is wrong and how to fix it. Reads only the file's head and its
    /// small tensors: the 4-bit weights are mapped, and read when used.
    pub fn load(path: &Path) -> Result<Model> {
        let shown = path.display();
        let fix = "run `memdir model install` to install the model, or give the file with --model";
        let file = model_file::map(path).map_err(|e| {
            Error::Model(format!(
                "cannot open the embedding model {shown}: {e}; {fix}"
            ))
        })?;
        let invalid = |why: String| {
            Error::Model(format!(
                "{shown} is not a usable embedding model: {why}; {fix}"
            ))
        };
        let layout = format::parse(&file).map_err(invalid)?;
        let weights = model::Weights::new(&file, &layout).map_err(invalid)?;
        let vocab = weights.vocab_rows();
        if layout.tokenizer.scores.len() > vocab {
            return Err(invalid(
                "the tokenizer has more pieces than the embedding table".into(),
            ));
        }
        let id = identity(&file, &layout);
        let tokenizer = tokenizer::Tokenizer::new(layout.tokenizer);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(Model {
            file: Arc::new(file),
            weights,
            tokenizer,
            kernel: Kernel::detect(),
            threads,
            id,
        })
    }

    /// The stable identity of the vectors, the key they are stored under:
    /// `multilingual-e5-small-q4-`, 12 hex digits of a digest of the file's head, its
    /// f32 tensors and both ends of each 4-bit tensor, and `-c128p`, how long passages
    /// are embedded (see [`Model::embed_passage_chunks`]).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The length of every vector: 384.
    pub fn dim(&self) -> usize {
        self.weights.hidden()
    }

    /// The most tokens one text is embedded from, special tokens included: 512.
    pub fn max_tokens(&self) -> usize {
        self.weights.positions()
    }

    /// The kernel the model runs (the fastest the CPU has, unless changed).
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Runs `kernel` from now on: the benchmark's baseline, or a check that both agree.
    /// [`Kernel::Avx2`] on a CPU without AVX2 and FMA keeps the scalar kernel.
    pub fn set_kernel(&mut self, kernel: Kernel) {
        self.kernel = match kernel {
            Kernel::Avx2 if Kernel::detect() != Kernel::Avx2 => Kernel::Scalar,
            k => k,
        };
    }

    /// Uses at most `threads` threads per call (at least one).
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// The token ids the model runs for `text` after `prefix`: `<s>`, at most
    /// `max_tokens - 2` pieces, `</s>`.
    pub fn tokens(&self, prefix: &str, text: &str) -> Vec<u32> {
        let content = self
            .tokenizer
            .encode(&format!("{prefix}{text}"), self.max_tokens() - 2);
        let mut ids = Vec::with_capacity(content.len() + 2);
        ids.push(self.tokenizer.bos());
        ids.extend(content);
        ids.push(self.tokenizer.eos());
        ids
    }

    /// A search query as a unit vector (the model's "query: " prefix).
    pub fn embed_query(&self, text: &str) -> Vec<f32> {
        let ids = self.tokens("query: ", text);
        let mut v = self
            .weights
            .forward(&self.file, self.kernel, &[ids], self.threads);
        normalise(v.pop().unwrap_or_default())
    }

    /// Passages as unit vectors (the model's "passage: " prefix): each one's
    /// [`Passage::mean`], as [`Model::embed_passage_chunks`] computes it.
    pub fn embed_passages(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        self.embed_passage_chunks(texts)
            .into_iter()
            .map(|p| p.mean)
            .collect()
    }

    /// Passages as unit vectors (the model's "passage: " prefix), with their chunks'. A
    /// passage of at most 128 tokens (prefix and specials included) is run whole and is
    /// its own one chunk; a longer one is cut into chunks of at most 128 tokens at line
    /// boundaries (a longer line between words), each chunk after the first starting
    /// with the passage's first non-empty line, and its vector is the normalised mean of
    /// its chunks' vectors. All chunks of all texts are shared among the threads.
    pub fn embed_passage_chunks(&self, texts: &[&str]) -> Vec<Passage> {
        const PREFIX: &str = "passage: ";
        let sequence = |t: &str| {
            self.tokenizer
                .encode(&format!("{PREFIX}{t}"), usize::MAX)
                .len()
                + 2
        };
        let pieces = |t: &str| self.tokenizer.encode(t, usize::MAX).len();
        let mut sequences = Vec::with_capacity(texts.len());
        let mut counts = Vec::with_capacity(texts.len());
        for text in texts {
            let parts = chunk::chunks(
                text,
                chunk::CHUNK_TOKENS,
                chunk::HEAD_TOKENS,
                &sequence,
                &pieces,
            );
            counts.push(parts.len());
            sequences.extend(parts.iter().map(|p| self.tokens(PREFIX, p)));
        }
        let mut vectors = self.embed_sequences(&sequences).into_iter();
        counts
            .into_iter()
            .map(|n| {
                if n <= 1 {
                    // Exactly the vector of the whole text.
                    let mean = vectors.next().unwrap_or_default();
                    return Passage {
                        chunks: vec![mean.clone()],
                        mean,
                    };
                }
                let chunks: Vec<Vec<f32>> = vectors.by_ref().take(n).collect();
                let mut mean = vec![0f32; self.dim()];
                for v in &chunks {
                    mean.iter_mut().zip(v).for_each(|(m, x)| *m += x);
                }
                Passage {
                    mean: normalise(mean),
                    chunks,
                }
            })
            .collect()
    }

    /// Unit vectors of token sequences, shared among the threads.
    fn embed_sequences(&self, sequences: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let threads = self.threads.min(sequences.len()).max(1);
        if threads == 1 {
            return self.embed_batches(sequences, self.threads);
        }
        // Contiguous runs of sequences with about the same number of tokens each.
        let total: usize = sequences.iter().map(Vec::len).sum();
        let mut runs = Vec::with_capacity(threads);
        let (mut start, mut acc) = (0, 0);
        for (i, s) in sequences.iter().enumerate() {
            acc += s.len();
            if acc * threads >= total * (runs.len() + 1) && runs.len() + 1 < threads {
                runs.push(start..i + 1);
                start = i + 1;
            }
        }
        runs.push(start..sequences.len());
        std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .iter()
                .map(|r| {
                    let run = &sequences[r.clone()];
                    scope.spawn(move || self.embed_batches(run, 1))
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("embedding thread"))
                .collect()
        })
    }

    /// Unit vectors of token-id sequences given as they are (specials included, each at
    /// most [`Model::max_tokens`] long; no prefix added): for experiments that build
    /// their own inputs, such as a token run alone.
    pub fn embed_tokens(&self, sequences: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let max = self.max_tokens();
        let vocab = self.weights.vocab_rows() as u32;
        let fitted: Vec<Vec<u32>> = sequences
            .iter()
            .map(|s| {
                s.iter()
                    .copied()
                    .filter(|&id| id < vocab)
                    .take(max)
                    .collect()
            })
            .collect();
        self.embed_batches(&fitted, self.threads)
    }

    /// Runs the sequences in batches of at most [`BATCH_TOKENS`] tokens, in order.
    fn embed_batches(&self, sequences: &[Vec<u32>], threads: usize) -> Vec<Vec<f32>> {
        let mut out = Vec::with_capacity(sequences.len());
        let mut start = 0;
        while start < sequences.len() {
            let mut end = start + 1;
            let mut tokens = sequences[start].len();
            while end < sequences.len() && tokens + sequences[end].len() <= BATCH_TOKENS {
                tokens += sequences[end].len();
                end += 1;
            }
            let batch =
                self.weights
                    .forward(&self.file, self.kernel, &sequences[start..end], threads);
            out.extend(batch.into_iter().map(normalise));
            start = end;
        }
        out
    }
}

/// Scales `v` to length 1 (a zero vector stays zero).
fn normalise(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// A digest that changes when the weights do, without hashing all 70 MB: the head (shape,
/// tokenizer, directory), every f32 tensor, and the first and last 4 KiB of each 4-bit
/// tensor.
fn identity(file: &[u8], layout: &format::Layout) -> String {
    const EDGE: usize = 4096;
    let mut h = Sha256::new();
    h.update(&file[layout.head.clone()]);
    for t in &layout.tensors {
        let bytes = &file[t.bytes.clone()];
        match t.dtype {
            format::DType::F32 => h.update(bytes),
            format::DType::Q4 if bytes.len() <= 2 * EDGE => h.update(bytes),
            format::DType::Q4 => {
                h.update(&bytes[..EDGE]);
                h.update(&bytes[bytes.len() - EDGE..]);
            }
        }
    }
    let digest = h.finalize();
    let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{MODEL_NAME}-{hex}-{PASSAGE_LAYOUT}")
}

/// Where `memdir model install` puts the model and `--semantic` looks by default:
/// the user's data folder, `memdir/models/multilingual-e5-small-q4.bin`.
pub fn default_model_path() -> Option<PathBuf> {
    model_file::default_model_path()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Model>();
    }

    #[test]
    fn vectors_are_scaled_to_unit_length() {
        assert_eq!(normalise(vec![3.0, 4.0]), [0.6, 0.8]);
        assert_eq!(normalise(vec![0.0, 0.0]), [0.0, 0.0]);
    }
}

/// With the real weights (the `external-tests` feature): found at `MEMDIR_TEST_MODEL`,
/// else where `memdir model install` puts them; a test fails, never skips, without them.
#[cfg(all(test, feature = "external-tests"))]
mod with_weights {
    use super::*;

    #[allow(
        clippy::disallowed_methods,
        reason = "a test finds the weights like tests/semantic_model.rs"
    )]
    fn model() -> Model {
        let path = std::env::var_os("MEMDIR_TEST_MODEL")
            .map(PathBuf::from)
            .or_else(default_model_path)
            .expect("no data folder to find the model in: set MEMDIR_TEST_MODEL");
        Model::load(&path).unwrap_or_else(|e| panic!("{e} (or set MEMDIR_TEST_MODEL to its file)"))
    }

    /// A dated conversation of about 350 tokens, one turn a line (the model runs
    /// unoptimised in tests: a few chunks are enough).
    fn long_text() -> String {
        let mut s = String::from("8:56 pm on 20 July, 2023\n");
        for i in 0..12 {
            s.push_str(&format!(
                "Speaker {}: turn {i}, about the garden, the new pottery class and the trip \
                 to the lake we planned for the weekend.\n",
                i % 2
            ));
        }
        s
    }

    fn counters(m: &Model) -> (impl Fn(&str) -> usize + '_, impl Fn(&str) -> usize + '_) {
        (
            |t: &str| {
                m.tokenizer
                    .encode(&format!("passage: {t}"), usize::MAX)
                    .len()
                    + 2
            },
            |t: &str| m.tokenizer.encode(t, usize::MAX).len(),
        )
    }

    /// The vector of `text` run whole, as before chunking (cut at 512 tokens).
    fn whole(m: &Model, text: &str) -> Vec<f32> {
        let ids = m.tokens("passage: ", text);
        let mut v = m.weights.forward(&m.file, m.kernel, &[ids], 1);
        normalise(v.pop().unwrap())
    }

    #[test]
    fn a_short_passage_has_exactly_its_whole_vector() {
        let m = model();
        let short = "2023-05-08\nThe deploy script needs the staging database URL.";
        assert!(m.tokens("passage: ", short).len() <= chunk::CHUNK_TOKENS);
        let expect = whole(&m, short);
        assert_eq!(m.embed_passages(&[short])[0], expect);
        // The same beside a long passage, whose chunks share the batch.
        let long = long_text();
        let both = m.embed_passages(&[long.as_str(), short]);
        assert_eq!(both[1], expect);
    }

    #[test]
    fn a_long_passage_is_the_mean_of_its_chunks() {
        let m = model();
        let long = long_text();
        let tokens = m.tokens("passage: ", &long).len();
        assert!(
            tokens > 2 * chunk::CHUNK_TOKENS,
            "the text is {tokens} tokens"
        );
        let (sequence, pieces) = counters(&m);
        let parts = chunk::chunks(
            &long,
            chunk::CHUNK_TOKENS,
            chunk::HEAD_TOKENS,
            &sequence,
            &pieces,
        );
        assert!(parts.len() >= 3, "{} chunks", parts.len());
        for (i, p) in parts.iter().enumerate() {
            assert!(sequence(p) <= chunk::CHUNK_TOKENS, "chunk {i}: {p:?}");
            assert_eq!(m.tokens("passage: ", p).len(), sequence(p));
            assert!(p.starts_with("8:56 pm on 20 July, 2023\nSpeaker "), "{p:?}");
        }
        let mut mean = vec![0f32; m.dim()];
        for p in &parts {
            mean.iter_mut().zip(whole(&m, p)).for_each(|(a, b)| *a += b);
        }
        let expect = normalise(mean);
        let got = m.embed_passages(&[long.as_str()]).remove(0);
        let dot: f32 = got.iter().zip(&expect).map(|(a, b)| a * b).sum();
        assert!(dot > 0.99999, "cosine {dot}");
        let norm: f32 = got.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4);
        let cut: f32 = got.iter().zip(whole(&m, &long)).map(|(a, b)| a * b).sum();
        assert!(cut < 0.9999, "chunking changed nothing: cosine {cut}");
    }

    #[test]
    fn a_long_line_splits_under_the_bound() {
        let m = model();
        let line = long_text().replace('\n', " ");
        let (sequence, pieces) = counters(&m);
        let parts = chunk::chunks(
            &line,
            chunk::CHUNK_TOKENS,
            chunk::HEAD_TOKENS,
            &sequence,
            &pieces,
        );
        assert!(parts.len() >= 3, "{} chunks", parts.len());
        for p in &parts {
            assert!(sequence(p) <= chunk::CHUNK_TOKENS, "{p:?}");
        }
        // The line is its own first line: its first words head every later chunk.
        let head = parts[1].lines().next().unwrap();
        assert!(line.starts_with(head) && !head.is_empty(), "{head:?}");
        assert!(parts[1..].iter().all(|p| p.starts_with(head)));
        // Every word is kept, in order.
        let words: Vec<&str> = parts
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                let body = if i == 0 { p.as_str() } else { &p[head.len()..] };
                body.split_whitespace()
            })
            .collect();
        assert_eq!(words, line.split_whitespace().collect::<Vec<_>>());
        assert_eq!(m.embed_passages(&[line.as_str()])[0].len(), m.dim());
    }
}
