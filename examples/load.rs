//! memdir's multi-client load program: a program, not a test.
//!
//! ```text
//! cargo build --release && cargo build --release --examples
//! cargo run --release --example load -- \
//!     [--clients 8] [--ops 1000] [--seed N] [--keep DIR] [--bin PATH] [--processes 2]
//! ```
//!
//! Several agents sharing one store, as in production: every client has its own `memdir`
//! server process on the same store, spoken to through the rmcp client over stdio. Of the
//! clients, `--processes` run in separate OS processes (this program re-executes itself
//! with a hidden `--worker ID` and reads the worker's log back as JSON lines on its
//! stdout); the others are tokio tasks here. Each client runs `--ops` operations drawn
//! from a seeded xorshift generator (the same sequence for the same seed):
//!
//! - `memory_write` / `memory_read` / `memory_edit` (`append_text`, `str_replace`) /
//!   `memory_delete` of its own files, each read checked against what the client knows it
//!   wrote, each mutation sha-guarded (`expected_sha256` or `if_absent`);
//! - `memory_list` of its own folder (must list exactly its live files) and
//!   `memory_search` (for a word, or for the unique marker of one of its files, which
//!   must be found: read-your-writes through the shared index);
//! - increments of a few counters every client shares: read, then write `n + 1` with
//!   `expected_sha256`; a precondition failure is a conflict, re-read and retried.
//!
//! Every acknowledged mutation is logged with its resulting `content_sha256`. At the end
//! the store on disk is checked against the logs: each own file holds the bytes of the
//! last acknowledged state (or is absent after a delete), each counter equals the number
//! of acknowledged increments and no two increments acknowledged the same value, and no
//! temp file is left behind. It prints throughput, per-tool latency, conflicts and the
//! verification result, and exits non-zero on any mismatch.
//!
//! The memdir binary is `--bin`, else `$MEMDIR_BIN`, else `memdir` next to this
//! program's folder (`target/release/memdir` for `target/release/examples/load`): build
//! it with `cargo build --release` first. Search indexes go to the work folder, which is a
//! temp folder removed at the end unless `--keep DIR` names one to keep.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

type Client = RunningService<RoleClient, ClientConfig>;

#[derive(Debug, Clone, Parser)]
#[command(about = "memdir multi-client load and consistency check")]
struct Args {
    /// Concurrent clients, each with its own memdir server on the one store.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Operations per client.
    #[arg(long, default_value_t = 1000)]
    ops: usize,
    /// Seed of the operation mix (each client derives its own generator from it).
    #[arg(long, default_value_t = 0x10ad_5eed)]
    seed: u64,
    /// Work in DIR (store and search index) and keep it afterwards, instead of a temp
    /// folder that is removed. DIR must not hold a store yet.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// The memdir binary (default: $MEMDIR_BIN, else `memdir` next to this program's
    /// folder, i.e. target/release/memdir).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// How many of the clients run in their own OS process rather than as tasks here.
    #[arg(long, default_value_t = 2)]
    processes: usize,
    /// Own files per client.
    #[arg(long, default_value_t = 8)]
    files: usize,
    /// Counters shared by all clients.
    #[arg(long, default_value_t = 4)]
    counters: usize,
    /// Internal: run as worker client ID (reports on stdout, waits for `go` on stdin).
    #[arg(long, hide = true)]
    worker: Option<usize>,
    /// Internal: the store a worker serves.
    #[arg(long, hide = true)]
    store: Option<PathBuf>,
    /// Internal: the search index folder a worker's server uses.
    #[arg(long, hide = true)]
    index_dir: Option<PathBuf>,
}

/// One acknowledged mutation, in the client's order.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Ack {
    client: usize,
    seq: u64,
    op: String,
    /// The memory path as the tools take it (`/memories/...`).
    path: String,
    /// The resulting `content_sha256`; `None` after a delete.
    sha: Option<String>,
    /// For increments: the value written.
    value: Option<u64>,
}

/// One timed tool call (or one whole increment, retries included).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sample {
    tool: String,
    micros: u64,
}

