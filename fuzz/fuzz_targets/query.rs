//! Fuzz target `query`: an arbitrary string as a search query and as a document, through
//! the tokenizer, the query parser, in-memory matching and ranking, and a real SQLite FTS5
//! index.
//!
//! Invariants (a panic is a finding):
//! - tokens are non-empty and made only of characters FTS5's `ascii` tokenizer keeps in a
//!   token (ASCII letters, digits, `_`, any non-ASCII), so the space-joined index text
//!   splits back into exactly the same tokens; positions count up from 0 without gaps;
//! - a parsed query has at most `MAX_CLAUSES` distinct clauses, none empty;
//! - `best_lines` returns at most `max` existing lines, in order, including the best one;
//! - any input string is a valid query: the index never answers with an error (docs/tools.md:
//!   any string is a valid query);
//! - the index and the scan agree: the documents FTS5 returns for all (any) clauses are
//!   exactly those `DocMatch` finds matching all (any) clauses. A search shows index hits
//!   and falls back to the scan, so a disagreement is a hit that appears or disappears
//!   depending on whether the index is there.

#![no_main]

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use memdir::search::filter::Filter;
use memdir::search::index::{Combine, Index, IndexedDoc, Stamp};
use memdir::search::query::MAX_CLAUSES;
use memdir::search::tokenize::{Mode, index_text, index_trigrams, is_cjk, tokenize, tokens};
use memdir::search::{Clause, DocMatch, Query, best_lines};

/// A small multilingual collection, always indexed next to the input.
const DOCS: &[(&str, &str)] = &[
    (
        "en.md",
        "Rust is crash safe.\nThe tokio runtime drives rmcp; tokens_and words.\nNEAR(x) AND OR NOT \"quoted\" prefix*\n",
    ),
    ("zh.md", "我们的数据库很快。\n数据 库 分开\n单字：库\n"),
    ("ja.md", "東京の天気は晴れです。カタカナ ひらがな\n"),
    ("ko.md", "한국어 문서입니다. 데이터베이스\n"),
    ("ru.md", "Ёлка и ЕЛКА: заметки о базе данных.\n"),
    (
        "mixed.md",
        "café naïve İstanbul ǅemal K ß ﬁle 数据库rust 123abc a_b\n",
    ),
    ("empty.md", ""),
];

/// The rel of the fuzz input as a document.
const INPUT_DOC: &str = "input.md";

struct Fixture {
    _tmp: tempfile::TempDir,
    index: Index,
}

fn fixture() -> &'static Mutex<Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let tmp = tempfile::Builder::new()
            .prefix("memdir-fuzz-query-")
            .tempdir()
            .expect("temp dir");
        let index = Index::open(&tmp.path().join("index.sqlite")).expect("open the index");
        index
            .write(|w| {
                for (rel, text) in DOCS {
                    w.upsert(&doc(rel, text))?;
                }
                Ok(())
            })
            .expect("index the fixed documents");
        Mutex::new(Fixture { _tmp: tmp, index })
    })
}

fn doc<'a>(rel: &'a str, text: &'a str) -> IndexedDoc<'a> {
    IndexedDoc {
        rel,
        stamp: Stamp {
            size: text.len() as u64,
            mtime_ns: 0,
            ino: 0,
        },
        text,
        frontmatter: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    let input = input.as_ref();
    check_tokens(input);
    let query = Query::parse(input);
    check_query(&query);
    // The relaxed stage's query (a CJK run's pieces added) is as valid.
    check_query(&query.relaxed());
    let matches: Vec<(&str, DocMatch)> = DOCS
        .iter()
        .copied()
        .chain([(INPUT_DOC, input)])
        .map(|(rel, text)| {
            let m = DocMatch::of(&query, text);
            assert_eq!(m.tf.len(), query.clauses.len());
            check_best_lines(&query, text);
            (rel, m)
        })
        .collect();
    check_index(input, &query, &matches);
});

/// FTS5's `ascii` tokenizer keeps these in a token (with `tokenchars '_'`).
fn fts_token_char(c: char) -> bool {
    !c.is_ascii() || c.is_ascii_alphanumeric() || c == '_'
}

