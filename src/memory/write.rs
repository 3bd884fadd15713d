//! Every mutation: write, restore, edit (replace, insert, append, rename) and delete. Each
//! runs under the store's cross-process lock (held by its history `Recorder`), checks its
//! precondition against the bytes on disk at that moment, changes the disk only through
//! the store's durable writes, and records its versions.

use super::{Current, Memdir};
use crate::edit::{self, Edited};
use crate::error::{Error, MoveFault, Result};
use crate::history::{self, Draft, Op};
use crate::path::MemPath;
use crate::search::fresh::Change;
use crate::secrets;
use crate::store::{EntryKind, WriteMode};
use crate::text;

/// Longest `reason` a deletion keeps, in bytes.
pub const MAX_REASON_BYTES: usize = 1000;

/// Bytes of the result budget kept for an edit result's text besides its snippet.
const SNIPPET_NOTE_ROOM: usize = 1024;

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
    /// The stored content already equalled the request: nothing was written.
    pub unchanged: bool,
    /// `expected_sha256` named other content than was stored, but the memory already
    /// held the requested content, so the write succeeded as a no-op.
    pub precondition_stale: bool,
    /// The history version this write made (none for a no-op or with history off).
    pub version: Option<u64>,
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

/// `memory_delete`'s result.
#[derive(Debug)]
pub struct DeleteResult {
    pub path: String,
    /// Canonical paths of every file removed.
    pub deleted_files: Vec<String>,
    /// The history versions recording the deletions.
    pub versions: Vec<u64>,
}

impl Memdir {
    pub fn write(&self, req: &WriteRequest) -> Result<WriteResult> {
        let p = self.file_path(req.path)?;
        self.write_content(
            &p,
            req.content,
            req.if_absent,
            req.expected_sha256,
            req.actor,
        )
    }