/// What a client did, as the verification and the figures need it.
#[derive(Debug, Default)]
struct Report {
    client: usize,
    acks: Vec<Ack>,
    samples: Vec<Sample>,
    /// Anything a client saw that should not happen (an unexpected tool error, a read
    /// that differs from what it wrote, a search that misses its own marker...).
    problems: Vec<String>,
    ops: u64,
    increments: u64,
    conflicts: u64,
}

/// A worker's stdout, one JSON object per line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum WorkerLine {
    Ready,
    Ack(Ack),
    Sample(Sample),
    Problem {
        message: String,
    },
    Done {
        ops: u64,
        increments: u64,
        conflicts: u64,
    },
}

/// What every client needs to know.
#[derive(Debug, Clone)]
struct Plan {
    bin: PathBuf,
    store: PathBuf,
    index: PathBuf,
    ops: usize,
    seed: u64,
    files: usize,
    counters: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = match args.worker {
        Some(id) => runtime.block_on(worker(&args, id)).map(|()| true),
        None => runtime.block_on(parent(&args)),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("load: {e:#}");
            ExitCode::from(2)
        }
    }
}

// ---- the parent ------------------------------------------------------------------------

/// Runs the load and the verification; `Ok(false)` when the store does not match the logs.
async fn parent(args: &Args) -> anyhow::Result<bool> {
    if args.clients == 0 || args.processes > args.clients {
        bail!("need at least one client and --processes ≤ --clients");
    }
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => memdir_bin()?,
    };
    let (work, temporary) = match &args.keep {
        Some(dir) => {
            if dir.join("store").exists() {
                bail!(
                    "{} already holds a store; pick a new --keep DIR",
                    dir.display()
                );
            }
            (dir.clone(), false)
        }
        None => (
            std::env::temp_dir().join(format!("memdir-load-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(work.join("store"))?;
    let plan = Plan {
        bin,
        store: work.join("store"),
        index: work.join("index"),
        ops: args.ops,
        seed: args.seed,
        files: args.files.max(1),
        counters: args.counters.max(1),
    };
    let result = run(args, &plan).await;
    if temporary {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        println!("\nkept the store in {}", plan.store.display());
    }
    result
}

async fn run(args: &Args, plan: &Plan) -> anyhow::Result<bool> {
    let in_process = args.clients - args.processes;
    println!("memdir load");
    println!("  binary    {}", plan.bin.display());
    println!(
        "  store     {} ({})",
        plan.store.display(),
        fs_type(&plan.store)
    );
    println!(
        "  host      {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "  clients   {} ({in_process} tasks here, {} worker processes), each with its own memdir",
        args.clients, args.processes
    );
    println!(
        "  work      {} ops per client, seed {:#x}, {} own files per client, {} shared counters",
        plan.ops, plan.seed, plan.files, plan.counters
    );

    // The counters exist before anyone increments them.
    let setup = connect(plan, "load-setup").await?;
    for j in 0..plan.counters {
        let out = call(
            &setup,
            "memory_write",
            json!({"path": counter_path(j), "content": counter_text(0), "if_absent": true}),
        )
        .await?;
        if out.is_error {
            bail!("creating {}: {}", counter_path(j), out.text);
        }
    }
    setup.cancel().await?;

    // Start everyone, wait until every client has its server up, then let them go at once
    // so the clock measures the operations, not process start-up.
    let (go_tx, go_rx) = tokio::sync::watch::channel(false);
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(args.clients);
    let mut tasks = Vec::new();
    for id in 0..in_process {
        let plan = plan.clone();
        let mut go = go_rx.clone();
        let ready = ready_tx.clone();
        tasks.push(tokio::spawn(async move {
            // Ready even when the start failed, so the parent never waits for it.
            let client = connect(&plan, &format!("load-c{id:02}")).await;
            ready.send(()).await.ok();
            let client = client?;
            go.wait_for(|go| *go).await.ok();
            let report = Load::new(id, &plan, &client).run().await;
            client.cancel().await.ok();
            anyhow::Ok(report)
        }));
    }
    let mut workers = Vec::new();
    for id in in_process..args.clients {
        workers.push(Worker::spawn(plan, id)?);
    }
    for _ in 0..in_process {
        ready_rx
            .recv()
            .await
            .context("a client task failed to start")?;
    }
    for w in &mut workers {
        w.wait_ready().await?;
    }

    let t0 = Instant::now();
    go_tx.send(true).ok();
    for w in &mut workers {
        w.go().await?;
    }
    let mut reports = Vec::new();
    for task in tasks {
        reports.push(task.await.context("client task panicked")??);
    }
    for w in workers {
        reports.push(w.finish().await?);
    }
    let elapsed = t0.elapsed();
    reports.sort_by_key(|r| r.client);

    print_figures(&reports, elapsed);
    let mismatches = verify(plan, &reports);
    section("verification");
    let problems: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.problems
                .iter()
                .map(move |p| format!("client {}: {p}", r.client))
        })
        .collect();
    println!(
        "checked {} own files of {} clients, {} counters, temp files",
        plan.files * reports.len(),
        reports.len(),
        plan.counters
    );
    if mismatches.is_empty() && problems.is_empty() {
        println!("PASS: the store matches every client's log of acknowledged operations");
        return Ok(true);
    }
    if !mismatches.is_empty() {
        println!(
            "FAIL: {} mismatches between the store and the logs:",
            mismatches.len()
        );
        for m in &mismatches {
            println!("  {m}");
        }
    }
    if !problems.is_empty() {
        println!("FAIL: {} problems seen by clients:", problems.len());
        for p in problems.iter().take(50) {
            println!("  {p}");
        }
        if problems.len() > 50 {
            println!("  ... and {} more", problems.len() - 50);
        }
    }
    Ok(false)
}

fn print_figures(reports: &[Report], elapsed: Duration) {
    let ops: u64 = reports.iter().map(|r| r.ops).sum();
    let mut by_tool: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for s in reports.iter().flat_map(|r| &r.samples) {
        by_tool
            .entry(s.tool.as_str())
            .or_default()
            .push(Duration::from_micros(s.micros));
    }
    let calls: usize = by_tool
        .iter()
        .filter(|(tool, _)| tool.starts_with("memory_"))
        .map(|(_, v)| v.len())
        .sum();
    section("throughput");
    println!(
        "{ops} operations ({calls} tool calls) by {} clients in {:.2} s",
        reports.len(),
        elapsed.as_secs_f64()
    );
    println!(
        "  {:.0} ops/s, {:.0} tool calls/s",
        ops as f64 / elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64()
    );
    section("latency per tool (ms; pNN = nearest-rank percentile; round trip through rmcp)");
    println!(
        "{:<44} {:>6} {:>8} {:>8} {:>8}",
        "", "n", "p50", "p99", "max"
    );
    for (tool, samples) in &by_tool {
        let s = Stats::of(samples);
        println!(
            "{:<44} {:>6} {:>8.3} {:>8.3} {:>8.3}",
            tool, s.n, s.p50, s.p99, s.max
        );
    }
    let increments: u64 = reports.iter().map(|r| r.increments).sum();
    let conflicts: u64 = reports.iter().map(|r| r.conflicts).sum();
    section("shared counters");
    println!(
        "{increments} acknowledged increments; {conflicts} precondition conflicts re-read and retried ({:.2} per increment)",
        conflicts as f64 / increments.max(1) as f64
    );
}

/// Compares the store on disk with the logs; returns every mismatch.
fn verify(plan: &Plan, reports: &[Report]) -> Vec<String> {
    let mut mismatches = Vec::new();
    let on_disk = |path: &str| -> Option<Vec<u8>> {
        let relative = path.strip_prefix("/memories/").expect("a /memories/ path");
        std::fs::read(plan.store.join(relative)).ok()
    };
    for r in reports {
        // Own files: the last acknowledged state of each.
        let mut last: BTreeMap<&str, &Ack> = BTreeMap::new();
        for a in &r.acks {
            if a.op != "increment" {
                last.insert(a.path.as_str(), a);
            }
        }
        for k in 0..plan.files {
            let path = own_path(r.client, k);
            let disk = on_disk(&path);
            match (last.get(path.as_str()), disk) {
                (None, None) => {}
                (None, Some(_)) => {
                    mismatches.push(format!("{path}: exists, but no write was acknowledged"))
                }
                (Some(a), None) if a.sha.is_none() => {}
                (Some(a), None) => mismatches.push(format!(
                    "{path}: missing, but op {} ({}) acknowledged sha {}",
                    a.seq,
                    a.op,
                    a.sha.as_deref().unwrap_or("-")
                )),
                (Some(a), Some(bytes)) => {
                    let sha = memdir::text::sha256_hex(&bytes);
                    if a.sha.as_deref() != Some(sha.as_str()) {
                        mismatches.push(format!(
                            "{path}: holds sha {sha}, but the last acknowledged op {} ({}) left {}",
                            a.seq,
                            a.op,
                            a.sha.as_deref().unwrap_or("no file")
                        ));
                    }
                }
            }
        }
        // Nothing else in the client's folder.
        let dir = plan.store.join(format!("c{:02}", r.client));
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                let known =
                    (0..plan.files).any(|k| own_path(r.client, k).ends_with(&format!("/{name}")));
                if !known {
                    mismatches.push(format!("{}: unexpected entry {name}", dir.display()));
                }
            }
        }
    }
    // Counters: one acknowledged increment per value 1..=n, and n on disk.
    for j in 0..plan.counters {
        let path = counter_path(j);
        let mut values: Vec<u64> = reports
            .iter()
            .flat_map(|r| &r.acks)
            .filter(|a| a.op == "increment" && a.path == path)
            .filter_map(|a| a.value)
            .collect();
        values.sort_unstable();
        let n = values.len() as u64;
        let distinct: BTreeSet<u64> = values.iter().copied().collect();
        if distinct.len() as u64 != n
            || values.first().is_some_and(|&v| v != 1)
            || values.last().is_some_and(|&v| v != n)
        {
            let dup: Vec<u64> = values
                .windows(2)
                .filter(|w| w[0] == w[1])
                .map(|w| w[0])
                .collect();
            mismatches.push(format!(
                "{path}: acknowledged values are not 1..={n} (duplicates: {dup:?})"
            ));
        }
        match on_disk(&path) {
            Some(bytes) if bytes == counter_text(n).as_bytes() => {}
            Some(bytes) => mismatches.push(format!(
                "{path}: holds {:?}, but {n} increments were acknowledged",
                String::from_utf8_lossy(&bytes)
            )),
            None => mismatches.push(format!("{path}: missing")),
        }
    }
    // No writer left a temp file (every write finished or was never acknowledged).
    for e in walkdir::WalkDir::new(&plan.store)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.file_name().to_string_lossy().starts_with(".memdir-tmp-") {
            mismatches.push(format!("temp file left behind: {}", e.path().display()));
        }
    }
    mismatches
}

