//! Fuzz target `edit`: `memdir::edit::{replace, insert, append}` against a small reference
//! model written here from the contract (docs/tools.md `memory_edit`, docs/decisions/where-the-spec-is-silent.md, "Lines"):
//!
//! - replace: `old_str` must occur exactly once unless `replace_all`; occurrences are
//!   counted over the whole text, left to right, without overlap (as Python's
//!   `str.count`, which the Anthropic memory tool uses); an empty `old_str` is an error;
//! - insert: `insert_text` goes in as whole lines after line `insert_line` (0 = before the
//!   first), which must be within `[0, lines]`;
//! - append: the tail starts on a new line if the text does not end with one;
//! - lines: a final newline ends the last line (`"a\nb\n"` has 2 lines, `""` has 0).
//!
//! Invariants: the new text and the changed line range equal the model's; an error
//! happens exactly when the model says so; the snippet of every result renders; no panic.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use memdir::edit::{self, Edited};

#[derive(Arbitrary, Debug)]
struct Input {
    text: String,
    old: Old,
    new: String,
    replace_all: bool,
    insert_line: Line,
    insert_text: String,
    append_text: String,
}

/// `old_str`: free text, or a piece of the text (so that it matches often).
#[derive(Arbitrary, Debug)]
enum Old {
    Free(String),
    Slice { start: u16, len: u8 },
}

/// `insert_line`: mostly near the text's line count, sometimes anything.
#[derive(Arbitrary, Debug)]
enum Line {
    Near(i8),
    Any(i64),
}

fuzz_target!(|input: Input| {
    let text = input.text.as_str();
    let old = match &input.old {
        Old::Free(s) => s.clone(),
        Old::Slice { start, len } => slice(text, *start as usize, *len as usize).to_owned(),
    };
    check_replace(text, &old, &input.new, input.replace_all);
    let after = match input.insert_line {
        Line::Near(n) => line_count(text) as i64 + n as i64 / 16,
        Line::Any(n) => n,
    };
    check_insert(text, after, &input.insert_text);
    check_append(text, &input.append_text);
});

/// The piece of `text` at about `start`, `len` bytes long, cut at character boundaries.
fn slice(text: &str, start: usize, len: usize) -> &str {
    let mut a = start.min(text.len());
    while !text.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = (a + len).min(text.len());
    while !text.is_char_boundary(b) {
        b -= 1;
    }
    &text[a..b]
}

/// Lines per the spec: every `\n` ends one, and a non-empty rest is one more.
fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// 1-based line holding byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The model's answer: `Ok((text, first_line, last_line))` or `Err(message fragment)`.
type Model = Result<(String, usize, usize), String>;

fn model_replace(text: &str, old: &str, new: &str, replace_all: bool) -> Model {
    if old.is_empty() {
        return Err("old_str is empty".into());
    }
    // A multi-line old_str with bare newlines that is not in a CRLF file as given is
    // looked for with CRLF endings (new_str too, unless it has a `\r` of its own).
    if old.contains('\n') && !old.contains('\r') && text.contains("\r\n") && !text.contains(old) {
        let new = if new.contains('\r') {
            new.to_owned()
        } else {
            new.replace('\n', "\r\n")
        };
        return model_replace(text, &old.replace('\n', "\r\n"), &new, replace_all);
    }
    // Occurrences, left to right, without overlap.
    let mut starts = Vec::new();
    let mut i = 0;
    while i + old.len() <= text.len() {
        if text.as_bytes()[i..].starts_with(old.as_bytes()) {
            starts.push(i);
            i += old.len();
        } else {
            i += 1;
        }
    }
    if starts.is_empty() {
        return Err("did not appear verbatim".into());
    }
    if starts.len() > 1 && !replace_all {
        // The lines with a match, each once, at most 20; then the count of occurrences
        // when there are more occurrences than listed lines.
        let mut distinct: Vec<usize> = starts.iter().map(|&s| line_at(text, s)).collect();
        distinct.dedup();
        distinct.truncate(20);
        let mut lines: Vec<String> = distinct.iter().map(usize::to_string).collect();
        if starts.len() > distinct.len() {
            lines.push(format!("… ({} occurrences in all)", starts.len()));
        }
        return Err(format!("lines: {}.", lines.join(", ")));
    }
    let mut out = String::new();
    let mut from = 0;
    let mut last = (0, 0);
    for &s in &starts {
        out.push_str(&text[from..s]);
        let at = out.len();
        out.push_str(new);
        last = (at, out.len());
        from = s + old.len();
    }
    out.push_str(&text[from..]);
    let first_line = line_at(text, starts[0]);
    // The line of the last replacement's last byte (of its start when it is empty).
    let end_byte = if last.1 > last.0 { last.1 - 1 } else { last.0 };
    let last_line = line_at(&out, end_byte).max(first_line);
    Ok((out, first_line, last_line))
}

