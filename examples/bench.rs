//! memdir's latency and memory benchmark: a program, not a test.
//!
//! ```text
//! cargo build --release && cargo run --release --example bench -- \
//!     [--iterations N] [--spawns N] [--scan-iterations N] [--bin PATH] [--work-dir DIR]
//!     [--no-settle]
//! ```
//!
//! It drives the real `memdir` binary through the rmcp client over stdio, exactly as an
//! agent's host does, and prints, each next to a baseline measured in the same run:
//!
//! a. spawn → `tools/list` reply latency (process start + MCP `initialize` handshake +
//!    `tools/list`), against spawning `/bin/true` (the process-creation floor) and
//!    `memdir --version` (the binary's own start-up, no runtime, no MCP);
//! b. warm `memory_write` (fsync'd; distinct paths and one path over and over) and
//!    `memory_read` round trips with 1–4 KB memories, against the same durable write and
//!    read done in-process with `std::fs`;
//! c. `memory_list` and `memory_search` over a generated store of 1,000 small files;
//! d. the server's resident memory (VmHWM / VmRSS) idle after start-up and after the work;
//!
//! and a summary table against the targets. Temp folders are removed at the end.
//!
//! Every write creates a file (the temp file renamed into place). On ext4 without a
//! journal that costs 0.2–0.6 ms instead of ~0.02 ms for a few minutes after thousands of
//! files were deleted nearby (an earlier run's clean-up, the test suite): the kernel does
//! not reuse an inode freed in the last 60 s (360 s while its inode table block is not
//! yet written back) and steps over each such inode when it allocates one. A run then
//! measures those deletions rather than memdir or the disk, so when creating a file is
//! slow the bench first waits 6 minutes, past the kernel's longest window
//! (`--no-settle` does not wait), and prints what creating a file cost before and after
//! the write loops.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

type Client = RunningService<RoleClient, ()>;

/// Targets the summary checks.
const TARGET_SPAWN_P50_MS: f64 = 15.0;
const TARGET_ROUND_TRIP_P50_MS: f64 = 1.0;
const TARGET_IDLE_RSS_MB: f64 = 15.0;

/// A timed loop stops early once it has run this long, so a slow disk cannot make the
/// benchmark run for minutes; the printed `n` says how many samples were taken.
const PHASE_BUDGET: Duration = Duration::from_secs(12);

