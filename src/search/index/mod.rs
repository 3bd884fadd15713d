//! The search index: a disposable SQLite FTS5 cache of every store file's tokens, shared
//! by all processes serving the store. It is fed `(path, text)` by the memory layer and
//! never reads memory files itself; the only files it touches are its own database.
//!
//! Tokens come from `crate::search::tokenize` (the one tokenizer), stored space-separated
//! in a contentless FTS5 table whose `ascii` tokenizer only splits on spaces, so FTS5
//! positions are our positions and phrase queries stay exact. A fourth column holds the
//! words' stems (`crate::search::lang`) where they differ from the words, weighted below
//! the words themselves, so a word is found by its forms and its exact form ranks first. Several processes write
//! through WAL and `BEGIN IMMEDIATE` transactions with a busy timeout.

// The door to the index's own SQLite database and its folder (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod fts_rank;
mod vectors;

pub use vectors::{ScopeDoc, Stored};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use crate::frontmatter::{Frontmatter, NEUTRAL_IMPORTANCE};
use crate::search::filter::Filter;
use crate::search::lang::index_stems;
use crate::search::tokenize::{index_text, index_trigrams, trigrams};
use crate::search::{Clause, bm25};
pub use crate::store::Stamp;

/// Bump when the schema, the tokenizer or what frontmatter parsing reads changes (the
/// index keeps its fields): a mismatch rebuilds the index.
pub const FORMAT: &str = "memdir-index-9;tokenizer-4";

/// Whether the database at `db` is there: the index is a cache, which anyone may delete.
pub fn exists(db: &Path) -> bool {
    db.exists()
}

/// One indexed file.
#[derive(Debug)]
pub struct IndexedDoc<'a> {
    pub rel: &'a str,
    pub stamp: Stamp,
    pub text: &'a str,
    pub frontmatter: Option<&'a Frontmatter>,
}

/// How a query's page is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Best BM25 score first, ties by path.
    #[default]
    Relevance,
    /// Most recently modified first, ties by path.
    Recent,
}

/// What a query found: how many documents match, the best score of any of them, and
/// the page asked for.
#[derive(Debug, Default)]
pub struct Page {
    pub total: usize,
    pub best: f64,
    pub rows: Vec<Ranked>,
}

/// A ranked hit: relative path, BM25 score (higher is better) and the indexed stamp.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub rel: String,
    pub score: f64,
    pub stamp: Stamp,
}

/// How clauses combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    All,
    Any,
}

/// An open index database.
#[derive(Debug)]
pub struct Index {
    conn: Connection,
    pub path: PathBuf,
    /// Document lengths remembered by the ranking function of `fts_rank`.
    lengths: Arc<fts_rank::Lengths>,
    /// Whether opening it built it from scratch, and why.
    pub built: Option<Built>,
}

/// Why [`Index::open`] built an index from scratch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Built {
    /// There was none (or it was empty).
    Missing,
    /// It had another format or tokenizer version (the one it had).
    Format(String),
    /// The database was damaged (SQLite's error) and was replaced.
    Damaged(String),
}

