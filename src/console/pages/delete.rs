//! Deleting a memory with a reason: `memory_delete` with the sha256 the confirmation
//! page showed (a memory changed meanwhile is not deleted) and the reason kept in the
//! version it makes.

use http::StatusCode;
use maud::html;

use super::View;
use super::memory::load;
use crate::console::layout::{self, folder_url, memory_url, parent};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::delete::{MAX_REASON_BYTES, delete};

pub async fn form(view: View, query: Query) -> Result<Page, Page> {
    let path = query.required("path")?.to_string();
    let shown = load(&view, &path).await?;
    let body = html! {
        h1 { "Delete " (path) "?" }
        p { "The memory is removed; its versions stay in the history, with your reason." }
        form method="post" action="/delete" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="path" value=(path);
            input type="hidden" name="sha256" value=(shown.sha256);
            label for="reason" { "Reason (required)" }
            input #reason type="text" name="reason" required maxlength=(MAX_REASON_BYTES);
            p.actions {
                button type="submit" { "Delete" }
                a href=(memory_url(&path)) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Delete {path}"), &view.session, body),
    ))
}

pub async fn submit(view: View, form: &Query) -> Result<Page, Page> {
    let path = form.required("path")?.to_string();
    let sha256 = form.required("sha256")?.to_string();
    let reason = form.required("reason")?.to_string();
    let actor = view.session.actor.clone();
    {
        let path = path.clone();
        view.run(move |md| delete(md, &path, Some(&sha256), Some(&reason), &actor))
            .await?;
    }
    Ok(Page::redirect(folder_url(&parent(&path))))
}
