//! `memory_edit`: changing part of a memory (replace, insert, append) under the store's
//! lock, against the bytes on disk at that moment; a rename is handed to `rename`. The
//! text operations themselves are `crate::edit`'s; this file resolves, checks and stores.

use super::mutation::{NewText, check_precondition, names_folder, normalise_sha, store_text};
use super::{Current, Memdir, rename};
use crate::edit::{self, Edited};
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::secrets;
use crate::store::{EntryKind, WriteMode};
use crate::text;

/// Bytes of the result budget kept for an edit result's text besides its snippet.
const SNIPPET_NOTE_ROOM: usize = 1024;

/// One `memory_edit` operation.
#[derive(Debug)]
pub enum EditOp<'a> {
    Replace {
        old: &'a str,
        new: &'a str,
        all: bool,
    },
    Insert {
        after_line: i64,
        text: &'a str,
    },
    Append {
        text: &'a str,
    },
    Rename {
        new_path: &'a str,
    },
}

/// `memory_edit`'s input.
#[derive(Debug)]
pub struct EditRequest<'a> {
    pub path: &'a str,
    pub op: EditOp<'a>,
    pub expected_sha256: Option<&'a str>,
    pub actor: &'a str,
}

/// `memory_edit`'s result.
#[derive(Debug)]
pub struct EditResult {
    /// Where the memory is now (the new path after a rename).
    pub path: String,
    /// The file's hash; `None` for a folder moved (it has no content of its own).
    pub content_sha256: Option<String>,
    /// The file's size, or the total size of the files in a folder moved.
    pub size_bytes: u64,
    /// For a folder moved: how many files moved with it.
    pub file_count: Option<u64>,
    /// Numbered lines around the change (empty for a rename).
    pub snippet: String,
    pub unchanged: bool,
    /// The path before a rename.
    pub renamed_from: Option<String>,
    /// A secret the memory held before this edit, which the edit kept: the edit is not
    /// refused for it (it only scans what it adds), but it should be removed.
    pub stored_secret: Option<(&'static str, usize)>,
    /// The last history version this edit made.
    pub version: Option<u64>,
}

impl EditRequest<'_> {
    pub fn run(&self, md: &Memdir) -> Result<EditResult> {
        if let EditOp::Rename { new_path } = self.op {
            // A folder moves too.
            let p = md.mutable_path(self.path)?;
            let expected = self.expected_sha256.map(normalise_sha).transpose()?;
            check_folder_names(md, &p, self.path, new_path)?;
            return rename::rename(md, &p, new_path, expected.as_deref(), self.actor);
        }
        let p = md.file_path(self.path)?;
        let expected = self.expected_sha256.map(normalise_sha).transpose()?;
        let rec = md.recorder(&p)?;
        let cur = md.current(&p)?.ok_or_else(|| Error::NotFound {
            path: p.canonical(),
        })?;
        check_precondition(&p, expected.as_deref(), Some(&cur), None)?;
        let Edited {
            text: new_text,
            changed,
            ..
        } = apply(md, &p, &cur, &self.op)?;
        let snippet_budget = md
            .settings
            .result_budget
            .saturating_sub(SNIPPET_NOTE_ROOM + p.canonical().len());
        let snippet = edit::snippet(&new_text, &changed, snippet_budget);
        let new_sha = text::sha256_hex(new_text.as_bytes());
        let unchanged = new_sha == cur.sha256;
        let mut version = None;
        let mut stored_secret = None;
        if !unchanged {
            stored_secret = check_added(md, &p, &cur, &new_text)?;
            let new = NewText {
                content: &new_text,
                sha256: &new_sha,
                actor: self.actor,
                mode: WriteMode::Replace,
            };
            version = store_text(md, rec, &p, Some(&cur), new)?;
        }
        Ok(EditResult {
            path: p.canonical(),
            content_sha256: Some(new_sha),
            size_bytes: new_text.len() as u64,
            file_count: None,
            snippet,
            unchanged,
            renamed_from: None,
            stored_secret,
            version,
        })
    }
}

/// A trailing `/` names a folder: a file is not moved as one.
fn check_folder_names(md: &Memdir, p: &MemPath, raw: &str, new_path: &str) -> Result<()> {
    if !names_folder(raw) && !names_folder(new_path) {
        return Ok(());
    }
    if md.store(p).entry_kind(p)? != Some(EntryKind::File) {
        return Ok(());
    }
    Err(if names_folder(raw) {
        Error::NotAFolder {
            path: p.canonical(),
        }
    } else {
        Error::invalid_path(
            new_path,
            "a path ending in `/` names a folder, and this moves a file: drop the `/` and name the file, e.g. `notes/todo.md`",
        )
    })
}

/// Applies a text operation to the current text.
fn apply(md: &Memdir, p: &MemPath, cur: &Current, op: &EditOp) -> Result<Edited> {
    match *op {
        EditOp::Replace { old, new, all } => {
            if all {
                check_replace_all_size(md, p, cur, old, new)?;
            }
            edit::replace(&cur.text, &p.canonical(), old, new, all)
        }
        EditOp::Insert { after_line, text } => edit::insert(&cur.text, after_line, text),
        EditOp::Append { text } => Ok(edit::append(&cur.text, text)),
        EditOp::Rename { .. } => unreachable!("a rename is not a text operation"),
    }
}

/// Refuses a replace-all that would outgrow the size limit before it is built: a short
/// `old` found often, with a long `new`, could otherwise ask for gigabytes.
fn check_replace_all_size(
    md: &Memdir,
    p: &MemPath,
    cur: &Current,
    old: &str,
    new: &str,
) -> Result<()> {
    let forms = edit::crlf_forms(&cur.text, old, new);
    let (old_form, new_form) = forms
        .as_ref()
        .map_or((old, new), |(o, n)| (o.as_str(), n.as_str()));
    if new_form.len() > old_form.len() && !old_form.is_empty() {
        let grows =
            cur.text.matches(old_form).count() as u64 * (new_form.len() - old_form.len()) as u64;
        let size = cur.text.len() as u64 + grows;
        let max = md.settings.max_file_bytes;
        if size > max {
            return Err(Error::TooLarge {
                path: p.canonical(),
                size,
                max,
            });
        }
    }
    Ok(())
}

/// Size and credential checks on an edit's result. Only what the edit adds is refused:
/// a secret someone saved in the file before must not block every later edit, even of
/// other lines; it is returned, to be reported.
fn check_added(
    md: &Memdir,
    p: &MemPath,
    cur: &Current,
    new_text: &str,
) -> Result<Option<(&'static str, usize)>> {
    md.check_size(p, new_text)?;
    if md.settings.allow_secrets {
        return Ok(None);
    }
    if let Some((rule, line)) = secrets::added(&cur.text, new_text) {
        return Err(Error::Secret {
            path: p.canonical(),
            rule,
            line,
        });
    }
    Ok(secrets::find(new_text))
}
