//! Everything about search, fed text and stamps by the stores it reads through; no other
//! module tokenizes, matches or ranks.
//!
//! Layout:
//! - `tokenize`: the one tokenizer; `lang`: word forms (Snowball stems by script and a
//!   guessed language) and stopwords; `query`: what an agent typed, parsed;
//! - `matching`: one document against a query (term frequencies, length, the lines to
//!   show); `bm25`: the one BM25 (constants, term weight, IDFs, the scan's scorer);
//!   `snippet`: a shown line cut to a readable length;
//! - `index`: the SQLite FTS5 index (a disposable cache outside the store) and, in
//!   `index/fts_rank.rs`, its ranking function;
//! - `fresh`: keeping each store's index in step with its files;
//! - `filter`: which memories a search may return, in SQL and in Rust alike;
//! - `meaning`: vectors in memory, cosine similarity, the fusion with BM25;
//! - `operation`: the search itself (index or scan per scope, rankings merged, hits read
//!   and re-checked), over the stores as a `Corpus` the caller provides.

pub mod bm25;
pub mod filter;
pub mod fresh;
pub mod index;
pub mod lang;
pub mod matching;
pub mod meaning;
pub mod operation;
pub mod query;
pub mod snippet;
pub mod tokenize;

pub use bm25::Scorer;
pub use matching::{DocMatch, Matched, Shown, best_lines, shown_lines};
pub use query::{Clause, Query};
