//! Stores held by PostgreSQL (`--store NAME=postgresql://...`), through the real binary
//! and a real PostgreSQL server (tests/common/pg.rs): several memdir processes on one
//! store, as when several agents share a memory; the database going away and coming
//! back; redaction reaching the database; export and import between a folder and
//! PostgreSQL; and URLs that are wrong, unreachable or carry a password.
//!
//! Every process here is an MCP client with its own `clientInfo` name, so the history
//! can tell them apart.

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Outcome, Sandbox, sha256_hex};
use pg::{PgServer, unique_db};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;

/// The longest any one tool call may take before the test calls it a hang.
const CALL_LIMIT: Duration = Duration::from_secs(20);
/// The longest a CLI command or a server start may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Harness: named MCP clients and the CLI, both bounded in time
// ---------------------------------------------------------------------------------------

/// A `memdir` server process driven by an MCP client named `NAME` (version `1.0`), so its
/// versions carry the actor `NAME/1.0`. Its stderr is collected as it comes.
struct Agent {
    client: RunningService<RoleClient, ClientConfig>,
    stderr: Arc<Mutex<String>>,
    drain: tokio::task::JoinHandle<()>,
}

/// How to start an agent's server.
struct Launch<'a> {
    args: Vec<String>,
    name: &'a str,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
}

impl<'a> Launch<'a> {
    fn new(args: &[String], name: &'a str) -> Launch<'a> {
        Launch {
            args: args.to_vec(),
            name,
            env: Vec::new(),
            cwd: None,
        }
    }

    fn env(mut self, key: &str, value: &str) -> Launch<'a> {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    fn cwd(mut self, dir: &Path) -> Launch<'a> {
        self.cwd = Some(dir.to_owned());
        self
    }

    /// Starts the server and completes the MCP handshake; on failure (the server exited
    /// or never answered) returns what it printed on stderr.
    async fn try_start(self) -> Result<Agent, String> {
        let cmd = tokio::process::Command::new(common::BIN).configure(|c| {
            c.args(&self.args).env("RUST_LOG", "memdir=warn").env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
            );
            for var in ["PGPASSWORD", "PGPASSFILE", "PGHOST", "PGPORT", "PGUSER"] {
                c.env_remove(var);
            }
            for (k, v) in &self.env {
                c.env(k, v);
            }
            // Never the repository: a spec mistaken for a relative folder lands here.
            c.current_dir(
                self.cwd
                    .as_deref()
                    .unwrap_or(Path::new(env!("CARGO_TARGET_TMPDIR"))),
            );
        });
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn memdir");
        let collected = Arc::new(Mutex::new(String::new()));
        let drain = {
            let collected = Arc::clone(&collected);
            let mut stderr = stderr.expect("stderr is piped");
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    collected
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        };
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name, "1.0"),
        );
        match tokio::time::timeout(COMMAND_LIMIT, info.serve(transport)).await {
            Ok(Ok(client)) => Ok(Agent {
                client,
                stderr: collected,
                drain,
            }),
            failed => {
                let why = match failed {
                    Ok(Err(e)) => format!("handshake failed: {e}"),
                    _ => format!("no handshake within {COMMAND_LIMIT:?}"),
                };
                let _ = tokio::time::timeout(Duration::from_secs(10), drain).await;
                let stderr = collected.lock().unwrap().clone();
                Err(format!("{why}; stderr:\n{stderr}"))
            }
        }
    }

    async fn start(self) -> Agent {
        let name = self.name.to_owned();
        self.try_start()
            .await
            .unwrap_or_else(|e| panic!("memdir server for {name} did not start: {e}"))
    }
}

impl Agent {
    async fn start(args: &[String], name: &str) -> Agent {
        Launch::new(args, name).start().await
    }

    /// Calls a tool, bounded by `limit`; `Err` for a protocol error or no answer in time.
    async fn try_call(&self, tool: &str, args: Value, limit: Duration) -> Result<Outcome, String> {
        let Value::Object(map) = args else {
            panic!("tool arguments must be an object")
        };
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(map);
        let result = match tokio::time::timeout(limit, self.client.call_tool(request)).await {
            Err(_) => return Err(format!("{tool}: no answer within {limit:?} (a hang)")),
            Ok(Err(e)) => return Err(format!("{tool}: protocol error {e}")),
            Ok(Ok(result)) => result,
        };
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Outcome {
            is_error: result.is_error.unwrap_or(false),
            text,
            structured: result.structured_content.unwrap_or(Value::Null),
        })
    }

    async fn call(&self, tool: &str, args: Value) -> Outcome {
        self.try_call(tool, args, CALL_LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        let out = self.call(tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args} failed: {}", out.text);
        out.structured
    }

    async fn err(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args.clone()).await;
        assert!(out.is_error, "{tool} {args} should fail, got: {}", out.text);
        out.text
    }

    /// Ends the session and returns everything the server printed on stderr.
    async fn stop(self) -> String {
        let _ = self.client.cancel().await;
        let _ = tokio::time::timeout(COMMAND_LIMIT, self.drain).await;
        self.stderr.lock().unwrap().clone()
    }
}

/// What a CLI command did.
struct Ran {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
}

impl Ran {
    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// `memdir ARGS` with `input` on stdin, run in `cwd` with `home` as its home folder and no
/// other environment; panics if it takes longer than COMMAND_LIMIT.
fn cli_in(cwd: &Path, home: &Path, args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Ran {
    let mut child = std::process::Command::new(common::BIN)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memdir");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let Some(status) = pg::child::wait_timeout(&mut child, COMMAND_LIMIT) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("memdir {args:?} did not finish within {COMMAND_LIMIT:?} (a hang)");
    };
    feeder.join().unwrap();
    Ran {
        ok: status.success(),
        stdout: out_reader.join().unwrap(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
    }
}

/// `memdir ARGS` in a fresh temp folder (also its home).
fn cli(args: &[&str], input: &[u8]) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    cli_in(tmp.path(), tmp.path(), args, input, &[])
}

/// `cli` that must succeed.
fn cli_ok(args: &[&str], input: &[u8]) -> Ran {
    let ran = cli(args, input);
    assert!(
        ran.ok,
        "memdir {args:?} failed: {}{}",
        ran.stderr,
        ran.out()
    );
    ran
}

/// A PostgreSQL server with one new database, and the `--store` spec of store `name` in it.
fn pg_store(label: &str) -> (PgServer, String) {
    let pg = PgServer::start();
    let db = unique_db(label);
    pg.create_db(&db);
    (pg, db)
}

/// Requires database `db` to hold memdir's tables with rows in them: the store was
/// served from PostgreSQL, not from a folder its URL was mistaken for.
fn assert_held_by(pg: &PgServer, db: &str) {
    let tables = pg.psql(
        db,
        "SELECT tablename FROM pg_tables WHERE tablename LIKE 'memdir\\_%' ORDER BY 1",
    );
    assert!(!tables.is_empty(), "memdir made no memdir_* tables in {db}");
    let rows: u64 = tables
        .lines()
        .map(|t| {
            pg.psql(db, &format!("SELECT count(*) FROM \"{t}\""))
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert!(rows > 0, "memdir's tables in {db} are empty: {tables}");
}

fn store_args(spec: &str) -> Vec<String> {
    vec!["--store".into(), spec.into()]
}

fn versions(r: &Value) -> Vec<Value> {
    r["versions"].as_array().expect("versions").clone()
}

/// Every version of `path` (newest first), following `next_cursor`.
async fn all_versions(agent: &Agent, path: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"path": path, "limit": 500});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = agent.ok("memory_history", args).await;
        all.extend(versions(&page));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return all,
        }
    }
}

