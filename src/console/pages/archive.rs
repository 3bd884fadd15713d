//! Export and import of a store: `/export?store=S` downloads the JSON Lines archive
//! `memdir export` writes (its memories and its whole history); `/import?store=S` uploads
//! one into the store, which `memdir import`'s checks accept only when the store has no
//! memories and no history (nothing is written otherwise). The upload is a multipart form
//! within the body limit of `/mcp`.

use http::StatusCode;
use maud::html;

use super::View;
use crate::console::layout::{self, folder_url};
use crate::console::request::Query;
use crate::console::respond::Page;
use crate::memory::archive;

/// `GET /export?store=S`.
pub async fn export(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    let bytes = {
        let store = store.clone();
        view.run(move |md| {
            let mut out = Vec::new();
            archive::export(md, Some(&store), &mut out)?;
            Ok(out)
        })
        .await?
    };
    Ok(Page::download(
        "application/jsonl; charset=utf-8",
        format!("memdir-{store}.jsonl"),
        bytes,
    ))
}

/// `GET /import?store=S`: the upload form.
pub async fn form(view: View, query: Query) -> Result<Page, Page> {
    let store = query.required("store")?.to_string();
    view.writable_store(&store)?;
    let body = html! {
        h1 { "Import into /" (store) }
        p {
            "Upload an archive made by " code { "memdir export" } " or the console's Export. "
            "Only a store with no memories and no history takes one; otherwise nothing is written."
        }
        form method="post" action="/import" enctype="multipart/form-data" {
            input type="hidden" name="csrf" value=(view.session.csrf);
            input type="hidden" name="store" value=(store);
            label for="archive" { "Archive (.jsonl)" }
            input #archive type="file" name="archive" accept=".jsonl,application/jsonl" required;
            p.actions {
                button type="submit" { "Import" }
                a href=(folder_url(&format!("/{store}/"))) { "Cancel" }
            }
        }
    };
    Ok(Page::html(
        StatusCode::OK,
        layout::frame(&format!("Import into /{store}"), &view.session, body),
    ))
}

/// `POST /import {store, archive}`.
pub async fn import(view: View, form: &Query) -> Result<Page, Page> {
    let store = form.required("store")?.to_string();
    view.writable_store(&store)?;
    let archive_text = form.required("archive")?.to_string();
    {
        let store = store.clone();
        view.run(move |md| {
            archive::import(md, Some(&store), &mut std::io::Cursor::new(archive_text))
        })
        .await?;
    }
    Ok(Page::redirect(folder_url(&format!("/{store}/"))))
}
