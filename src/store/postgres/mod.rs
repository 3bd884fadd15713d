//! A store held by PostgreSQL: the door to the database, as `FolderStore` is the door to a
//! folder. It offers the same primitives (read, durable write, create-only write, rename,
//! remove, walk, the mutation lock, state files, change notices), so every memory
//! operation above the seam runs unchanged on either.
//!
//! - Memories are rows of `memdir_files` (store, path, content, modified, seq); folders
//!   are implied by paths, as in object stores. `seq` comes from one sequence and changes
//!   on every write, so it stands in for the inode in a file's [`Stamp`].
//! - The mutation lock is a transaction holding `pg_advisory_xact_lock` on the store: the
//!   memory write and its history records commit together or not at all, so a crash
//!   leaves nothing to repair (the folder store's intent is not needed).
//!   [`StoreLock::finish`](super::StoreLock::finish) commits and reports failure.
//! - State files (the history log) are rows of `memdir_state`, one per append.
//! - `memdir_changes` lists the paths each write touched, in commit order per store: the
//!   watcher of another process (or machine) reads what came after its cursor.
//!
//! Connections come from a small pool (`r2d2`), are checked out per operation and give
//! clear errors, bounded in time, when the database is down; a broken connection is
//! dropped and the next operation connects again.

mod conn;
mod schema;
mod tls;
mod vectors;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, SystemTime};

use super::{Changes, EntryKind, EntryMeta, FileData, Stamp, WalkEntry, WriteMode, visible_name};
use crate::error::{Error, MoveFault, Result};
use crate::path::MemPath;

pub use conn::redact_url;
use conn::{Conn, Pool, Pooled};
pub use vectors::SharedVector;

/// Largest file the server will read at all, as for folders.
const READ_LIMIT: u64 = super::io::READ_LIMIT;
/// How long after a call found the database not answering the next calls check their
/// connection first.
const SILENT_MEMORY: Duration = Duration::from_secs(60);
/// How long that check waits for an answer.
const SILENT_CHECK: Duration = Duration::from_secs(2);

/// Changes kept per store for the watchers of other processes (older ones are pruned; a
/// watcher further behind reconciles instead).
const CHANGES_KEPT: i64 = 65_536;
/// Changes read per drain at most; beyond it a rescan is cheaper.
const DRAIN_BUDGET: i64 = 4096;

/// A store in a PostgreSQL database.
pub struct PgStore {
    pub name: String,
    pub read_only: bool,
    /// Always `Some` until dropped (see `Drop`).
    pool: Option<Pool>,
    /// The database URL without password, and the store name: keys the local index.
    key: String,
    /// The connection of each thread that holds this store's lock (its transaction).
    held: HeldMap,
    /// Whether the schema was checked (and migrated) on this database.
    ready: std::sync::atomic::AtomicBool,
    /// When connecting last failed (cleared by a success).
    down_at: Mutex<Option<std::time::Instant>>,
    /// When a call last found the database not answering.
    silent_at: Mutex<Option<std::time::Instant>>,
}

/// The transaction of each thread holding a store's lock.
type HeldMap = Arc<Mutex<HashMap<ThreadId, Arc<Held>>>>;

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish()
    }
}

/// A connection inside a mutation's transaction.
struct Held {
    conn: Mutex<Pooled>,
    /// A statement of the transaction failed: it can only roll back.
    failed: std::sync::atomic::AtomicBool,
}

/// The mutation lock of a PostgreSQL store: a transaction that holds the store's advisory
/// lock. Dropping it commits (a failure is logged); [`PgLock::finish`] commits and says
/// whether it worked; [`PgLock::abandon`] rolls back.
pub struct PgLock {
    held: Arc<Held>,
    owner: ThreadId,
    store: HeldMap,
    name: String,
    done: bool,
}

impl std::fmt::Debug for PgLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLock").field("store", &self.name).finish()
    }
}

/// Reads the changes other processes committed, after a cursor.
#[derive(Debug)]
pub struct PgWatcher {
    /// The last change seen; `None` until the database could be asked.
    last: Option<i64>,
}

