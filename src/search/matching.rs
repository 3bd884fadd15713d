//! Matching one document against a query, in one pass of the tokenizer: per-clause term
//! frequencies, exact and by word form, and the document's length (what BM25 needs, see
//! `bm25`), and the best matching lines of a hit for its snippet.

use std::collections::HashMap;

use super::lang::Forms;
use super::query::{Clause, Query};
use super::tokenize::{Mode, cjk_runs, tokenize};

/// How one document meets each clause of a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocMatch {
    /// Exact occurrences per clause, in query order.
    pub tf: Vec<u32>,
    /// Occurrences as another form of the word, per clause ([`Clause::Word`] only).
    pub forms: Vec<u32>,
    /// Tokens in the document.
    pub len: u32,
}

impl DocMatch {
    /// Every clause occurs.
    pub fn all(&self) -> bool {
        (0..self.tf.len()).all(|i| self.occurs(i))
    }

    pub fn any(&self) -> bool {
        (0..self.tf.len()).any(|i| self.occurs(i))
    }

    fn occurs(&self, clause: usize) -> bool {
        self.tf[clause] > 0 || self.forms[clause] > 0
    }

    /// How the document matched: `(exactly, by word forms)`: some clause occurs as
    /// typed, some clause occurs only as another form of its word.
    pub fn how(&self) -> (bool, bool) {
        let exact = self.tf.iter().any(|&n| n > 0);
        let forms = (0..self.tf.len()).any(|i| self.tf[i] == 0 && self.forms[i] > 0);
        (exact, forms)
    }

    /// Matches `query` against a whole document.
    pub fn of(query: &Query, text: &str) -> DocMatch {
        Pass::run(query, text, Need::Length).doc
    }
}

/// One pass of the tokenizer over a document, for one query: the document's match, and
/// each occurrence's line. Only tokens the query can use are kept, so nothing is
/// allocated per token.
struct Pass<'t> {
    doc: DocMatch,
    /// `(line index, clause)` per occurrence that lies within one line.
    hits: Vec<(usize, usize)>,
    lines: Vec<&'t str>,
}

/// What a pass over a document must count besides the clauses' occurrences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// The document's length in tokens (BM25 needs it).
    Length,
    /// Only the lines the clauses occur on (showing lines needs no length).
    Lines,
}

/// Where the words of the query's phrases occur: global position → (word, line).
type Positions = HashMap<u32, (usize, usize)>;

