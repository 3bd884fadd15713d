//! Search by meaning, as the memory layer runs it: the embedding model (loaded once at
//! start-up, shared), each store's vectors held in memory, the query's similarity to
//! every memory in a search's scope, and the backfill.
//!
//! The backfill is never on a write's path: one background thread owns the embedding
//! work. It is woken at start-up, after each mutation (once its reply is on its way: the
//! wake-up is a channel send) and by any search that finds memories without a vector
//! (which covers outside edits, found by the index's freshness). It asks each store's
//! index which contents lack a vector, takes those a database store already shares
//! (`memdir_vectors`: one machine's work serves every machine), embeds the rest from the
//! files in small batches, and hands the vectors to the index (and to the database).
//! A memory of more than one 128-token chunk keeps its chunks' vectors with their mean.
//! The last few queries' vectors are kept, so that a repeated query is not embedded again.

use std::collections::HashSet;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use super::{Level, Memdir, Progress};
use crate::embed::Model;
use crate::error::Result;
use crate::path::MemPath;
use crate::search::filter::Filter;
use crate::search::index::{IndexResult, Stored};
use crate::search::meaning::{Dense, RecentQueries, Script, VectorCache, pack};

/// Memories embedded per batch: the index is written (and a search may run) between two.
const BATCH: usize = 8;

/// Memories of a search's scope without a vector in memory above which the search reads
/// the index's list of contents with one, instead of looking each up. (The test
/// `a_scope_of_many_memories_counts_those_without_a_vector_exactly` holds more.)
const LOOKUPS_BEFORE_SCAN: usize = 64;

/// Queries whose vectors are kept (each 1.5 KB and its text).
const RECENT_QUERIES: usize = 64;

/// The longest query whose vector is kept: the word search's own bound. A longer one (a
/// request may carry a megabyte) is embedded each time rather than held.
const RECENT_QUERY_BYTES: usize = crate::search::query::MAX_QUERY_BYTES;

/// Search by meaning in one process.
pub(crate) struct Meaning {
    model: Arc<Model>,
    /// Each store's vectors in memory.
    caches: Vec<Mutex<VectorCache>>,
    /// Wakes the backfill thread, once it runs.
    wake: Mutex<Option<Sender<()>>>,
    /// The last queries' vectors.
    recent: Mutex<RecentQueries>,
}

impl std::fmt::Debug for Meaning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meaning")
            .field("model", &self.model.id())
            .finish_non_exhaustive()
    }
}

/// What a backfill did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backfilled {
    /// Contents embedded here.
    pub embedded: usize,
    /// Contents whose vector came from the database, computed by another machine.
    pub shared: usize,
    /// Contents that could not be embedded now (changed or gone while read).
    pub skipped: usize,
}

impl Memdir {
    /// Turns search by meaning on, with this model.
    pub fn with_meaning(mut self, model: Arc<Model>) -> Memdir {
        self.meaning = Some(Meaning {
            model,
            caches: self.stores().iter().map(|_| Mutex::default()).collect(),
            wake: Mutex::new(None),
            recent: Mutex::new(RecentQueries::new(RECENT_QUERIES)),
        });
        self
    }

    /// Whether search by meaning is on.
    pub fn meaning_on(&self) -> bool {
        self.meaning.is_some()
    }

    /// The query's vector, with meaning on.
    pub(crate) fn embed_query(&self, query: &str) -> Option<Vec<f32>> {
        let m = self.meaning.as_ref()?;
        let recent = || m.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = recent().get(query) {
            return Some(v.to_vec());
        }
        // Embedded without the lock held: searches of other queries do not wait.
        let v = m.model.embed_query(query);
        if query.len() <= RECENT_QUERY_BYTES {
            recent().put(query, v.as_slice().into());
        }
        Some(v)
    }