#[derive(Debug, Parser)]
#[command(about = "memdir latency and memory benchmark")]
struct Args {
    /// Round trips per read/write measurement.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    /// Server spawns to time.
    #[arg(long, default_value_t = 50)]
    spawns: usize,
    /// Round trips per list/search measurement over the 1,000-file store.
    #[arg(long, default_value_t = 200)]
    scan_iterations: usize,
    /// Files in the generated store for list/search.
    #[arg(long, default_value_t = 1000)]
    corpus_files: usize,
    /// The memdir binary (default: $MEMDIR_BIN, else target/release/memdir next to this
    /// program, else target/debug/memdir).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// An extra argument for every memdir the bench starts (repeatable), e.g.
    /// `--server-arg=--no-history` or `--server-arg=--no-index` to see what a feature costs.
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Measure at once, even while creating a file is slow because of deletions made
    /// just before (see the note the bench prints then).
    #[arg(long)]
    no_settle: bool,
    /// Where to make the bench's temp folder (default: the system temp folder). Put it on
    /// the disk your stores live on to measure that disk.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => memdir_bin()?,
    };
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("memdir-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let started = Instant::now();
    let result = run(&args, &bin, &work).await;
    let _ = std::fs::remove_dir_all(&work);
    result?;
    println!(
        "\ntotal bench time {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn run(args: &Args, bin: &Path, work: &Path) -> anyhow::Result<()> {
    println!("memdir bench");
    println!("  binary    {} ({})", bin.display(), file_size(bin));
    println!(
        "  temp dir  {} ({}{})",
        work.display(),
        fs_type(work),
        if ext4_without_journal(work) {
            ", no journal"
        } else {
            ""
        }
    );
    println!(
        "  host      {} CPUs, kernel {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    if !args.server_args.is_empty() {
        println!("  server    extra arguments {:?}", args.server_args);
    }
    println!("  latencies in ms; pNN = nearest-rank percentile\n");

    let mut summary = Vec::new();

    // ---- a. spawn → tools/list -------------------------------------------------------
    section("a. spawn → tools/list reply (cold process, MCP initialize + tools/list)");
    let spawn_store = work.join("spawn-store");
    // Search indexes go to the temp folder too (memdir's default is the user's cache).
    let index_dir = work.join("index");
    let mut extra: Vec<std::ffi::OsString> = args.server_args.iter().map(Into::into).collect();
    if !args.server_args.iter().any(|a| a == "--no-index") {
        extra.push("--index-dir".into());
        extra.push(index_dir.clone().into());
    }
    let mut to_init = Vec::new();
    let mut to_tools = Vec::new();
    let mut shutdowns = Vec::new();
    for _ in 0..args.spawns {
        let t0 = Instant::now();
        let (transport, _) = spawn_transport(bin, &[&"--root", &spawn_store], &extra)?;
        let client: Client = ().serve(transport).await.context("MCP handshake")?;
        to_init.push(t0.elapsed());
        let tools = client.list_tools(Default::default()).await?;
        to_tools.push(t0.elapsed());
        if !tools.tools.iter().any(|t| t.name == "memory_read") {
            bail!("tools/list has no memory_read");
        }
        let t1 = Instant::now();
        client.cancel().await?;
        shutdowns.push(t1.elapsed());
    }
    let mut true_floor = Vec::new();
    let mut version_floor = Vec::new();
    for _ in 0..args.spawns {
        true_floor.push(time_process(Path::new("/bin/true"), &[]).await?);
        version_floor.push(time_process(bin, &["--version"]).await?);
    }
    let spawn_stats = Stats::of(&to_tools);
    header();
    row("spawn → tools/list reply", &spawn_stats);
    row("  of which spawn → initialize done", &Stats::of(&to_init));
    row("baseline: spawn + wait /bin/true", &Stats::of(&true_floor));
    row(
        "baseline: spawn + wait memdir --version",
        &Stats::of(&version_floor),
    );
    row(
        "(shutdown: close stdin → exit, untimed)",
        &Stats::of(&shutdowns),
    );
    summary.push(Target {
        what: "spawn → tools/list p50",
        measured: spawn_stats.p50,
        unit: "ms",
        target: TARGET_SPAWN_P50_MS,
    });

    // ---- d (first half). the warm server, idle ----------------------------------------
    // One server for b, c and d: the store `memories` for reads and writes, and the store
    // `corpus` with the generated files for list and search.
    let store = work.join("store");
    let corpus = work.join("corpus");
    let corpus_stats = generate_corpus(&corpus, args.corpus_files)?;
    let corpus_spec = format!("corpus={}", corpus.display());
    let (transport, _) =
        spawn_transport(bin, &[&"--root", &store, &"--store", &corpus_spec], &extra)?;
    let pid = transport.id().context("server pid")?;
    let client: Client = ().serve(transport).await.context("MCP handshake")?;
    client.list_all_tools().await?;
    let idle = Mem::of(pid)?;

    // The first search brings the search index up to date: here it indexes the 1,000
    // generated files. Done now, so that work does not land inside the timed loops.
    let t0 = Instant::now();
    call_ok(
        &client,
        "memory_search",
        json!({"path": "/corpus/", "query": "project"}),
    )
    .await?;
    let first_search = t0.elapsed();

    // ---- b. read / write round trips ----------------------------------------------------
    section(&format!(
        "b. memory_write / memory_read round trips (warm server, rmcp client, {} iterations, 1–4 KB memories)",
        args.iterations
    ));
    let n = args.iterations.max(1);
    let mut rng = Lcg::new(0x6d656d646972);
    let contents: Vec<String> = (0..256)
        .map(|i| {
            let size = 1024 + rng.below(3072) as usize;
            memory_text(&mut rng, i, size)
        })
        .collect();
    let mean_size = contents.iter().map(String::len).sum::<usize>() / contents.len();
    println!(
        "memory sizes: {}–{} bytes, mean {mean_size}",
        contents.iter().map(String::len).min().unwrap_or(0),
        contents.iter().map(String::len).max().unwrap_or(0)
    );

    // Warm-up: first calls pay for thread start-up, page faults and folder creation.
    for i in 0..50 {
        let path = format!("/memories/warmup/{i}.md");
        call_ok(
            &client,
            "memory_write",
            json!({"path": path, "content": contents[i % contents.len()]}),
        )
        .await?;
        call_ok(&client, "memory_read", json!({"path": path})).await?;
    }

    // Each measurement alternates a tool call with its in-process baseline (the same
    // durable write, or the same read, with std::fs), so both see the same disk: on a
    // shared machine fsync latency drifts by whole milliseconds within a minute.
    // With history on, a write also appends its version (with the content) to a log and
    // fdatasyncs it: the baseline does the same, so it is the disk work the write cannot
    // avoid, and the overhead below is what MCP and the server add beyond it.
    let history = !args.server_args.iter().any(|a| a == "--no-history");
    let direct_dir = work.join("direct");
    std::fs::create_dir_all(&direct_dir)?;
    // Every write creates a file (the temp file renamed into place), and what that costs
    // depends on the file system's recent past (see the note printed below): measured
    // alone, before and after the write loops.
    // Where memdir makes its temp files (see `settle`), made by the warm-up's writes.
    let temp_dir = store.join(".memdir/tmp");
    if !args.no_settle {
        let mut dirs = vec![direct_dir.as_path()];
        dirs.extend(temp_dir.is_dir().then_some(temp_dir.as_path()));
        settle(&dirs).await?;
    }
    let create_before = create_files(&direct_dir, "before", 200)?;
    let direct_log = history.then(|| direct_dir.join("log.jsonl"));
    let durable =
        |name: &str, bytes: &[u8]| durable_write(&direct_dir, name, bytes, direct_log.as_deref());
    let (write_distinct, direct_distinct) = timed_pairs(
        n,
        |i| {
            let path = format!("/memories/bench/d{i:05}.md");
            (
                "memory_write",
                json!({"path": path, "content": contents[i % contents.len()]}),
            )
        },
        |i| {
            let name = format!("d{i:05}.md");
            durable(&name, contents[i % contents.len()].as_bytes())
        },
        &client,
    )
    .await?;
    let written = write_distinct.len();
    // The same path over and over; each content differs from the last (an identical write
    // is a no-op, which would skip the disk).
    let revision = |i: usize| format!("{}\nrevision {i}\n", contents[i % contents.len()]);
    let (write_same, direct_same) = timed_pairs(
        n,
        |i| {
            let content = revision(i);
            (
                "memory_write",
                json!({"path": "/memories/bench/same.md", "content": content}),
            )
        },
        |i| durable("same.md", revision(i).as_bytes()),
        &client,
    )
    .await?;
    let (read, direct_read) = timed_pairs(
        n,
        |i| {
            let path = format!("/memories/bench/d{:05}.md", i % written);
            ("memory_read", json!({"path": path}))
        },
        |i| std::fs::read(direct_dir.join(format!("d{:05}.md", i % written))).map(drop),
        &client,
    )
    .await?;
    call_ok(
        &client,
        "memory_write",
        json!({"path": "/memories/tiny.md", "content": "one short line\n"}),
    )
    .await?;
    let read_tiny = timed_calls(
        n,
        |_| ("memory_read", json!({"path": "/memories/tiny.md"})),
        &client,
    )
    .await?;

    let s_wd = Stats::of(&write_distinct);
    let s_ws = Stats::of(&write_same);
    let s_r = Stats::of(&read);
    header();
    row("memory_write, distinct paths (new file)", &s_wd);
    row("memory_write, same path (replace)", &s_ws);
    row("memory_read, 1–4 KB", &s_r);
    row("memory_read, 15-byte memory", &Stats::of(&read_tiny));
    let b_wd = Stats::of(&direct_distinct);
    let b_ws = Stats::of(&direct_same);
    let b_r = Stats::of(&direct_read);
    row("baseline: std::fs durable write, distinct", &b_wd);
    row("baseline: std::fs durable write, same path", &b_ws);
    row("baseline: std::fs::read, 1–4 KB", &b_r);
    let create_after = create_files(&direct_dir, "after", 200)?;
    let (c_before, c_after) = (Stats::of(&create_before), Stats::of(&create_after));
    row("create an empty file, before the loops", &c_before);
    row("create an empty file, after the loops", &c_after);
    if history {
        println!(
            "(durable write = temp file + write + fsync + rename + fsync folder, then a log line with the content appended + fdatasync, as history does)"
        );
    } else {
        println!("(durable write = temp file + write + fsync + rename + fsync folder)");
    }
    if c_before.p50.max(c_after.p50) > SLOW_CREATE_MS {
        println!(
            "(note: creating a file took {:.3} / {:.3} ms p50 here, where ~0.02 ms is usual; every write creates one, in memdir and in the baseline{})",
            c_before.p50,
            c_after.p50,
            if ext4_without_journal(work) {
                format!(". {EXT4_RECENTLY_FREED}")
            } else {
                String::new()
            }
        );
    }
    println!("\ndrift (p50 of the first vs the last tenth of each loop):");
    drift("memory_write, distinct", &write_distinct);
    drift("memory_write, same path", &write_same);
    drift("memory_read", &read);
    drift("baseline write, distinct", &direct_distinct);
    drift("baseline write, same path", &direct_same);
    println!("\nMCP + server overhead at p50 (round trip vs in-process):");
    overhead("write, distinct", &s_wd, &b_wd);
    overhead("write, same path", &s_ws, &b_ws);
    overhead("read", &s_r, &b_r);
    summary.push(Target {
        what: "memory_read round trip p50",
        measured: s_r.p50,
        unit: "ms",
        target: TARGET_ROUND_TRIP_P50_MS,
    });
    summary.push(Target {
        what: "memory_write round trip p50 (distinct)",
        measured: s_wd.p50,
        unit: "ms",
        target: TARGET_ROUND_TRIP_P50_MS,
    });
    summary.push(Target {
        what: "memory_write round trip p50 (same path)",
        measured: s_ws.p50,
        unit: "ms",
        target: TARGET_ROUND_TRIP_P50_MS,
    });

    // ---- c. list / search over 1,000 files ----------------------------------------------
    section(&format!(
        "c. memory_list / memory_search over {} generated files ({} folders, {} KB, {} with Russian/Chinese lines; {} iterations)",
        corpus_stats.files,
        corpus_stats.folders,
        corpus_stats.bytes / 1024,
        corpus_stats.non_latin,
        args.scan_iterations
    ));
    let m = args.scan_iterations.max(1);
    let queries = [
        "project",
        "deadline budget",
        "\"release notes\"",
        "migrat*",
        "server latency cache",
        "память",
        "数据库",
        "zzyzx-not-there",
    ];
    let list_page =
        timed_calls(m, |_| ("memory_list", json!({"path": "/corpus/"})), &client).await?;
    let list_all = timed_calls(
        m,
        |_| ("memory_list", json!({"path": "/corpus/", "limit": 1000})),
        &client,
    )
    .await?;
    let list_tree = timed_calls(
        m,
        |_| ("memory_list", json!({"path": "/corpus/", "depth": 1})),
        &client,
    )
    .await?;
    let search = timed_calls(
        m,
        |i| {
            (
                "memory_search",
                json!({"path": "/corpus/", "query": queries[i % queries.len()]}),
            )
        },
        &client,
    )
    .await?;
    let mut per_query = Vec::new();
    for q in &queries {
        let samples = timed_calls(
            (m / 4).max(5),
            |_| ("memory_search", json!({"path": "/corpus/", "query": q})),
            &client,
        )
        .await?;
        let hits = call_ok(
            &client,
            "memory_search",
            json!({"path": "/corpus/", "query": q}),
        )
        .await?["total_hits"]
            .as_u64()
            .unwrap_or(0);
        per_query.push((q, hits, Stats::of(&samples)));
    }
    println!(
        "first memory_search after start-up (indexes the {} files): {:.1} ms",
        corpus_stats.files,
        first_search.as_secs_f64() * 1e3
    );
    header();
    row(
        "memory_list /corpus/ (first page, 200)",
        &Stats::of(&list_page),
    );
    row("memory_list /corpus/ limit 1000", &Stats::of(&list_all));
    row(
        "memory_list /corpus/ depth 1 (tree)",
        &Stats::of(&list_tree),
    );
    row("memory_search /corpus/ (query mix)", &Stats::of(&search));
    for (q, hits, stats) in &per_query {
        row(&format!("  search {q} ({hits} hits)"), stats);
    }
    let corpus_bytes = corpus_stats.bytes as f64;
    let walk = timed_local(m.min(50), |_| {
        let mut total = 0usize;
        for e in walkdir::WalkDir::new(&corpus)
            .into_iter()
            .filter_map(Result::ok)
        {
            if e.file_type().is_file() {
                total += std::fs::read(e.path())?.len();
            }
        }
        if (total as f64) < corpus_bytes {
            return Err(std::io::Error::other("short read"));
        }
        Ok(())
    })?;
    row(
        "baseline: walkdir + std::fs::read all files",
        &Stats::of(&walk),
    );

    // ---- d. memory ------------------------------------------------------------------------
    let after = Mem::of(pid)?;
    section("d. server memory (/proc/<pid>/status)");
    println!("{:<44} {:>10} {:>10}", "", "VmHWM (peak)", "VmRSS (now)");
    println!(
        "{:<44} {:>9.1}M {:>10.1}M",
        "idle, after initialize + tools/list", idle.hwm_mb, idle.rss_mb
    );
    println!(
        "{:<44} {:>9.1}M {:>10.1}M",
        "after the workload (b + c)", after.hwm_mb, after.rss_mb
    );
    summary.push(Target {
        what: "idle peak RSS (VmHWM)",
        measured: idle.hwm_mb,
        unit: "MB",
        target: TARGET_IDLE_RSS_MB,
    });
    client.cancel().await?;

    // ---- summary ----------------------------------------------------------------------------
    section("summary");
    println!(
        "{:<42} {:>10} {:>10}  result",
        "metric", "measured", "target"
    );
    for t in &summary {
        println!(
            "{:<42} {:>7.3} {:<2} {:>3}{:>5.1} {:<2}  {}",
            t.what,
            t.measured,
            t.unit,
            "≤",
            t.target,
            t.unit,
            if t.measured <= t.target {
                "PASS"
            } else {
                "MISS"
            }
        );
    }
    println!(
        "\n(write p50 minus the in-process durable write's p50 = {:.3} ms distinct, {:.3} ms same path: the part MCP + the server add on top of the disk)",
        s_wd.p50 - b_wd.p50,
        s_ws.p50 - b_ws.p50
    );
    Ok(())
}

// ---- measuring ----------------------------------------------------------------------------

#[path = "common/host.rs"]
mod host;
use host::{ext4_without_journal, fs_type, memdir_bin};

#[path = "common/stats.rs"]
mod stats;
use stats::Stats;

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

fn drift(label: &str, samples: &[Duration]) {
    let tenth = (samples.len() / 10).max(1);
    let first = Stats::of(&samples[..tenth.min(samples.len())]);
    let last = Stats::of(&samples[samples.len().saturating_sub(tenth)..]);
    println!(
        "  {:<26} {:>8.3} ms → {:>8.3} ms  ({} calls each)",
        label, first.p50, last.p50, tenth
    );
}

fn overhead(label: &str, mcp: &Stats, direct: &Stats) {
    println!(
        "  {:<18} {:>8.3} ms vs {:>8.3} ms  = {:>6.1}x  (+{:.3} ms)",
        label,
        mcp.p50,
        direct.p50,
        mcp.p50 / direct.p50,
        mcp.p50 - direct.p50
    );
}

struct Target {
    what: &'static str,
    measured: f64,
    unit: &'static str,
    target: f64,
}

/// Runs up to `n` tool calls (`make(i)` gives the tool and its arguments) and returns each
/// call's round-trip time; arguments are built before the clock starts. Every call must
/// succeed.
async fn timed_calls(
    n: usize,
    mut make: impl FnMut(usize) -> (&'static str, Value),
    client: &Client,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(n);
    let phase = Instant::now();
    for i in 0..n {
        let (tool, args) = make(i);
        let Value::Object(map) = args else {
            bail!("tool arguments must be an object")
        };
        let request = CallToolRequestParams::new(tool).with_arguments(map);
        let t0 = Instant::now();
        let result = client.call_tool(request).await?;
        samples.push(t0.elapsed());
        if result.is_error.unwrap_or(false) {
            bail!("{tool} failed: {:?}", result.content);
        }
        if phase.elapsed() > PHASE_BUDGET {
            println!(
                "(note: {tool} loop stopped after {} of {n} calls: time budget)",
                i + 1
            );
            break;
        }
    }
    Ok(samples)
}

/// Alternates `n` tool calls with `n` runs of an in-process operation (call i, then local
/// i) and returns both sets of timings.
async fn timed_pairs(
    n: usize,
    mut make: impl FnMut(usize) -> (&'static str, Value),
    mut local: impl FnMut(usize) -> std::io::Result<()>,
    client: &Client,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let (mut remote, mut direct) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let phase = Instant::now();
    for i in 0..n {
        let (tool, args) = make(i);
        let Value::Object(map) = args else {
            bail!("tool arguments must be an object")
        };
        let request = CallToolRequestParams::new(tool).with_arguments(map);
        let t0 = Instant::now();
        let result = client.call_tool(request).await?;
        remote.push(t0.elapsed());
        if result.is_error.unwrap_or(false) {
            bail!("{tool} failed: {:?}", result.content);
        }
        let t0 = Instant::now();
        local(i)?;
        direct.push(t0.elapsed());
        if phase.elapsed() > PHASE_BUDGET {
            println!(
                "(note: {tool} loop stopped after {} of {n} pairs: time budget)",
                i + 1
            );
            break;
        }
    }
    Ok((remote, direct))
}

/// Times up to `n` runs of an in-process operation.
fn timed_local(
    n: usize,
    mut op: impl FnMut(usize) -> std::io::Result<()>,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(n);
    let phase = Instant::now();
    for i in 0..n {
        let t0 = Instant::now();
        op(i)?;
        samples.push(t0.elapsed());
        if phase.elapsed() > PHASE_BUDGET {
            println!(
                "(note: baseline loop stopped after {} of {n} runs: time budget)",
                i + 1
            );
            break;
        }
    }
    Ok(samples)
}

/// Above this p50, creating an empty file is slow (~0.02 ms is usual on a local disk).
const SLOW_CREATE_MS: f64 = 0.08;

/// How long `settle` waits once creating a file is slow: every inode freed before then is
/// past the kernel's longest window (60 s, plus 300 s while its inode table block is not
/// yet written back, which the bench's own creations in that block also cause).
const SETTLE_WAIT: Duration = Duration::from_secs(360);
/// How often `settle` reports while it waits.
const SETTLE_STEP: Duration = Duration::from_secs(30);
/// Files `settle` creates per probe.
const SETTLE_PROBE: usize = 400;

const EXT4_RECENTLY_FREED: &str = "this file system is ext4 without a journal, which does not reuse an inode freed in the last 1–6 minutes, and allocating a new one steps over each of them: right after thousands of deletions nearby (an earlier bench run's clean-up, the test suite) a file costs 0.2–0.9 ms to create until they age";

/// Times creating `n` empty files in `dir` (made if missing), named `<tag><i>`. They stay
/// until the bench's clean-up: deleting them now would slow the next creations (see
/// `EXT4_RECENTLY_FREED`).
fn create_files(dir: &Path, tag: &str, n: usize) -> anyhow::Result<Vec<Duration>> {
    std::fs::create_dir_all(dir)?;
    timed_local(n, |i| {
        File::options()
            .write(true)
            .create_new(true)
            .open(dir.join(format!("{tag}{i}")))
            .map(drop)
    })
}

/// Every write creates a file. When that is slow on ext4 because of deletions made just
/// before (`EXT4_RECENTLY_FREED`), a run measures those deletions rather than memdir or
/// the disk: wait `SETTLE_WAIT`, after which every inode freed before the wait began is
/// past the kernel's window, and say so. Only a wait that long is sure: a probe that
/// finds creation cheap again may have been given inodes past the freed ones, while the
/// loops' thousands of creations would still step over them.
///
/// The probe creates files in the folders the timed writes create theirs in (`dirs`): a
/// new file's inode comes from its folder's group of inodes, and another folder, even a
/// sibling, may sit in a group the deletions did not touch.
async fn settle(dirs: &[&Path]) -> anyhow::Result<()> {
    if !dirs.iter().all(|d| ext4_without_journal(d)) {
        return Ok(());
    }
    let mut probes = 0;
    let mut probe = || -> anyhow::Result<f64> {
        probes += 1;
        let mut p50 = 0f64;
        for dir in dirs {
            let samples = create_files(dir, &format!("settle-{probes}-"), SETTLE_PROBE)?;
            // Later creations step over more of the freed inodes: they tell.
            p50 = p50.max(Stats::of(&samples[samples.len() / 2..]).p50);
        }
        Ok(p50)
    };
    let p50 = probe()?;
    if p50 <= SLOW_CREATE_MS {
        return Ok(());
    }
    println!(
        "creating a file takes {p50:.3} ms p50 here, where ~0.02 ms is usual: {EXT4_RECENTLY_FREED}. Waiting {} s for that (--no-settle measures at once).",
        SETTLE_WAIT.as_secs()
    );
    let started = Instant::now();
    while started.elapsed() < SETTLE_WAIT {
        tokio::time::sleep(SETTLE_STEP.min(SETTLE_WAIT - started.elapsed())).await;
        println!(
            "  {:>3.0} s: {:.3} ms",
            started.elapsed().as_secs_f64(),
            probe()?
        );
    }
    println!();
    Ok(())
}

/// One tool call that must succeed; returns its structured content.
async fn call_ok(client: &Client, tool: &'static str, args: Value) -> anyhow::Result<Value> {
    let Value::Object(map) = args else {
        bail!("tool arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
        .await?;
    if result.is_error.unwrap_or(false) {
        bail!("{tool} failed: {:?}", result.content);
    }
    Ok(result.structured_content.unwrap_or(Value::Null))
}

/// What memdir's store does for one write, done directly: temp file, write, fsync,
/// rename into place, fsync the folder.
fn durable_write(dir: &Path, name: &str, bytes: &[u8], log: Option<&Path>) -> std::io::Result<()> {
    let temp = dir.join(format!(".tmp-{name}"));
    let mut f = File::options().write(true).create_new(true).open(&temp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&temp, dir.join(name))?;
    File::open(dir)?.sync_all()?;
    if let Some(log) = log {
        let line =
            serde_json::to_vec(&json!({"path": name, "content": String::from_utf8_lossy(bytes)}))?;
        let mut f = File::options().append(true).create(true).open(log)?;
        f.write_all(&line)?;
        f.write_all(b"\n")?;
        f.sync_data()?;
    }
    Ok(())
}

/// Spawns memdir with piped stdin/stdout (stderr discarded) at the default log level.
fn spawn_transport(
    bin: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    extra: &[std::ffi::OsString],
) -> anyhow::Result<(TokioChildProcess, Option<tokio::process::ChildStderr>)> {
    let cmd = Command::new(bin).configure(|c| {
        for a in args {
            c.arg(a);
        }
        c.args(extra);
        c.env_remove("RUST_LOG");
    });
    TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {}", bin.display()))
}

/// Spawn + wait of a process with null stdio: the process-creation floor.
async fn time_process(bin: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    let status = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await?;
    let elapsed = t0.elapsed();
    if !status.success() {
        bail!("{} {args:?} failed: {status}", bin.display());
    }
    Ok(elapsed)
}

/// VmHWM and VmRSS of a process, in MiB.
struct Mem {
    hwm_mb: f64,
    rss_mb: f64,
}

impl Mem {
    fn of(pid: u32) -> anyhow::Result<Mem> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        let field = |name: &str| -> anyhow::Result<f64> {
            let line = status
                .lines()
                .find(|l| l.starts_with(name))
                .with_context(|| format!("no {name} in /proc/{pid}/status"))?;
            let kb: f64 = line
                .split_whitespace()
                .nth(1)
                .context("malformed status line")?
                .parse()?;
            Ok(kb / 1024.0)
        };
        Ok(Mem {
            hwm_mb: field("VmHWM:")?,
            rss_mb: field("VmRSS:")?,
        })
    }
}

// ---- generated content ----------------------------------------------------------------------

/// A small deterministic generator (Knuth's MMIX LCG), so every run sees the same data.
struct Lcg(u64);

impl Lcg {
    fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }

    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u32) as usize]
    }
}