// ---------------------------------------------------------------------------------------
// 0. The harness itself
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// 1. Several processes on one store
// ---------------------------------------------------------------------------------------

const PROCESSES: usize = 6;
const INCREMENTS: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn six_processes_increment_one_counter_to_exactly_240() {
    let (pg, db) = pg_store("counter");
    let args = store_args(&format!("memories={}", pg.url(&db)));
    let mut agents = Vec::new();
    for i in 0..PROCESSES {
        agents.push(Arc::new(Agent::start(&args, &format!("counter-{i}")).await));
    }
    agents[0]
        .ok(
            "memory_write",
            json!({"path": "counter.md", "content": "0"}),
        )
        .await;
    let conflicts = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for agent in &agents {
        let (agent, conflicts) = (Arc::clone(agent), Arc::clone(&conflicts));
        tasks.push(tokio::spawn(async move {
            for _ in 0..INCREMENTS {
                loop {
                    let r = agent.ok("memory_read", json!({"path": "counter.md"})).await;
                    let text = r["content"].as_str().unwrap();
                    let n: u64 = text
                        .parse()
                        .unwrap_or_else(|_| panic!("torn or foreign read: {text:?}"));
                    let out = agent
                        .call(
                            "memory_write",
                            json!({"path": "counter.md", "content": (n + 1).to_string(), "expected_sha256": r["content_sha256"]}),
                        )
                        .await;
                    // Retried on `isError` alone: a racer that read the same n as
                    // another writes the same n + 1, and must fail, not succeed as a no-op.
                    if !out.is_error {
                        break;
                    }
                    assert!(
                        out.text.contains("precondition failed"),
                        "a conflict, nothing else: {}",
                        out.text
                    );
                    conflicts.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total = PROCESSES as u64 * INCREMENTS;
    let conflicts = conflicts.load(Ordering::Relaxed);
    eprintln!("conflicts retried: {conflicts}");

    // A process that took no part reads the final value from the database.
    let fresh = Agent::start(&args, "checker").await;
    let r = fresh.ok("memory_read", json!({"path": "counter.md"})).await;
    assert_eq!(r["content"], total.to_string(), "no increment was lost");
    assert!(
        conflicts > 0,
        "the processes never raced, so the test proved nothing"
    );

    let history = all_versions(&fresh, "/memories/counter.md").await;
    assert_eq!(
        history.len() as u64,
        total + 1,
        "one version per increment plus the first write"
    );
    let mut numbers: Vec<u64> = history
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert!(
        numbers.windows(2).all(|w| w[0] > w[1]),
        "newest first, distinct"
    );
    numbers.sort();
    numbers.dedup();
    assert_eq!(numbers.len() as u64, total + 1);
    // Each process's increments are recorded as its own.
    let mut by_actor: BTreeMap<String, u64> = BTreeMap::new();
    for v in &history {
        *by_actor
            .entry(v["actor"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let mut expected: BTreeMap<String, u64> = (0..PROCESSES)
        .map(|i| (format!("counter-{i}/1.0"), INCREMENTS))
        .collect();
    *expected.get_mut("counter-0/1.0").unwrap() += 1;
    assert_eq!(by_actor, expected);
    // The versions hold the numbers 0..=240, each once: every content was recorded.
    let mut contents = Vec::new();
    for v in history.iter().step_by(37) {
        let one = fresh
            .ok(
                "memory_history",
                json!({"path": "/memories/counter.md", "version": v["version"]}),
            )
            .await;
        contents.push(one["content"].as_str().unwrap().parse::<u64>().unwrap());
    }
    assert_held_by(&pg, &db);
    assert!(contents.windows(2).all(|w| w[0] > w[1]), "{contents:?}");
    assert_eq!(contents[0], total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn six_create_only_writers_have_exactly_one_winner() {
    let (pg, db) = pg_store("create only");
    let args = store_args(&format!("memories={}", pg.url(&db)));
    let mut agents = Vec::new();
    for i in 0..6 {
        agents.push(Arc::new(Agent::start(&args, &format!("creator-{i}")).await));
    }
    for round in 0..4 {
        let path = format!("race/{round}.md");
        let barrier = Arc::new(tokio::sync::Barrier::new(agents.len()));
        let mut tasks = Vec::new();
        for (i, agent) in agents.iter().enumerate() {
            let (agent, barrier, path) = (Arc::clone(agent), Arc::clone(&barrier), path.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let out = agent
                    .call(
                        "memory_write",
                        json!({"path": path, "content": format!("writer {i}\n"), "if_absent": true}),
                    )
                    .await;
                (i, out)
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            let (i, out) = t.await.unwrap();
            if out.is_error {
                assert!(out.text.contains("already exists"), "{}", out.text);
            } else {
                assert_eq!(out.structured["created"], true, "{}", out.structured);
                winners.push(i);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        assert_held_by(&pg, &db);
        let r = agents[0].ok("memory_read", json!({"path": path})).await;
        assert_eq!(r["content"], format!("writer {}\n", winners[0]));
        let h = versions(&agents[0].ok("memory_history", json!({"path": path})).await);
        assert_eq!(h.len(), 1, "one creation recorded: {h:?}");
        assert_eq!(h[0]["actor"], format!("creator-{}/1.0", winners[0]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_one_process_is_found_by_the_next_search_in_another() {
    let (pg, db) = pg_store("search");
    let args = store_args(&format!("memories={}", pg.url(&db)));
    let a = Agent::start(&args, "writer").await;
    let b = Agent::start(&args, "searcher").await;
    // B has searched (and so built whatever it keeps) before A writes.
    let r = b.ok("memory_search", json!({"query": "quokka"})).await;
    assert_eq!(r["total_hits"], 0, "{r}");

    a.ok(
        "memory_write",
        json!({"path": "zoo/animals.md", "content": "The quokka lives on Rottnest Island.\n"}),
    )
    .await;
    let r = b.ok("memory_search", json!({"query": "quokka"})).await;
    assert_eq!(r["total_hits"], 1, "B sees A's write at once: {r}");
    assert_eq!(r["hits"][0]["path"], "/memories/zoo/animals.md");

    a.ok(
        "memory_write",
        json!({"path": "zoo/animals.md", "content": "The wombat digs burrows.\n"}),
    )
    .await;
    let r = b.ok("memory_search", json!({"query": "quokka"})).await;
    assert_eq!(r["total_hits"], 0, "the replaced word is gone: {r}");
    let r = b.ok("memory_search", json!({"query": "wombat"})).await;
    assert_eq!(r["total_hits"], 1, "{r}");

    a.ok(
        "memory_edit",
        json!({"path": "zoo/animals.md", "old_str": "wombat", "new_str": "numbat"}),
    )
    .await;
    let r = b.ok("memory_search", json!({"query": "wombat"})).await;
    assert_eq!(r["total_hits"], 0, "an edit is seen too: {r}");
    let r = b.ok("memory_search", json!({"query": "numbat"})).await;
    assert_eq!(r["total_hits"], 1, "{r}");

    a.ok(
        "memory_edit",
        json!({"path": "zoo/animals.md", "new_path": "/memories/park/animals.md"}),
    )
    .await;
    let r = b.ok("memory_search", json!({"query": "numbat"})).await;
    assert_eq!(r["hits"][0]["path"], "/memories/park/animals.md", "{r}");
    assert_eq!(r["total_hits"], 1, "{r}");

    assert_held_by(&pg, &db);
    a.ok("memory_delete", json!({"path": "/memories/park/"}))
        .await;
    let r = b.ok("memory_search", json!({"query": "numbat"})).await;
    assert_eq!(r["total_hits"], 0, "a deletion is seen: {r}");
    // Hidden names and node_modules are not searched, as in a folder store: not when
    // another process writes them, nor when a folder moves to a hidden name.
    for path in [
        "node_modules/pkg/readme.md",
        "notes/.secret/plan.md",
        "seen/echidna.md",
    ] {
        a.ok(
            "memory_write",
            json!({"path": path, "content": "The echidna lays eggs.\n"}),
        )
        .await;
    }
    let r = b.ok("memory_search", json!({"query": "echidna"})).await;
    assert_eq!(r["total_hits"], 1, "{r}");
    assert_eq!(r["hits"][0]["path"], "/memories/seen/echidna.md", "{r}");
    a.ok(
        "memory_edit",
        json!({"path": "/memories/seen/", "new_path": "/memories/.hidden"}),
    )
    .await;
    let r = b.ok("memory_search", json!({"query": "echidna"})).await;
    assert_eq!(r["total_hits"], 0, "{r}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_names_each_process_and_the_cli_as_actors() {
    let (pg, db) = pg_store("actors");
    let spec = format!("memories={}", pg.url(&db));
    let args = store_args(&spec);
    let alice = Agent::start(&args, "alice").await;
    let bob = Agent::start(&args, "bob").await;
    alice
        .ok(
            "memory_write",
            json!({"path": "plan.md", "content": "step one\n"}),
        )
        .await;
    bob.ok(
        "memory_edit",
        json!({"path": "plan.md", "append_text": "step two\n"}),
    )
    .await;
    let ran = cli_ok(
        &[
            "restore",
            "--store",
            &spec,
            "/memories/plan.md",
            "--version",
            "1",
        ],
        b"",
    );
    assert!(ran.out().contains("now version 3"), "{}", ran.out());
    alice
        .ok(
            "memory_edit",
            json!({"path": "plan.md", "new_path": "done/plan.md"}),
        )
        .await;

    for reader in [&alice, &bob] {
        let h = versions(
            &reader
                .ok("memory_history", json!({"path": "/memories/done/plan.md"}))
                .await,
        );
        let seen: Vec<(&str, &str)> = h
            .iter()
            .map(|v| {
                (
                    v["operation"].as_str().unwrap(),
                    v["actor"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("renamed", "alice/1.0"),
                ("modified", "cli"),
                ("modified", "bob/1.0"),
                ("created", "alice/1.0"),
            ],
            "{h:?}"
        );
    }
    assert_held_by(&pg, &db);
    let by_bob = versions(&alice.ok("memory_history", json!({"actor": "bob"})).await);
    assert_eq!(by_bob.len(), 1, "{by_bob:?}");
    // The CLI reads the same history.
    let ran = cli_ok(
        &[
            "history",
            "--store",
            &spec,
            "/memories/done/plan.md",
            "--json",
        ],
        b"",
    );
    let actors: Vec<String> = ran
        .out()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["actor"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(actors, ["alice/1.0", "cli", "bob/1.0", "alice/1.0"]);
    alice.stop().await;
    bob.stop().await;
}

// ---------------------------------------------------------------------------------------
// 2. The database going away
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_gives_tool_errors_and_the_same_server_recovers() {
    let (mut pg, db) = pg_store("outage");
    let args = store_args(&format!("memories={}", pg.url(&db)));
    let s = Agent::start(&args, "survivor").await;
    let acked = s
        .ok(
            "memory_write",
            json!({"path": "kept.md", "content": "acknowledged before the outage\n"}),
        )
        .await;
    s.ok(
        "memory_edit",
        json!({"path": "kept.md", "append_text": "and this edit too\n"}),
    )
    .await;

    assert_held_by(&pg, &db);
    pg.stop();
    let calls = [
        (
            "memory_write",
            json!({"path": "lost.md", "content": "written while the database is down\n"}),
        ),
        (
            "memory_edit",
            json!({"path": "kept.md", "append_text": "not while down\n"}),
        ),
        ("memory_read", json!({"path": "kept.md"})),
        ("memory_list", json!({})),
        ("memory_history", json!({"path": "kept.md"})),
        ("memory_delete", json!({"path": "kept.md"})),
    ];
    for (tool, args) in &calls {
        let started = Instant::now();
        let out = s
            .try_call(tool, args.clone(), CALL_LIMIT)
            .await
            .unwrap_or_else(|e| panic!("while the database is down: {e}"));
        assert!(
            out.is_error,
            "{tool} succeeded while the database was down: {}",
            out.text
        );
        let lower = out.text.to_lowercase();
        assert!(
            ["postgres", "database", "connect"]
                .iter()
                .any(|w| lower.contains(w)),
            "{tool}: the error says the database is unavailable: {}",
            out.text
        );
        eprintln!("{tool} failed in {:?}: {}", started.elapsed(), out.text);
    }
    // A search may be answered from what the server keeps, or fail: either, in time.
    s.try_call(
        "memory_search",
        json!({"query": "acknowledged"}),
        CALL_LIMIT,
    )
    .await
    .unwrap_or_else(|e| panic!("while the database is down: {e}"));

    pg.restart();
    // The same process reconnects by itself (it may take a few calls to notice).
    let deadline = Instant::now() + COMMAND_LIMIT;
    let read = loop {
        let out = s
            .try_call("memory_read", json!({"path": "kept.md"}), CALL_LIMIT)
            .await
            .unwrap_or_else(|e| panic!("after the restart: {e}"));
        if !out.is_error {
            break out.structured;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not recover within {COMMAND_LIMIT:?}: {}",
            out.text
        );
        // Retried at a calm pace until it recovers: the server reconnects lazily, on a
        // call, so there is no event to wait on.
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        read["content"], "acknowledged before the outage\nand this edit too\n",
        "every acknowledged write survived"
    );
    let e = s.err("memory_read", json!({"path": "lost.md"})).await;
    assert!(e.contains("lost.md"), "nothing failed was stored: {e}");
    let h = versions(&s.ok("memory_history", json!({"path": "kept.md"})).await);
    assert_eq!(h.len(), 2, "no version made while down: {h:?}");
    assert_eq!(h[1]["version"], acked["version"]);
    s.ok(
        "memory_write",
        json!({"path": "after.md", "content": "written after the restart\n"}),
    )
    .await;
    // Another process sees all of it.
    let other = Agent::start(&args, "other").await;
    let list = other.ok("memory_list", json!({})).await;
    let paths: Vec<&str> = list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/memories/after.md", "/memories/kept.md"], "{list}");
    let stderr = s.stop().await;
    assert!(
        !stderr.contains("panicked"),
        "the server did not panic: {stderr}"
    );
    other.stop().await;
}

/// Regression: with one store's database down, a list or search of every store failed
/// as a whole, so an agent lost the memories of the stores that were fine too. Those
/// calls now answer from the other stores and name the store they went without; a call
/// on that store alone still fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_database_down_calls_over_every_store_answer_from_the_others() {
    let (mut pg, db) = pg_store("partial");
    let folder = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "--store".to_owned(),
        format!("notes={}", folder.path().display()),
        "--store".to_owned(),
        format!("team={}", pg.url(&db)),
    ]
    .into();
    let s = Agent::start(&args, "partial").await;
    for (path, content) in [
        ("/notes/deploy.md", "the deploy runs on Fridays\n"),
        ("/team/deploy.md", "the team deploy needs two reviews\n"),
        ("/notes/paged/one.md", "a paged note\n"),
        ("/notes/paged/two.md", "a paged note too\n"),
    ] {
        s.ok("memory_write", json!({"path": path, "content": content}))
            .await;
    }
    let both = s.ok("memory_search", json!({"query": "deploy"})).await;
    assert_eq!(both["hits"].as_array().unwrap().len(), 2, "{both}");
    assert!(both.get("unavailable_stores").is_none(), "{both}");
    let paged = json!({"query": "paged", "limit": 1});
    let cursor_of_all = s.ok("memory_search", paged.clone()).await["next_cursor"].clone();

    pg.stop();
    let list = s.call("memory_list", json!({})).await;
    assert!(
        !list.is_error,
        "the folder store still answers: {}",
        list.text
    );
    let paths: Vec<&str> = list.structured["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "/notes/deploy.md",
            "/notes/paged/one.md",
            "/notes/paged/two.md"
        ],
        "{}",
        list.structured
    );
    let gone = &list.structured["unavailable_stores"];
    assert_eq!(gone[0]["store"], "/team", "{}", list.structured);
    assert!(
        gone[0]["reason"].as_str().unwrap().contains("database"),
        "{gone}"
    );
    assert!(
        list.text.starts_with("Store `/team` could not be read"),
        "the text says first which store is missing: {}",
        list.text
    );

    let found = s.call("memory_search", json!({"query": "deploy"})).await;
    assert!(
        !found.is_error,
        "the folder store is still searched: {}",
        found.text
    );
    let hits: Vec<&str> = found.structured["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert_eq!(hits, ["/notes/deploy.md"], "{}", found.structured);
    assert_eq!(found.structured["unavailable_stores"][0]["store"], "/team");
    // Nothing found in the stores that answered is not "no memory": the text says which
    // store was not searched.
    let none = s.call("memory_search", json!({"query": "reviews"})).await;
    assert!(!none.is_error, "{}", none.text);
    assert!(
        none.text.contains("`/team` could not be read") && none.text.contains("No memory matches"),
        "{}",
        none.text
    );

    // A cursor continues only over the stores that answered its first page: offsets
    // would skip or repeat hits otherwise.
    let mut next = paged.clone();
    next["cursor"] = cursor_of_all;
    let e = s.err("memory_search", next.clone()).await;
    assert!(e.contains("stores that answered"), "{e}");
    let first = s.ok("memory_search", paged.clone()).await;
    let cursor_while_down = first["next_cursor"].clone();
    next["cursor"] = cursor_while_down.clone();
    let second = s.ok("memory_search", next.clone()).await;
    assert_eq!(second["hits"].as_array().unwrap().len(), 1, "{second}");
    assert_ne!(second["hits"][0]["path"], first["hits"][0]["path"]);

    // The store alone fails, as before.
    for (tool, args) in [
        ("memory_list", json!({"path": "/team"})),
        ("memory_search", json!({"query": "deploy", "path": "/team"})),
    ] {
        let out = s.call(tool, args).await;
        assert!(
            out.is_error,
            "{tool} of the store that is down: {}",
            out.text
        );
    }

    // The command line: the folder store's memories on stdout, the missing store on
    // stderr.
    let store_flags: Vec<&str> = args.iter().map(String::as_str).collect();
    let ran = cli_ok(&[&["list"], &store_flags[..]].concat(), b"");
    assert!(ran.out().contains("/notes/deploy.md"), "{}", ran.out());
    assert!(
        ran.stderr.contains("store `/team` could not be read"),
        "{}",
        ran.stderr
    );
    // Nothing found is said of the stores that were read only.
    let ran = cli_ok(&[&["search", "zebra"], &store_flags[..]].concat(), b"");
    assert_eq!(
        ran.out(),
        "no memory matches \"zebra\" (not counting /team, which could not be read)\n"
    );

    // The console: the front page shows the store as unavailable (not as an empty store
    // offering an import), and a search says which store it did not search.
    let console = console_pages(&args, &["/", "/search?q=deploy"]).await;
    assert!(
        console[0].contains("Store /team could not be read")
            && console[0].contains("unavailable")
            && !console[0].contains("/import?store=team"),
        "{}",
        console[0]
    );
    assert!(
        console[1].contains("/notes/deploy.md")
            && console[1]
                .contains("Store /team could not be read, so its memories were not searched"),
        "{}",
        console[1]
    );

    pg.restart();
    let deadline = Instant::now() + COMMAND_LIMIT;
    loop {
        let list = s.call("memory_list", json!({})).await;
        if list.structured.get("unavailable_stores").is_none() && !list.is_error {
            assert_eq!(list.structured["total"], 4, "{}", list.structured);
            break;
        }
        assert!(Instant::now() < deadline, "not back: {}", list.text);
        // The server reconnects on a call, so there is no event to wait on.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    next["cursor"] = cursor_while_down;
    let e = s.err("memory_search", next).await;
    assert!(e.contains("stores that answered"), "{e}");
    s.stop().await;
}

/// Starts `memdir console ARGS` on a free port, signs in by its printed link, and
/// returns the pages at `paths` (each must answer 200).
async fn console_pages(args: &[String], paths: &[&str]) -> Vec<String> {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(common::BIN)
        .arg("console")
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--no-index"])
        .env("RUST_LOG", "memdir=warn")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn memdir console");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let link = tokio::time::timeout(COMMAND_LIMIT, stdout.next_line())
        .await
        .expect("the console's link in time")
        .unwrap()
        .expect("a line on stdout");
    let base = link.split("/?token=").next().unwrap().to_owned();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signed = client.get(&link).send().await.unwrap();
    let cookie = signed.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let mut pages = Vec::new();
    for path in paths {
        let r = client
            .get(format!("{base}{path}"))
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::OK, "{path}");
        pages.push(r.text().await.unwrap());
    }
    let _ = child.kill().await;
    pages
}

/// Regression: after PostgreSQL restarted, the first calls failed ("terminating connection
/// due to administrator command; nothing was changed") while the pool handed out the
/// connections the restart had closed, one per call. The very next call of every kind
/// must succeed, however many connections the pool held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_after_a_database_restart_succeeds_at_once() {
    let (mut pg, db) = pg_store("restart");
    let args = store_args(&format!("memories={}", pg.url(&db)));
    let s = Agent::start(&args, "steady").await;
    s.ok(
        "memory_write",
        json!({"path": "kept.md", "content": "before the restart\n"}),
    )
    .await;
    // Several calls at once, so the pool holds several connections.
    let memdir_connections = || {
        pg.psql(
            &db,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'memdir'",
        )
        .parse::<u32>()
        .unwrap()
    };
    let deadline = Instant::now() + COMMAND_LIMIT;
    while memdir_connections() < 3 {
        assert!(
            Instant::now() < deadline,
            "the pool never held 3 connections"
        );
        let reads = (0..8).map(|_| s.ok("memory_read", json!({"path": "kept.md"})));
        futures::future::join_all(reads).await;
    }
    let pooled = memdir_connections();

    pg.stop();
    pg.restart();
    // A write first: its lock is taken on a pooled connection the restart closed.
    for (tool, args) in [
        (
            "memory_write",
            json!({"path": "new.md", "content": "after the restart\n"}),
        ),
        ("memory_read", json!({"path": "kept.md"})),
        ("memory_list", json!({})),
        (
            "memory_edit",
            json!({"path": "kept.md", "append_text": "and after\n"}),
        ),
        ("memory_history", json!({"path": "kept.md"})),
        ("memory_search", json!({"query": "restart"})),
        ("memory_delete", json!({"path": "new.md"})),
        ("memory_read", json!({"path": "kept.md"})),
    ] {
        let out = s
            .try_call(tool, args.clone(), CALL_LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{tool} after the restart: {e}"));
        assert!(
            !out.is_error,
            "{tool} failed after the restart ({pooled} connections were pooled): {}",
            out.text
        );
    }
    let read = s.ok("memory_read", json!({"path": "kept.md"})).await;
    assert_eq!(read["content"], "before the restart\nand after\n");
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 3. Redaction reaches the database
// ---------------------------------------------------------------------------------------

/// Whether a `pg_dump` holds `text`, as text or as the hex pg_dump prints `bytea` in.
fn dump_holds(dump: &str, text: &str) -> bool {
    let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
    dump.contains(text) || dump.contains(&hex)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redaction_leaves_the_text_nowhere_in_the_database() {
    let (pg, db) = pg_store("redact");
    let spec = format!("memories={}", pg.url(&db));
    let s = Agent::start(&store_args(&spec), "leaker").await;
    let marker = "REDACTME-plum-harbor-5e0c1d";
    let leaked = s
        .ok(
            "memory_write",
            json!({"path": "ops/notes.md", "content": format!("the code is {marker}\n")}),
        )
        .await;
    s.ok(
        "memory_write",
        json!({"path": "ops/notes.md", "content": "rotated; see the vault\n"}),
    )
    .await;
    let r = s
        .ok("memory_search", json!({"query": "rotated vault"}))
        .await;
    assert_eq!(r["total_hits"], 1, "{r}");
    assert!(
        dump_holds(&pg.pg_dump(&db), marker),
        "before redaction the database holds the text (else this test proves nothing)"
    );

    let version = leaked["version"].to_string();
    let ran = cli_ok(
        &[
            "redact",
            "--store",
            &spec,
            "--version",
            &version,
            "memories",
        ],
        b"",
    );
    assert!(
        ran.out().contains(&format!("redacted version {version}")),
        "{}",
        ran.out()
    );
    let dump = pg.pg_dump(&db);
    assert!(
        !dump_holds(&dump, marker),
        "the redacted text is still in the database: {}",
        dump.lines()
            .filter(|l| dump_holds(l, marker))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Who and when are kept; the running server sees the redaction.
    let h = versions(
        &s.ok("memory_history", json!({"path": "ops/notes.md"}))
            .await,
    );
    assert_eq!(h.len(), 2, "{h:?}");
    assert_eq!(h[1]["version"], leaked["version"]);
    assert_eq!(h[1]["redacted"], true, "{h:?}");
    assert_eq!(h[1]["actor"], "leaker/1.0");
    let e = s
        .err(
            "memory_write",
            json!({"path": "ops/notes.md", "restore_version": leaked["version"]}),
        )
        .await;
    assert!(e.contains("redacted"), "{e}");
    let r = s.ok("memory_search", json!({"query": marker})).await;
    assert_eq!(r["total_hits"], 0, "{r}");
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// 4. Export and import between a folder and PostgreSQL
// ---------------------------------------------------------------------------------------

/// `history --json` of a store, one JSON object per version.
fn cli_history(spec: &str) -> Vec<Value> {
    cli_ok(
        &["history", "--store", spec, "/", "--json", "--limit", "500"],
        b"",
    )
    .out()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect()
}

/// `(path, content)` of every memory in a store, read through the CLI.
fn cli_contents(spec: &str) -> Vec<(String, String)> {
    let listed = cli_ok(&["list", "--store", spec, "/", "--json"], b"").out();
    let mut all = Vec::new();
    for line in listed.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        if entry["kind"] != "file" {
            continue;
        }
        let path = entry["path"].as_str().unwrap().to_owned();
        let read: Value =
            serde_json::from_str(&cli_ok(&["read", "--store", spec, &path, "--json"], b"").out())
                .unwrap();
        let content = read["content"].as_str().unwrap().to_owned();
        assert_eq!(read["content_sha256"], sha256_hex(content.as_bytes()));
        all.push((path, content));
    }
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_import_move_a_store_between_a_folder_and_postgresql() {
    let sb = Sandbox::new();
    let folder = format!("memories={}", sb.store().display());
    // A history with every kind of operation, by an agent and by the CLI.
    let s = Agent::start(&store_args(&folder), "author").await;
    s.ok(
        "memory_write",
        json!({"path": "notes/a.md", "content": "first\n"}),
    )
    .await;
    s.ok(
        "memory_edit",
        json!({"path": "notes/a.md", "append_text": "second, ünïcode 数据库\n"}),
    )
    .await;
    s.ok(
        "memory_edit",
        json!({"path": "notes/a.md", "new_path": "notes/b.md"}),
    )
    .await;
    let gone = s
        .ok(
            "memory_write",
            json!({"path": "gone.md", "content": "---\nname: gone\ndescription: deleted then restored\n---\nbody\n"}),
        )
        .await;
    s.ok(
        "memory_delete",
        json!({"path": "gone.md", "reason": "superseded"}),
    )
    .await;
    s.stop().await;
    cli_ok(
        &[
            "restore",
            "--store",
            &folder,
            "gone.md",
            "--version",
            &gone["version"].to_string(),
        ],
        b"",
    );
    let original_history = cli_history(&folder);
    assert_eq!(original_history.len(), 6, "{original_history:?}");
    let original_contents = cli_contents(&folder);
    assert_eq!(original_contents.len(), 2, "{original_contents:?}");

    let archive = cli_ok(&["export", "--store", &folder], b"").stdout;

    let (pg, db) = pg_store("import");
    let postgres = format!("memories={}", pg.url(&db));
    let ran = cli_ok(&["import", "--store", &postgres], &archive);
    assert!(
        ran.out().contains("imported 2 memories and 6 versions"),
        "{}",
        ran.out()
    );
    assert_held_by(&pg, &db);
    assert_eq!(cli_history(&postgres), original_history);
    assert_eq!(cli_contents(&postgres), original_contents);
    // Each memory keeps its age: the file's time, to the second.
    let ages = |spec: &str| -> Vec<(String, String)> {
        cli_ok(&["list", "--store", spec, "/", "--json"], b"")
            .out()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|e| {
                let at = e["updated_at"].as_str().unwrap()[..19].to_owned();
                (e["path"].as_str().unwrap().to_owned(), at)
            })
            .collect()
    };
    assert_eq!(ages(&postgres), ages(&folder));
    // The imported history is whole: an old version restores from it.
    let s = Agent::start(&store_args(&postgres), "checker").await;
    let r = s
        .ok(
            "memory_write",
            json!({"path": "again.md", "restore_version": 1}),
        )
        .await;
    assert_eq!(r["created"], true);
    assert_eq!(
        s.ok("memory_read", json!({"path": "again.md"})).await["content"],
        "first\n"
    );
    let r = s.ok("memory_search", json!({"query": "数据库"})).await;
    assert_eq!(r["hits"][0]["path"], "/memories/notes/b.md", "{r}");
    s.stop().await;
    // Never over something: a store with memories refuses, unchanged.
    let refused = cli(&["import", "--store", &postgres], &archive);
    assert!(
        !refused.ok && refused.stderr.contains("already has memories"),
        "{}",
        refused.stderr
    );

    // And back: PostgreSQL to a new folder.
    let back_dir = sb.tmp.path().join("back");
    let back = format!("memories={}", back_dir.display());
    let archive = cli_ok(&["export", "--store", &postgres], b"").stdout;
    cli_ok(&["import", "--store", &back], &archive);
    assert_eq!(cli_history(&back), cli_history(&postgres));
    assert_eq!(cli_contents(&back), cli_contents(&postgres));
    assert_eq!(
        std::fs::read_to_string(back_dir.join("notes/b.md")).unwrap(),
        "first\nsecond, ünïcode 数据库\n"
    );
    let check = cli(&["check", "--store", &back], b"");
    assert!(check.ok, "{}{}", check.out(), check.stderr);
    let check = cli(&["check", "--store", &postgres], b"");
    assert!(check.ok, "{}{}", check.out(), check.stderr);
}

// ---------------------------------------------------------------------------------------
// 5. Store specs: never a folder, several stores per database, bad URLs
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_store_is_never_a_local_folder_and_one_database_holds_several() {
    let (pg, db) = pg_store("several");
    let cwd = tempfile::tempdir().unwrap();
    let url = pg.url(&db);
    let args: Vec<String> = vec![
        "--store".into(),
        format!("work={url}"),
        "--store".into(),
        format!("home={url}"),
    ];
    let s = Launch::new(&args, "two").cwd(cwd.path()).start().await;
    s.ok(
        "memory_write",
        json!({"path": "/work/a.md", "content": "work only\n"}),
    )
    .await;
    s.ok(
        "memory_write",
        json!({"path": "/home/a.md", "content": "home only\n"}),
    )
    .await;
    assert_eq!(
        s.ok("memory_read", json!({"path": "/work/a.md"})).await["content"],
        "work only\n"
    );
    assert_eq!(
        s.ok("memory_read", json!({"path": "/home/a.md"})).await["content"],
        "home only\n"
    );
    let r = s
        .ok("memory_search", json!({"query": "only", "path": "/work/"}))
        .await;
    assert_eq!(r["total_hits"], 1, "{r}");
    s.stop().await;

    // Each store sees only its own memories and history.
    let only_home = Launch::new(&store_args(&format!("home={url}")), "home")
        .cwd(cwd.path())
        .start()
        .await;
    let list = only_home.ok("memory_list", json!({})).await;
    assert_eq!(list["entries"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["entries"][0]["path"], "/home/a.md");
    let h = versions(&only_home.ok("memory_history", json!({})).await);
    assert_eq!(h.len(), 1, "{h:?}");
    only_home.stop().await;
    // And read-only through `:ro`, in the CLI too.
    let ran = cli_in(
        cwd.path(),
        cwd.path(),
        &["list", "--store", &format!("work={url}:ro"), "--json"],
        b"",
        &[],
    );
    assert!(ran.ok && ran.out().contains("/work/a.md"), "{}", ran.stderr);

    let left: Vec<_> = std::fs::read_dir(cwd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "cache")
        .collect();
    assert!(
        left.is_empty(),
        "memdir made {left:?} in its working folder"
    );
    // memdir's own tables, and nothing else.
    let tables = pg.psql(
        &db,
        "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    );
    assert!(!tables.is_empty(), "memdir made no tables");
    for table in tables.split(',') {
        assert!(
            table.starts_with("memdir_"),
            "a table not named memdir_*: {table}"
        );
    }
}

/// Passwords that must never be printed.
const PASSWORDS: [&str; 3] = ["s3cretPW", "s3cretEnvPW", "s3cretFilePW"];

fn assert_no_password(what: &str, text: &str) {
    for password in PASSWORDS {
        assert!(
            !text.contains(password),
            "{what} prints the password {password}: {text}"
        );
    }
}

fn assert_clear(what: &str, text: &str) {
    let lower = text.to_lowercase();
    assert!(
        ["postgres", "database", "connect"]
            .iter()
            .any(|w| lower.contains(w)),
        "{what} does not say what is wrong: {text:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_or_unreachable_urls_fail_clearly_in_time_and_never_print_a_password() {
    let pg = PgServer::start();
    let closed = pg::free_port();
    let silent = silent_listener();
    let home = tempfile::tempdir().unwrap();
    let pgpass = home.path().join(".pgpass");
    std::fs::write(&pgpass, "*:*:*:*:s3cretFilePW\n").unwrap();
    std::fs::set_permissions(&pgpass, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let cases = [
        (
            "unreachable TCP port",
            format!("postgresql://postgres:s3cretPW@127.0.0.1:{closed}/memdir"),
        ),
        (
            "no server on the socket",
            format!(
                "postgresql://postgres:s3cretPW@/memdir?host={}&port={closed}",
                pg.socket_dir().display()
            ),
        ),
        (
            "database does not exist",
            format!(
                "postgresql://postgres:s3cretPW@/no_such_db?host={}&port={}",
                pg.socket_dir().display(),
                pg.port()
            ),
        ),
        (
            "malformed URL",
            "postgresql://postgres:s3cretPW@[::1/memdir".to_owned(),
        ),
        (
            "a server that accepts and never answers",
            format!("postgresql://postgres:s3cretPW@127.0.0.1:{silent}/memdir"),
        ),
    ];
    for (label, url) in &cases {
        let spec = format!("memories={url}");
        let cwd = tempfile::tempdir().unwrap();
        let env = [
            ("PGPASSWORD", "s3cretEnvPW"),
            ("PGPASSFILE", pgpass.to_str().unwrap()),
        ];

        // The CLI fails, in time, saying why.
        let ran = cli_in(
            cwd.path(),
            home.path(),
            &["list", "--store", &spec],
            b"",
            &env,
        );
        assert!(!ran.ok, "{label}: memdir list succeeded: {}", ran.out());
        assert_clear(&format!("{label}: memdir list"), &ran.stderr);
        assert_no_password(&format!("{label}: memdir list"), &ran.stderr);

        // The server either refuses to start or answers each call with an error.
        let launch = Launch::new(&store_args(&spec), "prober")
            .cwd(cwd.path())
            .env("HOME", home.path().to_str().unwrap())
            .env("PGPASSWORD", "s3cretEnvPW")
            .env("PGPASSFILE", pgpass.to_str().unwrap())
            .env("RUST_LOG", "debug");
        match launch.try_start().await {
            Err(stderr) => {
                assert_clear(&format!("{label}: server start-up"), &stderr);
                assert_no_password(&format!("{label}: server start-up"), &stderr);
            }
            Ok(s) => {
                for (tool, args) in [
                    ("memory_list", json!({})),
                    ("memory_write", json!({"path": "a.md", "content": "x"})),
                ] {
                    let out = s
                        .try_call(tool, args, CALL_LIMIT)
                        .await
                        .unwrap_or_else(|e| panic!("{label}: {e}"));
                    assert!(out.is_error, "{label}: {tool} succeeded: {}", out.text);
                    assert_clear(&format!("{label}: {tool}"), &out.text);
                    assert_no_password(&format!("{label}: {tool}"), &out.text);
                }
                let stderr = s.stop().await;
                assert_no_password(&format!("{label}: server log"), &stderr);
            }
        }
        let left: Vec<_> = walk_names(cwd.path());
        assert!(
            left.is_empty(),
            "{label}: memdir made {left:?} in its working folder"
        );
    }
}

/// The port of a listener that accepts every connection and never sends a byte (the
/// connections are kept open for the rest of the test process).
fn silent_listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    port
}

/// A TCP relay to a PostgreSQL socket that can stop passing bytes, both ways, while every
/// connection stays open: what memdir sees of a database whose host froze.
struct Relay {
    port: u16,
    frozen: Arc<(Mutex<bool>, std::sync::Condvar)>,
    /// When set, the relay freezes as it passes a chunk from memdir holding these bytes
    /// (holding that chunk back).
    freeze_at: Arc<Mutex<Option<&'static [u8]>>>,
    /// When set, the relay closes the connection instead of passing a chunk from memdir
    /// holding these bytes: the server never sees it, memdir never hears back.
    cut_at: Arc<Mutex<Option<&'static [u8]>>>,
}

/// What a pump watches for in memdir's bytes: `(freeze at, cut at)`, and how to cut.
type Triggers = (
    Arc<Mutex<Option<&'static [u8]>>>,
    Arc<Mutex<Option<&'static [u8]>>>,
    Box<dyn Fn() + Send>,
);

impl Relay {
    fn start(socket: PathBuf) -> Relay {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let freeze_at = Arc::new(Mutex::new(None));
        let cut_at = Arc::new(Mutex::new(None));
        let (gate, trigger, cutter) = (
            Arc::clone(&frozen),
            Arc::clone(&freeze_at),
            Arc::clone(&cut_at),
        );
        std::thread::spawn(move || {
            for down in listener.incoming().flatten() {
                let Ok(up) = std::os::unix::net::UnixStream::connect(&socket) else {
                    continue;
                };
                let (down2, up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
                let (g1, g2) = (Arc::clone(&gate), Arc::clone(&gate));
                let (down3, up3) = (down.try_clone().unwrap(), up.try_clone().unwrap());
                let cut = Box::new(move || {
                    let _ = down3.shutdown(std::net::Shutdown::Both);
                    let _ = up3.shutdown(std::net::Shutdown::Both);
                });
                let t1 = Some((Arc::clone(&trigger), Arc::clone(&cutter), cut as _));
                std::thread::spawn(move || pump(down, up, g1, t1));
                std::thread::spawn(move || pump(up2, down2, g2, None));
            }
        });
        Relay {
            port,
            frozen,
            freeze_at,
            cut_at,
        }
    }

    /// Closes the connection at the next chunk from memdir that holds `bytes`, which is
    /// not passed on.
    fn cut_at(&self, bytes: &'static [u8]) {
        *self.cut_at.lock().unwrap() = Some(bytes);
    }

    /// Freezes at the next chunk from memdir that holds `bytes`.
    fn freeze_at(&self, bytes: &'static [u8]) {
        *self.freeze_at.lock().unwrap() = Some(bytes);
    }

    fn set_frozen(&self, frozen: bool) {
        *self.frozen.0.lock().unwrap() = frozen;
        self.frozen.1.notify_all();
    }
}

/// Copies `from` to `to`, holding each chunk while the gate says frozen; a chunk holding
/// the bytes `trigger` names closes the gate first.
fn pump(
    mut from: impl std::io::Read,
    mut to: impl std::io::Write,
    gate: Arc<(Mutex<bool>, std::sync::Condvar)>,
    triggers: Option<Triggers>,
) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            // memdir closed its side: so does the relay, toward the server too.
            if let Some((_, _, cutting)) = &triggers {
                cutting();
            }
            break;
        }
        let (lock, thawed) = &*gate;
        if let Some((freeze, cut, cutting)) = &triggers {
            let holds = |armed: &Option<&[u8]>| {
                armed.is_some_and(|t| buf[..n].windows(t.len()).any(|w| w == t))
            };
            let mut armed = cut.lock().unwrap();
            if holds(&armed) {
                *armed = None;
                cutting();
                break;
            }
            let mut armed = freeze.lock().unwrap();
            if holds(&armed) {
                *armed = None;
                *lock.lock().unwrap() = true;
            }
        }
        drop(thawed.wait_while(lock.lock().unwrap(), |f| *f).unwrap());
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}

/// Regression: a store whose database was away at start, then came back without the TLS
/// its URL requires, failed every call with "cannot reach the database … memdir
/// reconnects by itself", an outage to wait out. The error now names TLS and `sslmode`.
/// And, as libpq, a local socket never uses TLS, whatever `sslmode` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_that_fails_after_the_start_is_named_and_sockets_ignore_sslmode() {
    let (pg, db) = pg_store("tlslater");
    let socket_require = format!(
        "memories=postgresql://postgres@/{db}?host={}&port={}&sslmode=require",
        pg.socket_dir().display(),
        pg.port()
    );
    cli_ok(&["list", "--store", &socket_require], b"");

    // Through the relay, the server offers no TLS (a socket behind it).
    let relay = Relay::start(pg.socket_dir().join(format!(".s.PGSQL.{}", pg.port())));
    relay.set_frozen(true);
    let url = format!(
        "memories=postgresql://postgres@127.0.0.1:{}/{db}?sslmode=require",
        relay.port
    );
    let s = Agent::start(&store_args(&url), "tls-later").await;
    relay.set_frozen(false);
    let e = s.err("memory_list", json!({"path": "/memories"})).await;
    assert!(
        e.contains("TLS") && e.contains("sslmode") && !e.contains("reconnects by itself"),
        "{e}"
    );
    s.stop().await;
}

/// Regression: an import whose commit went unanswered (the connection lost as the
/// `COMMIT` went out) printed "imported" and exited 0, while nothing was stored. It must
/// fail, saying the import may or may not have been stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_whose_commit_goes_unanswered_fails_and_says_so() {
    let (pg, db) = pg_store("cutimport");
    let direct = format!("memories={}", pg.url(&db));
    // The tables first, directly: the import's own commit is the one cut.
    cli_ok(&["list", "--store", &direct], b"");
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("kept.md"), "a memory to move\n").unwrap();
    let folder = format!("memories={}", sb.store().display());
    let archive = cli_ok(&["export", "--store", &folder], b"").stdout;

    let relay = Relay::start(pg.socket_dir().join(format!(".s.PGSQL.{}", pg.port())));
    let through = format!(
        "memories=postgresql://postgres@127.0.0.1:{}/{db}?sslmode=disable",
        relay.port
    );
    relay.cut_at(b"COMMIT");
    let ran = cli(&["import", "--store", &through], &archive);
    assert!(
        !ran.ok,
        "the import said it worked: {}{}",
        ran.out(),
        ran.stderr
    );
    assert!(
        ran.stderr.contains("may or may not have been stored") && !ran.out().contains("imported"),
        "{}{}",
        ran.out(),
        ran.stderr
    );
    // The commit never reached the server.
    let listed = cli_ok(&["list", "--store", &direct], b"").out();
    assert!(listed.starts_with("no memories"), "{listed}");
}

/// Regression: a database that stopped answering (its host frozen: the socket stays open,
/// nothing comes back) hung every call that used it, for ever, and the server start with
/// it. Each call must now fail within the answer time-out, saying the database did not
/// answer, and the same server must work again once the database answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_stops_answering_fails_calls_in_bounded_time_and_recovers() {
    let (mut pg, db) = pg_store("frozen");
    let relay = Relay::start(pg.socket_dir().join(format!(".s.PGSQL.{}", pg.port())));
    let url = format!(
        "postgresql://postgres@127.0.0.1:{}/{db}?sslmode=disable",
        relay.port
    );
    let args = store_args(&format!("memories={url}"));
    let s = Agent::start(&args, "patient").await;
    s.ok(
        "memory_write",
        json!({"path": "kept.md", "content": "written before the freeze\n"}),
    )
    .await;
    assert_held_by(&pg, &db);

    relay.set_frozen(true);
    // The answer time-out (40 s) and then some; never unbounded. Once a call found the
    // database silent, the next ones check their connection first and fail at once
    // rather than each waiting the whole time-out on another pooled connection.
    let limit = Duration::from_secs(90);
    for (tool, args, limit) in [
        ("memory_read", json!({"path": "kept.md"}), limit),
        (
            "memory_write",
            json!({"path": "frozen.md", "content": "written while frozen\n"}),
            CALL_LIMIT,
        ),
        ("memory_list", json!({}), CALL_LIMIT),
    ] {
        let started = Instant::now();
        let out = s
            .try_call(tool, args, limit)
            .await
            .unwrap_or_else(|e| panic!("while the database is frozen: {e}"));
        assert!(out.is_error, "{tool} succeeded while frozen: {}", out.text);
        // The read meets the pooled connection, which stops answering; the write then
        // finds no connection that can be made.
        let why = if tool == "memory_read" {
            out.text.contains("did not answer within 40 s")
        } else {
            out.text.contains("did not answer") || out.text.contains("cannot reach the database")
        };
        assert!(
            why && out.text.contains("retry"),
            "{tool}: the error says the database did not answer and what to do: {}",
            out.text
        );
        eprintln!("{tool} failed in {:?}: {}", started.elapsed(), out.text);
    }
    // A server starting meanwhile starts, in time, and fails its calls the same way.
    let late = Agent::start(&args, "late").await;
    let out = late
        .try_call("memory_list", json!({}), limit)
        .await
        .unwrap_or_else(|e| panic!("a server started while frozen: {e}"));
    assert!(
        out.is_error,
        "memory_list succeeded while frozen: {}",
        out.text
    );

    // The database answers again and restarts within the minute of checks: the pooled
    // connections the silent check meets are closed, and are passed over for one that
    // answers. (Thawed first: a connection whose start-up packet the relay held would
    // keep its server process, and the server's shutdown, waiting for it.)
    relay.set_frozen(false);
    pg.stop();
    pg.restart();
    let read = s.ok("memory_read", json!({"path": "kept.md"})).await;
    assert_eq!(read["content"], "written before the freeze\n");
    let list = late.ok("memory_list", json!({})).await;
    assert_eq!(list["entries"].as_array().map(Vec::len), Some(1), "{list}");

    // Frozen at the very commit of a change: the server may have stored it, so the
    // error must not say that nothing was changed.
    relay.freeze_at(b"COMMIT");
    let out = s
        .try_call(
            "memory_edit",
            json!({"path": "kept.md", "append_text": "appended as the database froze\n"}),
            limit,
        )
        .await
        .unwrap_or_else(|e| panic!("frozen at the commit: {e}"));
    assert!(out.is_error, "the edit succeeded: {}", out.text);
    assert!(
        out.text.contains("did not confirm the change")
            && out.text.contains("may or may not have been stored")
            && !out.text.contains("nothing was changed"),
        "the error says the change is unconfirmed: {}",
        out.text
    );
    relay.set_frozen(false);
    s.ok("memory_read", json!({"path": "kept.md"})).await;
    for agent in [s, late] {
        let stderr = agent.stop().await;
        assert!(!stderr.contains("panicked"), "no panic: {stderr}");
    }
}

/// Every entry under `dir`, as paths relative to it.
fn walk_names(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            names.push(
                e.path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    names
}

// ---------------------------------------------------------------------------------------
// TLS to the database
// ---------------------------------------------------------------------------------------

/// Whether memdir's connections (application_name `memdir`) to `db` use TLS, as the
/// server sees them.
fn memdir_connections_encrypted(pg: &PgServer, db: &str) -> Vec<String> {
    pg.psql(
        db,
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'memdir' AND a.datname = current_database()",
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_the_database_is_used_and_checked_as_sslmode_asks() {
    let (mut pg, db) = pg_store("tls");
    let ca = pg.enable_tls();
    let ca = ca.display().to_string();

    // verify-full against the CA, by the certificate's name: served, and encrypted.
    let url = pg.tcp_url(
        "localhost",
        &db,
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let s = Agent::start(&store_args(&format!("memories={url}")), "tls-agent").await;
    s.ok(
        "memory_write",
        json!({"path": "tls.md", "content": "over an encrypted connection\n"}),
    )
    .await;
    let seen = memdir_connections_encrypted(&pg, &db);
    assert!(
        !seen.is_empty() && seen.iter().all(|ssl| ssl == "t"),
        "memdir's connections must be encrypted: {seen:?}"
    );
    drop(s);

    // require: encrypted without checking the certificate; disable: not encrypted.
    for (params, want) in [("sslmode=require", "t"), ("sslmode=disable", "f")] {
        let url = pg.tcp_url("127.0.0.1", &db, params);
        let s = Agent::start(&store_args(&format!("memories={url}")), "tls-mode").await;
        let r = s.ok("memory_read", json!({"path": "tls.md"})).await;
        assert!(r["content"].as_str().unwrap().contains("encrypted"), "{r}");
        let seen = memdir_connections_encrypted(&pg, &db);
        assert!(
            seen.iter().any(|ssl| ssl == want),
            "{params}: want a connection with ssl={want}, saw {seen:?}"
        );
    }

    // verify-full refuses a name the certificate does not carry; verify-ca accepts it
    // (the chain is what it checks); an unknown CA is refused. Start-up says why.
    let wrong_name = pg.tcp_url(
        "127.0.0.1",
        &db,
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let ran = cli(&["--store", &format!("m={wrong_name}"), "list"], b"");
    assert!(!ran.ok, "verify-full with a wrong name must fail");
    assert!(ran.stderr.contains("not valid for name"), "{}", ran.stderr);
    let chain_only = pg.tcp_url(
        "127.0.0.1",
        &db,
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    );
    cli_ok(&["--store", &format!("m={chain_only}"), "list"], b"");
    let other_ca = tempfile::tempdir().unwrap();
    let other = other_ca.path().join("other.crt");
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=someone else"])
        .arg("-keyout")
        .arg(other_ca.path().join("other.key"))
        .arg("-out")
        .arg(&other)
        .output()
        .unwrap();
    assert!(made.status.success());
    let unknown = pg.tcp_url(
        "localhost",
        &db,
        &format!("sslmode=verify-full&sslrootcert={}", other.display()),
    );
    let ran = cli(&["--store", &format!("m={unknown}"), "list"], b"");
    assert!(!ran.ok, "a certificate from an unknown CA must be refused");
    assert!(ran.stderr.contains("TLS"), "{}", ran.stderr);
    // A server refuses to start with TLS that fails: a setting to fix, which would
    // otherwise read as a database that is down, call after call.
    for url in [&unknown, &wrong_name] {
        match Launch::new(&store_args(&format!("m={url}")), "tls-refused")
            .try_start()
            .await
        {
            Ok(s) => {
                let out = s.call("memory_list", json!({})).await;
                panic!(
                    "the server started with failing TLS; a call says: {}",
                    out.text
                );
            }
            Err(stderr) => assert!(
                stderr.contains("TLS") && stderr.contains("sslmode"),
                "start-up names TLS and the setting: {stderr}"
            ),
        }
    }
    // A mode libpq does not have is refused before connecting.
    let ran = cli(
        &[
            "--store",
            &format!("m={}", pg.tcp_url("localhost", &db, "sslmode=maybe")),
            "list",
        ],
        b"",
    );
    assert!(
        !ran.ok && ran.stderr.contains("sslmode `maybe`"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memdir_migrates_its_schema_and_refuses_a_newer_one() {
    let (pg, db) = pg_store("schema");
    let spec = format!("memories={}", pg.url(&db));
    // A read-only store on a database memdir never used is refused: nothing to read, and
    // a read-only store does not create tables.
    let ran = cli(&["--store", &format!("{spec}:ro"), "list"], b"");
    assert!(
        !ran.ok,
        "a read-only store on an empty database must not start"
    );
    assert!(ran.stderr.contains("no memdir tables"), "{}", ran.stderr);
    // The first read-write use creates the tables at the version this binary writes.
    cli_ok(&["--store", &spec, "list"], b"");
    let version = pg.psql(&db, "SELECT max(version) FROM memdir_schema");
    assert!(version.parse::<i32>().is_ok_and(|v| v >= 1), "{version}");
    // A schema from a newer memdir is refused with what to do, and left as it was.
    pg.psql(&db, "INSERT INTO memdir_schema (version) VALUES (999)");
    let ran = cli(&["--store", &spec, "list"], b"");
    assert!(!ran.ok, "a newer schema must be refused");
    assert!(
        ran.stderr.contains("newer than this memdir knows")
            && ran.stderr.contains("upgrade memdir"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        pg.psql(&db, "SELECT max(version) FROM memdir_schema"),
        "999"
    );
}
