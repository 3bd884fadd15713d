//! Text that the CLI and the MCP tools show alike: a memory read (`memdir read`,
//! `memory_read`) as notes on its freshness, its numbered lines, and a note when the
//! result was cut. Library results in, text out; it knows no protocol.

use crate::memory::{Freshness, ReadResult};
use crate::text;

/// The notes before a memory's lines: that it expired, and how old it is.
pub fn read_notes(f: Freshness<'_>) -> String {
    let mut notes = String::new();
    if f.expired {
        notes.push_str(&format!(
            "Note: this memory expired at {} (its frontmatter `expires`): it is likely out of date. Verify it before relying on it, then update it (with a new `expires`) or delete it.\n",
            f.expires_at.unwrap_or_default()
        ));
    }
    if f.age_days >= 1 {
        notes.push_str(&format!(
            "Note: this memory was last updated {} day{} ago ({}); it is a point-in-time observation, so verify it before relying on it.\n",
            f.age_days,
            if f.age_days == 1 { "" } else { "s" },
            f.updated_at
        ));
    }
    notes
}

/// Bytes of [`read_notes`], the header `memory::read::read` keeps room for.
pub fn read_notes_len(f: Freshness<'_>) -> usize {
    read_notes(f).len()
}

/// A memory read: its notes, its numbered lines, and what to do when the result was cut.
/// `view_range` is the range asked for (a line cut short says whether the range goes on).
pub fn read(r: &ReadResult, view_range: Option<(i64, i64)>) -> String {
    let mut out = read_notes(Freshness {
        updated_at: &r.updated_at,
        age_days: r.age_days,
        expires_at: r.expires_at.as_deref(),
        expired: r.expired,
    });
    if let Some((n, len, shown)) = r.long_line {
        // `content` is the head of line `n`, as it is.
        text::numbered_line(&mut out, n, &r.content);
        let asked_end = match view_range {
            Some((_, end)) if end != -1 => usize::try_from(end).unwrap_or(0).min(r.total_lines),
            _ => r.total_lines,
        };
        out.push_str(&format!(
            "\n[Line {n} is {len} bytes, longer than one result can hold: only its first {shown} bytes are shown.{} To change it, use memory_edit with old_str taken from the part shown.]",
            if n < asked_end {
                format!(" The next lines continue with view_range [{}, -1].", n + 1)
            } else {
                String::new()
            }
        ));
        return out;
    }
    out.push_str(&numbered_lines(&r.content, r.start_line));
    if r.truncated {
        out.push_str(&format!(
            "\n[Showing lines {}-{} of {}: the rest did not fit in one result. Continue with view_range [{}, -1].]",
            r.start_line,
            r.end_line,
            r.total_lines,
            r.end_line + 1
        ));
    }
    out
}

/// The lines of `content`, numbered from `first` and joined by `\n`; each line without
/// its `\n` or `\r\n` (or a last line's lone `\r`).
pub fn numbered_lines(content: &str, first: usize) -> String {
    let mut out = String::new();
    for (i, line) in content.split_inclusive('\n').enumerate() {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if i > 0 {
            out.push('\n');
        }
        text::numbered_line(&mut out, first + i, line);
    }
    out
}
