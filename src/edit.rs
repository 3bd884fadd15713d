//! The edit operations of `memory_edit`, as pure functions on text: replace a unique
//! string, insert lines after a line number, append. Each returns the new text and the
//! 1-based line range it changed, for the snippet.

use crate::error::{EditFault, Error, LISTED_LINES, Result};
use crate::text;

/// A successful edit: the new text and the changed lines (in the new text).
#[derive(Debug, PartialEq, Eq)]
pub struct Edited {
    pub text: String,
    pub first_line: usize,
    pub last_line: usize,
    /// Each changed place as a range of lines, in order (one for all but `replace_all`).
    pub changed: Vec<(usize, usize)>,
}

/// Replaces `old` by `new`. `old` must occur exactly once unless `replace_all`;
/// occurrences are counted over the whole text, so a multi-line `old` works.
pub fn replace(text: &str, path: &str, old: &str, new: &str, replace_all: bool) -> Result<Edited> {
    if old.is_empty() {
        return Err(Error::InvalidArgument(
            "old_str is empty; give the exact text to replace (read the memory first)".into(),
        ));
    }
    // Numbered lines show a file with Windows line endings without its `\r`s, so a
    // multi-line `old_str` copied from them has bare `\n`s: in a CRLF file it is matched
    // as written with `\r\n`, and `new_str` written the same way keeps the endings.
    if let Some((old, new)) = crlf_forms(text, old, new) {
        return replace(text, path, &old, &new, replace_all).map_err(|e| match e {
            // The error quotes old_str as the agent gave it.
            Error::Edit(EditFault::NoMatch { path, .. }) => Error::Edit(EditFault::NoMatch {
                path,
                old: old.replace("\r\n", "\n"),
            }),
            other => other,
        });
    }
    let starts: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    match starts.len() {
        0 => Err(Error::Edit(EditFault::NoMatch {
            path: path.to_owned(),
            old: old.to_owned(),
        })),
        n if n > 1 && !replace_all => {
            let newlines = newline_offsets(text);
            // Each line with a match once, in order, the first LISTED_LINES of them.
            let mut lines: Vec<usize> = Vec::new();
            let mut more_lines = false;
            for &i in &starts {
                let line = line_at(&newlines, i);
                if lines.last() == Some(&line) {
                    continue;
                }
                if lines.len() == LISTED_LINES {
                    more_lines = true;
                    break;
                }
                lines.push(line);
            }
            Err(Error::Edit(EditFault::Ambiguous {
                path: path.to_owned(),
                old: old.to_owned(),
                lines,
                more_lines,
                count: n,
            }))
        }
        _ => {
            let new_text = text.replace(old, new);
            let newlines = newline_offsets(&new_text);
            // Where each replacement lies in the new text.
            let shift = new.len() as isize - old.len() as isize;
            let changed: Vec<(usize, usize)> = starts
                .iter()
                .enumerate()
                .map(|(k, &start)| {
                    let at = (start as isize + shift * k as isize) as usize;
                    let end = (at + new.len()).saturating_sub(1).max(at);
                    let first = line_at(&newlines, at);
                    (first, line_at(&newlines, end).max(first))
                })
                .collect();
            Ok(Edited {
                text: new_text,
                first_line: changed[0].0,
                last_line: changed[changed.len() - 1].1,
                changed,
            })
        }
    }
}

/// `old` and `new` with `\r\n` line endings, when `old` does not occur in `text` as
/// given, spans lines with bare `\n`s, and `text` uses CRLF line endings.
pub fn crlf_forms(text: &str, old: &str, new: &str) -> Option<(String, String)> {
    let applies =
        old.contains('\n') && !old.contains('\r') && text.contains("\r\n") && !text.contains(old);
    applies.then(|| {
        let crlf = |s: &str| {
            if s.contains('\r') {
                s.to_owned()
            } else {
                s.replace('\n', "\r\n")
            }
        };
        (crlf(old), crlf(new))
    })
}