    /// Store `store`'s memories the filter admits, by similarity to `query`; `None`
    /// without meaning or without a usable index. Wakes the backfill if some lack a
    /// vector.
    pub(crate) fn dense(
        &self,
        store: usize,
        filter: &Filter,
        query: &[f32],
        progress: Progress,
    ) -> Result<Option<Dense>> {
        let Some(m) = &self.meaning else {
            return Ok(None);
        };
        let model = m.model.id();
        let dim = m.model.dim();
        let found = self.with_index(store, progress, |index| -> IndexResult<Dense> {
            let docs = index.scope(filter)?;
            let mut cache = m.caches[store].lock().unwrap_or_else(|e| e.into_inner());
            let mut scored = Vec::with_capacity(docs.len());
            let mut pending = 0;
            // Many memories without a vector in memory (a backfill under way, or the
            // first search): one read of which contents have one in the index spares a
            // lookup for each that has none (about 90 ms at 10,000 memories, against 23).
            let uncached = docs.iter().filter(|d| cache.get(&d.sha256).is_none());
            let present = if uncached.count() > LOOKUPS_BEFORE_SCAN {
                Some(index.vector_shas(model)?)
            } else {
                None
            };
            for d in docs {
                let (v, script) = match cache.get(&d.sha256) {
                    Some((v, script)) => (v.clone(), *script),
                    None if present.as_ref().is_some_and(|p| !p.contains(&d.sha256)) => {
                        pending += 1;
                        continue;
                    }
                    None => match index.vector(model, &d.sha256)? {
                        Some((packed, code)) => {
                            let script = Script::from_code(code);
                            cache.insert(d.sha256.clone(), &packed, dim, script);
                            let (v, _) = cache.get(&d.sha256).expect("just inserted");
                            (v.clone(), script)
                        }
                        None => {
                            pending += 1;
                            continue;
                        }
                    },
                };
                scored.push((d.rel, d.stamp, v.similarity(query), script));
            }
            Ok(Dense::new(scored, pending))
        })?;
        match found {
            None => Ok(None),
            Some(Ok(dense)) => {
                if dense.pending() > 0 {
                    self.wake_backfill();
                }
                Ok(Some(dense))
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "reading vectors from the index failed");
                Ok(None)
            }
        }
    }

    /// Starts the backfill thread (with meaning on) and wakes it once.
    pub fn start_backfill(self: &Arc<Self>) {
        let Some(m) = &self.meaning else { return };
        let (tx, rx) = mpsc::channel::<()>();
        let _ = tx.send(());
        *m.wake.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        let memdir = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("memdir-embed".into())
            .spawn(move || {
                lower_priority();
                let mut first = true;
                // Ends when the context (and with it the sender) is gone.
                while rx.recv().is_ok() {
                    // Wake-ups that came meanwhile are served by this pass.
                    while rx.try_recv().is_ok() {}
                    let Some(md) = memdir.upgrade() else { return };
                    if let Err(e) = md.backfill(&|_, _| {}) {
                        md.notices().send(
                            Level::Warning,
                            format!("computing vectors for search by meaning failed: {e}"),
                        );
                    }
                    // Once a run: vectors of contents no memory has any more.
                    if std::mem::take(&mut first) {
                        md.prune_vectors();
                    }
                }
            });
        if let Err(e) = spawned {
            self.notices().send(
                Level::Error,
                format!("cannot start the thread that computes vectors: {e}"),
            );
        }
    }

    /// Wakes the backfill thread, if it runs (a channel send: never waits).
    pub(crate) fn wake_backfill(&self) {
        if let Some(m) = &self.meaning
            && let Some(tx) = &*m.wake.lock().unwrap_or_else(|e| e.into_inner())
        {
            let _ = tx.send(());
        }
    }

    /// Computes the vectors every store's memories lack, reporting `(done, to do)`;
    /// what it did. Nothing without meaning.
    pub fn backfill(&self, progress: Progress) -> Result<Backfilled> {
        let mut total = Backfilled::default();
        if self.meaning.is_none() {
            return Ok(total);
        }
        for i in 0..self.stores().len() {
            let did = self.backfill_store(i, progress)?;
            total.embedded += did.embedded;
            total.shared += did.shared;
            total.skipped += did.skipped;
        }
        Ok(total)
    }

    fn backfill_store(&self, i: usize, progress: Progress) -> Result<Backfilled> {
        let Some(m) = &self.meaning else {
            return Ok(Backfilled::default());
        };
        let model = m.model.id();
        let store = &self.stores()[i];
        let mut did = Backfilled::default();
        // Contents that cannot be embedded in this pass (changed or gone while read).
        let mut skip: HashSet<String> = HashSet::new();
        loop {
            let lacking = self.with_index(i, &|_, _| {}, |index| index.lacking(model, 1 << 20))?;
            let rows: Vec<(String, String)> = match lacking {
                None => return Ok(did),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "asking the index for missing vectors failed");
                    return Ok(did);
                }
                Some(Ok((_, rows))) => rows
                    .into_iter()
                    .filter(|(_, sha)| !skip.contains(sha))
                    .collect(),
            };
            if rows.is_empty() {
                return Ok(did);
            }
            let mut rows = rows;
            if store.is_database() {
                let shas: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
                let shared = store.shared_vectors(model, &shas).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "reading shared vectors failed");
                    Vec::new()
                });
                // Anyone who may write the store may write this table: a vector that is
                // not a unit vector of the model's width (corrupt, or another engine's)
                // could rank its memory first or spoil every score of the fusion. Such a
                // memory is embedded here instead.
                let dim = m.model.dim();
                let total = shared.len();
                let shared: Vec<_> = shared
                    .into_iter()
                    .filter(|(_, v, _)| is_unit_vector(v, dim))
                    .collect();
                if shared.len() < total {
                    tracing::warn!(
                        store = %store.name,
                        rejected = total - shared.len(),
                        "shared vectors that are not unit vectors of the model's width were left out"
                    );
                }
                if !shared.is_empty() {
                    let have: HashSet<String> = shared.iter().map(|s| s.0.clone()).collect();
                    let shared = shared
                        .into_iter()
                        .map(|(sha256, vector, script)| Stored {
                            sha256,
                            vector,
                            script,
                        })
                        .collect();
                    self.store_vectors(i, shared, false);
                    did.shared += have.len();
                    rows.retain(|r| !have.contains(&r.1));
                }
            }
            let todo = rows.len();
            if todo > 0 {
                self.notices().send(
                    Level::Info,
                    format!(
                        "store /{}: embedding 0/{todo} memories for search by meaning",
                        store.name
                    ),
                );
            }
            let mut done = 0;
            let mut told = 0;
            for batch in rows.chunks(BATCH) {
                let paths: Vec<MemPath> = batch
                    .iter()
                    .map(|(rel, _)| MemPath::root(i, &store.name).with_rel(rel))
                    .collect();
                let mut texts = Vec::new();
                for ((_, sha), read) in batch.iter().zip(self.current_many(&paths)) {
                    match read {
                        Ok(Some(c)) if &c.sha256 == sha => texts.push((sha.clone(), c.text)),
                        _ => {
                            skip.insert(sha.clone());
                            did.skipped += 1;
                        }
                    }
                }
                let refs: Vec<&str> = texts.iter().map(|t| t.1.as_str()).collect();
                let passages = m.model.embed_passage_chunks(&refs);
                let vectors: Vec<Stored> = texts
                    .iter()
                    .zip(passages)
                    .map(|((sha256, text), p)| Stored {
                        sha256: sha256.clone(),
                        vector: pack(&p.mean, &p.chunks),
                        script: Script::of(text).code(),
                    })
                    .collect();
                did.embedded += vectors.len();
                self.store_vectors(i, vectors, store.is_database());
                done += batch.len();
                progress(done as u64, todo as u64);
                // Every tenth of the work (and the end) is told.
                if done * 10 / todo > told || done == todo {
                    told = done * 10 / todo;
                    self.notices().send(
                        Level::Info,
                        format!(
                            "store /{}: embedding {done}/{todo} memories for search by meaning",
                            store.name
                        ),
                    );
                }
            }
        }
    }

    /// Forgets the vectors (of this model) whose content no memory holds any more, in
    /// every store's index; how many.
    pub fn prune_vectors(&self) -> usize {
        let Some(m) = &self.meaning else { return 0 };
        let mut pruned = 0;
        for i in 0..self.stores().len() {
            match self.with_index(i, &|_, _| {}, |index| {
                index.write(|w| w.prune_vectors(m.model.id()))
            }) {
                Ok(Some(Ok(n))) => pruned += n,
                Ok(Some(Err(e))) => tracing::warn!(error = %e, "pruning vectors failed"),
                Err(e) => tracing::warn!(error = %e, "pruning vectors failed"),
                Ok(None) => {}
            }
        }
        pruned
    }

    /// Hands vectors to store `i`'s index and cache (and to its database, if `share`).
    fn store_vectors(&self, i: usize, vectors: Vec<Stored>, share: bool) {
        let Some(m) = &self.meaning else { return };
        let model = m.model.id();
        if share {
            let shared: Vec<_> = vectors
                .iter()
                .map(|v| (v.sha256.clone(), v.vector.clone(), v.script))
                .collect();
            if let Err(e) = self.stores()[i].share_vectors(model, &shared) {
                tracing::warn!(error = %e, "sharing vectors through the database failed");
            }
        }
        let written = self.with_index(i, &|_, _| {}, |index| {
            index.write(|w| w.put_vectors(model, &vectors))
        });
        match written {
            Ok(Some(Err(e))) => tracing::warn!(error = %e, "storing vectors in the index failed"),
            Err(e) => tracing::warn!(error = %e, "storing vectors in the index failed"),
            _ => {}
        }
        let dim = m.model.dim();
        let mut cache = m.caches[i].lock().unwrap_or_else(|e| e.into_inner());
        for v in vectors {
            cache.insert(v.sha256, &v.vector, dim, Script::from_code(v.script));
        }
    }
}

