//! Renaming or moving a memory within its store: `memory_edit {rename}` with the sha256
//! the form showed as its precondition (a memory changed meanwhile is not moved), a
//! `Renamed` version by the person.

use http::StatusCode;
use maud::html;

use super::View;
use super::memory::load;
use crate::console::layout::{self, memory_url};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::{EditOp, EditRequest};

/// `GET /rename?path=P`.
pub async fn form(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
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

/// `POST /rename {path, sha256, new_path}`.
pub async fn submit(view: View, form: &Query) -> Result<Page, Page> {
    let path = form.required("path")?.to_string();
    let sha256 = form.required("sha256")?.to_string();
    let new_path = form.required("new_path")?.trim().to_string();
    let actor = view.session.actor.clone();
    let moved = view
        .run(move |md| {
            EditRequest {
                path: &path,
                op: EditOp::Rename {
                    new_path: &new_path,
                },
                expected_sha256: Some(&sha256),
                actor: &actor,
            }
            .run(md)
        })
        .await?;
    Ok(Page::redirect(memory_url(&moved.path)))
}
