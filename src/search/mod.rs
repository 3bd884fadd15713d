//! Full-text search, fed `(path, text)` pairs: it does no IO of its own. `tokenize` cuts
//! text into tokens, `query` parses what an agent typed, `rank` scores documents with
//! BM25 and picks the lines to show.

pub mod index;
pub mod query;
pub mod rank;
pub mod tokenize;

pub use query::{Clause, Query};
pub use rank::{DocMatch, Scorer, best_lines, shown_lines};
