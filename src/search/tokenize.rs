//! The one tokenizer, for documents and queries alike: Unicode words lowercased (Cyrillic
//! `ё` folded to `е`), and runs of CJK characters (Han, Kana, Hangul) cut into overlapping
//! bigrams so words written without spaces are found. A document also gets the last
//! character of each longer run alone, as a *tail* token that takes no position (so
//! phrases stay adjacent), so a one-character query finds characters anywhere in a run.
//! Runs of three or more characters are also cut into trigrams, for the index's own
//! column ([`index_trigrams`]): a CJK word of three or more characters is looked up by its
//! trigrams (one token for a three-character word) instead of a phrase of bigrams.

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// A token and its position (consecutive tokens have consecutive positions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub pos: u32,
}

/// Documents get a tail token per CJK run of two or more characters; queries do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Document,
    Query,
}

pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana extensions
        | 0x3400..=0x4DBF    // Han extension A
        | 0x4E00..=0x9FFF    // Han
        | 0xF900..=0xFAFF    // Han compatibility
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x20000..=0x3134F) // Han extensions B–G
}

/// Whether `c` belongs to a word: a letter, digit, mark or `_`. ASCII and basic Cyrillic
/// (the commonest letters of memories) are answered without Unicode's tables, which
/// cost most of the time a long document takes to tokenize.
fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    if ('\u{0400}'..='\u{045F}').contains(&c) {
        return true;
    }
    is_word_by_tables(c)
}

fn is_word_by_tables(c: char) -> bool {
    c.is_alphanumeric()
        || c == '_'
        || matches!(
            c.general_category(),
            GeneralCategory::NonspacingMark | GeneralCategory::SpacingMark
        )
}

/// Appends `c` lowercased (`ё` folded to `е`), with ASCII, basic Cyrillic and CJK done
/// without Unicode's tables (see [`is_word`]).
fn push_lower(out: &mut String, c: char) {
    let folded = match c as u32 {
        0..=0x7F => Some(c.to_ascii_lowercase()),
        // Ѐ–Џ: their lowercase is 0x50 on (Ё → ё → е).
        0x0400..=0x040F => char::from_u32(c as u32 + 0x50),
        // А–Я: 0x20 on.
        0x0410..=0x042F => char::from_u32(c as u32 + 0x20),
        0x0430..=0x045F => Some(c),
        // Han, Kana and Hangul have no case.
        _ if is_cjk(c) => Some(c),
        _ => None,
    };
    match folded {
        Some('ё') => out.push('е'),
        Some(l) => out.push(l),
        None => push_lower_by_tables(out, c),
    }
}

fn push_lower_by_tables(out: &mut String, c: char) {
    for l in c.to_lowercase() {
        out.push(if l == 'ё' { 'е' } else { l });
    }
}

/// Tokenizes `text`, calling `emit(token, position, is_tail)` for each token in order.
/// Tail tokens carry the position of the bigram they end.
pub fn tokenize(text: &str, mode: Mode, mut emit: impl FnMut(&str, u32, bool)) {
    let mut pos = 0u32;
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let mut buf = String::new();
    let mut flush_run =
        |run: &mut Vec<char>, pos: &mut u32, emit: &mut dyn FnMut(&str, u32, bool)| {
            match run.len() {
                0 => {}
                1 => {
                    buf.clear();
                    push_lower(&mut buf, run[0]);
                    emit(&buf, *pos, false);
                    *pos += 1;
                }
                _ => {
                    for pair in run.windows(2) {
                        buf.clear();
                        push_lower(&mut buf, pair[0]);
                        push_lower(&mut buf, pair[1]);
                        emit(&buf, *pos, false);
                        *pos += 1;
                    }
                    if mode == Mode::Document {
                        buf.clear();
                        push_lower(&mut buf, run[run.len() - 1]);
                        emit(&buf, *pos - 1, true);
                    }
                }
            }
            run.clear();
        };
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                emit(&word, pos, false);
                pos += 1;
                word.clear();
            }
            run.push(c);
        } else if is_word(c) {
            flush_run(&mut run, &mut pos, &mut emit);
            push_lower(&mut word, c);
        } else {
            flush_run(&mut run, &mut pos, &mut emit);
            if !word.is_empty() {
                emit(&word, pos, false);
                pos += 1;
                word.clear();
            }
        }
    }
    flush_run(&mut run, &mut pos, &mut emit);
    if !word.is_empty() {
        emit(&word, pos, false);
    }
}

