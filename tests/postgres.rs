//! Stores held by PostgreSQL (`--store NAME=postgresql://...`), through the real binary
//! and a real PostgreSQL server (tests/common/pg.rs).

#[path = "common/pg.rs"]
mod pg;

use pg::{PgServer, unique_db};

#[test]
fn the_harness_runs_a_real_postgresql_that_stops_and_restarts() {
    let mut pg = PgServer::start();
    let db = unique_db("harness");
    pg.create_db(&db);
    assert!(
        pg.psql(&db, "SHOW server_version_num")
            .parse::<u32>()
            .unwrap()
            >= 120000,
        "a PostgreSQL of version 12 or newer"
    );
    assert_eq!(pg.psql(&db, "SHOW server_encoding"), "UTF8");
    assert_eq!(pg.psql(&db, "SHOW listen_addresses"), "", "no TCP listener");
    pg.psql(&db, "CREATE TABLE t (k int PRIMARY KEY, v text)");
    pg.psql(
        &db,
        "INSERT INTO t VALUES (1, 'kept across a restart 東京')",
    );
    assert!(pg.pg_dump(&db).contains("kept across a restart 東京"));
    let url = pg.url(&db);
    assert!(
        url.starts_with("postgresql://postgres@/") && url.contains(&db),
        "{url}"
    );

    pg.stop();
    assert!(!pg.is_running());
    let down = std::process::Command::new(pg.program_path("pg_isready"))
        .arg("-h")
        .arg(pg.socket_dir())
        .args(["-p", &pg.port().to_string(), "-t", "2"])
        .output()
        .unwrap();
    assert!(!down.status.success(), "the server is stopped");

    pg.restart();
    assert_eq!(
        pg.psql(&db, "SELECT v FROM t WHERE k = 1"),
        "kept across a restart 東京",
        "same data folder after a restart"
    );
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM t"), "1");

    // Databases are independent; the data folder is removed with the server.
    let other = unique_db("harness other");
    pg.create_db(&other);
    assert_eq!(
        pg.psql(
            &other,
            "SELECT count(*) FROM pg_tables WHERE tablename = 't'"
        ),
        "0"
    );
    let socket_dir = pg.socket_dir();
    drop(pg);
    assert!(
        !socket_dir.exists(),
        "the temp folder is removed on drop: {socket_dir:?}"
    );
}