impl PgStore {
    /// Connects to the database at `url`, creates or migrates memdir's tables, and serves
    /// store `name` from them. A database that refuses (authentication, no such database,
    /// a newer schema) stops the start; one that cannot be reached right now does not: the
    /// store answers each call with an error until the database is back, then migrates.
    /// TLS that fails (a setting, not an outage) stops the start too.
    pub fn open(name: &str, url: &str, read_only: bool) -> Result<PgStore> {
        let pool = conn::pool(name, url)?;
        let at = || format!("store `{name}` ({})", redact_url(url));
        let ready = match pool.connect_now() {
            Ok(mut c) => {
                schema::migrate(&mut c, read_only)
                    .map_err(|e| Error::Open(format!("{}: {e}", at())))?;
                true
            }
            Err(e) if e.as_db_error().is_some() && !e.is_transient() => {
                return Err(Error::Open(format!("{}: {}", at(), conn::describe(&e))));
            }
            Err(e) if e.is_tls() => {
                return Err(Error::Open(format!(
                    "{}: {}; check the URL's `sslmode` (and `sslrootcert`) against the server's TLS",
                    at(),
                    conn::chain(&e)
                )));
            }
            Err(e) => {
                tracing::warn!(
                    "{}: the database cannot be reached now ({}); each call fails until it is back, then memdir connects by itself",
                    at(),
                    conn::chain(&e)
                );
                false
            }
        };
        Ok(PgStore {
            ready: std::sync::atomic::AtomicBool::new(ready),
            name: name.to_owned(),
            read_only,
            key: format!("{}#{name}", redact_url(url)),
            pool: Some(pool),
            held: HeldMap::default(),
            down_at: Mutex::new(None),
            silent_at: Mutex::new(None),
        })
    }

    fn pool(&self) -> &Pool {
        self.pool
            .as_ref()
            .expect("the pool lives as long as the store")
    }

    /// The database URL (without password) and store name, for keying caches.
    pub fn host_key(&self) -> &str {
        &self.key
    }

    fn unavailable(&self, reason: impl std::fmt::Display) -> Error {
        Error::Database {
            store: self.name.clone(),
            reason: reason.to_string(),
        }
    }

    /// The error of a call that failed with `e`; a database that did not answer is
    /// remembered, so the next calls check their connection briefly before using it.
    fn failed(&self, e: &conn::Failure) -> Error {
        if matches!(e, conn::Failure::NoAnswer(_)) {
            *self.silent_at.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(std::time::Instant::now());
        }
        self.unavailable(conn::describe(e))
    }

