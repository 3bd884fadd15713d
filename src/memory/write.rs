//! `memory_write`: writing a memory's whole content, or restoring an earlier version's
//! content as a new version. It runs under the store's cross-process lock (held by its
//! history `Recorder`), checks its precondition against the bytes on disk at that
//! moment, and writes through the store's durable writes.

use super::Memdir;
use super::mutation::{NewText, check_precondition, normalise_sha, store_text};
use crate::error::{Error, Result};
use crate::history;
use crate::path::MemPath;
use crate::store::{EntryKind, WriteMode};
use crate::text;

/// `memory_write`'s input.
#[derive(Debug)]
pub struct WriteRequest<'a> {
    pub path: &'a str,
    pub content: &'a str,
    pub if_absent: bool,
    pub expected_sha256: Option<&'a str>,
    /// Who asks: the MCP client's name and version, or `cli`.
    pub actor: &'a str,
}

/// `memory_write {restore_version}`'s input: the content of an earlier version, written
/// under the same preconditions as any write.
#[derive(Debug)]
pub struct RestoreRequest<'a> {
    pub path: &'a str,
    pub version: u64,
    pub if_absent: bool,
    pub expected_sha256: Option<&'a str>,
    pub actor: &'a str,
}

/// `memory_write`'s result.
#[derive(Debug)]
pub struct WriteResult {
    pub path: String,
    pub created: bool,
    pub content_sha256: String,
    pub size_bytes: u64,
    /// The stored content already equalled the request (and the precondition, if any,
    /// held): nothing was written.
    pub unchanged: bool,
    /// The history version this write made (none for a no-op or with history off).
    pub version: Option<u64>,
}

impl WriteRequest<'_> {
    pub fn run(&self, md: &Memdir) -> Result<WriteResult> {
        let p = md.file_path(self.path)?;
        write_content(
            md,
            &p,
            self.content,
            write_mode(self.if_absent),
            self.expected_sha256,
            self.actor,
        )
    }
}

impl RestoreRequest<'_> {
    /// Writes the content of history version `version` at `path` (which may be where it
    /// was, or elsewhere; the memory may have been deleted since), as a new version.
    pub fn run(&self, md: &Memdir) -> Result<WriteResult> {
        let version = self.version;
        let p = md.file_path(self.path)?;
        let store = md.store(&p);
        let record = history::records(store)?
            .into_iter()
            .find(|r| r.version == version)
            .ok_or_else(|| Error::NoSuchVersion {
                store: store.name.clone(),
                version,
            })?;
        if record.redacted {
            return Err(Error::RedactedVersion { version });
        }
        let bytes = md
            .history_content(p.store, &record.sha256)?
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "the content of version {version} is no longer kept (retention)"
                ))
            })?;
        let content = String::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
            path: p.canonical(),
        })?;
        write_content(
            md,
            &p,
            &content,
            write_mode(self.if_absent),
            self.expected_sha256,
            self.actor,
        )
    }
}

/// `if_absent` as the store's write mode.
fn write_mode(if_absent: bool) -> WriteMode {
    if if_absent {
        WriteMode::CreateNew
    } else {
        WriteMode::Replace
    }
}

fn write_content(
    md: &Memdir,
    p: &MemPath,
    content: &str,
    mode: WriteMode,
    expected: Option<&str>,
    actor: &str,
) -> Result<WriteResult> {
    if mode == WriteMode::CreateNew && expected.is_some() {
        return Err(Error::InvalidArgument(
            "if_absent (create only, when nothing is there) and expected_sha256 (replace only that content) cannot both hold: give one".into(),
        ));
    }
    let expected = expected.map(normalise_sha).transpose()?;
    md.check_content(p, content)?;
    let store = md.store(p);
    let rec = md.recorder(p)?;
    let current = match md.current(p) {
        // A symlink planted at the destination that leads out of the store, or into its
        // state folder, is replaced by the write's rename, never followed (its parent
        // resolved inside). Not under a precondition: its sha256 names content that no
        // read could have shown at this path, so the refusal that a read got is the
        // answer (never "the memory does not exist").
        Err(e @ (Error::Escape { .. } | Error::StateLink { .. }))
            if store.entry_kind(p)? == Some(EntryKind::Symlink) =>
        {
            if expected.is_some() {
                return Err(e);
            }
            None
        }
        other => other?,
    };
    let new_sha = text::sha256_hex(content.as_bytes());
    let mut result = WriteResult {
        path: p.canonical(),
        created: current.is_none(),
        content_sha256: new_sha,
        size_bytes: content.len() as u64,
        unchanged: false,
        version: None,
    };
    // Preconditions first, and strictly: a stale sha256 or a create-only write on an
    // existing memory fails even when the memory already holds exactly this content
    // (the error says so). Two racers that both read n and both write n + 1 must not
    // both succeed, or a client that retries on failure loses an increment.
    check_precondition(
        p,
        expected.as_deref(),
        current.as_ref(),
        Some(&result.content_sha256),
    )?;
    if let Some(cur) = &current
        && mode == WriteMode::CreateNew
    {
        return Err(Error::Occupied {
            path: p.canonical(),
            current: cur.sha256.clone(),
            held: cur.sha256 == result.content_sha256,
        });
    }
    // Without a precondition (or with one that holds), the state already stored is a
    // no-op that records no version.
    if let Some(cur) = &current
        && cur.sha256 == result.content_sha256
    {
        result.unchanged = true;
        return Ok(result);
    }
    result.version = store_text(
        md,
        rec,
        p,
        current.as_ref(),
        NewText {
            content,
            sha256: &result.content_sha256,
            actor,
            mode,
        },
    )?;
    Ok(result)
}
