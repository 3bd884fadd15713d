//! A model-based property test: random sequences of tool calls run against the real binary
//! and, side by side, against a model of the store small enough to be obviously right
//! (files, folders and the version log as plain maps). After every step both must agree on
//! success or failure, on every hash, size and version returned, and on the whole tree.
//!
//! Deterministic: the seed is fixed. `MEMDIR_MODEL_CASES` (or `PROPTEST_CASES`),
//! `MEMDIR_MODEL_STEPS` and `MEMDIR_MODEL_SEED` make longer or different runs. A failure
//! is shrunk to a short sequence and printed with the exact tool calls that reproduce it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use common::{Outcome, Sandbox, Server, sha256_hex};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestError, TestRunner};
use serde_json::{Value, json};

/// Few paths, so that writes collide, renames land on taken paths and restores find their
/// path occupied. `notes/deep` and `deep` are the folders that folder renames swap, which
/// is why `deep/e.md` exists.
const FILES: [&str; 7] = [
    "a.md",
    "b.md",
    "x.md",
    "notes/c.md",
    "notes/d.md",
    "notes/deep/e.md",
    "deep/e.md",
];
const FOLDERS: [&str; 3] = ["notes", "notes/deep", "deep"];

/// What contents are made of and what searches look for. `数据` is inside `数据库` and
/// `库` ends it, so CJK substring matches are exercised; words written without a separator
/// (`rusttokio`, `数据库索引`) check that ASCII and Cyrillic words match only whole.
const WORDS: [&str; 11] = [
    "rust",
    "tokio",
    "cargo",
    "memo",
    "note",
    "память",
    "агент",
    "数据库",
    "数据",
    "索引",
    "库",
];

const STEPS: u64 = 60;
const CASES: u64 = 32;
const SEED: u64 = 0x6d65_6d64_6972;

fn canon(rel: &str) -> String {
    format!("/memories/{rel}")
}

fn sha(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

/// Lines as memdir counts them: a final newline ends the last line.
fn line_count(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

/// Frontmatter blocks that contents may start with: an expiry long past, one far ahead.
const EXPIRED: &str = "---\nexpires: 2020-01-01\n---\n";
const LIVE: &str = "---\nexpires: 2999-01-01\n---\n";

/// Whether a memory has expired, from the README: a frontmatter block (`---` lines) that
/// is YAML holding `expires` with a past date. Contents are made of words without `:`, so
/// a non-empty line of the block without one makes it no YAML mapping (not frontmatter);
/// and edits only ever add words, so no date but the two written is ever valid.
fn expired(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("---\n") else {
        return false;
    };
    let mut past = false;
    for line in rest.split_inclusive('\n') {
        let line = line.trim_end();
        if line == "---" {
            return past;
        }
        if line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return false;
        };
        if key == "expires" {
            past = value.trim() == "2020-01-01";
        }
    }
    false
}

fn is_han(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}

/// Whether searching for `word` must find `text`. Written from the README, not from the
/// tokenizer: Unicode words match whole and case-insensitively; a CJK word (every CJK
/// word of `WORDS` is Han) matches as a substring, since runs are cut into bigrams.
fn mentions(text: &str, word: &str) -> bool {
    let word = word.to_lowercase();
    if word.chars().all(is_han) {
        return text.contains(&word);
    }
    text.split(|c: char| !(c.is_alphanumeric() || c == '_') || is_han(c))
        .any(|w| w.to_lowercase() == word)
}

/// Whether a search for `word` must find `text` in its relaxed stage only, from the
/// README: a CJK word of three or more characters is also looked for as each two
/// characters of it, after every memory that holds it whole.
fn mentions_a_piece(text: &str, word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    chars.len() >= 3
        && chars.iter().all(|&c| is_han(c))
        && !text.contains(word)
        && chars
            .windows(2)
            .any(|w| text.contains(&w.iter().collect::<String>()))
}

// ---------------------------------------------------------------------------------------
// The operations and how they are generated. Choices that depend on the state (which
// version to restore, which text to replace, which line to insert after) are drawn as an
// `Index` and resolved against the model when the step runs, so shrinking stays valid.

/// The `expected_sha256` a step sends: none, the current one (in either case; for a
/// missing file, some hash), or a stale one.
#[derive(Debug, Clone, Copy)]
enum Expect {
    None,
    Current,
    CurrentUpper,
    Stale,
}

/// A file path: any of `FILES`, or one of the files that exist at that step (most
/// operations on a missing file are refused early and would exercise little).
#[derive(Debug, Clone)]
enum Pick {
    Any(usize),
    Existing(Index),
}

#[derive(Debug, Clone)]
enum Old {
    Word(String),
    /// Up to 8 characters of the current content, from anywhere (may span lines).
    Slice(Index, Index),
}

#[derive(Debug, Clone)]
enum Move {
    File(Pick, usize),
    /// `Some(true)`: `notes/deep` → `deep`; `Some(false)`: back; `None`: whichever of the
    /// two exists moves to the other.
    Folder(Option<bool>),
}

#[derive(Debug, Clone)]
enum Gone {
    File(Pick),
    /// A folder of `FOLDERS`, with or without a trailing slash.
    Folder(usize, bool),
}

#[derive(Debug, Clone)]
enum Op {
    Write {
        path: Pick,
        content: String,
        if_absent: bool,
        expect: Expect,
    },
    /// A write of the content the file holds at that step (empty for a missing file): a
    /// retry whose first reply was lost, or a racer that computed the same change. With
    /// a stale sha256 or `if_absent` it must fail all the same.
    Rewrite {
        path: Pick,
        if_absent: bool,
        expect: Expect,
    },
    Replace {
        path: Pick,
        old: Old,
        new: String,
        all: bool,
        expect: Expect,
    },
    /// `None` inserts after line -1 (always refused).
    Insert {
        path: Pick,
        after: Option<Index>,
        text: String,
        expect: Expect,
    },
    Append {
        path: Pick,
        text: String,
        expect: Expect,
    },
    Rename {
        what: Move,
        expect: Expect,
    },
    Delete {
        what: Gone,
        expect: Expect,
    },
    /// One of the versions so far (`None`: the one after the last, which does not exist
    /// yet), at its own path (`at` `None`) or elsewhere. `if_absent` is modelled as for a
    /// write of that content: the README lists it for `memory_write` without exempting
    /// `restore_version`, and "create only" must never overwrite.
    Restore {
        version: Option<Index>,
        at: Option<Pick>,
        if_absent: bool,
        expect: Expect,
    },
    Read {
        path: Pick,
    },
    /// `word`, or (with `mentioned`) a word that some file mentions at that step, so that
    /// searches find something as often as not; expired memories too with `expired`.
    Search {
        word: String,
        mentioned: Option<Index>,
        expired: bool,
    },
    /// A new server process on the same store (and index): what it finds on disk and in
    /// the history must be what the previous one left.
    Restart,
}

impl Op {
    fn name(&self) -> &'static str {
        match self {
            Op::Write {
                if_absent: true, ..
            } => "write if_absent",
            Op::Write { .. } => "write",
            Op::Rewrite {
                if_absent: true, ..
            } => "rewrite if_absent",
            Op::Rewrite { .. } => "rewrite",
            Op::Replace { all: true, .. } => "replace_all",
            Op::Replace { .. } => "replace",
            Op::Insert { .. } => "insert",
            Op::Append { .. } => "append",
            Op::Rename {
                what: Move::File(..),
                ..
            } => "rename file",
            Op::Rename { .. } => "rename folder",
            Op::Delete {
                what: Gone::File(_),
                ..
            } => "delete file",
            Op::Delete { .. } => "delete folder",
            Op::Restore {
                if_absent: true, ..
            } => "restore if_absent",
            Op::Restore { .. } => "restore",
            Op::Read { .. } => "read",
            Op::Search { .. } => "search",
            Op::Restart => "restart",
        }
    }
}

