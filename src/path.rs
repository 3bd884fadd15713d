//! Layer 1 of the path policy (docs/paths.md): lexical validation of an agent's memory path,
//! before any system call. It never decodes anything and never touches the disk; layer 2
//! (confinement at the moment of the operation) lives in `store`.

use unicode_normalization::is_nfc;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

use crate::error::{Error, Result};

/// Longest accepted path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest accepted segment, in bytes (the common file-system name limit).
pub const MAX_SEGMENT_BYTES: usize = 255;
/// The store's reserved state folder (history, lock, temp files). Any segment that starts
/// with this (case-insensitively) is reserved, which also covers the temp-file names.
pub const RESERVED_PREFIX: &str = ".memdir";

/// A validated memory path: a store and the segments below its root.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemPath {
    /// Index of the store in the server's store list.
    pub store: usize,
    /// The store's name, for rendering.
    pub store_name: String,
    /// Segments below the store root; empty for the root itself.
    pub segments: Vec<String>,
}

impl MemPath {
    pub fn root(store: usize, store_name: &str) -> Self {
        MemPath {
            store,
            store_name: store_name.to_owned(),
            segments: Vec::new(),
        }
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// `/<store>/<a>/<b>`: the only form results ever show.
    pub fn canonical(&self) -> String {
        let mut s = String::with_capacity(1 + self.store_name.len() + 16 * self.segments.len());
        s.push('/');
        s.push_str(&self.store_name);
        for seg in &self.segments {
            s.push('/');
            s.push_str(seg);
        }
        s
    }

    /// The path relative to the store root, `/`-joined (`""` for the root).
    pub fn rel(&self) -> String {
        self.segments.join("/")
    }

    pub fn name(&self) -> Option<&str> {
        self.segments.last().map(String::as_str)
    }

    pub fn parent(&self) -> Option<MemPath> {
        if self.segments.is_empty() {
            return None;
        }
        let mut p = self.clone();
        p.segments.pop();
        Some(p)
    }

    /// The path `rel` (`/`-joined, relative to the store root) in the same store.
    pub fn with_rel(&self, rel: &str) -> MemPath {
        let mut p = MemPath::root(self.store, &self.store_name);
        p.segments = rel.split('/').map(str::to_owned).collect();
        p
    }

    pub fn child(&self, name: &str) -> MemPath {
        let mut p = self.clone();
        p.segments.push(name.to_owned());
        p
    }

    /// Whether `self` is `other` or lies below it, by whole segments.
    pub fn starts_with(&self, other: &MemPath) -> bool {
        self.store == other.store
            && self.segments.len() >= other.segments.len()
            && self.segments[..other.segments.len()] == other.segments[..]
    }
}

/// What a raw path resolves to: one store path, or the top level above all stores (`/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    AllStores,
    Path(MemPath),
}

/// Validates `raw` and resolves its store. `stores` are the served store names in order;
/// a path without a leading `/` is relative to the first.
pub fn parse(raw: &str, stores: &[&str]) -> Result<Target> {
    check_whole(raw)?;
    let (absolute, body) = match raw.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    // One trailing slash marks a folder; it is allowed and dropped.
    let body = body.strip_suffix('/').unwrap_or(body);
    if absolute && body.is_empty() {
        return Ok(Target::AllStores);
    }
    let mut parts = body.split('/');
    let store = if absolute {
        store_index(raw, parts.next().unwrap_or_default(), stores)?
    } else {
        0
    };
    let mut segments = Vec::new();
    for seg in parts {
        check_segment(raw, seg)?;
        segments.push(seg.to_owned());
    }
    // The limit holds for the canonical form too (a relative path gains `/<store>/`):
    // results show canonical paths, and an agent must be able to pass any of them back.
    let canonical_len =
        1 + stores[store].len() + segments.iter().map(|s| 1 + s.len()).sum::<usize>();
    if canonical_len > MAX_PATH_BYTES {
        return Err(Error::invalid_path(
            &shorten(raw),
            format!(
                "its canonical form `/{}/...` is {canonical_len} bytes long; the limit is {MAX_PATH_BYTES}",
                stores[store]
            ),
        ));
    }
    Ok(Target::Path(MemPath {
        store,
        store_name: stores[store].to_owned(),
        segments,
    }))
}