/// Whether SQLite says the database file is damaged.
fn damaged(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// An index error: the caller falls back to scanning.
pub type IndexResult<T> = Result<T, rusqlite::Error>;

impl Index {
    /// Opens (or creates, or rebuilds on a format change) the index at `db`. A damaged
    /// database (one SQLite says is corrupt or not a database) is a cache that cannot
    /// be trusted: it is deleted and built anew.
    pub fn open(db: &Path) -> IndexResult<Index> {
        match Index::open_as_is(db) {
            Err(e) if damaged(&e) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = db.as_os_str().to_owned();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
                let mut index = Index::open_as_is(db)?;
                index.built = Some(Built::Damaged(e.to_string()));
                Ok(index)
            }
            other => other,
        }
    }

    fn open_as_is(db: &Path) -> IndexResult<Index> {
        if let Some(dir) = db.parent() {
            // The cache folder is ours; failure surfaces as the open error below.
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(db)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let lengths = Arc::new(fts_rank::Lengths::default());
        fts_rank::register(&conn, lengths.clone())?;
        let mut index = Index {
            conn,
            path: db.to_owned(),
            lengths,
            built: None,
        };
        index.built = index.migrate()?;
        Ok(index)
    }

    /// Makes the tables of this format, dropping those of another.
    fn migrate(&self) -> IndexResult<Option<Built>> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let result = (|| {
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                [],
            )?;
            // Vectors outlive the lexical tables: a new format re-tokenizes, it does not
            // re-embed.
            self.conn.execute(vectors::TABLE, [])?;
            let format: Option<String> = self
                .conn
                .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
                    r.get(0)
                })
                .optional()?;
            if format.as_deref() == Some(FORMAT) {
                return Ok(None);
            }
            {
                self.conn.execute_batch(
                    "DROP TABLE IF EXISTS docs;
                     DROP TABLE IF EXISTS fts;
                     CREATE TABLE docs(
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        path TEXT NOT NULL UNIQUE,
                        size INTEGER NOT NULL,
                        mtime_ns INTEGER NOT NULL,
                        ino INTEGER NOT NULL,
                        sha256 TEXT NOT NULL,
                        description TEXT,
                        kind TEXT,
                        tags TEXT,
                        expires INTEGER,
                        importance INTEGER);
                     CREATE INDEX docs_sha256 ON docs(sha256);
                     CREATE INDEX docs_expires ON docs(expires) WHERE expires IS NOT NULL;
                     CREATE INDEX docs_importance ON docs(importance)
                        WHERE importance IS NOT NULL AND importance <> 3;
                     CREATE VIRTUAL TABLE fts USING fts5(
                        body, tail, tri, stem, content='', contentless_delete=1,
                        tokenize=\"ascii tokenchars '_'\", detail=full);",
                )?;
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('format', ?1)",
                    [FORMAT],
                )?;
            }
            Ok(Some(match format {
                Some(old) => Built::Format(old),
                None => Built::Missing,
            }))
        })();
        self.finish(result)
    }

    fn finish<T>(&self, result: IndexResult<T>) -> IndexResult<T> {
        match result {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Runs `f` in one write transaction (serialised with every other process).
    pub fn write<T>(&self, f: impl FnOnce(&Writer) -> IndexResult<T>) -> IndexResult<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let result = f(&Writer { conn: &self.conn });
        self.finish(result)
    }

    /// Every indexed path with its stamp.
    pub fn stamps(&self) -> IndexResult<Vec<(String, Stamp)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, size, mtime_ns, ino FROM docs")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Stamp {
                    size: r.get::<_, i64>(1)? as u64,
                    mtime_ns: r.get(2)?,
                    ino: r.get::<_, i64>(3)? as u64,
                },
            ))
        })?;
        rows.collect()
    }

    /// The indexed stamp of one path.
    pub fn stamp(&self, rel: &str) -> IndexResult<Option<Stamp>> {
        self.conn
            .prepare_cached("SELECT size, mtime_ns, ino FROM docs WHERE path = ?1")?
            .query_row([rel], |r| {
                Ok(Stamp {
                    size: r.get::<_, i64>(0)? as u64,
                    mtime_ns: r.get(1)?,
                    ino: r.get::<_, i64>(2)? as u64,
                })
            })
            .optional()
    }

    /// Forgets remembered document lengths if the index was rebuilt since (see
    /// [`fts_rank::Lengths::check_schema`]).
    fn check_schema(&self) -> IndexResult<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA schema_version", [], |r| r.get(0))?;
        self.lengths.check_schema(version);
        Ok(())
    }

    /// Learns every document's length (one pass over the table, about 0.5 µs a
    /// document), so that the first queries after start-up score as fast as later ones.
    /// Returns how many documents it saw.
    pub fn learn_lengths(&self) -> IndexResult<usize> {
        self.check_schema()?;
        let sql = format!(
            "SELECT {}(fts, {}) FROM fts",
            fts_rank::NAME,
            fts_rank::IDF_LATER
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while rows.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// Documents matching the clauses: how many in all, and the page `offset..offset+limit`
    /// by descending score, ties by path.
    ///
    /// One FTS5 pass scores every match (BM25, by [`fts_rank`]'s `memdir_rank`, which
    /// collects them) and counts them; the page is picked here, not by an SQL sort, and
    /// only its documents are looked up. `docs` is joined only to filter.
    pub fn query(
        &self,
        clauses: &[Clause],
        combine: Combine,
        filter: &Filter,
        offset: usize,
        limit: usize,
    ) -> IndexResult<(usize, Vec<Ranked>)> {
        let page = self.query_page(clauses, combine, filter, Order::Relevance, offset, limit)?;
        Ok((page.total, page.rows))
    }

    /// Whether any document's expiry is at or before `now` (seconds since the epoch).
    fn any_expired(&self, now: i64) -> IndexResult<bool> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM docs WHERE expires IS NOT NULL AND expires <= ?1)",
            )?
            .query_row([now], |r| r.get(0))
    }

    /// The path of every document whose expiry is at or before `now` (seconds since the
    /// epoch), in path order (a partial index holds the documents that have an expiry).
    pub fn expired(&self, now: i64) -> IndexResult<Vec<String>> {
        self.conn
            .prepare_cached(
                "SELECT path FROM docs WHERE expires IS NOT NULL AND expires <= ?1 ORDER BY path",
            )?
            .query_map([now], |r| r.get(0))?
            .collect()
    }

    /// [`Index::query`] in either order, with the best score of all matches (for scores
    /// shown relative to it).
    pub fn query_page(
        &self,
        clauses: &[Clause],
        combine: Combine,
        filter: &Filter,
        order: Order,
        offset: usize,
        limit: usize,
    ) -> IndexResult<Page> {
        let Some((expr, phrases)) = match_expression(clauses, combine) else {
            return Ok(Page::default());
        };
        self.check_schema()?;
        let mut filter = *filter;
        // Most stores hold nothing expired: then the expiry filter is left out, and with
        // it the join that would cost every query (one look-up in a partial index).
        if let Some(now) = filter.live_at
            && !self.any_expired(now)?
        {
            filter.live_at = None;
        }
        let (filter, args) = filter.sql();
        // One phrase and no filter: the rows returned are the documents holding the phrase,
        // so its IDF is known from their count and need not cost FTS5 a second pass.
        let idf_later = phrases == 1 && filter.is_empty();
        let mode = if idf_later {
            fts_rank::IDF_LATER
        } else {
            fts_rank::IDF_HERE
        };
        let recent = order == Order::Recent;
        // The page is chosen by `key` (lower is first): the score, or for the most recent
        // first, the modification time negated.
        let key = if recent { "-docs.mtime_ns" } else { "0" };
        // The function collects each match with its key (`fts_rank`'s `take_collected`);
        // the statement returns only their count. `LIMIT -1` keeps SQLite from folding
        // the subquery into the count, where `fts` could not be passed to the function.
        let name = fts_rank::NAME;
        let sql = if filter.is_empty() && !recent {
            format!(
                "SELECT count(s) FROM (SELECT {name}(fts, {mode}, 0) AS s FROM fts
                 WHERE fts MATCH ?1 LIMIT -1)"
            )
        } else {
            format!(
                "SELECT count(s) FROM (SELECT {name}(fts, {mode}, {key}) AS s
                 FROM fts JOIN docs ON docs.id = fts.rowid WHERE fts MATCH ?1{filter} LIMIT -1)"
            )
        };
        let mut all_args: Vec<&dyn rusqlite::ToSql> = vec![&expr];
        all_args.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
        // Scores are lower for better matches.
        self.lengths.take_collected();
        let count: i64 = self
            .conn
            .prepare_cached(&sql)?
            .query_row(all_args.as_slice(), |r| r.get(0))?;
        let mut scored = self.lengths.take_collected();
        if scored.len() as i64 != count {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERNAL),
                Some(format!(
                    "{name} collected {} of {count} matches",
                    scored.len()
                )),
            ));
        }
        if idf_later && !scored.is_empty() {
            let idf = crate::search::bm25::idf(self.lengths.rows(), scored.len() as i64);
            for s in &mut scored {
                s.0 *= idf;
            }
        }
        // Also for the most recent first: the order is by time, but each hit's score
        // (relative to the best) is after the importance lift, as the scan gives it.
        self.weigh_importance(&mut scored)?;
        self.lengths.trim();
        self.page(scored, order, offset, limit)
    }

    /// Multiplies each match's score by its memory's importance factor
    /// ([`bm25::importance_factor`], as the scan does). Only memories whose importance is
    /// not the neutral 3 are looked up (a partial index holds them): a store that sets
    /// none pays one count of an empty index; otherwise the matches are looked up by id
    /// when they are fewer than those memories, else those memories are read at once.
    fn weigh_importance(&self, scored: &mut [(f64, i64, i64)]) -> IndexResult<()> {
        if scored.is_empty() {
            return Ok(());
        }
        let marked: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM docs WHERE importance IS NOT NULL AND importance <> 3",
            )?
            .query_row([], |r| r.get(0))?;
        let factor = |importance: i64| {
            bm25::importance_factor(u8::try_from(importance).unwrap_or(NEUTRAL_IMPORTANCE))
        };
        if marked == 0 {
            return Ok(());
        }
        if (scored.len() as i64) < marked {
            let mut one = self
                .conn
                .prepare_cached("SELECT importance FROM docs WHERE id = ?1")?;
            for s in scored.iter_mut() {
                let importance: Option<Option<i64>> =
                    one.query_row([s.1], |r| r.get(0)).optional()?;
                if let Some(Some(i)) = importance {
                    s.0 *= factor(i);
                }
            }
            return Ok(());
        }
        let weights: std::collections::HashMap<i64, f64> = self
            .conn
            .prepare_cached(
                "SELECT id, importance FROM docs WHERE importance IS NOT NULL AND importance <> 3",
            )?
            .query_map([], |r| Ok((r.get(0)?, factor(r.get(1)?))))?
            .collect::<IndexResult<_>>()?;
        for s in scored.iter_mut() {
            if let Some(w) = weights.get(&s.1) {
                s.0 *= w;
            }
        }
        Ok(())
    }

    /// The page `offset..offset+limit` of every match's `(score, row id, key)` (lower is
    /// better for both), with the count and the best score.
    fn page(
        &self,
        mut scored: Vec<(f64, i64, i64)>,
        order: Order,
        offset: usize,
        limit: usize,
    ) -> IndexResult<Page> {
        let recent = order == Order::Recent;
        let total = scored.len();
        let best = -scored.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
        let need = offset.saturating_add(limit).min(total);
        if need == 0 || offset >= total {
            return Ok(Page {
                total,
                best: if total == 0 { 0.0 } else { best },
                rows: Vec::new(),
            });
        }
        // The best `need`, and everything tied with the last of them: ties go by path.
        if recent {
            scored.select_nth_unstable_by_key(need - 1, |s| s.2);
            let cut = scored[need - 1].2;
            scored.retain(|s| s.2 <= cut);
        } else {
            scored.select_nth_unstable_by(need - 1, |a, b| a.0.total_cmp(&b.0));
            let cut = scored[need - 1].0;
            scored.retain(|s| s.0 <= cut);
        }
        let mut page = self.rows(scored)?;
        if recent {
            page.sort_by(|a, b| {
                (b.stamp.mtime_ns.cmp(&a.stamp.mtime_ns)).then_with(|| a.rel.cmp(&b.rel))
            });
        } else {
            page.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.rel.cmp(&b.rel)));
        }
        Ok(Page {
            total,
            best,
            rows: page.into_iter().skip(offset).take(limit).collect(),
        })
    }

    /// The documents of scored rows, as ranked hits (in no particular order).
    fn rows(&self, scored: Vec<(f64, i64, i64)>) -> IndexResult<Vec<Ranked>> {
        let mut lookup = self
            .conn
            .prepare_cached("SELECT path, size, mtime_ns, ino FROM docs WHERE id = ?1")?;
        let mut page = Vec::with_capacity(scored.len());
        for (score, id, _) in scored {
            let row = lookup
                .query_row([id], |r| {
                    Ok(Ranked {
                        rel: r.get(0)?,
                        score: -score,
                        stamp: Stamp {
                            size: r.get::<_, i64>(1)? as u64,
                            mtime_ns: r.get(2)?,
                            ino: r.get::<_, i64>(3)? as u64,
                        },
                    })
                })
                .optional()?;
            page.extend(row);
        }
        Ok(page)
    }
}

