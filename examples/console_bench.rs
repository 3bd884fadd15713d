//! The console's page timings at 10,000 memories: a benchmark program, not a test.
//!
//! ```text
//! cargo build --release --bin memdir --example console_bench
//! target/release/examples/console_bench [--requests N] [--bin PATH]
//! ```
//!
//! Writes a folder store of 10,000 small memories with frontmatter (1,000 at the top,
//! 9,000 in 20 folders of 450), starts the real binary's `memdir console` on it (search
//! index in a temp cache folder), signs in by its link, and times each page (stores, the
//! top folder's first page, sorted by size, by age and filtered by type and by name, a
//! folder of 450, a memory and its edit form, two searches, the history of a memory and of
//! the store, a version, a diff, review and MEMORY.md; an agent writes one memory twice
//! first, for the history pages, and one search in each process brings its index up to
//! date) over keep-alive loopback HTTP: p50/p95 of `--requests` GETs after 3 warm-ups,
//! the time until the whole body is read.
//! Next to each, in the same run, the baseline: the matching MCP call (`memory_list`,
//! `memory_read`, `memory_search`, `memory_history`) from `memdir` on stdio on the same store, the same
//! way. The target is 50 ms server time per page.

#[path = "common/host.rs"]
mod host;
#[path = "common/stats.rs"]
#[allow(dead_code)]
mod stats;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use stats::Stats;
use tokio::io::{AsyncBufReadExt, BufReader};

const TOP: usize = 1_000;
const FOLDERS: usize = 20;
const PER_FOLDER: usize = 450;
const WARMUP: usize = 3;
const TARGET_MS: f64 = 50.0;

#[derive(Debug, Parser)]
#[command(about = "memdir console page timings at 10,000 memories")]
struct Args {
    /// Timed requests per page (and per baseline call).
    #[arg(long, default_value_t = 30)]
    requests: usize,
    /// The memdir binary (default: next to this program, else target/release).
    #[arg(long)]
    bin: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = match &args.bin {
        Some(bin) => bin.clone(),
        None => host::memdir_bin()?,
    };
    let tmp = tempfile::tempdir()?;
    let store = tmp.path().join("store");
    let cache = tmp.path().join("cache");
    seed(&store)?;
    println!(
        "memdir {} | {} memories on {} | {} cores | {} requests a page",
        bin.display(),
        TOP + FOLDERS * PER_FOLDER,
        host::fs_type(&store),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        args.requests
    );

