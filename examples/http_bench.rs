//! memdir over HTTP against memdir over stdio: a benchmark program, not a test.
//!
//! ```text
//! cargo build --release && cargo run --release --example http_bench -- \
//!     [--iterations N] [--seconds S] [--memories N] [--bin PATH] [--work-dir DIR]
//! ```
//!
//! One store, two servers on it: `memdir` on stdio (the baseline) and `memdir serve
//! --http 127.0.0.1:0 --tokens FILE`, both driven by rmcp's clients (child process, and
//! streamable HTTP over loopback). It prints, in one run:
//!
//! a. round trips of `memory_read`, `memory_write` (new files, fsync'd) and
//!    `memory_search` (over `--memories` small files), p50/p99, HTTP next to stdio;
//! b. throughput with 1, 8 and 64 concurrent HTTP clients for `--seconds` each: reads,
//!    then writes of new files, with p50/p99; next to the disk's own limit for the same
//!    durable write done in-process (temp file, fsync, rename, fsync of the folder) by one
//!    thread and by 8;
//! c. the HTTP server's resident memory (VmRSS, VmHWM) with 64 clients connected;
//!
//! and a summary against the targets: HTTP read p50 within 0.3 ms of stdio; 64 clients
//! sustain at least 5,000 reads/s; RSS with 64 clients at most 40 MB.

#[path = "common/host.rs"]
mod host;
#[path = "common/stats.rs"]
#[allow(dead_code)]
mod stats;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use stats::Stats;
use tokio::io::{AsyncBufReadExt, BufReader};

type Client = RunningService<RoleClient, ()>;

const TOKEN: &str = "bench-token-0123456789abcdef0123456789";
const TARGET_READ_GAP_MS: f64 = 0.3;
const TARGET_READS_PER_S: f64 = 5000.0;
const TARGET_RSS_MB: f64 = 40.0;

