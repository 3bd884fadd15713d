//! The memory operations behind the tools and the command line, independent of MCP. A
//! [`Memdir`] is their context: the stores and settings, each store's search index and
//! history head, the notices, and the path resolution every operation starts with
//! (layer 1). Each operation then works through a [`Store`] (layer 2) and returns plain
//! structs; `crate::mcp` and `crate::cli` render them.
//!
//! Layout: one file per operation, each taking the `Memdir` — a request type's `run(md)`
//! (`WriteRequest`, `RestoreRequest`, `EditRequest`, `ListRequest`, `SearchRequest`,
//! `HistoryRequest`) or a function `op(md, ..)`:
//! - `read`: `memory_read` and a memory's whole text;
//! - `write`: write and restore; `edit`: replace, insert, append; `rename`: moves;
//!   `delete`: files and folders; `mutation`: what the mutations share;
//! - `list`: listings and trees; `search`: search (matching and ranking are
//!   `crate::search`'s); `history`: versions, and changes made outside memdir;
//! - `check`: `memdir check`; `upkeep`: expired memories, writing `MEMORY.md`;
//!   `memory_md`: a store's `MEMORY.md` index; `archive`: export and import;
//!   `meaning`: search by meaning (the model, vectors in memory, the backfill);
//!   `feed`: changes for resource subscriptions;
//! - `record` and `sync`: the context's hold on each store's history (`crate::history`)
//!   and search index (`crate::search::fresh`); `notice`: what the operator hears of.

pub mod archive;
pub mod check;
pub mod delete;
mod edit;
mod feed;
mod history;
pub mod list;
pub mod meaning;
pub mod memory_md;
mod mutation;
mod notice;
pub mod read;
pub mod record;
mod rename;
mod search;
pub mod sync;
pub mod upkeep;
mod write;

use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::frontmatter::{self, Frontmatter};
use crate::path::{self, MemPath, Target};
use crate::store::{Store, StoreConfig};
use crate::text;

pub use crate::history::EXTERNAL;
pub use crate::store::IndexLocation;
pub use archive::ArchiveSummary;
pub use check::StoreCheck;
pub use delete::DeleteResult;
pub use edit::{EditOp, EditRequest, EditResult};
pub use feed::{Feed, FeedEvents};
pub use history::{HistoryRequest, HistoryResult, Version};
pub use list::{ListEntry, ListOrder, ListRequest, ListResult, Tree, TreeEntry};
pub use memory_md::{INDEX_FILE, MemoryIndex, encode_path};
pub use notice::{Level, Notice, Notices};
pub use read::{Freshness, ReadResult};
pub use search::{SearchHit, SearchRequest, SearchResult};
pub use sync::Progress;
pub use upkeep::Expired;
pub use write::{RestoreRequest, WriteRequest, WriteResult};

/// Limits and switches that apply to every store.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Largest memory, in bytes (default 100 KiB).
    pub max_file_bytes: u64,
    /// Largest tool result text, in bytes (default 64 KiB); larger results paginate.
    pub result_budget: usize,
    /// Skip the credential scan on writes.
    pub allow_secrets: bool,
    /// Where search indexes live (or none).
    pub index: IndexLocation,
    /// Record every mutation in the store's history.
    pub history: bool,
    /// How much history to keep.
    pub retention: crate::history::Retention,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_file_bytes: 102_400,
            result_budget: 64 * 1024,
            allow_secrets: false,
            index: IndexLocation::UserCache,
            history: true,
            retention: crate::history::Retention::default(),
        }
    }
}

/// The served stores and their settings.
#[derive(Debug)]
pub struct Memdir {
    stores: Vec<Store>,
    names: Vec<String>,
    pub settings: Settings,
    /// Each store's search index in this process.
    indexes: Vec<sync::StoreIndex>,
    /// What this process knows of each store's history log.
    heads: Vec<std::sync::Mutex<crate::history::Heads>>,
    /// What the operator should hear of (see `notice`).
    notices: Notices,
    /// Search by meaning, when it is on (see `meaning`).
    meaning: Option<meaning::Meaning>,
}

/// A file read and decoded, as several operations need it.
pub(crate) struct Current {
    pub text: String,
    pub sha256: String,
    pub modified: SystemTime,
    pub stamp: crate::store::Stamp,
}