fn check_tokens(input: &str) {
    for mode in [Mode::Document, Mode::Query] {
        let mut next = 0u32;
        let mut last = None;
        tokenize(input, mode, |t, pos, tail| {
            assert!(!t.is_empty(), "empty token in {input:?}");
            assert!(
                t.chars().all(fts_token_char),
                "token {t:?} of {input:?} would be split by FTS5"
            );
            if tail {
                assert_eq!(mode, Mode::Document, "a tail token in a query");
                assert_eq!(Some(pos), last, "a tail token not at its bigram's position");
            } else {
                assert_eq!(pos, next, "positions skip or repeat in {input:?}");
                next += 1;
                last = Some(pos);
            }
        });
        assert_eq!(tokens(input, mode).len(), next as usize);
    }
    let (body, tail, count) = index_text(input);
    let positioned: Vec<String> = tokens(input, Mode::Document)
        .into_iter()
        .map(|t| t.text)
        .collect();
    let split: Vec<&str> = body.split(' ').filter(|t| !t.is_empty()).collect();
    assert_eq!(
        split, positioned,
        "index body does not split back into the tokens"
    );
    assert_eq!(count as usize, positioned.len());
    assert!(!tail.starts_with(' ') && !tail.ends_with(' ') && !tail.contains("  "));
    let tri = index_trigrams(input);
    for t in tri.split(' ') {
        assert!(
            tri.is_empty() || t == "_" || (t.chars().count() == 3 && t.chars().all(is_cjk)),
            "trigram column token {t:?} of {input:?}"
        );
    }
}

fn check_query(query: &Query) {
    assert!(query.clauses.len() <= MAX_CLAUSES);
    let distinct: BTreeSet<String> = query.clauses.iter().map(|c| format!("{c:?}")).collect();
    assert_eq!(distinct.len(), query.clauses.len(), "duplicate clauses");
    for clause in &query.clauses {
        match clause {
            Clause::Term(t) | Clause::Prefix(t) | Clause::Stem(t) => {
                assert!(!t.is_empty() && t.chars().all(fts_token_char), "{clause:?}")
            }
            Clause::Word { exact, stem } => {
                for t in [exact, stem] {
                    assert!(!t.is_empty() && t.chars().all(fts_token_char), "{clause:?}");
                }
            }
            Clause::Run(run) => {
                assert!(
                    run.chars().count() >= 3 && run.chars().all(is_cjk),
                    "{clause:?}"
                );
            }
            Clause::Phrase(words) => {
                assert!(!words.is_empty(), "empty phrase");
                for w in words {
                    assert!(!w.is_empty() && w.chars().all(fts_token_char), "{clause:?}");
                }
            }
        }
    }
}

fn check_best_lines(query: &Query, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let (best, picked) = best_lines(query, text, 3);
    assert!(picked.len() <= 3);
    assert!(
        picked.windows(2).all(|w| w[0].0 < w[1].0),
        "lines out of order"
    );
    for &(n, line) in &picked {
        assert!(n >= 1 && n <= lines.len() && lines[n - 1] == line);
    }
    if picked.is_empty() {
        assert_eq!(best, 1);
    } else {
        assert!(
            picked.iter().any(|&(n, _)| n == best),
            "best line not shown"
        );
    }
}

/// `matches`: each document's `DocMatch`, the scan's answer.
fn check_index(input: &str, query: &Query, matches: &[(&str, DocMatch)]) {
    let fx = fixture().lock().unwrap_or_else(|e| e.into_inner());
    fx.index
        .write(|w| w.upsert(&doc(INPUT_DOC, input)))
        .unwrap_or_else(|e| panic!("indexing {input:?} failed: {e}"));
    for combine in [Combine::All, Combine::Any] {
        let (total, hits) = fx
            .index
            .query(&query.clauses, combine, &Filter::default(), 0, 100)
            .unwrap_or_else(|e| panic!("query {input:?} ({combine:?}) is an error: {e}"));
        assert_eq!(total, hits.len());
        if query.is_empty() {
            assert_eq!(total, 0, "an empty query matches nothing");
            continue;
        }
        let from_index: BTreeSet<&str> = hits.iter().map(|h| h.rel.as_str()).collect();
        let from_scan: BTreeSet<&str> = matches
            .iter()
            .filter(|(_, m)| match combine {
                Combine::All => m.all(),
                Combine::Any => m.any(),
            })
            .map(|(rel, _)| *rel)
            .collect();
        assert_eq!(
            from_index, from_scan,
            "index and scan disagree on {input:?} ({combine:?}), clauses {:?}",
            query.clauses
        );
    }
}
