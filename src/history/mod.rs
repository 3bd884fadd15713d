//! Version history of a store: an append-only log of every mutation with who and when,
//! and the content of every version, deduplicated by sha256: the first record of a given
//! content carries it inline, later ones refer to it. It lives in the store's
//! `.memdir/history/` folder, works for every process serving the store (appends happen
//! under the store lock) and survives crashes:
//!
//! 1. the records about to be appended (with any new content) are written as the intent
//!    in the store's lock file;
//! 2. the mutation happens (durable);
//! 3. the records are appended to `log.jsonl` in one write and fdatasync'd; the intent is
//!    cleared.
//!
//! A record and the content it introduces are one line, so no version can point at
//! missing content. Repair, done by the next holder of the store lock: a torn last line
//! is cut off; intended records are appended only if the files are in the state they
//! describe. Nothing rewrites the log except redaction and retention, which move content
//! to a surviving record of the same bytes before dropping it.
//!
//! Layout: `log` (records and their lines), `append` (a mutation's intent, then its
//! append), `recorder`
//! (one mutation's versions, under the store lock), `heads`
//! (what a process knows of the log), `repair` (after a crash), `rewrite` (redaction and
//! retention), `verify` (`memdir check`), `import` (an archive's history written in), `archive` (the
//! export/import format), `versions`
//! (`memory_history`'s reading of the log),
//! `base64` (non-UTF-8 content).

mod append;
pub mod archive;
mod base64;
mod heads;
mod import;
mod log;
mod recorder;
mod repair;
mod rewrite;
mod verify;
pub mod versions;

pub use heads::Heads;
pub use import::{check_import, import_records};
pub use log::{Draft, Op, Record, export_records, records};
pub use recorder::EXTERNAL;
pub(crate) use recorder::Recorder;
pub use repair::{Repaired, repair};
pub use rewrite::{Retention, prune, redact};
pub use verify::{LogCheck, verify};
