//! A folder: its memories and subfolders one level down (name, description, type, size,
//! last change, expiry), a page at a time, as `memory_list` gives them; sorted by name,
//! size or age and filtered by type or by text in the name through the query string
//! (`sort`, `dir`, `type`, `name`, `page`), so links and a GET form do it without script.

use http::StatusCode;
use maud::{Markup, html};

use super::View;
use crate::console::layout::{self, enc, folder_url, last_segment, memory_url, parent};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::{ListEntry, ListOrder, ListRequest, ListResult, ListRow, Memdir, list};

/// Entries per page.
const PAGE: usize = 100;

/// What the folder is sorted by.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    Name,
    Size,
    Age,
}

impl Sort {
    fn key(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Size => "size",
            Sort::Age => "age",
        }
    }

    /// The direction a column's link first sorts in: names A to Z, the largest and the
    /// newest first.
    fn default_desc(self) -> bool {
        self != Sort::Name
    }
}

/// The page's sort, filters and position, from the query string.
#[derive(Clone)]
struct Shape {
    path: String,
    sort: Sort,
    desc: bool,
    kind: String,
    text: String,
    page: usize,
}

impl Shape {
    #[allow(clippy::result_large_err)]
    fn parse(query: &Query) -> Result<Shape, Page> {
        let bad = |m: &str| Page::error(StatusCode::BAD_REQUEST, &format!("Bad Request: {m}"));
        let sort = match query.get("sort").unwrap_or("name") {
            "name" => Sort::Name,
            "size" => Sort::Size,
            "age" => Sort::Age,
            _ => return Err(bad("`sort` is `name`, `size` or `age`")),
        };
        let desc = match query.get("dir") {
            None => sort.default_desc(),
            Some("asc") => false,
            Some("desc") => true,
            Some(_) => return Err(bad("`dir` is `asc` or `desc`")),
        };
        let page = match query.get("page") {
            None => 1,
            Some(p) => p
                .parse::<usize>()
                .ok()
                .filter(|p| *p >= 1)
                .ok_or_else(|| bad("`page` is a whole number from 1"))?,
        };
        Ok(Shape {
            path: query.required("path")?.to_string(),
            sort,
            desc,
            kind: query.get("type").unwrap_or("").trim().to_string(),
            text: query.get("name").unwrap_or("").trim().to_string(),
            page,
        })
    }

    /// Whether a filter needs the entries' frontmatter.
    fn filters(&self) -> bool {
        !self.kind.is_empty() || !self.text.is_empty()
    }

    /// Name order, A to Z, nothing filtered: `memory_list`'s own order and cursor.
    fn is_plain(&self) -> bool {
        self.sort == Sort::Name && !self.desc && self.kind.is_empty() && self.text.is_empty()
    }

    fn keeps(&self, e: &ListEntry) -> bool {
        let kind_ok = self.kind.is_empty()
            || (!e.is_dir
                && e.kind
                    .as_deref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(&self.kind)));
        let needle = self.text.to_lowercase();
        let text_ok = needle.is_empty()
            || last_segment(&e.path).to_lowercase().contains(&needle)
            || e.name
                .as_deref()
                .is_some_and(|n| n.to_lowercase().contains(&needle));
        kind_ok && text_ok
    }

    /// This page's URL with another sort, direction or page (filters kept).
    fn url(&self, sort: Sort, desc: bool, page: usize) -> String {
        let mut url = format!("/folder?path={}", enc(&self.path));
        if sort != Sort::Name || desc {
            url += &format!(
                "&sort={}&dir={}",
                sort.key(),
                if desc { "desc" } else { "asc" }
            );
        }
        if !self.kind.is_empty() {
            url += &format!("&type={}", enc(&self.kind));
        }
        if !self.text.is_empty() {
            url += &format!("&name={}", enc(&self.text));
        }
        if page > 1 {
            url += &format!("&page={page}");
        }
        url
    }

    /// A column heading that sorts by `sort` (the other way round when it already does).
    fn heading(&self, sort: Sort, label: &str, class: Option<&str>) -> Markup {
        let current = self.sort == sort;
        let desc = if current {
            !self.desc
        } else {
            sort.default_desc()
        };
        let aria = match (current, self.desc) {
            (false, _) => "none",
            (true, false) => "ascending",
            (true, true) => "descending",
        };
        html! {
            th class=[class] aria-sort=(aria) {
                a href=(self.url(sort, desc, 1)) {
                    (label)
                    @if current { @if self.desc { " ↓" } @else { " ↑" } }
                }
            }
        }
    }
}

/// One page of the folder, and how many entries it has in all and after the filters.
struct Listing {
    entries: Vec<ListEntry>,
    total: usize,
    matching: usize,
    /// The next page's link.
    next: Option<String>,
    /// The previous page's link (pages by number only: a cursor goes one way).
    previous: Option<String>,
}

