//! The memory tool's commands that change memories: `create`, `str_replace`,
//! `insert`, `delete` and `rename`, with the tool's own errors.

use super::paths::{Mapped, map, missing};
use crate::error::{EditFault, Error};
use crate::memory::{self, EditOp, EditRequest, Memdir, WriteRequest};
use crate::text;

/// Characters of `old_str` quoted back in an error (the tool quotes it whole; a result
/// must still fit the result budget).
const QUOTED_CHARS: usize = 2_000;

pub(super) fn create(
    m: &Memdir,
    shown: &str,
    content: &str,
    actor: &str,
) -> Result<String, String> {
    let at = map(m, shown)?;
    let exists = || format!("File {shown} already exists");
    if at.is_root() {
        return Err(exists());
    }
    let written = WriteRequest {
        path: &at.canonical,
        content,
        if_absent: true,
        expected_sha256: None,
        actor,
    }
    .run(m);
    match written {
        Ok(_) => Ok(format!("File created successfully at: {shown}")),
        // A create-only write fails on any existing file, even one with this content.
        Err(Error::Occupied { .. } | Error::AlreadyExists { .. } | Error::IsFolder { .. }) => {
            Err(exists())
        }
        Err(e) => Err(at.error(e, &missing(shown))),
    }
}

/// Runs a content edit of the file at `at`, with the tool's errors for a missing path
/// and a folder.
fn edit(m: &Memdir, at: &Mapped, op: EditOp, actor: &str) -> Result<String, String> {
    let not_a_file = || format!("The path {} is not a file.", at.shown);
    if at.is_root() || at.shown.ends_with('/') {
        return Err(not_a_file());
    }
    EditRequest {
        path: &at.canonical,
        op,
        expected_sha256: None,
        actor,
    }.run(m)
    .map(|edited| edited.snippet)
    .map_err(|e| match e {
        Error::IsFolder { .. } => not_a_file(),
        Error::Edit(EditFault::NoMatch { old, .. }) => format!(
            "No replacement was performed, old_str `{}` did not appear verbatim in {}.",
            text::head_chars(&old, QUOTED_CHARS),
            at.shown
        ),
        Error::Edit(EditFault::Ambiguous {
            old,
            lines,
            more_lines,
            count,
            ..
        }) => {
            // The tool's words list each line once; past the listed lines, the count.
            let mut numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
            if more_lines {
                numbers.push(format!("… ({count} occurrences in all)"));
            }
            format!(
                "No replacement was performed. Multiple occurrences of old_str `{}` in lines: {}. Please ensure it is unique",
                text::head_chars(&old, QUOTED_CHARS),
                numbers.join(", ")
            )
        }
        e => at.error(e, &missing(at.shown)),
    })
}

pub(super) fn str_replace(
    m: &Memdir,
    shown: &str,
    old: &str,
    new: &str,
    actor: &str,
) -> Result<String, String> {
    let at = map(m, shown)?;
    let op = EditOp::Replace {
        old,
        new,
        all: false,
    };
    let snippet = edit(m, &at, op, actor)?;
    Ok(format!(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{snippet}"
    ))
}

pub(super) fn insert(
    m: &Memdir,
    shown: &str,
    line: i64,
    text: &str,
    actor: &str,
) -> Result<String, String> {
    let at = map(m, shown)?;
    let op = EditOp::Insert {
        after_line: line,
        text,
    };
    edit(m, &at, op, actor)?;
    Ok(format!("The file {shown} has been edited."))
}

pub(super) fn delete(m: &Memdir, shown: &str, actor: &str) -> Result<String, String> {
    let at = map(m, shown)?;
    if at.is_root() {
        return Err(format!("Cannot delete the {} directory itself", at.root));
    }
    memory::delete::delete(m, &at.canonical, None, None, actor)
        .map(|_| format!("Successfully deleted {shown}"))
        .map_err(|e| at.error(e, &format!("The path {shown} does not exist")))
}

pub(super) fn rename(m: &Memdir, from: &str, to: &str, actor: &str) -> Result<String, String> {
    let source = map(m, from)?;
    let target = map(m, to)?;
    let taken = || format!("The destination {to} already exists");
    if source.canonical.trim_end_matches('/') == target.canonical.trim_end_matches('/') {
        // Onto itself: taken if it exists at all.
        return Err(match memory::list::tree(m, &source.canonical, 1) {
            Ok(_) | Err(Error::NotAFolder { .. }) => taken(),
            Err(e) => source.error(e, &format!("The path {from} does not exist")),
        });
    }
    let moved = EditRequest {
        path: &source.canonical,
        op: EditOp::Rename {
            new_path: &target.canonical,
        },
        expected_sha256: None,
        actor,
    }
    .run(m);
    match moved {
        Ok(_) => Ok(format!("Successfully renamed {from} to {to}")),
        Err(Error::AlreadyExists { .. }) => Err(taken()),
        Err(e @ (Error::Escape { .. } | Error::StateLink { .. })) => Err(match e {
            Error::Escape { path } | Error::StateLink { path } if path == target.canonical => {
                target.escape()
            }
            _ => source.escape(),
        }),
        Err(e) => Err(target.renamed(source.error(e, &format!("The path {from} does not exist")))),
    }
}
