//! Renaming or moving a memory or a folder within its store: `memory_edit {rename}`. A
//! memory's form carries the sha256 the page showed as its precondition (a memory changed
//! meanwhile is not moved); a folder's has none, as the tool takes none for folders, and
//! says how many memories move with it. Each file moved is a `Renamed` version by the
//! person.

use http::StatusCode;
use maud::html;

use super::View;
use super::memory::load;
use crate::console::layout::{self, folder_url, memory_url};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::error::Error;
use crate::memory::{EditOp, EditRequest, ListRequest};

/// `GET /rename?path=P`: a memory's form, or a folder's when `P` ends with `/`.
pub async fn form(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
    if path.ends_with('/') {
        return folder_form(view, path).await;
    }
    let shown = load(&view, &path).await?;
    let body = html! {
        h1 { "Rename or move " (path) }
        form method="post" action="/rename" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="path" value=(path);
            input type="hidden" name="sha256" value=(shown.sha256);
            label for="new_path" { "New path (in the same store)" }
            input #new_path type="text" name="new_path" required value=(path);
            p.actions {
                button type="submit" { "Move" }
                a href=(memory_url(&path)) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Rename {path}"), &view.session, body),
    ))
}

/// A folder's form: where to, and how many memories move.
async fn folder_form(view: View, path: String) -> Result<Page, Page> {
    if !path.trim_matches('/').contains('/') {
        return Err(Page::error(
            StatusCode::BAD_REQUEST,
            "Bad Request: a store cannot be renamed; rename or move the folders in it",
        ));
    }
    let files = {
        let path = path.clone();
        view.run(move |md| {
            let rows = ListRequest {
                path: Some(&path),
                ..ListRequest::default()
            }
            .rows(md)?;
            // A file is listed as itself: `P/` must name a folder.
            if rows
                .first()
                .is_some_and(|r| !r.is_dir() && r.path() == path.trim_end_matches('/'))
            {
                return Err(Error::NotAFolder {
                    path: path.trim_end_matches('/').to_string(),
                });
            }
            Ok(rows.len())
        })
        .await?
    };
    let body = html! {
        h1 { "Rename or move the folder " (path) }
        p { "Moves " (files) @if files == 1 { " memory" } @else { " memories" }
            " with it, each a version by you; their histories follow them." }
        form method="post" action="/rename" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="path" value=(path);
            label for="new_path" { "New folder path (in the same store)" }
            input #new_path type="text" name="new_path" required value=(path);
            p.actions {
                button type="submit" { "Move the folder" }
                a href=(folder_url(&path)) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Rename {path}"), &view.session, body),
    ))
}

/// `POST /rename {path, sha256, new_path}` (a folder's `path` ends with `/` and has no
/// `sha256`).
pub async fn submit(view: View, form: &Query) -> Result<Page, Page> {
    let path = form.required("path")?.to_string();
    let folder = path.ends_with('/');
    let sha256 = if folder {
        None
    } else {
        Some(form.required("sha256")?.to_string())
    };
    let new_path = form.required("new_path")?.trim().to_string();
    let actor = view.session.actor.clone();
    let moved = view
        .run(move |md| {
            EditRequest {
                path: &path,
                op: EditOp::Rename {
                    new_path: &new_path,
                },
                expected_sha256: sha256.as_deref(),
                actor: &actor,
            }
            .run(md)
        })
        .await?;
    Ok(Page::redirect(if folder {
        folder_url(&format!("{}/", moved.path.trim_end_matches('/')))
    } else {
        memory_url(&moved.path)
    }))
}