/// The line ending added text gets: `\r\n` in a file with Windows line endings, so an
/// insert or append keeps them, else `\n`.
fn newline_of(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// `added` with its bare `\n`s written as `newline` (kept as given if it has a `\r`).
fn with_newlines(added: &str, newline: &str) -> String {
    if newline == "\r\n" && !added.contains('\r') {
        added.replace('\n', "\r\n")
    } else {
        added.to_owned()
    }
}

/// Byte offsets of every `\n` in `text`.
fn newline_offsets(text: &str) -> Vec<usize> {
    text.match_indices('\n').map(|(i, _)| i).collect()
}

/// 1-based line number of byte `offset`, given the text's newline offsets.
fn line_at(newlines: &[usize], offset: usize) -> usize {
    newlines.partition_point(|&nl| nl < offset) + 1
}

/// Inserts `insert` as whole lines after line `after` (0 = before the first line).
pub fn insert(text: &str, after: i64, insert: &str) -> Result<Edited> {
    let count = text::lines(text).len();
    if after < 0 || after as usize > count {
        return Err(Error::Edit(EditFault::InsertLine {
            line: after,
            lines: count,
        }));
    }
    let after = after as usize;
    let newline = newline_of(text);
    let mut block = with_newlines(insert, newline);
    if !block.ends_with('\n') {
        block.push_str(newline);
    }
    let offset = byte_offset_of_line(text, after);
    let mut out = String::with_capacity(text.len() + block.len() + 2);
    out.push_str(&text[..offset]);
    if offset > 0 && !out.ends_with('\n') {
        out.push_str(newline);
    }
    out.push_str(&block);
    out.push_str(&text[offset..]);
    let added = text::lines(&block).len().max(1);
    Ok(Edited {
        text: out,
        first_line: after + 1,
        last_line: after + added,
        changed: vec![(after + 1, after + added)],
    })
}

/// Appends `tail`, starting it on a new line if the text does not end with one.
pub fn append(text: &str, tail: &str) -> Edited {
    let newline = newline_of(text);
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(newline);
    }
    let first_line = text::lines(&out).len() + 1;
    out.push_str(&with_newlines(tail, newline));
    let last_line = text::lines(&out).len().max(first_line);
    Edited {
        text: out,
        first_line,
        last_line,
        changed: vec![(first_line, last_line)],
    }
}

/// Numbered lines of `text` around each changed range (2 lines of context on each side;
/// windows that touch are merged, others separated by a `...` line), at most `budget`
/// bytes: past that, a note says how many changed places are not shown.
pub fn snippet(text: &str, changed: &[(usize, usize)], budget: usize) -> String {
    let all = text::lines(text);
    if all.is_empty() {
        return String::new();
    }
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for &(first, last) in changed {
        let from = first.saturating_sub(2).max(1);
        let to = (last + 2).min(all.len());
        match windows.last_mut() {
            Some(w) if from <= w.1 + 1 => w.1 = w.1.max(to),
            _ => windows.push((from.min(to), to)),
        }
    }
    let mut out = String::new();
    for (i, &(from, to)) in windows.iter().enumerate() {
        let part = text::numbered(&all, from, to);
        let sep = if i == 0 { "" } else { "\n...\n" };
        if i > 0 && out.len() + sep.len() + part.len() > budget {
            let left = changed
                .iter()
                .filter(|&&(first, _)| first > windows[i - 1].1)
                .count();
            out.push_str(&format!(
                "\n[... {left} more changed place{} not shown: read the memory to see them]",
                if left == 1 { "" } else { "s" }
            ));
            break;
        }
        out.push_str(sep);
        if part.len() > budget {
            // One window alone is too long: its head, cut after a line, when that shows
            // the first changed line; else (long lines of context) the changed lines
            // alone if they fit, else the head.
            let (first, last) = changed
                .iter()
                .copied()
                .find(|&(first, _)| first >= from)
                .unwrap_or((from, to));
            let reaches_change = text::numbered(&all, from, first).len() <= budget;
            let bare = text::numbered(&all, first, last.min(to));
            if !reaches_change && bare.len() <= budget {
                out.push_str(&bare);
                out.push_str("\n[... the lines around the change are too long to show: read the memory to see them]");
                break;
            }
            let cut = text::floor_char_boundary(&part, budget);
            let cut = part[..cut].rfind('\n').unwrap_or(cut);
            out.push_str(&part[..cut]);
            out.push_str("\n[... the rest of the change is not shown: read the memory to see it]");
            break;
        }
        out.push_str(&part);
    }
    out
}

