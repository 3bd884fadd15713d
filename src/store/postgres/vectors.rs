//! Vectors of meaning shared through the database (`memdir_vectors`), keyed by model id
//! and content sha256 like the local index's own table, so that one machine's embedding
//! serves every machine that serves the store (each caches them in its local index).
//!
//! The table is not part of the versioned schema: it is made by the first memdir that
//! shares a vector, so a database used by older memdir binaries as well stays theirs to
//! use (a newer schema version would make them refuse it). It holds derived data only,
//! and whoever may write the store may add to it.

use super::PgStore;
use crate::error::Result;

/// A content's sha256, its vector and its script code.
pub type SharedVector = (String, Vec<f32>, u8);

const TABLE: &str = r#"CREATE TABLE IF NOT EXISTS memdir_vectors (
    model text COLLATE "C" NOT NULL,
    sha256 text COLLATE "C" NOT NULL,
    vector bytea NOT NULL,
    script smallint NOT NULL,
    PRIMARY KEY (model, sha256)
)"#;

/// PostgreSQL's code for a table that does not exist.
const UNDEFINED_TABLE: &str = "42P01";

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl PgStore {
    /// The shared vectors of these contents under `model` (those there are), each with
    /// its script code.
    pub fn shared_vectors(&self, model: &str, shas: &[&str]) -> Result<Vec<SharedVector>> {
        if shas.is_empty() {
            return Ok(Vec::new());
        }
        let shas: Vec<String> = shas.iter().map(|s| (*s).to_owned()).collect();
        let rows = self.with(|c| {
            match c.query(
                "SELECT sha256, vector, script FROM memdir_vectors WHERE model = $1 AND sha256 = ANY($2)",
                &[&model, &shas],
            ) {
                // No machine has shared a vector yet.
                Err(e) if e.code().map(|c| c.code()) == Some(UNDEFINED_TABLE) => Ok(Vec::new()),
                other => other,
            }
        })?;
        Ok(rows
            .into_iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    decode(&r.get::<_, Vec<u8>>(1)),
                    r.get::<_, i16>(2) as u8,
                )
            })
            .collect())
    }

    /// Shares vectors of contents under `model`. A content already shared is replaced:
    /// a machine embeds a content the table has only when it found the shared vector
    /// unusable (or when two machines embed it at once, with the same result).
    pub fn share_vectors(&self, model: &str, vectors: &[SharedVector]) -> Result<()> {
        if vectors.is_empty() || self.read_only {
            return Ok(());
        }
        // One row per content: an upsert may not touch a row twice in one statement.
        let mut seen = std::collections::HashSet::new();
        let vectors: Vec<&SharedVector> = vectors.iter().filter(|v| seen.insert(&v.0)).collect();
        let shas: Vec<&str> = vectors.iter().map(|v| v.0.as_str()).collect();
        let blobs: Vec<Vec<u8>> = vectors.iter().map(|v| encode(&v.1)).collect();
        let scripts: Vec<i16> = vectors.iter().map(|v| i16::from(v.2)).collect();
        self.with(|c| {
            let insert = |c: &mut super::Conn| {
                c.execute(
                    "INSERT INTO memdir_vectors (model, sha256, vector, script)
                     SELECT $1, s, v, c FROM unnest($2::text[], $3::bytea[], $4::smallint[])
                        AS t(s, v, c)
                     ON CONFLICT (model, sha256)
                        DO UPDATE SET vector = EXCLUDED.vector, script = EXCLUDED.script",
                    &[&model, &shas, &blobs, &scripts],
                )
            };
            match insert(c) {
                Err(e) if e.code().map(|c| c.code()) == Some(UNDEFINED_TABLE) => {
                    // Two processes creating it at once: one of them may fail, and then
                    // finds it made by the other.
                    let _ = c.client.batch_execute(TABLE);
                    insert(c).map(drop)
                }
                other => other.map(drop),
            }
        })
    }
}
