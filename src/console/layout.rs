//! The frame every console page shares (header, navigation, sign-out), the links between
//! pages, and the one style sheet, compiled into the binary (no file, no network: the
//! console works offline).

use http::{Method, StatusCode};
use maud::{DOCTYPE, Markup, html};

use super::respond::Page;
use super::session::Session;

const STYLE: &str = include_str!("console.css");

/// `GET /console.css`.
pub fn style_sheet(method: &Method) -> Page {
    if method == Method::GET || method == Method::HEAD {
        Page::bytes("text/css; charset=utf-8", STYLE.as_bytes())
    } else {
        Page::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: use GET",
        )
    }
}

/// A page for a signed-in session: the header with navigation, search and sign-out.
pub fn frame(title: &str, session: &Session, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · memdir" }
                link rel="stylesheet" href="/console.css";
            }
            body {
                header {
                    nav {
                        a.brand href="/" { "memdir" }
                        form.search method="get" action="/search" role="search" {
                            label for="q" { "Search" }
                            input #q type="search" name="q";
                            button type="submit" { "Search" }
                        }
                        span.who { "signed in as " (session.actor) }
                        form method="post" action="/signout" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A page without a session: sign-in, errors.
pub fn bare(title: &str, message: &str) -> Markup {
    bare_with(title, html! { p.message { (message) } })
}

pub fn bare_with(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · memdir" }
                link rel="stylesheet" href="/console.css";
            }
            body {
                header { nav { a.brand href="/" { "memdir" } } }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The line diff of `old` against `new` (similar): lines only in `old` marked −, only in
/// `new` +.
pub fn diff(old: &str, new: &str) -> Markup {
    let diff = similar::TextDiff::from_lines(old, new);
    html! {
        pre.diff {
            @for change in diff.iter_all_changes() {
                @match change.tag() {
                    similar::ChangeTag::Delete => span.del { "− " (change.value()) },
                    similar::ChangeTag::Insert => span.add { "+ " (change.value()) },
                    similar::ChangeTag::Equal => span { "  " (change.value()) },
                }
            }
        }
    }
}

/// `value` encoded for a query string.
pub fn enc(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

pub fn folder_url(path: &str) -> String {
    format!("/folder?path={}", enc(path))
}

pub fn memory_url(path: &str) -> String {
    format!("/memory?path={}", enc(path))
}

/// The folder a memory path is in (`/memories/a/b.md` → `/memories/a/`).
pub fn parent(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(i) => trimmed[..=i].to_string(),
        None => "/".to_string(),
    }
}

/// The last segment of a path (`/memories/a/` → `a/`).
pub fn last_segment(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    let start = trimmed.rfind('/').map_or(0, |i| i + 1);
    &path[start..]
}

/// A size for people: `512 B`, `2.0 KB`.
pub fn size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        for (path, parent_, last) in [
            ("/memories/a/b.md", "/memories/a/", "b.md"),
            ("/memories/a/", "/memories/", "a/"),
            ("/memories/", "/", "memories/"),
        ] {
            assert_eq!(parent(path), parent_, "{path}");
            assert_eq!(last_segment(path), last, "{path}");
        }
        assert_eq!(enc("/a b&c=d"), "%2Fa+b%26c%3Dd");
    }
}
