//! Lenient parsing of the optional YAML frontmatter block at the top of a memory
//! (`---` line, YAML, `---` line), as Claude Code's memory files use it. A block that does
//! not parse is plain content: never an error.

use yaml_rust2::scanner::{Scanner, TokenType};
use yaml_rust2::{Yaml, YamlLoader};

/// The fields memdir understands; everything else in the block is ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub kind: Option<String>,
    pub tags: Vec<String>,
    pub expires_at: Option<String>,
    /// `importance`, an integer from 1 to 5; `None` when absent or anything else
    /// (lenient, as every field: ignored, never an error).
    pub importance: Option<u8>,
}

/// The importance of a memory without a valid `importance` field: the neutral value.
pub const NEUTRAL_IMPORTANCE: u8 = 3;

/// The lowest and highest valid `importance`.
pub const IMPORTANCE_RANGE: std::ops::RangeInclusive<u8> = 1..=5;

impl Frontmatter {
    /// When the memory expires, in seconds since the epoch: `expires` (or `expires_at`)
    /// as a date (the start of that day, UTC) or a date-time; `None` without one or when
    /// it is neither (a malformed expiry never hides a memory).
    pub fn expires(&self) -> Option<i64> {
        self.expires_at
            .as_deref()
            .and_then(crate::text::parse_instant)
    }

    /// Whether the memory has expired at `now` (seconds since the epoch): the one
    /// judgment of expiry, which results show and searches filter by.
    pub fn expired_at(&self, now: i64) -> bool {
        self.expires().is_some_and(|e| e <= now)
    }
}

/// A memory's importance, 1 to 5: its frontmatter's, or [`NEUTRAL_IMPORTANCE`] without
/// one (or without a frontmatter).
pub fn importance(fm: Option<&Frontmatter>) -> u8 {
    fm.and_then(|f| f.importance).unwrap_or(NEUTRAL_IMPORTANCE)
}

/// Only the head of a file is looked at.
const MAX_BLOCK_BYTES: usize = 16 * 1024;

/// Whether `text` may have a frontmatter field named `key` (or one starting with it):
/// false only when the head a frontmatter can take up does not mention it, which is
/// cheap to tell, while parsing the YAML costs more than reading a small file.
pub fn may_have(text: &str, key: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.starts_with("---")
        && text[..crate::text::floor_char_boundary(text, MAX_BLOCK_BYTES + 8)].contains(key)
}