/// Changes inside one write transaction.
pub struct Writer<'c> {
    conn: &'c Connection,
}

impl Writer<'_> {
    /// Adds or replaces a document.
    pub fn upsert(&self, doc: &IndexedDoc) -> IndexResult<()> {
        self.remove(doc.rel)?;
        let (body, tail, _) = index_text(doc.text);
        let tri = index_trigrams(doc.text);
        let stem = index_stems(&body);
        let fm = doc.frontmatter;
        let tags = fm
            .filter(|f| !f.tags.is_empty())
            .map(|f| format!("\u{1f}{}\u{1f}", f.tags.join("\u{1f}")));
        self.conn
            .prepare_cached(
                "INSERT INTO docs(path, size, mtime_ns, ino, description, kind, tags, expires,
                    importance, sha256)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                doc.rel,
                doc.stamp.size as i64,
                doc.stamp.mtime_ns,
                doc.stamp.ino as i64,
                fm.and_then(|f| f.description.as_deref()),
                fm.and_then(|f| f.kind.as_deref()),
                tags,
                fm.and_then(Frontmatter::expires),
                fm.and_then(|f| f.importance),
                crate::text::sha256_hex(doc.text.as_bytes()),
            ])?;
        let id = self.conn.last_insert_rowid();
        self.conn
            .prepare_cached(
                "INSERT INTO fts(rowid, body, tail, tri, stem) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![id, body, tail, tri, stem])?;
        Ok(())
    }

    /// Removes a document, if indexed.
    pub fn remove(&self, rel: &str) -> IndexResult<()> {
        let id: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM docs WHERE path = ?1")?
            .query_row([rel], |r| r.get(0))
            .optional()?;
        if let Some(id) = id {
            self.conn
                .prepare_cached("DELETE FROM fts WHERE rowid = ?1")?
                .execute([id])?;
            self.conn
                .prepare_cached("DELETE FROM docs WHERE id = ?1")?
                .execute([id])?;
        }
        Ok(())
    }

    /// Removes every document at or below folder `rel` (no trailing slash).
    pub fn remove_tree(&self, rel: &str) -> IndexResult<()> {
        let (lo, hi) = (format!("{rel}/"), format!("{rel}0"));
        let ids: Vec<(i64, String)> = self
            .conn
            .prepare_cached("SELECT id, path FROM docs WHERE path >= ?1 AND path < ?2")?
            .query_map([&lo, &hi], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<IndexResult<_>>()?;
        for (_, path) in ids {
            self.remove(&path)?;
        }
        self.remove(rel)
    }
}