    fn check_writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly {
                store: self.name.clone(),
                what,
            });
        }
        Ok(())
    }

    /// Runs `f` on a connection: this thread's transaction when it holds the store lock,
    /// otherwise one from the pool.
    fn with<T>(&self, f: impl Fn(&mut Conn) -> std::result::Result<T, conn::Failure>) -> Result<T> {
        let held = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&std::thread::current().id())
            .cloned();
        match held {
            Some(held) => {
                let mut conn = held.conn.lock().unwrap_or_else(|e| e.into_inner());
                f(&mut conn).map_err(|e| {
                    held.failed
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    self.failed(&e)
                })
            }
            None => {
                let mut conn = self.connection()?;
                match f(&mut conn) {
                    // A pooled connection the database closed meanwhile (a restart): once
                    // more on one that answers. Outside a transaction, so nothing is done
                    // twice that was done once: a failed statement did nothing.
                    Err(e) if conn::is_lost(&e) => {
                        conn.lost = true;
                        drop(conn);
                        let mut conn = self.live_connection()?;
                        f(&mut conn).map_err(|e| self.failed(&e))
                    }
                    other => other.map_err(|e| self.failed(&e)),
                }
            }
        }
    }

    /// A connection from the pool, waiting up to the connect time-out for one; briefly
    /// after a failure to connect, only a short while, so the several steps of one call
    /// do not each wait the whole time for a database that is away.
    fn connection(&self) -> Result<Pooled> {
        // A connection the server closed, found by the silent check, is passed over: at
        // most the pool's size of them, then one new connection.
        for _ in 0..=conn::POOL_SIZE {
            let mut conn = self.pooled()?;
            if !self.check_if_silent(&mut conn)? {
                conn.lost = true;
                continue;
            }
            if !self.ready.load(std::sync::atomic::Ordering::Acquire) {
                schema::migrate(&mut conn, self.read_only).map_err(|e| self.unavailable(e))?;
                self.ready.store(true, std::sync::atomic::Ordering::Release);
            }
            return Ok(conn);
        }
        Err(self.unavailable(
            "no connection to the database answered; retry (memdir reconnects by itself)",
        ))
    }

    /// A connection from the pool, as [`connection`](Self::connection) describes, not
    /// yet checked.
    fn pooled(&self) -> Result<Pooled> {
        let recently_down = self
            .down_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < conn::CONNECT_WAIT);
        let got = if recently_down {
            self.pool().get_timeout(Duration::from_millis(250))
        } else {
            self.pool().get()
        };
        let mut down_at = self.down_at.lock().unwrap_or_else(|e| e.into_inner());
        match got {
            Ok(conn) => {
                *down_at = None;
                Ok(conn)
            }
            Err(e) => {
                *down_at = Some(std::time::Instant::now());
                Err(e)
            }
        }
    }

    /// After a call found the database not answering (within [`SILENT_MEMORY`]), a
    /// pooled connection is checked with an empty query within [`SILENT_CHECK`] before it
    /// is used: the other idle connections lead to the same frozen server, and each would
    /// hold its call for the whole answer time-out. The first answer ends the checks.
    /// `false` for a connection the server closed (take another: the database may be
    /// back); an error when it did not answer.
    fn check_if_silent(&self, conn: &mut Pooled) -> Result<bool> {
        let mut silent_at = self.silent_at.lock().unwrap_or_else(|e| e.into_inner());
        if !silent_at.is_some_and(|at| at.elapsed() < SILENT_MEMORY) {
            *silent_at = None;
            return Ok(true);
        }
        drop(silent_at);
        match conn.client.answers(SILENT_CHECK) {
            Ok(()) => {
                *self.silent_at.lock().unwrap_or_else(|e| e.into_inner()) = None;
                Ok(true)
            }
            Err(e) if conn::is_lost(&e) => Ok(false),
            Err(e) => {
                conn.lost = true;
                Err(self.failed(&match e {
                    conn::Failure::NoAnswer(_) => conn::Failure::NoAnswer(SILENT_CHECK),
                    other => other,
                }))
            }
        }
    }

    /// A connection the server answers on, after one was found lost: a restart closes
    /// every connection the pool holds, and each is checked and discarded here rather than
    /// failing a call of its own. Checks at most the pool's size, then one new connection.
    fn live_connection(&self) -> Result<Pooled> {
        for _ in 0..conn::POOL_SIZE {
            let mut conn = self.connection()?;
            if conn.alive() {
                return Ok(conn);
            }
        }
        self.connection()
    }

    /// Takes the store's mutation lock: a transaction holding its advisory lock (waiting
    /// for another holder, within the lock time-out).
    pub fn lock(&self) -> Result<PgLock> {
        self.check_writable("changing memories")?;
        self.take_lock(Waiting::UntilFree)?
            .ok_or_else(|| self.unavailable("could not take the store lock"))
    }

    /// Takes the lock only if it is free right now.
    pub fn try_lock(&self) -> Result<Option<PgLock>> {
        self.take_lock(Waiting::Never)
    }

    fn take_lock(&self, waiting: Waiting) -> Result<Option<PgLock>> {
        let mut conn = self.connection()?;
        // A connection a restart closed fails its `BEGIN`, before anything is done: take
        // one the server answers on instead.
        if let Err(e) = conn.client.batch_execute("BEGIN") {
            if !conn::is_lost(&e) {
                return Err(self.failed(&e));
            }
            conn.lost = true;
            drop(conn);
            conn = self.live_connection()?;
            conn.client
                .batch_execute("BEGIN")
                .map_err(|e| self.failed(&e))?;
        }
        let key = schema::lock_key(&self.name);
        let taken = (|| -> std::result::Result<bool, conn::Failure> {
            match waiting {
                Waiting::UntilFree => {
                    conn.execute("SELECT pg_advisory_xact_lock($1)", &[&key])?;
                    Ok(true)
                }
                Waiting::Never => {
                    let row = conn.query_one("SELECT pg_try_advisory_xact_lock($1)", &[&key])?;
                    Ok(row.get(0))
                }
            }
        })();
        match taken {
            Ok(true) => {}
            Ok(false) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                return Ok(None);
            }
            Err(e) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                return Err(self.failed(&e));
            }
        }
        let owner = std::thread::current().id();
        let held = Arc::new(Held {
            conn: Mutex::new(conn),
            failed: Default::default(),
        });
        let map = Arc::clone(&self.held);
        map.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(owner, Arc::clone(&held));
        Ok(Some(PgLock {
            held,
            owner,
            store: map,
            name: self.name.clone(),
            done: false,
        }))
    }

    /// Metadata of `path`; `Ok(None)` when nothing is there.
    pub fn metadata(&self, path: &MemPath) -> Result<Option<EntryMeta>> {
        let rel = path.rel();
        if rel.is_empty() {
            let newest = self.with(|c| {
                c.query_one(
                    "SELECT max(modified_ns) FROM memdir_files WHERE store = $1",
                    &[&self.name],
                )
                .map(|r| r.get::<_, Option<i64>>(0))
            })?;
            return Ok(Some(dir_meta(newest.unwrap_or(0))));
        }
        let row = self.with(|c| {
            c.query_opt(
                "SELECT octet_length(content)::bigint, modified_ns, seq FROM memdir_files WHERE store = $1 AND path = $2",
                &[&self.name, &rel],
            )
        })?;
        if let Some(row) = row {
            return Ok(Some(file_meta(row.get(0), row.get(1), row.get(2))));
        }
        let (lo, hi) = prefix_range(&rel);
        let newest = self.with(|c| {
            c.query_one(
                "SELECT max(modified_ns) FROM memdir_files WHERE store = $1 AND path >= $2 AND path < $3",
                &[&self.name, &lo, &hi],
            )
            .map(|r| r.get::<_, Option<i64>>(0))
        })?;
        Ok(newest.map(dir_meta))
    }

    /// Refuses a path below a memory (a file cannot hold other files).
    fn check_ancestors(&self, path: &MemPath) -> Result<()> {
        let ancestors: Vec<String> = (1..path.segments.len())
            .map(|n| path.segments[..n].join("/"))
            .collect();
        if ancestors.is_empty() {
            return Ok(());
        }
        let file = self.with(|c| {
            c.query_opt(
                "SELECT a.p FROM unnest($2::text[]) AS a(p) WHERE EXISTS (SELECT 1 FROM memdir_files f WHERE f.store = $1 AND f.path = a.p) ORDER BY a.p LIMIT 1",
                &[&self.name, &ancestors],
            )
        })?;
        match file {
            Some(row) => Err(Error::NotAFolder {
                path: path.with_rel(&row.get::<_, String>(0)).canonical(),
            }),
            None => Ok(()),
        }
    }

    /// Whether anything is stored below folder `rel` (`""`: the store root).
    fn has_children(&self, rel: &str) -> Result<bool> {
        let (lo, hi) = prefix_range(rel);
        self.with(|c| {
            c.query_one(
                "SELECT EXISTS (SELECT 1 FROM memdir_files WHERE store = $1 AND path >= $2 AND path < $3)",
                &[&self.name, &lo, &hi],
            )
            .map(|r| r.get(0))
        })
    }

    /// What is at `path`: a memory, a folder (paths below it), or nothing.
    pub fn entry_kind(&self, path: &MemPath) -> Result<Option<EntryKind>> {
        Ok(self.metadata(path)?.map(|m| m.kind))
    }

    /// Reads a memory.
    pub fn read(&self, path: &MemPath) -> Result<FileData> {
        let rel = path.rel();
        let row = self.with(|c| {
            c.query_opt(
                "SELECT octet_length(content)::bigint, modified_ns, seq, CASE WHEN octet_length(content) <= $3::bigint THEN content END FROM memdir_files WHERE store = $1 AND path = $2",
                &[&self.name, &rel, &(READ_LIMIT as i64)],
            )
        })?;
        let Some(row) = row else {
            return Err(match self.metadata(path)? {
                Some(_) => Error::IsFolder {
                    path: path.canonical(),
                },
                None => Error::NotFound {
                    path: path.canonical(),
                },
            });
        };
        let meta = file_meta(row.get(0), row.get(1), row.get(2));
        let Some(bytes) = row.get::<_, Option<Vec<u8>>>(3) else {
            return Err(Error::TooLarge {
                path: path.canonical(),
                size: meta.size,
                max: READ_LIMIT,
            });
        };
        Ok(FileData {
            bytes,
            modified: meta.modified,
            stamp: meta.stamp,
        })
    }

    /// Reads several memories in one query; a path not found there is read alone, for
    /// its own error (not found, a folder, too large).
    pub fn read_many(&self, paths: &[MemPath]) -> Vec<Result<FileData>> {
        let rels: Vec<String> = paths.iter().map(MemPath::rel).collect();
        let rows = match self.with(|c| {
            c.query(
                "SELECT path, octet_length(content)::bigint, modified_ns, seq, content FROM memdir_files WHERE store = $1 AND path = ANY($2) AND octet_length(content) <= $3::bigint",
                &[&self.name, &rels, &(READ_LIMIT as i64)],
            )
        }) {
            Ok(rows) => rows,
            Err(e) => return paths.iter().map(|_| Err(e.clone_database())).collect(),
        };
        let mut found: HashMap<String, FileData> = rows
            .into_iter()
            .map(|row| {
                let meta = file_meta(row.get(1), row.get(2), row.get(3));
                let data = FileData {
                    bytes: row.get(4),
                    modified: meta.modified,
                    stamp: meta.stamp,
                };
                (row.get(0), data)
            })
            .collect();
        paths
            .iter()
            .zip(&rels)
            .map(|(p, rel)| match found.remove(rel) {
                Some(data) => Ok(data),
                None => self.read(p),
            })
            .collect()
    }

    /// Writes a memory (the caller holds the store lock, so this joins its transaction).
    pub fn write(&self, path: &MemPath, bytes: &[u8], mode: WriteMode) -> Result<Stamp> {
        self.write_dated(path, bytes, mode, None)
    }

    /// Creates `path` with `bytes` and the modification time `modified` (an import keeps
    /// a memory's age).
    pub fn create_dated(
        &self,
        path: &MemPath,
        bytes: &[u8],
        modified: SystemTime,
    ) -> Result<Stamp> {
        self.write_dated(path, bytes, WriteMode::CreateNew, Some(modified))
    }

    /// [`write`](Self::write), the modification time `modified` when given, else the
    /// database's clock.
    fn write_dated(
        &self,
        path: &MemPath,
        bytes: &[u8],
        mode: WriteMode,
        modified: Option<SystemTime>,
    ) -> Result<Stamp> {
        self.check_writable("writing")?;
        let rel = path.rel();
        if rel.is_empty() || self.has_children(&rel)? {
            return Err(Error::IsFolder {
                path: path.canonical(),
            });
        }
        self.check_ancestors(path)?;
        let ns: Option<i64> = modified.map(|m| {
            m.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        });
        let sql = match mode {
            WriteMode::Replace => {
                "INSERT INTO memdir_files (store, path, content, modified_ns, seq) VALUES ($1, $2, $3, coalesce($4, memdir_now_ns()), nextval('memdir_seq')) ON CONFLICT (store, path) DO UPDATE SET content = EXCLUDED.content, modified_ns = EXCLUDED.modified_ns, seq = EXCLUDED.seq RETURNING modified_ns, seq"
            }
            WriteMode::CreateNew => {
                "INSERT INTO memdir_files (store, path, content, modified_ns, seq) VALUES ($1, $2, $3, coalesce($4, memdir_now_ns()), nextval('memdir_seq')) ON CONFLICT (store, path) DO NOTHING RETURNING modified_ns, seq"
            }
        };
        let row = self.with(|c| c.query_opt(sql, &[&self.name, &rel, &bytes, &ns]))?;
        let Some(row) = row else {
            return Err(Error::AlreadyExists {
                path: path.canonical(),
            });
        };
        let (modified, seq): (i64, i64) = (row.get(0), row.get(1));
        self.changed(&[(seq, rel)])?;
        Ok(file_meta(bytes.len() as i64, modified, seq).stamp)
    }

    /// Records changed paths for the watchers of other processes.
    fn changed(&self, changes: &[(i64, String)]) -> Result<()> {
        let seqs: Vec<i64> = changes.iter().map(|(s, _)| *s).collect();
        let paths: Vec<&str> = changes.iter().map(|(_, p)| p.as_str()).collect();
        self.with(|c| {
            c.execute(
                "INSERT INTO memdir_changes (store, seq, path) SELECT $1, s, p FROM unnest($2::bigint[], $3::text[]) AS u(s, p)",
                &[&self.name, &seqs, &paths],
            )?;
            if let Some(last) = seqs.iter().max()
                && last % 1024 == 0
            {
                c.execute(
                    "DELETE FROM memdir_changes WHERE store = $1 AND seq < $2",
                    &[&self.name, &(last - CHANGES_KEPT)],
                )?;
            }
            Ok(())
        })
    }

    /// Moves a memory or a folder to a free destination (never replaces).
    pub fn rename(&self, from: &MemPath, to: &MemPath) -> Result<()> {
        self.check_writable("renaming")?;
        let kind = self.entry_kind(from)?.ok_or_else(|| Error::NotFound {
            path: from.canonical(),
        })?;
        if to.starts_with(from) {
            return Err(Error::Move(MoveFault::IntoItself {
                from: from.canonical(),
                to: to.canonical(),
            }));
        }
        if self.entry_kind(to)?.is_some() {
            return Err(Error::AlreadyExists {
                path: to.canonical(),
            });
        }
        self.check_ancestors(to)?;
        let (from_rel, to_rel) = (from.rel(), to.rel());
        let moved: Vec<(String, String, i64)> = if kind == EntryKind::File {
            self.with(|c| {
                c.query(
                    "UPDATE memdir_files SET path = $3, seq = nextval('memdir_seq') WHERE store = $1 AND path = $2 RETURNING seq",
                    &[&self.name, &from_rel, &to_rel],
                )
            })?
            .iter()
            .map(|r| (from_rel.clone(), to_rel.clone(), r.get(0)))
            .collect()
        } else {
            let (lo, hi) = prefix_range(&from_rel);
            let cut = from_rel.chars().count() as i32 + 1;
            self.with(|c| {
                c.query(
                    "WITH old AS (SELECT path FROM memdir_files WHERE store = $1 AND path >= $2 AND path < $3) \
                     UPDATE memdir_files f SET path = $4 || substr(f.path, $5), seq = nextval('memdir_seq') \
                     FROM old WHERE f.store = $1 AND f.path = old.path RETURNING old.path, f.path, f.seq",
                    &[&self.name, &lo, &hi, &to_rel, &cut],
                )
            })?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
        };
        let mut changes = Vec::new();
        for (old, new, seq) in moved {
            changes.push((seq, old));
            changes.push((seq, new));
        }
        if !changes.is_empty() {
            self.changed(&changes)?;
        }
        Ok(())
    }

    /// Removes one memory.
    pub fn remove_file(&self, path: &MemPath) -> Result<()> {
        self.check_writable("deleting")?;
        let rel = path.rel();
        let removed = self.with(|c| {
            c.query_opt(
                "DELETE FROM memdir_files WHERE store = $1 AND path = $2 RETURNING nextval('memdir_seq')",
                &[&self.name, &rel],
            )
        })?;
        match removed {
            Some(row) => self.changed(&[(row.get(0), rel)]),
            None => Err(match self.entry_kind(path)? {
                Some(_) => Error::IsFolder {
                    path: path.canonical(),
                },
                None => Error::NotFound {
                    path: path.canonical(),
                },
            }),
        }
    }

    /// A folder exists while something is below it: removing an empty one is a no-op.
    pub fn remove_empty_dir(&self, path: &MemPath) -> Result<()> {
        self.check_writable("deleting")?;
        if self.has_children(&path.rel())? {
            return Err(Error::InvalidArgument(format!(
                "`{}` is not empty",
                path.canonical()
            )));
        }
        Ok(())
    }

    /// Every visible entry below folder `start` down to `max_depth` levels (`None` = all).
    pub fn walk(&self, start: &MemPath, max_depth: Option<usize>) -> Result<Vec<WalkEntry>> {
        match self.metadata(start)? {
            Some(EntryMeta {
                kind: EntryKind::Dir,
                ..
            }) => {}
            Some(_) => {
                return Err(Error::NotAFolder {
                    path: start.canonical(),
                });
            }
            None => {
                return Err(Error::NotFound {
                    path: start.canonical(),
                });
            }
        }
        let rel = start.rel();
        let (lo, hi) = prefix_range(&rel);
        let rows = self.with(|c| {
            c.query(
                "SELECT path, octet_length(content)::bigint, modified_ns, seq FROM memdir_files WHERE store = $1 AND path >= $2 AND path < $3",
                &[&self.name, &lo, &hi],
            )
        })?;
        let base = start.segments.len();
        let mut dirs: BTreeMap<Vec<String>, i64> = BTreeMap::new();
        let mut out = Vec::new();
        for row in rows {
            let path: String = row.get(0);
            let segments: Vec<String> = path.split('/').map(str::to_owned).collect();
            let below = &segments[base.min(segments.len())..];
            if below.is_empty() || !below.iter().all(|s| visible_name(s)) {
                continue;
            }
            let modified: i64 = row.get(2);
            let depth = below.len();
            for n in 1..depth {
                if max_depth.is_some_and(|d| n > d) {
                    break;
                }
                let dir = segments[..base + n].to_vec();
                let newest = dirs.entry(dir).or_insert(modified);
                *newest = (*newest).max(modified);
            }
            if max_depth.is_some_and(|d| depth > d) {
                continue;
            }
            let meta = file_meta(row.get(1), modified, row.get(3));
            out.push(WalkEntry {
                path: MemPath {
                    store: start.store,
                    store_name: start.store_name.clone(),
                    segments,
                },
                kind: EntryKind::File,
                size: meta.size,
                modified: meta.modified,
                stamp: Some(meta.stamp),
                depth,
            });
        }
        for (segments, newest) in dirs {
            let depth = segments.len() - base;
            out.push(WalkEntry {
                path: MemPath {
                    store: start.store,
                    store_name: start.store_name.clone(),
                    segments,
                },
                kind: EntryKind::Dir,
                size: 0,
                modified: time_of(newest),
                stamp: None,
                depth,
            });
        }
        Ok(out)
    }

    // ---- state files --------------------------------------------------------------------

    /// Replaces a whole state file (the caller holds the lock).
    pub fn state_write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        self.with(|c| {
            c.execute(
                "DELETE FROM memdir_state WHERE store = $1 AND name = $2",
                &[&self.name, &rel],
            )?;
            c.execute(
                "INSERT INTO memdir_state (store, name, off, data) VALUES ($1, $2, 0, $3)",
                &[&self.name, &rel, &bytes],
            )?;
            Ok(())
        })
    }

    /// Appends to a state file; returns its length after.
    pub fn state_append(&self, rel: &str, bytes: &[u8]) -> Result<u64> {
        self.with(|c| {
            c.query_one(
                "INSERT INTO memdir_state (store, name, off, data) SELECT $1, $2, \
                 coalesce((SELECT off + octet_length(data) FROM memdir_state WHERE store = $1 AND name = $2 ORDER BY off DESC LIMIT 1), 0), $3 \
                 RETURNING off + octet_length(data)",
                &[&self.name, &rel, &bytes],
            )
            .map(|r| r.get::<_, i64>(0) as u64)
        })
    }

    /// The size of a state file (0 if absent).
    pub fn state_len(&self, rel: &str) -> Result<u64> {
        self.with(|c| {
            c.query_one(
                "SELECT coalesce((SELECT off + octet_length(data) FROM memdir_state WHERE store = $1 AND name = $2 ORDER BY off DESC LIMIT 1), 0)::bigint",
                &[&self.name, &rel],
            )
            .map(|r| r.get::<_, i64>(0) as u64)
        })
    }

    /// Bytes of a state file from `offset` on.
    pub fn state_read_from(&self, rel: &str, offset: u64) -> Result<Vec<u8>> {
        let rows = self.with(|c| {
            c.query(
                "SELECT off, data FROM memdir_state WHERE store = $1 AND name = $2 \
                 AND off >= coalesce((SELECT max(off) FROM memdir_state WHERE store = $1 AND name = $2 AND off <= $3), 0) ORDER BY off",
                &[&self.name, &rel, &(offset as i64)],
            )
        })?;
        let mut out = Vec::new();
        for row in rows {
            let off = row.get::<_, i64>(0) as u64;
            let data: Vec<u8> = row.get(1);
            let skip = offset.saturating_sub(off) as usize;
            if skip < data.len() {
                out.extend_from_slice(&data[skip..]);
            }
        }
        Ok(out)
    }

    /// Cuts a state file to `len` bytes.
    pub fn state_truncate(&self, rel: &str, len: u64) -> Result<()> {
        let len = len as i64;
        self.with(|c| {
            c.execute(
                "DELETE FROM memdir_state WHERE store = $1 AND name = $2 AND off >= $3",
                &[&self.name, &rel, &len],
            )?;
            c.execute(
                "UPDATE memdir_state SET data = substring(data FROM 1 FOR ($3 - off)::int) WHERE store = $1 AND name = $2 AND off < $3 AND off + octet_length(data) > $3",
                &[&self.name, &rel, &len],
            )?;
            Ok(())
        })
    }

    // ---- change notices -----------------------------------------------------------------

    /// A watcher that reports the changes committed from now on (if the database cannot
    /// be asked now, its first drain reports that anything may have changed).
    pub fn watcher(&self) -> PgWatcher {
        PgWatcher {
            last: self.last_change().ok(),
        }
    }

    fn last_change(&self) -> Result<i64> {
        self.with(|c| {
            c.query_one(
                "SELECT coalesce(max(seq), 0) FROM memdir_changes WHERE store = $1",
                &[&self.name],
            )
            .map(|r| r.get::<_, i64>(0))
        })
    }

    /// What changed since the watcher's last drain.
    pub fn drain(&self, watcher: &mut PgWatcher, root: &MemPath) -> Changes {
        let mut changes = Changes::default();
        let Some(last) = watcher.last else {
            watcher.last = self.last_change().ok();
            changes.overflow = true;
            return changes;
        };
        let rows = self.with(|c| {
            c.query(
                "SELECT seq, path FROM memdir_changes WHERE store = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&self.name, &last, &(DRAIN_BUDGET + 1)],
            )
        });
        match rows {
            Ok(rows) if rows.len() as i64 <= DRAIN_BUDGET => {
                for row in rows {
                    watcher.last = Some(last.max(row.get(0)).max(watcher.last.unwrap_or(0)));
                    let rel: String = row.get(1);
                    // As a folder's watcher does: hidden names and `node_modules` are not
                    // listed or searched, so their changes are not the index's.
                    if !rel.split('/').all(visible_name) {
                        continue;
                    }
                    let p = root.with_rel(&rel);
                    if !changes.paths.contains(&p) {
                        changes.paths.push(p);
                    }
                }
            }
            Ok(_) => {
                changes.overflow = true;
                watcher.last = self.last_change().ok();
            }
            Err(e) => {
                tracing::warn!(store = %self.name, error = %e, "could not read the store's changes");
                changes.overflow = true;
                watcher.last = None;
            }
        }
        changes
    }
}

