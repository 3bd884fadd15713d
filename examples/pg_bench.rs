//! memdir's store benchmark: a folder store against a PostgreSQL store. A program, not a
//! test (never part of `cargo test`).
//!
//! ```text
//! cargo build --release --features external-tests --examples --bin memdir \
//!     && target/release/examples/pg_bench \
//!     [--quick] [--iterations N] [--corpus N] [--queries N] [--trials N]
//!     [--procs N] [--ops N] [--cold-runs N] [--bin PATH] [--no-statements]
//! ```
//!
//! It starts a private PostgreSQL (Debian's binaries, a cluster in a temp folder, a Unix
//! socket only; see `common/pg.rs`), then drives the real `memdir` binary over stdio with
//! rmcp's client, as an agent's host does, once on a folder store and once on a store in
//! that database (`--store NAME=postgresql://postgres@/bench?host=SOCKDIR&port=PORT`), and
//! prints, for both:
//!
//! 1. `memory_write` / `memory_read` / `memory_search` round trips (p50, p99);
//! 2. search over a 10,000-memory multilingual corpus per query kind, and PG/folder;
//! 3. the time from one process's write reply to another process's first search hit;
//! 4. a cold start on the 10,000-memory store: spawn → initialize → first search answered,
//!    with the local search index already built and without one;
//! 5. 8 processes × 1,000 mixed operations: ops/s, and the final state verified;
//!
//! then the targets of issue 18 with PASS/FAIL. With PostgreSQL's `pg_stat_statements`
//! (loaded unless `--no-statements`), it also counts the SQL statements (round trips)
//! each kind of call costs and shows the busiest ones.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

#[path = "common/host.rs"]
mod host;
#[path = "../tests/common/pg.rs"]
mod pg;
#[path = "common/stats.rs"]
mod stats;

use host::memdir_bin;
use pg::PgServer;
use stats::Stats;

type Client = RunningService<RoleClient, ()>;

const TARGET_READ_P50_MS: f64 = 1.0;
const TARGET_WRITE_P50_MS: f64 = 3.0;
const TARGET_SEARCH_RATIO: f64 = 2.0;
const TARGET_VISIBLE_P99_MS: f64 = 50.0;
const TARGET_COLD_START_MS: f64 = 5000.0;

/// The database every PostgreSQL store of the run lives in (one store name per section).
const DB: &str = "bench";

/// How long process B keeps searching for process A's word before the trial is a miss.
const VISIBLE_GIVE_UP: Duration = Duration::from_secs(5);

#[derive(Debug, Parser)]
#[command(about = "memdir benchmark: folder store vs PostgreSQL store")]
struct Args {
    /// Smaller sizes everywhere (a minute or two): 200 round trips, a 2,000-memory
    /// corpus, 50 visibility trials, 8 x 200 ops. Explicit flags still win.
    #[arg(long)]
    quick: bool,
    /// Round trips per write / read / search measurement (default 1,000).
    #[arg(long)]
    iterations: Option<usize>,
    /// Memories in the search corpus (default 10,000).
    #[arg(long)]
    corpus: Option<usize>,
    /// Searches per query kind over the corpus (default 100).
    #[arg(long)]
    queries: Option<usize>,
    /// Cross-process visibility trials (default 200).
    #[arg(long)]
    trials: Option<usize>,
    /// Processes in the throughput run.
    #[arg(long, default_value_t = 8)]
    procs: usize,
    /// Operations per process in the throughput run (default 1,000).
    #[arg(long)]
    ops: Option<usize>,
    /// Cold starts timed per store and index state (default 5).
    #[arg(long)]
    cold_runs: Option<usize>,
    /// The memdir binary (default: $MEMDIR_BIN, else target/release/memdir).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Do not load pg_stat_statements (no statement counts).
    #[arg(long)]
    no_statements: bool,
}

/// The sizes of one run.
struct Plan {
    bin: PathBuf,
    work: PathBuf,
    iterations: usize,
    corpus: usize,
    queries: usize,
    trials: usize,
    procs: usize,
    ops: usize,
    cold_runs: usize,
    statements: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Folder,
    Pg,
}

const KINDS: [Kind; 2] = [Kind::Folder, Kind::Pg];

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Folder => "folder",
            Kind::Pg => "postgres",
        }
    }
}

/// Where the stores of the run are.
struct Env {
    plan: Plan,
    pg: PgServer,
    url: String,
    spawned: AtomicUsize,
}

impl Env {
    /// The `--store` value of store `name` of kind `kind`.
    fn spec(&self, kind: Kind, name: &str) -> String {
        match kind {
            Kind::Folder => format!("{name}={}", self.folder(name).display()),
            Kind::Pg => format!("{name}={}", self.url),
        }
    }

    fn folder(&self, name: &str) -> PathBuf {
        self.plan.work.join("folders").join(name)
    }

    /// A search index folder (each process of a "machine" gets its own tag).
    fn index(&self, kind: Kind, tag: &str) -> PathBuf {
        self.plan
            .work
            .join("index")
            .join(format!("{}-{tag}", kind.label()))
    }

