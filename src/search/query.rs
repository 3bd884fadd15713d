//! The query language, where every input string is valid: words are ANDed, each found
//! as itself or any of its word forms (its Snowball stem, see `lang`); stopwords are left
//! out when the query has other words, so a question is searched by its content words;
//! `"quoted phrases"` match adjacent words exactly, `prefix*` matches word beginnings.
//! Anything else (operators, punctuation, unbalanced quotes) is just text.
//!
//! Words written without spaces (CJK runs) are found by their pieces: an unquoted
//! Japanese run is searched as its kanji and katakana words, its hiragana (verb endings,
//! particles) left out, so `食べた` finds `食べる`; and the relaxed stage of a search
//! ([`Query::relaxed`]) also looks for each two characters of an unquoted longer run, so
//! `备份数据库` still finds `数据库备份`, after every memory that holds the whole run.

use std::borrow::Cow;

use super::lang::Forms;
use super::tokenize::{Mode, TRIGRAM_RUN, cjk_runs, is_cjk, tokens};

/// Clauses beyond this many are ignored (a pasted page is not a useful query).
pub const MAX_CLAUSES: usize = 64;

/// Only the first this many bytes of a query are read: enough for `MAX_CLAUSES` words,
/// and no query costs more than one of this length.
pub const MAX_QUERY_BYTES: usize = 1024;

/// Prefix clauses beyond this many are ignored: each makes the index merge the postings
/// of every word it begins (on a store of 1,000 files of random words, 0.2–0.3 s each).
pub const MAX_PREFIXES: usize = 8;

/// A phrase is matched by its first this many words: each more costs every document
/// that has the others another position check, and the index's phrase matching grew
/// with the phrase (a 10,000-word phrase took 600 MB).
pub const MAX_PHRASE_WORDS: usize = 16;

/// One condition a document must meet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Clause {
    /// A token, exactly (numbers, `snake_case`, CJK bigrams: words no stemmer applies to).
    Term(String),
    /// A word, found as itself (`exact`) or as any word of the same `stem` (which may
    /// equal it); an exact occurrence ranks above a word form.
    Word {
        exact: String,
        stem: String,
    },
    Prefix(String),
    /// Another form of a word, by its stem only: a document word, other than the stem
    /// itself, that stems to it (the index's stem column). The relaxed stage's
    /// other-language stems of a keyword, whose [`Clause::Word`] finds it as typed; a
    /// word that merely equals a foreign stem (`mem` for `memo`) is no form of it.
    Stem(String),
    /// Tokens that must appear at consecutive positions.
    Phrase(Vec<String>),
    /// A CJK word of [`TRIGRAM_RUN`] or more characters, alone: found where it is part of
    /// a CJK run (its trigrams, consecutive).
    Run(String),
}

/// A parsed query: its clauses, deduplicated, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub clauses: Vec<Clause>,
    /// Clauses only the relaxed stage adds: the two-character pieces (bigrams) of each
    /// unquoted CJK run of [`TRIGRAM_RUN`] or more characters, the words of each
    /// unquoted joined word (`Export-Jobs`, `CI/CD`), by their forms, and, for a query
    /// whose stopwords name no language, its words' stems in the other Latin-script
    /// languages ([`Clause::Stem`]).
    pub loose: Vec<Clause>,
    /// The input went past a bound (`MAX_QUERY_BYTES`, `MAX_CLAUSES`, `MAX_PHRASE_WORDS`,
    /// `MAX_PREFIXES`): only what is within them is searched.
    pub cut: bool,
}

