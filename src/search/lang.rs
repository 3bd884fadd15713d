//! Word forms: which Snowball stemmer a word goes through, chosen by its script (Cyrillic
//! Russian, Greek, Arabic, Tamil) and, for Latin script, by a guess of the text's language
//! from its stopwords; and the stopwords themselves, so a question is searched by its
//! content words. Pure: no index, no IO.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::tokenize::{Mode, is_cjk, tokenize};

/// A language Snowball stems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    English,
    French,
    German,
    Spanish,
    Italian,
    Portuguese,
    Dutch,
    Swedish,
    Norwegian,
    Danish,
    Finnish,
    Hungarian,
    Romanian,
    Turkish,
    Russian,
    Greek,
    Arabic,
    Tamil,
}

/// The Latin-script languages a guess chooses among, English first (it wins ties and
/// texts with no stopword at all).
const LATIN: [Lang; 14] = [
    Lang::English,
    Lang::French,
    Lang::German,
    Lang::Spanish,
    Lang::Italian,
    Lang::Portuguese,
    Lang::Dutch,
    Lang::Swedish,
    Lang::Norwegian,
    Lang::Danish,
    Lang::Finnish,
    Lang::Hungarian,
    Lang::Romanian,
    Lang::Turkish,
];

const ALL: [Lang; 18] = [
    Lang::English,
    Lang::French,
    Lang::German,
    Lang::Spanish,
    Lang::Italian,
    Lang::Portuguese,
    Lang::Dutch,
    Lang::Swedish,
    Lang::Norwegian,
    Lang::Danish,
    Lang::Finnish,
    Lang::Hungarian,
    Lang::Romanian,
    Lang::Turkish,
    Lang::Russian,
    Lang::Greek,
    Lang::Arabic,
    Lang::Tamil,
];

/// A guess reads at most this many tokens: the language of a long text shows early, and
/// the guess stays a small share of indexing it.
const GUESS_TOKENS: usize = 1000;

impl Lang {
    fn algorithm(self) -> Algorithm {
        match self {
            Lang::English => Algorithm::English,
            Lang::French => Algorithm::French,
            Lang::German => Algorithm::German,
            Lang::Spanish => Algorithm::Spanish,
            Lang::Italian => Algorithm::Italian,
            Lang::Portuguese => Algorithm::Portuguese,
            Lang::Dutch => Algorithm::Dutch,
            Lang::Swedish => Algorithm::Swedish,
            Lang::Norwegian => Algorithm::Norwegian,
            Lang::Danish => Algorithm::Danish,
            Lang::Finnish => Algorithm::Finnish,
            Lang::Hungarian => Algorithm::Hungarian,
            Lang::Romanian => Algorithm::Romanian,
            Lang::Turkish => Algorithm::Turkish,
            Lang::Russian => Algorithm::Russian,
            Lang::Greek => Algorithm::Greek,
            Lang::Arabic => Algorithm::Arabic,
            Lang::Tamil => Algorithm::Tamil,
        }
    }

    /// ISO 639-1, as the stopword lists are keyed.
    fn code(self) -> &'static str {
        match self {
            Lang::English => "en",
            Lang::French => "fr",
            Lang::German => "de",
            Lang::Spanish => "es",
            Lang::Italian => "it",
            Lang::Portuguese => "pt",
            Lang::Dutch => "nl",
            Lang::Swedish => "sv",
            Lang::Norwegian => "no",
            Lang::Danish => "da",
            Lang::Finnish => "fi",
            Lang::Hungarian => "hu",
            Lang::Romanian => "ro",
            Lang::Turkish => "tr",
            Lang::Russian => "ru",
            Lang::Greek => "el",
            Lang::Arabic => "ar",
            Lang::Tamil => "ta",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// Every stopword (lowercased, `ё` folded, as tokens are) → the languages it is one of.
fn stopwords() -> &'static HashMap<String, u32> {
    static TABLE: OnceLock<HashMap<String, u32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: HashMap<String, u32> = HashMap::new();
        for lang in ALL {
            for word in stop_words::lookup(lang.code()).unwrap_or_default() {
                let folded: String = word.to_lowercase().replace('ё', "е");
                *table.entry(folded).or_default() |= lang.bit();
            }
        }
        table
    })
}

