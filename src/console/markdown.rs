//! A memory's Markdown as HTML that can carry nothing active: raw HTML in the source is
//! shown as text, links keep only `http:`, `https:`, `mailto:` and relative targets (a
//! `javascript:` or `data:` link becomes its text), and images become links (the
//! console loads nothing a memory names). Text and attributes are escaped by
//! pulldown-cmark's HTML writer.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// The HTML of `source`.
pub fn render(source: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    // Unsafe links are dropped with their closing tag: a stack of whether each open link
    // was kept.
    let mut links: Vec<bool> = Vec::new();
    let mut in_metadata = false;
    let events = Parser::new_ext(source, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::MetadataBlock(_)) => {
            // The frontmatter is shown as fields beside the text, not as text.
            in_metadata = true;
            None
        }
        Event::End(TagEnd::MetadataBlock(_)) => {
            in_metadata = false;
            None
        }
        _ if in_metadata => None,
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = safe_url(&dest_url);
            links.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link) => links.pop().unwrap_or(false).then_some(event),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = safe_url(&dest_url);
            links.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Image) => links
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        other => Some(other),
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// Whether a link target is harmless: no scheme (relative, `#anchor`), or one of
/// `http`, `https`, `mailto`. Browsers ignore tabs, newlines and leading spaces in a
/// scheme, so those are removed before looking.
fn safe_url(url: &CowStr<'_>) -> bool {
    let cleaned: String = url
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_ascii_control())
        .collect::<String>()
        .to_ascii_lowercase();
    let scheme_end = cleaned.find(':');
    let path_start = cleaned.find(['/', '?', '#']);
    match (scheme_end, path_start) {
        (None, _) => true,
        (Some(c), Some(p)) if p < c => true,
        (Some(c), _) => matches!(&cleaned[..c], "http" | "https" | "mailto"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_active_survives() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "<script>alert(1)</script>",
                &["&lt;script&gt;"],
                &["<script"],
            ),
            ("hi <img src=x onerror=alert(1)>", &["&lt;img"], &["<img"]),
            ("[x](javascript:alert(1))", &["x"], &["href", "javascript"]),
            ("[x](JaVa\tScRiPt:alert(1))", &["x"], &["href"]),
            ("[x](data:text/html,<b>)", &["x"], &["href"]),
            (
                "![x](data:image/png;base64,AAAA)",
                &["x"],
                &["<img", "href"],
            ),
            (
                "[x](https://example.com/a)",
                &["href=\"https://example.com/a\""],
                &[],
            ),
            ("[x](/memory?path=a)", &["href=\"/memory?path=a\""], &[]),
            (
                "![alt](https://e.com/p.png)",
                &["href=\"https://e.com/p.png\""],
                &["<img"],
            ),
            (
                "<https://ok.example>",
                &["href=\"https://ok.example\""],
                &[],
            ),
            (
                "[a\"b](https://e.com/\"onmouseover=\"x)",
                &["%22onmouseover"],
                &["\"onmouseover"],
            ),
            ("---\nname: x\n---\n# T", &["<h1>T</h1>"], &["name: x"]),
        ];
        for (source, present, absent) in cases {
            let out = render(source);
            for p in *present {
                assert!(out.contains(p), "{source:?} → {out:?} lacks {p:?}");
            }
            for a in *absent {
                assert!(!out.contains(a), "{source:?} → {out:?} has {a:?}");
            }
        }
    }
}
