//! Every mutation: write, edit (replace, insert, append, rename) and delete. Each runs
//! under the store's cross-process lock, checks its precondition against the bytes on
//! disk at that moment, and changes the disk only through the store's durable writes.

use super::sync::Change;
use super::{Current, Memdir};
use crate::edit::{self, Edited};
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::secrets;
use crate::store::{EntryKind, WriteMode};
use crate::text;

/// `memory_write`'s input.
#[derive(Debug)]
pub struct WriteRequest<'a> {
    pub path: &'a str,
    pub content: &'a str,
    pub if_absent: bool,
    pub expected_sha256: Option<&'a str>,
}

/// `memory_write`'s result.
#[derive(Debug)]
pub struct WriteResult {
    pub path: String,
    pub created: bool,
    pub content_sha256: String,
    pub size_bytes: u64,
    /// The stored content already equalled the request: nothing was written.
    pub unchanged: bool,
}

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
}

/// `memory_edit`'s result.
#[derive(Debug)]
pub struct EditResult {
    /// Where the memory is now (the new path after a rename).
    pub path: String,
    pub content_sha256: String,
    pub size_bytes: u64,
    /// Numbered lines around the change (empty for a rename).
    pub snippet: String,
    pub unchanged: bool,
    /// The path before a rename.
    pub renamed_from: Option<String>,
}

/// `memory_delete`'s result.
#[derive(Debug)]
pub struct DeleteResult {
    pub path: String,
    /// Canonical paths of every file removed.
    pub deleted_files: Vec<String>,
}

impl Memdir {
    pub fn write(&self, req: &WriteRequest) -> Result<WriteResult> {
        let p = self.mutable_path(req.path)?;
        let expected = req.expected_sha256.map(normalise_sha).transpose()?;
        self.check_content(&p, req.content)?;
        let store = self.store(&p);
        let _lock = store.lock()?;
        let current = match self.current(&p) {
            // A symlink planted at the destination that leads out of the store is
            // replaced by the write's rename, never followed (its parent resolved inside).
            Err(Error::Escape { .. }) if store.entry_kind(&p)? == Some(EntryKind::Symlink) => None,
            other => other?,
        };
        let new_sha = text::sha256_hex(req.content.as_bytes());
        // The precondition comes first: two racers that both read n and both write n + 1
        // must not both succeed, even though the second finds its content already there.
        check_precondition(&p, expected.as_deref(), current.as_ref())?;
        if let Some(cur) = &current {
            if cur.sha256 == new_sha {
                return Ok(WriteResult {
                    path: p.canonical(),
                    created: false,
                    content_sha256: new_sha,
                    size_bytes: req.content.len() as u64,
                    unchanged: true,
                });
            }
            if req.if_absent {
                return Err(Error::Occupied {
                    path: p.canonical(),
                    current: cur.sha256.clone(),
                });
            }
        }
        let mode = if req.if_absent {
            WriteMode::CreateNew
        } else {
            WriteMode::Replace
        };
        let stamp = store.write(&p, req.content.as_bytes(), mode)?;
        self.indexed(
            &p,
            Change::Written {
                text: req.content,
                stamp,
            },
        );
        Ok(WriteResult {
            path: p.canonical(),
            created: current.is_none(),
            content_sha256: new_sha,
            size_bytes: req.content.len() as u64,
            unchanged: false,
        })
    }

    pub fn edit(&self, req: &EditRequest) -> Result<EditResult> {
        let p = self.mutable_path(req.path)?;
        let expected = req.expected_sha256.map(normalise_sha).transpose()?;
        if let EditOp::Rename { new_path } = req.op {
            return self.rename(&p, new_path, expected.as_deref());
        }
        let store = self.store(&p);
        let _lock = store.lock()?;
        let cur = self.current(&p)?.ok_or_else(|| Error::NotFound {
            path: p.canonical(),
        })?;
        check_precondition(&p, expected.as_deref(), Some(&cur))?;
        let canonical = p.canonical();
        let edited = match req.op {
            EditOp::Replace { old, new, all } => {
                edit::replace(&cur.text, &canonical, old, new, all)?
            }
            EditOp::Insert { after_line, text } => edit::insert(&cur.text, after_line, text)?,
            EditOp::Append { text } => edit::append(&cur.text, text),
            EditOp::Rename { .. } => unreachable!("handled above"),
        };
        let Edited {
            text: new_text,
            first_line,
            last_line,
        } = edited;
        let snippet = edit::snippet(&new_text, first_line, last_line);
        let new_sha = text::sha256_hex(new_text.as_bytes());
        let unchanged = new_sha == cur.sha256;
        if !unchanged {
            self.check_content(&p, &new_text)?;
            let stamp = store.write(&p, new_text.as_bytes(), WriteMode::Replace)?;
            self.indexed(
                &p,
                Change::Written {
                    text: &new_text,
                    stamp,
                },
            );
        }
        Ok(EditResult {
            path: canonical,
            content_sha256: new_sha,
            size_bytes: new_text.len() as u64,
            snippet,
            unchanged,
            renamed_from: None,
        })
    }

