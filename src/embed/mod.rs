//! The embedding engine: a multilingual sentence-embedding model (multilingual-e5-small,
//! 4-bit) run inside memdir, offline, from one weights file. It turns text into unit
//! vectors for semantic search; it does no search and keeps no index itself.
//!
//! Layout: `format` parses and checks the file, `tokenizer` splits text into the
//! model's pieces, `kernels` multiplies 4-bit weights (AVX2 or portable), `model` runs
//! the encoder. The file is mapped by
//! `crate::store::model_file`, the door to the host's files.

mod format;
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
/// The model's file name under the data folder.
pub const MODEL_FILE_NAME: &str = "multilingual-e5-small-q4.bin";
/// Texts per batch and tokens per batch: bounds the activations' memory.
const BATCH_TOKENS: usize = 2048;

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

    /// The stable identity of the weights, the key vectors are stored under:
    /// `multilingual-e5-small-q4-` and 12 hex digits of a digest of the file's head,
    /// its f32 tensors and both ends of each 4-bit tensor.
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

    /// Passages as unit vectors (the model's "passage: " prefix), each truncated at
    /// [`Model::max_tokens`]. The texts are shared among the threads.
    pub fn embed_passages(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let sequences: Vec<Vec<u32>> = texts.iter().map(|t| self.tokens("passage: ", t)).collect();
        let threads = self.threads.min(sequences.len()).max(1);
        if threads == 1 {
            return self.embed_batches(&sequences, self.threads);
        }
        // Contiguous runs of texts with about the same number of tokens each.
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
    format!("{MODEL_NAME}-{hex}")
}

/// Where `memdir model install` puts the model and `--semantic` looks by default:
/// the user's data folder, `memdir/models/multilingual-e5-small-q4.bin`.
pub fn default_model_path() -> Option<PathBuf> {
    model_file::default_model_path()
}
