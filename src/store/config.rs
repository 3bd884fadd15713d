//! The server's own configuration files (the HTTP tokens file), read whole from a host
//! path the operator named on the command line. Not store data: nothing here resolves a
//! memory path, and no store handle is involved.

use std::io::Read;
use std::path::Path;

use crate::{Error, Result};

/// Largest configuration file read: a tokens file of thousands of lines fits many times.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Reads the secrets file at `path` as UTF-8 text, refusing one that other users could
/// read or change (any group or other permission bit on Unix), since it holds credentials.
/// The error says what is wrong and how to fix it, naming the file but none of its text.
pub fn read_secret_file(path: &Path) -> Result<String> {
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Config(format!("cannot open {shown}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::Config(format!("cannot read the metadata of {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(Error::Config(format!("{shown} is not a regular file")));
    }
    check_private(path, &meta)?;
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(Error::Config(format!(
            "{shown} is {} bytes; a tokens file is at most {MAX_CONFIG_BYTES} bytes",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Config(format!("cannot read {shown}: {e}")))?;
    String::from_utf8(bytes).map_err(|_| Error::Config(format!("{shown} is not UTF-8 text")))
}

#[cfg(unix)]
fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::Config(format!(
            "{shown} holds credentials but other users may read or change it (mode {mode:03o}); \
             run `chmod 600 {shown}` and start again",
            shown = path.display()
        )));
    }
    Ok(())
}

/// Windows keeps access in ACLs, which a user's profile folder already restricts.
#[cfg(not(unix))]
fn check_private(_path: &Path, _meta: &std::fs::Metadata) -> Result<()> {
    Ok(())
}
