//! memdir's tables, created and migrated by memdir itself: `memdir_schema` holds the
//! version; each migration runs once, in order, under an advisory lock, so several
//! processes starting together migrate once. A database whose schema is newer than this
//! binary knows is refused (an older memdir must not write what it does not understand).

use super::conn::{Conn, Failure};
use crate::{Error, Result};

/// Held while migrating (any value no store's lock key takes in practice).
const MIGRATE_KEY: i64 = 0x6d65_6d64_6972_0001;

/// The migrations, in order: migration `n` brings the schema to version `n + 1`.
const MIGRATIONS: &[&str] = &[r#"
CREATE SEQUENCE memdir_seq;
CREATE TABLE memdir_files (
    store text COLLATE "C" NOT NULL,
    path text COLLATE "C" NOT NULL,
    content bytea NOT NULL,
    modified_ns bigint NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (store, path)
);
CREATE TABLE memdir_changes (
    store text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    path text COLLATE "C" NOT NULL
);
CREATE INDEX memdir_changes_by_seq ON memdir_changes (store, seq);
CREATE TABLE memdir_state (
    store text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    off bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (store, name, off)
);
CREATE FUNCTION memdir_now_ns() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000 $$;
"#];

/// The schema version this binary writes.
pub const VERSION: i32 = MIGRATIONS.len() as i32;

/// Brings the database's schema to [`VERSION`] (a read-only store only checks it).
/// Errors are [`Error::Open`] in words for the start-up message (the caller names the
/// store).
pub fn migrate(conn: &mut Conn, read_only: bool) -> Result<()> {
    let found = version(conn)?;
    if found == VERSION {
        return Ok(());
    }
    check_not_newer(found)?;
    if read_only {
        return Err(Error::Open(format!(
            "the database holds no memdir tables (schema version {found}, this memdir writes {VERSION}); serve the store read-write once to create them"
        )));
    }
    conn.client.batch_execute("BEGIN").map_err(said)?;
    let migrated = (|| {
        conn.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_KEY])
            .map_err(said)?;
        conn.client
            .batch_execute("CREATE TABLE IF NOT EXISTS memdir_schema (version integer NOT NULL)")
            .map_err(said)?;
        let found: i32 = conn
            .query_one("SELECT coalesce(max(version), 0) FROM memdir_schema", &[])
            .map_err(said)?
            .get(0);
        check_not_newer(found)?;
        for (n, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            conn.client.batch_execute(sql).map_err(said)?;
            conn.execute(
                "INSERT INTO memdir_schema (version) VALUES ($1)",
                &[&(n as i32 + 1)],
            )
            .map_err(said)?;
        }
        conn.client.batch_execute("COMMIT").map_err(said)
    })();
    if migrated.is_err() {
        let _ = conn.client.batch_execute("ROLLBACK");
    }
    migrated
}

/// What the database said, in the words of the start-up message.
fn said(e: Failure) -> Error {
    Error::Open(e.to_string())
}

/// The schema version in the database (0 when memdir has never used it).
fn version(conn: &mut Conn) -> Result<i32> {
    let row = conn
        .query_one(
            "SELECT CASE WHEN to_regclass('memdir_schema') IS NULL THEN 0 ELSE 1 END",
            &[],
        )
        .map_err(said)?;
    if row.get::<_, i32>(0) == 0 {
        return Ok(0);
    }
    Ok(conn
        .query_one("SELECT coalesce(max(version), 0) FROM memdir_schema", &[])
        .map_err(said)?
        .get(0))
}

fn check_not_newer(found: i32) -> Result<()> {
    if found > VERSION {
        return Err(Error::Open(format!(
            "the database's memdir schema is version {found}, newer than this memdir knows (version {VERSION}); upgrade memdir on this machine"
        )));
    }
    Ok(())
}

/// The advisory lock key of store `name`.
pub fn lock_key(name: &str) -> i64 {
    let digest = crate::text::sha256_hex(format!("memdir store {name}").as_bytes());
    i64::from_str_radix(&digest[..15], 16).unwrap_or(1)
}