fn model_insert(text: &str, after: i64, insert: &str) -> Model {
    let count = line_count(text);
    if after < 0 || after as u64 > count as u64 {
        return Err(format!("[0, {count}]"));
    }
    let after = after as usize;
    // Added text takes the file's line endings: CRLF if the file has any.
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let units: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: String = units[..after].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(nl);
    }
    let mut block = if nl == "\r\n" && !insert.contains('\r') {
        insert.replace('\n', "\r\n")
    } else {
        insert.to_owned()
    };
    if !block.ends_with('\n') {
        block.push_str(nl);
    }
    out.push_str(&block);
    out.push_str(&units[after..].concat());
    Ok((out, after + 1, after + line_count(&block)))
}

fn model_append(text: &str, tail: &str) -> (String, usize, usize) {
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(nl);
    }
    let first = line_count(&out) + 1;
    if nl == "\r\n" && !tail.contains('\r') {
        out.push_str(&tail.replace('\n', "\r\n"));
    } else {
        out.push_str(tail);
    }
    let last = line_count(&out).max(first);
    (out, first, last)
}

fn compare(what: &str, got: memdir::Result<Edited>, want: Model) {
    match (got, want) {
        (Ok(e), Ok((text, first, last))) => {
            assert_eq!(e.text, text, "{what}: text differs from the model");
            assert_eq!(
                (e.first_line, e.last_line),
                (first, last),
                "{what}: changed lines differ from the model"
            );
            assert!(
                e.changed.first().map(|c| c.0) == Some(first)
                    && e.changed.last().map(|c| c.1) == Some(last)
                    && e.changed.iter().all(|c| c.0 <= c.1)
                    && e.changed.windows(2).all(|w| w[0].0 <= w[1].0),
                "{what}: changed places {:?} do not span {first}..={last} in order",
                e.changed
            );
            let budget = 64 + e.text.len() % 4096;
            let snippet = edit::snippet(&e.text, &e.changed, budget);
            assert!(
                snippet.len() <= budget + 120,
                "{what}: a snippet of {} bytes for a budget of {budget}",
                snippet.len()
            );
        }
        (Err(e), Err(fragment)) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&fragment),
                "{what}: error {msg:?} lacks {fragment:?}"
            );
        }
        (Ok(e), Err(fragment)) => panic!("{what}: succeeded ({e:?}), model says {fragment:?}"),
        (Err(e), Ok(want)) => panic!("{what}: failed ({e}), model says {want:?}"),
    }
}

fn check_replace(text: &str, old: &str, new: &str, replace_all: bool) {
    compare(
        &format!("replace({text:?}, {old:?}, {new:?}, {replace_all})"),
        edit::replace(text, "/memories/x.md", old, new, replace_all),
        model_replace(text, old, new, replace_all),
    );
}

fn check_insert(text: &str, after: i64, insert: &str) {
    compare(
        &format!("insert({text:?}, {after}, {insert:?})"),
        edit::insert(text, after, insert),
        model_insert(text, after, insert),
    );
}

fn check_append(text: &str, tail: &str) {
    compare(
        &format!("append({text:?}, {tail:?})"),
        Ok(edit::append(text, tail)),
        Ok(model_append(text, tail)),
    );
}