fn cased(word: &str, case: u8) -> String {
    match case {
        0 => word.to_owned(),
        1 => {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
        _ => word.to_uppercase(),
    }
}

fn word() -> impl Strategy<Value = String> {
    (0..WORDS.len(), 0..3u8).prop_map(|(i, case)| cased(WORDS[i], case))
}

/// Words joined by a separator; the empty separator glues words into new tokens.
fn line() -> impl Strategy<Value = String> {
    (
        vec(word(), 0..4),
        prop::sample::select(vec![" ", " ", ", ", ""]),
    )
        .prop_map(|(words, sep)| words.join(sep))
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        6 => (
            vec(line(), 1..4),
            any::<bool>(),
            prop::sample::select(vec!["", "", "", "", EXPIRED, LIVE]),
        )
            .prop_map(|(lines, newline, front)| {
                let mut text = front.to_owned() + &lines.join("\n");
                if newline {
                    text.push('\n');
                }
                text
            }),
    ]
}

fn any_file() -> impl Strategy<Value = usize> {
    0..FILES.len()
}

fn file() -> impl Strategy<Value = Pick> {
    prop_oneof![
        1 => any_file().prop_map(Pick::Any),
        2 => any::<Index>().prop_map(Pick::Existing),
    ]
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![
        6 => Just(Expect::None),
        2 => Just(Expect::Current),
        1 => Just(Expect::CurrentUpper),
        1 => Just(Expect::Stale),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (
            prop_oneof![
                2 => any_file().prop_map(Pick::Any),
                1 => any::<Index>().prop_map(Pick::Existing),
            ],
            text(),
            prop::bool::weighted(0.25),
            expect(),
        )
            .prop_map(|(path, content, if_absent, expect)| Op::Write {
                path,
                content,
                if_absent,
                expect,
            }),
        2 => (
            file(),
            prop::bool::weighted(0.25),
            prop_oneof![
                2 => Just(Expect::None),
                1 => Just(Expect::Current),
                2 => Just(Expect::Stale),
            ],
        )
            .prop_map(|(path, if_absent, expect)| Op::Rewrite { path, if_absent, expect }),
        4 => (
            file(),
            prop_oneof![
                word().prop_map(Old::Word),
                (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Old::Slice(a, b)),
            ],
            line(),
            prop::bool::weighted(0.2),
            expect(),
        )
            .prop_map(|(path, old, new, all, expect)| Op::Replace { path, old, new, all, expect }),
        2 => (file(), prop::option::weighted(0.9, any::<Index>()), text(), expect())
            .prop_map(|(path, after, text, expect)| Op::Insert { path, after, text, expect }),
        2 => (file(), text(), expect())
            .prop_map(|(path, text, expect)| Op::Append { path, text, expect }),
        4 => (
            prop_oneof![
                3 => (file(), any_file()).prop_map(|(a, b)| Move::File(a, b)),
                1 => prop::option::of(any::<bool>()).prop_map(Move::Folder),
            ],
            expect(),
        )
            .prop_map(|(what, expect)| Op::Rename { what, expect }),
        3 => (
            prop_oneof![
                2 => file().prop_map(Gone::File),
                1 => (0..FOLDERS.len(), any::<bool>()).prop_map(|(i, s)| Gone::Folder(i, s)),
            ],
            expect(),
        )
            .prop_map(|(what, expect)| Op::Delete { what, expect }),
        3 => (
            prop::option::weighted(0.95, any::<Index>()),
            prop::option::weighted(0.3, file()),
            prop::bool::weighted(0.2),
            expect(),
        )
            .prop_map(|(version, at, if_absent, expect)| Op::Restore {
                version,
                at,
                if_absent,
                expect,
            }),
        2 => file().prop_map(|path| Op::Read { path }),
        3 => (word(), prop::option::of(any::<Index>()), prop::bool::weighted(0.3))
            .prop_map(|(word, mentioned, expired)| Op::Search { word, mentioned, expired }),
        1 => Just(Op::Restart),
    ]
}

// ---------------------------------------------------------------------------------------
// The model.

/// One version: what the log says happened, with the content the version holds.
#[derive(Debug, Clone)]
struct Rec {
    op: &'static str,
    path: String,
    from: Option<String>,
    content: String,
}

/// Why the model expects a call to fail, and what the error text must then contain.
#[derive(Debug)]
enum Why {
    Missing,
    /// The current hash, and whether the memory already holds exactly the content a
    /// write sent (the error must say so then, and only then).
    Stale(String, bool),
    Occupied(String, bool),
    Taken,
    SamePath,
    FolderSha,
    EmptyOld,
    NoMatch,
    NotUnique,
    BadLine(usize),
    NoVersion(u64),
    /// `if_absent` and `expected_sha256` together.
    Contradiction,
    EmptyAppend,
}

