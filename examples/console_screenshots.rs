//! The console's screenshots in `docs/console/`: a program that drives a real headless
//! Chromium (Debian's `chromium` and `chromium-driver`, as `tests/console_browser.rs`
//! does), not a test.
//!
//! ```text
//! cargo build --bin memdir
//! cargo run --features external-tests --example console_screenshots [-- --out DIR]
//! ```
//!
//! Writes a small folder store, starts the real binary's `memdir console` on it, signs
//! in by its link, and as a person would: edits a memory (a version by the person),
//! compares it with the version before (`history-diff-light.png`), edits again while
//! the file changes underneath (`conflict-dark.png`, in the dark scheme), searches
//! (`search-light.png`, taller, to show the hits under the form), reviews the store
//! (`review-light.png`: memories not updated for 90 days, oldest first, and the expired
//! one with its prune button), and picks the store's export to import into an empty
//! store (`import-dark.png`). The others are as wide as the older ones (1,000 pixels).

#[path = "common/host.rs"]
#[allow(dead_code)]
mod host;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const DEADLINE: Duration = Duration::from_secs(60);
const ALPHA: &str = "---\nname: Alpha\ndescription: The alpha project: owner, deadline, risks\ntype: project\n---\n# Alpha\n\nOwner: **Dana**. Deadline is Friday.\n\n- ship the importer first\n- the export format is JSON Lines\n";

#[derive(Debug, Parser)]
#[command(about = "memdir console screenshots")]
struct Args {
    /// Where the pictures go.
    #[arg(long, default_value = "docs/console")]
    out: PathBuf,
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
    let store = tmp.path().join("memories");
    seed(&store)?;
    let (mut first, link) = console(&bin, &["--root".into(), store.clone().into()]).await?;
    let base = link
        .split("/?token=")
        .next()
        .unwrap_or_default()
        .to_string();
    std::fs::create_dir_all(&args.out)?;

    let light = Browser::start(false).await?;
    light.client.goto(&link).await?;
    // An edit by the person, then the diff of the two versions (the timeline's default).
    edit(&light, &base, "/memories/projects/alpha.md", |text| {
        text.replace(
            "Deadline is Friday.",
            "Deadline moved to Monday (agreed with Dana).",
        )
        .replace(
            "- ship the importer first\n",
            "- ship the importer first\n- then the console\n",
        )
    })
    .await?;
    light
        .client
        .goto(&format!(
            "{base}/history?path=%2Fmemories%2Fprojects%2Falpha.md"
        ))
        .await?;
    light
        .click(Locator::Css("form[action='/diff'] button[type=submit]"))
        .await?;
    light.wait_for_text("→ version").await?;
    light.save(&args.out.join("history-diff-light.png")).await?;
    // Taller: the form, then the hits with their lines under it.
    light.client.set_window_size(1000, 1100).await?;
    light
        .client
        .goto(&format!("{base}/search?q=deadline"))
        .await?;
    light.find(Locator::Css("ol.hits")).await?;
    light.save(&args.out.join("search-light.png")).await?;
    // Review: the stale memories (aged by `seed`) and the expired one.
    light.client.set_window_size(1000, 820).await?;
    light
        .client
        .goto(&format!("{base}/review?store=memories"))
        .await?;
    light.wait_for_text("Expired (1)").await?;
    light.save(&args.out.join("review-light.png")).await?;
    light.client.clone().close().await?;

    // A conflict: the file changes while the form is open.
    let dark = Browser::start(true).await?;
    // This console also serves `team`, an empty store, for the import.
    let team = tmp.path().join("team");
    let stores = |name: &str, dir: &Path| {
        let mut flag = std::ffi::OsString::from(format!("{name}="));
        flag.push(dir);
        ["--store".into(), flag]
    };
    let both = [stores("memories", &store), stores("team", &team)].concat();
    let (mut second, link2) = console(&bin, &both).await?;
    let base2 = link2
        .split("/?token=")
        .next()
        .unwrap_or_default()
        .to_string();
    dark.client.goto(&link2).await?;
    dark.client
        .goto(&format!(
            "{base2}/edit?path=%2Fmemories%2Fprojects%2Falpha.md"
        ))
        .await?;
    let area = dark.find(Locator::Id("content")).await?;
    let file = store.join("projects/alpha.md");
    let theirs = std::fs::read_to_string(&file)?.replace("Owner: **Dana**.", "Owner: **Lee**.");
    std::fs::write(&file, theirs)?;
    let yours = area.prop("value").await?.unwrap_or_default().replace(
        "- then the console\n",
        "- then the console\n- then screenshots\n",
    );
    area.clear().await?;
    area.send_keys(&yours).await?;
    dark.click(Locator::Css("form[action='/edit'] button[type=submit]"))
        .await?;
    dark.wait_for_text("changed meanwhile").await?;
    dark.save(&args.out.join("conflict-dark.png")).await?;
    // Import: the store's export, picked in the upload form of the empty store.
    let export = std::process::Command::new(&bin)
        .arg("--root")
        .arg(&store)
        .arg("export")
        .env("RUST_LOG", "memdir=warn")
        .stderr(Stdio::null())
        .output()?;
    if !export.status.success() {
        bail!("memdir export failed");
    }
    let archive = tmp.path().join("memories-export.jsonl");
    std::fs::write(&archive, export.stdout)?;
    dark.client
        .goto(&format!("{base2}/import?store=team"))
        .await?;
    dark.find(Locator::Id("archive"))
        .await?
        .send_keys(&archive.display().to_string())
        .await?;
    dark.save(&args.out.join("import-dark.png")).await?;
    dark.client.clone().close().await?;

