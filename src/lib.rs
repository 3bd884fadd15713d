//! memdir: a Model Context Protocol server that gives AI agents durable, searchable
//! memory made of plain files.
//!
//! Layout:
//! - `path`: layer 1 of the path policy (lexical validation, store resolution).
//! - `store`: the only door to the file system and the database: confined directory
//!   handles, durable writes, cross-process locking, folder walks, PostgreSQL stores.
//! - `memory`: the operations behind the tools, one file each, run on the `Memdir`
//!   context (stores, settings, indexes), independent of MCP.
//! - `embed`: the embedding model run inside memdir (multilingual-e5-small, 4-bit).
//! - `edit`, `text`, `frontmatter`, `secrets`: pure helpers on text.
//! - `search`: tokenizer, query language, BM25 ranking, the SQLite FTS5 search index (a
//!   disposable cache outside the store) and keeping it in step with the files.
//! - `history`: each store's append-only version log: records, the recorder, repair,
//!   redaction and retention, reading versions back, export/import.
//! - `mcp`: the only module that knows rmcp: tools, schemas, results.
//! - `render`: text the CLI and the MCP tools show alike (a memory read).
//! - `console`: the console for people in a browser (server-rendered pages, sessions,
//!   CSRF), served by `memdir console` and beside `/mcp` by `memdir serve --http`.
//! - `cli`: the command line.

// The doors named in clippy.toml: each module that is one opts out with a reason.
#![deny(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::print_stdout
)]

pub mod cli;
pub mod console;
pub mod edit;
pub mod embed;
pub mod error;
pub mod frontmatter;
pub mod history;
pub mod mcp;
pub mod memory;
pub mod path;
pub mod render;
pub mod search;
pub mod secrets;
pub mod store;
pub mod text;

pub use error::{Error, Result};
