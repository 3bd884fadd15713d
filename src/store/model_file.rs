//! The embedding model's weights file on the host: where it lives by default, reading it
//! for the engine, and installing it atomically. Not store data: nothing here resolves a
//! memory path, and no store handle is involved.

use std::path::PathBuf;

/// The sub-path of the user's data folder the model is installed to.
const MODEL_SUBPATH: [&str; 3] = ["memdir", "models", "multilingual-e5-small-q4.bin"];

/// `dirs::data_dir()/memdir/models/multilingual-e5-small-q4.bin`, or `None` when the
/// platform names no data folder.
pub fn default_model_path() -> Option<PathBuf> {
    let mut path = dirs::data_dir()?;
    path.extend(MODEL_SUBPATH);
    Some(path)
}