impl Why {
    fn name(&self) -> &'static str {
        match self {
            Why::Missing => "missing",
            Why::Stale(_, false) => "stale sha",
            Why::Stale(_, true) => "stale sha, content already there",
            Why::Occupied(_, false) => "occupied",
            Why::Occupied(_, true) => "occupied, content already there",
            Why::Taken => "taken",
            Why::SamePath => "same path",
            Why::FolderSha => "sha of a folder",
            Why::EmptyOld => "empty old_str",
            Why::NoMatch => "no match",
            Why::NotUnique => "not unique",
            Why::BadLine(_) => "bad line",
            Why::NoVersion(_) => "no such version",
            Why::Contradiction => "if_absent with a sha256",
            Why::EmptyAppend => "empty append_text",
        }
    }

    fn needle(&self) -> String {
        match self {
            Why::Missing => "does not exist".into(),
            // A failed precondition states the current hash (spec: so the agent can retry).
            Why::Stale(current, _) | Why::Occupied(current, _) => current.clone(),
            Why::Taken => "already exists".into(),
            Why::SamePath => "same as path".into(),
            Why::FolderSha => "files, not folders".into(),
            Why::EmptyOld => "old_str is empty".into(),
            Why::NoMatch => "did not appear verbatim".into(),
            Why::NotUnique => "Multiple occurrences".into(),
            Why::BadLine(count) => format!("[0, {count}]"),
            Why::NoVersion(v) => format!("no version {v}"),
            Why::Contradiction => "cannot both hold".into(),
            Why::EmptyAppend => "append_text is empty".into(),
        }
    }
}

struct Written {
    created: bool,
    version: Option<u64>,
}

struct Edited {
    content: String,
    version: Option<u64>,
}

/// Files (relative path → content), folders (they outlive their files: only a folder
/// delete or rename removes one) and the version log (version `v` at index `v - 1`).
#[derive(Default)]
struct Model {
    files: BTreeMap<String, String>,
    dirs: BTreeSet<String>,
    log: Vec<Rec>,
}

/// docs/tools.md: a precondition is strict. Any mismatch fails, also when the memory already
/// holds exactly the content a write sends (`sent`; `None` for other mutations).
fn precondition(
    current: Option<&String>,
    expected: Option<&str>,
    sent: Option<&str>,
) -> Result<(), Why> {
    match (expected, current) {
        (None, _) => Ok(()),
        (Some(_), None) => Err(Why::Missing),
        (Some(e), Some(c)) if sha(c) != e.to_ascii_lowercase() => {
            Err(Why::Stale(sha(c), sent == Some(c.as_str())))
        }
        _ => Ok(()),
    }
}

fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<String, Why> {
    if old.is_empty() {
        return Err(Why::EmptyOld);
    }
    // Non-overlapping occurrences, as Python's `str.count` in Anthropic's memory tool.
    match text.matches(old).count() {
        0 => Err(Why::NoMatch),
        1 => Ok(text.replacen(old, new, 1)),
        _ if all => Ok(text.replace(old, new)),
        _ => Err(Why::NotUnique),
    }
}

/// `insert_text` as whole lines after line `after` (0 = top).
fn insert(text: &str, after: i64, insert: &str) -> Result<String, Why> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if after < 0 || after as usize > lines.len() {
        return Err(Why::BadLine(lines.len()));
    }
    let mut out = lines[..after as usize].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(insert);
    if !insert.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&lines[after as usize..].concat());
    Ok(out)
}

fn append(text: &str, tail: &str) -> String {
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(tail);
    out
}

impl Model {
    fn record(&mut self, op: &'static str, path: &str, from: Option<&str>, content: &str) -> u64 {
        self.log.push(Rec {
            op,
            path: path.to_owned(),
            from: from.map(str::to_owned),
            content: content.to_owned(),
        });
        self.log.len() as u64
    }

    /// Stores a file, creating its folders.
    fn put(&mut self, path: &str, content: String) {
        self.add_dirs(path);
        self.files.insert(path.to_owned(), content);
    }

    fn add_dirs(&mut self, path: &str) {
        for (i, _) in path.match_indices('/') {
            self.dirs.insert(path[..i].to_owned());
        }
    }

    fn exists(&self, path: &str) -> bool {
        self.files.contains_key(path) || self.dirs.contains(path)
    }

