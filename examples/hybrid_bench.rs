//! What search by meaning costs a search: `memory_search` latency at N memories with
//! meaning off and on, through the real binary and the rmcp client over stdio.
//!
//! ```text
//! cargo build --release && cargo run --release --example hybrid_bench -- \
//!     --model FILE [--memories 10000] [--queries 200] [--bin PATH]
//! ```
//!
//! It generates a store of N short memories, builds its index with `memdir reindex`,
//! times searches while the server's backfill embeds it (and how fast the backfill goes
//! under that load), and, so that the figure does not wait for minutes of embedding (N passages at ~15 a
//! second), puts a random unit vector for each memory's content into the index's vector
//! table under the model's id: the search's work (embedding the query, the cosine over
//! every memory in scope, the fusion) is the same whatever the vectors hold. The
//! model's id is read from a vector memdir itself computed for one memory. It then times
//! the same queries with meaning off and on, and prints p50/p95, and the server's
//! resident memory with meaning on.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

#[path = "common/host.rs"]
#[allow(dead_code)]
mod host;
#[path = "common/stats.rs"]
#[allow(dead_code)]
mod stats;

type Client = RunningService<RoleClient, ()>;

#[derive(Debug, Parser)]
#[command(about = "memdir search latency with meaning off and on")]
struct Args {
    /// The embedding model's weights.
    #[arg(long)]
    model: PathBuf,
    /// Memories in the generated store.
    #[arg(long, default_value_t = 10_000)]
    memories: usize,
    /// Searches timed per mode.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// The memdir binary (default: as the other benchmarks find it).
    #[arg(long)]
    bin: Option<PathBuf>,
}

const WORDS: &[&str] = &[
    "deploy", "pipeline", "release", "database", "test", "mock", "user", "answer", "short",
    "meeting", "room", "floor", "slides", "quarter", "budget", "invoice", "garden", "tomato",
    "water", "morning", "server", "latency", "index", "search", "memory", "cache", "disk",
    "backup", "restore", "token", "review", "design", "sketch", "api", "client", "note",
];

/// A deterministic memory text.
fn text(i: usize) -> String {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut words = Vec::new();
    for _ in 0..(12 + i % 20) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        words.push(WORDS[(x % WORDS.len() as u64) as usize]);
    }
    format!("Note {i}: {}.\n", words.join(" "))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => host::memdir_bin()?,
    };
    let tmp = tempfile::tempdir()?;
    let store = tmp.path().join("store");
    let index = tmp.path().join("index");
    std::fs::create_dir_all(store.join("notes"))?;
    for i in 0..args.memories {
        std::fs::write(store.join(format!("notes/n{i:05}.md")), text(i))?;
    }
    let model = args.model.to_str().context("model path")?;
    let root = store.to_str().context("store path")?;
    let index_dir = index.to_str().context("index path")?;
    // The index, and one real vector: its model id is the key the others go under.
    let probe = tmp.path().join("probe");
    std::fs::create_dir_all(&probe)?;
    std::fs::write(probe.join("one.md"), text(0))?;
    let probe_index = tmp.path().join("probe-index");
    run(
        &bin,
        &[
            "reindex",
            "--root",
            probe.to_str().unwrap(),
            "--index-dir",
            probe_index.to_str().unwrap(),
            "--semantic",
            "--model",
            model,
        ],
    )?;
    let model_id = model_id(&probe_index)?;
    let started = Instant::now();
    run(&bin, &["reindex", "--root", root, "--index-dir", index_dir])?;
    println!(
        "{} memories indexed in {:.1} s",
        args.memories,
        started.elapsed().as_secs_f64()
    );
    let queries: Vec<String> = (0..args.queries)
        .map(|i| {
            // Every query different (up to 36 · 35 of them): a repeated one would be
            // answered from the server's recent queries.
            let n = WORDS.len();
            let a = WORDS[i % n];
            let b = WORDS[(i % n + 1 + (i / n) % (n - 1)) % n];
            format!("what did we say about the {a} and {b}")
        })
        .collect();
    while_embedding(&bin, &[root, index_dir, model], &queries).await?;
    fill_vectors(&index, &model_id)?;
    println!(
        "\n{:<28} {:>8} {:>8} {:>8}",
        "memory_search", "p50 ms", "p95 ms", "max ms"
    );
    for semantic in [false, true] {
        let mut server_args = vec!["--root", root, "--index-dir", index_dir];
        if semantic {
            server_args.extend(["--semantic", "--model", model]);
        }
        let (client, pid) = serve(&bin, &server_args).await?;
        // Warm up: the index opened, the vectors read into memory.
        let first = search(&client, &queries[0]).await?;
        if semantic && first["pending_vectors"] != 0 {
            bail!("vectors pending after filling them: {first}");
        }
        let mut samples = Vec::new();
        for q in &queries {
            let t = Instant::now();
            search(&client, q).await?;
            samples.push(t.elapsed());
        }
        let s = stats::Stats::of(&samples);
        let what = if semantic {
            "hybrid (meaning on)"
        } else {
            "words (meaning off)"
        };
        println!("{what:<28} {:>8.2} {:>8.2} {:>8.2}", s.p50, s.p95, s.max);
        if semantic {
            // A query asked again (paging, polling): its vector is kept.
            let mut again = Vec::new();
            for _ in 0..args.queries.min(50) {
                let t = Instant::now();
                search(&client, &queries[0]).await?;
                again.push(t.elapsed());
            }
            let s = stats::Stats::of(&again);
            let what = "  the same query again";
            println!("{what:<28} {:>8.2} {:>8.2} {:>8.2}", s.p50, s.p95, s.max);
        }
        println!("{:<28} {}", "  server VmRSS / VmHWM", rss(pid));
        client.cancel().await?;
    }
    Ok(())
}

