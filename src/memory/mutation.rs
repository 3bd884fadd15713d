//! What every mutation shares: resolving a path it may change, checking content and the
//! caller's `expected_sha256`, and storing one file's new text as a recorded version.
//! The mutations themselves are `write`, `edit`, `rename` and `delete`.

use super::{Current, Memdir};
use crate::error::{Error, Result};
use crate::history::{Draft, Op, Recorder};
use crate::path::MemPath;
use crate::search::fresh::Change;
use crate::secrets;
use crate::store::{EntryKind, WriteMode};

impl Memdir {
    /// A path that a mutation may target: not a store root, in a writable store.
    pub(super) fn mutable_path(&self, raw: &str) -> Result<MemPath> {
        let p = self.path(raw)?;
        if p.is_root() {
            return Err(Error::invalid_path(
                raw,
                "the store folder itself cannot be written, edited, moved or deleted; name a memory inside it",
            ));
        }
        let store = self.store(&p);
        if store.read_only {
            return Err(Error::ReadOnly {
                store: store.name.clone(),
                what: "changing memories",
            });
        }
        Ok(p)
    }

    /// A mutable path that names a file: a trailing `/` (a folder) is refused rather than
    /// dropped, so `notes/` never becomes a file named `notes`.
    pub(super) fn file_path(&self, raw: &str) -> Result<MemPath> {
        if names_folder(raw) {
            return Err(Error::invalid_path(
                raw,
                "a path ending in `/` names a folder, and this changes a file: drop the `/` and name the file, e.g. `notes/todo.md`",
            ));
        }
        self.mutable_path(raw)
    }

    /// Size and credential checks on content about to be stored.
    pub(super) fn check_content(&self, p: &MemPath, content: &str) -> Result<()> {
        self.check_size(p, content)?;
        if !self.settings.allow_secrets
            && let Some((rule, line)) = secrets::find(content)
        {
            return Err(Error::Secret {
                path: p.canonical(),
                rule,
                line,
            });
        }
        Ok(())
    }

    pub(super) fn check_size(&self, p: &MemPath, content: &str) -> Result<()> {
        let max = self.settings.max_file_bytes;
        if content.len() as u64 > max {
            return Err(Error::TooLarge {
                path: p.canonical(),
                size: content.len() as u64,
                max,
            });
        }
        Ok(())
    }
}

/// A raw path ending in `/`, which names a folder (never a store root alone).
pub(super) fn names_folder(raw: &str) -> bool {
    raw.len() > 1 && raw.ends_with('/')
}

/// Refuses `raw` written as a folder (a trailing `/`) when `p` is something else, as
/// every tool that takes a folder path does: `a.md/` is not `a.md`.
pub(super) fn folder_form_fits(md: &Memdir, raw: &str, p: &MemPath) -> Result<()> {
    if !names_folder(raw) || p.is_root() {
        return Ok(());
    }
    // Followed as every tool follows a link that stays inside the store.
    match md.store(p).metadata(p)? {
        Some(m) if m.kind != EntryKind::Dir => Err(not_a_folder(p, m.kind)),
        _ => Ok(()),
    }
}

/// The error for `p`, written as a folder, being an entry of `kind` instead: a link or
/// a special file is named for what it is, with the way to name only it.
pub(super) fn not_a_folder(p: &MemPath, kind: EntryKind) -> Error {
    let path = p.canonical();
    match kind {
        EntryKind::Symlink => Error::LinkNotFolder {
            path,
            kind: "symbolic link",
        },
        EntryKind::Special(kind) => Error::LinkNotFolder { path, kind },
        _ => Error::NotAFolder { path },
    }
}

/// Accepts a sha256 in either case; anything else is a clear error.
pub(super) fn normalise_sha(s: &str) -> Result<String> {
    let s = s.trim();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(Error::MalformedSha256 {
            got: s.chars().take(80).collect(),
        })
    }
}

/// Checks the caller's `expected_sha256` (normalised) against the memory as it is now.
/// Strict: any mismatch fails, also when the memory already holds exactly the content a
/// write sends (`sent`, the sha256 of a write's content; `None` for other mutations),
/// which the error then says. Never a no-op success: two racers that both read `n` and
/// both write `n + 1` would otherwise both succeed, and one increment would be lost.
pub(super) fn check_precondition(
    p: &MemPath,
    expected: Option<&str>,
    current: Option<&Current>,
    sent: Option<&str>,
) -> Result<()> {
    let Some(expected) = expected else {
        return Ok(());
    };
    match current {
        None => Err(Error::PreconditionMissing {
            path: p.canonical(),
            expected: expected.to_owned(),
        }),
        Some(cur) if cur.sha256 != expected => Err(Error::Precondition {
            path: p.canonical(),
            expected: expected.to_owned(),
            current: cur.sha256.clone(),
            held: sent == Some(cur.sha256.as_str()),
        }),
        Some(_) => Ok(()),
    }
}

/// One file's new text, about to be stored as a version.
pub(super) struct NewText<'a> {
    pub content: &'a str,
    pub sha256: &'a str,
    pub actor: &'a str,
    pub mode: WriteMode,
}

/// Records `new` as the next version of `p` (created when there is no `current`),
/// writes it durably and tells the search index; returns the version made. A failed
/// write abandons the records.
pub(super) fn store_text(
    md: &Memdir,
    mut rec: Recorder<'_>,
    p: &MemPath,
    current: Option<&Current>,
    new: NewText<'_>,
) -> Result<Option<u64>> {
    let rel = p.rel();
    rec.note_current(
        &rel,
        current.map(|c| (c.sha256.as_str(), c.text.as_bytes())),
    )?;
    let op = if current.is_none() {
        Op::Created
    } else {
        Op::Modified
    };
    rec.note(
        Draft {
            op,
            path: rel,
            from: None,
            actor: new.actor.to_owned(),
            sha256: new.sha256.to_owned(),
            bytes: None,
            size: new.content.len() as u64,
            reason: None,
        },
        Some(new.content.as_bytes()),
    )?;
    rec.begin()?;
    let stamp = match md.store(p).write(p, new.content.as_bytes(), new.mode) {
        Ok(stamp) => stamp,
        Err(e) => {
            rec.abandon();
            return Err(e);
        }
    };
    let version = rec.commit()?.last().copied();
    md.index_changed(
        p,
        Change::Written {
            text: new.content,
            stamp,
        },
    );
    Ok(version)
}
