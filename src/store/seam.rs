//! The storage seam: a [`Store`] is held by a folder ([`FolderStore`]) or by a PostgreSQL
//! database ([`PgStore`]), and offers the same primitives either way. Everything above
//! (`crate::memory`, `crate::history`, the index) is written once against these.

use std::io::BufRead;

use super::postgres::SharedVector;
use super::postgres::{PgLock, PgWatcher};
use super::{
    Changes, EntryKind, EntryMeta, FileData, FolderLock, FolderStore, Location, Observed, PgStore,
    Stamp, StoreConfig, WalkEntry, WriteMode, watch,
};
use crate::error::Result;
use crate::path::MemPath;

/// One served store.
#[derive(Debug)]
pub struct Store {
    pub name: String,
    pub read_only: bool,
    pub description: Option<String>,
    engine: Engine,
}

#[derive(Debug)]
enum Engine {
    Folder(FolderStore),
    Postgres(Box<PgStore>),
}

/// Held while one mutation runs. For a folder, dropping it releases the lock; for a
/// database, the mutation is a transaction: [`StoreLock::finish`] commits it.
#[derive(Debug)]
pub enum StoreLock {
    Folder(FolderLock),
    Postgres(PgLock),
}

/// Notices changes made by others (an editor, another process, another machine).
#[derive(Debug)]
pub enum Watcher {
    Folder(watch::Watcher),
    Postgres(PgWatcher),
}

/// Calls the same method on whichever engine holds the store.
macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match &$self.engine {
            Engine::Folder($s) => $e,
            Engine::Postgres($s) => $e,
        }
    };
}

impl Store {
    /// Opens the store where `config` says it is (creating a writable folder, or memdir's
    /// tables in the database).
    pub fn open(config: &StoreConfig) -> Result<Store> {
        let engine = match &config.location {
            Location::Folder(dir) => {
                Engine::Folder(FolderStore::open(&config.name, dir, config.read_only)?)
            }
            Location::Postgres(url) => Engine::Postgres(Box::new(PgStore::open(
                &config.name,
                url,
                config.read_only,
            )?)),
        };
        Ok(Store {
            name: config.name.clone(),
            read_only: config.read_only,
            description: config.description.clone(),
            engine,
        })
    }

    /// Whether a database holds this store (changes may come from other machines).
    pub fn is_database(&self) -> bool {
        matches!(self.engine, Engine::Postgres(_))
    }

    /// Whether every mutation leaves an intent while it runs (history on; folders only:
    /// a database transaction needs none).
    pub(crate) fn set_intents(&mut self, on: bool) {
        if let Engine::Folder(f) = &mut self.engine {
            f.intents = on;
        }
    }

    /// What identifies the store on this machine, for keying caches (never shown).
    pub fn host_key(&self) -> &str {
        each!(self, s => s.host_key())
    }

    /// Temp files still in the store (a database holds none).
    pub fn temps_left(&self) -> usize {
        match &self.engine {
            Engine::Folder(f) => f.temps_left(),
            Engine::Postgres(_) => 0,
        }
    }

    /// Temp files of interrupted writes this process removed (folders only).
    pub fn temps_removed(&self) -> usize {
        match &self.engine {
            Engine::Folder(f) => f.temps_removed(),
            Engine::Postgres(_) => 0,
        }
    }

    /// Whether an interrupted mutation left an intent; `None` when another process holds
    /// the lock. A database rolls an interrupted mutation back: never.
    pub fn pending_intent(&self) -> Result<Option<bool>> {
        match &self.engine {
            Engine::Folder(f) => f.pending_intent(),
            Engine::Postgres(p) => Ok(p.try_lock()?.map(|_| false)),
        }
    }

    /// Why this user may not write in this store, if the system refuses it.
    pub fn write_denied(&self) -> Option<std::io::Error> {
        match &self.engine {
            Engine::Folder(f) => f.write_denied(),
            Engine::Postgres(_) => None,
        }
    }

    /// Test hook: stops the process at a write stage (folders only).
    pub(crate) fn pause(&self, stage: &str) {
        if let Engine::Folder(f) = &self.engine {
            f.pause(stage);
        }
    }

