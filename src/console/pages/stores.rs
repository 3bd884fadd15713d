//! The front page: every store with its description, whether it is read-only, and how
//! many memories (and bytes) it holds, from the listing `memory_list` gives of `/`, with
//! its review, MEMORY.md, export (and import, for an empty writable store). A store whose
//! database cannot be reached is shown as unavailable, with the reason.

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, folder_url};
use crate::console::respond::Page;
use crate::memory::{ListOrder, ListRequest};

pub async fn page(view: View) -> Result<Page, Page> {
    let listing = view
        .run(|md| {
            ListRequest {
                path: Some("/"),
                depth: Some(1),
                limit: 10_000,
                cursor: None,
                older_than_days: None,
                order: ListOrder::Path,
            }
            .run(md)
        })
        .await?;
    let stores = view.memdir.stores();
    let body = html! {
        h1 { "Stores" }
        @for gone in &listing.unavailable {
            p.message { "Store " (gone.store) " could not be read: " (gone.reason) }
        }
        table {
            thead { tr { th { "Store" } th { "Description" } th { "Access" } th.num { "Memories" } th.num { "Size" } th { "Upkeep" } } }
            tbody {
                @for store in stores {
                    @let path = format!("/{}/", store.name);
                    @let entry = listing.entries.iter().find(|e| e.path == path);
                    @let gone = listing.unavailable.iter().any(|u| format!("{}/", u.store) == path);
                    tr {
                        td { a href=(folder_url(&path)) { (path) } }
                        td { (store.description.as_deref().unwrap_or("")) }
                        td { @if store.read_only { span.badge { "read-only" } } @else { "read-write" } }
                        @if gone {
                            td.num { "unavailable" }
                            td.num { "–" }
                        } @else {
                            td.num { (entry.and_then(|e| e.file_count).unwrap_or(0)) }
                            td.num { (layout::size(entry.map_or(0, |e| e.size_bytes))) }
                        }
                        td {
                            a href=(format!("/review?store={}", layout::enc(&store.name))) { "Review" }
                            " · "
                            a href=(format!("/index?store={}", layout::enc(&store.name))) { "MEMORY.md" }
                            " · "
                            a href=(format!("/export?store={}", layout::enc(&store.name))) { "Export" }
                            @if !gone && !store.read_only && entry.and_then(|e| e.file_count).unwrap_or(0) == 0 {
                                " · "
                                a href=(format!("/import?store={}", layout::enc(&store.name))) { "Import" }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame("Stores", &view.session, body),
    ))
}