impl<'t> Pass<'t> {
    fn run(query: &Query, text: &'t str, need: Need) -> Pass<'t> {
        let clauses = &query.clauses;
        let words = phrase_words(clauses);
        let mut pass = Pass {
            doc: DocMatch {
                tf: vec![0u32; clauses.len()],
                forms: vec![0u32; clauses.len()],
                len: 0,
            },
            hits: Vec::new(),
            lines: Vec::new(),
        };
        let at = pass.read_lines(clauses, text, &words, need);
        pass.count_phrases(clauses, &words, &at);
        pass
    }

    /// Counts terms, prefixes and CJK runs line by line, and the document's length;
    /// returns where the phrases' words occur.
    fn read_lines(
        &mut self,
        clauses: &[Clause],
        text: &'t str,
        words: &[&str],
        need: Need,
    ) -> Positions {
        let mut at = Positions::new();
        let runs = clauses.iter().any(|c| matches!(c, Clause::Run(_)));
        // A query of CJK words alone is matched on the runs: no tokens needed.
        let tokens = need == Need::Length || clauses.iter().any(|c| !matches!(c, Clause::Run(_)));
        // A document's words are stemmed as the index stems them: in its guessed language.
        // Only a Latin-script word needs the document's guessed language (one more pass of
        // the tokenizer); the others are stemmed by their script.
        let latin = clauses
            .iter()
            .any(|c| matches!(c, Clause::Word { stem, .. } | Clause::Stem(stem) if Forms::depends_on_text(stem)));
        let stemmed = clauses
            .iter()
            .any(|c| matches!(c, Clause::Word { .. } | Clause::Stem(_)));
        let doc_forms = if latin {
            Some(Forms::of_text(text))
        } else {
            stemmed.then(Forms::default)
        };
        // Whether a token is a form of a clause's stem, by token and clause: tokens repeat,
        // and stemming one costs more than looking it up.
        let mut memo: Vec<HashMap<String, bool>> = vec![HashMap::new(); clauses.len()];
        let (tf, forms, hits) = (&mut self.doc.tf, &mut self.doc.forms, &mut self.hits);
        // A newline ends every token (it is neither a word nor a CJK character), so line
        // by line the tokenizer gives the document's tokens, positions counted on.
        let mut base = 0u32;
        for (li, line) in text.lines().enumerate() {
            self.lines.push(line);
            let mut count = 0u32;
            let mut each = |t: &str, pos: u32, tail: bool| {
                for (ci, c) in clauses.iter().enumerate() {
                    let hit = match c {
                        Clause::Term(x) => t == x,
                        Clause::Prefix(p) => t.starts_with(p.as_str()),
                        // Words are in the index's body and stem columns, never its tails:
                        // a word as typed, or another form of its stem (a `Stem` is only
                        // ever another form: never the stem itself as a word).
                        Clause::Word { exact, .. } if !tail && t == exact => true,
                        Clause::Word { stem, .. } | Clause::Stem(stem) if !tail => {
                            let form = match c {
                                Clause::Stem(_) if t == stem => false,
                                _ => doc_forms.is_some_and(|f| {
                                    Forms::may_stem_to(t, stem)
                                        && match memo[ci].get(t) {
                                            Some(&known) => known,
                                            None => {
                                                let known = f.is_form_of(t, stem);
                                                memo[ci].insert(t.to_owned(), known);
                                                known
                                            }
                                        }
                                }),
                            };
                            if form {
                                forms[ci] += 1;
                                hits.push((li, ci));
                            }
                            false
                        }
                        Clause::Word { .. }
                        | Clause::Stem(_)
                        | Clause::Phrase(_)
                        | Clause::Run(_) => false,
                    };
                    if hit {
                        tf[ci] += 1;
                        hits.push((li, ci));
                    }
                }
                if !tail {
                    count += 1;
                    if let Some(wi) = words.iter().position(|w| *w == t) {
                        at.insert(base + pos, (wi, li));
                    }
                }
            };
            if tokens {
                tokenize(line, Mode::Document, &mut each);
            }
            base += count;
            if runs {
                cjk_runs(line, |run| {
                    for (ci, c) in clauses.iter().enumerate() {
                        if let Clause::Run(q) = c {
                            for _ in 0..occurrences(run, q) {
                                tf[ci] += 1;
                                hits.push((li, ci));
                            }
                        }
                    }
                });
            }
        }
        self.doc.len = base;
        at
    }

    /// Counts each phrase where its words stand in order at consecutive positions.
    fn count_phrases(&mut self, clauses: &[Clause], words: &[&str], at: &Positions) {
        for (ci, c) in clauses.iter().enumerate() {
            let Clause::Phrase(ws) = c else { continue };
            let ids: Vec<usize> = ws
                .iter()
                .filter_map(|w| words.iter().position(|x| x == w))
                .collect();
            let Some(&first) = ids.first() else { continue };
            for (&p, &(wi, li)) in at {
                if wi != first {
                    continue;
                }
                let mut last_line = li;
                let whole = ids.iter().enumerate().skip(1).all(|(i, &id)| {
                    at.get(&(p + i as u32)).is_some_and(|&(w, l)| {
                        last_line = l;
                        w == id
                    })
                });
                if whole {
                    self.doc.tf[ci] += 1;
                    if last_line == li {
                        self.hits.push((li, ci));
                    }
                }
            }
        }
    }

    /// Up to `max` lines with the most distinct clauses (then the most occurrences, then
    /// the earliest), in line order, and the first of the best.
    fn best_lines(mut self, max: usize) -> (usize, Vec<(usize, &'t str)>) {
        self.hits.sort_unstable();
        // (distinct clauses, occurrences, line index) per line with a hit
        let mut scored: Vec<(u32, u32, usize)> = Vec::new();
        let mut prev: Option<(usize, usize)> = None;
        for &(li, ci) in &self.hits {
            match scored.last_mut() {
                Some(last) if last.2 == li => {
                    last.1 += 1;
                    if prev != Some((li, ci)) {
                        last.0 += 1;
                    }
                }
                _ => scored.push((1, 1, li)),
            }
            prev = Some((li, ci));
        }
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        scored.truncate(max);
        let best = scored.first().map_or(1, |s| s.2 + 1);
        let mut picked: Vec<(usize, &str)> = scored
            .into_iter()
            .map(|s| (s.2 + 1, self.lines[s.2]))
            .collect();
        picked.sort_by_key(|l| l.0);
        (best, picked)
    }
}

/// The words of the query's phrases, each once.
fn phrase_words(clauses: &[Clause]) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    for c in clauses {
        if let Clause::Phrase(ws) = c {
            for w in ws {
                if !words.contains(&w.as_str()) {
                    words.push(w);
                }
            }
        }
    }
    words
}

/// How often `needle` occurs in `hay`, overlapping occurrences included (each start counts,
/// as each first trigram of a run of trigrams does).
fn occurrences(hay: &str, needle: &str) -> usize {
    let Some(step) = needle.chars().next().map(char::len_utf8) else {
        return 0;
    };
    let mut n = 0;
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        n += 1;
        from += i + step;
    }
    n
}