const WORDS: &[&str] = &[
    "the",
    "project",
    "build",
    "release",
    "notes",
    "server",
    "client",
    "memory",
    "file",
    "folder",
    "search",
    "index",
    "cache",
    "latency",
    "budget",
    "deadline",
    "team",
    "meeting",
    "decision",
    "because",
    "should",
    "will",
    "after",
    "before",
    "test",
    "tests",
    "failing",
    "passing",
    "deploy",
    "staging",
    "production",
    "database",
    "schema",
    "migration",
    "migrate",
    "rollback",
    "config",
    "option",
    "default",
    "user",
    "users",
    "customer",
    "invoice",
    "payment",
    "error",
    "warning",
    "timeout",
    "retry",
    "queue",
    "worker",
    "thread",
    "lock",
    "write",
    "read",
    "sync",
    "disk",
    "network",
    "request",
    "response",
    "header",
    "token",
    "session",
    "login",
    "account",
    "report",
    "weekly",
    "monthly",
    "review",
    "draft",
    "plan",
    "next",
    "step",
    "done",
    "todo",
    "blocked",
    "owner",
    "alice",
    "bob",
    "carol",
    "dave",
    "rust",
    "python",
    "cargo",
    "clippy",
    "format",
    "lint",
    "benchmark",
    "profile",
    "memory",
    "allocation",
    "vector",
    "string",
    "parse",
    "render",
    "snippet",
    "query",
    "ranking",
    "score",
    "prefix",
    "phrase",
    "unicode",
    "chinese",
    "russian",
    "english",
    "a",
    "an",
    "of",
    "to",
    "in",
    "for",
    "on",
    "with",
    "and",
    "or",
    "not",
    "is",
    "was",
    "are",
    "it",
    "this",
    "that",
    "we",
    "they",
    "from",
    "by",
    "at",
    "as",
    "be",
    "have",
    "has",
];