    pub fn metadata(&self, path: &MemPath) -> Result<Option<EntryMeta>> {
        each!(self, s => s.metadata(path))
    }

    pub fn entry_kind(&self, path: &MemPath) -> Result<Option<EntryKind>> {
        each!(self, s => s.entry_kind(path))
    }

    pub fn read(&self, path: &MemPath) -> Result<FileData> {
        each!(self, s => s.read(path))
    }

    /// Reads several memories: one result per path, in order (one query for a database).
    pub fn read_many(&self, paths: &[MemPath]) -> Vec<Result<FileData>> {
        match &self.engine {
            Engine::Folder(f) => paths.iter().map(|p| f.read(p)).collect(),
            Engine::Postgres(p) => p.read_many(paths),
        }
    }

    /// Vectors of meaning other machines computed for these contents under `model`
    /// (a database store shares them; a folder has none).
    pub fn shared_vectors(&self, model: &str, shas: &[&str]) -> Result<Vec<SharedVector>> {
        match &self.engine {
            Engine::Folder(_) => Ok(Vec::new()),
            Engine::Postgres(p) => p.shared_vectors(model, shas),
        }
    }

    /// Shares vectors of meaning with other machines (a database store; nothing for a
    /// folder).
    pub fn share_vectors(&self, model: &str, vectors: &[SharedVector]) -> Result<()> {
        match &self.engine {
            Engine::Folder(_) => Ok(()),
            Engine::Postgres(p) => p.share_vectors(model, vectors),
        }
    }

    /// Writes a memory durably (the caller holds the store lock).
    pub fn write(&self, path: &MemPath, bytes: &[u8], mode: WriteMode) -> Result<Stamp> {
        each!(self, s => s.write(path, bytes, mode))
    }

    /// Creates `path` with `bytes` and the modification time `modified` (an import
    /// keeps a memory's age). Fails if something is there.
    pub fn create_dated(
        &self,
        path: &MemPath,
        bytes: &[u8],
        modified: std::time::SystemTime,
    ) -> Result<Stamp> {
        match &self.engine {
            Engine::Folder(f) => f.write_dated(path, bytes, WriteMode::CreateNew, Some(modified)),
            Engine::Postgres(p) => p.create_dated(path, bytes, modified),
        }
    }

    pub fn rename(&self, from: &MemPath, to: &MemPath) -> Result<()> {
        each!(self, s => s.rename(from, to))
    }

    pub fn remove_file(&self, path: &MemPath) -> Result<()> {
        each!(self, s => s.remove_file(path))
    }

    pub fn remove_empty_dir(&self, path: &MemPath) -> Result<()> {
        each!(self, s => s.remove_empty_dir(path))
    }

    pub fn walk(&self, start: &MemPath, max_depth: Option<usize>) -> Result<Vec<WalkEntry>> {
        each!(self, s => s.walk(start, max_depth))
    }

    /// Every entry below `start`, hidden ones and special files included (a database
    /// holds neither).
    pub fn walk_everything(&self, start: &MemPath) -> Result<Vec<WalkEntry>> {
        match &self.engine {
            Engine::Folder(f) => f.walk_everything(start),
            Engine::Postgres(p) => p.walk(start, None),
        }
    }

    /// The entries of folders `dirs` whose names are not UTF-8 (a database holds none).
    pub fn names_not_utf8(&self, dirs: &[MemPath]) -> Vec<String> {
        match &self.engine {
            Engine::Folder(f) => f.names_not_utf8(dirs),
            Engine::Postgres(_) => Vec::new(),
        }
    }

    /// Blocks until this process holds the store's mutation lock.
    pub fn lock(&self) -> Result<StoreLock> {
        Ok(match &self.engine {
            Engine::Folder(f) => StoreLock::Folder(f.lock()?),
            Engine::Postgres(p) => StoreLock::Postgres(p.lock()?),
        })
    }

    /// Takes the lock only if it is free right now.
    pub fn try_lock(&self) -> Result<Option<StoreLock>> {
        Ok(match &self.engine {
            Engine::Folder(f) => f.try_lock()?.map(StoreLock::Folder),
            Engine::Postgres(p) => p.try_lock()?.map(StoreLock::Postgres),
        })
    }

