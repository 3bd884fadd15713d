//! The command line: options that configure the stores and the server, and subcommands
//! for people who inspect memory from a terminal. The only module that prints to stdout,
//! and only for subcommands (in serve mode stdout belongs to JSON-RPC).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

use crate::history::Retention;
use crate::mcp::ToolSet;
use crate::memory::{
    HistoryRequest, IndexLocation, ListOrder, ListRequest, Memdir, RestoreRequest, SearchRequest,
    Settings,
};
use crate::store::StoreConfig;

/// memdir: durable, searchable memory for AI agents, served over MCP (stdio).
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub options: Options,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct Options {
    /// Serve DIR as the store named `memories` (created if missing).
    #[arg(long, value_name = "DIR", global = true)]
    pub root: Option<PathBuf>,
    /// Serve DIR as store NAME; append `:ro` for read-only. Repeatable; the first store
    /// (after --root's) is where relative paths resolve.
    #[arg(long = "store", value_name = "NAME=DIR[:ro]", global = true)]
    pub stores: Vec<String>,
    /// A description of store NAME, shown to the agent in the server instructions.
    #[arg(long = "describe", value_name = "NAME=TEXT", global = true)]
    pub describe: Vec<String>,
    /// Largest memory in bytes.
    #[arg(long, default_value_t = 102_400, value_name = "BYTES", global = true)]
    pub max_file_bytes: u64,
    /// Largest tool result text in bytes (at least 4096); longer results paginate.
    #[arg(long, default_value_t = 65_536, value_name = "BYTES", global = true,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4096..))]
    pub result_budget: usize,
    /// Store content even when it looks like it holds a credential.
    #[arg(long, global = true)]
    pub allow_secrets: bool,
    /// Keep search indexes under DIR instead of the user's cache folder
    /// (`$XDG_CACHE_HOME/memdir` or `~/.cache/memdir`).
    #[arg(long, value_name = "DIR", global = true)]
    pub index_dir: Option<PathBuf>,
    /// Keep no search index: every search scans the files.
    #[arg(long, global = true, conflicts_with = "index_dir")]
    pub no_index: bool,
    /// Keep no version history (mutations are not recorded; restore is unavailable).
    #[arg(long, global = true)]
    pub no_history: bool,
    /// Keep at most N versions per memory (the current version of a live memory is
    /// always kept). Applied at start-up.
    #[arg(long, value_name = "N", global = true)]
    pub keep_versions: Option<usize>,
    /// Drop versions older than D days (the current version of a live memory is always
    /// kept). Applied at start-up.
    #[arg(long, value_name = "D", global = true)]
    pub keep_days: Option<u64>,
    /// Tools to offer: `default` (memory_list, memory_search, memory_read, memory_write,
    /// memory_edit, memory_delete, memory_history), `anthropic` (only `memory`, Anthropic's
    /// memory tool with its commands and exact strings, on the same stores) or `all`.
    #[arg(long, value_enum, default_value_t = Tools::Default, value_name = "SET", global = true)]
    pub tools: Tools,
    /// Log level on stderr (error, warn, info, debug, trace); RUST_LOG overrides it.
    #[arg(long, default_value = "info", value_name = "LEVEL", global = true)]
    pub log_level: String,
}

/// The tool sets of `--tools`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Tools {
    Default,
    Anthropic,
    All,
}