    fn pick(&self, pick: &Pick) -> &'static str {
        let existing: Vec<&'static str> = FILES
            .into_iter()
            .filter(|p| self.files.contains_key(*p))
            .collect();
        match pick {
            Pick::Any(i) => FILES[*i],
            Pick::Existing(i) if existing.is_empty() => FILES[i.index(FILES.len())],
            Pick::Existing(i) => existing[i.index(existing.len())],
        }
    }

    /// `word`, or in its case a word of `WORDS` that some file mentions.
    fn query(&self, word: &str, mentioned: Option<&Index>) -> String {
        let found: Vec<&str> = WORDS
            .into_iter()
            .filter(|w| self.files.values().any(|c| mentions(c, w)))
            .collect();
        match mentioned {
            Some(i) if !found.is_empty() => {
                let w = found[i.index(found.len())];
                if word == word.to_lowercase() {
                    w.to_owned()
                } else {
                    w.to_uppercase()
                }
            }
            _ => word.to_owned(),
        }
    }

    /// The `expected_sha256` a step sends.
    fn sha_for(&self, path: Option<&str>, e: Expect) -> Option<String> {
        let current = path
            .and_then(|p| self.files.get(p))
            .map(|c| sha(c))
            .unwrap_or_else(|| sha("no such memory"));
        match e {
            Expect::None => None,
            Expect::Current => Some(current),
            Expect::CurrentUpper => Some(current.to_ascii_uppercase()),
            Expect::Stale => Some(sha("a stale read")),
        }
    }

    fn write(
        &mut self,
        path: &str,
        content: &str,
        if_absent: bool,
        expected: Option<&str>,
    ) -> Result<Written, Why> {
        // Create-only and replace-only-that-content never both hold: refused first.
        if if_absent && expected.is_some() {
            return Err(Why::Contradiction);
        }
        let current = self.files.get(path);
        precondition(current, expected, Some(content))?;
        // `if_absent` fails on any existing memory, the same content included.
        if let Some(current) = current
            && if_absent
        {
            return Err(Why::Occupied(sha(current), current == content));
        }
        // Past the preconditions, the content already stored is a no-op.
        if current.is_some_and(|c| c == content) {
            return Ok(Written {
                created: false,
                version: None,
            });
        }
        let created = current.is_none();
        let op = if created { "created" } else { "modified" };
        let version = self.record(op, path, None, content);
        self.put(path, content.to_owned());
        Ok(Written {
            created,
            version: Some(version),
        })
    }

    fn edit(
        &mut self,
        path: &str,
        expected: Option<&str>,
        change: impl FnOnce(&str) -> Result<String, Why>,
    ) -> Result<Edited, Why> {
        let current = self.files.get(path).ok_or(Why::Missing)?.clone();
        precondition(Some(&current), expected, None)?;
        let content = change(&current)?;
        if content == current {
            return Ok(Edited {
                content,
                version: None,
            });
        }
        let version = self.record("modified", path, None, &content);
        self.put(path, content.clone());
        Ok(Edited {
            content,
            version: Some(version),
        })
    }

    /// README: `new_path` fails if the destination exists (a file or a folder).
    fn rename_file(&mut self, from: &str, to: &str, expected: Option<&str>) -> Result<Edited, Why> {
        if from == to {
            return Err(Why::SamePath);
        }
        let content = self.files.get(from).ok_or(Why::Missing)?.clone();
        precondition(Some(&content), expected, None)?;
        if self.exists(to) {
            return Err(Why::Taken);
        }
        let version = self.record("renamed", to, Some(from), &content);
        self.files.remove(from);
        self.put(to, content.clone());
        Ok(Edited {
            content,
            version: Some(version),
        })
    }

    /// The files under `dir` (relative path → content) and the folders at or under it.
    fn under(&self, dir: &str) -> (Vec<(String, String)>, Vec<String>) {
        let prefix = format!("{dir}/");
        let files = self
            .files
            .iter()
            .filter(|(p, _)| p.starts_with(&prefix))
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect();
        let dirs = self
            .dirs
            .iter()
            .filter(|d| *d == dir || d.starts_with(&prefix))
            .cloned()
            .collect();
        (files, dirs)
    }

    /// Moves folder `from` to `to`. Returns one record per moved file, not yet in the log:
    /// the server numbers them in the order it walks the folder, which the model learns
    /// from `memory_history` (see `Run::adopt`).
    fn rename_folder(&mut self, from: &str, to: &str, expected: bool) -> Result<Vec<Rec>, Why> {
        if !self.dirs.contains(from) {
            return Err(Why::Missing);
        }
        if expected {
            return Err(Why::FolderSha);
        }
        if self.exists(to) {
            return Err(Why::Taken);
        }
        let (files, dirs) = self.under(from);
        let moved = |p: &str| format!("{to}{}", &p[from.len()..]);
        let mut recs = Vec::new();
        for (p, content) in files {
            self.files.remove(&p);
            self.put(&moved(&p), content.clone());
            recs.push(Rec {
                op: "renamed",
                path: moved(&p),
                from: Some(p),
                content,
            });
        }
        for d in dirs {
            self.dirs.remove(&d);
            self.dirs.insert(moved(&d));
        }
        self.add_dirs(to);
        Ok(recs)
    }

    fn delete_file(&mut self, path: &str, expected: Option<&str>) -> Result<u64, Why> {
        let content = self.files.get(path).ok_or(Why::Missing)?.clone();
        precondition(Some(&content), expected, None)?;
        self.files.remove(path);
        Ok(self.record("deleted", path, None, &content))
    }

    /// Deletes folder `dir` and everything in it; records as for `rename_folder`.
    fn delete_folder(&mut self, dir: &str, expected: bool) -> Result<Vec<Rec>, Why> {
        if !self.dirs.contains(dir) {
            return Err(Why::Missing);
        }
        if expected {
            return Err(Why::FolderSha);
        }
        let (files, dirs) = self.under(dir);
        let mut recs = Vec::new();
        for (p, content) in files {
            self.files.remove(&p);
            recs.push(Rec {
                op: "deleted",
                path: p,
                from: None,
                content,
            });
        }
        for d in dirs {
            self.dirs.remove(&d);
        }
        Ok(recs)
    }
}

// ---------------------------------------------------------------------------------------
// Comparing the server with the model.

macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(format!($($arg)+));
        }
    };
}

fn same(got: &Value, want: Value, what: &str) -> Result<(), String> {
    ensure!(*got == want, "{what}: server says {got}, model says {want}");
    Ok(())
}

/// `args` with `expected_sha256` when there is one.
fn with_sha(mut args: Value, expected: &Option<String>) -> Value {
    if let Some(e) = expected {
        args["expected_sha256"] = json!(e);
    }
    args
}

/// A field that is absent when `None`.
fn optional(v: &Value, key: &str) -> Value {
    v.get(key).cloned().unwrap_or(Value::Null)
}

/// What a step did (a label for the coverage tally), or how server and model disagree.
type Step = Result<String, String>;

/// What a refused write says when the memory already holds exactly the content sent.
const HELD: &str = "exactly the content sent";

fn failed(out: &Outcome, why: &Why) -> Step {
    ensure!(
        out.is_error,
        "the model expects an error ({why:?}), the server succeeded: {}",
        out.structured
    );
    ensure!(
        out.structured.is_null(),
        "an error carries no structured content: {}",
        out.structured
    );
    let needle = why.needle();
    ensure!(
        out.text.contains(&needle),
        "the error should mention {needle:?} ({why:?}): {}",
        out.text
    );
    if let Why::Stale(_, held) | Why::Occupied(_, held) = why {
        ensure!(
            out.text.contains(HELD) == *held,
            "the error should say {HELD:?} exactly when the memory holds the content sent ({why:?}): {}",
            out.text
        );
    }
    Ok(format!("refused: {}", why.name()))
}

fn succeeded(out: &Outcome) -> Result<&Value, String> {
    ensure!(
        !out.is_error,
        "the model expects success, the server failed: {}",
        out.text
    );
    Ok(&out.structured)
}

fn check_write(out: &Outcome, path: &str, content: &str, want: Result<Written, Why>) -> Step {
    let w = match want {
        Err(why) => return failed(out, &why),
        Ok(w) => w,
    };
    let r = succeeded(out)?;
    same(&r["path"], json!(canon(path)), "path")?;
    same(&r["created"], json!(w.created), "created")?;
    same(&r["unchanged"], json!(w.version.is_none()), "unchanged")?;
    ensure!(
        r.get("precondition_stale").is_none(),
        "no success reports a stale precondition: {r}"
    );
    same(&r["content_sha256"], json!(sha(content)), "content_sha256")?;
    same(&r["size_bytes"], json!(content.len()), "size_bytes")?;
    same(&optional(r, "version"), json!(w.version), "version")?;
    Ok(match (w.created, w.version) {
        (_, None) => "unchanged",
        (true, _) => "created",
        (false, _) => "replaced",
    }
    .into())
}