impl Drop for PgStore {
    /// A connection owns a small runtime of its own, which must not be dropped on a thread
    /// that runs async tasks (a server's last reference may go there): the pool, with its
    /// connections, is dropped on a thread of its own.
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let _ = std::thread::spawn(move || drop(pool)).join();
        }
    }
}

impl PgLock {
    /// Commits the transaction: the mutation and its history are stored, or neither.
    pub fn finish(mut self) -> Result<()> {
        self.done = true;
        let failed = self.held.failed.load(std::sync::atomic::Ordering::Relaxed);
        let outcome = {
            let mut conn = self.held.conn.lock().unwrap_or_else(|e| e.into_inner());
            if failed {
                let _ = conn.client.batch_execute("ROLLBACK");
                Err(Error::Database {
                    store: self.name.clone(),
                    reason: "a statement of the change failed, so nothing was stored".to_owned(),
                })
            } else {
                conn.client.batch_execute("COMMIT").map_err(|e| {
                    let reason = conn::describe(&e);
                    let store = self.name.clone();
                    // The server may have committed before the answer was lost.
                    if e.may_have_run() {
                        Error::Unconfirmed { store, reason }
                    } else {
                        Error::Database { store, reason }
                    }
                })
            }
        };
        self.release();
        outcome
    }