/// Up to `max` lines that best match `query` (most distinct clauses first), returned in
/// line order as `(1-based line number, line)`. The first line returned with the most
/// clauses is the hit's line; it is also returned separately.
pub fn best_lines<'t>(query: &Query, text: &'t str, max: usize) -> (usize, Vec<(usize, &'t str)>) {
    Pass::run(query, text, Need::Lines).best_lines(max)
}

/// What a search shows of a hit found by meaning alone: its first `max` non-blank lines
/// after the frontmatter (the line numbers of the file), the first of them as its line.
pub fn opening_lines(text: &str, max: usize) -> (usize, Vec<(usize, &str)>) {
    let lines: Vec<&str> = text.lines().collect();
    // A frontmatter block: `---` on the first line, up to the next `---`.
    let body = match lines.first() {
        Some(first) if first.trim_end() == "---" => lines
            .iter()
            .skip(1)
            .position(|l| l.trim_end() == "---")
            .map_or(0, |end| end + 2),
        _ => 0,
    };
    let picked: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .skip(body)
        .filter(|(_, l)| !l.trim().is_empty())
        .take(max)
        .map(|(i, l)| (i + 1, *l))
        .collect();
    (picked.first().map_or(1, |l| l.0), picked)
}

/// How a hit matched its query (a search hit lists each that applies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matched {
    /// Some of its words are in the memory as typed.
    Words,
    /// Some word is in the memory only as another form (`deploying` for `deployment`).
    WordForms,
    /// Its meaning is among the closest to the query's (search by meaning).
    Meaning,
}

impl Matched {
    /// Its name in search results.
    pub fn name(self) -> &'static str {
        match self {
            Matched::Words => "words",
            Matched::WordForms => "word forms",
            Matched::Meaning => "meaning",
        }
    }
}

/// What a search shows of a hit.
#[derive(Debug, PartialEq, Eq)]
pub struct Shown<'t> {
    /// The hit's line and its best lines, as [`best_lines`].
    pub line: usize,
    pub lines: Vec<(usize, &'t str)>,
    /// How it matched.
    pub matched: Vec<Matched>,
}

