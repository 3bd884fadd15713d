//! Splits a long passage into chunks of at most [`CHUNK_TOKENS`] tokens, so that a long
//! memory is embedded as the mean of its chunks' vectors instead of being cut at the
//! model's 512 tokens (docs/decisions/embedding-model.md, "Long memories").
//!
//! Chunks end at line boundaries; a line longer than a chunk is split between words, and a
//! word longer than a chunk between characters. Every chunk after the first starts with the
//! text's first non-empty line (its title or date), shortened to [`HEAD_TOKENS`] tokens.
//! Token counts come from the caller (the model's tokenizer, with the prefix and the
//! special tokens), so that every chunk is checked against the bound as it will be run.

use std::collections::VecDeque;

/// The most tokens one chunk is run from, `passage: ` and the special tokens included.
pub const CHUNK_TOKENS: usize = 128;
/// The most tokens of the first line repeated at the top of the later chunks.
pub const HEAD_TOKENS: usize = 32;

/// A piece of the text: a line, or part of a line (a word, or part of a word).
#[derive(Clone, Copy)]
struct Unit<'a> {
    text: &'a str,
    /// Starts a line (joined to what precedes it with a line break).
    line_start: bool,
    /// Its tokens counted alone: an estimate of what it adds to a chunk.
    tokens: usize,
}

impl<'a> Unit<'a> {
    fn new(text: &'a str, line_start: bool, pieces: &dyn Fn(&str) -> usize) -> Unit<'a> {
        Unit {
            text,
            line_start,
            tokens: pieces(text),
        }
    }
}

/// The chunks of `text`: `text` itself when `sequence(text) <= limit`, where `sequence`
/// counts the tokens the model runs for a chunk (prefix and specials included) and
/// `pieces` counts the tokens of a bare piece of text. Each chunk is checked with
/// `sequence`; only a single character that does not fit with the repeated first line
/// could pass the bound.
pub fn chunks(
    text: &str,
    limit: usize,
    head_limit: usize,
    sequence: &dyn Fn(&str) -> usize,
    pieces: &dyn Fn(&str) -> usize,
) -> Vec<String> {
    if sequence(text) <= limit {
        return vec![text.to_owned()];
    }
    let base = sequence("");
    let unit = |text, line_start| Unit::new(text, line_start, pieces);
    let head = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| fit_words(l, head_limit, pieces))
        .unwrap_or("");
    let head_tokens = if head.is_empty() { 0 } else { pieces(head) };
    let mut queue: VecDeque<Unit> = VecDeque::new();
    for line in text.lines() {
        let u = unit(line, true);
        if base + head_tokens + u.tokens > limit {
            queue.extend(split_words(line, true).map(|(w, s)| unit(w, s)));
        } else {
            queue.push_back(u);
        }
    }

    let mut out = Vec::new();
    while !queue.is_empty() {
        let first = out.is_empty();
        let top = if first { "" } else { head };
        // No chunk starts with a blank line.
        while queue.front().is_some_and(|u| u.text.trim().is_empty()) {
            queue.pop_front();
        }
        let mut taken: Vec<Unit> = Vec::new();
        let mut estimate = base + if first { 0 } else { head_tokens };
        while let Some(u) = queue.front() {
            if !taken.is_empty() && estimate + u.tokens > limit {
                break;
            }
            estimate += u.tokens;
            taken.push(queue.pop_front().expect("a front unit"));
        }
        if taken.is_empty() {
            break;
        }
        // The estimate is a sum of separate counts: check the chunk as it will run, and
        // give back its last unit, or halve a lone one, until it fits.
        loop {
            let chunk = join(top, &taken);
            if sequence(&chunk) <= limit {
                out.push(chunk);
                break;
            }
            if taken.len() > 1 {
                queue.push_front(taken.pop().expect("a last unit"));
                continue;
            }
            let lone = taken[0];
            let halves = halve(lone.text, lone.line_start);
            if halves.len() < 2 {
                // One character that does not fit beside the first line: run it as is.
                out.push(chunk);
                break;
            }
            taken.clear();
            for (i, (t, s)) in halves.into_iter().enumerate().rev() {
                let u = unit(t, s);
                if i == 0 {
                    taken.push(u);
                } else {
                    queue.push_front(u);
                }
            }
        }
    }
    if out.is_empty() {
        out.push(text.to_owned());
    }
    out
}

/// The chunk's text: `top` (if any) on its own line, then the units.
fn join(top: &str, units: &[Unit]) -> String {
    let mut s = String::from(top);
    for (i, u) in units.iter().enumerate() {
        if (i == 0 && !top.is_empty()) || (i > 0 && u.line_start) {
            s.push('\n');
        }
        s.push_str(u.text);
    }
    s
}

