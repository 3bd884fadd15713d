//! `memory_history`: the versions of a memory or of everything under a folder, newest
//! first, and the content of one version (read and paged by `crate::history::versions`).
//! Reading a single memory's history first notices (and records, as `external`) a change
//! made to it outside memdir; so does the search index when it finds files changed
//! ([`Memdir::notice_external`]).
//!
//! Only settled content is recorded: a file changed outside memdir is recorded once it
//! has been left alone for [`SETTLE`] (an editor or a script rewriting it in place
//! truncates it, then writes, and the states in between are not versions). Whoever
//! notices a change waits for that, and the bytes are checked again under the store lock
//! (see docs/decisions/index-freshness.md).

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use super::{Current, Memdir};
use crate::error::{Error, Result};
use crate::history::versions::{self, Filter};
use crate::history::{self, Op, Recorder};
use crate::path::MemPath;
use crate::search::fresh::Found;
use crate::store::EntryKind;

/// How long a file changed outside memdir must be left unchanged before its content
/// counts as settled, and is recorded.
const SETTLE: Duration = Duration::from_millis(200);

/// The longest wait for files to settle: one written on without such a pause is
/// recorded as it is then.
const SETTLE_AT_MOST: Duration = Duration::from_secs(1);

pub use crate::history::versions::{HistoryRequest, HistoryResult, Version};

/// A path the history knows (or not), and what its latest version did and held.
type Candidate = (String, Option<(Op, String)>);

impl Memdir {
    /// Records, as `external`, the changes among `rels` (files of store `i` that its
    /// index found changed) that the history does not know: a person's edit is kept as
    /// soon as any process notices it — by its watcher or at its first reconcile — not
    /// only at the next mutation of that file. Most changes are memdir's own writes,
    /// which the history already holds: those are told apart without the store lock,
    /// which is taken only when some differ, and everything is checked again under it (a
    /// write another memdir process is making is then either recorded or not begun).
    pub(crate) fn notice_external(&self, i: usize, rels: Vec<String>, found: Found) {
        let store = &self.stores()[i];
        // In a database every change comes through memdir, recorded as it is made.
        if !self.settings.history || store.read_only || store.is_database() || rels.is_empty() {
            return;
        }
        let root = MemPath::root(i, &store.name);
        if let Found::FirstSync { .. } = found {
            // What this process knows of the history may be old, or not read yet: bring it
            // up to date (taking the lock briefly) before comparing with it.
            if let Err(e) = self.recorder(&root) {
                tracing::warn!(store = %store.name, error = %e, "could not record changes made outside memdir");
                return;
            }
        }
        // A rebuilt index finds every file changed: only those the history knows are
        // compared with it (the others are recorded at their first mutation).
        let known_only = matches!(found, Found::FirstSync { rebuilt: true });
        let unknown_among = |rels: Vec<String>| -> Vec<String> {
            external_candidates(self, i, rels, known_only)
                .into_iter()
                .filter(|(rel, head)| {
                    self.current(&root.with_rel(rel))
                        .is_ok_and(|current| unknown_state(head.as_ref(), current.as_ref()))
                })
                .map(|(rel, _)| rel)
                .collect()
        };
        let mut unknown = unknown_among(rels);
        let paths = |rels: &[String]| -> Vec<MemPath> {
            rels.iter().map(|rel| root.with_rel(rel)).collect()
        };
        if !matches!(found, Found::FirstSync { .. }) && unsettled(self, &paths(&unknown)).is_some()
        {
            // Perhaps another memdir process's write, whose record this process has not
            // read yet: read the log (under the lock) before waiting for anything.
            if let Err(e) = self.recorder(&root) {
                tracing::warn!(store = %store.name, error = %e, "could not record changes made outside memdir");
                return;
            }
            unknown = unknown_among(unknown);
        }
        if unknown.is_empty() {
            return;
        }
        settle(self, &paths(&unknown));
        match record_external(self, &root, &unknown) {
            Ok(()) => {
                tracing::info!(store = %store.name, files = unknown.len(), "recorded changes made outside memdir")
            }
            Err(e) => {
                tracing::warn!(store = %store.name, error = %e, "could not record changes made outside memdir")
            }
        }
    }
}

