//! A folder: its memories and subfolders one level down (name, description, type, size,
//! last change, expiry), a page at a time, as `memory_list` gives them.

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, enc, folder_url, last_segment, memory_url, parent};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::{ListOrder, ListRequest};

/// Entries per page.
const PAGE: usize = 100;

pub async fn page(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
    let cursor = query.get("cursor").map(str::to_string);
    let listed = {
        let path = path.clone();
        view.run(move |md| {
            ListRequest {
                path: Some(&path),
                depth: Some(1),
                limit: PAGE,
                cursor: cursor.as_deref(),
                older_than_days: None,
                order: ListOrder::Path,
            }
            .run(md)
        })
        .await?
    };
    let writable = !view.read_only(&path);
    let body = html! {
        h1 { (path) }
        p.actions {
            @if path.trim_matches('/').contains('/') {
                a href=(folder_url(&parent(&path))) { "Up" }
            } @else {
                a href="/" { "All stores" }
            }
            a href=(format!("/history?path={}", enc(&path))) { "History" }
            @if writable {
                a href=(format!("/new?folder={}", enc(&path))) { "New memory" }
            } @else {
                span.badge { "read-only" }
            }
            span.muted { (listed.total) " entries" }
        }
        table {
            thead { tr { th { "Name" } th { "Title" } th { "Description" } th { "Type" } th.num { "Size" } th { "Updated" } th { "Expires" } } }
            tbody {
                @for e in &listed.entries {
                    tr {
                        @if e.is_dir {
                            td { a href=(folder_url(&e.path)) { (last_segment(&e.path)) } }
                            td {}
                            td.muted { (e.file_count.unwrap_or(0)) " memories" }
                            td {}
                        } @else {
                            td { a href=(memory_url(&e.path)) { (last_segment(&e.path)) } }
                            td { (e.name.as_deref().unwrap_or("")) }
                            td { (e.description.as_deref().unwrap_or("")) }
                            td { (e.kind.as_deref().unwrap_or("")) }
                        }
                        td.num { (layout::size(e.size_bytes)) }
                        td { (e.updated_at) }
                        td { @if e.expired { span.badge { "expired" } " " } (e.expires_at.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
        @if let Some(next) = &listed.next_cursor {
            p.actions { a href=(format!("/folder?path={}&cursor={}", enc(&path), enc(next))) { "Next page" } }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&path, &view.session, body),
    ))
}
