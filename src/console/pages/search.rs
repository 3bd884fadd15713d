//! Search: `memory_search`'s engine and parameters (query, path, type, tag, expired
//! included or not, newest first or by relevance), hits with their line, snippet and how
//! they matched (words as typed, or word forms).

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, enc, memory_url};
use crate::console::request::Query;
use crate::console::respond::{self, Page};
use crate::memory::SearchRequest;
use crate::search::index::Order;

/// Hits per page.
const PAGE: usize = 20;

pub async fn page(view: View, query: Query) -> Result<Page, Page> {
    let q = query.get("q").unwrap_or("").to_string();
    let path = query
        .get("path")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let kind = query
        .get("type")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let tag = query
        .get("tag")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let cursor = query
        .get("cursor")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let include_expired = query.get("expired") == Some("on");
    let recent = query.get("sort") == Some("recent");
    let result = if q.trim().is_empty() {
        None
    } else {
        let (q, path, kind, tag, cursor) =
            (q.clone(), path.clone(), kind.clone(), tag.clone(), cursor);
        Some(
            view.try_run(move |md| {
                SearchRequest {
                    query: &q,
                    path: path.as_deref(),
                    limit: PAGE,
                    cursor: cursor.as_deref(),
                    kind: kind.as_deref(),
                    tag: tag.as_deref(),
                    include_expired,
                    updated_after: None,
                    updated_before: None,
                    min_importance: None,
                    order: if recent {
                        Order::Recent
                    } else {
                        Order::Relevance
                    },
                }
                .run(md, &|_, _| {})
            })
            .await?,
        )
    };
    let status = match &result {
        Some(Err(e)) => respond::library_error(e).status(),
        _ => StatusCode::OK,
    };
    let body = html! {
        h1 { "Search" }
        form method="get" action="/search" {
            label for="sq" { "Query" }
            input #sq type="search" name="q" value=(q);
            label for="sp" { "Under path (optional)" }
            input #sp type="text" name="path" value=(path.as_deref().unwrap_or(""));
            label for="st" { "Type (optional)" }
            input #st type="text" name="type" value=(kind.as_deref().unwrap_or(""));
            label for="sg" { "Tag (optional)" }
            input #sg type="text" name="tag" value=(tag.as_deref().unwrap_or(""));
            label { input type="checkbox" name="expired" checked[include_expired]; " include expired memories" }
            label { input type="checkbox" name="sort" value="recent" checked[recent]; " newest first" }
            p { button type="submit" { "Search" } }
        }
        @if let Some(Err(e)) = &result {
            p.message { (e) }
        }
        @if let Some(Ok(r)) = &result {
            @for gone in &r.unavailable {
                p.message { "Store " (gone.store) " could not be read, so its memories were not searched: " (gone.reason) }
            }
            p.muted {
                (r.total_hits) " hits"
                @if r.relaxed { " (no memory held every term: these hold some)" }
                @if r.query_cut { " (the query was cut to its first terms)" }
            }
            ol.hits {
                @for hit in &r.hits {
                    li {
                        a href=(memory_url(&hit.path)) { (hit.path) }
                        " line " (hit.line)
                        @if !hit.matched.is_empty() {
                            " " span.badge.matched {
                                "matched by "
                                (hit.matched.iter().map(|m| m.name()).collect::<Vec<_>>().join(" and "))
                            }
                        }
                        @if hit.expired { " " span.badge { "expired" } }
                        @if let Some(name) = &hit.name { div { strong { (name) } } }
                        @if let Some(d) = &hit.description { div.muted { (d) } }
                        pre { (hit.snippet) }
                    }
                }
            }
            @if let Some(next) = &r.next_cursor {
                p.actions {
                    a href=(format!("/search?q={}&path={}&type={}&tag={}{}{}&cursor={}",
                        enc(&q), enc(path.as_deref().unwrap_or("")), enc(kind.as_deref().unwrap_or("")),
                        enc(tag.as_deref().unwrap_or("")),
                        if include_expired { "&expired=on" } else { "" },
                        if recent { "&sort=recent" } else { "" }, enc(next))) { "Next page" }
                }
            }
        }
    };
    Ok(Page::html(
        status,
        layout::frame("Search", &view.session, body),
    ))
}