const RUSSIAN: &[&str] = &[
    "Заметка: память агента хранится в обычных файлах.",
    "Сервер отвечает быстро, но запись ждёт fsync.",
    "Следующий шаг: проверить поиск по русскому тексту.",
    "Встреча перенесена на пятницу, бюджет утверждён.",
];

const CHINESE: &[&str] = &[
    "数据库迁移已经完成，下一步是性能测试。",
    "这个项目的发布说明需要更新。",
    "服务器延迟在高峰时段增加。",
    "记忆文件使用普通文本保存。",
];

const TYPES: &[&str] = &["project", "user", "feedback", "reference"];

/// A markdown memory of about `target` bytes, with frontmatter.
fn memory_text(rng: &mut Lcg, id: usize, target: usize) -> String {
    let mut s = format!(
        "---\ndescription: {} {} {} notes {id}\ntype: {}\n---\n# {} {}\n\n",
        rng.pick(WORDS),
        rng.pick(WORDS),
        rng.pick(WORDS),
        rng.pick(TYPES),
        rng.pick(WORDS),
        rng.pick(WORDS)
    );
    while s.len() < target {
        s.push_str(&sentence(rng));
        s.push('\n');
    }
    s
}

fn sentence(rng: &mut Lcg) -> String {
    let n = 6 + rng.below(12) as usize;
    let mut words: Vec<&str> = (0..n).map(|_| rng.pick(WORDS)).collect();
    if rng.below(3) == 0 {
        words.insert(0, "-");
    }
    let mut line = words.join(" ");
    line.push('.');
    line
}