fn check_edit(
    out: &Outcome,
    path: &str,
    renamed_from: Option<&str>,
    want: Result<Edited, Why>,
) -> Step {
    let e = match want {
        Err(why) => return failed(out, &why),
        Ok(e) => e,
    };
    let r = succeeded(out)?;
    same(&r["path"], json!(canon(path)), "path")?;
    same(
        &optional(r, "renamed_from"),
        json!(renamed_from.map(canon)),
        "renamed_from",
    )?;
    same(&r["unchanged"], json!(e.version.is_none()), "unchanged")?;
    same(
        &r["content_sha256"],
        json!(sha(&e.content)),
        "content_sha256",
    )?;
    same(&r["size_bytes"], json!(e.content.len()), "size_bytes")?;
    same(&optional(r, "version"), json!(e.version), "version")?;
    Ok(if e.version.is_some() {
        "changed"
    } else {
        "unchanged"
    }
    .into())
}

/// `(path, kind, size_bytes, content_sha256 or file_count)` of each listed entry.
fn entries(list: &Value) -> Vec<(String, String, u64, Value)> {
    list["entries"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().unwrap_or_default().to_owned();
            let detail = if kind == "dir" {
                optional(e, "file_count")
            } else {
                optional(e, "content_sha256")
            };
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                kind,
                e["size_bytes"].as_u64().unwrap_or(u64::MAX),
                detail,
            )
        })
        .collect()
}

/// A tool call of a run, for the failure report.
fn traced(tool: &str, args: &Value, out: &Outcome) -> String {
    let answer = if out.is_error {
        format!("error: {}", out.text)
    } else {
        out.structured.to_string()
    };
    let answer: String = answer.chars().take(240).collect();
    format!("{tool} {args}\n      -> {answer}")
}

struct Run {
    s: Server,
    /// The server's command line, to start it again.
    args: Vec<String>,
    m: Model,
    trace: Vec<String>,
}

impl Run {
    async fn call(&mut self, tool: &str, args: Value) -> Outcome {
        let out = self.s.call(tool, args.clone()).await;
        self.trace.push(traced(tool, &args, &out));
        out
    }