/// Searches while the server's backfill embeds the store (no vector yet): their latency,
/// and how fast the backfill goes meanwhile (the searches keep a core busy, as a client
/// that polls does).
async fn while_embedding(bin: &Path, paths: &[&str; 3], queries: &[String]) -> anyhow::Result<()> {
    let [root, index_dir, model] = *paths;
    let args = [
        "--root",
        root,
        "--index-dir",
        index_dir,
        "--semantic",
        "--model",
        model,
    ];
    let (client, _) = serve(bin, &args).await?;
    let started = Instant::now();
    let pending = |v: &Value| v["pending_vectors"].as_u64().unwrap_or(0);
    let before = pending(&search(&client, &queries[0]).await?);
    let mut samples = Vec::new();
    let mut last = before;
    for q in queries {
        let t = Instant::now();
        last = pending(&search(&client, q).await?);
        samples.push(t.elapsed());
    }
    let seconds = started.elapsed().as_secs_f64();
    client.cancel().await?;
    let s = stats::Stats::of(&samples);
    println!(
        "while the backfill embeds: search p50 {:.2} ms, p95 {:.2} ms; {} memories embedded \
         in {seconds:.1} s ({:.1}/s) under that search load",
        s.p50,
        s.p95,
        before.saturating_sub(last),
        before.saturating_sub(last) as f64 / seconds
    );
    Ok(())
}

fn run(bin: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new(bin).args(args).output()?;
    if !out.status.success() {
        bail!("memdir {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// The index databases under an `--index-dir`.
fn databases(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "index.sqlite3")
        .map(|e| e.path().to_owned())
        .collect()
}

fn model_id(dir: &Path) -> anyhow::Result<String> {
    let db = databases(dir).pop().context("no index built")?;
    let conn = rusqlite::Connection::open(db)?;
    Ok(conn.query_row("SELECT model FROM vectors LIMIT 1", [], |r| r.get(0))?)
}

/// A random unit vector (384 dimensions) for every content in the index.
fn fill_vectors(dir: &Path, model: &str) -> anyhow::Result<()> {
    let db = databases(dir).pop().context("no index built")?;
    let mut conn = rusqlite::Connection::open(db)?;
    // The server that embedded may still be finishing its last batch.
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    let tx = conn.transaction()?;
    let shas: Vec<String> = tx
        .prepare("SELECT DISTINCT sha256 FROM docs")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for sha in &shas {
        let mut v: Vec<f32> = (0..384)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.iter_mut().for_each(|a| *a /= n);
        let bytes: Vec<u8> = v.iter().flat_map(|a| a.to_le_bytes()).collect();
        tx.execute(
            "INSERT OR REPLACE INTO vectors(model, sha256, vector, script) VALUES (?1, ?2, ?3, 0)",
            rusqlite::params![model, sha, bytes],
        )?;
    }
    tx.commit()?;
    Ok(())
}

async fn serve(bin: &Path, args: &[&str]) -> anyhow::Result<(Client, u32)> {
    let cmd = Command::new(bin).configure(|c| {
        c.args(args)
            .env("RUST_LOG", "memdir=warn")
            .stderr(std::process::Stdio::null());
    });
    let transport = TokioChildProcess::new(cmd)?;
    let pid = transport.id().context("pid")?;
    Ok((().serve(transport).await?, pid))
}

async fn search(client: &Client, query: &str) -> anyhow::Result<Value> {
    let Value::Object(args) = json!({"query": query}) else {
        unreachable!()
    };
    let r = client
        .call_tool(CallToolRequestParams::new("memory_search").with_arguments(args))
        .await?;
    if r.is_error == Some(true) {
        bail!("search failed: {r:?}");
    }
    Ok(r.structured_content.unwrap_or_default())
}

/// VmRSS and VmHWM of a process, in MB.
fn rss(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    format!("{:.1} MB / {:.1} MB", field("VmRSS:"), field("VmHWM:"))
}