impl Memdir {
    pub fn open(configs: &[StoreConfig], settings: Settings) -> Result<Memdir> {
        let mut stores = configs
            .iter()
            .map(Store::open)
            .collect::<Result<Vec<_>>>()?;
        for store in &mut stores {
            store.set_intents(settings.history);
        }
        let names = stores.iter().map(|s| s.name.clone()).collect();
        let memdir = Memdir {
            indexes: (settings
                .index
                .index_files(&stores, settings.history)
                .into_iter())
            .map(sync::StoreIndex::new)
            .collect(),
            heads: stores.iter().map(|_| Default::default()).collect(),
            stores,
            names,
            settings,
            notices: Notices::default(),
            meaning: None,
        };
        for store in &memdir.stores {
            memdir.notice_temps_removed(store, 0);
        }
        Ok(memdir)
    }

    /// What the operator should hear of: index rebuilds, history repairs, leftovers of
    /// crashed writes.
    pub fn notices(&self) -> &Notices {
        &self.notices
    }

    /// Tells of temp files of interrupted writes `store` removed beyond `before`.
    pub(crate) fn notice_temps_removed(&self, store: &Store, before: usize) {
        let removed = store.temps_removed().saturating_sub(before);
        if removed > 0 {
            self.notices.send(
                Level::Warning,
                format!(
                    "store /{}: removed {removed} temp file(s) left by an interrupted write (the memories they were for kept their old content)",
                    store.name
                ),
            );
        }
    }

    pub fn stores(&self) -> &[Store] {
        &self.stores
    }

    pub fn all_read_only(&self) -> bool {
        self.stores.iter().all(|s| s.read_only)
    }

    fn names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    pub(crate) fn target(&self, raw: &str) -> Result<Target> {
        path::parse(raw, &self.names())
    }

    /// The paths a raw path covers: the root of every store for the top level (`/`),
    /// else the one path it names.
    pub(crate) fn targets(&self, raw: &str) -> Result<Vec<MemPath>> {
        Ok(match self.target(raw)? {
            Target::AllStores => self
                .stores
                .iter()
                .enumerate()
                .map(|(i, s)| MemPath::root(i, &s.name))
                .collect(),
            Target::Path(p) => vec![p],
        })
    }

    pub(crate) fn path(&self, raw: &str) -> Result<MemPath> {
        path::parse_path(raw, &self.names())
    }

    pub(crate) fn store(&self, p: &MemPath) -> &Store {
        &self.stores[p.store]
    }

    /// Reads and decodes a memory; `Ok(None)` if nothing is there.
    pub(crate) fn current(&self, p: &MemPath) -> Result<Option<Current>> {
        Self::decode(p, self.store(p).read(p))
    }

    /// [`current`](Self::current) of several memories (of one store or several), read
    /// together where the store can (one query for a database).
    pub(crate) fn current_many(&self, paths: &[MemPath]) -> Vec<Result<Option<Current>>> {
        let mut out: Vec<Option<Result<Option<Current>>>> = paths.iter().map(|_| None).collect();
        for (i, store) in self.stores.iter().enumerate() {
            let (at, mine): (Vec<usize>, Vec<MemPath>) = paths
                .iter()
                .enumerate()
                .filter(|(_, p)| p.store == i)
                .map(|(n, p)| (n, p.clone()))
                .unzip();
            if mine.is_empty() {
                continue;
            }
            for ((n, p), read) in at.into_iter().zip(&mine).zip(store.read_many(&mine)) {
                out[n] = Some(Self::decode(p, read));
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    fn decode(p: &MemPath, read: Result<crate::store::FileData>) -> Result<Option<Current>> {
        match read {
            Ok(data) => {
                let sha256 = text::sha256_hex(&data.bytes);
                let text = String::from_utf8(data.bytes).map_err(|_| Error::NotUtf8 {
                    path: p.canonical(),
                })?;
                Ok(Some(Current {
                    text,
                    sha256,
                    modified: data.modified,
                    stamp: data.stamp,
                }))
            }
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Frontmatter of a memory's text, for list and search results.
    pub(crate) fn frontmatter(text: &str) -> Option<Frontmatter> {
        frontmatter::parse(text)
    }
}

/// A memory's expiry from its frontmatter, as results show it.
#[derive(Debug, Default)]
pub(crate) struct Expiry {
    /// RFC 3339 UTC; `None` without a valid `expires`.
    pub at: Option<String>,
    pub expired: bool,
}

impl Expiry {
    pub(crate) fn of(text: &str) -> Expiry {
        if !frontmatter::may_have(text, "expires") {
            return Expiry::default();
        }
        Self::of_frontmatter(frontmatter::parse(text).as_ref())
    }

    pub(crate) fn of_frontmatter(fm: Option<&Frontmatter>) -> Expiry {
        match fm.and_then(|f| f.expires().map(|secs| (f, secs))) {
            Some((f, secs)) => Expiry {
                at: Some(text::rfc3339_secs(secs)),
                expired: f.expired_at(text::now_secs()),
            },
            None => Expiry::default(),
        }
    }
}