/// What a search shows of a hit, from one pass over its text, or `None` if the text no
/// longer matches the query at all (it changed since it was indexed).
pub fn shown_lines<'t>(query: &Query, text: &'t str, max: usize) -> Option<Shown<'t>> {
    let pass = Pass::run(query, text, Need::Lines);
    let (words, forms) = pass.doc.how();
    pass.doc.any().then(|| {
        let (line, lines) = pass.best_lines(max);
        let matched = [(words, Matched::Words), (forms, Matched::WordForms)];
        Shown {
            line,
            lines,
            matched: matched.into_iter().filter(|m| m.0).map(|m| m.1).collect(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(text, expected line, expected lines)`: a hit found by meaning alone shows its
    /// opening lines, after the frontmatter, with the file's line numbers.
    #[test]
    fn opening_lines_skip_frontmatter_and_blank_lines() {
        type Case<'a> = (&'a str, usize, &'a [(usize, &'a str)]);
        let cases: &[Case] = &[
            (
                "one\ntwo\nthree\nfour\n",
                1,
                &[(1, "one"), (2, "two"), (3, "three")],
            ),
            ("---\nname: x\n---\n\nbody\n", 5, &[(5, "body")]),
            ("\n\nlate\n", 3, &[(3, "late")]),
            // An unclosed block is not frontmatter.
            ("---\nname: x\n", 1, &[(1, "---"), (2, "name: x")]),
            ("", 1, &[]),
        ];
        for (text, line, lines) in cases {
            let (got_line, got) = opening_lines(text, 3);
            assert_eq!((got_line, got.as_slice()), (*line, *lines), "{text:?}");
        }
    }

    #[test]
    fn counts_terms_prefixes_and_phrases() {
        let q = Query::parse("rust \"crash safe\" tok*");
        let m = DocMatch::of(
            &q,
            "Rust is crash safe. rust tokio tokens; crash, then safe",
        );
        assert_eq!(m.tf, [2, 1, 2]);
        assert!(m.all());
        let zh = Query::parse("数据库");
        assert_eq!(DocMatch::of(&zh, "我们的数据库很快").tf, [1]);
        assert_eq!(DocMatch::of(&zh, "数据 库").tf, [0]);
        assert_eq!(
            DocMatch::of(&Query::parse("库"), "我们的数据库很快").tf,
            [1],
            "a tail-only character"
        );
        assert_eq!(
            DocMatch::of(&Query::parse("\"数据库 rust\""), "数据库 rust").tf,
            [1],
            "phrase across a run end"
        );
    }

    #[test]
    fn picks_the_best_lines() {
        let q = Query::parse("alpha beta");
        let text = "nothing\nalpha here\nalpha and beta\nbeta\n";
        let (best, lines) = best_lines(&q, text, 2);
        assert_eq!(best, 3);
        assert_eq!(lines, [(2, "alpha here"), (3, "alpha and beta")]);
    }

    /// The straightforward matcher the one-pass one replaced: every token of the text in
    /// a map, phrases by position lookup, lines matched one by one.
    mod reference {
        use std::collections::HashMap;

        use crate::search::lang::Forms;
        use crate::search::query::{Clause, Query};
        use crate::search::tokenize::{Mode, tokenize};

        /// Occurrences per clause, exact and by word form together (`forms`: those of the
        /// whole document, of which `text` may be a line).
        pub fn tf(query: &Query, text: &str, forms: Forms) -> (Vec<u32>, u32) {
            let mut positions: HashMap<String, Vec<u32>> = HashMap::new();
            let mut tails: HashMap<String, u32> = HashMap::new();
            let mut len = 0u32;
            tokenize(text, Mode::Document, |t, pos, tail| {
                if tail {
                    *tails.entry(t.to_owned()).or_default() += 1;
                } else {
                    len += 1;
                    positions.entry(t.to_owned()).or_default().push(pos);
                }
            });
            let count = |c: &Clause| -> u32 {
                let matching = |f: &dyn Fn(&str) -> bool| -> u32 {
                    positions
                        .iter()
                        .filter(|(k, _)| f(k))
                        .map(|(_, v)| v.len() as u32)
                        .sum::<u32>()
                        + tails
                            .iter()
                            .filter(|(k, _)| f(k))
                            .map(|(_, n)| n)
                            .sum::<u32>()
                };
                match c {
                    Clause::Term(t) => matching(&|k| k == t),
                    Clause::Word { exact, stem } => positions
                        .iter()
                        .filter(|(k, _)| *k == exact || forms.is_form_of(k, stem))
                        .map(|(_, v)| v.len() as u32)
                        .sum(),
                    Clause::Stem(stem) => positions
                        .iter()
                        .filter(|(k, _)| *k != stem && forms.is_form_of(k, stem))
                        .map(|(_, v)| v.len() as u32)
                        .sum(),
                    Clause::Prefix(p) => matching(&|k| k.starts_with(p.as_str())),
                    // The run's characters are CJK (no case): a plain substring count.
                    Clause::Run(q) => (0..text.len())
                        .filter(|&i| text.is_char_boundary(i) && text[i..].starts_with(q.as_str()))
                        .count() as u32,
                    Clause::Phrase(ws) => positions.get(&ws[0]).map_or(0, |first| {
                        first
                            .iter()
                            .filter(|&&p| {
                                ws.iter().enumerate().skip(1).all(|(i, w)| {
                                    positions
                                        .get(w)
                                        .is_some_and(|v| v.contains(&(p + i as u32)))
                                })
                            })
                            .count() as u32
                    }),
                }
            };
            (query.clauses.iter().map(count).collect(), len)
        }

        pub fn best_lines<'t>(
            query: &Query,
            text: &'t str,
            max: usize,
        ) -> (usize, Vec<(usize, &'t str)>) {
            let mut scored: Vec<(usize, u32, usize, &str)> = Vec::new();
            let forms = Forms::of_text(text);
            for (i, line) in text.lines().enumerate() {
                let (tf, _) = tf(query, line, forms);
                let distinct = tf.iter().filter(|&&n| n > 0).count();
                if distinct > 0 {
                    scored.push((distinct, tf.iter().sum(), i + 1, line));
                }
            }
            scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
            scored.truncate(max);
            let best = scored.first().map_or(1, |s| s.2);
            let mut lines: Vec<(usize, &str)> = scored.into_iter().map(|s| (s.2, s.3)).collect();
            lines.sort_by_key(|l| l.0);
            (best, lines)
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1000,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Texts and queries from a small alphabet (so words repeat and phrases occur),
        /// with CJK runs, Cyrillic, punctuation, CRLF and newlines inside phrases.
        #[test]
        fn one_pass_agrees_with_the_reference(
            text in "(ab|ba|a|b|数据|据库|数|é|Ё|ё|\\.| |\n|\r\n|\"){0,40}",
            query in "(ab|ba|a|b|数据库|数据|数|据|库|ё|\\*| |\"){0,12}",
        ) {
            let q = Query::parse(&query);
            let (tf, len) = reference::tf(&q, &text, crate::search::lang::Forms::of_text(&text));
            let m = DocMatch::of(&q, &text);
            let both: Vec<u32> = m.tf.iter().zip(&m.forms).map(|(a, b)| a + b).collect();
            proptest::prop_assert_eq!(&both, &tf);
            proptest::prop_assert_eq!(m.len, len);
            proptest::prop_assert_eq!(
                best_lines(&q, &text, 3),
                reference::best_lines(&q, &text, 3)
            );
            proptest::prop_assert_eq!(
                shown_lines(&q, &text, 3).is_some(),
                tf.iter().any(|&n| n > 0)
            );
        }
    }
}