/// How many nice steps the backfill thread runs below the server (10 below a server at
/// nice 0): a busy core shares out about nine parts to tool calls for one to embedding.
/// The lowest priority (19, one part in 70) let a steady load stop the backfill outright
/// (docs/decisions/hybrid-search.md, "Backfill").
#[cfg(target_os = "linux")]
const BACKFILL_NICE_STEPS: i32 = 10;

/// Gives the calling thread (the backfill) a lower CPU priority than the server's, so that
/// embedding, which keeps a core busy for minutes, yields to tool calls yet still goes on
/// when every core is busy. Relative to the server's own nice value, never above it, at
/// most 19. On Linux a thread has a nice value of its own; elsewhere the thread keeps its
/// priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let lowered = getpriority_process(None).and_then(|now| {
            let target = (now + BACKFILL_NICE_STEPS).min(19);
            if target > now {
                setpriority_process(None, target)
            } else {
                Ok(())
            }
        });
        if let Err(e) = lowered {
            tracing::debug!(error = %e, "could not lower the backfill thread's priority");
        }
    }
}

/// The most runs of a memory's vectors a database may hand over: its mean and the chunks
/// of the largest memory (1 MiB at a token in about 2 bytes, 128 tokens a chunk, is some
/// 4,000): more is not this model's work, and would make every search slower.
const MAX_RUNS: usize = 4_097;

