//! Fuzz target `path`: arbitrary bytes as a memory path, through layer 1 (`path::parse`)
//! and then a real read in a store with an escape bait next to it.
//!
//! Invariants (a panic is a finding):
//! - invalid UTF-8 never reaches the parser as such; its lossy form (with U+FFFD) is refused;
//! - an accepted path obeys docs/paths.md segment by segment (checked by an independent model
//!   below, not by calling the rules under test), is NFC and at most 1,024 bytes;
//! - rendering `canonical()` (and `rel()` for the first store) and parsing again gives the
//!   same `MemPath`;
//! - the segments, joined under a root and normalised lexically, never leave the root;
//! - `memory::read::read` of the input answers `Ok` or a clean `Err`: it never panics, never
//!   returns the canary that lives outside the store (reachable only through a symlink
//!   that leaves the store, or a hard link), and its errors never show the host path.

#![no_main]

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use memdir::memory::read::read;
use memdir::memory::{IndexLocation, Memdir, Settings};
use memdir::path::{MemPath, Target, parse, parse_path};
use memdir::store::StoreConfig;
use unicode_normalization::is_nfc;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

const STORES: &[&str] = &["memories", "other"];

/// Unique bytes that live only outside the stores.
const CANARY: &str = "CANARY-path-fuzz-5d1c9e: outside every store, never to be read\n";

/// A temp folder with the two stores, `outside/`, and the bait inside `memories`.
struct Fixture {
    _tmp: tempfile::TempDir,
    /// What an error showing a host path would contain.
    host: String,
    memdir: Memdir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let tmp = tempfile::Builder::new()
            .prefix("memdir-fuzz-path-")
            .tempdir()
            .expect("temp dir");
        let root = tmp.path();
        let store = root.join("memories");
        let outside = root.join("outside");
        std::fs::create_dir_all(store.join("notes")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("canary"), CANARY).unwrap();
        std::fs::write(store.join("notes.md"), "inside the store\n").unwrap();
        std::fs::write(store.join("notes/a.md"), "a\n").unwrap();
        // Escapes the fuzzer can reach by name (seeds and the dictionary spell them).
        std::os::unix::fs::symlink("../outside", store.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.join("canary"), store.join("abs")).unwrap();
        std::os::unix::fs::symlink("../../outside/canary", store.join("notes/up")).unwrap();
        std::fs::hard_link(outside.join("canary"), store.join("hard.md")).unwrap();
        // A symlink that stays inside is fine to follow.
        std::os::unix::fs::symlink("notes.md", store.join("in.md")).unwrap();
        let configs: Vec<StoreConfig> = STORES
            .iter()
            .map(|name| StoreConfig {
                name: (*name).to_owned(),
                location: memdir::store::Location::Folder(root.join(name)),
                read_only: false,
                description: None,
            })
            .collect();
        let settings = Settings {
            index: IndexLocation::Off,
            history: false,
            ..Settings::default()
        };
        let memdir = Memdir::open(&configs, settings).expect("open the stores");
        Fixture {
            // The temp folder's random name: part of every host path of the stores, and
            // unlike the whole path it cannot be assembled from pieces of the input and
            // the `/memories/` prefix of a rendered path.
            host: root
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            _tmp: tmp,
            memdir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    match std::str::from_utf8(data) {
        Ok(raw) => check(raw),
        Err(_) => {
            // What a transport that decodes lossily would hand over must still be refused.
            let lossy = String::from_utf8_lossy(data);
            assert!(
                parse(&lossy, STORES).is_err(),
                "lossy-decoded invalid UTF-8 accepted: {lossy:?}"
            );
        }
    }
});

fn check(raw: &str) {
    let parsed = parse(raw, STORES);
    if let Ok(Target::AllStores) = parsed {
        assert!(
            raw == "/" || raw == "//",
            "only `/` (and `//`) is the top level: {raw:?}"
        );
        assert!(parse_path(raw, STORES).is_err());
    }
    if let Ok(Target::Path(p)) = &parsed {
        assert_eq!(parse_path(raw, STORES).as_ref().ok(), Some(p));
        check_accepted(raw, p);
    }
    check_read(raw);
}