pub async fn page(view: View, query: Query) -> Result<Page, Page> {
    let shape = Shape::parse(&query)?;
    let listing = if shape.is_plain() && query.get("page").is_none() {
        // memory_list's own page and cursor: only this page's entries are read.
        let cursor = query.get("cursor").map(str::to_string);
        let listed = list(&view, &shape.path, PAGE, cursor).await?;
        Listing {
            next: listed
                .next_cursor
                .as_ref()
                .map(|next| format!("/folder?path={}&cursor={}", enc(&shape.path), enc(next))),
            previous: None,
            total: listed.total,
            matching: listed.total,
            entries: listed.entries,
        }
    } else {
        // Sorting or filtering needs every entry: one walk, sorted and filtered here.
        let (entries, total, matching) = {
            let shape = shape.clone();
            view.run(move |md| whole(md, &shape)).await?
        };
        let start = (shape.page - 1) * PAGE;
        Listing {
            next: (start + PAGE < matching)
                .then(|| shape.url(shape.sort, shape.desc, shape.page + 1)),
            previous: (shape.page > 1).then(|| shape.url(shape.sort, shape.desc, shape.page - 1)),
            total,
            matching,
            entries,
        }
    };
    let path = &shape.path;
    let writable = !view.read_only(path);
    let filtered = !shape.kind.is_empty() || !shape.text.is_empty();
    let body = html! {
        h1 { (path) }
        p.actions {
            @if path.trim_matches('/').contains('/') {
                a href=(folder_url(&parent(path))) { "Up" }
            } @else {
                a href="/" { "All stores" }
            }
            a href=(format!("/history?path={}", enc(path))) { "History" }
            @if writable {
                a href=(format!("/new?folder={}", enc(path))) { "New memory" }
                @if path.trim_matches('/').contains('/') {
                    a href=(format!("/rename?path={}", enc(path))) { "Rename or move" }
                }
            } @else {
                span.badge { "read-only" }
            }
            @if filtered {
                span.muted { (listing.matching) " of " (listing.total) " entries" }
            } @else {
                span.muted { (listing.total) " entries" }
            }
        }
        form.filter method="get" action="/folder" {
            input type="hidden" name="path" value=(path);
            @if shape.sort != Sort::Name || shape.desc {
                input type="hidden" name="sort" value=(shape.sort.key());
                input type="hidden" name="dir" value=(if shape.desc { "desc" } else { "asc" });
            }
            label for="fname" { "Name contains" }
            input #fname type="search" name="name" value=(shape.text);
            label for="ftype" { "Type" }
            input #ftype type="text" name="type" value=(shape.kind);
            button type="submit" { "Filter" }
            @if filtered {
                a href=(format!("/folder?path={}", enc(path))) { "Clear" }
            }
        }
        table {
            thead { tr {
                (shape.heading(Sort::Name, "Name", None))
                th { "Title" } th { "Description" } th { "Type" }
                (shape.heading(Sort::Size, "Size", Some("num")))
                (shape.heading(Sort::Age, "Updated", None))
                th { "Expires" }
            } }
            tbody {
                @for e in &listing.entries {
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
        @if listing.previous.is_some() || listing.next.is_some() {
            p.actions {
                @if let Some(previous) = &listing.previous { a href=(previous) { "Previous page" } }
                @if let Some(next) = &listing.next { a href=(next) { "Next page" } }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(path, &view.session, body),
    ))
}

/// The page `shape` asks for of the whole folder, with the folder's entry count and how
/// many pass the filters: every row from one walk, sorted by what the walk knows (size,
/// last change; ties by name); files read only for the rows shown, or for every row when
/// a filter needs their frontmatter.
fn whole(md: &Memdir, shape: &Shape) -> crate::error::Result<(Vec<ListEntry>, usize, usize)> {
    let rows = ListRequest {
        path: Some(&shape.path),
        depth: Some(1),
        ..ListRequest::default()
    }
    .rows(md)?;
    let total = rows.len();
    let mut kept: Vec<(ListRow, Option<ListEntry>)> = if shape.filters() {
        let entries = list::entries(md, &rows);
        rows.into_iter()
            .zip(entries)
            .filter(|(_, e)| shape.keeps(e))
            .map(|(r, e)| (r, Some(e)))
            .collect()
    } else {
        rows.into_iter().map(|r| (r, None)).collect()
    };
    match shape.sort {
        Sort::Name => {}
        Sort::Size => kept.sort_by_key(|(r, _)| r.size_bytes()),
        Sort::Age => kept.sort_by_key(|(r, _)| r.modified()),
    }
    // Ascending: A to Z, the smallest, the oldest first (ties by name, as listed).
    if shape.desc {
        kept.reverse();
    }
    let matching = kept.len();
    let page: Vec<(ListRow, Option<ListEntry>)> = kept
        .into_iter()
        .skip((shape.page - 1) * PAGE)
        .take(PAGE)
        .collect();
    let unread: Vec<ListRow> = page
        .iter()
        .filter(|(_, e)| e.is_none())
        .map(|(r, _)| r.clone())
        .collect();
    let mut read = list::entries(md, &unread).into_iter();
    let entries = page
        .into_iter()
        .filter_map(|(_, e)| e.or_else(|| read.next()))
        .collect();
    Ok((entries, total, matching))
}

/// One `memory_list` call: `path`'s entries one level down, in name order.
async fn list(
    view: &View,
    path: &str,
    limit: usize,
    cursor: Option<String>,
) -> Result<ListResult, Page> {
    let path = path.to_string();
    view.run(move |md| {
        ListRequest {
            path: Some(&path),
            depth: Some(1),
            limit,
            cursor: cursor.as_deref(),
            older_than_days: None,
            order: ListOrder::Path,
        }
        .run(md)
    })
    .await
}
