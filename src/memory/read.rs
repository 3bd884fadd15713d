//! `memory_read`: a memory whole or a line range, numbered, within the result budget,
//! with its freshness and expiry; and a memory's whole text (for MCP resources).

use super::{Current, Expiry, Memdir};
use crate::error::{Error, Result};
use crate::path::MemPath;
use crate::text;

/// `memory_read`'s result.
#[derive(Debug)]
pub struct ReadResult {
    pub path: String,
    /// The selected lines, byte for byte (the whole file when no range was asked).
    pub content: String,
    /// Hash of the whole file, for `expected_sha256`.
    pub content_sha256: String,
    pub size_bytes: u64,
    pub total_lines: usize,
    pub start_line: usize,
    pub end_line: usize,
    pub updated_at: String,
    pub age_days: u64,
    /// Frontmatter `expires` (or `expires_at`) as an RFC 3339 UTC time.
    pub expires_at: Option<String>,
    /// That time has passed.
    pub expired: bool,
    /// The selection did not fit the result budget and was cut at `end_line`.
    pub truncated: bool,
    /// `(line, its length, bytes shown)` when one line alone was longer than the budget
    /// and only its head is shown (it is then `end_line`).
    pub long_line: Option<(usize, usize, usize)>,
}

/// How fresh a memory is: what a reader is told before its lines (see [`read`]).
#[derive(Clone, Copy, Debug)]
pub struct Freshness<'a> {
    pub updated_at: &'a str,
    pub age_days: u64,
    /// Frontmatter `expires` as an RFC 3339 UTC time.
    pub expires_at: Option<&'a str>,
    pub expired: bool,
}

/// Reads a memory, whole or a line range, within the result budget less the bytes
/// the caller puts before the numbered lines: `header` gives them from the memory's
/// freshness (the notes of `memory_read`, the compatibility profile's heading).
pub fn read(
    md: &Memdir,
    raw: &str,
    view_range: Option<(i64, i64)>,
    header: &dyn Fn(Freshness<'_>) -> usize,
) -> Result<ReadResult> {
    let (p, cur) = existing(md, raw)?;
    let all: Vec<&str> = cur.text.split_inclusive('\n').collect();
    let total = all.len();
    let (start, end) = resolve_range(view_range, total)?;
    let age_days = text::age_days(cur.modified);
    let updated_at = text::rfc3339(cur.modified);
    let expiry = Expiry::of(&cur.text);
    let reserve = header(Freshness {
        updated_at: &updated_at,
        age_days,
        expires_at: expiry.at.as_deref(),
        expired: expiry.expired,
    });
    let budget = md.settings.result_budget.saturating_sub(reserve);
    let (last, cut_line) = fit(&all, start, end, budget);
    let truncated = last < end || cut_line.is_some();
    let content = if let Some((n, _, shown)) = cut_line {
        all[n - 1][..shown].to_owned()
    } else if start == 1 && last == total {
        cur.text.clone()
    } else {
        all[start.saturating_sub(1).min(last)..last].concat()
    };
    Ok(ReadResult {
        path: p.canonical(),
        content,
        size_bytes: cur.text.len() as u64,
        content_sha256: cur.sha256,
        total_lines: total,
        start_line: start.min(last.max(1)),
        end_line: last,
        updated_at,
        age_days,
        expires_at: expiry.at,
        expired: expiry.expired,
        truncated,
        long_line: cut_line,
    })
}

/// How many of the lines `start..=end` fit in `budget` bytes once numbered: the last line
/// shown, and `(line, its length, bytes shown)` when the first line alone did not fit
/// and only its head is shown.
fn fit(
    all: &[&str],
    start: usize,
    end: usize,
    budget: usize,
) -> (usize, Option<(usize, usize, usize)>) {
    let mut last = start.saturating_sub(1);
    let mut body = String::new();
    // The first line alone may not fit (one long line of minified JSON, say): then
    // only its head is shown, and `content` holds just that head.
    let mut cut_line = None;
    // When the selection does not fit whole, room is kept for the note that says
    // where to continue.
    let whole: usize = (start..=end).map(|n| all[n - 1].len() + 8).sum();
    let limit = if whole <= budget {
        budget
    } else {
        budget.saturating_sub(READ_NOTE_ROOM)
    };
    for n in start..=end {
        let line = all[n - 1].strip_suffix('\n').unwrap_or(all[n - 1]);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let before = body.len();
        if n > start {
            body.push('\n');
        }
        text::numbered_line(&mut body, n, line);
        if body.len() > limit {
            body.truncate(before);
            if n > start {
                break;
            }
            let room = budget.saturating_sub(LONG_LINE_NOTE_ROOM);
            let head = &line[..text::floor_char_boundary(line, room)];
            text::numbered_line(&mut body, n, head);
            cut_line = Some((n, line.len(), head.len()));
            last = n;
            break;
        }
        last = n;
    }
    (last, cut_line)
}

/// A memory's whole text (for MCP resources, which are read whole).
pub fn text(md: &Memdir, raw: &str) -> Result<String> {
    Ok(existing(md, raw)?.1.text)
}

/// The memory at `raw`, read: a store itself is a folder, nothing there is not found.
fn existing(md: &Memdir, raw: &str) -> Result<(MemPath, Current)> {
    let p = md.path(raw)?;
    if p.is_root() {
        return Err(Error::IsFolder {
            path: p.canonical(),
        });
    }
    let cur = md.current(&p)?.ok_or_else(|| Error::NotFound {
        path: p.canonical(),
    })?;
    // A trailing `/` names a folder, as delete and move read it: a file is never
    // read under its name with the slash dropped.
    if raw.len() > 1 && raw.ends_with('/') {
        return Err(Error::NotAFolder {
            path: p.canonical(),
        });
    }
    Ok((p, cur))
}

/// Bytes of the result budget kept for the note that ends a read cut after a line.
const READ_NOTE_ROOM: usize = 160;
/// Bytes kept for the note after a line cut short, and its line-number prefix.
const LONG_LINE_NOTE_ROOM: usize = 320;

/// Turns an optional `[start, end]` (1-based, inclusive, `-1` = to the end) into a range
/// of existing lines. An empty file reads as the empty range `1..=0`.
fn resolve_range(range: Option<(i64, i64)>, total: usize) -> Result<(usize, usize)> {
    let Some((start, end)) = range else {
        return Ok((1, total));
    };
    let bad = |why: String| Err(Error::ViewRange { start, end, why });
    if start < 1 {
        return bad("lines are numbered from 1".into());
    }
    if start as usize > total.max(1) {
        return bad(format!(
            "the memory has {total} lines; start must be at most {}",
            total.max(1)
        ));
    }
    let end = if end == -1 { total as i64 } else { end };
    if end < start {
        if total == 0 {
            return Ok((1, 0));
        }
        return bad("end must be at least start, or -1 for the end of the memory".into());
    }
    Ok((start as usize, (end as usize).min(total)))
}

#[cfg(test)]
mod tests {
    use super::resolve_range;

    #[test]
    fn resolves_view_ranges() {
        assert_eq!(resolve_range(None, 5).unwrap(), (1, 5));
        assert_eq!(resolve_range(Some((2, -1)), 5).unwrap(), (2, 5));
        assert_eq!(resolve_range(Some((2, 99)), 5).unwrap(), (2, 5));
        assert_eq!(resolve_range(Some((1, -1)), 0).unwrap(), (1, 0));
        assert!(resolve_range(Some((0, 2)), 5).is_err());
        assert!(resolve_range(Some((6, -1)), 5).is_err());
        assert!(resolve_range(Some((3, 2)), 5).is_err());
    }
}
