//! The command line: options that configure the stores and the server, and subcommands
//! for people who inspect memory from a terminal. The only module that prints to stdout,
//! and only for subcommands (in serve mode stdout belongs to JSON-RPC).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

use crate::history::Retention;
use crate::mcp::ToolSet;
use crate::memory::{
    HistoryRequest, IndexLocation, ListRequest, Memdir, RestoreRequest, SearchRequest, Settings,
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
    },
    /// Print one memory with numbered lines.
    Read { path: String },
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
    },
    /// Erase a version's content and path from the history, keeping who and when. The
    /// content leaves the disk unless another kept version holds the same bytes.
    Redact {
        #[arg(long)]
        version: u64,
        /// The store's name (default: the first store).
        store: Option<String>,
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
    },
    /// Search memory contents.
    Search {
        query: String,
        /// Only under this path.
        #[arg(long)]
        path: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
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
        Command::List { path, depth } => {
            let mut cursor: Option<String> = None;
            loop {
                let page = memdir.list(&ListRequest {
                    path: Some(path),
                    depth: *depth,
                    limit: 1000,
                    cursor: cursor.as_deref(),
                })?;
                for e in &page.entries {
                    println!("{:>10}  {}  {}", e.size_bytes, e.updated_at, e.path);
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
                        })
                    );
                } else {
                    let what = if v.redacted {
                        "[redacted]".to_owned()
                    } else {
                        v.path
                    };
                    println!(
                        "v{:<6} {}  {:<9} {}  by {}  {} bytes",
                        v.version,
                        v.at,
                        format!("{:?}", v.operation).to_lowercase(),
                        what,
                        v.actor,
                        v.size_bytes
                    );
                }
            }
        }
        Command::Restore { path, version } => {
            let r = memdir.restore(&RestoreRequest {
                path,
                version: *version,
                if_absent: false,
                expected_sha256: None,
                actor: "cli",
            })?;
            println!(
                "restored version {version} at {} (now version {})",
                r.path,
                r.version.map_or("unchanged".into(), |v| v.to_string())
            );
        }
        Command::Redact { version, store } => {
            let r = memdir.redact(store.as_deref(), *version)?;
            println!("redacted version {} ({} by {})", r.version, r.at, r.actor);
        }
        Command::Read { path } => {
            let r = memdir.read(path, None)?;
            println!("{}", r.rendered);
        }
        Command::Search { query, path, limit } => {
            let r = memdir.search(
                &SearchRequest {
                    query,
                    path: path.as_deref(),
                    limit: *limit,
                    ..Default::default()
                },
                &|_, _| {},
            )?;
            if r.relaxed {
                println!("(no memory has every word; showing partial matches)");
            }
            for h in r.hits {
                println!("{}  (score {:.2})\n{}\n", h.path, h.score, h.snippet);
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
        Command::Import { store } => {
            let summary = memdir.import(store.as_deref(), &mut std::io::stdin().lock())?;
            println!(
                "imported {} memories and {} versions",
                summary.files, summary.versions
            );
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
    }
    Ok(())
}
