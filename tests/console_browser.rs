//! The console in a real headless Chromium, driven over WebDriver (Debian's `chromium`
//! and `chromium-driver`; chromedriver is started here on a free port, no browser is
//! ever downloaded). Built only with `--features external-tests` (Cargo.toml), which
//! `.ci/run` turns on after installing both packages: on a machine without them the
//! target is not built rather than skipped in silence.
//!
//! What a person does (sign in by the link, browse, open, search, edit, a conflicting
//! edit that changes nothing, history diff, restore (a conflicting one changes nothing),
//! redaction, import by a real file upload), and a corpus of XSS payloads in contents, frontmatter, file and folder names,
//! search queries, a history actor and the history pages (timelines, versions, diffs, redaction): each
//! tries to set `window.__pwned` or the title, and every page showing them must leave
//! both alone, hold no active element, and show the payload as text. Both run on a
//! folder store and on a PostgreSQL store (a real server, tests/common/pg.rs).

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{BIN, Sandbox, Server, StderrLog};
use fantoccini::{Client, ClientBuilder, Locator};
use pg::{PgServer, unique_db};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long chromedriver and pages may take on a busy machine.
const DEADLINE: Duration = Duration::from_secs(60);

/// Payloads that would run script if a value reached the page unescaped (or a link or
/// raw HTML survived the Markdown renderer).
const PAYLOADS: &[&str] = &[
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=\"window.__pwned=1\">",
    "'\"><svg onload=window.__pwned=1>",
    "<iframe srcdoc=\"<script>parent.__pwned=1</script>\"></iframe>",
    "</textarea><script>document.title='pwned'</script>",
    "</title><script>document.title='pwned'</script>",
];

/// Payloads for file and folder names (a name holds no `/` and no `:`).
const NAME_PAYLOADS: &[&str] = &[
    "<img src=x onerror=\"window.__pwned=1\">",
    "'\"><svg onload=window.__pwned=1>",
    "<script>window.__pwned=1<",
];

/// Links that would run script if their target survived.
const LINK_PAYLOADS: &[&str] = &[
    "[click me](javascript:window.__pwned=1)",
    "[click me](JaVaScRiPt:window.__pwned=1)",
    "[click me](data:text/html,<script>window.__pwned=1</script>)",
    "![pic](javascript:window.__pwned=1)",
];

/// chromedriver on a free port, and the WebDriver session of a fresh headless Chromium.
struct Browser {
    driver: std::process::Child,
    client: Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start() -> Browser {
        assert!(
            Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
            "the browser tests need Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver"
        );
        let port = free_port();
        let driver = std::process::Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        loop {
            if let Ok(r) = reqwest::get(format!("{url}/status")).await
                && r.status().is_success()
            {
                break;
            }
            assert!(started.elapsed() < DEADLINE, "chromedriver did not answer");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&url)
            .await
            .expect("a WebDriver session");
        Browser {
            driver,
            client,
            _profile: profile,
        }
    }

    /// Runs `script` in the page (WebDriver's own channel, not subject to the page's
    /// Content-Security-Policy).
    async fn eval(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.expect(script)
    }

    /// The element `locator` finds, waiting (at most `DEADLINE`) for a page being
    /// loaded to show it.
    async fn find(&self, locator: Locator<'_>) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(DEADLINE)
            .for_element(locator)
            .await
            .unwrap_or_else(|e| panic!("{locator:?}: {e}"))
    }

    /// Clicks what `locator` finds.
    async fn click(&self, locator: Locator<'_>) {
        self.find(locator).await.click().await.unwrap();
    }