    /// Spawns a server on store `name` (its search index under `index`, its log in the
    /// work folder) and completes the MCP handshake.
    async fn connect(&self, kind: Kind, name: &str, index: &Path) -> anyhow::Result<Client> {
        let n = self.spawned.fetch_add(1, Ordering::Relaxed);
        let logs = self.plan.work.join("logs");
        std::fs::create_dir_all(&logs)?;
        let log = logs.join(format!("memdir-{n:04}-{}-{name}.log", kind.label()));
        let spec = self.spec(kind, name);
        let cache = self.plan.work.join("cache");
        let cmd = Command::new(&self.plan.bin).configure(|c| {
            c.args(["--log-level", "warn", "--store", &spec, "--index-dir"])
                .arg(index)
                .env("XDG_CACHE_HOME", &cache)
                .env_remove("RUST_LOG");
        });
        let stderr = std::fs::File::create(&log)?;
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(stderr))
            .spawn()
            .with_context(|| format!("spawning {}", self.plan.bin.display()))?;
        ().serve(transport)
            .await
            .with_context(|| format!("MCP handshake (server log: {})", log.display()))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => memdir_bin()?,
    };
    let q = args.quick;
    let pick =
        |v: Option<usize>, full: usize, quick: usize| v.unwrap_or(if q { quick } else { full });
    let work = std::env::temp_dir().join(format!("memdir-pgbench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let plan = Plan {
        bin,
        work: work.clone(),
        iterations: pick(args.iterations, 1000, 200).max(1),
        corpus: pick(args.corpus, 10_000, 2_000).max(100),
        queries: pick(args.queries, 100, 30).max(1),
        trials: pick(args.trials, 200, 50).max(1),
        procs: args.procs.max(1),
        ops: pick(args.ops, 1000, 200).max(1),
        cold_runs: pick(args.cold_runs, 5, 2).max(1),
        statements: !args.no_statements,
    };
    let started = Instant::now();
    let result = run(plan).await;
    let _ = std::fs::remove_dir_all(&work);
    result?;
    println!(
        "\ntotal bench time {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn run(plan: Plan) -> anyhow::Result<()> {
    let mut settings = vec![];
    if plan.statements {
        settings.extend([
            "shared_preload_libraries=pg_stat_statements",
            "pg_stat_statements.track=all",
        ]);
    }
    let t0 = Instant::now();
    let pg = PgServer::start_with(&settings);
    pg.create_db(DB);
    let pg_start = t0.elapsed();
    let statements = plan.statements
        && pg
            .try_psql(DB, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .is_ok();
    let url = pg.url(DB);
    let version = pg.try_psql(DB, "SHOW server_version").unwrap_or_default();
    let durability = pg
        .try_psql(
            DB,
            "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers', 'wal_sync_method')",
        )
        .unwrap_or_default();
    println!("memdir pg_bench: folder store vs PostgreSQL store");
    println!("  binary      {}", plan.bin.display());
    println!(
        "  postgres    {version}, {} started in {:.2} s",
        pg.describe(),
        pg_start.as_secs_f64()
    );
    println!("              {durability}");
    println!("  url         {url}");
    println!(
        "  folder      {} ({})",
        plan.work.display(),
        host::fs_type(&plan.work)
    );
    println!(
        "  host        {} CPUs, load {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        loadavg()
    );
    println!(
        "  sizes       {} round trips, {}-memory corpus x {} searches per kind, {} visibility trials, {} x {} ops, {} cold starts",
        plan.iterations,
        plan.corpus,
        plan.queries,
        plan.trials,
        plan.procs,
        plan.ops,
        plan.cold_runs
    );
    println!("  latencies in ms; pNN = nearest-rank percentile");
    let env = Env {
        plan,
        pg,
        url,
        spawned: AtomicUsize::new(0),
    };
    let mut summary = Summary::default();
    round_trips(&env, statements, &mut summary).await?;
    let corpus = corpus_search(&env, statements, &mut summary).await?;
    visibility(&env, &mut summary).await?;
    cold_start(&env, &corpus, &mut summary).await?;
    throughput(&env, &mut summary).await?;
    summary.print();
    Ok(())
}

// ---- 1. round trips ------------------------------------------------------------------------

async fn round_trips(env: &Env, statements: bool, summary: &mut Summary) -> anyhow::Result<()> {
    let n = env.plan.iterations;
    section(&format!(
        "1. memory_write / memory_read / memory_search round trips ({n} each, warm server, ~0.3–3 KB memories)"
    ));
    let vocab = Vocab::new();
    let texts: Vec<String> = (0..256)
        .map(|i| document(i, 7, &vocab, 300, 3000).1)
        .collect();
    let mut rng = Rng::new(42);
    let queries: Vec<&str> = (0..n)
        .map(|_| vocab.en.words[rng.below(vocab.en.words.len().min(120))])
        .collect();
    header();
    let mut counts: Vec<(&str, String)> = Vec::new();
    for kind in KINDS {
        let client = env.connect(kind, "rt", &env.index(kind, "rt")).await?;
        for (i, text) in texts.iter().enumerate().take(50) {
            let path = format!("/rt/warm/{i}.md");
            call_ok(
                &client,
                "memory_write",
                json!({"path": path, "content": text}),
            )
            .await?;
            call_ok(&client, "memory_read", json!({"path": path})).await?;
            call_ok(
                &client,
                "memory_search",
                json!({"query": "memory", "limit": 10}),
            )
            .await?;
        }
        let pg_stats = statements && kind == Kind::Pg;
        let mut run = async |what: &'static str,
                             f: &dyn Fn(usize) -> (&'static str, Value)|
               -> anyhow::Result<Stats> {
            if pg_stats {
                reset_statements(env);
            }
            let mut samples = Vec::with_capacity(n);
            for i in 0..n {
                let (tool, args) = f(i);
                let t0 = Instant::now();
                call_ok(&client, tool, args).await?;
                samples.push(t0.elapsed());
            }
            if pg_stats {
                counts.push((what, statement_report(env, n)));
            }
            Ok(Stats::of(&samples))
        };
        let write = run("memory_write (new path)", &|i| {
            (
                "memory_write",
                json!({"path": format!("/rt/m/d{i:05}.md"), "content": texts[i % texts.len()]}),
            )
        })
        .await?;
        let replace = run("memory_write (replace, sha-guarded)", &|i| {
            let old = &texts[i % texts.len()];
            (
                "memory_write",
                json!({"path": format!("/rt/m/d{i:05}.md"),
                       "content": format!("{old}\nrevised\n"),
                       "expected_sha256": memdir::text::sha256_hex(old.as_bytes())}),
            )
        })
        .await?;
        let read = run("memory_read", &|i| {
            (
                "memory_read",
                json!({"path": format!("/rt/m/d{:05}.md", (i * 7919) % n)}),
            )
        })
        .await?;
        let search = run("memory_search", &|i| {
            ("memory_search", json!({"query": queries[i], "limit": 10}))
        })
        .await?;
        let _ = client.cancel().await;
        let l = kind.label();
        row(&format!("{l}: memory_write, new path"), &write);
        row(
            &format!("{l}: memory_write, replace (sha-guarded)"),
            &replace,
        );
        row(&format!("{l}: memory_read"), &read);
        row(&format!("{l}: memory_search (~{n} memories)"), &search);
        summary.set(kind, "write", write.p50);
        summary.set(kind, "read", read.p50);
        summary.set(kind, "search_rt", search.p50);
    }
    for (what, report) in counts {
        println!("\npostgres statements per {what} (pg_stat_statements):\n{report}");
    }
    Ok(())
}

// ---- 2. search over the corpus ---------------------------------------------------------------

/// One query kind over the corpus.
struct QueryKind {
    label: &'static str,
    query: &'static str,
}

const QUERY_KINDS: &[QueryKind] = &[
    QueryKind {
        label: "rare word (~1%)",
        query: RARE,
    },
    QueryKind {
        label: "common word (~90%)",
        query: COMMON,
    },
    QueryKind {
        label: "two words",
        query: "deploy rollback",
    },
    QueryKind {
        label: "russian Память",
        query: "Память",
    },
    QueryKind {
        label: "chinese 数据库 (unspaced)",
        query: "数据库",
    },
    QueryKind {
        label: "japanese メモリ",
        query: "メモリ",
    },
    QueryKind {
        label: "korean 데이터베이스",
        query: "데이터베이스",
    },
];

/// What the cold-start section needs from the corpus section.
struct Corpus {
    files: usize,
}

async fn corpus_search(
    env: &Env,
    statements: bool,
    summary: &mut Summary,
) -> anyhow::Result<Corpus> {
    let n = env.plan.corpus;
    let runs = env.plan.queries;
    section(&format!(
        "2. memory_search over {n} memories, per query kind ({runs} searches each, limit 10)"
    ));
    // The corpus: files written straight into the folder store, and the same memories
    // as an export archive imported into the PostgreSQL store.
    let vocab = Vocab::new();
    let t0 = Instant::now();
    let dir = env.folder("corpus");
    let archive = env.plan.work.join("corpus.jsonl");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        json!({"memdir_archive": 1, "store": "corpus", "files": n, "versions": 0})
    );
    let mut bytes = 0;
    for i in 0..n {
        let (rel, text) = document(i, 1, &vocab, 200, 4000);
        bytes += text.len();
        let path = dir.join(&rel);
        std::fs::create_dir_all(path.parent().context("corpus path")?)?;
        std::fs::write(&path, &text)?;
        let _ = writeln!(out, "{}", json!({"file": rel, "content": text}));
    }
    std::fs::write(&archive, out)?;
    println!(
        "corpus: {n} memories, {:.1} MB (mean {} B), ~30% with Russian/Chinese/Japanese/Korean lines; generated in {:.1} s",
        bytes as f64 / 1e6,
        bytes / n,
        t0.elapsed().as_secs_f64()
    );
    let t0 = Instant::now();
    let status = std::process::Command::new(&env.plan.bin)
        .args([
            "--log-level",
            "warn",
            "--store",
            &env.spec(Kind::Pg, "corpus"),
        ])
        .arg("import")
        .stdin(std::fs::File::open(&archive)?)
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("memdir import into the PostgreSQL store failed ({status})");
    }
    println!(
        "postgres: `memdir import` of the archive took {:.2} s",
        t0.elapsed().as_secs_f64()
    );

    // Per query kind, per store: the latencies and the hits found.
    type Row = (usize, [Option<(Stats, u64)>; 2]);
    let mut table: Vec<Row> = (0..QUERY_KINDS.len()).map(|i| (i, [None, None])).collect();
    let mut stmt_report = None;
    let mut write_stats = Vec::new();
    for (k, kind) in KINDS.into_iter().enumerate() {
        let index = env.index(kind, "corpus");
        let client = env.connect(kind, "corpus", &index).await?;
        let t0 = Instant::now();
        call_ok(
            &client,
            "memory_search",
            json!({"query": RARE, "limit": 10}),
        )
        .await?;
        println!(
            "{}: first search (builds the local index of {n} memories): {:.2} s",
            kind.label(),
            t0.elapsed().as_secs_f64()
        );
        if statements && kind == Kind::Pg {
            reset_statements(env);
        }
        let mut total = 0;
        for (i, qk) in QUERY_KINDS.iter().enumerate() {
            let mut samples = Vec::with_capacity(runs);
            let mut hits = 0;
            for _ in 0..runs {
                let t0 = Instant::now();
                let out = call_ok(
                    &client,
                    "memory_search",
                    json!({"query": qk.query, "limit": 10}),
                )
                .await?;
                samples.push(t0.elapsed());
                hits = out["total_hits"].as_u64().unwrap_or(0);
            }
            total += runs;
            table[i].1[k] = Some((Stats::of(&samples), hits));
        }
        if statements && kind == Kind::Pg {
            stmt_report = Some(statement_report(env, total));
        }
        // Writes cost more as the store grows? New memories in an existing folder.
        let mut writes = Vec::new();
        for i in 0..runs {
            let text = document(n + i, 1, &vocab, 200, 4000).1;
            let t0 = Instant::now();
            call_ok(
                &client,
                "memory_write",
                json!({"path": format!("/corpus/area-00/topic-00/new-{i:04}.md"), "content": text}),
            )
            .await?;
            writes.push(t0.elapsed());
        }
        write_stats.push((kind, Stats::of(&writes)));
        let _ = client.cancel().await;
    }
    println!(
        "\n{:<28} {:>8} {:>8} {:>7} | {:>8} {:>8} {:>7} | {:>9}",
        "query kind", "fold p50", "fold p99", "hits", "pg p50", "pg p99", "hits", "pg/folder"
    );
    let mut worst: f64 = 0.0;
    for (i, [f, p]) in &table {
        let (Some((f, fh)), Some((p, ph))) = (f, p) else {
            continue;
        };
        let ratio = p.p50 / f.p50;
        worst = worst.max(ratio);
        println!(
            "{:<28} {:>8.3} {:>8.3} {:>7} | {:>8.3} {:>8.3} {:>7} | {:>8.2}x{}",
            QUERY_KINDS[*i].label,
            f.p50,
            f.p99,
            fh,
            p.p50,
            p.p99,
            ph,
            ratio,
            if fh != ph {
                "  (hit counts differ!)"
            } else {
                ""
            }
        );
    }
    println!();
    header();
    for (kind, s) in &write_stats {
        row(
            &format!("{}: memory_write, new path, at {n}", kind.label()),
            s,
        );
    }
    if let Some(report) = stmt_report {
        println!("\npostgres statements per corpus search (pg_stat_statements):\n{report}");
    }
    // The write path's folder check, as the server plans it (a prepared statement runs
    // with a generic plan after five executions).
    let explain = "SET plan_cache_mode = force_generic_plan; \
        PREPARE anc(text, text[]) AS SELECT a.p FROM unnest($2::text[]) AS a(p) WHERE EXISTS (SELECT 1 FROM memdir_files f WHERE f.store = $1 AND f.path = a.p) ORDER BY a.p LIMIT 1; \
        EXPLAIN (ANALYZE, COSTS OFF, TIMING ON) EXECUTE anc('corpus', ARRAY['area-00', 'area-00/topic-00']);";
    if let Ok(plan) = env.pg.try_psql(DB, explain) {
        println!("\npostgres: the write path's ancestor check at {n} memories (generic plan):");
        for l in plan.lines() {
            println!("  {l}");
        }
    }
    summary.set(Kind::Pg, "search_ratio", worst);
    Ok(Corpus { files: n })
}

// ---- 3. cross-process visibility -------------------------------------------------------------

async fn visibility(env: &Env, summary: &mut Summary) -> anyhow::Result<()> {
    let trials = env.plan.trials;
    section(&format!(
        "3. cross-process visibility: A writes a new word, B (another process, its own index) searches until it finds it ({trials} trials)"
    ));
    println!(
        "(time from A's write reply to B's first search reply with the hit; B searches back to back, so this includes up to one search round trip of polling)"
    );
    header();
    let vocab = Vocab::new();
    for kind in KINDS {
        let a = env.connect(kind, "vis", &env.index(kind, "vis-a")).await?;
        for i in 0..200 {
            let text = document(i, 3, &vocab, 300, 1500).1;
            call_ok(
                &a,
                "memory_write",
                json!({"path": format!("/vis/seed/{i:03}.md"), "content": text}),
            )
            .await?;
        }
        let b = env.connect(kind, "vis", &env.index(kind, "vis-b")).await?;
        call_ok(&b, "memory_search", json!({"query": "memory", "limit": 5})).await?;
        let nonce = std::process::id();
        let mut lags = Vec::with_capacity(trials);
        let mut polls = Vec::with_capacity(trials);
        let mut b_search = Vec::new();
        let mut misses = 0;
        for t in 0..trials {
            let word = format!("vis{nonce}q{t}z");
            let path = format!("/vis/t/{:02}.md", t % 20);
            let content =
                format!("Trial {t} of the visibility benchmark: {word} was written by A.\n");
            let write = async {
                call_ok(
                    &a,
                    "memory_write",
                    json!({"path": path, "content": content}),
                )
                .await?;
                anyhow::Ok(Instant::now())
            };
            let poll = async {
                let start = Instant::now();
                let mut n = 0;
                loop {
                    n += 1;
                    let t0 = Instant::now();
                    let out =
                        call_ok(&b, "memory_search", json!({"query": word, "limit": 5})).await?;
                    let now = Instant::now();
                    b_search.push(now - t0);
                    if out["total_hits"].as_u64().unwrap_or(0) > 0 {
                        return anyhow::Ok((Some(now), n));
                    }
                    if start.elapsed() > VISIBLE_GIVE_UP {
                        return Ok((None, n));
                    }
                }
            };
            let (written, found) = tokio::join!(write, poll);
            let (written, (found, n)) = (written?, found?);
            polls.push(n);
            match found {
                Some(found) => lags.push(found.saturating_duration_since(written)),
                None => {
                    misses += 1;
                    lags.push(VISIBLE_GIVE_UP);
                }
            }
        }
        let _ = a.cancel().await;
        let _ = b.cancel().await;
        let s = Stats::of(&lags);
        let l = kind.label();
        row(&format!("{l}: write reply → hit in B"), &s);
        row(
            &format!("{l}: (B's search round trips)"),
            &Stats::of(&b_search),
        );
        polls.sort_unstable();
        println!(
            "{l}: B searched {} times per trial at the median{}",
            polls[polls.len() / 2],
            if misses > 0 {
                format!(", {misses} trials never found the word within {VISIBLE_GIVE_UP:?}")
            } else {
                String::new()
            }
        );
        summary.set(kind, "visible_p99", s.p99);
    }
    Ok(())
}

// ---- 4. cold start ---------------------------------------------------------------------------

async fn cold_start(env: &Env, corpus: &Corpus, summary: &mut Summary) -> anyhow::Result<()> {
    let runs = env.plan.cold_runs;
    section(&format!(
        "4. cold start on the {}-memory store: spawn → initialize → first search answered ({runs} runs each)",
        corpus.files
    ));
    println!(
        "{:<52} {:>10} {:>10} {:>10}",
        "", "init p50", "search p50", "worst"
    );
    for kind in KINDS {
        for fresh in [false, true] {
            let mut init = Vec::new();
            let mut total = Vec::new();
            for r in 0..runs {
                let index = if fresh {
                    env.index(kind, &format!("cold-{r}"))
                } else {
                    env.index(kind, "corpus")
                };
                let t0 = Instant::now();
                let client = env.connect(kind, "corpus", &index).await?;
                init.push(t0.elapsed());
                call_ok(
                    &client,
                    "memory_search",
                    json!({"query": RARE, "limit": 10}),
                )
                .await?;
                total.push(t0.elapsed());
                let _ = client.cancel().await;
                if fresh {
                    let _ = std::fs::remove_dir_all(&index);
                }
            }
            let (i, s) = (Stats::of(&init), Stats::of(&total));
            println!(
                "{:<52} {:>10.1} {:>10.1} {:>10.1}",
                format!(
                    "{}: {}",
                    kind.label(),
                    if fresh {
                        "no local index (built on first search)"
                    } else {
                        "local index already built"
                    }
                ),
                i.p50,
                s.p50,
                s.max
            );
            summary.set(kind, if fresh { "cold_fresh" } else { "cold_warm" }, s.max);
        }
    }
    Ok(())
}

// ---- 5. throughput -------------------------------------------------------------------------

const COUNTERS: usize = 4;
const OWN_FILES: usize = 8;

fn own_path(p: usize, k: usize) -> String {
    format!("/tp/p{p:02}/f{k}.md")
}

fn counter_path(j: usize) -> String {
    format!("/tp/shared/counter-{j}.md")
}

fn own_text(p: usize, k: usize, version: u64, body: &str) -> String {
    format!("marker: mk{p}x{k}x{version}\n\n{body}\n")
}

/// What one worker did.
#[derive(Default)]
struct Worker {
    ops: usize,
    reads: Vec<Duration>,
    searches: Vec<Duration>,
    writes: Vec<Duration>,
    increments: Vec<Duration>,
    conflicts: usize,
    /// Acknowledged increments per counter.
    counted: [u64; COUNTERS],
    /// The last acknowledged content of each own file.
    own: Vec<String>,
    problems: Vec<String>,
}

async fn throughput(env: &Env, summary: &mut Summary) -> anyhow::Result<()> {
    let (procs, ops) = (env.plan.procs, env.plan.ops);
    section(&format!(
        "5. throughput: {procs} processes x {ops} mixed ops (60% read, 20% search, 10% sha-guarded write of an own memory, 10% increment of a shared counter: read + sha-guarded write, retried on conflict)"
    ));
    let vocab = Vocab::new();
    println!(
        "{:<10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "",
        "ops/s",
        "read p50",
        "read p99",
        "srch p50",
        "srch p99",
        "wrt p50",
        "wrt p99",
        "incr p50",
        "conflicts"
    );
    for kind in KINDS {
        let setup = env.connect(kind, "tp", &env.index(kind, "tp-0")).await?;
        let mut initial = Vec::new();
        for p in 0..procs {
            let mut own = Vec::new();
            for k in 0..OWN_FILES {
                let text = own_text(p, k, 0, &document(p * 100 + k, 5, &vocab, 200, 800).1);
                call_ok(
                    &setup,
                    "memory_write",
                    json!({"path": own_path(p, k), "content": text}),
                )
                .await?;
                own.push(text);
            }
            initial.push(own);
        }
        for j in 0..COUNTERS {
            call_ok(
                &setup,
                "memory_write",
                json!({"path": counter_path(j), "content": "count: 0\n"}),
            )
            .await?;
        }
        let _ = setup.cancel().await;
        // Each process is a machine of its own: its own local index.
        let mut clients = Vec::new();
        for p in 0..procs {
            let c = env
                .connect(kind, "tp", &env.index(kind, &format!("tp-{}", p + 1)))
                .await?;
            call_ok(&c, "memory_search", json!({"query": "memory", "limit": 5})).await?;
            clients.push(c);
        }
        let t0 = Instant::now();
        let tasks = clients.iter().enumerate().map(|(p, c)| {
            let own = initial[p].clone();
            let vocab = &vocab;
            async move { work(c, p, ops, own, vocab).await }
        });
        let workers = futures::future::join_all(tasks).await;
        let wall = t0.elapsed();
        for c in clients {
            let _ = c.cancel().await;
        }
        // Verify with a fresh process: every own memory holds its last acknowledged
        // write, every counter the number of acknowledged increments.
        let check = env
            .connect(kind, "tp", &env.index(kind, "tp-check"))
            .await?;
        let mut problems: Vec<String> = Vec::new();
        let mut counted = [0u64; COUNTERS];
        let mut total_ops = 0;
        for (p, w) in workers.iter().enumerate() {
            total_ops += w.ops;
            problems.extend(w.problems.iter().map(|e| format!("process {p}: {e}")));
            for (j, c) in w.counted.iter().enumerate() {
                counted[j] += c;
            }
            for (k, want) in w.own.iter().enumerate() {
                let out = call_ok(&check, "memory_read", json!({"path": own_path(p, k)})).await?;
                if out["content"].as_str() != Some(want.as_str()) {
                    problems.push(format!(
                        "{} lost its last acknowledged write",
                        own_path(p, k)
                    ));
                }
            }
        }
        for (j, want) in counted.iter().enumerate() {
            let out = call_ok(&check, "memory_read", json!({"path": counter_path(j)})).await?;
            let got = out["content"].as_str().unwrap_or_default().to_owned();
            if got != format!("count: {want}\n") {
                problems.push(format!(
                    "{}: holds {got:?}, {want} increments were acknowledged",
                    counter_path(j)
                ));
            }
        }
        let _ = check.cancel().await;
        let all = |f: fn(&Worker) -> &Vec<Duration>| -> Stats {
            Stats::of(
                &workers
                    .iter()
                    .flat_map(|w| f(w).iter().copied())
                    .collect::<Vec<_>>(),
            )
        };
        let (r, s, w, i) = (
            all(|w| &w.reads),
            all(|w| &w.searches),
            all(|w| &w.writes),
            all(|w| &w.increments),
        );
        let rate = total_ops as f64 / wall.as_secs_f64();
        println!(
            "{:<10} {:>8.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10.2} {:>9}",
            kind.label(),
            rate,
            r.p50,
            r.p99,
            s.p50,
            s.p99,
            w.p50,
            w.p99,
            i.p50,
            workers.iter().map(|w| w.conflicts).sum::<usize>()
        );
        println!(
            "{:<10} {total_ops} ops in {:.2} s; {} increments acknowledged over {COUNTERS} counters; final state: {}",
            "",
            wall.as_secs_f64(),
            counted.iter().sum::<u64>(),
            if problems.is_empty() {
                "verified (every acknowledged write present, counters exact)".to_owned()
            } else {
                format!("{} PROBLEMS", problems.len())
            }
        );
        for p in problems.iter().take(10) {
            println!("    {p}");
        }
        summary.set(kind, "ops_per_s", rate);
        summary.set(kind, "tp_ok", if problems.is_empty() { 1.0 } else { 0.0 });
    }
    Ok(())
}

/// One process's share of the mixed load.
async fn work(client: &Client, p: usize, ops: usize, own: Vec<String>, vocab: &Vocab) -> Worker {
    let mut w = Worker {
        own,
        ..Worker::default()
    };
    let mut version = [0u64; OWN_FILES];
    let mut rng = Rng::new(0xbe7c ^ p as u64);
    for op in 0..ops {
        w.ops += 1;
        let roll = rng.below(100);
        let k = rng.below(OWN_FILES);
        let j = rng.below(COUNTERS);
        let t0 = Instant::now();
        let result: anyhow::Result<()> = async {
            match roll {
                0..30 => {
                    let out = call(client, "memory_read", json!({"path": own_path(p, k)})).await?;
                    if out.is_error || out.structured["content"].as_str() != Some(w.own[k].as_str()) {
                        bail!("read {} differs from its last acknowledged write", own_path(p, k));
                    }
                    w.reads.push(t0.elapsed());
                }
                30..60 => {
                    let out = call(client, "memory_read", json!({"path": counter_path(j)})).await?;
                    if out.is_error {
                        bail!("read {}: {}", counter_path(j), out.text);
                    }
                    w.reads.push(t0.elapsed());
                }
                60..70 => {
                    let word = format!("mk{p}x{k}x{}", version[k]);
                    let out = call(client, "memory_search", json!({"query": word, "limit": 5})).await?;
                    let hits: Vec<&str> = out.structured["hits"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|h| h["path"].as_str())
                        .collect();
                    if out.is_error || hits != [own_path(p, k).as_str()] {
                        bail!("search {word}: hits {hits:?}, expected {}", own_path(p, k));
                    }
                    w.searches.push(t0.elapsed());
                }
                70..80 => {
                    let word = vocab.en.words[rng.below(100)];
                    let out = call(client, "memory_search", json!({"query": word, "limit": 10})).await?;
                    if out.is_error {
                        bail!("search {word}: {}", out.text);
                    }
                    w.searches.push(t0.elapsed());
                }
                80..90 => {
                    let next = own_text(p, k, version[k] + 1, &format!("op {op}"));
                    let out = call(
                        client,
                        "memory_write",
                        json!({"path": own_path(p, k), "content": next,
                               "expected_sha256": memdir::text::sha256_hex(w.own[k].as_bytes())}),
                    )
                    .await?;
                    if out.is_error {
                        bail!("guarded write {}: {}", own_path(p, k), out.text);
                    }
                    version[k] += 1;
                    w.own[k] = next;
                    w.writes.push(t0.elapsed());
                }
                _ => {
                    let path = counter_path(j);
                    loop {
                        let read = call(client, "memory_read", json!({"path": path})).await?;
                        let content = read.structured["content"].as_str().unwrap_or_default();
                        let n: u64 = content
                            .strip_prefix("count: ")
                            .and_then(|s| s.trim_end().parse().ok())
                            .with_context(|| format!("{path} holds {content:?}"))?;
                        let sha = read.structured["content_sha256"].as_str().unwrap_or_default().to_owned();
                        let t1 = Instant::now();
                        let out = call(
                            client,
                            "memory_write",
                            json!({"path": path, "content": format!("count: {}\n", n + 1), "expected_sha256": sha}),
                        )
                        .await?;
                        // Another process changed it first (perhaps to the same n + 1): a
                        // failed precondition, so read again.
                        if !out.is_error {
                            w.counted[j] += 1;
                            w.writes.push(t1.elapsed());
                            break;
                        }
                        if !out.text.contains("precondition") {
                            bail!("increment {path}: {}", out.text);
                        }
                        w.conflicts += 1;
                    }
                    w.increments.push(t0.elapsed());
                }
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            w.problems.push(format!("op {op}: {e:#}"));
        }
    }
    w
}

// ---- summary -------------------------------------------------------------------------------

#[derive(Default)]
struct Summary {
    values: HashMap<(&'static str, &'static str), f64>,
}

impl Summary {
    fn set(&mut self, kind: Kind, what: &'static str, v: f64) {
        self.values.insert((kind.label(), what), v);
    }

    fn get(&self, kind: Kind, what: &'static str) -> Option<f64> {
        self.values.get(&(kind.label(), what)).copied()
    }

    fn print(&self) {
        section("summary: the targets of issue 18");
        println!(
            "{:<46} {:>12} {:>12} {:>12}  postgres",
            "", "target", "folder", "postgres"
        );
        let show = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        let line = |what: &str, key: &'static str, target: f64, unit: &str| {
            let (f, p) = (self.get(Kind::Folder, key), self.get(Kind::Pg, key));
            println!(
                "{:<46} {:>12} {:>12} {:>12}  {}",
                what,
                format!("≤ {target} {unit}"),
                show(f),
                show(p),
                verdict(p.is_some_and(|p| p <= target))
            );
        };
        line("memory_read p50", "read", TARGET_READ_P50_MS, "ms");
        line(
            "memory_write p50 (new path)",
            "write",
            TARGET_WRITE_P50_MS,
            "ms",
        );
        let r = self.get(Kind::Pg, "search_ratio");
        println!(
            "{:<46} {:>12} {:>12} {:>12}  {}",
            "search at 10k, worst kind p50 (pg / folder)",
            format!("≤ {TARGET_SEARCH_RATIO}x"),
            "1x",
            r.map_or("-".to_owned(), |r| format!("{r:.2}x")),
            verdict(r.is_some_and(|r| r <= TARGET_SEARCH_RATIO))
        );
        line(
            "cross-process visibility p99",
            "visible_p99",
            TARGET_VISIBLE_P99_MS,
            "ms",
        );
        line(
            "cold start at 10k, local index built (worst)",
            "cold_warm",
            TARGET_COLD_START_MS,
            "ms",
        );
        line(
            "cold start at 10k, no local index (worst)",
            "cold_fresh",
            TARGET_COLD_START_MS,
            "ms",
        );
        println!(
            "{:<46} {:>12} {:>12} {:>12}  {}",
            "throughput (ops/s), final state verified",
            "verified",
            show(self.get(Kind::Folder, "ops_per_s")),
            show(self.get(Kind::Pg, "ops_per_s")),
            verdict(self.get(Kind::Pg, "tp_ok") == Some(1.0))
        );
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

// ---- pg_stat_statements ----------------------------------------------------------------------

fn reset_statements(env: &Env) {
    let _ = env.pg.try_psql(DB, "SELECT pg_stat_statements_reset()");
}

/// The statements run since the last reset, per call of the `calls` tool calls made.
fn statement_report(env: &Env, calls: usize) -> String {
    let sql = "SELECT calls, round(total_exec_time::numeric, 1), left(regexp_replace(query, '\\s+', ' ', 'g'), 96) \
               FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid \
               WHERE d.datname = current_database() AND query NOT LIKE '%pg_stat_statements%' \
               ORDER BY calls DESC";
    let rows = match env.pg.try_psql(DB, sql) {
        Ok(rows) => rows,
        Err(e) => return format!("  (pg_stat_statements unavailable: {e})"),
    };
    let mut total_calls = 0u64;
    let mut total_ms = 0f64;
    let mut out = String::new();
    let parsed: Vec<(u64, f64, String)> = rows
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '|');
            Some((
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
                f.next()?.to_owned(),
            ))
        })
        .collect();
    for (c, ms, _) in &parsed {
        total_calls += c;
        total_ms += ms;
    }
    let _ = writeln!(
        out,
        "  {:.1} statements and {:.3} ms of server execution per call; the busiest:",
        total_calls as f64 / calls as f64,
        total_ms / calls as f64
    );
    for (c, ms, q) in parsed.iter().take(10) {
        let _ = writeln!(
            out,
            "  {:>6.2}/call {:>8.3} ms/call  {q}",
            *c as f64 / calls as f64,
            ms / calls as f64
        );
    }
    out.trim_end().to_owned()
}

