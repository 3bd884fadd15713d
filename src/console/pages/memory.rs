//! A memory: its Markdown rendered (nothing active: `markdown`), its raw text, its
//! frontmatter fields, freshness, expiry and sha256, with links to its history and to edit,
//! rename and delete it.

use http::StatusCode;
use maud::{PreEscaped, html};

use super::View;
use crate::console::layout::{self, enc, folder_url, parent};
use crate::console::markdown;
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::read;

/// A memory read whole, with what the page shows of it.
pub struct Shown {
    pub text: String,
    pub sha256: String,
    pub updated_at: String,
    pub age_days: u64,
    pub expires_at: Option<String>,
    pub expired: bool,
}

/// Reads the memory at `path` whole (the sha256 is of the text shown).
pub async fn load(view: &View, path: &str) -> Result<Shown, Page> {
    let path = path.to_string();
    view.run(move |md| {
        let meta = read::read(md, &path, None, &|_| 0)?;
        let text = read::text(md, &path)?;
        Ok(Shown {
            sha256: crate::text::sha256_hex(text.as_bytes()),
            text,
            updated_at: meta.updated_at,
            age_days: meta.age_days,
            expires_at: meta.expires_at,
            expired: meta.expired,
        })
    })
    .await
}

pub async fn page(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
    let shown = load(&view, &path).await?;
    let fm = crate::frontmatter::parse(&shown.text).unwrap_or_default();
    let writable = !view.read_only(&path);
    let body = html! {
        h1 { (path) }
        p.actions {
            a href=(folder_url(&parent(&path))) { "Folder" }
            a href=(format!("/history?path={}", enc(&path))) { "History" }
            @if writable {
                a href=(format!("/edit?path={}", enc(&path))) { "Edit" }
                a href=(format!("/rename?path={}", enc(&path))) { "Rename or move" }
                a href=(format!("/delete?path={}", enc(&path))) { "Delete" }
            } @else {
                span.badge { "read-only" }
            }
            @if shown.expired { span.badge { "expired" } }
        }
        dl.fields {
            dt { "name" } dd { (fm.name.as_deref().unwrap_or("")) }
            dt { "description" } dd { (fm.description.as_deref().unwrap_or("")) }
            dt { "type" } dd { (fm.kind.as_deref().unwrap_or("")) }
            dt { "tags" } dd { (fm.tags.join(", ")) }
            dt { "expires" } dd { (shown.expires_at.as_deref().unwrap_or("never")) @if shown.expired { " (expired)" } }
            dt { "updated" } dd { (shown.updated_at) " (" (shown.age_days) " days ago)" }
            dt { "size" } dd { (layout::size(shown.text.len() as u64)) }
            dt { "sha256" } dd { code { (shown.sha256) } }
        }
        h2 { "Rendered" }
        // pulldown-cmark's HTML with raw HTML turned into text and unsafe links dropped.
        div.rendered { (PreEscaped(markdown::render(&shown.text))) }
        h2 { "Raw" }
        pre.raw { (shown.text) }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&path, &view.session, body),
    ))
}