impl HistoryRequest<'_> {
    pub fn run(&self, md: &Memdir) -> Result<HistoryResult> {
        let filter = Filter::of(self)?;
        let scopes = md.targets(self.path.unwrap_or("/"))?;
        for scope in &scopes {
            super::mutation::folder_form_fits(md, self.path.unwrap_or("/"), scope)?;
        }
        if let Some(version) = self.version {
            let [scope] = scopes.as_slice() else {
                return Err(Error::InvalidArgument(
                    "with `version`, name the store (or a path in it), e.g. `/memories/`".into(),
                ));
            };
            return one_version(md, scope, version);
        }
        let before = versions::parse_cursor(self.cursor)?;
        let mut out = Vec::new();
        for scope in &scopes {
            if md.settings.history && !md.store(scope).read_only {
                if scope.is_root() {
                    // Taking the lock completes the history of an interrupted mutation.
                    drop(md.recorder(scope)?);
                } else {
                    notice(md, scope)?;
                }
            }
            let records = history::records(md.store(scope))?;
            out.extend(versions::in_scope(scope, records, before, &filter));
        }
        Ok(versions::page(out, self.limit, md.settings.result_budget))
    }
}

fn one_version(md: &Memdir, scope: &MemPath, version: u64) -> Result<HistoryResult> {
    let store = md.store(scope);
    let records = history::records(store)?;
    let record = records
        .iter()
        .find(|r| r.version == version)
        .cloned()
        .ok_or_else(|| {
            Error::InvalidArgument(format!("/{} has no version {version}", store.name))
        })?;
    // A path narrower than the store names the memory (followed back through its
    // renames, as its history is) or the folder the version must be of: another
    // memory's version would answer another question.
    if !scope.is_root()
        && !versions::in_scope(scope, records, None, &Filter::default())
            .iter()
            .any(|(_, v)| v.version == version)
    {
        return Err(Error::InvalidArgument(format!(
            "version {version} is not in the history of `{}` (it is of `/{}/{}`): give that path, or the store `/{}/`",
            scope.canonical(),
            store.name,
            record.path,
            store.name
        )));
    }
    let content = if record.redacted {
        None
    } else {
        md.history_content(scope.store, &record.sha256)?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    Ok(versions::with_content(
        versions::shown(scope, record),
        content,
        md.settings.result_budget,
    ))
}

/// The visible paths among `rels` to compare with store `i`'s history, each with its
/// latest version there. `known_only` (after a rebuild): only paths the history knows,
/// and with them the memories it holds that the walk did not find (gone).
fn external_candidates(
    md: &Memdir,
    i: usize,
    mut rels: Vec<String>,
    known_only: bool,
) -> Vec<Candidate> {
    let heads = md.heads[i].lock().unwrap_or_else(|e| e.into_inner());
    if known_only {
        let found: HashSet<&str> = rels.iter().map(String::as_str).collect();
        let gone: Vec<String> = heads
            .live_paths()
            .filter(|rel| !found.contains(rel))
            .map(str::to_owned)
            .collect();
        rels.extend(gone);
    }
    rels.into_iter()
        .filter(|rel| !rel.split('/').any(crate::store::hidden_name))
        .filter_map(|rel| {
            let head = heads.head(&rel).map(|h| (h.op, h.sha256.clone()));
            (!known_only || head.is_some()).then_some((rel, head))
        })
        .collect()
}

/// Whether `current` is a state the history does not know, its latest version being
/// `head` (what it did, and the content's sha256).
fn unknown_state(head: Option<&(Op, String)>, current: Option<&Current>) -> bool {
    match (head, current) {
        (Some((op, sha)), Some(c)) => *op == Op::Deleted || *sha != c.sha256,
        (Some((op, _)), None) => *op != Op::Deleted,
        (None, Some(_)) => true,
        (None, None) => false,
    }
}

/// Waits until each file among `paths` has been left unchanged for [`SETTLE`], for at
/// most [`SETTLE_AT_MOST`]. Nothing outside memdir takes the store lock, so a file being
/// rewritten in place can only be told from a finished one by time.
fn settle(md: &Memdir, paths: &[MemPath]) {
    let give_up = Instant::now() + SETTLE_AT_MOST;
    loop {
        let Some(wait) = unsettled(md, paths) else {
            return;
        };
        let now = Instant::now();
        if now >= give_up {
            return;
        }
        std::thread::sleep(wait.min(give_up - now));
    }
}

/// How much longer the files among `paths` must stay unchanged to be settled; `None` if
/// they are.
fn unsettled(md: &Memdir, paths: &[MemPath]) -> Option<Duration> {
    paths
        .iter()
        .filter_map(|p| match md.store(p).metadata(p) {
            Ok(Some(m)) if m.kind == EntryKind::File => unsettled_for(m.stamp.mtime_ns),
            _ => None,
        })
        .max()
}

/// How much longer a file last modified at `mtime_ns` (since the epoch) must stay
/// unchanged to be settled; `None` if it is. A modification time in the future was set
/// by hand, not by a write in progress.
fn unsettled_for(mtime_ns: i64) -> Option<Duration> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?;
    let age = i128::try_from(now.as_nanos()).ok()? - i128::from(mtime_ns);
    let age = Duration::from_nanos(u64::try_from(age).ok()?);
    SETTLE.checked_sub(age).filter(|left| !left.is_zero())
}