struct CorpusStats {
    files: usize,
    folders: usize,
    bytes: u64,
    non_latin: usize,
}

/// Writes `files` small memories (100–900 bytes) into 20 folders; about one in ten gets a
/// Russian or Chinese line.
fn generate_corpus(dir: &Path, files: usize) -> anyhow::Result<CorpusStats> {
    let mut rng = Lcg::new(1000);
    let folders = 20;
    let mut stats = CorpusStats {
        files,
        folders,
        bytes: 0,
        non_latin: 0,
    };
    for f in 0..folders {
        std::fs::create_dir_all(dir.join(format!("topic-{f:02}")))?;
    }
    for i in 0..files {
        let target = 100 + rng.below(800) as usize;
        let mut text = if rng.below(2) == 0 {
            memory_text(&mut rng, i, target)
        } else {
            let mut s = format!("# note {i}\n");
            while s.len() < target {
                s.push_str(&sentence(&mut rng));
                s.push('\n');
            }
            s
        };
        match rng.below(20) {
            0 => {
                text.push_str(rng.pick(RUSSIAN));
                text.push('\n');
                stats.non_latin += 1;
            }
            1 => {
                text.push_str(rng.pick(CHINESE));
                text.push('\n');
                stats.non_latin += 1;
            }
            _ => {}
        }
        stats.bytes += text.len() as u64;
        std::fs::write(
            dir.join(format!("topic-{:02}/note-{i:04}.md", i % folders)),
            text,
        )?;
    }
    Ok(stats)
}

// ---- environment ----------------------------------------------------------------------------

fn file_size(path: &Path) -> String {
    std::fs::metadata(path)
        .map(|m| format!("{:.1} MB", m.len() as f64 / 1e6))
        .unwrap_or_else(|e| e.to_string())
}
