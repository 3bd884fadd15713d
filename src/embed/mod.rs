//! The embedding engine: a multilingual sentence-embedding model (multilingual-e5-small,
//! 4-bit) run inside memdir, offline, from one weights file. It turns text into unit
//! vectors for semantic search; it does no search and keeps no index itself.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The model's file name under the data folder.
pub const MODEL_FILE_NAME: &str = "multilingual-e5-small-q4.bin";

/// A loaded embedding model: read-only after load, shared by threads through an `Arc`.
pub struct Model {
    id: String,
}

impl Model {
    /// Opens and validates the file (magic, version, tensor directory in bounds, sizes,
    /// tokenizer tables). A wrong, truncated or garbage file is an error that names the
    /// path, says what is wrong and how to fix it.
    pub fn load(path: &Path) -> Result<Model> {
        Err(Error::Model(format!(
            "{}: the embedding engine is not built yet",
            path.display()
        )))
    }

    /// The stable identity of the weights, the key vectors are stored under.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The length of every vector: 384.
    pub fn dim(&self) -> usize {
        384
    }

    /// The most tokens one text is embedded from, special tokens included: 512.
    pub fn max_tokens(&self) -> usize {
        512
    }

    /// A search query as a unit vector (the model's "query: " prefix).
    pub fn embed_query(&self, _text: &str) -> Vec<f32> {
        unimplemented!("embedding engine not built yet")
    }

    /// Passages as unit vectors (the model's "passage: " prefix), each truncated at
    /// [`Model::max_tokens`].
    pub fn embed_passages(&self, _texts: &[&str]) -> Vec<Vec<f32>> {
        unimplemented!("embedding engine not built yet")
    }
}

/// Where `memdir model install` puts the model and `--semantic` looks by default:
/// the user's data folder, `memdir/models/multilingual-e5-small-q4.bin`.
pub fn default_model_path() -> Option<PathBuf> {
    crate::store::model_file::default_model_path()
}
