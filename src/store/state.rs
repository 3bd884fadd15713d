//! The store's own state files under `.memdir/` (history log, content objects): durable
//! creation, appends, reads and removal, through the same directory handle as memories.
//! Names here come from memdir, never from agents.

use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};

use cap_std::fs::Dir;

use super::platform::{nonblocking, sync_dir};
use super::{FolderStore, STATE_DIR};
use crate::error::{Error, Result};

fn state_error(e: std::io::Error) -> Error {
    Error::io(STATE_DIR, &e)
}

impl FolderStore {
    /// Creates the folders of state path `rel` (e.g. `.memdir/history/objects/ab`).
    pub fn state_dirs(&self, rel: &str) -> Result<()> {
        self.own_path_unlinked(rel)?;
        match self.dir.create_dir_all(rel) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(state_error(e)),
        }
    }

    fn state_parent(&self, rel: &str) -> Result<(Dir, String)> {
        self.own_path_unlinked(rel)?;
        let (dir, name) = rel.rsplit_once('/').unwrap_or((".", rel));
        let handle = self
            .dir
            .open_with(dir, &super::platform::dir_options())
            .map_err(state_error)?;
        Ok((Dir::from_std_file(handle.into_std()), name.to_owned()))
    }

    /// Durably writes a whole state file (temp, fsync, rename, fsync folder).
    pub fn state_write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let (parent, name) = self.state_parent(rel)?;
        let temp = format!("{name}.tmp-{}", std::process::id());
        let mut options = nonblocking();
        options.write(true).create(true).truncate(true);
        let mut file = parent.open_with(&temp, &options).map_err(state_error)?;
        file.write_all(bytes).map_err(state_error)?;
        file.sync_all().map_err(state_error)?;
        drop(file);
        parent.rename(&temp, &parent, &name).map_err(state_error)?;
        sync_dir(&parent).map_err(state_error)?;
        Ok(())
    }

    /// Appends to a state file and fsyncs it. One `write` per call, so concurrent appends
    /// (which the store lock already prevents) could not interleave.
    /// Returns the file's length after the append.
    pub fn state_append(&self, rel: &str, bytes: &[u8]) -> Result<u64> {
        self.own_path_unlinked(rel)?;
        let mut options = nonblocking();
        options.append(true).create(true);
        let dir = rel.rsplit_once('/').map_or(".", |(dir, _)| dir);
        let mut file = self.open_own(rel, &options, dir).map_err(state_error)?;
        file.write_all(bytes).map_err(state_error)?;
        file.sync_data().map_err(state_error)?;
        file.stream_position().map_err(state_error)
    }

    /// Bytes of a state file from `offset` on; empty if it does not exist.
    pub fn state_read_from(&self, rel: &str, offset: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(mut reader) = self.state_reader(rel, offset)? {
            reader.read_to_end(&mut out).map_err(state_error)?;
        }
        Ok(out)
    }

    /// A buffered reader of a state file from `offset` on; `None` if it does not exist.
    pub fn state_reader(
        &self,
        rel: &str,
        offset: u64,
    ) -> Result<Option<std::io::BufReader<cap_std::fs::File>>> {
        self.own_path_unlinked(rel)?;
        let mut options = nonblocking();
        options.read(true);
        let mut file = match self.dir.open_with(rel, &options) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_error(e)),
        };
        file.seek(SeekFrom::Start(offset)).map_err(state_error)?;
        Ok(Some(std::io::BufReader::with_capacity(256 * 1024, file)))
    }

    /// The size of a state file (0 if absent).
    pub fn state_len(&self, rel: &str) -> Result<u64> {
        self.own_path_unlinked(rel)?;
        match self.dir.metadata(rel) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
            Err(e) => Err(state_error(e)),
        }
    }

    /// Cuts a state file to `len` bytes and fsyncs it (repairing a torn append).
    pub fn state_truncate(&self, rel: &str, len: u64) -> Result<()> {
        self.own_path_unlinked(rel)?;
        let mut options = nonblocking();
        options.write(true);
        let file = self.dir.open_with(rel, &options).map_err(state_error)?;
        file.set_len(len).map_err(state_error)?;
        file.sync_all().map_err(state_error)
    }
}
