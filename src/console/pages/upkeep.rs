//! Upkeep of a store: review (memories not updated for N days, oldest first: what
//! `memdir review` lists), the expired memories with a prune button (`memdir prune
//! --expired`: each deleted as a version by the person, so each can be restored), and
//! the MEMORY.md agents are given (`memory_md::memory_index`: the store's own file cut at
//! the caps, or the generated index, with what the caps left out).

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, enc, folder_url, memory_url};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::memory_md::{self, MAX_BYTES, MAX_LINES};
use crate::memory::{ListOrder, ListRequest, upkeep};
use crate::path::MemPath;

/// Memories on one page of the review.
const PAGE: usize = 100;
/// Review's default: not updated for this many days (as `memdir review`).
const DEFAULT_DAYS: u64 = 90;

/// The root of store `name`, refused when no store has that name.
#[allow(clippy::result_large_err)]
fn root(view: &View, name: &str) -> Result<MemPath, Page> {
    view.memdir
        .stores()
        .iter()
        .position(|s| s.name == name)
        .map(|i| MemPath::root(i, name))
        .ok_or_else(|| {
            Page::error(
                StatusCode::NOT_FOUND,
                &format!("Not Found: no store is named {name}"),
            )
        })
}

/// `GET /review?store=S[&days=N][&cursor=C]`: stale memories, oldest first, and the
/// expired ones.
pub async fn review(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    let root = root(&view, &store)?.canonical();
    let days = match query.get("days").filter(|d| !d.is_empty()) {
        None => DEFAULT_DAYS,
        Some(d) => d.trim().parse::<u64>().map_err(|_| {
            Page::error(
                StatusCode::BAD_REQUEST,
                "Bad Request: `days` must be a whole number of days (0 or more)",
            )
        })?,
    };
    let cursor = query.get("cursor").map(str::to_string);
    let (stale, expired) = {
        let (root, store) = (root.clone(), store.clone());
        view.run(move |md| {
            let stale = ListRequest {
                path: Some(&root),
                limit: PAGE,
                cursor: cursor.as_deref(),
                older_than_days: Some(days),
                order: ListOrder::Oldest,
                ..Default::default()
            }
            .run(md)?;
            let expired = upkeep::prune_expired(md, Some(&store), true, "")?;
            Ok((stale, expired))
        })
        .await?
    };
    let writable = !view.read_only(&root);
    let body = html! {
        h1 { "Review " (root) }
        form method="get" action="/review" {
            input type="hidden" name="store" value=(store);
            label for="days" { "Not updated for at least (days)" }
            input #days type="number" name="days" min="0" value=(days);
            button type="submit" { "Show" }
        }
        h2 { "Stale: not updated for " (days) " days or more, oldest first (" (stale.total) ")" }
        table {
            thead { tr { th { "Memory" } th { "Name" } th { "Description" } th { "Updated" } th { "Expires" } } }
            tbody {
                @for e in &stale.entries {
                    tr {
                        td { a href=(memory_url(&e.path)) { (e.path) } }
                        td { (e.name.as_deref().unwrap_or("")) }
                        td { (e.description.as_deref().unwrap_or("")) }
                        td { (e.updated_at) }
                        td { @if e.expired { span.badge { "expired" } " " } (e.expires_at.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
        @if let Some(next) = &stale.next_cursor {
            p { a href=(format!("/review?store={}&days={days}&cursor={}", enc(&store), enc(next))) { "More" } }
        }
        h2 { "Expired (" (expired.len()) ")" }
        @if expired.is_empty() {
            p.muted { "No expired memories." }
        } @else {
            ul {
                @for e in &expired {
                    li { a href=(memory_url(&e.path)) { (e.path) } " expired at " (e.expires_at) }
                }
            }
            @if writable {
                form method="post" action="/prune" {
                    input type="hidden" name="csrf" value=(view.session.csrf);
                    input type="hidden" name="store" value=(store);
                    p.actions {
                        button type="submit" { "Delete the " (expired.len()) " expired memories" }
                        span.muted { "Each deletion is a version: each can be restored from its history." }
                    }
                }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Review {root}"), &view.session, body),
    ))
}

/// `POST /prune {store}`: every expired memory deleted, as `memdir prune --expired`.
pub async fn prune(view: View, form: &Query) -> Result<Page, Page> {
    let store = form.required("store")?.to_string();
    let root = root(&view, &store)?.canonical();
    if view.read_only(&root) {
        return Err(Page::error(
            StatusCode::FORBIDDEN,
            &format!("Forbidden: {root} is read-only"),
        ));
    }
    let actor = view.session.actor.clone();
    {
        let store = store.clone();
        view.run(move |md| upkeep::prune_expired(md, Some(&store), false, &actor))
            .await?;
    }
    Ok(Page::redirect(format!("/review?store={}", enc(&store))))
}

/// `GET /index?store=S`: the MEMORY.md agents are given, and its caps.
pub async fn index(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    let root = root(&view, &store)?;
    let canonical = root.canonical();
    let index = view
        .run(move |md| memory_md::memory_index(md, &root))
        .await?;
    let body = html! {
        h1 { "MEMORY.md of " (canonical) }
        p.actions { a href=(folder_url(&canonical)) { "Folder" } }
        p {
            @if index.generated {
                "Generated (the store has no MEMORY.md of its own): one line per memory from its frontmatter; "
                (index.listed) " listed"
                @if index.left_out > 0 { ", " strong { (index.left_out) " left out" } }
                "."
            } @else {
                "The store's own MEMORY.md"
                @if index.cut { ", " strong { "cut at the caps" } }
                "."
            }
            " Caps: " (MAX_LINES) " lines, " (layout::size(MAX_BYTES as u64)) "."
        }
        pre.raw { (index.text) }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("MEMORY.md of {canonical}"), &view.session, body),
    ))
}