/// The checks of a raw path as a whole, before it is split: not empty, within the
/// length limit, no forbidden character, NFC, no `~`.
fn check_whole(raw: &str) -> Result<()> {
    if raw.is_empty() {
        return Err(Error::invalid_path(raw, "the path is empty"));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(Error::invalid_path(
            &shorten(raw),
            format!(
                "it is {} bytes long; the limit is {MAX_PATH_BYTES}",
                raw.len()
            ),
        ));
    }
    if let Some(c) = raw.chars().find(|&c| forbidden_char(c).is_some()) {
        return Err(Error::invalid_path(
            &printable(raw),
            forbidden_char(c).unwrap_or_default(),
        ));
    }
    if !is_nfc(raw) {
        return Err(Error::invalid_path(
            raw,
            "it is not in Unicode NFC form (compose accents, e.g. `é` as one character)",
        ));
    }
    if raw.starts_with('~') {
        return Err(Error::invalid_path(
            raw,
            "`~` is not expanded; paths start with `/<store>/` or are relative to the first store",
        ));
    }
    Ok(())
}

/// The position of store `name` among the served `stores`, or `UnknownStore`.
fn store_index(raw: &str, name: &str, stores: &[&str]) -> Result<usize> {
    stores
        .iter()
        .position(|s| *s == name)
        .ok_or_else(|| Error::UnknownStore {
            path: raw.to_owned(),
            store: name.to_owned(),
            known: stores
                .iter()
                .map(|s| format!("/{s}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Like [`parse`], but the top level (`/`) is not a valid answer.
pub fn parse_path(raw: &str, stores: &[&str]) -> Result<MemPath> {
    match parse(raw, stores)? {
        Target::Path(p) => Ok(p),
        Target::AllStores => Err(Error::invalid_path(
            raw,
            "`/` is the list of stores, not a memory; name a store, e.g. `/memories/notes.md`",
        )),
    }
}

/// Whether a name found on disk could be written in a path: a file named with a control
/// character, a look-alike slash or in decomposed Unicode (made outside memdir) can be
/// neither read nor changed through a tool, so listings leave it out.
pub fn addressable_name(name: &str) -> bool {
    !name.contains('/')
        && name.chars().all(|c| forbidden_char(c).is_none())
        && is_nfc(name)
        && check_segment(name, name).is_ok()
}

/// Checks one segment of a memory path. Also used for store-level names.
pub fn check_segment(raw: &str, seg: &str) -> Result<()> {
    let bad = |reason: &str| Err(Error::invalid_path(raw, reason));
    if seg.is_empty() {
        return bad("it has an empty segment (`//`)");
    }
    if seg == "." || seg == ".." {
        return bad("`.` and `..` segments are not allowed");
    }
    if seg.chars().all(|c| c == '.' || c == ' ') {
        return bad("a segment made only of dots and spaces is not allowed");
    }
    if seg.ends_with('.') || seg.ends_with(' ') {
        return bad("a segment may not end with a dot or a space");
    }
    if seg.starts_with('~') {
        return bad("a segment may not start with `~`");
    }
    if seg.len() > MAX_SEGMENT_BYTES {
        return bad("a segment is longer than 255 bytes");
    }
    if seg.to_lowercase().starts_with(RESERVED_PREFIX) {
        return bad("names starting with `.memdir` are reserved for memdir's own state");
    }
    if is_windows_device(seg) {
        return bad("Windows device names (CON, PRN, AUX, NUL, COM1, LPT1, ...) are not allowed");
    }
    Ok(())
}

/// Why a character may never appear in a path, if it may not.
fn forbidden_char(c: char) -> Option<&'static str> {
    match c {
        '\\' => Some("`\\` is not a separator here and is not allowed"),
        ':' => Some("`:` is not allowed (drive letters, streams and URLs are not paths)"),
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => Some("control characters are not allowed"),
        // Characters that render like `/` or `\` (Unicode's confusables for both, less the
        // kana and ideographs that are ordinary letters in Japanese and Chinese names).
        '\u{1735}' | '\u{2041}' | '\u{2044}' | '\u{2215}' | '\u{2216}' | '\u{2571}'
        | '\u{2572}' | '\u{27cb}' | '\u{27cd}' | '\u{29f5}' | '\u{29f8}' | '\u{29f9}'
        | '\u{2f03}' | '\u{3033}' | '\u{3035}' | '\u{31d3}' | '\u{31d4}' | '\u{fe68}'
        | '\u{ff0f}' | '\u{ff3c}' | '\u{1d20f}' | '\u{1d23a}' | '\u{1d23b}' => {
            Some("look-alike slash characters are not allowed")
        }
        '\u{fffd}' => {
            Some("the replacement character U+FFFD is not allowed (the path was not valid UTF-8)")
        }
        c if matches!(
            c.general_category(),
            GeneralCategory::Format
                | GeneralCategory::Surrogate
                | GeneralCategory::PrivateUse
                | GeneralCategory::Unassigned
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        ) =>
        {
            Some("invisible, format, private-use and unassigned characters are not allowed")
        }
        _ => None,
    }
}

fn is_windows_device(seg: &str) -> bool {
    let stem = seg.split('.').next().unwrap_or(seg).trim_end();
    let upper = stem.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        _ => {
            let bytes = upper.as_bytes();
            (upper.starts_with("COM") || upper.starts_with("LPT"))
                && (bytes.len() == 4 && bytes[3].is_ascii_digit()
                    || matches!(&upper[3..], "¹" | "²" | "³"))
        }
    }
}

/// A path safe to echo in an error: control and format characters escaped.
pub(crate) fn printable(raw: &str) -> String {
    raw.chars()
        .flat_map(|c| {
            if forbidden_char(c).is_some() && c != '\\' && c != ':' {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn shorten(raw: &str) -> String {
    let mut end = 60.min(raw.len());
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", printable(&raw[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORES: &[&str] = &["memories", "team"];

    fn check_ok(raw: &str, store: usize, rel: &str) {
        match parse(raw, STORES) {
            Ok(Target::Path(p)) => {
                assert_eq!((p.store, p.rel()), (store, rel.to_owned()), "{raw:?}")
            }
            other => panic!("{raw:?} should be accepted, got {other:?}"),
        }
    }

    fn check_err(raw: &str) {
        assert!(parse(raw, STORES).is_err(), "{raw:?} should be rejected");
    }

    #[test]
    fn accepts_ordinary_names() {
        check_ok("/memories/notes/rust.md", 0, "notes/rust.md");
        check_ok("notes/rust.md", 0, "notes/rust.md");
        check_ok("/team/a b (1) 100%.md", 1, "a b (1) 100%.md");
        check_ok("/memories/v2..3.md", 0, "v2..3.md");
        check_ok("/memories/%2e%2e%2fetc", 0, "%2e%2e%2fetc");
        check_ok("/memories/заметки/数据库.md", 0, "заметки/数据库.md");
        check_ok("/memories/notes/", 0, "notes");
        check_ok("/memories", 0, "");
        check_ok("/memories/.hidden.md", 0, ".hidden.md");
        assert_eq!(parse("/", STORES).unwrap(), Target::AllStores);
    }

    #[test]
    fn rejects_hostile_forms() {
        for raw in [
            "",
            "/memories/../etc/passwd",
            "../x",
            "/memories/a/./b",
            "/memories/a//b",
            "/memoriesX/a",
            "/etc/passwd",
            "/memories/.. /x",
            "/memories/x.",
            "/memories/x ",
            "/memories/...",
            "/memories/a\\b",
            "C:\\x",
            "/memories/c:x",
            "~/x",
            "/memories/~root",
            "/memories/a\u{0}b",
            "/memories/a\nb",
            "/memories/a\u{200b}b",
            "/memories/a\u{202e}b",
            "/memories/a\u{2215}b",
            "/memories/a\u{ff0f}b",
            "/memories/a\u{2216}b",
            "/memories/a\u{27cb}b",
            "/memories/a\u{27cd}b",
            "/memories/a\u{1735}b",
            "/memories/a\u{2f03}b",
            "/memories/a\u{31d3}b",
            "/memories/a\u{31d4}b",
            "/memories/CON",
            "/memories/nul.txt",
            "/memories/com1",
            "/memories/.memdir/log",
            "/memories/a/.MEMDIR-tmp-1",
            "/memories/e\u{301}.md",
            "//server/share",
        ] {
            check_err(raw);
        }
        check_err(&format!("/memories/{}", "a".repeat(1100)));
        check_err(&format!("/memories/{}", "a".repeat(256)));
    }

    /// Regression (found by the `path` fuzz target): the length limit was checked on the
    /// raw input only, so a relative path of 1,015 bytes was accepted while its canonical
    /// form `/memories/...` (1,025 bytes), which results show, was refused.
    #[test]
    fn the_length_limit_holds_for_the_canonical_form() {
        let a = "a".repeat(255);
        let rel = format!("{a}/{a}/{a}/{}", "a".repeat(247));
        assert_eq!(rel.len(), 1015);
        check_err(&rel);
        let fits = &rel[..rel.len() - 1];
        let p = parse_path(fits, STORES).unwrap();
        assert_eq!(p.canonical().len(), MAX_PATH_BYTES);
        assert_eq!(parse_path(&p.canonical(), STORES).unwrap(), p);
    }
}