    /// Rolls the transaction back: nothing of the mutation is kept.
    pub fn abandon(mut self) {
        self.done = true;
        let _ = self
            .held
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .client
            .batch_execute("ROLLBACK");
        self.release();
    }

    fn release(&self) {
        self.store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.owner);
    }
}

impl Drop for PgLock {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let failed = self.held.failed.load(std::sync::atomic::Ordering::Relaxed);
        {
            let mut conn = self.held.conn.lock().unwrap_or_else(|e| e.into_inner());
            let sql = if failed { "ROLLBACK" } else { "COMMIT" };
            if let Err(e) = conn.client.batch_execute(sql) {
                tracing::error!(store = %self.name, error = %conn::describe(&e), "could not commit a change to the database");
            }
        }
        self.release();
    }
}

/// The bounds of the paths below folder `rel` (every path when `rel` is the root): paths
/// sort bytewise (`COLLATE "C"`), and `0` follows `/`.
fn prefix_range(rel: &str) -> (String, String) {
    if rel.is_empty() {
        (String::new(), "\u{10FFFF}".repeat(2))
    } else {
        (format!("{rel}/"), format!("{rel}0"))
    }
}

fn time_of(ns: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64)
}

fn file_meta(size: i64, modified_ns: i64, seq: i64) -> EntryMeta {
    EntryMeta {
        kind: EntryKind::File,
        size: size as u64,
        modified: time_of(modified_ns),
        stamp: Stamp {
            size: size as u64,
            mtime_ns: modified_ns,
            ino: seq as u64,
        },
    }
}

fn dir_meta(newest_ns: i64) -> EntryMeta {
    EntryMeta {
        kind: EntryKind::Dir,
        size: 0,
        modified: time_of(newest_ns),
        stamp: Stamp {
            size: 0,
            mtime_ns: newest_ns,
            ino: 0,
        },
    }
}

/// Whether taking the store lock waits for another holder.
#[derive(Clone, Copy)]
enum Waiting {
    /// Wait until the lock is free (within the lock time-out).
    UntilFree,
    /// Take it only if it is free right now.
    Never,
}