/// Calls `f` with each run of CJK characters in `text`, lowercased as tokens are.
pub fn cjk_runs(text: &str, mut f: impl FnMut(&str)) {
    let mut run = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            push_lower(&mut run, c);
        } else if !run.is_empty() {
            f(&run);
            run.clear();
        }
    }
    if !run.is_empty() {
        f(&run);
    }
}

/// CJK runs this long or longer are also indexed, and queried, as their trigrams.
pub const TRIGRAM_RUN: usize = 3;

/// The overlapping trigrams of a CJK run (none if it is shorter than three characters).
pub fn trigrams(run: &str) -> Vec<String> {
    let chars: Vec<char> = run.chars().collect();
    chars.windows(3).map(|w| w.iter().collect()).collect()
}

/// A document's trigram column: each CJK run of [`TRIGRAM_RUN`] or more characters as its
/// trigrams, space-separated, runs apart by a `_` token (never a trigram), so a phrase of
/// trigrams matches within one run: a CJK word is found wherever it is a substring, and
/// looking it up takes one token for three characters instead of a phrase of bigrams.
pub fn index_trigrams(text: &str) -> String {
    let mut out = String::new();
    cjk_runs(text, |run| {
        let tris = trigrams(run);
        if tris.is_empty() {
            return;
        }
        if !out.is_empty() {
            out.push_str(" _ ");
        }
        out.push_str(&tris.join(" "));
    });
    out
}

/// The positioned (non-tail) tokens of `text` as a vector.
pub fn tokens(text: &str, mode: Mode) -> Vec<Token> {
    let mut out = Vec::new();
    tokenize(text, mode, |t, pos, tail| {
        if !tail {
            out.push(Token {
                text: t.to_owned(),
                pos,
            })
        }
    });
    out
}

/// A document as the index stores it: positioned tokens and tail tokens, each
/// space-separated, and the number of positioned tokens.
pub fn index_text(text: &str) -> (String, String, u32) {
    let (mut body, mut tails, mut count) = (String::with_capacity(text.len()), String::new(), 0);
    tokenize(text, Mode::Document, |t, _, tail| {
        let out = if tail { &mut tails } else { &mut body };
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
        count += u32::from(!tail);
    });
    (body, tails, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, mode: Mode, expect: &[&str]) {
        let mut got = Vec::new();
        tokenize(text, mode, |t, _, _| got.push(t.to_owned()));
        assert_eq!(got, expect, "{text:?}");
    }

    /// The shortcuts for ASCII and basic Cyrillic agree with Unicode's tables.
    #[test]
    fn the_shortcuts_agree_with_the_tables() {
        for c in (0u32..0x0500).filter_map(char::from_u32) {
            assert_eq!(is_word(c), is_word_by_tables(c), "{c:?}");
        }
        for c in (0u32..=0x3134F).filter_map(char::from_u32) {
            let (mut fast, mut slow) = (String::new(), String::new());
            push_lower(&mut fast, c);
            push_lower_by_tables(&mut slow, c);
            assert_eq!(fast, slow, "{c:?}");
        }
    }

    #[test]
    fn words_are_lowercased() {
        check(
            "Hello, World! it's",
            Mode::Query,
            &["hello", "world", "it", "s"],
        );
        check("Память ЁЛКА", Mode::Query, &["память", "елка"]);
        check("snake_case v2", Mode::Query, &["snake_case", "v2"]);
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        check("数据库", Mode::Query, &["数据", "据库"]);
        check("数据库", Mode::Document, &["数据", "据库", "库"]);
        check("用Rust写", Mode::Document, &["用", "rust", "写"]);
        check(
            "데이터베이스를 사용",
            Mode::Query,
            &["데이", "이터", "터베", "베이", "이스", "스를", "사용"],
        );
        check("メモリ", Mode::Query, &["メモ", "モリ"]);
    }

    #[test]
    fn long_runs_are_also_trigrams() {
        assert_eq!(
            index_trigrams("数据 a 数据库很快 メモリ"),
            "数据库 据库很 库很快 _ メモリ"
        );
        assert_eq!(index_trigrams("数据 rust"), "");
        let mut runs = Vec::new();
        cjk_runs("a数据b데이터베이스를\nメ", |r| {
            runs.push(r.to_owned())
        });
        assert_eq!(runs, ["数据", "데이터베이스를", "メ"]);
    }

    #[test]
    fn positions_are_consecutive_and_tails_take_none() {
        let t = tokens("a 数据库 b", Mode::Document);
        assert_eq!(t.iter().map(|t| t.pos).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(
            index_text("a 数据库 b"),
            ("a 数据 据库 b".into(), "库".into(), 4)
        );
    }
}
