//! The query language, where every input string is valid: words are ANDed, each found
//! as itself or any of its word forms (its Snowball stem, see `lang`); stopwords are left
//! out when the query has other words, so a question is searched by its content words;
//! `"quoted phrases"` match adjacent words exactly, `prefix*` matches word beginnings.
//! Anything else (operators, punctuation, unbalanced quotes) is just text.

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
        let unquoted = |text: &str, out: &mut Vec<Clause>| words(text, Some(&forms), out);
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
        for clause in &mut clauses {
            match clause {
                Clause::Phrase(words) => {
                    cut |= words.len() > MAX_PHRASE_WORDS;
                    words.truncate(MAX_PHRASE_WORDS);
                }
                // A run is matched as the phrase of its trigrams.
                Clause::Run(run) => {
                    if let Some((at, _)) = run.char_indices().nth(MAX_PHRASE_WORDS + 2) {
                        cut = true;
                        run.truncate(at);
                    }
                }
                _ => {}
            }
        }
        let mut seen = std::collections::HashSet::new();
        clauses.retain(|c| seen.insert(c.clone()));
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
        Query { clauses, cut }
    }

    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }
}

/// Unquoted words (`forms`: found by their word forms) or a quoted one (`None`: exactly).
fn words(text: &str, forms: Option<&Forms>, out: &mut Vec<Clause>) {
    for raw in text.split_whitespace() {
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