/// The FTS5 expression for the clauses (every token quoted, so no input is syntax) and
/// how many phrases it has.
fn match_expression(clauses: &[Clause], combine: Combine) -> Option<(String, usize)> {
    let mut phrases = 0;
    let parts: Vec<String> = clauses
        .iter()
        .map(|c| match c {
            Clause::Term(t) => format!("{{body tail}} : {}", quote(t)),
            // The word itself, or in the stem column its stem: one phrase when it is its
            // own stem; else its exact form is a second, rarer phrase, which lifts a
            // document holding it above one that holds another form only.
            Clause::Word { exact, stem } if exact == stem => {
                format!("{{body stem}} : {}", quote(stem))
            }
            Clause::Word { exact, stem } => {
                phrases += 1;
                format!("body : {} OR {{body stem}} : {}", quote(exact), quote(stem))
            }
            Clause::Stem(stem) => format!("stem : {}", quote(stem)),
            Clause::Prefix(p) => format!("{{body tail}} : {} *", quote(p)),
            Clause::Phrase(words) => format!("body : {}", quote(&words.join(" "))),
            Clause::Run(run) => format!("tri : {}", quote(&trigrams(run).join(" "))),
        })
        .map(|p| format!("({p})"))
        .collect();
    if parts.is_empty() {
        return None;
    }
    phrases += parts.len();
    let expr = parts.join(match combine {
        Combine::All => " AND ",
        Combine::Any => " OR ",
    });
    Some((expr, phrases))
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Query;

    /// A small deterministic corpus: English, Russian and CJK words in varied amounts, so
    /// document lengths, frequencies and column mixes differ.
    fn doc(seed: u64) -> String {
        const WORDS: &[&str] = &[
            "note",
            "memory",
            "deploy",
            "rollback",
            "crash",
            "safe",
            "index",
            "память",
            "заметка",
            "数据库",
            "数据",
            "メモリ",
            "데이터베이스를",
            "사용",
            "compaction",
            "crashed",
            "deployment",
            "据",
        ];
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = 3 + next() % 60;
        let mut text = String::new();
        for i in 0..n {
            let w = WORDS[(next() % WORDS.len() as u64) as usize];
            // Skew towards the first words, as natural text does.
            let w = if next() % 3 == 0 {
                WORDS[(next() % 3) as usize]
            } else {
                w
            };
            text.push_str(w);
            text.push(if i % 9 == 8 { '\n' } else { ' ' });
        }
        text
    }

    fn put(index: &Index, rel: &str, text: &str) {
        index
            .write(|w| {
                w.upsert(&IndexedDoc {
                    rel,
                    stamp: Stamp {
                        size: text.len() as u64,
                        mtime_ns: 0,
                        ino: 0,
                    },
                    text,
                    frontmatter: None,
                })
            })
            .unwrap();
    }

    /// Path → minus FTS5's own `bm25()` (higher is better), the reference.
    fn reference(index: &Index, q: &Query, combine: Combine, scope: &Filter) -> Vec<(String, f64)> {
        let Some((expr, _)) = match_expression(&q.clauses, combine) else {
            return Vec::new();
        };
        let (filter, args) = scope.sql();
        let sql = format!(
            "SELECT docs.path, bm25(fts, {}, {}, {}, {}) FROM fts JOIN docs ON docs.id = fts.rowid
             WHERE fts MATCH ?1{filter}",
            fts_rank::WEIGHTS[0],
            fts_rank::WEIGHTS[1],
            fts_rank::WEIGHTS[2],
            fts_rank::WEIGHTS[3]
        );
        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&expr];
        all.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
        let mut rows: Vec<(String, f64)> = index
            .conn
            .prepare(&sql)
            .unwrap()
            .query_map(all.as_slice(), |r| Ok((r.get(0)?, -r.get::<_, f64>(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        rows
    }

    fn check_all(index: &Index, round: &str) -> usize {
        let queries = [
            "note",
            "memory",
            "deploy rollback",
            "\"crash safe\"",
            "crash*",
            "память",
            "заметка note",
            "数据库",
            "数据",
            "メモリ",
            "데이터베이스",
            "사용 note",
            "compaction",
            "deployed crashes",
            "notes",
            "note memory deploy",
            "\"safe index\" note",
            "nothing-matches-this",
        ];
        let scopes = [None, Some("a/"), Some("b/c/"), Some("a/7.md")];
        let mut compared = 0;
        for text in queries {
            let q = Query::parse(text);
            for combine in [Combine::All, Combine::Any] {
                for prefix in scopes {
                    let scope = Filter {
                        prefix,
                        ..Filter::default()
                    };
                    let want = reference(index, &q, combine, &scope);
                    let (total, page) =
                        crate::search::bm25::with_constants(crate::search::bm25::FTS5, || {
                            index.query(&q.clauses, combine, &scope, 0, 10_000)
                        })
                        .unwrap();
                    let got: Vec<(String, f64)> =
                        page.into_iter().map(|r| (r.rel, r.score)).collect();
                    assert_eq!(
                        total,
                        want.len(),
                        "{round}: {text:?} {combine:?} {prefix:?}"
                    );
                    for ((gp, gs), (wp, ws)) in got.iter().zip(&want) {
                        assert_eq!(gp, wp, "{round}: {text:?} {combine:?} {prefix:?}: order");
                        assert!(
                            gs.to_bits() == ws.to_bits(),
                            "{round}: {text:?} {combine:?} {prefix:?}: {gp} scored {gs}, bm25() {ws}"
                        );
                    }
                    assert_eq!(got.len(), want.len());
                    compared += got.len();
                }
            }
        }
        compared
    }

    /// Importance weighs scores the same way whether the matches are looked up one by one
    /// (fewer matches than marked memories) or the marked memories are read at once.
    #[test]
    fn importance_weighs_scores_by_either_look_up() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3")).unwrap();
        let add = |rel: &str, text: &str, importance: Option<u8>| {
            let fm = Frontmatter {
                importance,
                ..Frontmatter::default()
            };
            index
                .write(|w| {
                    w.upsert(&IndexedDoc {
                        rel,
                        stamp: Stamp {
                            size: text.len() as u64,
                            mtime_ns: 0,
                            ino: 0,
                        },
                        text,
                        frontmatter: Some(&fm),
                    })
                })
                .unwrap();
        };
        let same = "rollback steps for billing notes\n";
        add("a.md", same, Some(5));
        add("b.md", same, None);
        add("c.md", same, Some(1));
        for rel in ["e1.md", "e2.md", "e3.md"] {
            add(rel, "other notes\n", Some(4));
        }
        // Five memories are marked: `rollback` matches three of them (looked up one by
        // one), `notes` all six (the marked memories read at once).
        for query in ["rollback", "notes"] {
            let q = Query::parse(query);
            let (_, rows) = index
                .query(&q.clauses, Combine::All, &Filter::default(), 0, 10)
                .unwrap();
            let score = |rel: &str| rows.iter().find(|r| r.rel == rel).unwrap().score;
            let (a, b, c) = (score("a.md"), score("b.md"), score("c.md"));
            assert!((a / b - 1.1).abs() < 1e-9, "{query}: {rows:?}");
            assert!((c / b - 0.9).abs() < 1e-9, "{query}: {rows:?}");
        }
    }

    /// FTS5 shares per-query data between every call of one function in a statement, so
    /// two modes in one statement would compute one with the other's IDFs: refused.
    #[test]
    fn memdir_rank_refuses_two_modes_in_one_statement() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3")).unwrap();
        put(&index, "a.md", "note memory note");
        put(&index, "b.md", "note");
        let sql = format!(
            "SELECT {0}(fts, {1}), {0}(fts, {2}) FROM fts WHERE fts MATCH 'note'",
            fts_rank::NAME,
            fts_rank::IDF_LATER,
            fts_rank::IDF_HERE
        );
        let result: Result<Vec<(f64, f64)>, _> = index
            .conn
            .prepare(&sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect();
        assert!(result.is_err(), "{result:?}");
        // One mode per statement works.
        let one = format!(
            "SELECT {}(fts, {}) FROM fts WHERE fts MATCH 'note'",
            fts_rank::NAME,
            fts_rank::IDF_HERE
        );
        let n = index
            .conn
            .prepare(&one)
            .unwrap()
            .query_map([], |r| r.get::<_, f64>(0))
            .unwrap()
            .count();
        assert_eq!(n, 2);
    }

    #[test]
    fn memdir_rank_scores_equal_fts5_bm25_through_updates() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("index.sqlite3")).unwrap();
        let rel = |i: u64| match i % 3 {
            0 => format!("a/{i}.md"),
            1 => format!("b/c/{i}.md"),
            _ => format!("d/{i}.md"),
        };
        for i in 0..300 {
            put(&index, &rel(i), &doc(i));
        }
        // Twice: the first run learns the lengths, the second uses what it learned.
        let first = check_all(&index, "fresh");
        // A second connection learns them all up front instead.
        let other = Index::open(&dir.path().join("index.sqlite3")).unwrap();
        assert_eq!(other.learn_lengths().unwrap(), 300);
        assert_eq!(other.lengths.len(), 300);
        assert_eq!(check_all(&other, "learned up front"), first);
        assert!(
            first > 2000,
            "the corpus should give many hits, got {first}"
        );
        assert_eq!(check_all(&index, "remembered"), first);
        assert!(index.lengths.len() >= 300);

        // Rewrite documents with other text, the newest one too (its id must not come
        // back with a new length), and delete some: remembered lengths stay true.
        let max_id = || -> i64 {
            index
                .conn
                .query_row("SELECT max(id) FROM docs", [], |r| r.get(0))
                .unwrap()
        };
        let newest = max_id();
        index.write(|w| w.remove(&rel(299))).unwrap();
        put(&index, &rel(299), &doc(10_299));
        assert!(max_id() > newest, "a row id was reused");
        for i in (0..300).step_by(4) {
            put(&index, &rel(i), &doc(i + 1000));
        }
        for i in (1..300).step_by(7) {
            index.write(|w| w.remove(&rel(i))).unwrap();
        }
        check_all(&index, "after updates");
        check_all(&index, "after updates, remembered");
        let docs: i64 = index
            .conn
            .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(other.learn_lengths().unwrap() as i64, docs);
        check_all(&other, "after updates, learned up front");

        // Another process (another memdir version) rebuilds the index: the new `docs`
        // counts its ids from 1 again, so what `index` remembers must be forgotten.
        index
            .conn
            .execute("UPDATE meta SET value = 'older' WHERE key = 'format'", [])
            .unwrap();
        let rebuilt = Index::open(&dir.path().join("index.sqlite3")).unwrap();
        for i in 0..300 {
            put(&rebuilt, &rel(i), &doc(i + 5000));
        }
        let first_id: i64 = rebuilt
            .conn
            .query_row("SELECT min(id) FROM docs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            first_id, 1,
            "the rebuild should reuse ids for this test to mean anything"
        );
        check_all(&index, "after a rebuild elsewhere");
    }
}
