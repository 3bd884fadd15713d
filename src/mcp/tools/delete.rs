//! `memory_delete`: its parameters, its call and its text.

use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::answer;
use super::args::Args;
use super::schema::{input, output};
use crate::mcp::server::MemdirServer;
use crate::memory::DeleteResult;
use crate::memory::delete::delete;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteParams {
    /// The memory or folder to delete, e.g. `/memories/old.md` or `/memories/drafts/`
    /// (a folder is deleted with everything in it). Never a store itself.
    pub path: String,
    /// Delete a file only if its current `content_sha256` is this; any mismatch is an
    /// error that deletes nothing and gives the current hash.
    #[serde(default)]
    #[schemars(with = "String")]
    pub expected_sha256: Option<String>,
    /// Why it is deleted, in a sentence (at most 1,000 bytes), e.g. `superseded by
    /// notes/deploy-v2.md`. Kept in the history with the deletion and shown by
    /// memory_history.
    #[serde(default)]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteOut {
    pub path: String,
    pub deleted_files: Vec<String>,
    /// The history versions recording each file's deletion.
    pub versions: Vec<u64>,
}

impl From<DeleteResult> for DeleteOut {
    fn from(r: DeleteResult) -> Self {
        DeleteOut {
            path: r.path,
            deleted_files: r.deleted_files,
            versions: r.versions,
        }
    }
}

#[tool_router(router = delete_router, vis = "pub(in crate::mcp)")]
impl MemdirServer {
    /// Delete a memory, or a folder with everything in it. Never a store itself.
    #[tool(
        input_schema = input::<DeleteParams>(),
        output_schema = output::<DeleteOut>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_delete(
        &self,
        Args(p): Args<DeleteParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let actor = self.actor(&ctx);
        let result = self
            .run(move |m| {
                delete(
                    m,
                    &p.path,
                    p.expected_sha256.as_deref(),
                    p.reason.as_deref(),
                    &actor,
                )
            })
            .await;
        answer(result, |r| {
            let out = DeleteOut::from(r);
            let text = render(&out);
            (out, text)
        })
    }
}

/// Files named in the text of a folder deletion; the rest are only counted.
const LISTED_DELETIONS: usize = 100;

/// The text of a deletion: the file, or the folder and the files it held.
fn render(out: &DeleteOut) -> String {
    match out.deleted_files.as_slice() {
        [one] if *one == out.path => format!("Deleted {}", out.path),
        files => {
            let mut text = format!(
                "Deleted {} with {} file(s): {}",
                out.path,
                files.len(),
                files[..files.len().min(LISTED_DELETIONS)].join(", ")
            );
            if files.len() > LISTED_DELETIONS {
                text.push_str(&format!(
                    " and {} more (all are in deleted_files)",
                    files.len() - LISTED_DELETIONS
                ));
            }
            text
        }
    }
}