    /// A watcher of changes below `root`, when this system can notice them.
    pub fn watcher(&self, root: &MemPath) -> Option<Watcher> {
        match &self.engine {
            Engine::Folder(f) => watch::Watcher::new().ok().map(|mut w| {
                f.watch_tree(&mut w, root);
                Watcher::Folder(w)
            }),
            Engine::Postgres(p) => Some(Watcher::Postgres(p.watcher())),
        }
    }

    // ---- state files (names come from memdir, never from agents) -----------------------

    pub fn state_dirs(&self, rel: &str) -> Result<()> {
        match &self.engine {
            Engine::Folder(f) => f.state_dirs(rel),
            Engine::Postgres(_) => Ok(()),
        }
    }

    pub fn state_write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        each!(self, s => s.state_write(rel, bytes))
    }

    pub fn state_append(&self, rel: &str, bytes: &[u8]) -> Result<u64> {
        each!(self, s => s.state_append(rel, bytes))
    }

    pub fn state_read_from(&self, rel: &str, offset: u64) -> Result<Vec<u8>> {
        each!(self, s => s.state_read_from(rel, offset))
    }

    /// A buffered reader of a state file from `offset` on; `None` if it does not exist.
    pub fn state_reader(&self, rel: &str, offset: u64) -> Result<Option<Box<dyn BufRead + '_>>> {
        match &self.engine {
            Engine::Folder(f) => Ok(f
                .state_reader(rel, offset)?
                .map(|r| Box::new(r) as Box<dyn BufRead>)),
            Engine::Postgres(p) => {
                if p.state_len(rel)? == 0 {
                    return Ok(None);
                }
                let bytes = p.state_read_from(rel, offset)?;
                Ok(Some(Box::new(std::io::Cursor::new(bytes))))
            }
        }
    }

    pub fn state_len(&self, rel: &str) -> Result<u64> {
        each!(self, s => s.state_len(rel))
    }

    pub fn state_truncate(&self, rel: &str, len: u64) -> Result<()> {
        each!(self, s => s.state_truncate(rel, len))
    }
}

impl StoreLock {
    /// The intent left by the last holder (empty when it finished cleanly).
    pub fn intent(&self) -> Result<Vec<u8>> {
        match self {
            StoreLock::Folder(l) => l.intent(),
            StoreLock::Postgres(_) => Ok(Vec::new()),
        }
    }

    /// Records the intent of the mutation about to happen (a transaction needs none).
    pub fn set_intent(&self, bytes: &[u8]) -> Result<()> {
        match self {
            StoreLock::Folder(l) => l.set_intent(bytes),
            StoreLock::Postgres(_) => Ok(()),
        }
    }

    pub fn clear_intent(&self) -> Result<()> {
        match self {
            StoreLock::Folder(l) => l.clear_intent(),
            StoreLock::Postgres(_) => Ok(()),
        }
    }

    /// Ends the mutation: releases a folder's lock; commits a database's transaction,
    /// reporting whether the mutation was stored.
    pub fn finish(self) -> Result<()> {
        match self {
            StoreLock::Folder(_) => Ok(()),
            StoreLock::Postgres(l) => l.finish(),
        }
    }

    /// The mutation failed: a database rolls back what it did.
    pub fn abandon(self) {
        match self {
            StoreLock::Folder(l) => {
                let _ = l.clear_intent();
            }
            StoreLock::Postgres(l) => l.abandon(),
        }
    }
}

impl Watcher {
    /// What changed below `root` since the last drain.
    pub fn drain(&mut self, store: &Store, root: &MemPath) -> Changes {
        match (self, &store.engine) {
            (Watcher::Folder(w), Engine::Folder(f)) => w.drain(f, root),
            (Watcher::Postgres(w), Engine::Postgres(p)) => p.drain(w, root),
            _ => Changes {
                overflow: true,
                ..Changes::default()
            },
        }
    }

    /// What the caller found at `path` (`None`: nothing) when it acted on a change this
    /// watcher reported. A watcher that compares looks takes it as its last look at
    /// `path`, so that a change made between its walk and the caller's read, and undone
    /// before the next walk, is reported again rather than lost.
    pub fn observed(&mut self, path: &MemPath, found: Observed) {
        if let Watcher::Folder(w) = self {
            w.observed(path, found);
        }
    }
}