/// Byte offset where line `n + 1` starts (the end of the text if there is none).
fn byte_offset_of_line(text: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    text.match_indices('\n')
        .nth(n - 1)
        .map(|(i, _)| i + 1)
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_replace(text: &str, old: &str, new: &str, expect: &str, lines: (usize, usize)) {
        let e = replace(text, "/m/x", old, new, false).unwrap();
        assert_eq!(
            (e.text.as_str(), e.first_line, e.last_line),
            (expect, lines.0, lines.1)
        );
    }

    #[test]
    fn replaces_unique_text() {
        check_replace("a\nb\nc\n", "b", "B", "a\nB\nc\n", (2, 2));
        check_replace("a\nb\nc\n", "b\nc", "x", "a\nx\n", (2, 2));
        check_replace("a\nb\n", "a", "1\n2\n3", "1\n2\n3\nb\n", (1, 3));
        check_replace("a\nb\n", "b\n", "", "a\n", (2, 2));
    }

    #[test]
    fn refuses_missing_and_ambiguous_matches() {
        let e = replace("x\ny x\n", "/m/x", "x", "z", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Multiple occurrences") && e.contains("lines: 1, 2"),
            "{e}"
        );
        let e = replace("abc", "/m/x", "zz", "y", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("did not appear verbatim in /m/x"), "{e}");
        assert!(replace("abc", "/m/x", "", "y", false).is_err());
        let all = replace("x\ny x\n", "/m/x", "x", "z", true).unwrap();
        assert_eq!(all.text, "z\ny z\n");
        assert_eq!((all.first_line, all.last_line), (1, 2));
    }

    #[test]
    fn a_multi_line_old_str_matches_a_crlf_file_and_keeps_its_endings() {
        let e = replace("a\r\nb\r\nc\r\n", "/m/x", "a\nb", "A\nB", false).unwrap();
        assert_eq!(e.text, "A\r\nB\r\nc\r\n");
        assert_eq!((e.first_line, e.last_line), (1, 2));
        // Not found either way: the error quotes old_str as given.
        let err = replace("a\r\nb\r\n", "/m/x", "a\nz", "y", false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("old_str `a\nz`"), "{err}");
        // A file with bare newlines is matched as given.
        assert!(replace("a\nb\n", "/m/x", "a\r\nb", "y", false).is_err());
    }

    #[test]
    fn inserts_whole_lines() {
        assert_eq!(insert("a\nb\n", 0, "x").unwrap().text, "x\na\nb\n");
        assert_eq!(insert("a\nb\n", 1, "x").unwrap().text, "a\nx\nb\n");
        assert_eq!(insert("a\nb", 2, "x").unwrap().text, "a\nb\nx\n");
        assert_eq!(insert("", 0, "x\ny\n").unwrap().text, "x\ny\n");
        let e = insert("a\nb\n", 3, "x").unwrap_err().to_string();
        assert!(e.contains("[0, 2]"), "{e}");
        assert!(insert("a", -1, "x").is_err());
    }

    #[test]
    fn inserts_and_appends_keep_a_crlf_files_endings() {
        assert_eq!(
            insert("a\r\nb\r\n", 1, "x\ny").unwrap().text,
            "a\r\nx\r\ny\r\nb\r\n"
        );
        assert_eq!(insert("a\r\nb", 2, "x").unwrap().text, "a\r\nb\r\nx\r\n");
        assert_eq!(append("a\r\nb", "c\nd\n").text, "a\r\nb\r\nc\r\nd\r\n");
        assert_eq!(append("a\nb", "c\n").text, "a\nb\nc\n");
    }

    #[test]
    fn appends_on_a_new_line() {
        assert_eq!(append("a", "b\n").text, "a\nb\n");
        assert_eq!(append("a\n", "b").text, "a\nb");
        assert_eq!(append("", "b").text, "b");
        assert_eq!(append("a\n", "b").first_line, 2);
    }

    #[test]
    fn snippets_show_two_lines_of_context() {
        let t = "1\n2\n3\n4\n5\n6\n7\n";
        assert_eq!(
            snippet(t, &[(4, 4)], 1000),
            "     2\t2\n     3\t3\n     4\t4\n     5\t5\n     6\t6"
        );
        assert_eq!(
            snippet(t, &[(1, 1)], 1000),
            "     1\t1\n     2\t2\n     3\t3"
        );
    }
}