/// The language a word's script decides, if any: `None` for Latin script (the text's
/// guess decides) and for words no stemmer applies to (digits, `_`, CJK, others).
fn script(word: &str) -> Option<Option<Lang>> {
    let mut out = None;
    for c in word.chars() {
        let lang = match c as u32 {
            0x0400..=0x04FF => Some(Lang::Russian),
            0x0370..=0x03FF | 0x1F00..=0x1FFF => Some(Lang::Greek),
            0x0600..=0x06FF => Some(Lang::Arabic),
            0x0B80..=0x0BFF => Some(Lang::Tamil),
            _ if c.is_ascii_lowercase() => None,
            0x00C0..=0x024F | 0x1E00..=0x1EFF if c.is_alphabetic() => None,
            // Marks inside a word of another script (Tamil's vowel signs, Arabic's).
            _ if !c.is_alphanumeric() && c != '_' => continue,
            _ => return None,
        };
        match out {
            None => out = Some(lang),
            Some(seen) if seen != lang => return None,
            Some(_) => {}
        }
    }
    out
}

/// How the words of one text (a document or a query) are stemmed: its Latin-script
/// language, guessed once from the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forms {
    pub latin: Lang,
}

impl Default for Forms {
    /// English for Latin script, as a text with no stopword gets.
    fn default() -> Forms {
        Forms {
            latin: Lang::English,
        }
    }
}

impl Forms {
    /// Guesses the Latin-script language of `words` (lowercased tokens): the language
    /// whose stopwords occur most among them, English on a tie or with none.
    pub fn guess<'a>(words: impl IntoIterator<Item = &'a str>) -> Forms {
        let hits = stopword_hits(words);
        let mut best = 0;
        for i in 1..LATIN.len() {
            if hits[i] > hits[best] {
                best = i;
            }
        }
        Forms { latin: LATIN[best] }
    }

    /// The forms of the words of `text` (a document, or a query): [`Forms::guess`] over
    /// its tokens, the same ones the index holds, so a document's words are stemmed alike
    /// when it is indexed and when a hit's lines are matched.
    pub fn of_text(text: &str) -> Forms {
        let mut words = Vec::new();
        let mut seen = 0;
        tokenize(text, Mode::Document, |t, _, tail| {
            if !tail && seen < GUESS_TOKENS {
                seen += 1;
                if stopwords().contains_key(t) {
                    words.push(t.to_owned());
                }
            }
        });
        Forms::guess(words.iter().map(String::as_str))
    }

    /// Whether `text` (a query) says its Latin-script language: one Latin-script
    /// language has more of its stopwords than any other. A query of keywords alone
    /// (`risposta breve`), or one whose few stopwords several languages share (`ata da
    /// reunião`), does not, and its guess is a default or a tie.
    pub fn says_latin(text: &str) -> bool {
        let mut words = Vec::new();
        tokenize(text, Mode::Query, |t, _, _| words.push(t.to_owned()));
        let hits = stopword_hits(words.iter().map(String::as_str));
        let best = hits.iter().copied().max().unwrap_or(0);
        best > 0 && hits.iter().filter(|&&h| h == best).count() == 1
    }

    /// The stems of a Latin-script `word` in the other Latin-script languages, where they
    /// differ from its stem here (and the word is no stopword there): the forms it may
    /// have in a memory written in one of them.
    pub fn other_stems(&self, word: &str) -> Vec<String> {
        if !Forms::depends_on_text(word) {
            return Vec::new();
        }
        let own = self.stem(word);
        let mut out: Vec<String> = Vec::new();
        for &latin in LATIN.iter().filter(|&&l| l != self.latin) {
            let there = Forms { latin };
            if there.is_stopword(word) {
                continue;
            }
            if let Some(stem) = there.stem(word)
                && !stem.is_empty()
                && own.as_deref() != Some(stem.as_ref())
                && !out.iter().any(|s| *s == stem)
            {
                out.push(stem.into_owned());
            }
        }
        out
    }

    /// Whether `word` may have `stem` as its stem: their first letters agree, diacritics
    /// aside (German's stemmer turns `ü` into `u`), except in Arabic, whose stemmer also
    /// takes prefixes off. A cheap test that spares stemming most words of a document.
    pub fn may_stem_to(word: &str, stem: &str) -> bool {
        let (w, s) = (word.chars().next(), stem.chars().next());
        let Some(w) = w else {
            return s.is_none();
        };
        // An Arabic word starts with an Arabic letter or a mark: not with ASCII, CJK,
        // Greek or Cyrillic (the commonest first letters are answered without a scan).
        let arabic = || {
            !(w.is_ascii() || is_cjk(w) || ('\u{0370}'..='\u{04FF}').contains(&w))
                && matches!(script(word), Some(Some(Lang::Arabic)))
        };
        s.is_some_and(|s| w == s || base(w) == base(s)) || arabic()
    }

    /// Whether `word` (a token of a text of these forms) is a form of `stem`, as the index
    /// matches it: the word is the stem, or it is no stopword and stems to it.
    pub fn is_form_of(&self, word: &str, stem: &str) -> bool {
        word == stem
            || (Forms::may_stem_to(word, stem)
                && !self.is_stopword(word)
                && self.stem(word).is_some_and(|s| s == stem))
    }

    /// Whether a word's stem and stopwords depend on its text's guessed language (Latin
    /// script); words of other scripts are stemmed by their script alone.
    pub fn depends_on_text(word: &str) -> bool {
        matches!(script(word), Some(None))
    }

    /// The language `word` is stemmed in, if any.
    fn lang(&self, word: &str) -> Option<Lang> {
        script(word).map(|l| l.unwrap_or(self.latin))
    }

    /// Whether `word` is a stopword of its language.
    pub fn is_stopword(&self, word: &str) -> bool {
        match (self.lang(word), stopwords().get(word)) {
            (Some(lang), Some(mask)) => mask & lang.bit() != 0,
            _ => false,
        }
    }

    /// `word`'s stem, if a stemmer applies to it (it may equal the word).
    pub fn stem<'w>(&self, word: &'w str) -> Option<Cow<'w, str>> {
        let lang = self.lang(word)?;
        Some(Stemmer::create(lang.algorithm()).stem(word))
    }
}