/// Records the states of `rels` (under `root`'s store) as `external` versions, each
/// read again under the lock: the state may have changed meanwhile.
fn record_external(md: &Memdir, root: &MemPath, rels: &[String]) -> Result<()> {
    let mut rec = md.recorder(root)?;
    for rel in rels {
        note_now(md, &mut rec, &root.with_rel(rel))?;
    }
    rec.begin()?;
    rec.commit()?;
    Ok(())
}

/// Records, as `external`, a state of memory `p` that its history does not know.
fn notice(md: &Memdir, p: &MemPath) -> Result<()> {
    // Nothing to record where the path cannot be read as a memory (a folder, a special
    // file, a read error), or where nothing is and something other than nothing was.
    let Ok(current) = md.current(p) else {
        return Ok(());
    };
    if current.is_none() && !matches!(md.store(p).entry_kind(p), Ok(None)) {
        return Ok(());
    }
    let unknown = || {
        let head = md.heads[p.store]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .head(&p.rel())
            .map(|h| (h.op, h.sha256.clone()));
        unknown_state(head.as_ref(), current.as_ref())
    };
    let one = std::slice::from_ref(p);
    if unknown() && unsettled(md, one).is_some() {
        // Perhaps another memdir process's write: read the log (under the lock) first.
        drop(md.recorder(p)?);
        if unknown() {
            settle(md, one);
        }
    }
    let mut rec = md.recorder(p)?;
    // Read again under the lock: the state may have changed while we waited.
    note_now(md, &mut rec, p)?;
    rec.begin()?;
    rec.commit()?;
    Ok(())
}

/// Notes the state of memory `p` as it is now (nothing, if it cannot be read) in `rec`,
/// unless it changed again since it settled: it is being written, and that write's
/// change is noticed (and recorded once settled) by the next look.
fn note_now(md: &Memdir, rec: &mut Recorder, p: &MemPath) -> Result<()> {
    let current = md.current(p).ok().flatten();
    if let Some(c) = &current
        && unsettled_for(c.stamp.mtime_ns).is_some()
    {
        return Ok(());
    }
    rec.note_current(
        &p.rel(),
        current
            .as_ref()
            .map(|c| (c.sha256.as_str(), c.text.as_bytes())),
    )
}
