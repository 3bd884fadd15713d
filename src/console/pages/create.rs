//! A new memory in a folder: `memory_write` create-only (an existing memory of that name
//! is never replaced).

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, folder_url, memory_url};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::WriteRequest;

pub async fn form(view: View, query: Query) -> Result<Page, Page> {
    let folder = query.get("folder").unwrap_or("/").to_string();
    let body = html! {
        h1 { "New memory in " (folder) }
        form method="post" action="/new" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="folder" value=(folder);
            label for="name" { "File name (e.g. " code { "notes/topic.md" } ")" }
            input #name type="text" name="name" required;
            label for="content" { "Content" }
            textarea #content name="content" { "\n" }
            p.actions {
                button type="submit" { "Create" }
                a href=(folder_url(&folder)) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame("New memory", &view.session, body),
    ))
}

pub async fn submit(view: View, form: &Query) -> Result<Page, Page> {
    let folder = form.get("folder").unwrap_or("/");
    let name = form.required("name")?.trim().trim_start_matches('/');
    let path = format!("{}/{name}", folder.trim_end_matches('/'));
    let content = form.get("content").unwrap_or("").replace("\r\n", "\n");
    let actor = view.session.actor.clone();
    let written = {
        let path = path.clone();
        view.run(move |md| {
            WriteRequest {
                path: &path,
                content: &content,
                if_absent: true,
                expected_sha256: None,
                actor: &actor,
            }
            .run(md)
        })
        .await?
    };
    Ok(Page::redirect(memory_url(&written.path)))
}