// ---- MCP -----------------------------------------------------------------------------------

/// A tool call's answer.
struct Outcome {
    is_error: bool,
    text: String,
    structured: Value,
}

async fn call(client: &Client, tool: &'static str, args: Value) -> anyhow::Result<Outcome> {
    let Value::Object(map) = args else {
        bail!("tool arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
        .await
        .with_context(|| format!("{tool}: protocol error"))?;
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

/// A tool call that must succeed; its structured result.
async fn call_ok(client: &Client, tool: &'static str, args: Value) -> anyhow::Result<Value> {
    let out = call(client, tool, args).await?;
    if out.is_error {
        bail!("{tool} failed: {}", out.text);
    }
    Ok(out.structured)
}

// ---- output --------------------------------------------------------------------------------

fn section(title: &str) {
    println!("\n=== {title}");
}

fn header() {
    println!(
        "{:<46} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "", "n", "p50", "p95", "p99", "max", "mean"
    );
}

fn row(label: &str, s: &Stats) {
    println!(
        "{:<46} {:>6} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
        label, s.n, s.p50, s.p95, s.p99, s.max, s.mean
    );
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

// ---- the generated corpus --------------------------------------------------------------------

/// xorshift64*, seeded through splitmix64.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// Words drawn with probability ∝ 1 / rank^s.
struct Zipf {
    words: Vec<&'static str>,
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(list: &'static str, s: f64) -> Zipf {
        let mut words: Vec<&'static str> = Vec::new();
        for w in list.split_whitespace() {
            if !words.contains(&w) {
                words.push(w);
            }
        }
        let mut acc = 0.0;
        let cdf = (0..words.len())
            .map(|r| {
                acc += 1.0 / ((r + 1) as f64).powf(s);
                acc
            })
            .collect();
        Zipf { words, cdf }
    }

    fn pick(&self, rng: &mut Rng) -> &'static str {
        let u = rng.unit() * self.cdf[self.cdf.len() - 1];
        let i = self.cdf.partition_point(|&c| c < u);
        self.words[i.min(self.words.len() - 1)]
    }
}

/// Planted words, never in the vocabularies: in ~90% and ~1% of the memories.
const COMMON: &str = "note";
const RARE: &str = "compaction";

const EN: &str = "\
    the of and to a in is it that for on with as was be by this are or at from have an \
    not but which they you we can were all one there their been if more when will would \
    who so no out up into has do what about time other some could them these than then \
    its only new two may first any like now my over such our also most after just made \
    where me many through should very because those well each even between must how own \
    same under while last here might great both being still high never us day use work \
    part life long down world year people good state system case group place fact number \
    way thing end hand order line form few course power point data file index search \
    query store memory cache server client agent tool task plan test build error value \
    type list path word text page result event model user code change report process \
    function module version config issue review design batch stream lock queue thread \
    table column record field buffer socket token parser schema backup folder entry \
    session context summary meeting project team release branch commit merge feature bug \
    fix patch latency throughput disk network request response handler worker job retry \
    timeout limit budget metric alert dashboard log trace span cluster node shard replica \
    leader follower vote term snapshot segment offset cursor iterator vector map set tree \
    graph edge weight score rank filter prefix suffix pattern regex unicode encoding \
    format json yaml markdown header footer title body link image chart customer \
    invoice payment product price discount shipping warehouse supplier contract \
    deadline milestone roadmap priority owner reviewer approval decision tradeoff risk \
    mitigation incident outage postmortem runbook oncall pager monday tuesday friday";

const RU: &str = "\
    и в не на что это как для память данные файл поиск индекс сервер запрос ответ работа \
    система время памяти проект задача вопрос ошибка результат версия команда модель \
    клиент хранилище заметка код база таблица строка процесс пользователь агент решение \
    тест сборка изменение список папка путь текст слово день год новый старый большой";

const ZH: &str = "\
    我们 系统 数据 用户 服务器 数据库 搜索 索引 文件 内存 查询 结果 问题 需要 可以 已经 \
    因为 所以 但是 如果 性能 测试 版本 配置 缓存 记忆 项目 团队 发布 错误 修复 功能 模块 \
    接口 存储 备份 日志 线程 进程 网络 安全 时间 今天 明天 会议 计划 完成 开始 重要";

const JA: &str = "\
    メモリ データ サーバー ファイル 検索 インデックス キャッシュ テスト バージョン \
    プロジェクト 設定 問題 結果 今日 会議 データベース ユーザー エラー ログ";
const JA_PARTICLES: &[&str] = &["を", "は", "の", "に", "で", "が", "と", "も"];
const JA_VERBS: &[&str] = &["使う", "確認する", "保存した", "更新します", "読み込む"];

const KO: &str = "\
    데이터베이스 메모리 서버 파일 검색 인덱스 사용자 프로젝트 오늘 회의 결과 문제 캐시 \
    테스트 버전 설정";
const KO_PARTICLES: &[&str] = &["를", "을", "에", "에서", "가", "이", "는", "은", "의", "도"];
const KO_VERBS: &[&str] = &["사용합니다", "저장했습니다", "확인하세요", "업데이트한다"];

struct Vocab {
    en: Zipf,
    ru: Zipf,
    zh: Zipf,
    ja: Zipf,
    ko: Zipf,
}

impl Vocab {
    fn new() -> Vocab {
        Vocab {
            en: Zipf::new(EN, 1.0),
            ru: Zipf::new(RU, 0.9),
            zh: Zipf::new(ZH, 0.9),
            ja: Zipf::new(JA, 0.9),
            ko: Zipf::new(KO, 0.9),
        }
    }
}

fn pick(rng: &mut Rng, list: &[&'static str]) -> &'static str {
    list[rng.below(list.len())]
}

fn en_line(rng: &mut Rng, v: &Vocab, plant: &[&str]) -> String {
    let mut words: Vec<&str> = (0..rng.range(6, 16)).map(|_| v.en.pick(rng)).collect();
    let at = rng.range(1, words.len() - 1);
    for (k, w) in plant.iter().enumerate() {
        words.insert(at + k, w);
    }
    let mut line = words.join(" ");
    if let Some(first) = line.get(..1) {
        line = first.to_uppercase() + &line[1..];
    }
    line.push('.');
    line
}

fn other_line(rng: &mut Rng, v: &Vocab) -> String {
    let mut line = String::new();
    match rng.below(4) {
        0 => {
            for i in 0..rng.range(5, 12) {
                if i > 0 {
                    line.push(' ');
                }
                let w = v.ru.pick(rng);
                if rng.chance(0.2) {
                    let mut c = w.chars();
                    line.extend(c.next().into_iter().flat_map(char::to_uppercase));
                    line.push_str(c.as_str());
                } else {
                    line.push_str(w);
                }
            }
            line.push('.');
        }
        1 => {
            for _ in 0..rng.range(4, 12) {
                line.push_str(v.zh.pick(rng));
            }
            line.push('。');
        }
        2 => {
            for _ in 0..rng.range(2, 5) {
                line.push_str(v.ja.pick(rng));
                line.push_str(pick(rng, JA_PARTICLES));
            }
            line.push_str(pick(rng, JA_VERBS));
            line.push('。');
        }
        _ => {
            for _ in 0..rng.range(3, 7) {
                line.push_str(v.ko.pick(rng));
                line.push_str(pick(rng, KO_PARTICLES));
                line.push(' ');
            }
            line.push_str(pick(rng, KO_VERBS));
            line.push('.');
        }
    }
    line
}

/// Memory `i` of a corpus: its path below the store and its Markdown text, `lo`–`hi`
/// bytes. `COMMON` is in ~90% of them, `RARE` in ~1%, `deploy` and `rollback` together in
/// ~3%; ~30% mix in Russian, Chinese, Japanese and Korean lines.
fn document(i: usize, seed: u64, v: &Vocab, lo: usize, hi: usize) -> (String, String) {
    let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let rel = format!(
        "area-{:02}/topic-{:02}/note-{i:06}.md",
        i % 16,
        (i / 16) % 32
    );
    let target = rng.range(lo, hi);
    let mixed = rng.chance(0.3);
    let mut plants: Vec<&[&str]> = Vec::new();
    if rng.chance(0.9) {
        plants.push(&[COMMON]);
    }
    if rng.chance(0.01) {
        plants.push(&[RARE]);
    }
    if rng.chance(0.03) {
        plants.push(&["deploy", "rollback"]);
    }
    let mut text = format!("# Entry {i}\n\n");
    while text.len() < target || !plants.is_empty() {
        let line = if mixed && rng.chance(0.4) {
            other_line(&mut rng, v)
        } else {
            en_line(&mut rng, v, plants.pop().unwrap_or(&[]))
        };
        text.push_str(&line);
        text.push('\n');
        if rng.chance(0.15) {
            text.push('\n');
        }
    }
    (rel, text)
}