    async fn step(&mut self, op: &Op) -> Step {
        match op {
            Op::Write {
                path,
                content,
                if_absent,
                expect,
            } => {
                let p = self.m.pick(path);
                let expected = self.m.sha_for(Some(p), *expect);
                let mut args = json!({"path": canon(p), "content": content});
                if *if_absent {
                    args["if_absent"] = json!(true);
                }
                let out = self.call("memory_write", with_sha(args, &expected)).await;
                let want = self.m.write(p, content, *if_absent, expected.as_deref());
                check_write(&out, p, content, want)
            }
            Op::Rewrite {
                path,
                if_absent,
                expect,
            } => {
                let p = self.m.pick(path);
                let content = self.m.files.get(p).cloned().unwrap_or_default();
                let expected = self.m.sha_for(Some(p), *expect);
                let mut args = json!({"path": canon(p), "content": content});
                if *if_absent {
                    args["if_absent"] = json!(true);
                }
                let out = self.call("memory_write", with_sha(args, &expected)).await;
                let want = self.m.write(p, &content, *if_absent, expected.as_deref());
                check_write(&out, p, &content, want)
            }
            Op::Restore {
                version,
                at,
                if_absent,
                expect,
            } => {
                let v = match version {
                    Some(i) if !self.m.log.is_empty() => i.index(self.m.log.len()) + 1,
                    _ => self.m.log.len() + 1,
                };
                let rec = self.m.log.get(v - 1).cloned();
                let p = match (at, &rec) {
                    (Some(at), _) => self.m.pick(at).to_owned(),
                    (None, Some(rec)) => rec.path.clone(),
                    (None, None) => FILES[0].to_owned(),
                };
                let expected = self.m.sha_for(Some(&p), *expect);
                let mut args = json!({"path": canon(&p), "restore_version": v});
                if *if_absent {
                    args["if_absent"] = json!(true);
                }
                let out = self.call("memory_write", with_sha(args, &expected)).await;
                let Some(rec) = rec else {
                    return failed(&out, &Why::NoVersion(v as u64));
                };
                let want = self
                    .m
                    .write(&p, &rec.content, *if_absent, expected.as_deref());
                let label = check_write(&out, &p, &rec.content, want)?;
                let elsewhere = if p == rec.path { "" } else { " elsewhere" };
                Ok(format!("{label} from a {} version{elsewhere}", rec.op))
            }
            Op::Replace {
                path,
                old,
                new,
                all,
                expect,
            } => {
                let p = self.m.pick(path);
                let old = match old {
                    Old::Word(w) => w.clone(),
                    Old::Slice(a, b) => {
                        let chars: Vec<char> = self
                            .m
                            .files
                            .get(p)
                            .map(|c| c.chars().collect())
                            .unwrap_or_default();
                        if chars.is_empty() {
                            String::new()
                        } else {
                            let start = a.index(chars.len());
                            let len = 1 + b.index((chars.len() - start).min(8));
                            chars[start..start + len].iter().collect()
                        }
                    }
                };
                let expected = self.m.sha_for(Some(p), *expect);
                let mut args = json!({"path": canon(p), "old_str": old, "new_str": new});
                if *all {
                    args["replace_all"] = json!(true);
                }
                let out = self.call("memory_edit", with_sha(args, &expected)).await;
                let want = self.m.edit(p, expected.as_deref(), |text| {
                    replace(text, &old, new, *all)
                });
                check_edit(&out, p, None, want)
            }
            Op::Insert {
                path,
                after,
                text,
                expect,
            } => {
                let p = self.m.pick(path);
                let lines = self.m.files.get(p).map_or(0, |c| line_count(c));
                let after = after.map_or(-1, |i| i.index(lines + 2) as i64);
                let expected = self.m.sha_for(Some(p), *expect);
                let args = json!({"path": canon(p), "insert_line": after, "insert_text": text});
                let out = self.call("memory_edit", with_sha(args, &expected)).await;
                let want = self
                    .m
                    .edit(p, expected.as_deref(), |cur| insert(cur, after, text));
                check_edit(&out, p, None, want)
            }
            Op::Append { path, text, expect } => {
                let p = self.m.pick(path);
                let expected = self.m.sha_for(Some(p), *expect);
                let args = json!({"path": canon(p), "append_text": text});
                let out = self.call("memory_edit", with_sha(args, &expected)).await;
                // Nothing to append is refused before the memory is looked at.
                if text.is_empty() {
                    return failed(&out, &Why::EmptyAppend);
                }
                let want = self
                    .m
                    .edit(p, expected.as_deref(), |cur| Ok(append(cur, text)));
                check_edit(&out, p, None, want)
            }
            Op::Rename {
                what: Move::File(a, b),
                expect,
            } => {
                let (from, to) = (self.m.pick(a), FILES[*b]);
                let expected = self.m.sha_for(Some(from), *expect);
                let args = json!({"path": canon(from), "new_path": canon(to)});
                let out = self.call("memory_edit", with_sha(args, &expected)).await;
                let want = self.m.rename_file(from, to, expected.as_deref());
                check_edit(&out, to, Some(from), want)
            }
            Op::Rename {
                what: Move::Folder(forward),
                expect,
            } => {
                let forward = forward.unwrap_or(!self.m.dirs.contains("deep"));
                let (from, to) = if forward {
                    ("notes/deep", "deep")
                } else {
                    ("deep", "notes/deep")
                };
                let expected = self.m.sha_for(None, *expect);
                let args = json!({"path": canon(from), "new_path": canon(to)});
                let out = self.call("memory_edit", with_sha(args, &expected)).await;
                let recs = match self.m.rename_folder(from, to, expected.is_some()) {
                    Err(why) => return failed(&out, &why),
                    Ok(recs) => recs,
                };
                let r = succeeded(&out)?.clone();
                same(&r["path"], json!(canon(to)), "path")?;
                same(&r["renamed_from"], json!(canon(from)), "renamed_from")?;
                let first = self.m.log.len() as u64 + 1;
                let last = (!recs.is_empty()).then(|| first + recs.len() as u64 - 1);
                same(&optional(&r, "version"), json!(last), "version")?;
                self.adopt(first, recs).await
            }
            Op::Delete {
                what: Gone::File(i),
                expect,
            } => {
                let p = self.m.pick(i);
                let expected = self.m.sha_for(Some(p), *expect);
                let args = json!({"path": canon(p)});
                let out = self.call("memory_delete", with_sha(args, &expected)).await;
                let v = match self.m.delete_file(p, expected.as_deref()) {
                    Err(why) => return failed(&out, &why),
                    Ok(v) => v,
                };
                let r = succeeded(&out)?;
                same(&r["path"], json!(canon(p)), "path")?;
                same(&r["deleted_files"], json!([canon(p)]), "deleted_files")?;
                same(&r["versions"], json!([v]), "versions")?;
                Ok("deleted".into())
            }
            Op::Delete {
                what: Gone::Folder(i, slash),
                expect,
            } => {
                let dir = FOLDERS[*i];
                let expected = self.m.sha_for(None, *expect);
                let arg = if *slash {
                    format!("{}/", canon(dir))
                } else {
                    canon(dir)
                };
                let args = json!({"path": arg});
                let out = self.call("memory_delete", with_sha(args, &expected)).await;
                let recs = match self.m.delete_folder(dir, expected.is_some()) {
                    Err(why) => return failed(&out, &why),
                    Ok(recs) => recs,
                };
                let r = succeeded(&out)?.clone();
                same(&r["path"], json!(canon(dir)), "path")?;
                let files: BTreeSet<String> = recs.iter().map(|r| canon(&r.path)).collect();
                same(&r["deleted_files"], json!(files), "deleted_files (sorted)")?;
                let first = self.m.log.len() as u64 + 1;
                let numbers: Vec<u64> = (first..first + recs.len() as u64).collect();
                same(&r["versions"], json!(numbers), "versions")?;
                self.adopt(first, recs).await
            }
            Op::Read { path } => {
                let p = self.m.pick(path);
                // A path without the store is relative to the first store.
                let out = self.call("memory_read", json!({"path": p})).await;
                let Some(content) = self.m.files.get(p) else {
                    return failed(&out, &Why::Missing);
                };
                let r = succeeded(&out)?;
                same(&r["path"], json!(canon(p)), "path")?;
                same(&r["content"], json!(content), "content")?;
                same(&r["content_sha256"], json!(sha(content)), "content_sha256")?;
                same(&r["size_bytes"], json!(content.len()), "size_bytes")?;
                same(&r["total_lines"], json!(line_count(content)), "total_lines")?;
                same(&r["truncated"], json!(false), "truncated")?;
                let gone = expired(content);
                same(
                    &optional(r, "expired"),
                    json!(gone.then_some(true)),
                    "expired",
                )?;
                Ok(if gone { "read expired" } else { "read" }.into())
            }
            Op::Restart => {
                // The new process starts before the old one ends: several processes on
                // one store is the normal setup, and only the new one is asked anything.
                let old = std::mem::replace(&mut self.s, start(&self.args).await);
                old.stop().await;
                self.trace.push("(a new server on the same store)".into());
                Ok("restarted".into())
            }
            Op::Search {
                word,
                mentioned,
                expired,
            } => {
                let word = &self.m.query(word, mentioned.as_ref());
                let mut args = json!({"query": word, "limit": 100});
                if *expired {
                    args["include_expired"] = json!(true);
                }
                let out = self.call("memory_search", args).await;
                self.check_search(word, *expired, &out)
            }
        }
    }

    /// Puts the records of a folder operation into the log in the server's order, checking
    /// through `memory_history` that each version is one of them, with its content.
    async fn adopt(&mut self, first: u64, recs: Vec<Rec>) -> Step {
        let label = if recs.is_empty() {
            "empty"
        } else {
            "with files"
        };
        let mut pending: BTreeMap<String, Rec> =
            recs.into_iter().map(|r| (r.path.clone(), r)).collect();
        for v in first..first + pending.len() as u64 {
            let args = json!({"path": "/memories/", "version": v});
            let out = self.s.call("memory_history", args.clone()).await;
            let h = succeeded(&out)?;
            let shown = &h["versions"][0];
            let path = shown["path"].as_str().unwrap_or_default();
            let rel = path.strip_prefix("/memories/").unwrap_or(path);
            let Some(rec) = pending.remove(rel) else {
                return Err(format!(
                    "version {v} is {path}, not one of the files the model moved or deleted: {h}"
                ));
            };
            same(&shown["operation"], json!(rec.op), "operation")?;
            same(
                &optional(shown, "from"),
                json!(rec.from.as_deref().map(canon)),
                "from",
            )?;
            same(&h["content"], json!(rec.content), "version content")?;
            self.m.log.push(rec);
        }
        Ok(label.into())
    }

