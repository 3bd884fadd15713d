//! `memdir check`: verifies each store for the people who look after it. Problems are
//! things no tool will fix by itself (a FIFO, a hard link, a symlink out of the store, a
//! name no path can spell, a damaged history log); notes are states memdir repairs or
//! records on its own (temp files of an interrupted write, a pending intent, files
//! changed in an editor since their last version, a stale search index).

use std::collections::HashMap;

use super::Memdir;
use crate::error::Error;
use crate::history;
use crate::path::MemPath;
use crate::search::index::Index;
use crate::store::{EntryKind, Store, hidden_name};

/// What `check` found in one store.
#[derive(Debug, Default)]
pub struct StoreCheck {
    pub store: String,
    pub files: usize,
    pub versions: usize,
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

/// At most this many paths are named per kind of finding; the rest are counted.
const NAMED: usize = 20;

/// Checks every store: its files, its history log, its temp files and its index.
pub fn check(md: &Memdir) -> Vec<StoreCheck> {
    (0..md.stores().len()).map(|i| check_store(md, i)).collect()
}

fn check_store(md: &Memdir, i: usize) -> StoreCheck {
    let store = &md.stores()[i];
    let mut c = StoreCheck {
        store: format!("/{}", store.name),
        ..StoreCheck::default()
    };
    let current = check_files(md, i, &mut c);
    if md.settings.history {
        check_history(store, &current, &mut c);
    }
    let removed = store.temps_removed();
    if removed > 0 {
        c.notes.push(format!(
            "removed {removed} temp file(s) left by an interrupted write (the memories they were for kept their old content)"
        ));
    }
    let left = if store.read_only {
        store.temps_left()
    } else {
        0
    };
    if left > 0 {
        c.notes.push(format!(
            "{left} temp file(s) in `.memdir/tmp`, left by an interrupted write (the memories they were for kept their old content) or of a write under way in another process; the store is read-only here, so they stay until memdir serves it read-write"
        ));
    }
    check_index(md, i, &current, &mut c);
    c
}

/// The files: what the tools refuse, and each visible file's content (its sha256 by
/// path relative to the store, returned for the history and index checks).
fn check_files(md: &Memdir, i: usize, c: &mut StoreCheck) -> HashMap<String, String> {
    let store = &md.stores()[i];
    let mut found: HashMap<&'static str, Vec<String>> = HashMap::new();
    let mut current = HashMap::new();
    let entries = match store.walk_everything(&MemPath::root(i, &store.name)) {
        Ok(entries) => entries,
        Err(e) => {
            c.problems.push(format!("cannot walk the store: {e}"));
            return current;
        }
    };
    // Names that are not UTF-8 are not in the walk (no path spells them): each folder
    // it found is read once more for them.
    let mut dirs = vec![MemPath::root(i, &store.name)];
    dirs.extend(
        entries
            .iter()
            .filter(|e| e.kind == EntryKind::Dir && !e.path.segments.iter().any(|s| hidden_name(s)))
            .map(|e| e.path.clone()),
    );
    for name in store.names_not_utf8(&dirs) {
        found
            .entry("unaddressable")
            .or_default()
            .push(printable(&name));
    }
    for e in entries {
        if e.path.segments.iter().any(|s| hidden_name(s)) {
            continue;
        }
        let shown = printable(&e.path.canonical());
        let mut note = |kind: &'static str| found.entry(kind).or_default().push(shown.clone());
        if !e
            .path
            .segments
            .iter()
            .all(|s| crate::path::addressable_name(s))
        {
            note("unaddressable");
            continue;
        }
        match e.kind {
            EntryKind::Special(kind) => note(kind),
            EntryKind::Dir => {}
            EntryKind::File | EntryKind::Symlink => match md.current(&e.path) {
                Ok(Some(cur)) => {
                    c.files += 1;
                    // Readable (its head is shown), but no tool can write it back whole.
                    if cur.text.len() as u64 > md.settings.max_file_bytes {
                        note("too large");
                    }
                    current.insert(e.path.rel(), cur.sha256);
                }
                Ok(None) | Err(Error::IsFolder { .. }) => {}
                Err(Error::Escape { .. }) => note("escape"),
                Err(Error::StateLink { .. }) => note("link into .memdir"),
                Err(Error::HardLinked { .. }) => note("hard link"),
                Err(Error::NotUtf8 { .. }) => note("not UTF-8"),
                Err(Error::TooLarge { .. }) => note("too large"),
                Err(Error::SpecialFile { kind, .. }) => note(kind),
                Err(e) => c.problems.push(format!("{shown}: {e}")),
            },
        }
    }
    for (kind, what) in REFUSED {
        if let Some(paths) = found.remove(kind) {
            c.problems.push(named(what, &paths));
        }
    }
    for (kind, paths) in found {
        c.problems
            .push(named(&format!("{kind} entries (refused)"), &paths));
    }
    current
}

/// The search index: a cache, so only notes.
fn check_index(md: &Memdir, i: usize, current: &HashMap<String, String>, c: &mut StoreCheck) {
    let Some(db) = md.index_path(i) else {
        return;
    };
    if !crate::search::index::exists(&db) {
        c.notes
            .push("no search index yet: the first search builds it".into());
        return;
    }
    match Index::open(&db).and_then(|index| index.stamps()) {
        Err(e) => c.notes.push(format!(
            "the search index cannot be read ({e}); it is rebuilt on the next search"
        )),
        Ok(stamps) => {
            let indexed: HashMap<String, _> = stamps.into_iter().collect();
            let stale = current
                .keys()
                .filter(|rel| !indexed.contains_key(*rel))
                .count()
                + indexed
                    .keys()
                    .filter(|rel| !current.contains_key(*rel))
                    .count();
            if stale > 0 {
                c.notes.push(format!(
                    "the search index is behind the files by {stale} file(s); the next search catches up"
                ));
            }
        }
    }
}

/// The kinds of entry the tools refuse, in the order `check` reports them.
const REFUSED: [(&str, &str); 8] = [
    (
        "escape",
        "symlinks leading out of the store (every tool refuses them)",
    ),
    (
        "hard link",
        "files with more than one hard link (refused: a hard link may alias a file outside the store)",
    ),
    ("FIFO", "FIFOs (refused without being opened)"),
    ("socket", "sockets (refused)"),
    ("device", "devices (refused)"),
    (
        "not UTF-8",
        "files that are not UTF-8 text (memdir stores text only)",
    ),
    ("too large", "files over the size limit"),
    (
        "unaddressable",
        "names no path can spell (control or format characters, look-alike slashes, decomposed Unicode): not listed, searched or readable; rename them",
    ),
];

/// The history log: records that are not, versions out of order or without their
/// content, a torn append, files changed outside memdir, an interrupted change's intent.
fn check_history(store: &Store, current: &HashMap<String, String>, c: &mut StoreCheck) {
    match history::verify(store) {
        Err(e) => c.problems.push(format!("cannot read the history log: {e}")),
        Ok(log) => {
            c.versions = log.records;
            log_findings(&log, c);
            let mut outside: Vec<String> = current
                .iter()
                .filter(|(rel, sha)| log.heads.get(*rel) != Some(sha))
                .map(|(rel, _)| printable(&format!("/{}/{rel}", store.name)))
                .collect();
            outside.sort();
            if !outside.is_empty() {
                c.notes.push(named(
                    "files changed or created outside memdir since their last version (recorded as `external` when next read or changed)",
                    &outside,
                ));
            }
        }
    }
    if !store.read_only {
        match store.pending_intent() {
            Ok(Some(true)) => c.notes.push(
                "an interrupted change left its intent in .memdir/lock; the next change completes the history from it".into(),
            ),
            Ok(_) => {}
            Err(e) => c.problems.push(format!("cannot take the store lock: {e}")),
        }
    }
}

/// What verifying the log found wrong with its lines and versions.
fn log_findings(log: &history::LogCheck, c: &mut StoreCheck) {
    let versions = |v: &[u64]| {
        v.iter()
            .take(NAMED)
            .map(|v| format!("v{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !log.malformed.is_empty() {
        c.problems.push(format!(
            "{} line(s) of .memdir/history/log.jsonl are not records (lines {}); they are skipped",
            log.malformed.len(),
            log.malformed
                .iter()
                .take(NAMED)
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !log.out_of_order.is_empty() {
        c.problems.push(format!(
            "version numbers out of order: {}",
            versions(&log.out_of_order)
        ));
    }
    if !log.missing_content.is_empty() {
        c.problems.push(format!(
            "{} version(s) whose content is missing from the log: {}",
            log.missing_content.len(),
            versions(&log.missing_content)
        ));
    }
    if !log.corrupt_content.is_empty() {
        c.problems.push(format!(
            "{} version(s) whose stored content does not match its sha256: {}",
            log.corrupt_content.len(),
            versions(&log.corrupt_content)
        ));
    }
    if log.torn_bytes > 0 {
        c.notes.push(format!(
            "the history log ends with a torn append of {} bytes; the next change cuts it",
            log.torn_bytes
        ));
    }
}

/// `what: a, b, c and N more`.
fn named(what: &str, paths: &[String]) -> String {
    let mut s = format!(
        "{} {what}: {}",
        paths.len(),
        paths[..paths.len().min(NAMED)].join(", ")
    );
    if paths.len() > NAMED {
        s.push_str(&format!(" and {} more", paths.len() - NAMED));
    }
    s
}

/// A path as it can be printed on one line: control characters escaped.
fn printable(path: &str) -> String {
    path.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{named, printable};

    #[test]
    fn findings_name_a_few_paths_and_count_the_rest() {
        let paths: Vec<String> = (0..25).map(|i| format!("/m/{i}")).collect();
        let s = named("things", &paths);
        assert!(s.starts_with("25 things: /m/0, /m/1"), "{s}");
        assert!(s.ends_with("and 5 more"), "{s}");
        assert_eq!(printable("/m/a\nb"), "/m/a\\nb");
    }
}