    let (mut console, base, cookie) = console(&bin, &store, &cache).await?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let cmd = tokio::process::Command::new(&bin).configure(|c| {
        c.arg("--root")
            .arg(&store)
            .env("XDG_CACHE_HOME", &cache)
            .env("RUST_LOG", "memdir=warn");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    let mcp = ().serve(transport).await?;

    // Two versions of one memory by an agent, for the history, version and diff pages.
    let mut versions = Vec::new();
    for text in [
        "# Memory 500\n\nA widget note, rewritten.\n",
        "# Memory 500\n\nA widget note, rewritten twice.\n",
    ] {
        let args = json!({"path": "/memories/m0500.md", "content": text});
        let Value::Object(map) = args else {
            bail!("arguments must be an object")
        };
        let written = mcp
            .call_tool(CallToolRequestParams::new("memory_write").with_arguments(map))
            .await?;
        let version = written
            .structured_content
            .as_ref()
            .and_then(|s| s["version"].as_u64())
            .context("memory_write gave no version")?;
        versions.push(version);
    }
    let (v1, v2) = (versions[0], versions[1]);
    // Both processes' search indexes brought up to date before anything is timed: the
    // stdio server builds the index at start-up, in the background, and would otherwise
    // still be at it (on the same cores) while the first pages are timed.
    let Value::Object(warm) = json!({"query": "widget"}) else {
        bail!("arguments must be an object")
    };
    mcp.call_tool(CallToolRequestParams::new("memory_search").with_arguments(warm))
        .await?;
    http.get(format!("{base}/search?q=widget"))
        .header("Cookie", &cookie)
        .send()
        .await?
        .bytes()
        .await?;
    let cases: Vec<(&str, String, &str, Value)> = vec![
        (
            "stores",
            "/".into(),
            "memory_list",
            json!({"path": "/", "depth": 1}),
        ),
        (
            "top folder, page 1 of 1,020",
            "/folder?path=%2Fmemories%2F".into(),
            "memory_list",
            json!({"path": "/memories/", "depth": 1, "limit": 100}),
        ),
        (
            "top folder by size",
            "/folder?path=%2Fmemories%2F&sort=size".into(),
            "memory_list",
            json!({"path": "/memories/", "depth": 1, "limit": 1000}),
        ),
        (
            "top folder by age, page 5",
            "/folder?path=%2Fmemories%2F&sort=age&page=5".into(),
            "memory_list",
            json!({"path": "/memories/", "depth": 1, "limit": 1000}),
        ),
        (
            "top folder, type filter",
            "/folder?path=%2Fmemories%2F&type=user".into(),
            "memory_list",
            json!({"path": "/memories/", "depth": 1, "limit": 1000}),
        ),
        (
            "top folder, name filter",
            "/folder?path=%2Fmemories%2F&name=memory+7".into(),
            "memory_list",
            json!({"path": "/memories/", "depth": 1, "limit": 1000}),
        ),
        (
            "folder of 450",
            "/folder?path=%2Fmemories%2Ff07%2F".into(),
            "memory_list",
            json!({"path": "/memories/f07/", "depth": 1, "limit": 100}),
        ),
        (
            "memory",
            "/memory?path=%2Fmemories%2Fm0500.md".into(),
            "memory_read",
            json!({"path": "/memories/m0500.md"}),
        ),
        (
            "edit form",
            "/edit?path=%2Fmemories%2Fm0500.md".into(),
            "memory_read",
            json!({"path": "/memories/m0500.md"}),
        ),
        (
            "search `topic 42`",
            "/search?q=topic+42".into(),
            "memory_search",
            json!({"query": "topic 42"}),
        ),
        (
            "search `widget` (every memory)",
            "/search?q=widget".into(),
            "memory_search",
            json!({"query": "widget"}),
        ),
        (
            "history of a memory",
            "/history?path=%2Fmemories%2Fm0500.md".into(),
            "memory_history",
            json!({"path": "/memories/m0500.md"}),
        ),
        (
            "history of the store",
            "/history?path=%2Fmemories%2F".into(),
            "memory_history",
            json!({"path": "/memories/", "limit": 100}),
        ),
        (
            "a version",
            format!("/version?store=memories&version={v1}"),
            "memory_history",
            json!({"path": "/memories/m0500.md", "version": v1}),
        ),
        (
            "diff of two versions",
            format!("/diff?store=memories&from={v1}&to={v2}"),
            "memory_history",
            json!({"path": "/memories/m0500.md", "version": v2}),
        ),
        (
            "review (stale, expired)",
            "/review?store=memories".into(),
            "memory_list",
            json!({"path": "/memories/", "older_than_days": 90, "sort": "oldest", "limit": 100}),
        ),
        (
            "MEMORY.md",
            "/index?store=memories".into(),
            "memory_list",
            json!({"path": "/memories/", "limit": 100}),
        ),
    ];
    println!(
        "\n{:<32} {:>9} {:>9}   {:<14} {:>9} {:>9}",
        "page", "p50 ms", "p95 ms", "baseline", "p50 ms", "p95 ms"
    );
    let mut misses = Vec::new();
    for (label, page, tool, call) in cases {
        let url = format!("{base}{page}");
        let page = page.as_str();
        let mut page_times = Vec::new();
        for i in 0..WARMUP + args.requests {
            let started = Instant::now();
            let r = http.get(&url).header("Cookie", &cookie).send().await?;
            let status = r.status();
            let body = r.bytes().await?;
            let took = started.elapsed();
            if !status.is_success() {
                bail!("{page}: {status}: {}", String::from_utf8_lossy(&body));
            }
            if i >= WARMUP {
                page_times.push(took);
            }
        }
        let mut tool_times = Vec::new();
        for i in 0..WARMUP + args.requests {
            let Value::Object(map) = call.clone() else {
                bail!("arguments must be an object")
            };
            let started = Instant::now();
            let result = mcp
                .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
                .await?;
            let took = started.elapsed();
            if result.is_error == Some(true) {
                bail!("{tool} failed: {:?}", result.content);
            }
            if i >= WARMUP {
                tool_times.push(took);
            }
        }
        let (p, t) = (Stats::of(&page_times), Stats::of(&tool_times));
        println!(
            "{label:<32} {:>9.1} {:>9.1}   {tool:<14} {:>9.1} {:>9.1}",
            p.p50, p.p95, t.p50, t.p95
        );
        if p.p50 > TARGET_MS {
            misses.push(format!("{label}: p50 {:.1} ms", p.p50));
        }
    }
    if misses.is_empty() {
        println!("\nPASS: every page within {TARGET_MS} ms (p50)");
    } else {
        println!("\nMISS ({TARGET_MS} ms): {}", misses.join("; "));
    }
    mcp.cancel().await?;
    let _ = console.start_kill();
    let _ = console.wait().await;
    Ok(())
}

/// The store: `m0000.md`…`m0999.md` at the top, `f00/`…`f19/` with `n000.md`…`n449.md`
/// each, every memory with frontmatter and the word `widget`.
fn seed(store: &Path) -> anyhow::Result<()> {
    let write = |path: PathBuf, i: usize| -> anyhow::Result<()> {
        let text = format!(
            "---\nname: Memory {i}\ndescription: What was learned about topic {}\ntype: {}\n---\n# Memory {i}\n\nA widget note about topic {} and the things around it.\n{}\n",
            i % 100,
            ["project", "user", "feedback", "reference"][i % 4],
            i % 100,
            "More words that make a memory of an ordinary length. ".repeat(1 + i % 7)
        );
        std::fs::write(path, text).context("writing a memory")
    };
    std::fs::create_dir_all(store)?;
    for i in 0..TOP {
        write(store.join(format!("m{i:04}.md")), i)?;
    }
    for f in 0..FOLDERS {
        let dir = store.join(format!("f{f:02}"));
        std::fs::create_dir_all(&dir)?;
        for n in 0..PER_FOLDER {
            write(dir.join(format!("n{n:03}.md")), TOP + f * PER_FOLDER + n)?;
        }
    }
    Ok(())
}

/// `memdir console` on the store, signed in: the child, its base URL and the cookie.
async fn console(
    bin: &Path,
    store: &Path,
    cache: &Path,
) -> anyhow::Result<(tokio::process::Child, String, String)> {
    let mut child = tokio::process::Command::new(bin)
        .arg("console")
        .arg("--root")
        .arg(store)
        .args(["--listen", "127.0.0.1:0"])
        .env("XDG_CACHE_HOME", cache)
        // The access log is on, as in production, but not kept.
        .env("RUST_LOG", "memdir=info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let link = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .context("the console's link within 60 s")??
        .context("memdir console exited before printing its link")?;
    let base = link
        .split("/?token=")
        .next()
        .unwrap_or_default()
        .to_string();
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?
        .get(&link)
        .send()
        .await?;
    let cookie = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .context("no session cookie from the link")?
        .to_string();
    Ok((child, base, cookie))
}