fn check_accepted(raw: &str, p: &MemPath) {
    assert!(
        raw.len() <= 1024,
        "over 1,024 bytes accepted: {}",
        raw.len()
    );
    assert!(is_nfc(raw), "not NFC accepted: {raw:?}");
    assert!(!raw.starts_with('~'), "leading `~` accepted: {raw:?}");
    assert!(p.store < STORES.len());
    assert_eq!(p.store_name, STORES[p.store]);
    // The store is named by a whole first segment, or is the first store.
    match raw.strip_prefix('/') {
        Some(rest) => {
            let first = rest.split('/').next().unwrap_or_default();
            assert_eq!(
                first, STORES[p.store],
                "store prefix not by whole segment: {raw:?}"
            );
        }
        None => assert_eq!(p.store, 0, "a relative path is in the first store: {raw:?}"),
    }
    for seg in &p.segments {
        if let Some(why) = segment_violation(seg) {
            panic!("accepted {raw:?} with segment {seg:?}: {why}");
        }
    }
    // The segments are the path: nothing dropped, nothing decoded.
    let body = raw.strip_prefix('/').map_or(raw, |rest| {
        rest.split_once('/').map_or("", |(_, below)| below)
    });
    let body = body.strip_suffix('/').unwrap_or(body);
    assert_eq!(p.rel(), body, "segments differ from the path: {raw:?}");

    // Round trips through the rendered forms: results show `canonical()`, and an agent
    // must be able to pass any path it was shown back in.
    let again = parse_path(&p.canonical(), STORES)
        .unwrap_or_else(|e| panic!("canonical {:?} of {raw:?} refused: {e}", p.canonical()));
    assert_eq!(&again, p, "canonical round trip of {raw:?}");
    if p.store == 0 && !p.is_root() {
        let again = parse_path(&p.rel(), STORES)
            .unwrap_or_else(|e| panic!("rel {:?} of {raw:?} refused: {e}", p.rel()));
        assert_eq!(&again, p, "relative round trip of {raw:?}");
    }

    // Joined under a root and normalised lexically, the path stays below the root.
    let root = Path::new("/fake/root");
    let mut joined = root.to_path_buf();
    for seg in &p.segments {
        joined.push(seg);
    }
    let normal = normalise(&joined);
    assert!(
        normal.starts_with(root) && normal.components().count() == 3 + p.segments.len(),
        "{raw:?} leaves the root lexically: {}",
        normal.display()
    );
}

/// Why a segment breaks layer 1 of docs/paths.md, if it does: an independent statement of the
/// rules, so the parser is not checked against itself.
fn segment_violation(seg: &str) -> Option<&'static str> {
    if seg.is_empty() {
        return Some("empty segment");
    }
    if seg == "." || seg == ".." || seg.chars().all(|c| c == '.' || c == ' ') {
        return Some("dot segment");
    }
    if seg.ends_with('.') || seg.ends_with(' ') {
        return Some("trailing dot or space");
    }
    if seg.starts_with('~') {
        return Some("leading ~");
    }
    if seg.len() > 255 {
        return Some("segment over 255 bytes");
    }
    if !is_nfc(seg) {
        return Some("not NFC");
    }
    if seg
        .get(..7)
        .is_some_and(|head| head.eq_ignore_ascii_case(".memdir"))
    {
        return Some("reserved .memdir name");
    }
    for c in seg.chars() {
        match c {
            '/' | '\\' | ':' => return Some("separator, `\\` or `:`"),
            '\u{0}'..='\u{1f}' | '\u{7f}' => return Some("control character"),
            '\u{2215}' | '\u{ff0f}' | '\u{29f5}' | '\u{ff3c}' => return Some("look-alike slash"),
            '\u{fffd}' => return Some("replacement character"),
            _ => {}
        }
        if matches!(
            c.general_category(),
            GeneralCategory::Format | GeneralCategory::Control
        ) {
            return Some("format or control character");
        }
    }
    let stem = seg.split('.').next().unwrap_or(seg).trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    let device = matches!(upper.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (upper.len() == 4
            && (upper.starts_with("COM") || upper.starts_with("LPT"))
            && upper.as_bytes()[3].is_ascii_digit()
            && upper.as_bytes()[3] != b'0');
    if device {
        return Some("Windows device name");
    }
    None
}

/// Resolves `.` and `..` components without touching the disk.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn check_read(raw: &str) {
    let fx = fixture();
    // Errors name the path as the agent wrote it, so they may echo what the input spelled
    // (the fuzzer learns both strings from the comparisons below).
    let canary = CANARY.trim_end();
    let shown = |s: &str, secret: &str| s.contains(secret) && !raw.contains(secret);
    match read(&fx.memdir, raw, None, &memdir::render::read_notes_len) {
        Ok(r) => {
            let rendered = memdir::render::read(&r, None);
            let p = parse_path(raw, STORES).expect("a path that was read is valid");
            assert_eq!(
                r.path,
                p.canonical(),
                "a read shows its path in canonical form"
            );
            assert!(
                !r.content.contains(canary) && !rendered.contains(canary),
                "read {raw:?} returned the canary from outside the store"
            );
            assert!(
                !shown(&rendered, &fx.host),
                "read {raw:?} shows the host path"
            );
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(
                !shown(&msg, &fx.host),
                "error for {raw:?} shows the host path: {msg}"
            );
            assert!(
                !shown(&msg, canary),
                "error for {raw:?} shows the canary: {msg}"
            );
        }
    }
}
