//! A hit's snippet lines, cut to a readable length around the first query word they hold.

use super::{Clause, Query};

/// Longest snippet line, in characters.
const SNIPPET_LINE_CHARS: usize = 240;

/// A line cut to a readable length: around the first place a query word appears in it
/// (compared case-insensitively, character by character), else from its start.
pub fn clip(line: &str, query: &Query) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= SNIPPET_LINE_CHARS {
        return line.to_owned();
    }
    // Folded one char for one, so a byte offset in `lower` is found by counting its chars;
    // `str::find` is linear, where comparing windows cost line × word.
    let lower: String = chars.iter().map(|c| fold(*c)).collect();
    let found = query
        .clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Term(w) | Clause::Prefix(w) | Clause::Run(w) => Some(w.as_str()),
            // The stem finds the word's other forms too (it begins most of them).
            Clause::Word { stem, .. } | Clause::Stem(stem) => Some(stem.as_str()),
            Clause::Phrase(ws) => ws.first().map(String::as_str),
        })
        .filter_map(|w| {
            let needle: String = w.chars().map(fold).collect();
            (!needle.is_empty())
                .then(|| lower.find(&needle))
                .flatten()
                .map(|at| lower[..at].chars().count())
        })
        .min();
    let start = found.map_or(0, |at| at.saturating_sub(SNIPPET_LINE_CHARS / 3));
    let start = start.min(chars.len() - SNIPPET_LINE_CHARS);
    let end = start + SNIPPET_LINE_CHARS;
    let mut s = String::new();
    if start > 0 {
        s.push('…');
    }
    s.extend(&chars[start..end]);
    if end < chars.len() {
        s.push('…');
    }
    s
}

/// A character as the index compares it, one for one: lower case, `ё` as `е`.
fn fold(c: char) -> char {
    match c.to_lowercase().next().unwrap_or(c) {
        'ё' => 'е',
        other => other,
    }
}
