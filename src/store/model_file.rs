//! The embedding model's weights file on the host: where it lives by default, and
//! mapping it for the engine. Not store data: nothing here resolves a memory path, and no
//! store handle is involved.

use std::ops::Deref;
use std::path::{Path, PathBuf};


/// The sub-path of the user's data folder the model is installed to.
const MODEL_SUBPATH: [&str; 3] = ["memdir", "models", "multilingual-e5-small-q4.bin"];

/// `dirs::data_dir()/memdir/models/multilingual-e5-small-q4.bin`, or `None` when the
/// platform names no data folder.
pub fn default_model_path() -> Option<PathBuf> {
    let mut path = dirs::data_dir()?;
    path.extend(MODEL_SUBPATH);
    Some(path)
}

/// A weights file mapped read-only: pages are read when first touched and shared with
/// every other process that maps the same file.
pub struct MappedFile(memmap2::Mmap);

impl Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Maps the regular file at `path`. Errors are worded by the caller, which knows what
/// the file is for.
pub fn map(path: &Path) -> std::io::Result<MappedFile> {
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    // SAFETY: a mapping is undefined behaviour if the file changes while mapped.
    // `memdir model install` never writes into an installed file: it writes a new one
    // and renames it over the old, which leaves the mapped inode as it was.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(MappedFile(map))
}