#[derive(Debug, Parser)]
#[command(about = "memdir over HTTP against stdio")]
struct Args {
    /// Round trips per tool and transport in part a.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    /// Seconds per throughput phase in part b.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Small memories in the store for `memory_search`.
    #[arg(long, default_value_t = 1000)]
    memories: usize,
    /// The memdir binary (default: next to this program, else target/release).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Folder for the temp store (default: the system temp folder).
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = match &args.bin {
        Some(bin) => bin.clone(),
        None => host::memdir_bin()?,
    };
    let tmp = match &args.work_dir {
        Some(dir) => tempfile::tempdir_in(dir)?,
        None => tempfile::tempdir()?,
    };
    let store = tmp.path().join("store");
    let cache = tmp.path().join("cache");
    std::fs::create_dir_all(&store)?;
    println!(
        "memdir {} | store on {} | {} cores",
        bin.display(),
        host::fs_type(&store),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    seed(&store, args.memories)?;

    let tokens = tmp.path().join("tokens");
    std::fs::write(&tokens, format!("bench {TOKEN}\n"))?;
    set_private(&tokens)?;
    let stdio = stdio_client(&bin, &store, &cache).await?;
    let (mut http, url) = http_server(&bin, &store, &cache, &tokens).await?;
    let http_pid = http.id().context("http server pid")?;
    let one = http_client(&url).await?;

    // a. Round trips.
    println!("\na. round trips, {} each (ms)", args.iterations);
    println!(
        "   {:<28} {:>8} {:>8}   {:>8} {:>8}",
        "", "stdio p50", "p99", "http p50", "p99"
    );
    let read = json!({"path": "/memories/seed/0.md"});
    let search = json!({"query": "deploy pipeline", "limit": 10});
    let mut read_gap = f64::NAN;
    for (name, tool, make) in [
        ("memory_read", "memory_read", None),
        ("memory_write (new files)", "memory_write", Some("w")),
        ("memory_search (2 words)", "memory_search", None),
    ] {
        let mut row = Vec::new();
        for (label, client) in [("stdio", &stdio), ("http", &one)] {
            let mut samples = Vec::with_capacity(args.iterations);
            for i in 0..args.iterations {
                let a = match (tool, make) {
                    ("memory_write", Some(prefix)) => json!({
                        "path": format!("/memories/{label}-{prefix}/{i}.md"),
                        "content": format!("round trip {i}: a small memory of about forty bytes\n"),
                    }),
                    ("memory_search", _) => search.clone(),
                    _ => read.clone(),
                };
                let t = Instant::now();
                call(client, tool, a).await?;
                samples.push(t.elapsed());
            }
            row.push(Stats::of(&samples));
        }
        println!(
            "   {:<28} {:>8.3} {:>8.3}   {:>8.3} {:>8.3}",
            name, row[0].p50, row[0].p99, row[1].p50, row[1].p99
        );
        if tool == "memory_read" {
            read_gap = row[1].p50 - row[0].p50;
        }
    }

    // b. Throughput.
    println!("\nb. throughput over HTTP, {:.1} s per phase", args.seconds);
    let phase = Duration::from_secs_f64(args.seconds);
    let mut clients: Vec<Arc<Client>> = vec![Arc::new(one)];
    let mut reads_at_64 = f64::NAN;
    let mut rss = (f64::NAN, f64::NAN);
    for n in [1usize, 8, 64] {
        while clients.len() < n {
            clients.push(Arc::new(http_client(&url).await?));
        }
        let active = &clients[..n];
        let read = read.clone();
        let (ops, s) = run_phase(active, phase, move |_, _| ("memory_read", read.clone())).await?;
        let reads = ops as f64 / args.seconds;
        println!(
            "   {n:>2} clients  reads   {reads:>9.0}/s   p50 {:.3} ms  p99 {:.3} ms",
            s.p50, s.p99
        );
        if n == 64 {
            reads_at_64 = reads;
            rss = rss_mb(http_pid);
        }
        let (ops, s) = run_phase(active, phase, move |c, i| {
            (
                "memory_write",
                json!({"path": format!("/memories/load-{n}/{c}/{i}.md"),
                       "content": format!("client {c} write {i}: about forty bytes of text\n")}),
            )
        })
        .await?;
        println!(
            "   {n:>2} clients  writes  {:>9.0}/s   p50 {:.3} ms  p99 {:.3} ms",
            ops as f64 / args.seconds,
            s.p50,
            s.p99
        );
    }
    for threads in [1usize, 8] {
        let rate = disk_limit(&tmp.path().join(format!("disk-{threads}")), threads, phase)?;
        println!(
            "   baseline: the same durable write in-process, {threads} thread(s): {rate:>7.0}/s"
        );
    }

    // c. Memory.
    println!(
        "\nc. HTTP server with 64 clients connected: VmRSS {:.1} MB, VmHWM {:.1} MB",
        rss.0, rss.1
    );

    println!("\nsummary");
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    println!(
        "   HTTP read p50 - stdio read p50  {read_gap:>7.3} ms  (target <= {TARGET_READ_GAP_MS})  {}",
        verdict(read_gap <= TARGET_READ_GAP_MS)
    );
    println!(
        "   reads/s with 64 clients         {reads_at_64:>7.0}     (target >= {TARGET_READS_PER_S})  {}",
        verdict(reads_at_64 >= TARGET_READS_PER_S)
    );
    println!(
        "   RSS with 64 clients             {:>7.1} MB  (target <= {TARGET_RSS_MB})  {}",
        rss.0,
        verdict(rss.0 <= TARGET_RSS_MB)
    );

    drop(clients);
    let _ = stdio.cancel().await;
    terminate(&mut http).await;
    Ok(())
}

/// `memories` small Markdown files under `seed/`, a few of them about deploys.
fn seed(store: &Path, memories: usize) -> anyhow::Result<()> {
    let dir = store.join("seed");
    std::fs::create_dir_all(&dir)?;
    for i in 0..memories {
        let topic = if i % 50 == 0 {
            "The deploy pipeline runs the migrations first."
        } else {
            "Notes about the billing service and its retries."
        };
        std::fs::write(
            dir.join(format!("{i}.md")),
            format!(
                "---\ndescription: note {i}\n---\n# Note {i}\n{topic}\nLine three of note {i}.\n"
            ),
        )?;
    }
    Ok(())
}

fn set_private(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

async fn stdio_client(bin: &Path, store: &Path, cache: &Path) -> anyhow::Result<Client> {
    let cmd = tokio::process::Command::new(bin).configure(|c| {
        c.arg("--root")
            .arg(store)
            .env("XDG_CACHE_HOME", cache)
            .env("RUST_LOG", "memdir=warn");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    Ok(().serve(transport).await?)
}

/// Starts the HTTP server and returns it with its `/mcp` URL.
async fn http_server(
    bin: &Path,
    store: &Path,
    cache: &Path,
    tokens: &Path,
) -> anyhow::Result<(tokio::process::Child, String)> {
    let mut child = tokio::process::Command::new(bin)
        .arg("--root")
        .arg(store)
        .args(["serve", "--http", "127.0.0.1:0", "--tokens"])
        .arg(tokens)
        .env("XDG_CACHE_HOME", cache)
        // The access log is on (one line per request, as in production) but not kept.
        .env("RUST_LOG", "memdir=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    let url = loop {
        let Some(line) = lines.next_line().await? else {
            bail!("memdir --http exited before listening");
        };
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
        }
    };
    // Keep reading stderr so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, url))
}

async fn http_client(url: &str) -> anyhow::Result<Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(TOKEN);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    Ok(().serve(transport).await?)
}

async fn call(client: &Client, tool: &str, args: Value) -> anyhow::Result<()> {
    let Value::Object(map) = args else {
        bail!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await?;
    if result.is_error == Some(true) {
        bail!("{tool} failed: {:?}", result.content);
    }
    Ok(())
}

/// Every client calls `make(client, i)` in a loop for `phase`; the operations done and
/// their latency.
async fn run_phase(
    clients: &[Arc<Client>],
    phase: Duration,
    make: impl Fn(usize, usize) -> (&'static str, Value) + Send + Sync + Clone + 'static,
) -> anyhow::Result<(usize, Stats)> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        let (client, stop, done, make) = (
            Arc::clone(client),
            Arc::clone(&stop),
            Arc::clone(&done),
            make.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let (tool, args) = make(c, i);
                let t = Instant::now();
                call(&client, tool, args).await?;
                samples.push(t.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
            anyhow::Ok(samples)
        }));
    }
    tokio::time::sleep(phase).await;
    stop.store(true, Ordering::Relaxed);
    let counted = done.load(Ordering::Relaxed);
    let mut samples = Vec::new();
    for t in tasks {
        samples.extend(t.await??);
    }
    Ok((counted, Stats::of(&samples)))
}

/// Durable writes per second done in-process by `threads` threads for `phase`: each a
/// new file written to a temp name, fsynced, renamed into place, and its folder fsynced.
fn disk_limit(dir: &Path, threads: usize, phase: Duration) -> anyhow::Result<f64> {
    std::fs::create_dir_all(dir)?;
    let done = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + phase;
    std::thread::scope(|s| -> anyhow::Result<()> {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (done, dir) = (Arc::clone(&done), dir.to_path_buf());
            handles.push(s.spawn(move || -> anyhow::Result<()> {
                let folder = std::fs::File::open(&dir)?;
                let mut i = 0;
                while Instant::now() < until {
                    let tmp = dir.join(format!(".tmp-{t}-{i}"));
                    let mut f = std::fs::File::create(&tmp)?;
                    f.write_all(format!("thread {t} write {i}: about forty bytes\n").as_bytes())?;
                    f.sync_all()?;
                    std::fs::rename(&tmp, dir.join(format!("{t}-{i}.md")))?;
                    folder.sync_all()?;
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                Ok(())
            }));
        }
        for h in handles {
            h.join().expect("writer thread")?;
        }
        Ok(())
    })?;
    Ok(done.load(Ordering::Relaxed) as f64 / phase.as_secs_f64())
}

/// VmRSS and VmHWM of `pid` in MB.
fn rss_mb(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

async fn terminate(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("pid"),
            rustix::process::Signal::TERM,
        );
    }
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
}
