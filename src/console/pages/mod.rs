//! The console's pages, one file per concern: `stores` (the front page), `folder`,
//! `memory`, `search`, `edit` (with the conflict view), `create`, `rename`, `delete`, `history` (timelines,
//! versions, diffs, restore, redaction), `archive` (export, import), `upkeep` (review,
//! expired and prune, MEMORY.md), and `signin`
//! (sign-in, the one-time link, sign-out). Each page calls the library operation the
//! matching MCP tool calls, on a blocking thread, and renders its result.

pub mod archive;
pub mod create;
pub mod delete;
pub mod edit;
pub mod folder;
pub mod history;
pub mod memory;
pub mod rename;
pub mod search;
pub mod signin;
pub mod stores;
pub mod upkeep;

use std::sync::Arc;

use http::StatusCode;

use super::respond::{self, Page};
use super::session::Session;
use crate::memory::Memdir;

/// What a page of a signed-in session works with.
pub struct View {
    pub memdir: Arc<Memdir>,
    pub session: Session,
}

impl View {
    /// Runs library work on a blocking thread (as the MCP tools do); a library error
    /// becomes its page.
    pub async fn run<T, F>(&self, work: F) -> Result<T, Page>
    where
        T: Send + 'static,
        F: FnOnce(&Memdir) -> crate::error::Result<T> + Send + 'static,
    {
        self.try_run(work)
            .await?
            .map_err(|e| respond::library_error(&e))
    }

    /// [`run`](Self::run), with the library's error left to the page to show.
    pub async fn try_run<T, F>(&self, work: F) -> Result<crate::error::Result<T>, Page>
    where
        T: Send + 'static,
        F: FnOnce(&Memdir) -> crate::error::Result<T> + Send + 'static,
    {
        let memdir = Arc::clone(&self.memdir);
        tokio::task::spawn_blocking(move || work(&memdir))
            .await
            .map_err(|_| {
                Page::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal Server Error: the operation failed unexpectedly; see the server's log",
                )
            })
    }

    /// The store named `name`, if it may be changed here: 404 for a name no store has,
    /// 403 for a read-only store (for pages that change a store as a whole).
    #[allow(clippy::result_large_err)]
    pub fn writable_store(&self, name: &str) -> Result<(), Page> {
        match self.memdir.stores().iter().find(|s| s.name == name) {
            None => Err(Page::error(
                StatusCode::NOT_FOUND,
                &format!("Not Found: no store is named {name}"),
            )),
            Some(s) if s.read_only => Err(Page::error(
                StatusCode::FORBIDDEN,
                &format!("Forbidden: /{name} is read-only"),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Whether the store a path starts with is read-only (unknown stores count as such).
    pub fn read_only(&self, path: &str) -> bool {
        let name = path.trim_start_matches('/').split('/').next().unwrap_or("");
        self.memdir
            .stores()
            .iter()
            .find(|s| s.name == name)
            .is_none_or(|s| s.read_only)
    }
}