impl From<Tools> for ToolSet {
    fn from(tools: Tools) -> ToolSet {
        match tools {
            Tools::Default => ToolSet::Default,
            Tools::Anthropic => ToolSet::Anthropic,
            Tools::All => ToolSet::All,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server: on stdio (the default), or over HTTP with `--http ADDR`.
    Serve(ServeArgs),
    /// List memories under a path.
    List {
        #[arg(default_value = "/")]
        path: String,
        /// Levels to show (default: every file, recursively).
        #[arg(long)]
        depth: Option<usize>,
        /// Print one JSON object per entry instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print one memory with numbered lines.
    Read {
        path: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the versions of a memory (or of everything under a folder), newest first.
    History {
        #[arg(default_value = "/")]
        path: String,
        /// Most versions to show.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print the content of this version instead.
        #[arg(long)]
        version: Option<u64>,
        /// Print JSON lines (one version per line) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Restore a version's content at PATH (recorded as a new version by `cli`).
    Restore {
        path: String,
        #[arg(long)]
        version: u64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Erase a version's content and path from the history, keeping who and when. The
    /// content leaves the disk unless another kept version holds the same bytes.
    Redact {
        #[arg(long)]
        version: u64,
        /// The store's name (default: the first store).
        store: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Verify each store: files the tools refuse (FIFOs, hard links, symlinks out of the
    /// store, names no path can spell), the history log (every line a record, every
    /// version's content present and intact), temp files of interrupted writes (removed),
    /// a pending intent, and the search index. Exits 1 when a store has a problem.
    Check {
        /// Print one JSON object per store instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a store (default: the first) with its whole history to stdout, as a JSON
    /// Lines archive: `memdir --root DIR export > backup.jsonl`.
    Export {
        /// The store's name (default: the first store).
        store: Option<String>,
    },
    /// Read an archive made by `export` from stdin into a store (default: the first) that
    /// has no memories and no history yet: `memdir --root NEW import < backup.jsonl`.
    Import {
        /// The store's name (default: the first store).
        store: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Search memory contents.
    Search {
        query: String,
        /// Only under this path.
        #[arg(long)]
        path: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print one JSON object per hit instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete memories whose frontmatter `expires` has passed, each as a version (restore
    /// one with `restore`); `--dry-run` only lists them.
    Prune {
        /// Delete the expired memories (the one kind of pruning there is; required).
        #[arg(long, required = true)]
        expired: bool,
        /// List what would be deleted; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// The store's name (default: the first store).
        store: Option<String>,
        /// Print one JSON object per memory instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List memories not updated for a while, oldest first, with name, description and
    /// age: to keep, update or delete.
    Review {
        /// How long without an update: days (`90d`, or `90`) or weeks (`12w`).
        #[arg(long, default_value = "90d", value_parser = parse_age)]
        older_than: u64,
        /// Only under this path.
        #[arg(default_value = "/")]
        path: String,
        /// Print one JSON object per memory instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write the generated index (one line per memory from its frontmatter `name` and
    /// `description`, within 200 lines and 25 KB) to the store's MEMORY.md.
    Index {
        /// The store's name (default: the first store).
        store: Option<String>,
        /// Print a JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Options of `memdir serve`.
#[derive(Debug, Default, Args)]
pub struct ServeArgs {
    /// Serve MCP over Streamable HTTP at ADDR (e.g. `127.0.0.1:8080`; port 0 picks a free
    /// one), on the path `/mcp`, instead of stdio. A non-loopback address needs `--tokens`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Bearer tokens for HTTP clients: one `NAME TOKEN` per line (`#` comments); NAME is
    /// recorded as the actor of the versions its requests make. The file must not be
    /// readable by other users (`chmod 600`); SIGHUP re-reads it.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub tokens: Option<PathBuf>,
    /// Also answer requests whose `Host` is HOST (or HOST:PORT): the name clients use to
    /// reach this server. Loopback names and the bound address are always accepted; `*`
    /// accepts any (not recommended). Repeatable.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// Also accept browser requests from ORIGIN (`https://app.example.com`, `:*` for any
    /// port). Requests without `Origin` and from loopback origins are always accepted; `*`
    /// accepts any (not recommended). Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// Largest HTTP request body in bytes (default: 1 MiB, or 8 times --max-file-bytes
    /// when that is larger).
    #[arg(long, value_name = "BYTES", requires = "http")]
    pub max_body_bytes: Option<usize>,
}

impl ServeArgs {
    /// The HTTP options, when `--http` was given.
    pub fn http_options(&self, options: &Options) -> Option<crate::mcp::HttpOptions> {
        let addr = self.http?;
        let default_body = (1usize << 20).max(
            usize::try_from(options.max_file_bytes)
                .unwrap_or(usize::MAX)
                .saturating_mul(8),
        );
        Some(crate::mcp::HttpOptions {
            addr,
            tokens: self.tokens.clone(),
            allow_hosts: self.allow_hosts.clone(),
            allow_origins: self.allow_origins.clone(),
            max_body_bytes: self.max_body_bytes.unwrap_or(default_body),
        })
    }
}

impl Options {
    /// The stores to serve, in order.
    pub fn store_configs(&self) -> anyhow::Result<Vec<StoreConfig>> {
        let mut configs = Vec::new();
        if let Some(root) = &self.root {
            configs.push(StoreConfig {
                name: "memories".into(),
                dir: root.clone(),
                read_only: false,
                description: None,
            });
        }
        for spec in &self.stores {
            let (name, rest) = spec
                .split_once('=')
                .with_context(|| format!("--store {spec:?}: expected NAME=DIR or NAME=DIR:ro"))?;
            let (dir, read_only) = match rest.rsplit_once(':') {
                Some((dir, "ro")) => (dir, true),
                Some((dir, "rw")) => (dir, false),
                _ => (rest, false),
            };
            check_store_name(name)?;
            if dir.is_empty() {
                bail!("--store {spec:?}: the folder is empty");
            }
            configs.push(StoreConfig {
                name: name.into(),
                dir: dir.into(),
                read_only,
                description: None,
            });
        }
        if configs.is_empty() {
            bail!(
                "no store to serve: give --root DIR (a store named `memories`) or --store NAME=DIR[:ro]"
            );
        }
        for (i, c) in configs.iter().enumerate() {
            if configs[..i].iter().any(|o| o.name == c.name) {
                bail!("store name `{}` is given twice", c.name);
            }
        }
        // The memory tool's `/memories` is the first store: a later store of that name
        // could not be reached through it.
        if self.tools != Tools::Default
            && let Some(c) = configs.iter().skip(1).find(|c| c.name == "memories")
        {
            bail!(
                "store `{}`: with --tools {}, /memories is the first store; give the store named `memories` first",
                c.name,
                if self.tools == Tools::All {
                    "all"
                } else {
                    "anthropic"
                }
            );
        }
        for spec in &self.describe {
            let (name, text) = spec
                .split_once('=')
                .with_context(|| format!("--describe {spec:?}: expected NAME=TEXT"))?;
            let config = configs
                .iter_mut()
                .find(|c| c.name == name)
                .with_context(|| format!("--describe names `{name}`, which is not a store"))?;
            config.description = Some(text.into());
        }
        Ok(configs)
    }

    pub fn settings(&self) -> Settings {
        Settings {
            max_file_bytes: self.max_file_bytes,
            result_budget: self.result_budget,
            allow_secrets: self.allow_secrets,
            index: match (&self.index_dir, self.no_index) {
                (_, true) => IndexLocation::Off,
                (Some(dir), false) => IndexLocation::Dir(dir.clone()),
                (None, false) => IndexLocation::UserCache,
            },
            history: !self.no_history,
            retention: Retention {
                keep_versions: self.keep_versions,
                keep_days: self.keep_days,
            },
        }
    }
}

fn check_store_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!(
            "store name `{name}`: use 1-64 ASCII letters, digits, `-`, `_` or `.` (not starting with `.`)"
        );
    }
    Ok(())
}

/// Runs a subcommand for a person at a terminal.
pub fn run_command(memdir: &Memdir, command: &Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(_) => unreachable!("serve is handled by main"),
        Command::List { path, depth, json } => {
            let mut cursor: Option<String> = None;
            loop {
                let page = memdir.list(&ListRequest {
                    path: Some(path),
                    depth: *depth,
                    limit: 1000,
                    cursor: cursor.as_deref(),
                    ..Default::default()
                })?;
                for e in &page.entries {
                    if *json {
                        println!(
                            "{}",
                            serde_json::json!({
                                "path": e.path, "kind": if e.is_dir { "dir" } else { "file" },
                                "size_bytes": e.size_bytes, "content_sha256": e.content_sha256,
                                "updated_at": e.updated_at, "name": e.name,
                                "description": e.description, "type": e.kind,
                                "file_count": e.file_count, "expires_at": e.expires_at,
                                "expired": e.expired,
                            })
                        );
                        continue;
                    }
                    let name = e.name.as_deref().map(|n| format!("  {n}"));
                    println!(
                        "{:>10}  {}  {}{}",
                        e.size_bytes,
                        e.updated_at,
                        e.path,
                        name.unwrap_or_default()
                    );
                }
                match page.next_cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
        }
        Command::History {
            path,
            limit,
            version,
            json,
        } => {
            let r = memdir.history(&HistoryRequest {
                path: Some(path),
                limit: *limit,
                cursor: None,
                version: *version,
                ..Default::default()
            })?;
            if let Some(content) = r.content {
                print!("{content}");
                return Ok(());
            }
            for v in r.versions {
                if *json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "version": v.version, "path": v.path, "from": v.from,
                            "operation": format!("{:?}", v.operation).to_lowercase(),
                            "at": v.at, "actor": v.actor, "content_sha256": v.content_sha256,
                            "size_bytes": v.size_bytes, "redacted": v.redacted,
                            "reason": v.reason,
                        })
                    );
                } else {
                    let what = if v.redacted {
                        "[redacted]".to_owned()
                    } else {
                        v.path
                    };
                    println!(
                        "v{:<6} {}  {:<9} {}  by {}  {} bytes{}",
                        v.version,
                        v.at,
                        format!("{:?}", v.operation).to_lowercase(),
                        what,
                        v.actor,
                        v.size_bytes,
                        v.reason.map(|r| format!("  ({r})")).unwrap_or_default()
                    );
                }
            }
        }
        Command::Restore {
            path,
            version,
            json,
        } => {
            let r = memdir.restore(&RestoreRequest {
                path,
                version: *version,
                if_absent: false,
                expected_sha256: None,
                actor: "cli",
            })?;
            if *json {
                println!(
                    "{}",
                    serde_json::json!({
                        "path": r.path, "restored": version, "version": r.version,
                        "unchanged": r.unchanged, "content_sha256": r.content_sha256,
                    })
                );
            } else {
                println!(
                    "restored version {version} at {} (now version {})",
                    r.path,
                    r.version.map_or("unchanged".into(), |v| v.to_string())
                );
            }
        }
        Command::Redact {
            version,
            store,
            json,
        } => {
            let r = memdir.redact(store.as_deref(), *version)?;
            if *json {
                println!(
                    "{}",
                    serde_json::json!({"redacted": r.version, "at": r.at, "actor": r.actor})
                );
            } else {
                println!("redacted version {} ({} by {})", r.version, r.at, r.actor);
            }
        }
        Command::Read { path, json } => {
            let r = memdir.read(path, None)?;
            if *json {
                println!(
                    "{}",
                    serde_json::json!({
                        "path": r.path, "content": r.content, "content_sha256": r.content_sha256,
                        "size_bytes": r.size_bytes, "total_lines": r.total_lines,
                        "updated_at": r.updated_at, "age_days": r.age_days,
                        "expires_at": r.expires_at, "expired": r.expired,
                    })
                );
            } else {
                println!("{}", r.rendered);
            }
        }
        Command::Search {
            query,
            path,
            limit,
            json,
        } => {
            let r = memdir.search(
                &SearchRequest {
                    query,
                    path: path.as_deref(),
                    limit: *limit,
                    ..Default::default()
                },
                &|_, _| {},
            )?;
            if r.relaxed && !*json {
                println!("(no memory has every word; showing partial matches)");
            }
            for h in r.hits {
                if *json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "path": h.path, "score": h.score, "line": h.line,
                            "snippet": h.snippet, "name": h.name,
                            "description": h.description, "updated_at": h.updated_at,
                            "expired": h.expired, "relaxed": r.relaxed,
                        })
                    );
                    continue;
                }
                let name = h.name.as_deref().map(|n| format!("  {n}"));
                println!(
                    "{}  (score {:.2}){}\n{}\n",
                    h.path,
                    h.score,
                    name.unwrap_or_default(),
                    h.snippet
                );
            }
        }
        Command::Export { store } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let summary = memdir.export(store.as_deref(), &mut out)?;
            eprintln!(
                "exported {} memories and {} versions",
                summary.files, summary.versions
            );
            for skipped in &summary.skipped {
                eprintln!("left out {skipped}");
            }
        }
        Command::Import { store, json } => {
            let summary = memdir.import(store.as_deref(), &mut std::io::stdin().lock())?;
            if *json {
                println!(
                    "{}",
                    serde_json::json!({"files": summary.files, "versions": summary.versions})
                );
            } else {
                println!(
                    "imported {} memories and {} versions",
                    summary.files, summary.versions
                );
            }
        }
        Command::Check { json } => {
            let checks = memdir.check();
            for c in &checks {
                if *json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "store": c.store,
                            "files": c.files,
                            "versions": c.versions,
                            "ok": c.problems.is_empty(),
                            "problems": c.problems,
                            "notes": c.notes,
                        })
                    );
                    continue;
                }
                println!(
                    "{}: {} file(s), {} version(s): {}",
                    c.store,
                    c.files,
                    c.versions,
                    match c.problems.len() {
                        0 => "OK".to_owned(),
                        n => format!("{n} problem(s)"),
                    }
                );
                for p in &c.problems {
                    println!("  problem: {p}");
                }
                for n in &c.notes {
                    println!("  note: {n}");
                }
            }
            let failing = checks.iter().filter(|c| !c.problems.is_empty()).count();
            if failing > 0 {
                bail!("problems found in {failing} store(s)");
            }
        }
        Command::Prune {
            dry_run,
            store,
            json,
            ..
        } => prune(memdir, store.as_deref(), *dry_run, *json)?,
        Command::Review {
            older_than,
            path,
            json,
        } => review(memdir, path, *older_than, *json)?,
        Command::Index { store, json } => index(memdir, store.as_deref(), *json)?,
    }
    Ok(())
}

/// `memdir prune --expired`.
fn prune(memdir: &Memdir, store: Option<&str>, dry_run: bool, json: bool) -> anyhow::Result<()> {
    let pruned = memdir.prune_expired(store, dry_run, "cli")?;
    for e in &pruned {
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "path": e.path, "expires_at": e.expires_at,
                    "deleted": !dry_run, "version": e.version,
                })
            );
        } else {
            let what = match e.version {
                _ if dry_run => "would delete".to_owned(),
                Some(v) => format!("deleted (version {v})"),
                None => "deleted".to_owned(),
            };
            println!("{what}  {}  expired at {}", e.path, e.expires_at);
        }
    }
    if !json {
        match (pruned.len(), dry_run) {
            (0, _) => println!("no expired memories"),
            (n, true) => println!(
                "{n} expired memor{} (dry run: nothing deleted)",
                plural_y(n)
            ),
            (n, false) => println!(
                "{n} expired memor{} deleted; restore one with `memdir restore PATH --version N`",
                plural_y(n)
            ),
        }
    }
    Ok(())
}

