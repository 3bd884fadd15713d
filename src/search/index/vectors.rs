//! Vectors of meaning in the index database, keyed by (model id, content sha256): a
//! memory renamed, or two memories with the same text, share one vector. Their table is
//! made once and never dropped by a change of the lexical index's format (re-embedding
//! ten thousand memories takes minutes; re-tokenizing them takes seconds), so a new
//! tokenizer costs no embedding. Like the rest of the index it is fed, never reads a
//! memory: the caller embeds and hands the vectors in.

use rusqlite::{OptionalExtension, params};

use super::{Index, IndexResult, Stamp, Writer};
use crate::search::filter::Filter;

/// The table, made beside the lexical tables and left alone by their migrations.
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS vectors(
    model TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    vector BLOB NOT NULL,
    script INTEGER NOT NULL,
    PRIMARY KEY (model, sha256)) WITHOUT ROWID";

/// A content's vector under one model, and the code of the script its text is in
/// (`search::meaning::Script`).
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub sha256: String,
    pub vector: Vec<f32>,
    pub script: u8,
}

/// One indexed memory a search by meaning may return.
#[derive(Debug, Clone)]
pub struct ScopeDoc {
    pub rel: String,
    pub sha256: String,
    pub stamp: Stamp,
}

/// A vector as stored: little-endian `f32`s.
fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Index {
    /// Every indexed memory the filter admits, with its content hash and stamp.
    pub fn scope(&self, filter: &Filter) -> IndexResult<Vec<ScopeDoc>> {
        let mut filter = *filter;
        if let Some(now) = filter.live_at
            && !self.any_expired(now)?
        {
            filter.live_at = None;
        }
        let (sql, args) = filter.sql();
        // `?1` is the empty hash: every filter binds its arguments from `?2` on.
        let sql = format!(
            "SELECT docs.path, docs.sha256, docs.size, docs.mtime_ns, docs.ino FROM docs
             WHERE docs.sha256 <> ?1{sql}"
        );
        let empty = String::new();
        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&empty];
        all.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
        self.conn
            .prepare_cached(&sql)?
            .query_map(all.as_slice(), |r| {
                Ok(ScopeDoc {
                    rel: r.get(0)?,
                    sha256: r.get(1)?,
                    stamp: Stamp {
                        size: r.get::<_, i64>(2)? as u64,
                        mtime_ns: r.get(3)?,
                        ino: r.get::<_, i64>(4)? as u64,
                    },
                })
            })?
            .collect()
    }

    /// The stored vector of `sha256` under `model` and its script code, if any.
    pub fn vector(&self, model: &str, sha256: &str) -> IndexResult<Option<(Vec<f32>, u8)>> {
        self.conn
            .prepare_cached("SELECT vector, script FROM vectors WHERE model = ?1 AND sha256 = ?2")?
            .query_row([model, sha256], |r| {
                Ok((decode(&r.get::<_, Vec<u8>>(0)?), r.get(1)?))
            })
            .optional()
    }

    /// The contents that have a vector under `model`.
    pub fn vector_shas(&self, model: &str) -> IndexResult<std::collections::HashSet<String>> {
        self.conn
            .prepare_cached("SELECT sha256 FROM vectors WHERE model = ?1")?
            .query_map([model], |r| r.get(0))?
            .collect()
    }

    /// Up to `limit` indexed memories whose content has no vector under `model` (one per
    /// content), with their content hashes; and how many contents lack one in all.
    pub fn lacking(
        &self,
        model: &str,
        limit: usize,
    ) -> IndexResult<(usize, Vec<(String, String)>)> {
        let missing = "FROM docs WHERE docs.sha256 <> '' AND NOT EXISTS
             (SELECT 1 FROM vectors v WHERE v.model = ?1 AND v.sha256 = docs.sha256)";
        let total: i64 = self
            .conn
            .prepare_cached(&format!("SELECT count(DISTINCT docs.sha256) {missing}"))?
            .query_row([model], |r| r.get(0))?;
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT min(docs.path), docs.sha256 {missing} GROUP BY docs.sha256
                 ORDER BY min(docs.path) LIMIT ?2"
            ))?
            .query_map(params![model, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<IndexResult<_>>()?;
        Ok((total as usize, rows))
    }
}

impl Writer<'_> {
    /// Stores vectors of contents under `model` (replacing any).
    pub fn put_vectors(&self, model: &str, vectors: &[Stored]) -> IndexResult<()> {
        let mut put = self.conn.prepare_cached(
            "INSERT OR REPLACE INTO vectors(model, sha256, vector, script)
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        for v in vectors {
            put.execute(params![model, v.sha256, encode(&v.vector), v.script])?;
        }
        Ok(())
    }

    /// Forgets vectors of `model` whose content no indexed memory has any more.
    pub fn prune_vectors(&self, model: &str) -> IndexResult<usize> {
        self.conn
            .prepare_cached(
                "DELETE FROM vectors WHERE model = ?1 AND NOT EXISTS
                 (SELECT 1 FROM docs WHERE docs.sha256 = vectors.sha256)",
            )?
            .execute([model])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_and_survive_a_format_change() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("index.sqlite3");
        let index = Index::open(&db).unwrap();
        let put = |index: &Index, rel: &str, text: &str| {
            index
                .write(|w| {
                    w.upsert(&super::super::IndexedDoc {
                        rel,
                        stamp: Stamp::default(),
                        text,
                        frontmatter: None,
                    })
                })
                .unwrap();
        };
        put(&index, "a.md", "same text");
        put(&index, "b.md", "same text");
        put(&index, "c.md", "other text");
        let (n, rows) = index.lacking("m", 10).unwrap();
        assert_eq!(n, 2, "{rows:?}");
        assert_eq!(rows.len(), 2);
        let sha = crate::text::sha256_hex(b"same text");
        let stored = Stored {
            sha256: sha.clone(),
            vector: vec![0.5, -1.0],
            script: 1,
        };
        index.write(|w| w.put_vectors("m", &[stored])).unwrap();
        assert_eq!(index.vector("m", &sha).unwrap(), Some((vec![0.5, -1.0], 1)));
        assert_eq!(index.vector("other", &sha).unwrap(), None);
        assert_eq!(index.lacking("m", 10).unwrap().0, 1);
        assert_eq!(index.scope(&Filter::default()).unwrap().len(), 3);
        index
            .conn
            .execute("UPDATE meta SET value = 'older' WHERE key = 'format'", [])
            .unwrap();
        drop(index);
        let rebuilt = Index::open(&db).unwrap();
        assert!(rebuilt.built.is_some());
        assert_eq!(
            rebuilt.vector("m", &sha).unwrap(),
            Some((vec![0.5, -1.0], 1))
        );
        assert_eq!(rebuilt.write(|w| w.prune_vectors("m")).unwrap(), 1);
    }
}