/// How many of `words` are stopwords of each Latin-script language, in [`LATIN`]'s order.
fn stopword_hits<'a>(words: impl IntoIterator<Item = &'a str>) -> [u32; LATIN.len()] {
    let table = stopwords();
    let mut hits = [0u32; LATIN.len()];
    for w in words {
        if let Some(&mask) = table.get(w) {
            for (i, lang) in LATIN.iter().enumerate() {
                hits[i] += u32::from(mask & lang.bit() != 0);
            }
        }
    }
    hits
}

/// A document's stem column, from its body column (its tokens, space-separated): the stem
/// of each word that has one other than itself, stopwords left out, space-separated.
pub fn index_stems(body: &str) -> String {
    let forms = Forms::guess(body.split(' ').take(GUESS_TOKENS));
    let mut out = String::new();
    for t in body.split(' ') {
        if forms.is_stopword(t) {
            continue;
        }
        if let Some(stem) = forms.stem(t)
            && stem != t
            && !stem.is_empty()
        {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&stem);
        }
    }
    out
}

/// A letter without its diacritics: the first character of its canonical decomposition.
fn base(c: char) -> char {
    if c.is_ascii() {
        return c;
    }
    let mut first = None;
    unicode_normalization::char::decompose_canonical(c, |d| {
        first.get_or_insert(d);
    });
    first.unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcuts of `may_stem_to` agree with its definition: first letters equal
    /// once decomposed, or an Arabic word.
    #[test]
    fn may_stem_to_agrees_with_its_definition() {
        use unicode_normalization::UnicodeNormalization;
        let base = |s: &str| {
            s.chars()
                .next()
                .and_then(|c| std::iter::once(c).nfd().next())
        };
        let words = [
            "",
            "a",
            "über",
            "uber",
            "éte",
            "ete",
            "йогурт",
            "иголка",
            "ёж",
            "еж",
            "память",
            "памят",
            "数据",
            "데이터",
            "メモリ",
            "λόγος",
            "λογ",
            "كتاب",
            "الكتاب",
            "كتب",
            "\u{064B}كتب",
            "\u{0301}a",
            "_x",
            "1a",
            "ǆa",
            "ṡa",
            "ﬁle",
            "தமிழ்",
        ];
        for w in words {
            for s in words {
                let defined = base(w) == base(s) || matches!(script(w), Some(Some(Lang::Arabic)));
                assert_eq!(Forms::may_stem_to(w, s), defined, "{w:?} {s:?}");
            }
        }
    }

    #[test]
    fn a_query_of_keywords_does_not_say_its_language() {
        assert!(Forms::says_latin("What did the user say about testing?"));
        assert!(Forms::says_latin(
            "Chi è responsabile della traduzione dei testi?"
        ));
        assert!(!Forms::says_latin("risposta breve"));
        assert!(!Forms::says_latin("Память ответы"));
        // `da` is a stopword of several languages, and nothing else decides.
        assert!(!Forms::says_latin("ata da reunião"));
        let en = Forms::default();
        let others = en.other_stems("risposta");
        assert!(others.iter().any(|s| s == "rispost"), "{others:?}");
        // Its stem here is the word itself: no other stem repeats it.
        assert!(!others.iter().any(|s| s == "risposta"), "{others:?}");
        // English turns `tanúsítvány` into `tanúsítváni`; Hungarian leaves it whole.
        let others = en.other_stems("tanúsítvány");
        assert!(others.iter().any(|s| s == "tanúsítvány"), "{others:?}");
        // Other scripts are stemmed by their script alone.
        assert!(en.other_stems("ответы").is_empty());
        assert!(en.other_stems("数据").is_empty());
    }

    fn stems(text: &str) -> Vec<String> {
        let toks: Vec<String> =
            crate::search::tokenize::tokens(text, crate::search::tokenize::Mode::Query)
                .into_iter()
                .map(|t| t.text)
                .collect();
        let refs: Vec<&str> = toks.iter().map(String::as_str).collect();
        let forms = Forms::guess(refs.iter().copied());
        refs.iter()
            .map(|t| {
                forms
                    .stem(t)
                    .map_or_else(|| (*t).to_owned(), Cow::into_owned)
            })
            .collect()
    }

    #[test]
    fn words_meet_their_forms() {
        for (a, b) in [
            ("testing", "tests"),
            ("mocking", "mock"),
            ("deploying", "deployment"),
            ("releases", "release"),
            ("пользователя", "Пользователь"),
            ("ответы", "ответов"),
        ] {
            assert_eq!(stems(a), stems(b), "{a} / {b}");
        }
        assert_eq!(stems("snake_case v2 数据"), ["snake_case", "v2", "数据"]);
    }

    #[test]
    fn latin_language_is_guessed_from_stopwords() {
        let guess = |text: &str| {
            let toks: Vec<String> = text.split(' ').map(str::to_owned).collect();
            Forms::guess(toks.iter().map(String::as_str)).latin
        };
        assert_eq!(guess("the user said that it is"), Lang::English);
        assert_eq!(guess("der benutzer sagt dass es nicht und"), Lang::German);
        assert_eq!(guess("le chat est sur la table et il"), Lang::French);
        assert_eq!(guess("deploying"), Lang::English);
    }

    #[test]
    fn stopwords_are_per_language() {
        let en = Forms {
            latin: Lang::English,
        };
        assert!(en.is_stopword("the") && en.is_stopword("what") && en.is_stopword("и"));
        assert!(!en.is_stopword("testing") && !en.is_stopword("die"));
        let de = Forms {
            latin: Lang::German,
        };
        assert!(de.is_stopword("die"));
    }
}