/// `memdir review`.
fn review(memdir: &Memdir, path: &str, days: u64, json: bool) -> anyhow::Result<()> {
    let mut cursor: Option<String> = None;
    let mut count = 0;
    loop {
        let page = memdir.list(&ListRequest {
            path: Some(path),
            limit: 1000,
            cursor: cursor.as_deref(),
            older_than_days: Some(days),
            order: ListOrder::Oldest,
            ..Default::default()
        })?;
        for e in &page.entries {
            count += 1;
            let age = crate::text::parse_instant(&e.updated_at)
                .map_or(0, |t| (crate::text::now_secs() - t).max(0) / 86_400);
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "path": e.path, "name": e.name, "description": e.description,
                        "updated_at": e.updated_at, "age_days": age,
                        "expired": e.expired, "expires_at": e.expires_at,
                    })
                );
            } else {
                let about = [e.name.as_deref(), e.description.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                println!(
                    "{age:>5} days  {}{}{}",
                    e.path,
                    if e.expired { "  [expired]" } else { "" },
                    if about.is_empty() {
                        String::new()
                    } else {
                        format!("  {about}")
                    }
                );
            }
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if !json {
        println!(
            "{count} memor{} not updated for {days} days or more: keep, update or delete each",
            plural_y(count)
        );
    }
    Ok(())
}

/// `memdir index`.
fn index(memdir: &Memdir, store: Option<&str>, json: bool) -> anyhow::Result<()> {
    let (written, index) = memdir.write_index(store, "cli")?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "path": written.path, "listed": index.listed, "left_out": index.left_out,
                "unchanged": written.unchanged, "version": written.version,
                "content_sha256": written.content_sha256,
            })
        );
    } else {
        println!(
            "{} {}: {} memor{} listed{}",
            if written.unchanged {
                "unchanged"
            } else {
                "wrote"
            },
            written.path,
            index.listed,
            plural_y(index.listed),
            if index.left_out > 0 {
                format!(", {} left out (200 lines / 25 KB)", index.left_out)
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

fn plural_y(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}

/// `90d`, `90` (days) or `12w` (weeks), as days.
fn parse_age(s: &str) -> Result<u64, String> {
    let (number, unit) = match s.strip_suffix(['d', 'w']) {
        Some(n) => (n, &s[n.len()..]),
        None => (s, "d"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not an age: give days (`90d`) or weeks (`12w`)"))?;
    Ok(if unit == "w" { n.saturating_mul(7) } else { n })
}