// ---- worker processes --------------------------------------------------------------------

/// A client running in another OS process (this program with `--worker ID`).
struct Worker {
    id: usize,
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    stdin: Option<tokio::process::ChildStdin>,
}

impl Worker {
    fn spawn(plan: &Plan, id: usize) -> anyhow::Result<Worker> {
        let exe = std::env::current_exe().context("locating this program")?;
        let mut child = Command::new(exe)
            .arg("--worker")
            .arg(id.to_string())
            .arg("--store")
            .arg(&plan.store)
            .arg("--index-dir")
            .arg(&plan.index)
            .arg("--bin")
            .arg(&plan.bin)
            .arg("--ops")
            .arg(plan.ops.to_string())
            .arg("--seed")
            .arg(plan.seed.to_string())
            .arg("--files")
            .arg(plan.files.to_string())
            .arg("--counters")
            .arg(plan.counters.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting a worker process")?;
        let lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
        let stdin = child.stdin.take();
        Ok(Worker {
            id,
            child,
            lines,
            stdin,
        })
    }

    async fn next(&mut self) -> anyhow::Result<Option<WorkerLine>> {
        match self.lines.next_line().await? {
            None => Ok(None),
            Some(line) => serde_json::from_str(&line)
                .map(Some)
                .with_context(|| format!("worker {} printed {line:?}", self.id)),
        }
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        match self.next().await? {
            Some(WorkerLine::Ready) => Ok(()),
            other => bail!("worker {} did not start: {other:?}", self.id),
        }
    }

    async fn go(&mut self) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("worker stdin")?;
        stdin.write_all(b"go\n").await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Reads the worker's report to the end and waits for it to exit.
    async fn finish(mut self) -> anyhow::Result<Report> {
        let mut report = Report {
            client: self.id,
            ..Report::default()
        };
        let mut done = false;
        while let Some(line) = self.next().await? {
            match line {
                WorkerLine::Ready => {}
                WorkerLine::Ack(a) => report.acks.push(a),
                WorkerLine::Sample(s) => report.samples.push(s),
                WorkerLine::Problem { message } => report.problems.push(message),
                WorkerLine::Done {
                    ops,
                    increments,
                    conflicts,
                } => {
                    report.ops = ops;
                    report.increments = increments;
                    report.conflicts = conflicts;
                    done = true;
                }
            }
        }
        drop(self.stdin.take());
        let status = self.child.wait().await?;
        if !status.success() || !done {
            report.problems.push(format!(
                "worker process ended with {status} before reporting"
            ));
        }
        Ok(report)
    }
}

/// The `--worker ID` side: connect, say `ready`, wait for `go`, run, print the report.
async fn worker(args: &Args, id: usize) -> anyhow::Result<()> {
    let plan = Plan {
        bin: args.bin.clone().context("--bin")?,
        store: args.store.clone().context("--store")?,
        index: args.index_dir.clone().context("--index-dir")?,
        ops: args.ops,
        seed: args.seed,
        files: args.files,
        counters: args.counters,
    };
    let client = connect(&plan, &format!("load-c{id:02}")).await?;
    let mut out = tokio::io::stdout();
    emit(&mut out, &WorkerLine::Ready).await?;
    let mut go = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut go)
        .await?;
    if go.trim() != "go" {
        bail!("worker {id}: expected `go` on stdin, got {go:?}");
    }
    let report = Load::new(id, &plan, &client).run().await;
    client.cancel().await.ok();
    for a in report.acks {
        emit(&mut out, &WorkerLine::Ack(a)).await?;
    }
    for s in report.samples {
        emit(&mut out, &WorkerLine::Sample(s)).await?;
    }
    for message in report.problems {
        emit(&mut out, &WorkerLine::Problem { message }).await?;
    }
    emit(
        &mut out,
        &WorkerLine::Done {
            ops: report.ops,
            increments: report.increments,
            conflicts: report.conflicts,
        },
    )
    .await
}