    for child in [&mut first, &mut second] {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    println!("screenshots in {}", args.out.display());
    Ok(())
}

/// A few memories with frontmatter, in two folders; three not updated for months, one
/// expired.
fn seed(store: &Path) -> anyhow::Result<()> {
    let files = [
        ("projects/alpha.md", ALPHA.to_string()),
        (
            "projects/beta.md",
            "---\nname: Beta\ndescription: The beta project\ntype: project\n---\n# Beta\n\nNo deadline yet; waiting on the design review.\n".into(),
        ),
        (
            "people/dana.md",
            "---\nname: Dana\ndescription: Dana, who owns alpha\ntype: user\n---\nDana prefers short status notes and hates surprise deadlines.\n".into(),
        ),
        (
            "feedback.md",
            "---\nname: Feedback\ndescription: How the team wants reports\ntype: feedback\n---\nPut the deadline first in every status report.\n".into(),
        ),
        (
            "freeze.md",
            "---\nname: Code freeze\ndescription: No merges to main during the release\ntype: project\nexpires: 2026-10-01\n---\nCode freeze until the release is out.\n".into(),
        ),
    ];
    for (path, text) in files {
        let file = store.join(path);
        std::fs::create_dir_all(file.parent().context("a parent")?)?;
        std::fs::write(file, text)?;
    }
    for (path, days) in [
        ("projects/beta.md", 210),
        ("people/dana.md", 140),
        ("freeze.md", 100),
    ] {
        std::fs::File::options()
            .write(true)
            .open(store.join(path))?
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(days * 86_400))?;
    }
    Ok(())
}

/// Opens `path`'s edit form, replaces its text with `change` of it, and saves.
async fn edit(
    b: &Browser,
    base: &str,
    path: &str,
    change: impl Fn(&str) -> String,
) -> anyhow::Result<()> {
    let enc: String = form_urlencoded::byte_serialize(path.as_bytes()).collect();
    b.client.goto(&format!("{base}/edit?path={enc}")).await?;
    let area = b.find(Locator::Id("content")).await?;
    let text = change(&area.prop("value").await?.unwrap_or_default());
    area.clear().await?;
    area.send_keys(&text).await?;
    b.click(Locator::Css("form[action='/edit'] button[type=submit]"))
        .await?;
    b.find(Locator::Css(".rendered")).await?;
    Ok(())
}

/// `memdir console` on the stores `stores` name (`--root DIR` or `--store NAME=DIR`…),
/// and its link.
async fn console(
    bin: &Path,
    stores: &[std::ffi::OsString],
) -> anyhow::Result<(tokio::process::Child, String)> {
    let mut child = tokio::process::Command::new(bin)
        .arg("console")
        .args(stores)
        .args(["--listen", "127.0.0.1:0", "--no-index"])
        .env("USER", "dana")
        .env("RUST_LOG", "memdir=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let link = tokio::time::timeout(DEADLINE, stdout.next_line())
        .await
        .context("the console's link in time")??
        .context("memdir console exited before printing its link")?;
    Ok((child, link))
}

/// chromedriver on a free port and a fresh headless Chromium.
struct Browser {
    driver: std::process::Child,
    client: Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start(dark: bool) -> anyhow::Result<Browser> {
        if !Path::new(CHROMEDRIVER).exists() || !Path::new(CHROMIUM).exists() {
            bail!(
                "needs Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver"
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let driver = std::process::Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting chromedriver")?;
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while !reqwest::get(format!("{url}/status"))
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            if started.elapsed() > DEADLINE {
                bail!("chromedriver did not answer");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir()?;
        let mut flags = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--no-first-run".into(),
            "--hide-scrollbars".into(),
            "--window-size=1000,677".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        if dark {
            flags.push("--force-dark-mode".into());
            flags.push("--blink-settings=preferredColorScheme=0".into());
        }
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": CHROMIUM, "args": flags}),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .context("a WebDriver session")?;
        Ok(Browser {
            driver,
            client,
            _profile: profile,
        })
    }

    async fn find(&self, locator: Locator<'_>) -> anyhow::Result<fantoccini::elements::Element> {
        Ok(self
            .client
            .wait()
            .at_most(DEADLINE)
            .for_element(locator)
            .await?)
    }

    async fn click(&self, locator: Locator<'_>) -> anyhow::Result<()> {
        Ok(self.find(locator).await?.click().await?)
    }

    /// Waits (at most `DEADLINE`) until the page shows `needle`.
    async fn wait_for_text(&self, needle: &str) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            let text = match self.client.find(Locator::Css("body")).await {
                Ok(body) => body.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if text.contains(needle) {
                return Ok(());
            }
            if started.elapsed() > DEADLINE {
                bail!("the page never showed {needle:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn save(&self, to: &Path) -> anyhow::Result<()> {
        std::fs::write(to, self.client.screenshot().await?)
            .with_context(|| format!("writing {}", to.display()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