    /// The page's text once it holds `needle` (at most `DEADLINE`: a click's navigation
    /// may still be under way).
    async fn wait_for_text(&self, needle: &str) -> String {
        let started = Instant::now();
        loop {
            let text = match self.client.find(Locator::Css("body")).await {
                Ok(body) => body.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if text.contains(needle) {
                return text;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "the page never showed {needle:?}: {text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The page's visible text.
    async fn text(&self) -> String {
        self.client
            .find(Locator::Css("body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Asserts that nothing a payload could do happened on the current page.
    async fn assert_inert(&self, what: &str) {
        let pwned = self.eval("return window.__pwned === undefined").await;
        assert_eq!(pwned, json!(true), "{what}: window.__pwned was set");
        let title = self.eval("return document.title").await;
        assert!(
            title.as_str().is_some_and(|t| t.ends_with("· memdir")),
            "{what}: title is {title}"
        );
        let active = self
            .eval(
                "return document.querySelectorAll('script, iframe, object, embed, svg, img, \
                 [onerror], [onload], [onclick], [onmouseover], [srcdoc], \
                 a[href^=\"javascript\" i], a[href^=\"data\" i]').length",
            )
            .await;
        assert_eq!(active, json!(0), "{what}: an active element is on the page");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `memdir console` on a free loopback port, and its link.
struct Console {
    child: tokio::process::Child,
    link: String,
    base: String,
    _log: StderrLog,
}

impl Console {
    /// `memdir console STORE_ARGS` (store options such as `--root DIR` or `--store
    /// NAME=URL`) on a free loopback port.
    async fn start(store_args: &[String]) -> Console {
        let mut child = tokio::process::Command::new(BIN)
            .arg("console")
            .args(store_args)
            .args(["--listen", "127.0.0.1:0", "--no-index"])
            .env("RUST_LOG", "memdir=info")
            .env("USER", "browser-tester")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn memdir console");
        let log = StderrLog::read_async(child.stderr.take().unwrap(), "memdir console");
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let link = tokio::time::timeout(DEADLINE, stdout.next_line())
            .await
            .expect("the link in time")
            .unwrap()
            .expect("a line on stdout");
        let base = link.split("/?token=").next().unwrap().to_string();
        Console {
            child,
            link,
            base,
            _log: log,
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The XSS corpus: payloads in contents, frontmatter, file names and folder names, as
/// the memories' paths in store `memories` and their contents.
fn hostile_corpus() -> Vec<(String, String)> {
    let mut memories = Vec::new();
    for (i, p) in PAYLOADS.iter().enumerate() {
        let yaml = p.replace('\\', "\\\\").replace('"', "\\\"");
        let content = format!(
            "---\nname: \"{yaml}\"\ndescription: \"{yaml}\"\ntype: \"{yaml}\"\n---\n# Payload {i}\n\n{p}\n\ninline {p} text\n"
        );
        memories.push((format!("/memories/payload-{i}.md"), content));
    }
    for (i, p) in NAME_PAYLOADS.iter().enumerate() {
        memories.push((format!("/memories/{p}.md"), format!("named {i}\n")));
        memories.push((format!("/memories/{p}/inside.md"), format!("inside {i}\n")));
    }
    let links = LINK_PAYLOADS.join("\n\n");
    memories.push(("/memories/links.md".into(), format!("# Links\n\n{links}\n")));
    memories
}

/// The two kinds of store the person's flow runs on.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Folder,
    Postgres,
}

/// Stores of one kind for a test: folders in a sandbox, or databases of one real
/// PostgreSQL server (tests/common/pg.rs), both stopped and deleted on drop.
struct Stores {
    sandbox: Sandbox,
    pg: Option<PgServer>,
}

impl Stores {
    fn new(kind: Kind) -> Stores {
        Stores {
            sandbox: Sandbox::new(),
            pg: matches!(kind, Kind::Postgres).then(PgServer::start),
        }
    }

    /// The `NAME=…` spec of a new, empty store: a folder, or a new database.
    fn spec(&self, name: &str) -> String {
        match &self.pg {
            None => {
                let dir = self.sandbox.outside().join(name);
                std::fs::create_dir_all(&dir).unwrap();
                format!("{name}={}", dir.display())
            }
            Some(pg) => {
                let db = unique_db(name);
                pg.create_db(&db);
                format!("{name}={}", pg.url(&db))
            }
        }
    }

    /// Puts `memories` (path in store `memories`, content) into the store of `spec`: on a
    /// folder, files written directly (as an editor would; memdir records them as outside
    /// changes); in a database, by an agent over MCP.
    async fn seed(&self, spec: &str, memories: &[(String, String)]) {
        if self.pg.is_some() {
            let server = Server::start(&["--store", spec, "--no-index"], &[]).await;
            for (path, text) in memories {
                server
                    .ok("memory_write", json!({"path": path, "content": text}))
                    .await;
            }
            server.stop().await;
            return;
        }
        let dir = Path::new(spec.split_once('=').unwrap().1);
        for (path, text) in memories {
            let file = dir.join(path.strip_prefix("/memories/").unwrap());
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
    }

    /// On PostgreSQL, requires the database of `spec` to hold memdir's tables: the
    /// store was served from the database, not from a folder its URL was mistaken for.
    fn assert_held(&self, spec: &str) {
        let Some(pg) = &self.pg else { return };
        let db = spec.split("@/").nth(1).unwrap().split('?').next().unwrap();
        let tables = pg.psql(
            db,
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memdir\\_%'",
        );
        assert_ne!(tables, "0", "no memdir tables in {db}");
    }
}

/// `memdir --store SPEC ARGS` (a CLI subcommand), which must succeed; its stdout.
fn cli(spec: &str, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(BIN)
        .args(["--store", spec])
        .args(args)
        .env("RUST_LOG", "memdir=warn")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "memdir {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The content of memory `path` in store `spec`, as `memdir read` gives it.
fn content(spec: &str, path: &str) -> String {
    let read: Value = serde_json::from_slice(&cli(spec, &["read", "--json", path])).unwrap();
    read["content"].as_str().unwrap().to_string()
}

/// Every version of store `spec`, newest first, as `memdir history --json` gives them.
fn versions(spec: &str) -> Vec<Value> {
    String::from_utf8(cli(spec, &["history", "--json", "--limit", "100000", "/"]))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Writes `text` at `path` in store `spec` as an agent does: `memory_write` over MCP.
async fn agent_writes(spec: &str, path: &str, text: &str) {
    let server = Server::start(&["--store", spec, "--no-index"], &[]).await;
    server
        .ok("memory_write", json!({"path": path, "content": text}))
        .await;
    server.stop().await;
}

#[tokio::test]
async fn a_person_signs_in_browses_searches_and_edits_on_a_folder_store() {
    person_flow(Kind::Folder).await;
}

#[tokio::test]
async fn a_person_signs_in_browses_searches_and_edits_on_a_postgresql_store() {
    person_flow(Kind::Postgres).await;
}

/// Sign in, browse, open, search, edit, a conflicting edit, history diff, restore,
/// redaction and import, on stores of `kind`; every change checked through memdir's
/// own CLI, which reads either kind.
async fn person_flow(kind: Kind) {
    let stores = Stores::new(kind);
    let spec = stores.spec("memories");
    agent_writes(
        &spec,
        "/memories/projects/alpha.md",
        "---\nname: Alpha\ndescription: The alpha project\ntype: project\n---\n# Alpha\n\nDeadline is **Friday**.\n",
    )
    .await;
    let dest = stores.spec("dest");
    let alpha = "/memories/projects/alpha.md";
    let console = Console::start(&[
        "--store".into(),
        spec.clone(),
        "--store".into(),
        dest.clone(),
    ])
    .await;
    let b = Browser::start().await;

    // Sign in by the link: the browser ends on a URL without the token.
    b.client.goto(&console.link).await.unwrap();
    let url = b.client.current_url().await.unwrap();
    assert_eq!(url.as_str(), format!("{}/", console.base));
    assert_eq!(b.client.title().await.unwrap(), "Stores · memdir");
    assert!(b.text().await.contains("signed in as browser-tester"));
    // The cookie is invisible to scripts (HttpOnly).
    assert_eq!(b.eval("return document.cookie").await, json!(""));

    // Browse: store → folder → memory.
    b.click(Locator::LinkText("/memories/")).await;
    b.click(Locator::LinkText("projects/")).await;
    b.wait_for_text("The alpha project").await;
    b.click(Locator::LinkText("alpha.md")).await;
    let strong = b.find(Locator::Css(".rendered strong")).await;
    assert_eq!(strong.text().await.unwrap(), "Friday");
    assert!(
        b.text().await.contains("Deadline is **Friday**."),
        "raw text"
    );

    // Search from the header.
    let q = b.find(Locator::Id("q")).await;
    q.send_keys("deadline").await.unwrap();
    q.send_keys("\u{E007}").await.unwrap(); // Enter
    let hit = b.find(Locator::Css("ol.hits a")).await;
    assert_eq!(hit.text().await.unwrap(), "/memories/projects/alpha.md");
    hit.click().await.unwrap();

    // Edit and save.
    b.click(Locator::LinkText("Edit")).await;
    let area = b.find(Locator::Id("content")).await;
    area.clear().await.unwrap();
    area.send_keys("# Alpha\n\nDeadline moved to Monday.\n")
        .await
        .unwrap();
    b.click(Locator::Css("form[action='/edit'] button[type=submit]"))
        .await;
    // The memory page (only it has `.rendered`) comes after the write: the redirect.
    b.find(Locator::Css(".rendered")).await;
    b.wait_for_text("Deadline moved to Monday.").await;
    assert_eq!(
        content(&spec, alpha),
        "# Alpha\n\nDeadline moved to Monday.\n"
    );

    // A conflicting edit: someone writes while the form is open; saving shows both
    // sides and writes nothing.
    b.click(Locator::LinkText("Edit")).await;
    let area = b.find(Locator::Id("content")).await;
    agent_writes(&spec, alpha, "# Alpha\n\nTheirs.\n").await;
    area.clear().await.unwrap();
    area.send_keys("# Alpha\n\nMine.\n").await.unwrap();
    b.click(Locator::Css("form[action='/edit'] button[type=submit]"))
        .await;
    let text = b.wait_for_text("changed meanwhile").await;
    assert!(text.contains("− Theirs."), "{text}");
    assert!(text.contains("+ Mine."), "{text}");
    assert_eq!(content(&spec, alpha), "# Alpha\n\nTheirs.\n");

    // History: the timeline, the diff of the two newest versions (the radio buttons'
    // default), restore of the version by the person, redaction after its confirmation.
    b.click(Locator::LinkText("Cancel")).await;
    b.click(Locator::LinkText("History")).await;
    b.wait_for_text("browser-tester").await;
    b.click(Locator::Css("form[action='/diff'] button[type=submit]"))
        .await;
    let text = b.wait_for_text("+ Theirs.").await;
    assert!(text.contains("− Deadline moved to Monday."), "{text}");
    let log = versions(&spec);
    let version_of = |content: &str| {
        let sha = common::sha256_hex(content.as_bytes());
        log.iter()
            .find(|r| r["content_sha256"] == sha.as_str())
            .unwrap()["version"]
            .as_u64()
            .unwrap()
    };
    let monday = version_of("# Alpha\n\nDeadline moved to Monday.\n");
    let theirs = version_of("# Alpha\n\nTheirs.\n");
    // Restore carries the sha256 of the memory the version page showed: an agent
    // writes meanwhile, so the first click shows the conflict and writes nothing; the
    // conflict page's own button then restores over what it showed.
    b.client
        .goto(&format!(
            "{}/version?store=memories&version={monday}",
            console.base
        ))
        .await
        .unwrap();
    b.find(Locator::Css("form[action='/restore'] button[type=submit]"))
        .await;
    agent_writes(&spec, alpha, "# Alpha\n\nTheirs again.\n").await;
    let before = versions(&spec).len();
    b.click(Locator::Css("form[action='/restore'] button[type=submit]"))
        .await;
    let text = b.wait_for_text("changed meanwhile").await;
    assert!(text.contains("− Theirs again."), "{text}");
    assert!(text.contains("+ Deadline moved to Monday."), "{text}");
    assert_eq!(content(&spec, alpha), "# Alpha\n\nTheirs again.\n");
    assert_eq!(
        versions(&spec).len(),
        before,
        "a refused restore made a version"
    );
    b.click(Locator::Css("form[action='/restore'] button[type=submit]"))
        .await;
    b.find(Locator::Css(".rendered")).await;
    b.wait_for_text("Deadline moved to Monday.").await;
    assert_eq!(
        content(&spec, alpha),
        "# Alpha\n\nDeadline moved to Monday.\n"
    );
    assert_eq!(versions(&spec)[0]["actor"], "browser-tester");
    b.client
        .goto(&format!(
            "{}/redact?store=memories&version={theirs}",
            console.base
        ))
        .await
        .unwrap();
    let text = b.wait_for_text("Redact version").await;
    assert!(text.contains("/memories/projects/alpha.md"), "{text}");
    b.click(Locator::Css("form[action='/redact'] button[type=submit]"))
        .await;
    b.wait_for_text("History of /memories/").await;
    let erased = versions(&spec)
        .into_iter()
        .find(|r| r["version"] == theirs)
        .unwrap();
    assert_eq!(erased["redacted"], true, "{erased}");

    // Import into the empty store: a real file upload of `memdir export`'s archive.
    let archive = stores.sandbox.outside().join("memories.jsonl");
    std::fs::write(&archive, cli(&spec, &["export"])).unwrap();
    b.client.goto(&format!("{}/", console.base)).await.unwrap();
    b.click(Locator::LinkText("Import")).await;
    b.find(Locator::Id("archive"))
        .await
        .send_keys(archive.to_str().unwrap())
        .await
        .unwrap();
    b.click(Locator::Css("form[action='/import'] button[type=submit]"))
        .await;
    b.wait_for_text("projects/").await;
    assert_eq!(
        content(&dest, "/dest/projects/alpha.md"),
        "# Alpha\n\nDeadline moved to Monday.\n"
    );
    assert_eq!(versions(&dest).len(), versions(&spec).len());
    stores.assert_held(&spec);
    stores.assert_held(&dest);
    b.client.clone().close().await.unwrap();
}

/// An agent whose MCP client name is a payload (the actor of its versions) writes one
/// memory into the store of `spec`.
async fn write_as_hostile_agent(spec: &str) {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["--store", spec])
        .args(["serve", "--no-index"])
        .env("RUST_LOG", "memdir=warn");
    let (transport, _log) = common::spawn_mcp(cmd);
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(PAYLOADS[0], "1"),
    )
    .serve(transport)
    .await
    .expect("MCP handshake");
    let args = json!({"path": "/memories/by-agent.md", "content": "written by a hostile agent\n"});
    let r = client
        .call_tool(
            CallToolRequestParams::new("memory_write")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn xss_payloads_never_run_and_show_as_text_on_a_folder_store() {
    xss_corpus(Kind::Folder).await;
}

#[tokio::test]
async fn xss_payloads_never_run_and_show_as_text_on_a_postgresql_store() {
    xss_corpus(Kind::Postgres).await;
}

/// The XSS corpus in a store of `kind`, every page that shows it checked in the browser.
async fn xss_corpus(kind: Kind) {
    let stores = Stores::new(kind);
    let spec = stores.spec("memories");
    let corpus = hostile_corpus();
    stores.seed(&spec, &corpus).await;
    let paths: Vec<String> = corpus.into_iter().map(|(path, _)| path).collect();
    write_as_hostile_agent(&spec).await;
    let console = Console::start(&["--store".into(), spec.clone()]).await;
    let b = Browser::start().await;
    b.client.goto(&console.link).await.unwrap();
    b.assert_inert("stores").await;

    // The folder listing shows every hostile file and folder name and frontmatter.
    b.client
        .goto(&format!(
            "{}/folder?path={}",
            console.base,
            enc("/memories/")
        ))
        .await
        .unwrap();
    b.assert_inert("folder").await;
    let text = b.text().await;
    for p in NAME_PAYLOADS {
        assert!(text.contains(&format!("{p}.md")), "file name {p:?} as text");
        assert!(text.contains(&format!("{p}/")), "folder name {p:?} as text");
    }

    for path in &paths {
        let folder = &path[..path.rfind('/').unwrap() + 1];
        for (page, shown) in [
            (format!("/memory?path={}", enc(path)), path.as_str()),
            (format!("/edit?path={}", enc(path)), path.as_str()),
            (format!("/delete?path={}", enc(path)), path.as_str()),
            (format!("/history?path={}", enc(path)), path.as_str()),
            (format!("/folder?path={}", enc(folder)), folder),
        ] {
            b.client
                .goto(&format!("{}{page}", console.base))
                .await
                .unwrap();
            b.assert_inert(&page).await;
            assert!(b.text().await.contains(shown), "{page}: {shown:?} as text");
        }
    }
    // Memory pages show the payload as text, rendered and raw.
    for (i, p) in PAYLOADS.iter().enumerate() {
        let path = format!("/memories/payload-{i}.md");
        b.client
            .goto(&format!("{}/memory?path={}", console.base, enc(&path)))
            .await
            .unwrap();
        let rendered = b
            .client
            .find(Locator::Css(".rendered"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(rendered.contains(&format!("Payload {i}")), "{rendered}");
        assert!(
            rendered.contains(p),
            "payload {i} rendered as text: {rendered}"
        );
        let fields = b
            .client
            .find(Locator::Css("dl.fields"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(fields.contains(p), "frontmatter {i} as text: {fields}");
    }
    // The history pages: the folder's timeline, and each version's page, its diff with
    // the one before and its redaction page (on a folder, the memory pages above
    // recorded one version of each hostile memory; in a database, the agent's writes).
    let versions: Vec<u64> = versions(&spec)
        .iter()
        .rev()
        .map(|r| r["version"].as_u64().unwrap())
        .collect();
    assert!(versions.len() > paths.len(), "{versions:?}");
    let mut pages = vec![format!("/history?path={}", enc("/memories/"))];
    for pair in versions.windows(2) {
        pages.push(format!("/version?store=memories&version={}", pair[1]));
        pages.push(format!(
            "/diff?store=memories&from={}&to={}",
            pair[0], pair[1]
        ));
        pages.push(format!("/redact?store=memories&version={}", pair[1]));
    }
    for page in &pages {
        b.client
            .goto(&format!("{}{page}", console.base))
            .await
            .unwrap();
        b.assert_inert(page).await;
    }
    let timeline = {
        b.client
            .goto(&format!("{}{}", console.base, pages[0]))
            .await
            .unwrap();
        b.text().await
    };
    for p in NAME_PAYLOADS {
        assert!(
            timeline.contains(&format!("{p}.md")),
            "timeline shows {p:?} as text"
        );
    }
    assert!(
        timeline.contains(&format!("{}/1", PAYLOADS[0])),
        "timeline shows the hostile actor as text"
    );

    // Links with script targets keep their text and lose their target.
    b.client
        .goto(&format!(
            "{}/memory?path={}",
            console.base,
            enc("/memories/links.md")
        ))
        .await
        .unwrap();
    b.assert_inert("links").await;
    let links = b
        .eval("return document.querySelectorAll('.rendered a').length")
        .await;
    assert_eq!(links, json!(0));

    // Search queries echo back as text, in the form and the results.
    for p in PAYLOADS {
        b.client
            .goto(&format!("{}/search?q={}", console.base, enc(p)))
            .await
            .unwrap();
        b.assert_inert(&format!("search {p:?}")).await;
        let value = b
            .client
            .find(Locator::Id("sq"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap();
        assert_eq!(
            value.as_deref(),
            Some(*p),
            "the query field holds the query"
        );
    }
    stores.assert_held(&spec);
    b.client.clone().close().await.unwrap();
}