impl Query {
    pub fn parse(input: &str) -> Query {
        let mut clauses = Vec::new();
        let read = crate::text::floor_char_boundary(input, MAX_QUERY_BYTES);
        let mut cut = read < input.len();
        let mut rest = &input[..read];
        let forms = Forms::of_text(rest);
        // Which clauses are unquoted CJK runs or joined words (`Export-Jobs`, `CI/CD`):
        // their pieces may be looked for alone.
        let mut loose_runs = Vec::new();
        let mut unquoted = |text: &str, out: &mut Vec<Clause>| {
            let from = out.len();
            words(text, Some(&forms), out);
            loose_runs.extend(
                (from..out.len()).filter(|&i| matches!(out[i], Clause::Run(_) | Clause::Phrase(_))),
            );
        };
        while !rest.is_empty() && clauses.len() < MAX_CLAUSES {
            match rest.find('"') {
                Some(open) => {
                    unquoted(&rest[..open], &mut clauses);
                    let after = &rest[open + 1..];
                    let (inner, tail) = match after.find('"') {
                        Some(close) => (&after[..close], &after[close + 1..]),
                        None => (after, ""),
                    };
                    phrase(inner, &mut clauses);
                    rest = tail;
                }
                None => {
                    unquoted(rest, &mut clauses);
                    rest = "";
                }
            }
        }
        cut |= !rest.trim().is_empty();
        let mut loose = Vec::new();
        for (i, clause) in clauses.iter_mut().enumerate() {
            match clause {
                Clause::Phrase(words) => {
                    cut |= words.len() > MAX_PHRASE_WORDS;
                    words.truncate(MAX_PHRASE_WORDS);
                    // A joined word is each of its words too, by their forms
                    // (`Export-Jobs` finds `export job`), but only once every whole
                    // word has failed: a one-letter piece or a stopword finds nothing.
                    if loose_runs.contains(&i) {
                        loose.extend(
                            words
                                .iter()
                                .filter(|w| w.chars().count() > 1 && !forms.is_stopword(w))
                                .map(|w| word(w.clone(), Some(&forms))),
                        );
                    }
                }
                // A run is matched as the phrase of its trigrams.
                Clause::Run(run) => {
                    if let Some((at, _)) = run.char_indices().nth(MAX_PHRASE_WORDS + 2) {
                        cut = true;
                        run.truncate(at);
                    }
                    if loose_runs.contains(&i) {
                        let chars: Vec<char> = run.chars().collect();
                        loose.extend(chars.windows(2).map(|w| Clause::Term(w.iter().collect())));
                    }
                }
                _ => {}
            }
        }
        // A query of keywords alone does not say its language, and its words were
        // stemmed as English: a memory in another Latin-script language holds them in
        // that language's forms. The relaxed stage also looks for those.
        if !Forms::says_latin(&input[..read]) {
            for clause in &clauses {
                if let Clause::Word { exact, .. } = clause {
                    loose.extend(forms.other_stems(exact).into_iter().map(Clause::Stem));
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        clauses.retain(|c| seen.insert(c.clone()));
        loose.retain(|c| seen.insert(c.clone()));
        // A question's words such as `what`, `did`, `the` would make every memory that
        // lacks one fail the query: they are left out when there is anything else.
        let content =
            |c: &Clause| !matches!(c, Clause::Word { exact, .. } if forms.is_stopword(exact));
        if clauses.iter().any(content) {
            clauses.retain(content);
        }
        let mut prefixes = 0;
        clauses.retain(|c| {
            prefixes += usize::from(matches!(c, Clause::Prefix(_)));
            prefixes <= MAX_PREFIXES || !matches!(c, Clause::Prefix(_))
        });
        cut |= prefixes > MAX_PREFIXES || clauses.len() > MAX_CLAUSES;
        clauses.truncate(MAX_CLAUSES);
        loose.truncate(MAX_CLAUSES.saturating_sub(clauses.len()));
        Query {
            clauses,
            loose,
            cut,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }

    /// The query of a search's relaxed stage, which a memory meets by holding any one of
    /// its clauses: these clauses and the [`loose`](Query::loose) pieces of its CJK runs.
    pub fn relaxed(&self) -> Query {
        Query {
            clauses: self.clauses.iter().chain(&self.loose).cloned().collect(),
            loose: Vec::new(),
            cut: self.cut,
        }
    }
}

/// Unquoted words (`forms`: found by their word forms, a Japanese run by its pieces) or a
/// quoted one (`None`: exactly).
fn words(text: &str, forms: Option<&Forms>, out: &mut Vec<Clause>) {
    for raw in text.split_whitespace() {
        if forms.is_some() && !raw.ends_with('*') {
            for piece in japanese_words(raw).split_whitespace() {
                word_clauses(piece, forms, out);
            }
        } else {
            word_clauses(raw, forms, out);
        }
    }
}

/// A Japanese word is written in kanji or katakana with its ending in hiragana (`食べる`,
/// `食べた`), and hiragana particles join a phrase's words into one run (`新宿で食べる`):
/// each CJK run of `raw` that holds kana is cut into its kanji and katakana pieces, the
/// hiragana left out (a run of hiragana alone stays whole), so that each piece is found
/// whatever its ending and wherever it stands. Other text is left as it is.
fn japanese_words(raw: &str) -> Cow<'_, str> {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Script {
        Hiragana,
        Katakana,
        Other,
    }
    let script = |c: char| match c as u32 {
        0x3040..=0x309F => Script::Hiragana,
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Script::Katakana,
        _ => Script::Other,
    };
    let mut out = String::with_capacity(raw.len());
    let mut changed = false;
    let mut run = String::new();
    let mut flush = |run: &mut String, out: &mut String| {
        let scripts: Vec<Script> = run.chars().map(script).collect();
        let kana = scripts.iter().any(|&s| s != Script::Other);
        let hiragana_only = scripts.iter().all(|&s| s == Script::Hiragana);
        if !kana || hiragana_only {
            out.push_str(run);
        } else {
            let mut last = None;
            for (c, s) in run.chars().zip(scripts) {
                if s == Script::Hiragana {
                    out.push(' ');
                } else {
                    if last.is_some_and(|l| l != s) {
                        out.push(' ');
                    }
                    out.push(c);
                }
                last = Some(s);
            }
            changed = true;
        }
        run.clear();
    };
    for c in raw.chars() {
        if is_cjk(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(raw)
    }
}

/// The clauses of one whitespace-separated word of a query.
fn word_clauses(raw: &str, forms: Option<&Forms>, out: &mut Vec<Clause>) {
    let prefix = raw.ends_with('*');
    let toks: Vec<String> = tokens(raw, Mode::Query)
        .into_iter()
        .map(|t| t.text)
        .collect();
    match toks.len() {
        0 => {}
        1 => {
            let t = toks.into_iter().next().unwrap_or_default();
            let one_char = t.chars().count() == 1;
            let single_cjk = one_char && t.chars().all(is_cjk);
            // `x*` would be every word that begins with one letter: the word itself.
            out.push(if single_cjk || (prefix && !one_char) {
                Clause::Prefix(t)
            } else {
                word(t, forms)
            });
        }
        _ if prefix => {
            let mut toks = toks;
            let last = toks.pop().unwrap_or_default();
            out.push(Clause::Phrase(toks));
            out.push(Clause::Prefix(last));
        }
        _ => out.push(phrase_or_run(raw, toks)),
    }
}

/// Several tokens: a [`Clause::Run`] if they are the bigrams of one long enough CJK run
/// and nothing else, else a phrase.
fn phrase_or_run(text: &str, toks: Vec<String>) -> Clause {
    let mut runs = Vec::new();
    cjk_runs(text, |r| runs.push(r.to_owned()));
    match runs.as_slice() {
        [run] if run.chars().count() >= TRIGRAM_RUN && toks.len() + 1 == run.chars().count() => {
            Clause::Run(run.clone())
        }
        _ => Clause::Phrase(toks),
    }
}

/// A lone word: found by its forms if it is unquoted and a stemmer applies to it, else
/// exactly.
fn word(t: String, forms: Option<&Forms>) -> Clause {
    match forms.and_then(|f| f.stem(&t)) {
        Some(stem) if !stem.is_empty() => Clause::Word {
            stem: stem.into_owned(),
            exact: t,
        },
        _ => Clause::Term(t),
    }
}

fn phrase(text: &str, out: &mut Vec<Clause>) {
    let toks: Vec<String> = tokens(text, Mode::Query)
        .into_iter()
        .map(|t| t.text)
        .collect();
    match toks.len() {
        0 => {}
        1 => words(text, None, out),
        _ => out.push(phrase_or_run(text, toks)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: &[Clause]) {
        assert_eq!(Query::parse(input).clauses, expect, "{input:?}");
    }

    fn t(s: &str) -> Clause {
        Clause::Term(s.into())
    }

    /// A word that is its own stem.
    fn w(s: &str) -> Clause {
        stem(s, s)
    }

    fn stem(exact: &str, stem: &str) -> Clause {
        Clause::Word {
            exact: exact.into(),
            stem: stem.into(),
        }
    }

    #[test]
    fn parses_words_phrases_and_prefixes() {
        check("Rust tokio", &[w("rust"), w("tokio")]);
        check(
            "\"crash safe\" write",
            &[
                Clause::Phrase(vec!["crash".into(), "safe".into()]),
                w("write"),
            ],
        );
        check("tok*", &[Clause::Prefix("tok".into())]);
        // `a*` is the word `a`, a stopword beside another word.
        check("a* 数", &[Clause::Prefix("数".into())]);
        let many = ('a'..='z').map(|c| format!("{c}{c}* ")).collect::<String>() + "end";
        let q = Query::parse(&many);
        assert_eq!(q.clauses.len(), MAX_PREFIXES + 1, "{q:?}");
        assert!(q.cut);
        assert_eq!(q.clauses.last(), Some(&w("end")));
        check("数据库", &[Clause::Run("数据库".into())]);
        check("\"데이터베이스\"", &[Clause::Run("데이터베이스".into())]);
        check("数据", &[t("数据")]);
        check(
            "数据库rust",
            &[Clause::Phrase(vec![
                "数据".into(),
                "据库".into(),
                "rust".into(),
            ])],
        );
        check("数", &[Clause::Prefix("数".into())]);
        check("rust rust", &[w("rust")]);
        check("v2 snake_case 42", &[t("v2"), t("snake_case"), t("42")]);
    }

    #[test]
    fn words_are_stemmed_and_questions_lose_their_stopwords() {
        check("deploying", &[stem("deploying", "deploy")]);
        check(
            "What did the user say about testing?",
            &[w("user"), w("say"), stem("testing", "test")],
        );
        check(
            "предпочтения пользователя",
            &[
                stem("предпочтения", "предпочтен"),
                stem("пользователя", "пользовател"),
            ],
        );
        // Stopwords alone are the query; quoted, a word is exact and stays.
        check("what is it", &[w("what"), w("is"), w("it")]);
        check("\"the\" tests", &[t("the"), stem("tests", "test")]);
        check("\"testing\"", &[t("testing")]);
    }

    #[test]
    fn japanese_runs_are_searched_by_their_kanji_and_katakana() {
        let p = |s: &str| Clause::Prefix(s.into());
        let run = |s: &str| Clause::Run(s.into());
        check("食べた", &[p("食")]);
        check("新宿で食べる", &[t("新宿"), p("食")]);
        check("大阪から引っ越す", &[t("大阪"), p("引"), p("越")]);
        check("ハッシュ化した", &[run("ハッシュ"), p("化")]);
        check(
            "金曜日にデプロイを行う",
            &[run("金曜日"), run("デプロイ"), p("行")],
        );
        // Hiragana alone, katakana alone, Chinese: whole, as before.
        check("ありがとう", &[run("ありがとう")]);
        check("メモリ", &[run("メモリ")]);
        check("备份数据库", &[run("备份数据库")]);
        // Quoted, or as a prefix, exactly as typed.
        check("\"新宿で食べる\"", &[run("新宿で食べる")]);
        check("食べ*", &[p("食べ")]);
    }

    #[test]
    fn the_relaxed_stage_adds_the_pieces_of_unquoted_runs() {
        let loose = |input: &str| Query::parse(input).loose;
        let bigrams = |s: &[&str]| s.iter().map(|b| t(b)).collect::<Vec<_>>();
        assert_eq!(
            loose("备份数据库"),
            bigrams(&["备份", "份数", "数据", "据库"])
        );
        assert_eq!(loose("数据库 数据"), bigrams(&["据库"]));
        assert_eq!(
            loose("金曜日にデプロイ"),
            bigrams(&["金曜", "曜日", "デプ", "プロ", "ロイ"])
        );
        assert_eq!(loose("\"备份数据库\" the rust"), []);
        // A joined word's words, by their forms; not its one-letter pieces, not quoted.
        assert_eq!(
            loose("the export-jobs and an e-mail"),
            [w("export"), stem("jobs", "job"), w("mail")]
        );
        assert_eq!(loose("\"export-jobs\""), []);
        // Keywords that do not say their language: their other languages' stems too.
        assert!(loose("risposta breve").contains(&Clause::Stem("rispost".into())));
        assert!(
            !loose("what did the user say about testing")
                .iter()
                .any(|c| matches!(c, Clause::Word { .. }))
        );
        assert_eq!(loose("数据 the rust"), []);
        let q = Query::parse("备份数据库");
        assert_eq!(q.relaxed().clauses.len(), 5);
        assert_eq!(q.relaxed().clauses[0], Clause::Run("备份数据库".into()));
        let many = Query::parse(&"数据库".repeat(100));
        assert!(many.relaxed().clauses.len() <= MAX_CLAUSES);
    }

    #[test]
    fn hostile_input_is_just_text() {
        for input in [
            "\"",
            "-x",
            "a:b",
            "(",
            "*",
            "NEAR(",
            "\0",
            "!!!",
            "\"\"\"",
            "AND OR NOT",
        ] {
            let _ = Query::parse(input);
        }
        check("-x", &[w("x")]);
        check("a:b", &[Clause::Phrase(vec!["a".into(), "b".into()])]);
        check("*", &[]);
        assert_eq!(Query::parse(&"word ".repeat(5000)).clauses.len(), 1);
        assert!(!Query::parse("rust \"crash safe\" tok*").cut);
        // Bounded whatever the input: its first KiB is read, a phrase keeps 16 words.
        let long = format!("\"{}b\" {}", "a ".repeat(50_000), "z".repeat(100_000));
        let q = Query::parse(&long);
        assert!(q.cut);
        assert_eq!(
            q.clauses,
            [Clause::Phrase(vec!["a".to_owned(); MAX_PHRASE_WORDS])]
        );
        let q = Query::parse(&"数据".repeat(100_000));
        assert!(
            matches!(&q.clauses[..], [Clause::Run(run)] if run.chars().count() == MAX_PHRASE_WORDS + 2)
        );
        assert!(
            Query::parse(&(0..5000).map(|i| format!("w{i} ")).collect::<String>())
                .clauses
                .len()
                <= MAX_CLAUSES
        );
    }
}