    /// Writes the content of history version `version` at `path` (which may be where it
    /// was, or elsewhere; the memory may have been deleted since), as a new version.
    pub fn restore(&self, req: &RestoreRequest) -> Result<WriteResult> {
        let version = req.version;
        let p = self.file_path(req.path)?;
        let store = self.store(&p);
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
        let bytes = self
            .history_content(p.store, &record.sha256)?
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "the content of version {version} is no longer kept (retention)"
                ))
            })?;
        let content = String::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
            path: p.canonical(),
        })?;
        self.write_content(&p, &content, req.if_absent, req.expected_sha256, req.actor)
    }

    fn write_content(
        &self,
        p: &MemPath,
        content: &str,
        if_absent: bool,
        expected: Option<&str>,
        actor: &str,
    ) -> Result<WriteResult> {
        let expected = expected.map(normalise_sha).transpose()?;
        self.check_content(p, content)?;
        let store = self.store(p);
        let mut rec = self.recorder(p)?;
        let current = match self.current(p) {
            // A symlink planted at the destination that leads out of the store is
            // replaced by the write's rename, never followed (its parent resolved inside).
            Err(Error::Escape { .. }) if store.entry_kind(p)? == Some(EntryKind::Symlink) => None,
            other => other?,
        };
        let new_sha = text::sha256_hex(content.as_bytes());
        // A write of the state already stored is a no-op, whatever the precondition: a
        // write retried after its first reply was lost must not fail. A stale
        // precondition is reported, so two racers that both read n and both write n + 1
        // can tell: the second learns that its change was made by someone else.
        if let Some(cur) = &current
            && cur.sha256 == new_sha
        {
            return Ok(WriteResult {
                path: p.canonical(),
                created: false,
                content_sha256: new_sha,
                size_bytes: content.len() as u64,
                unchanged: true,
                precondition_stale: expected.as_ref().is_some_and(|e| *e != cur.sha256),
                version: None,
            });
        }
        check_precondition(p, expected.as_deref(), current.as_ref())?;
        if let Some(cur) = &current
            && if_absent
        {
            return Err(Error::Occupied {
                path: p.canonical(),
                current: cur.sha256.clone(),
            });
        }
        let rel = p.rel();
        rec.note_current(
            &rel,
            current
                .as_ref()
                .map(|c| (c.sha256.as_str(), c.text.as_bytes())),
        )?;
        let op = if current.is_none() {
            Op::Created
        } else {
            Op::Modified
        };
        rec.note(
            Draft {
                op,
                path: rel.clone(),
                from: None,
                actor: actor.to_owned(),
                sha256: new_sha.clone(),
                bytes: None,
                size: content.len() as u64,
                reason: None,
            },
            Some(content.as_bytes()),
        )?;
        rec.begin()?;
        let mode = if if_absent {
            WriteMode::CreateNew
        } else {
            WriteMode::Replace
        };
        let stamp = match store.write(p, content.as_bytes(), mode) {
            Ok(stamp) => stamp,
            Err(e) => {
                rec.abandon();
                return Err(e);
            }
        };
        let version = rec.commit()?.last().copied();
        self.index_changed(
            p,
            Change::Written {
                text: content,
                stamp,
            },
        );
        Ok(WriteResult {
            path: p.canonical(),
            created: current.is_none(),
            content_sha256: new_sha,
            size_bytes: content.len() as u64,
            unchanged: false,
            precondition_stale: false,
            version,
        })
    }

    pub fn edit(&self, req: &EditRequest) -> Result<EditResult> {
        let p = match req.op {
            // A folder moves too.
            EditOp::Rename { .. } => self.mutable_path(req.path)?,
            _ => self.file_path(req.path)?,
        };
        let expected = req.expected_sha256.map(normalise_sha).transpose()?;
        if let EditOp::Rename { new_path } = req.op {
            let names_folder = |raw: &str| raw.len() > 1 && raw.ends_with('/');
            if names_folder(req.path) || names_folder(new_path) {
                // A trailing `/` names a folder: a file is not moved as one.
                let store = self.store(&p);
                if store.entry_kind(&p)? == Some(EntryKind::File) {
                    return Err(if names_folder(req.path) {
                        Error::NotAFolder {
                            path: p.canonical(),
                        }
                    } else {
                        Error::invalid_path(
                            new_path,
                            "a path ending in `/` names a folder, and this moves a file: drop the `/` and name the file, e.g. `notes/todo.md`",
                        )
                    });
                }
            }
            return self.rename(&p, new_path, expected.as_deref(), req.actor);
        }
        let store = self.store(&p);
        let mut rec = self.recorder(&p)?;
        let cur = self.current(&p)?.ok_or_else(|| Error::NotFound {
            path: p.canonical(),
        })?;
        check_precondition(&p, expected.as_deref(), Some(&cur))?;
        let canonical = p.canonical();
        let edited = match req.op {
            EditOp::Replace { old, new, all } => {
                // Refused before it is built: a short old_str found often, with a long
                // new_str, could otherwise ask for gigabytes.
                let forms = if all {
                    edit::crlf_forms(&cur.text, old, new)
                } else {
                    None
                };
                let (old_form, new_form) = forms
                    .as_ref()
                    .map_or((old, new), |(o, n)| (o.as_str(), n.as_str()));
                if all && new_form.len() > old_form.len() && !old_form.is_empty() {
                    let grows = cur.text.matches(old_form).count() as u64
                        * (new_form.len() - old_form.len()) as u64;
                    let size = cur.text.len() as u64 + grows;
                    let max = self.settings.max_file_bytes;
                    if size > max {
                        return Err(Error::TooLarge {
                            path: canonical,
                            size,
                            max,
                        });
                    }
                }
                edit::replace(&cur.text, &canonical, old, new, all)?
            }
            EditOp::Insert { after_line, text } => edit::insert(&cur.text, after_line, text)?,
            EditOp::Append { text } => edit::append(&cur.text, text),
            EditOp::Rename { .. } => unreachable!("handled above"),
        };
        let Edited {
            text: new_text,
            changed,
            ..
        } = edited;
        let snippet_budget = self
            .settings
            .result_budget
            .saturating_sub(SNIPPET_NOTE_ROOM + p.canonical().len());
        let snippet = edit::snippet(&new_text, &changed, snippet_budget);
        let new_sha = text::sha256_hex(new_text.as_bytes());
        let unchanged = new_sha == cur.sha256;
        let mut version = None;
        let mut stored_secret = None;
        if !unchanged {
            self.check_size(&p, &new_text)?;
            if !self.settings.allow_secrets {
                // Only what the edit adds is refused: a secret someone saved in the file
                // before must not block every later edit, even of other lines.
                if let Some((rule, line)) = secrets::added(&cur.text, &new_text) {
                    return Err(Error::Secret {
                        path: canonical,
                        rule,
                        line,
                    });
                }
                stored_secret = secrets::find(&new_text);
            }
            let rel = p.rel();
            rec.note_current(&rel, Some((&cur.sha256, cur.text.as_bytes())))?;
            rec.note(
                Draft {
                    op: Op::Modified,
                    path: rel.clone(),
                    from: None,
                    actor: req.actor.to_owned(),
                    sha256: new_sha.clone(),
                    bytes: None,
                    size: new_text.len() as u64,
                    reason: None,
                },
                Some(new_text.as_bytes()),
            )?;
            rec.begin()?;
            let stamp = match store.write(&p, new_text.as_bytes(), WriteMode::Replace) {
                Ok(stamp) => stamp,
                Err(e) => {
                    rec.abandon();
                    return Err(e);
                }
            };
            version = rec.commit()?.last().copied();
            self.index_changed(
                &p,
                Change::Written {
                    text: &new_text,
                    stamp,
                },
            );
        }
        Ok(EditResult {
            path: canonical,
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

    fn rename(
        &self,
        from: &MemPath,
        new_path: &str,
        expected: Option<&str>,
        actor: &str,
    ) -> Result<EditResult> {
        let to = self.mutable_path(new_path)?;
        if to.store != from.store {
            return Err(Error::Move(MoveFault::AcrossStores {
                from: from.canonical(),
                to: to.canonical(),
            }));
        }
        if to == *from {
            return Err(Error::Move(MoveFault::OntoItself {
                path: from.canonical(),
            }));
        }
        let store = self.store(from);
        let mut rec = self.recorder(from)?;
        let kind = store.entry_kind(from)?.ok_or_else(|| Error::NotFound {
            path: from.canonical(),
        })?;
        // Every file that moves, with its content: (old path, new path, sha, bytes).
        let mut moving = Vec::new();
        let moved = if kind == EntryKind::Dir {
            if expected.is_some() {
                return Err(Error::Sha256OnFolder);
            }
            for entry in store
                .walk(from, None)?
                .into_iter()
                .filter(|e| e.kind == EntryKind::File)
            {
                if let Ok(data) = store.read(&entry.path) {
                    let suffix = &entry.path.segments[from.segments.len()..];
                    let mut target = to.clone();
                    target.segments.extend(suffix.iter().cloned());
                    moving.push((
                        entry.path.rel(),
                        target.rel(),
                        text::sha256_hex(&data.bytes),
                        data.bytes,
                    ));
                }
            }
            None
        } else {
            let cur = self.current(from)?.ok_or_else(|| Error::NotFound {
                path: from.canonical(),
            })?;
            check_precondition(from, expected, Some(&cur))?;
            moving.push((
                from.rel(),
                to.rel(),
                cur.sha256.clone(),
                cur.text.as_bytes().to_vec(),
            ));
            Some(cur)
        };
        for (old, new, sha, bytes) in &moving {
            rec.note_current(old, Some((sha, bytes)))?;
            rec.note(
                Draft {
                    op: Op::Renamed,
                    path: new.to_owned(),
                    from: Some(old.to_owned()),
                    actor: actor.to_owned(),
                    sha256: sha.to_owned(),
                    size: bytes.len() as u64,
                    bytes: None,
                    reason: None,
                },
                None,
            )?;
        }
        rec.begin()?;
        if let Err(e) = store.rename(from, &to) {
            rec.abandon();
            return Err(match e {
                Error::AlreadyExists { .. } => Error::AlreadyExists {
                    path: to.canonical(),
                },
                other => other,
            });
        }
        let version = rec.commit()?.last().copied();
        self.index_changed(from, Change::Removed);
        match &moved {
            // A rename keeps the inode and mtime: the stamp moves with the file.
            Some(cur) => self.index_changed(
                &to,
                Change::Written {
                    text: &cur.text,
                    stamp: cur.stamp,
                },
            ),
            None => self.index_changed(&to, Change::Tree),
        }
        let (content_sha256, size_bytes, file_count) = match moved {
            Some(cur) => (Some(cur.sha256), cur.text.len() as u64, None),
            None => (
                None,
                moving.iter().map(|m| m.3.len() as u64).sum(),
                Some(moving.len() as u64),
            ),
        };
        Ok(EditResult {
            path: to.canonical(),
            content_sha256,
            size_bytes,
            file_count,
            snippet: String::new(),
            unchanged: false,
            renamed_from: Some(from.canonical()),
            stored_secret: None,
            version,
        })
    }

    /// Deletes a memory or a folder; `reason`, if given, is kept in each version made.
    pub fn delete(
        &self,
        raw: &str,
        expected_sha256: Option<&str>,
        reason: Option<&str>,
        actor: &str,
    ) -> Result<DeleteResult> {
        if let Some(r) = reason
            && r.len() > MAX_REASON_BYTES
        {
            return Err(Error::InvalidArgument(format!(
                "reason is {} bytes; at most {MAX_REASON_BYTES} are kept: say why in a sentence",
                r.len()
            )));
        }
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        let p = self.mutable_path(raw)?;
        let expected = expected_sha256.map(normalise_sha).transpose()?;
        let store = self.store(&p);
        let mut rec = self.recorder(&p)?;
        let kind = store.entry_kind(&p)?.ok_or_else(|| Error::NotFound {
            path: p.canonical(),
        })?;
        // A trailing `/` names a folder: never a file's name with the slash dropped.
        if raw.len() > 1 && raw.ends_with('/') && kind != EntryKind::Dir {
            return Err(Error::NotAFolder {
                path: p.canonical(),
            });
        }
        let mut deleted_files = Vec::new();
        if kind == EntryKind::Dir {
            if expected.is_some() {
                return Err(Error::Sha256OnFolder);
            }
            let mut entries = store.walk_everything(&p)?;
            for entry in entries.iter().filter(|e| e.kind == EntryKind::File) {
                if entry
                    .path
                    .segments
                    .iter()
                    .all(|s| !crate::store::hidden_name(s))
                    && let Ok(data) = store.read(&entry.path)
                {
                    let (rel, sha) = (entry.path.rel(), text::sha256_hex(&data.bytes));
                    rec.note_current(&rel, Some((&sha, &data.bytes)))?;
                    rec.note(
                        Draft {
                            op: Op::Deleted,
                            path: rel.clone(),
                            from: None,
                            actor: actor.to_owned(),
                            sha256: sha.clone(),
                            size: data.bytes.len() as u64,
                            bytes: None,
                            reason: reason.map(str::to_owned),
                        },
                        None,
                    )?;
                }
            }
            rec.begin()?;
            // Deepest first, so every folder is empty when its turn comes.
            entries.sort_by(|a, b| {
                b.depth
                    .cmp(&a.depth)
                    .then(a.path.segments.cmp(&b.path.segments))
            });
            let removed = (|| {
                for entry in &entries {
                    if entry.kind == EntryKind::Dir {
                        store.remove_empty_dir(&entry.path)?;
                    } else {
                        store.remove_file(&entry.path)?;
                        deleted_files.push(entry.path.canonical());
                    }
                }
                store.remove_empty_dir(&p)
            })();
            // Whatever was removed is recorded (repair keeps the records that happened).
            if let Err(e) = removed {
                drop(rec);
                self.index_changed(&p, Change::Removed);
                return Err(e);
            }
            deleted_files.sort();
        } else {
            let cur = self.current(&p).ok().flatten();
            if expected.is_some() {
                let cur = self.current(&p)?;
                check_precondition(&p, expected.as_deref(), cur.as_ref())?;
            }
            if let Some(cur) = &cur {
                let rel = p.rel();
                rec.note_current(&rel, Some((&cur.sha256, cur.text.as_bytes())))?;
                rec.note(
                    Draft {
                        op: Op::Deleted,
                        path: rel.clone(),
                        from: None,
                        actor: actor.to_owned(),
                        sha256: cur.sha256.clone(),
                        size: cur.text.len() as u64,
                        bytes: None,
                        reason: reason.map(str::to_owned),
                    },
                    None,
                )?;
            }
            rec.begin()?;
            if let Err(e) = store.remove_file(&p) {
                rec.abandon();
                return Err(e);
            }
            deleted_files.push(p.canonical());
        }
        let versions = rec.commit()?;
        self.index_changed(&p, Change::Removed);
        Ok(DeleteResult {
            path: p.canonical(),
            deleted_files,
            versions,
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

    /// A mutable path that names a file: a trailing `/` (a folder) is refused rather than
    /// dropped, so `notes/` never becomes a file named `notes`.
    fn file_path(&self, raw: &str) -> Result<MemPath> {
        if raw.len() > 1 && raw.ends_with('/') {
            return Err(Error::invalid_path(
                raw,
                "a path ending in `/` names a folder, and this changes a file: drop the `/` and name the file, e.g. `notes/todo.md`",
            ));
        }
        self.mutable_path(raw)
    }

    /// Size and credential checks on content about to be stored.
    fn check_content(&self, p: &MemPath, content: &str) -> Result<()> {
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

    fn check_size(&self, p: &MemPath, content: &str) -> Result<()> {
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

/// Accepts a sha256 in either case; anything else is a clear error.
fn normalise_sha(s: &str) -> Result<String> {
    let s = s.trim();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(Error::MalformedSha256 {
            got: s.chars().take(80).collect(),
        })
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