async fn emit(out: &mut tokio::io::Stdout, line: &WorkerLine) -> anyhow::Result<()> {
    let mut text = serde_json::to_string(line)?;
    text.push('\n');
    out.write_all(text.as_bytes()).await?;
    out.flush().await?;
    Ok(())
}

// ---- one client's load ---------------------------------------------------------------------

/// One of the client's own files, as the client knows it: nobody else touches it.
struct OwnFile {
    path: String,
    content: Option<String>,
    /// Bumped at every write and str_replace, so each state has a unique marker.
    version: u64,
}

struct Load<'a> {
    id: usize,
    client: &'a Client,
    rng: XorShift,
    files: Vec<OwnFile>,
    counters: usize,
    ops: usize,
    report: Report,
    seq: u64,
}

/// A tool call's answer.
struct Outcome {
    is_error: bool,
    text: String,
    structured: Value,
}

impl<'a> Load<'a> {
    fn new(id: usize, plan: &Plan, client: &'a Client) -> Load<'a> {
        Load {
            id,
            client,
            rng: XorShift::new(plan.seed ^ (id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            files: (0..plan.files)
                .map(|k| OwnFile {
                    path: own_path(id, k),
                    content: None,
                    version: 0,
                })
                .collect(),
            counters: plan.counters,
            ops: plan.ops,
            report: Report {
                client: id,
                ..Report::default()
            },
            seq: 0,
        }
    }

    async fn run(mut self) -> Report {
        for _ in 0..self.ops {
            self.seq += 1;
            let k = self.rng.below(self.files.len() as u64) as usize;
            let exists = self.files[k].content.is_some();
            let roll = self.rng.below(100);
            let result = match roll {
                _ if !exists && (18..57).contains(&roll) => self.write(k).await,
                0..18 => self.write(k).await,
                18..36 => self.read(k).await,
                36..44 => self.append(k).await,
                44..52 => self.replace(k).await,
                52..57 => self.delete(k).await,
                57..65 => self.list().await,
                65..75 => self.search(k).await,
                _ => self.increment().await,
            };
            if let Err(e) = result {
                self.report.problems.push(format!("op {}: {e:#}", self.seq));
            }
            self.report.ops += 1;
        }
        self.report
    }

    /// One timed tool call.
    async fn call(&mut self, tool: &'static str, args: Value) -> anyhow::Result<Outcome> {
        let t0 = Instant::now();
        let out = call(self.client, tool, args).await;
        self.report.samples.push(Sample {
            tool: tool.to_owned(),
            micros: t0.elapsed().as_micros() as u64,
        });
        out
    }

    fn ack(&mut self, op: &str, path: &str, sha: Option<String>, value: Option<u64>) {
        self.report.acks.push(Ack {
            client: self.id,
            seq: self.seq,
            op: op.to_owned(),
            path: path.to_owned(),
            sha,
            value,
        });
    }

    /// Checks an acknowledged mutation's sha against the content the client expects.
    fn expect_sha(&mut self, what: &str, out: &Outcome, expected: &str) -> Option<String> {
        let sha = out.structured["content_sha256"].as_str().map(str::to_owned);
        let want = memdir::text::sha256_hex(expected.as_bytes());
        if sha.as_deref() != Some(want.as_str()) {
            self.report.problems.push(format!(
                "op {} {what}: acknowledged sha {sha:?}, expected {want}",
                self.seq
            ));
        }
        sha
    }

    async fn write(&mut self, k: usize) -> anyhow::Result<()> {
        self.files[k].version += 1;
        let content = own_text(self.id, k, self.files[k].version, &mut self.rng);
        let path = self.files[k].path.clone();
        let mut args = json!({"path": path, "content": content});
        match &self.files[k].content {
            Some(old) => args["expected_sha256"] = json!(memdir::text::sha256_hex(old.as_bytes())),
            None => args["if_absent"] = json!(true),
        }
        let out = self.call("memory_write", args).await?;
        if out.is_error {
            bail!("memory_write {path}: {}", out.text);
        }
        let sha = self.expect_sha(&format!("memory_write {path}"), &out, &content);
        self.ack("write", &path, sha, None);
        self.files[k].content = Some(content);
        Ok(())
    }

    async fn read(&mut self, k: usize) -> anyhow::Result<()> {
        let path = self.files[k].path.clone();
        let out = self.call("memory_read", json!({"path": path})).await?;
        if out.is_error {
            bail!("memory_read {path}: {}", out.text);
        }
        let expected = self.files[k].content.clone().unwrap_or_default();
        if out.structured["content"].as_str() != Some(expected.as_str()) {
            bail!("memory_read {path}: content differs from the last acknowledged write");
        }
        Ok(())
    }

    async fn append(&mut self, k: usize) -> anyhow::Result<()> {
        let old = self.files[k].content.clone().unwrap_or_default();
        if old.len() > 16 * 1024 {
            // Keep memories small: start the file over instead.
            return self.write(k).await;
        }
        let text = format!("- note {}: {}\n", self.seq, words(&mut self.rng, 6));
        let path = self.files[k].path.clone();
        let out = self
            .call(
                "memory_edit",
                json!({"path": path, "append_text": text,
                       "expected_sha256": memdir::text::sha256_hex(old.as_bytes())}),
            )
            .await?;
        if out.is_error {
            bail!("memory_edit append {path}: {}", out.text);
        }
        // The server's rule: an appended text starts on a new line.
        let mut new = old;
        if !new.is_empty() && !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str(&text);
        let sha = self.expect_sha(&format!("memory_edit append {path}"), &out, &new);
        self.ack("append", &path, sha, None);
        self.files[k].content = Some(new);
        Ok(())
    }

    async fn replace(&mut self, k: usize) -> anyhow::Result<()> {
        let old = self.files[k].content.clone().unwrap_or_default();
        let old_marker = marker_line(self.id, k, self.files[k].version);
        self.files[k].version += 1;
        let new_marker = marker_line(self.id, k, self.files[k].version);
        let path = self.files[k].path.clone();
        let out = self
            .call(
                "memory_edit",
                json!({"path": path, "old_str": old_marker, "new_str": new_marker,
                       "expected_sha256": memdir::text::sha256_hex(old.as_bytes())}),
            )
            .await?;
        if out.is_error {
            bail!("memory_edit str_replace {path}: {}", out.text);
        }
        let new = old.replacen(&old_marker, &new_marker, 1);
        let sha = self.expect_sha(&format!("memory_edit str_replace {path}"), &out, &new);
        self.ack("str_replace", &path, sha, None);
        self.files[k].content = Some(new);
        Ok(())
    }

    async fn delete(&mut self, k: usize) -> anyhow::Result<()> {
        let old = self.files[k].content.clone().unwrap_or_default();
        let path = self.files[k].path.clone();
        let out = self
            .call(
                "memory_delete",
                json!({"path": path, "expected_sha256": memdir::text::sha256_hex(old.as_bytes())}),
            )
            .await?;
        if out.is_error {
            bail!("memory_delete {path}: {}", out.text);
        }
        self.ack("delete", &path, None, None);
        self.files[k].content = None;
        Ok(())
    }

    /// Lists the client's folder: exactly its live files. (Before it has any, the shared
    /// folder, which always exists.)
    async fn list(&mut self) -> anyhow::Result<()> {
        let live: BTreeSet<String> = self
            .files
            .iter()
            .filter(|f| f.content.is_some())
            .map(|f| f.path.clone())
            .collect();
        let folder = if live.is_empty() {
            "/memories/shared/".to_owned()
        } else {
            format!("/memories/c{:02}/", self.id)
        };
        let out = self.call("memory_list", json!({"path": folder})).await?;
        if out.is_error {
            bail!("memory_list {folder}: {}", out.text);
        }
        if !live.is_empty() {
            let listed: BTreeSet<String> = out.structured["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["path"].as_str().map(str::to_owned))
                .collect();
            if listed != live {
                bail!("memory_list {folder}: listed {listed:?}, live files are {live:?}");
            }
        }
        Ok(())
    }

    /// Searches for a word, or for the unique marker of file `k`, which must be found.
    async fn search(&mut self, k: usize) -> anyhow::Result<()> {
        let own = self.files[k].content.is_some() && self.rng.below(2) == 0;
        let query = if own {
            marker_token(self.id, k, self.files[k].version)
        } else {
            WORDS[self.rng.below(WORDS.len() as u64) as usize].to_owned()
        };
        let out = self
            .call("memory_search", json!({"query": query, "limit": 10}))
            .await?;
        if out.is_error {
            bail!("memory_search {query}: {}", out.text);
        }
        if own {
            let hits: Vec<&str> = out.structured["hits"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|h| h["path"].as_str())
                .collect();
            if hits != [self.files[k].path.as_str()] {
                bail!(
                    "memory_search {query}: hits {hits:?}, expected only {}",
                    self.files[k].path
                );
            }
        }
        Ok(())
    }

    /// Read a shared counter, write n + 1 guarded by the sha read; retry on conflict.
    async fn increment(&mut self) -> anyhow::Result<()> {
        let path = counter_path(self.rng.below(self.counters as u64) as usize);
        let t0 = Instant::now();
        for _ in 0..10_000 {
            let read = self.call("memory_read", json!({"path": path})).await?;
            if read.is_error {
                bail!("memory_read {path}: {}", read.text);
            }
            let content = read.structured["content"].as_str().unwrap_or_default();
            let n: u64 = content
                .strip_prefix("count: ")
                .and_then(|s| s.trim_end().parse().ok())
                .with_context(|| format!("{path} holds {content:?}"))?;
            let sha = read.structured["content_sha256"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let next = counter_text(n + 1);
            let write = self
                .call(
                    "memory_write",
                    json!({"path": path, "content": next, "expected_sha256": sha}),
                )
                .await?;
            if write.is_error {
                if write.text.contains("precondition failed") {
                    self.report.conflicts += 1;
                    continue;
                }
                bail!("memory_write {path}: {}", write.text);
            }
            let sha = self.expect_sha(&format!("increment {path}"), &write, &next);
            self.ack("increment", &path, sha, Some(n + 1));
            self.report.increments += 1;
            self.report.samples.push(Sample {
                tool: "increment (read + guarded write, retries)".to_owned(),
                micros: t0.elapsed().as_micros() as u64,
            });
            return Ok(());
        }
        bail!("increment {path}: still conflicting after 10,000 attempts")
    }
}

/// One tool call; a protocol error is an `Err`, a tool error an `Outcome` with `is_error`.
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

/// Starts a memdir server on the store and connects to it as client `name`.
async fn connect(plan: &Plan, name: &str) -> anyhow::Result<Client> {
    let cmd = Command::new(&plan.bin).configure(|c| {
        c.arg("--root")
            .arg(&plan.store)
            .arg("--index-dir")
            .arg(&plan.index)
            .env("RUST_LOG", "memdir=warn");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("spawning {}", plan.bin.display()))?;
    // The client's name is the actor of its versions in the history.
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, "1.0"),
    );
    info.serve(transport).await.context("MCP handshake")
}

// ---- generated content --------------------------------------------------------------------

fn own_path(client: usize, k: usize) -> String {
    format!("/memories/c{client:02}/f{k:02}.md")
}

fn counter_path(j: usize) -> String {
    format!("/memories/shared/counter-{j}.md")
}

fn counter_text(n: u64) -> String {
    format!("count: {n}\n")
}

/// A single search token (letters and digits only) unique to one state of one file.
fn marker_token(client: usize, k: usize, version: u64) -> String {
    format!("mk{client}x{k}x{version}")
}

fn marker_line(client: usize, k: usize, version: u64) -> String {
    format!("marker: {}\n", marker_token(client, k, version))
}

fn own_text(client: usize, k: usize, version: u64, rng: &mut XorShift) -> String {
    let mut s = format!(
        "---\ndescription: load file {k} of client {client}\n---\n# {}\n{}",
        words(rng, 3),
        marker_line(client, k, version)
    );
    for _ in 0..1 + rng.below(6) {
        let n = 4 + rng.below(10) as usize;
        s.push_str(&words(rng, n));
        s.push('\n');
    }
    s
}

fn words(rng: &mut XorShift, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

const WORDS: &[&str] = &[
    "project",
    "release",
    "server",
    "client",
    "memory",
    "search",
    "index",
    "latency",
    "budget",
    "deadline",
    "decision",
    "deploy",
    "staging",
    "database",
    "schema",
    "migration",
    "rollback",
    "config",
    "customer",
    "invoice",
    "timeout",
    "retry",
    "queue",
    "worker",
    "lock",
    "disk",
    "session",
    "review",
    "plan",
    "blocked",
    "rust",
    "cargo",
    "benchmark",
    "vector",
    "ranking",
    "unicode",
    "the",
    "and",
    "with",
    "after",
];

/// xorshift64*: small, fast and seeded, so every run with one seed does the same work.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // Mix the seed (splitmix64) so nearby seeds differ, and never start at 0.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        XorShift((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ---- measuring and environment ----------------------------------------------------------------

#[path = "common/host.rs"]
mod host;
use host::{fs_type, memdir_bin};

// p95 and mean are there for the benchmark; this program prints p50, p99 and max.
#[allow(dead_code)]
#[path = "common/stats.rs"]
mod stats;
use stats::Stats;

fn section(title: &str) {
    println!("\n=== {title}");
}