/// Whether `v` can be a memory's vectors under the model ([`pack`]): one or more runs of
/// `dim` finite numbers, each of length 1 (as every vector it makes is normalised; the
/// tolerance covers another machine's rounding), never two runs (a memory of several
/// chunks has the mean and at least two chunks).
fn is_unit_vector(v: &[f32], dim: usize) -> bool {
    dim > 0
        && !v.is_empty()
        && v.len() <= MAX_RUNS * dim
        && v.len().is_multiple_of(dim)
        && v.len() != 2 * dim
        && v.iter().all(|x| x.is_finite())
        && v.chunks_exact(dim)
            .all(|c| (c.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>() - 1.0).abs() < 1e-3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a database may hand over as a memory's vectors: unit runs of the model's
    /// width, one or three and more (the mean and two chunks at least), and never more
    /// than the largest memory's chunks could make.
    #[test]
    fn shared_vectors_are_whole_unit_runs_within_bounds() {
        let dim = 4;
        let run = [0.5f32, 0.5, 0.5, 0.5];
        let runs = |n: usize| run.repeat(n);
        assert!(is_unit_vector(&runs(1), dim));
        assert!(!is_unit_vector(&runs(2), dim), "a mean and one chunk");
        assert!(is_unit_vector(&runs(3), dim));
        assert!(is_unit_vector(&runs(MAX_RUNS), dim));
        assert!(!is_unit_vector(&runs(MAX_RUNS + 1), dim), "too many runs");
        assert!(!is_unit_vector(&[], dim));
        assert!(!is_unit_vector(&run[..3], dim), "a cut run");
        assert!(!is_unit_vector(&[1.0, 0.0, 0.0, f32::NAN], dim));
        assert!(
            !is_unit_vector(&[2.0, 0.0, 0.0, 0.0], dim),
            "not of length 1"
        );
        assert!(!is_unit_vector(&runs(1), 0));
    }
}
