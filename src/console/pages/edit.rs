//! Editing a memory: a form with its whole text and the sha256 it started from; saving
//! is `memory_write` with that sha256 as its precondition. When the memory changed
//! meanwhile nothing is written and the page shows theirs against yours as a diff, with
//! the choice to save yours over theirs (a new form carrying their sha256); when it was
//! deleted meanwhile, yours is shown in a create-only form.

use http::StatusCode;
use maud::{Markup, html};

use super::View;
use super::memory::load;
use crate::console::layout::{self, last_segment, memory_url, parent};
use crate::console::request::Query;
use crate::console::respond::{self, Page};
use crate::error::Error;
use crate::memory::WriteRequest;

pub async fn form(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
    let shown = load(&view, &path).await?;
    let body = html! {
        h1 { "Edit " (path) }
        (editor(&view, &path, &shown.sha256, &shown.text))
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Edit {path}"), &view.session, body),
    ))
}

/// The form: the text, the sha256 it started from, the session's CSRF token.
fn editor(view: &View, path: &str, sha256: &str, text: &str) -> Markup {
    html! {
        form method="post" action="/edit" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="path" value=(path);
            input type="hidden" name="sha256" value=(sha256);
            label for="content" { "Content" }
            // The newline after the tag is eaten by the HTML parser, so a text that
            // starts with a blank line keeps it.
            textarea #content name="content" { "\n" (text) }
            p.actions {
                button type="submit" { "Save" }
                a href=(memory_url(path)) { "Cancel" }
            }
        }
    }
}

pub async fn submit(view: View, form: &Query) -> Result<Page, Page> {
    let path = form.required("path")?.to_string();
    let sha256 = form.required("sha256")?.to_string();
    // Browsers send a textarea's lines ended by CR LF.
    let content = form.get("content").unwrap_or("").replace("\r\n", "\n");
    let actor = view.session.actor.clone();
    let written = {
        let (path, content, sha256) = (path.clone(), content.clone(), sha256.clone());
        view.try_run(move |md| {
            WriteRequest {
                path: &path,
                content: &content,
                if_absent: false,
                expected_sha256: Some(&sha256),
                actor: &actor,
            }
            .run(md)
        })
        .await?
    };
    match written {
        Ok(_) => Ok(Page::redirect(memory_url(&path))),
        Err(Error::Precondition { .. }) => conflict(view, &path, &content).await,
        Err(Error::PreconditionMissing { .. }) => deleted_meanwhile(&view, &path, &content),
        Err(e) => Err(respond::library_error(&e)),
    }
}

/// The memory changed since the form was opened: theirs against yours, nothing written.
async fn conflict(view: View, path: &str, yours: &str) -> Result<Page, Page> {
    let theirs = load(&view, path).await?;
    let body = html! {
        h1 { "Conflict: " (path) " changed meanwhile" }
        p.message {
            "Someone changed this memory after you opened it. Nothing was written. "
            "Below, lines only in the current version are marked −, lines only in yours +. "
            "Saving the form below replaces the current version with yours."
        }
        (layout::diff(&theirs.text, yours))
        h2 { "Yours" }
        (editor(&view, path, &theirs.sha256, yours))
    };
    Ok(Page::html(
        StatusCode::CONFLICT,
        layout::frame(&format!("Conflict: {path}"), &view.session, body),
    ))
}

/// The memory was deleted since the form was opened: nothing written; yours is shown in
/// a create-only form (`/new`), so saving it never replaces a memory made meanwhile.
#[allow(clippy::result_large_err)]
fn deleted_meanwhile(view: &View, path: &str, yours: &str) -> Result<Page, Page> {
    let body = html! {
        h1 { "Conflict: " (path) " was deleted meanwhile" }
        p.message {
            "Someone deleted this memory after you opened it. Nothing was written. "
            "Its versions stay in the history. Creating it again below writes yours "
            "as a new memory (and refuses if one exists there by then)."
        }
        h2 { "Yours" }
        form method="post" action="/new" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="folder" value=(parent(path));
            input type="hidden" name="name" value=(last_segment(path));
            label for="content" { "Content" }
            textarea #content name="content" { "\n" (yours) }
            p.actions {
                button type="submit" { "Create it again with yours" }
                a href=(layout::folder_url(&parent(path))) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::CONFLICT,
        layout::frame(&format!("Conflict: {path}"), &view.session, body),
    ))
}
