//! The memory tool's `view`: a file with numbered lines, or a folder two levels deep.

use super::paths::{Mapped, map, missing};
use crate::error::Error;
use crate::memory::{self, Freshness, Memdir};
use crate::render;
use crate::text;

/// The memory tool refuses to show files with more lines than this.
const MAX_LINES: usize = 999_999;
/// Bytes of the result budget kept for the note that ends a view cut short.
const NOTE_ROOM: usize = 200;

pub(super) fn view(m: &Memdir, shown: &str, range: Option<&[i64]>) -> Result<String, String> {
    let at = map(m, shown)?;
    match memory::list::tree(m, &at.canonical, 2) {
        Ok(tree) => return Ok(folder(m, &at, &tree)),
        Err(Error::NotAFolder { .. }) => {}
        Err(e) => return Err(at.error(e, &missing(shown))),
    }
    let range = match range {
        None => None,
        // The tool reads a start before line 1 as line 1.
        Some(&[start, end]) => Some((start.max(1), end)),
        Some(_) => return Err("Invalid `view_range`. It should be a list of two integers.".into()),
    };
    let header = format!("Here's the content of {shown} with line numbers:\n");
    // Room is kept for memory_read's notes as well, though this view does not show them:
    // both tools cut a long memory at the same line.
    let room = |freshness: Freshness<'_>| header.len() + render::read_notes_len(freshness);
    let read = memory::read::read(m, &at.canonical, range, &room)
        .map_err(|e| at.error(e, &missing(shown)))?;
    if read.total_lines > MAX_LINES {
        return Err(format!(
            "File {shown} exceeds maximum line limit of 999,999 lines."
        ));
    }
    let lines = text::lines(&read.content);
    let mut out = header;
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        text::numbered_line(&mut out, read.start_line + i, line);
    }
    if let Some((n, len, shown_bytes)) = read.long_line {
        out.push_str(&format!(
            "\n[Line {n} is {len} bytes, longer than one result can hold: only its first {shown_bytes} bytes are shown.{} To change it, use str_replace with old_str taken from the part shown.]",
            if n < read.total_lines {
                format!(" The next lines continue with view_range [{}, -1].", n + 1)
            } else {
                String::new()
            }
        ));
    } else if read.truncated {
        out.push_str(&format!(
            "\n[Showing lines {}-{} of {}: the rest does not fit in one result. View the rest with view_range [{}, -1].]",
            read.start_line,
            read.end_line,
            read.total_lines,
            read.end_line + 1
        ));
    }
    Ok(out)
}

/// A folder two levels deep: its total size and path, then each entry's.
fn folder(m: &Memdir, at: &Mapped, tree: &crate::memory::Tree) -> String {
    let mut out = format!(
        "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:\n{}\t{}",
        at.shown,
        human_size(tree.size_bytes),
        at.shown
    );
    let base = at.shown.trim_end_matches('/');
    let budget = m.settings.result_budget.saturating_sub(NOTE_ROOM);
    for (i, e) in tree.entries.iter().enumerate() {
        let line = format!(
            "\n{}\t{base}/{}{}",
            human_size(e.size_bytes),
            e.rel,
            if e.is_dir { "/" } else { "" }
        );
        if out.len() + line.len() > budget {
            out.push_str(&format!(
                "\n[... {} more entries not shown: view a subfolder to see them]",
                tree.entries.len() - i
            ));
            break;
        }
        out.push_str(&line);
    }
    out
}

/// Sizes as the tool prints them: `512B`, `1.5K`, `4.0K`, `2.1M`.
fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    // 1023.96K prints as 1.0M, not 1024.0K.
    while size >= 1023.95 && unit < 3 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1}{}", ['K', 'M', 'G', 'T'][unit])
}

#[cfg(test)]
mod tests {
    use super::human_size;

    #[test]
    fn sizes_read_like_the_memory_tool() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(1023), "1023B");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(4096), "4.0K");
        assert_eq!(human_size(2_200_000), "2.1M");
        assert_eq!(human_size(1_048_575), "1.0M");
        assert_eq!(human_size(1_048_500), "1023.9K");
    }
}