    fn rename(&self, from: &MemPath, new_path: &str, expected: Option<&str>) -> Result<EditResult> {
        let to = self.mutable_path(new_path)?;
        if to.store != from.store {
            return Err(Error::InvalidArgument(format!(
                "cannot move `{}` to another store (`{}`); write it there and delete the original",
                from.canonical(),
                to.canonical()
            )));
        }
        if to == *from {
            return Err(Error::InvalidArgument(format!(
                "new_path is the same as path (`{}`)",
                from.canonical()
            )));
        }
        let store = self.store(from);
        let _lock = store.lock()?;
        let kind = store.entry_kind(from)?.ok_or_else(|| Error::NotFound {
            path: from.canonical(),
        })?;
        let moved = if kind == EntryKind::Dir {
            if expected.is_some() {
                return Err(Error::InvalidArgument(
                    "expected_sha256 applies to files, not folders".into(),
                ));
            }
            None
        } else {
            let cur = self.current(from)?.ok_or_else(|| Error::NotFound {
                path: from.canonical(),
            })?;
            check_precondition(from, expected, Some(&cur))?;
            Some(cur)
        };
        store.rename(from, &to).map_err(|e| match e {
            Error::AlreadyExists { .. } => Error::AlreadyExists {
                path: to.canonical(),
            },
            other => other,
        })?;
        self.indexed(from, Change::Removed);
        match &moved {
            // A rename keeps the inode and mtime: the stamp moves with the file.
            Some(cur) => self.indexed(
                &to,
                Change::Written {
                    text: &cur.text,
                    stamp: cur.stamp,
                },
            ),
            None => self.resync(&to),
        }
        let (sha, size) = moved
            .map(|cur| (cur.sha256, cur.text.len() as u64))
            .unwrap_or_default();
        Ok(EditResult {
            path: to.canonical(),
            content_sha256: sha,
            size_bytes: size,
            snippet: String::new(),
            unchanged: false,
            renamed_from: Some(from.canonical()),
        })
    }

    pub fn delete(&self, raw: &str, expected_sha256: Option<&str>) -> Result<DeleteResult> {
        let p = self.mutable_path(raw)?;
        let expected = expected_sha256.map(normalise_sha).transpose()?;
        let store = self.store(&p);
        let _lock = store.lock()?;
        let kind = store.entry_kind(&p)?.ok_or_else(|| Error::NotFound {
            path: p.canonical(),
        })?;
        let mut deleted_files = Vec::new();
        match kind {
            EntryKind::Dir => {
                if expected.is_some() {
                    return Err(Error::InvalidArgument(
                        "expected_sha256 applies to files, not folders".into(),
                    ));
                }
                let mut entries = store.walk_everything(&p)?;
                // Deepest first, so every folder is empty when its turn comes.
                entries.sort_by(|a, b| {
                    b.depth
                        .cmp(&a.depth)
                        .then(a.path.segments.cmp(&b.path.segments))
                });
                for entry in &entries {
                    if entry.kind == EntryKind::Dir {
                        store.remove_empty_dir(&entry.path)?;
                    } else {
                        store.remove_file(&entry.path)?;
                        deleted_files.push(entry.path.canonical());
                    }
                }
                store.remove_empty_dir(&p)?;
                self.indexed(&p, Change::Removed);
                deleted_files.sort();
            }
            _ => {
                if expected.is_some() {
                    let cur = self.current(&p)?;
                    check_precondition(&p, expected.as_deref(), cur.as_ref())?;
                }
                store.remove_file(&p)?;
                self.indexed(&p, Change::Removed);
                deleted_files.push(p.canonical());
            }
        }
        Ok(DeleteResult {
            path: p.canonical(),
            deleted_files,
        })
    }

    /// A path that a mutation may target: not a store root, in a writable store.
    fn mutable_path(&self, raw: &str) -> Result<MemPath> {
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

    /// Size and credential checks on content about to be stored.
    fn check_content(&self, p: &MemPath, content: &str) -> Result<()> {
        let max = self.settings.max_file_bytes;
        if content.len() as u64 > max {
            return Err(Error::TooLarge {
                path: p.canonical(),
                size: content.len() as u64,
                max,
            });
        }
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
}

/// Accepts a sha256 in either case; anything else is a clear error.
fn normalise_sha(s: &str) -> Result<String> {
    let s = s.trim();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(Error::InvalidArgument(format!(
            "expected_sha256 must be 64 hex characters (the content_sha256 from memory_read or memory_list), got `{}`",
            s.chars().take(80).collect::<String>()
        )))
    }
}

fn check_precondition(
    p: &MemPath,
    expected: Option<&str>,
    current: Option<&Current>,
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
        }),
        Some(_) => Ok(()),
    }
}