/// Parses the frontmatter of `text`, if it has a well-formed one.
pub fn parse(text: &str) -> Option<Frontmatter> {
    // A byte order mark, as some Windows editors write, before the block.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?;
    let rest = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    let head = &rest[..crate::text::floor_char_boundary(rest, MAX_BLOCK_BYTES)];
    let mut end = None;
    let mut offset = 0;
    for line in head.split_inclusive('\n') {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            end = Some(offset);
            break;
        }
        offset += line.len();
    }
    let block = &head[..end?];
    if !loadable(block) {
        return None;
    }
    let map = match YamlLoader::load_from_str(block) {
        Ok(docs) => match docs.into_iter().next() {
            Some(Yaml::Hash(map)) => map,
            _ => return None,
        },
        // Not YAML, often only for a colon in a value (`description: Alpha: owner,
        // risks`), which Claude Code's files and people write: read with those values
        // quoted, so the other fields (a list of tags, an integer) keep their kinds. Any
        // other fault makes the block content, not fields.
        Err(_) => colon_values_quoted(block)?,
    };
    let get = |key: &str| map.get(&Yaml::String(key.to_owned())).and_then(scalar);
    let tags = match map.get(&Yaml::String("tags".to_owned())) {
        Some(Yaml::Array(items)) => items.iter().filter_map(scalar).collect(),
        Some(other) => scalar(other)
            .map(|s| {
                s.split(',')
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        None => Vec::new(),
    };
    Some(Frontmatter {
        name: get("name"),
        description: get("description"),
        kind: get("type"),
        tags,
        // `expires` (Claude Code's spelling) and `expires_at` (the contract's) are one field.
        expires_at: get("expires").or_else(|| get("expires_at")),
        importance: match map.get(&Yaml::String("importance".to_owned())) {
            Some(Yaml::Integer(i)) => u8::try_from(*i).ok(),
            Some(Yaml::String(s)) => s.trim().parse::<u8>().ok(),
            _ => None,
        }
        .filter(|i| IMPORTANCE_RANGE.contains(i)),
    })
}

/// Deepest nesting of collections read; frontmatter fields are flat.
const MAX_DEPTH: usize = 32;

/// Whether the YAML loader can be given `block` safely, judged from its tokens (the
/// scanner is iterative and stops at the first reason to refuse):
/// - no alias (`*name`): the loader copies the node an alias refers to, so a few hundred
///   bytes of nested aliases grow to gigabytes ("billion laughs");
/// - no collections nested deeper than `MAX_DEPTH`: the loader recurses once per level,
///   and 6,000 levels of `- ` (12 KB) overflowed a worker thread's stack.
fn loadable(block: &str) -> bool {
    let mut depth = 0usize;
    for token in Scanner::new(block.chars()) {
        match token.1 {
            TokenType::Alias(_) => return false,
            TokenType::BlockSequenceStart
            | TokenType::BlockMappingStart
            | TokenType::FlowSequenceStart
            | TokenType::FlowMappingStart => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
            }
            TokenType::BlockEnd | TokenType::FlowSequenceEnd | TokenType::FlowMappingEnd => {
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
    }
    true
}

/// `block` loaded as YAML with the value of every `key: value` line that holds a colon
/// quoted, when it then loads as a mapping: it failed as YAML only for those colons.
fn colon_values_quoted(block: &str) -> Option<yaml_rust2::yaml::Hash> {
    let quoted: String = block
        .lines()
        .map(|line| match line.split_once(": ") {
            Some((key, value))
                if plain_key(key)
                    && value.contains(':')
                    && !value.trim_start().starts_with(['\'', '"']) =>
            {
                format!("{key}: '{}'\n", value.trim().replace('\'', "''"))
            }
            _ => format!("{line}\n"),
        })
        .collect();
    if !loadable(&quoted) {
        return None;
    }
    match YamlLoader::load_from_str(&quoted).ok()?.into_iter().next() {
        Some(Yaml::Hash(map)) => Some(map),
        _ => None,
    }
}

/// A key as `key: value` lines are read: letters, digits, `_` and `-`.
fn plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_known_fields() {
        let fm = parse("---\nname: Rust notes\ndescription: \"How we build: cargo\"\ntype: project\ntags: [rust, build]\n---\nbody\n").unwrap();
        assert_eq!(fm.description.as_deref(), Some("How we build: cargo"));
        assert_eq!(fm.kind.as_deref(), Some("project"));
        assert_eq!(fm.tags, ["rust", "build"]);
        assert_eq!(parse("---\ntags: a, b\n---\n").unwrap().tags, ["a", "b"]);
        for block in ["expires: 2026-03-01", "expires_at: 2026-03-01"] {
            let text = format!("---\n{block}\n---\n");
            let fm = parse(&text).unwrap();
            assert_eq!(fm.expires_at.as_deref(), Some("2026-03-01"), "{block}");
            assert!(may_have(&text, "expires"));
        }
        assert!(!may_have("---\nname: a\n---\n", "expires"));
        assert!(!may_have("expires: 2026-03-01\n", "expires"));
    }

    #[test]
    fn importance_is_an_integer_from_1_to_5_or_nothing() {
        let of = |v: &str| {
            parse(&format!("---\nimportance: {v}\n---\n"))
                .unwrap()
                .importance
        };
        assert_eq!(of("5"), Some(5));
        assert_eq!(of("1"), Some(1));
        assert_eq!(of("\"4\""), Some(4));
        for bad in ["0", "6", "-1", "3.5", "high", "[1]", "300", "~"] {
            assert_eq!(of(bad), None, "{bad}");
        }
        assert_eq!(importance(None), NEUTRAL_IMPORTANCE);
        assert_eq!(importance(parse("---\nimportance: 2\n---\n").as_ref()), 2);
    }

    /// A colon in a value makes the block invalid YAML; its fields are still read (the
    /// console showed such a memory's search hits without their name or description).
    #[test]
    fn a_colon_in_a_value_keeps_the_fields() {
        let fm = parse("---\nname: Alpha\ndescription: The alpha project: owner, deadline, risks\ntype: project\nimportance: 4\ntags: a, b\nexpires: 2026-03-01\n---\n# Alpha\n").unwrap();
        assert_eq!(fm.name.as_deref(), Some("Alpha"));
        assert_eq!(
            fm.description.as_deref(),
            Some("The alpha project: owner, deadline, risks")
        );
        assert_eq!(fm.kind.as_deref(), Some("project"));
        assert_eq!(fm.importance, Some(4));
        assert_eq!(fm.tags, ["a", "b"]);
        assert_eq!(fm.expires_at.as_deref(), Some("2026-03-01"));
        let fm =
            parse("---\nname: 'Ops: on call'\n# note: y\nurl: http://x\nowner: it's: me\n---\n")
                .unwrap();
        assert_eq!(fm.name.as_deref(), Some("Ops: on call"));
        assert_eq!(fm.description, None);
        // The other fields keep their kinds: a list of tags, in either form.
        for tags in ["tags: [lang, rust]", "tags:\n  - lang\n  - rust"] {
            let fm = parse(&format!("---\ndescription: a: b\n{tags}\n---\n")).unwrap();
            assert_eq!(fm.description.as_deref(), Some("a: b"), "{tags}");
            assert_eq!(fm.tags, ["lang", "rust"], "{tags}");
        }
    }

    /// A byte order mark before the block (some Windows editors write one) is skipped.
    #[test]
    fn a_byte_order_mark_before_the_block_is_skipped() {
        let text = "\u{feff}---\ntags: [lang]\ntype: note\n---\nbody\n";
        let fm = parse(text).unwrap();
        assert_eq!(fm.tags, ["lang"]);
        assert_eq!(fm.kind.as_deref(), Some("note"));
        assert!(may_have(text, "tags"));
    }

    /// A block that is not YAML for another reason than a colon in a value is content
    /// (its lines are not read as fields), colons or not.
    #[test]
    fn a_block_malformed_otherwise_is_content() {
        for text in [
            "---\ndescription: [unclosed\ntype: x\n---\nbody\n",
            "---\ndescription: a: b\ntype: {x\n---\nbody\n",
            "---\nname: 'Ops: on call'\n  indented: x\n- item\n---\n",
            "---\nname: \"open\ntype: x\n---\n",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn malformed_blocks_are_content() {
        for text in [
            "no block",
            "---\nunclosed: yes\n",
            "---\n: [bad\n---\n",
            "---\n- a list\n---\n",
            "",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn aliases_and_deep_nesting_are_not_loaded() {
        assert_eq!(parse("---\ndescription: d\nx: &a 1\ny: *a\n---\n"), None);
        // Deep nesting, block and flow: refused before the recursive loader sees it.
        for deep in [
            format!("---\ndescription: d\nx:\n  {}a\n---\n", "- ".repeat(6000)),
            format!("---\ndescription: d\nx:\n  {}a\n---\n", "? ".repeat(4000)),
            format!("---\n{}a\n---\n", "- ".repeat(6000)),
            format!(
                "---\ndescription: d\nx: {}\n---\n",
                "[".repeat(40) + &"]".repeat(40)
            ),
        ] {
            assert_eq!(parse(&deep), None);
        }
        let nested = format!(
            "---\ndescription: d\nx: {}\n---\n",
            "[".repeat(20) + &"]".repeat(20)
        );
        assert_eq!(parse(&nested).unwrap().description.as_deref(), Some("d"));
        // An anchor alone, and a `*` that is not an alias, are fine.
        let fm = parse("---\ndescription: \"*a\"\nx: &a 1\ntags: [\"*\"]\n---\n").unwrap();
        assert_eq!(fm.description.as_deref(), Some("*a"));
        assert_eq!(fm.tags, ["*"]);
    }
}