    fn check_search(&self, word: &str, with_expired: bool, out: &Outcome) -> Step {
        let r = succeeded(out)?;
        let found = |by: fn(&str, &str) -> bool| -> BTreeSet<String> {
            self.m
                .files
                .iter()
                .filter(|(_, c)| by(c, word) && (with_expired || !expired(c)))
                .map(|(p, _)| canon(p))
                .collect()
        };
        let (want, relaxed) = (found(mentions), found(mentions_a_piece));
        let hits = r["hits"].as_array().map(Vec::as_slice).unwrap_or_default();
        let paths = |hits: &[Value]| -> BTreeSet<String> {
            hits.iter()
                .map(|h| h["path"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        // Every memory that holds the word, then those that hold a piece of it.
        let (whole, pieces) = hits.split_at(want.len().min(hits.len()));
        ensure!(
            paths(whole) == want && paths(pieces) == relaxed,
            "search {word:?}: server found {:?} then {:?}, model expects {want:?} then {relaxed:?}",
            paths(whole),
            paths(pieces)
        );
        same(
            &r["total_hits"],
            json!(want.len() + relaxed.len()),
            "total_hits",
        )?;
        same(&r["relaxed"], json!(!relaxed.is_empty()), "relaxed")?;
        ensure!(
            hits.len() == want.len() + relaxed.len(),
            "search {word:?}: a hit twice: {r}"
        );
        // The lines shown are lines of the file that contain the word (or a piece of it).
        for h in hits {
            let path = h["path"].as_str().unwrap_or_default();
            let content = &self.m.files[path.strip_prefix("/memories/").unwrap_or(path)];
            let mentions = if relaxed.contains(path) {
                mentions_a_piece
            } else {
                mentions
            };
            same(
                &optional(h, "expired"),
                json!(expired(content).then_some(true)),
                "expired",
            )?;
            let lines: Vec<&str> = content.lines().collect();
            let numbered = |n: usize| lines.get(n.wrapping_sub(1)).copied();
            let best = h["line"].as_u64().unwrap_or(0) as usize;
            ensure!(
                numbered(best).is_some_and(|l| mentions(l, word)),
                "search {word:?}: line {best} of {path} is not a matching line: {h}"
            );
            for shown in h["snippet"].as_str().unwrap_or_default().lines() {
                let (n, text) = shown.split_once('\t').unwrap_or((shown, ""));
                let n: usize = n.trim().parse().unwrap_or(0);
                ensure!(
                    numbered(n) == Some(text) && mentions(text, word),
                    "search {word:?}: snippet line {shown:?} is not a matching line of {path}"
                );
            }
        }
        let script = match word.chars().next() {
            Some(c) if is_han(c) => "CJK",
            Some(c) if c.is_ascii() => "ASCII",
            _ => "Cyrillic",
        };
        let expired_hits = hits.iter().any(|h| h.get("expired").is_some());
        Ok(if hits.is_empty() {
            "nothing found".into()
        } else if expired_hits {
            format!("{script} found, expired too")
        } else {
            format!("{script} found")
        })
    }

    /// Every file with its hash and size (recursive list), and every folder, empty ones
    /// included, with its roll-up (deep list).
    async fn check_tree(&self) -> Result<(), String> {
        let files: Vec<(String, String, u64, Value)> = self
            .m
            .files
            .iter()
            .map(|(p, c)| (canon(p), "file".to_owned(), c.len() as u64, json!(sha(c))))
            .collect();
        let out = self.s.call("memory_list", json!({"limit": 1000})).await;
        let r = succeeded(&out)?;
        ensure!(
            entries(r) == files,
            "memory_list: server lists {:?}, model has {files:?}",
            entries(r)
        );
        same(&r["total"], json!(files.len()), "total")?;
        let marked: Vec<&str> = r["entries"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|e| e.get("expired").is_some())
            .filter_map(|e| e["path"].as_str())
            .collect();
        let gone: Vec<String> = self
            .m
            .files
            .iter()
            .filter(|(_, c)| expired(c))
            .map(|(p, _)| canon(p))
            .collect();
        ensure!(
            marked == gone,
            "memory_list marks {marked:?} expired, the model {gone:?}"
        );

        let mut tree = files;
        for d in &self.m.dirs {
            let (inside, _) = self.m.under(d);
            let size: usize = inside.iter().map(|(_, c)| c.len()).sum();
            tree.push((
                format!("{}/", canon(d)),
                "dir".to_owned(),
                size as u64,
                json!(inside.len()),
            ));
        }
        tree.sort_by(|a, b| a.0.cmp(&b.0));
        let out = self
            .s
            .call(
                "memory_list",
                json!({"path": "/memories", "depth": 16, "limit": 1000}),
            )
            .await;
        let r = succeeded(&out)?;
        ensure!(
            entries(r) == tree,
            "memory_list depth 16: server lists {:?}, model has {tree:?}",
            entries(r)
        );
        Ok(())
    }

    /// The whole version log, and a search for every word.
    async fn check_history_and_search(&self) -> Result<(), String> {
        let out = self
            .s
            .call(
                "memory_history",
                json!({"path": "/memories/", "limit": 500}),
            )
            .await;
        let r = succeeded(&out)?;
        let got: Vec<Value> = r["versions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|v| {
                let actor = v["actor"].as_str().unwrap_or_default();
                json!([
                    v["version"],
                    v["operation"],
                    v["path"],
                    optional(v, "from"),
                    v["content_sha256"],
                    v["size_bytes"],
                    actor.starts_with("rmcp/")
                ])
            })
            .collect();
        let want: Vec<Value> = self
            .m
            .log
            .iter()
            .enumerate()
            .rev()
            .map(|(i, rec)| {
                json!([
                    i + 1,
                    rec.op,
                    canon(&rec.path),
                    rec.from.as_deref().map(canon),
                    sha(&rec.content),
                    rec.content.len(),
                    true
                ])
            })
            .collect();
        ensure!(
            got == want,
            "memory_history [version, operation, path, from, sha, size, by the client]:\n\
             server {}\nmodel  {}",
            json!(got),
            json!(want)
        );
        // Filtered by operation and actor, the log is the model's, filtered alike.
        for op in ["created", "modified", "renamed", "deleted"] {
            let out = self
                .s
                .call(
                    "memory_history",
                    json!({"path": "/memories/", "limit": 500, "operation": op}),
                )
                .await;
            let r = succeeded(&out)?;
            let got: Vec<Value> = r["versions"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|v| v["version"].clone())
                .collect();
            let want: Vec<Value> = (1..=self.m.log.len())
                .rev()
                .filter(|&v| self.m.log[v - 1].op == op)
                .map(|v| json!(v))
                .collect();
            ensure!(
                got == want,
                "memory_history operation {op}: server {got:?}, model {want:?}"
            );
        }
        for (actor, all) in [("rmcp", true), ("external", false), ("cli", false)] {
            let out = self
                .s
                .call(
                    "memory_history",
                    json!({"path": "/memories/", "limit": 500, "actor": actor, "since": "2000-01-01"}),
                )
                .await;
            let r = succeeded(&out)?;
            let n = r["versions"].as_array().map_or(0, Vec::len);
            let want = if all { self.m.log.len() } else { 0 };
            ensure!(
                n == want,
                "memory_history actor {actor}: server {n} versions, model {want}"
            );
        }
        for w in WORDS {
            let out = self
                .s
                .call("memory_search", json!({"query": w, "limit": 100}))
                .await;
            self.check_search(w, false, &out)?;
        }
        Ok(())
    }
}

async fn start(args: &[String]) -> Server {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start(&args, &[]).await
}

/// One generated case: a fresh store and server, the steps, the final checks.
async fn run_case(scan: bool, ops: &[Op]) -> Result<(), String> {
    let mut seen = Vec::new();
    let sb = Sandbox::new();
    let store = sb.store().to_str().unwrap().to_owned();
    let index = sb.tmp.path().join("index").to_str().unwrap().to_owned();
    // Half the cases search through the index, half scan the files.
    let args: Vec<String> = if scan {
        vec!["--root".into(), store, "--no-index".into()]
    } else {
        vec!["--root".into(), store, "--index-dir".into(), index]
    };
    let mut run = Run {
        s: start(&args).await,
        args,
        m: Model::default(),
        trace: Vec::new(),
    };
    let mut result = Ok(());
    for (i, op) in ops.iter().enumerate() {
        let checked = match run.step(op).await {
            Ok(label) => {
                seen.push(format!("{}: {label}", op.name()));
                run.check_tree().await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            result = Err(format!("step {} of {}, {op:?}: {e}", i + 1, ops.len()));
            break;
        }
    }
    if result.is_ok() {
        result = run
            .check_history_and_search()
            .await
            .map_err(|e| format!("after the last step: {e}"));
    }
    run.s.stop().await;
    if result.is_ok() {
        let mut tally = TALLY.lock().unwrap_or_else(|e| e.into_inner());
        for label in seen {
            *tally.entry(label).or_default() += 1;
        }
    }
    result.map_err(|e| {
        format!(
            "{e}\n\ncalls (scan = {scan}):\n{}",
            run.trace
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{:>3}. {t}", i + 1))
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

/// Outcomes (parts of step labels) the default run must reach.
const MUST_SEE: [&str; 33] = [
    "write: created",
    "write: replaced",
    "write: unchanged",
    "write: refused: stale sha",
    "write: refused: missing",
    "write if_absent: refused: occupied",
    "rewrite: refused: stale sha, content already there",
    "rewrite: unchanged",
    "rewrite if_absent: refused: occupied, content already there",
    "replace: changed",
    "replace: refused: not unique",
    "replace: refused: no match",
    "replace_all: changed",
    "insert: changed",
    "insert: refused: bad line",
    "append: changed",
    "append: refused: empty append_text",
    "write if_absent: refused: if_absent with a sha256",
    "rename file: changed",
    "rename file: refused: taken",
    "rename file: refused: same path",
    "rename folder: with files",
    "rename folder: refused: taken",
    "delete file: deleted",
    "delete folder: with files",
    "delete folder: empty",
    "from a deleted version",
    "from a renamed version",
    "restore: refused: no such version",
    "search: ASCII found",
    "search: Cyrillic found",
    "search: CJK found",
    "restart: restarted",
];

/// How often each outcome was seen over the passing cases (`--nocapture` prints it).
static TALLY: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

#[test]
fn the_server_agrees_with_a_model_of_files_folders_and_versions() {
    let cases = env_number("MEMDIR_MODEL_CASES")
        .or_else(|| env_number("PROPTEST_CASES"))
        .unwrap_or(CASES);
    let steps = env_number("MEMDIR_MODEL_STEPS").unwrap_or(STEPS) as usize;
    let config = Config {
        cases: cases as u32,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(env_number("MEMDIR_MODEL_SEED").unwrap_or(SEED)),
        // Nothing written into the source tree; the fixed seed replays a failure anyway.
        failure_persistence: None,
        // Each shrink step starts a server: bounded (2 minutes at most), yet enough to
        // reach a short sequence.
        max_shrink_iters: 2000,
        max_shrink_time: 120_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = (any::<bool>(), vec(op(), 1..=steps));
    let result = runner.run(&strategy, |(scan, ops)| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        rt.block_on(run_case(scan, &ops))
            .map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => {
            let tally = TALLY.lock().unwrap_or_else(|e| e.into_inner());
            for (label, n) in tally.iter() {
                eprintln!("{n:>5}  {label}");
            }
            // The default run must reach every outcome worth testing, so that a change to
            // the generator cannot quietly turn this test into one of empty stores.
            if cases >= CASES && steps as u64 >= STEPS {
                let missed: Vec<&str> = MUST_SEE
                    .into_iter()
                    .filter(|needle| !tally.keys().any(|label| label.contains(needle)))
                    .collect();
                assert!(missed.is_empty(), "no step reached {missed:?}");
            }
        }
        Err(TestError::Fail(why, (scan, ops))) => {
            panic!("{why}\n\nminimal sequence (scan = {scan}): {ops:#?}")
        }
        Err(e) => panic!("{e}"),
    }
}