/// The words of `line`, each with the white space after it; the first starts a line if
/// `line_start`.
fn split_words(line: &str, line_start: bool) -> impl Iterator<Item = (&str, bool)> {
    line.split_inclusive(char::is_whitespace)
        .enumerate()
        .map(move |(i, w)| (w, line_start && i == 0))
}

/// `text` in two or more parts: its words, or, for one word, its two halves.
fn halve(text: &str, line_start: bool) -> Vec<(&str, bool)> {
    let words: Vec<(&str, bool)> = split_words(text, line_start).collect();
    if words.len() > 1 {
        return words;
    }
    let chars = text.chars().count();
    if chars < 2 {
        return vec![(text, line_start)];
    }
    let mid = text
        .char_indices()
        .nth(chars / 2)
        .map_or(text.len(), |(i, _)| i);
    vec![(&text[..mid], line_start), (&text[mid..], false)]
}

/// The longest run of `line`'s first words whose tokens are at most `limit` (at least a
/// part of its first word), without trailing white space.
fn fit_words<'a>(line: &'a str, limit: usize, pieces: &dyn Fn(&str) -> usize) -> &'a str {
    let line = line.trim();
    if pieces(line) <= limit {
        return line;
    }
    let mut end = 0;
    for (w, _) in split_words(line, false) {
        let next = end + w.len();
        if pieces(&line[..next]) > limit {
            break;
        }
        end = next;
    }
    if end == 0 {
        // The first word alone is too long: as many of its characters as fit.
        for (i, c) in line.char_indices() {
            if pieces(&line[..i + c.len_utf8()]) > limit {
                break;
            }
            end = i + c.len_utf8();
        }
    }
    line[..end].trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in tokenizer: one token per word, and two for the prefix and specials.
    fn words(s: &str) -> usize {
        s.split_whitespace().count().max(1)
    }

    fn sequence(s: &str) -> usize {
        2 + s.split_whitespace().count()
    }

    fn split(text: &str, limit: usize) -> Vec<String> {
        chunks(text, limit, 3, &sequence, &words)
    }

    #[test]
    fn a_short_text_is_one_chunk_as_it_is() {
        let text = "2023-05-08\n  Caroline: hi there  \n\nMel: hello";
        assert_eq!(split(text, 12), [text]);
    }

    #[test]
    fn chunks_end_at_lines_and_repeat_the_first_line() {
        let text = "\nMay 8\none two three\nfour five six\nseven eight nine\nten eleven";
        let got = split(text, 10);
        assert_eq!(
            got,
            [
                "May 8\none two three\nfour five six",
                "May 8\nseven eight nine\nten eleven",
            ]
        );
        for c in &got {
            assert!(sequence(c) <= 10, "{c:?}");
        }
    }

    #[test]
    fn a_long_line_splits_between_words_under_the_bound() {
        let line: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let text = format!("Title here\n{}", line.join(" "));
        let got = split(&text, 10);
        assert!(got.len() >= 5, "{got:?}");
        assert!(got[0].starts_with("Title here\nw0 "), "{got:?}");
        for c in &got[1..] {
            assert!(c.starts_with("Title here\nw"), "{c:?}");
        }
        for c in &got {
            assert!(sequence(c) <= 10, "{c:?}");
        }
        // Every word is in exactly one chunk, in order.
        let all: Vec<&str> = got
            .iter()
            .flat_map(|c| c.split_whitespace().skip(2))
            .collect();
        assert_eq!(all, line);
    }

    #[test]
    fn the_repeated_first_line_is_cut_to_its_bound() {
        let text = "a b c d e f\ng h i j\nk l m n\no p q r";
        let got = split(text, 8);
        assert_eq!(got[0], "a b c d e f");
        for c in &got[1..] {
            assert!(c.starts_with("a b c\n"), "{c:?}");
            assert!(sequence(c) <= 8, "{c:?}");
        }
    }

    #[test]
    fn a_word_longer_than_a_chunk_splits_between_characters() {
        // Counts characters, so that one long word is too long.
        let chars = |s: &str| s.chars().filter(|c| !c.is_whitespace()).count().max(1);
        let sequence = |s: &str| 2 + s.chars().filter(|c| !c.is_whitespace()).count();
        let text = format!("T\n{}", "é".repeat(50));
        let got = chunks(&text, 12, 3, &sequence, &chars);
        assert!(got.len() >= 5, "{got:?}");
        for c in &got {
            assert!(sequence(c) <= 12, "{c:?}");
        }
        for c in &got[1..] {
            assert!(c.starts_with("T\n"), "{c:?}");
        }
        let joined: String = got
            .iter()
            .map(|c| c.trim_start_matches("T\n").replace('T', ""))
            .collect();
        assert_eq!(joined, "é".repeat(50));
    }
}
