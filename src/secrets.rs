//! Refuses content that holds a high-confidence credential, naming the rule and the line
//! but never echoing the secret. Patterns follow gitleaks' high-confidence rules (MIT),
//! re-expressed for the `regex` crate; precision over recall: a match is refused, never
//! silently rewritten. Also hides the password of every URL in text shown to a person
//! ([`redact_urls`]).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// (rule name, pattern)
const RULES: &[(&str, &str)] = &[
    (
        "private key",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY( BLOCK)?-----",
    ),
    (
        "AWS access key id",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
    ),
    (
        "GitHub token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36}\b",
    ),
    (
        "GitHub fine-grained token",
        r"\bgithub_pat_[0-9A-Za-z_]{82}\b",
    ),
    ("GitLab token", r"\bglpat-[0-9A-Za-z_-]{20}\b"),
    (
        "Anthropic API key",
        r"\bsk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{93}AA\b",
    ),
    (
        "OpenAI API key",
        r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}\b",
    ),
    (
        "Slack token",
        r"\bxox[baprs]-[0-9]{10,13}-[0-9]{10,13}[A-Za-z0-9-]*\b",
    ),
    (
        "Slack webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{43,56}",
    ),
    (
        "Stripe secret key",
        r"\b(?:sk|rk)_(?:live|prod)_[0-9A-Za-z]{10,99}\b",
    ),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("PyPI token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}\b"),
    ("Hugging Face token", r"\bhf_[A-Za-z]{34}\b"),
    (
        "SendGrid API key",
        r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
    ),
    ("Twilio API key", r"\bSK[0-9a-fA-F]{32}\b"),
    ("Shopify token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    ("DigitalOcean token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    (
        "JSON web token",
        r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    ),
];

static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(RULES.iter().map(|(_, p)| *p)).expect("secret rules compile"));
static EACH: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|(_, p)| Regex::new(p).expect("secret rule compiles"))
        .collect()
});

/// The first secret found: rule name and 1-based line.
pub fn find(text: &str) -> Option<(&'static str, usize)> {
    let matched = SET.matches(text);
    let rule = matched.iter().next()?;
    let at = EACH[rule].find(text)?.start();
    Some((RULES[rule].0, line_of(text, at)))
}

/// The first secret in `new` that `old` does not hold (each match compared by its text,
/// wherever it stands): what an edit adds, or makes by joining text around it. A secret
/// already stored is not the edit's doing, so it does not refuse it.
pub fn added(old: &str, new: &str) -> Option<(&'static str, usize)> {
    let before: std::collections::HashSet<&str> = matches(old).map(|(_, m)| m.as_str()).collect();
    let (rule, at) = matches(new)
        .filter(|(_, m)| !before.contains(m.as_str()))
        .map(|(rule, m)| (rule, m.start()))
        .min_by_key(|&(_, at)| at)?;
    Some((RULES[rule].0, line_of(new, at)))
}

/// Every match of every rule in `text`: (rule, match).
fn matches(text: &str) -> impl Iterator<Item = (usize, regex::Match<'_>)> {
    SET.matches(text)
        .into_iter()
        .flat_map(move |rule| EACH[rule].find_iter(text).map(move |m| (rule, m)))
}

fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `text` with the password of every URL in it hidden, whatever the scheme (a misspelt
/// one too): `scheme://user:password@host` is shown as `scheme://user@host`, and
/// `password=` parameters are dropped. For everything shown of a store URL or of a
/// message that may quote one (errors, logs, the start-up line). A URL runs from its
/// `://` to the next space, quote or `://`; its user part ends at its last `@`, so a
/// password holding `/`, `?` or `@` is hidden whole (some host text may go with it).
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let end = after
            .find(|c: char| c.is_whitespace() || "\"'`<>".contains(c))
            .unwrap_or(after.len())
            .min(after.find("://").unwrap_or(after.len()));
        out.push_str(&redact_after_scheme(&after[..end]));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// What follows a URL's `://`, without a password in its user part or its parameters.
fn redact_after_scheme(url: &str) -> String {
    let url = match url.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{user}@{host}")
        }
        _ => url.to_owned(),
    };
    let Some((base, query)) = url.split_once('?') else {
        return url;
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
        .collect();
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_passwords() {
        for (text, shown) in [
            (
                "postgresql://alice:s3cret@db.example:5432/memdir",
                "postgresql://alice@db.example:5432/memdir",
            ),
            (
                "postgresql://alice@/memdir?host=/run/pg&password=s3cret&port=5433",
                "postgresql://alice@/memdir?host=/run/pg&port=5433",
            ),
            ("postgres://db/memdir", "postgres://db/memdir"),
            (
                "postgresql://a:p%40ss@h/db?password=x",
                "postgresql://a@h/db",
            ),
            (
                "--store \"team=postgresq://memdir:s3cret@/memdir\": `postgresq://` is not",
                "--store \"team=postgresq://memdir@/memdir\": `postgresq://` is not",
            ),
            (
                "a=pgsql://u:s3c/ret@h/db;b=postgresql+asyncpg://u:s3c?r@et@h/db",
                "a=pgsql://u@h/db;b=postgresql+asyncpg://u@h/db",
            ),
            ("C:\\notes:ro and ~/notes", "C:\\notes:ro and ~/notes"),
            ("mailto://bob@example.org", "mailto://bob@example.org"),
        ] {
            assert_eq!(redact_urls(text), shown, "{text}");
        }
    }

    #[test]
    fn finds_credentials_by_rule_and_line() {
        let aws = format!("note\nkey = {}{}\n", "AKIA", "IOSFODNN7EXAMPLX");
        assert_eq!(find(&aws), Some(("AWS access key id", 2)));
        let gh = format!("token: ghp_{}", "a".repeat(36));
        assert_eq!(find(&gh), Some(("GitHub token", 1)));
        assert_eq!(
            find("-----BEGIN OPENSSH PRIVATE KEY-----\nabc"),
            Some(("private key", 1))
        );
    }

    #[test]
    fn only_what_an_edit_adds_counts_as_added() {
        let key = format!("{}{}", "AKIA", "IOSFODNN7EXAMPLX");
        let stored = format!("a\nkey = {key}\nb\n");
        let other = format!("ghp_{}", "b".repeat(36));
        for (new, added_at) in [
            // The stored key, other lines edited: nothing added.
            (format!("a!\nkey = {key}\nb\nc\n"), None),
            (format!("key = {key}\n"), None),
            // A second secret, or one made by joining two halves.
            (
                format!("{stored}token {other}\n"),
                Some(("GitHub token", 4)),
            ),
            (
                format!("x {}{}\n{stored}", "AKIA", "IOSFODNN7EXAMPLA"),
                Some(("AWS access key id", 1)),
            ),
        ] {
            assert_eq!(added(&stored, &new), added_at, "{new}");
        }
        assert_eq!(
            added("AKIA\n", &format!("{key}\n")),
            Some(("AWS access key id", 1))
        );
    }

    #[test]
    fn ordinary_text_passes() {
        for text in [
            "the AKIA prefix marks AWS keys",
            "sk-test",
            "use ghp_ tokens for CI",
            "eyJ is base64 for {\"",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
