//! The command line: which stores to serve (every command), the server's options, and
//! subcommands for people who inspect memory from a terminal. The only module that prints
//! to stdout, and only for subcommands (in serve mode stdout belongs to JSON-RPC).
//!
//! Layout: `stores` chooses the stores (flags, environment, default) and expands paths;
//! this file parses, opens the stores as each command needs them, and renders results.

mod stores;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

use crate::history::Retention;
use crate::index::cache;
use crate::mcp::ToolSet;
use crate::memory::{
    HistoryRequest, IndexLocation, ListRequest, Memdir, RestoreRequest, SearchRequest, Settings,
};
use crate::path::Target;
use crate::store::folder::{self, Folder};
use stores::{Chosen, Env, Source};

pub use stores::STORES_SEPARATOR;

/// memdir: durable, searchable memory for AI agents, served over MCP (stdio).
///
/// With no subcommand, memdir serves. With no --root or --store, the stores come from
/// MEMDIR_ROOT (one folder, the store `memories`) and MEMDIR_STORES (`NAME=DIR[:ro]`
/// entries separated by `;`), else the store `memories` in the user's data folder.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    /// Log level on stderr (error, warn, info, debug, trace); RUST_LOG overrides it.
    #[arg(long, default_value = "info", value_name = "LEVEL", global = true)]
    pub log_level: String,
    /// The server's options, when no subcommand is given (its stores also before one).
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parses the command line, or exits with clap's message. The store flags may come
    /// before any subcommand that takes them (`memdir --root DIR list`); the server's
    /// other options only before none but `serve` (they would be silently ignored).
    pub fn parse_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches, parser::ValueSource};
        let matches = Cli::command().get_matches();
        let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        let Some(name) = matches.subcommand_name() else {
            return cli;
        };
        let fail = |message: String| -> ! {
            Cli::command()
                .error(clap::error::ErrorKind::ArgumentConflict, message)
                .exit()
        };
        let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        let serve_only = ServeArgs::augment_args(clap::Command::new("serve"));
        if let Some(arg) = serve_only.get_arguments().find(|a| {
            !matches!(a.get_id().as_str(), "root" | "stores") && given(a.get_id().as_str())
        }) {
            fail(format!(
                "--{} is an option of the server, not of `memdir {name}` (see `memdir {name} --help`)",
                arg.get_long().unwrap_or_default()
            ));
        }
        let top = std::mem::take(&mut cli.serve.stores);
        match cli.command.as_mut().and_then(Command::stores_mut) {
            Some(stores) => {
                if top.root.is_some() && stores.root.is_some() {
                    fail("--root is given twice".into());
                }
                stores.root = stores.root.take().or(top.root);
                stores.stores.splice(0..0, top.stores);
            }
            None if given("root") || given("stores") => fail(format!(
                "`memdir {name}` takes no store (see `memdir {name} --help`)"
            )),
            None => {}
        }
        cli
    }
}

/// The stores to serve or look at.
#[derive(Clone, Debug, Default, Args)]
pub struct StoreArgs {
    /// Serve DIR as the store named `memories`. `~` and `$HOME` are expanded.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Serve DIR as store NAME; append `:ro` for read-only. Repeatable; the first store
    /// (after --root's) is where relative paths resolve.
    #[arg(long = "store", value_name = "NAME=DIR[:ro]")]
    pub stores: Vec<String>,
}

/// The options of `memdir serve` (and of `memdir` with no subcommand).
#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub stores: StoreArgs,
    /// A description of store NAME, shown to the agent in the server instructions.
    #[arg(long = "describe", value_name = "NAME=TEXT")]
    pub describe: Vec<String>,
    /// Tools to offer: `default` (memory_list, memory_search, memory_read, memory_write,
    /// memory_edit, memory_delete, memory_history), `anthropic` (only `memory`, Anthropic's
    /// memory tool with its commands and exact strings, on the same stores) or `all`.
    #[arg(long, value_enum, default_value_t = Tools::Default, value_name = "SET")]
    pub tools: Tools,
    /// Largest tool result text in bytes (at least 4096); longer results paginate.
    #[arg(long, default_value_t = 65_536, value_name = "BYTES",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(4096..))]
    pub result_budget: usize,
    #[command(flatten)]
    pub limits: WriteArgs,
    #[command(flatten)]
    pub index: IndexArgs,
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// What a write may hold.
#[derive(Clone, Debug, Args)]
pub struct WriteArgs {
    /// Largest memory in bytes.
    #[arg(long, default_value_t = 102_400, value_name = "BYTES")]
    pub max_file_bytes: u64,
    /// Store content even when it looks like it holds a credential.
    #[arg(long)]
    pub allow_secrets: bool,
}

/// Where search indexes live.
#[derive(Clone, Debug, Args)]
pub struct IndexArgs {
    /// Keep search indexes under DIR instead of the user's cache folder
    /// (`$XDG_CACHE_HOME/memdir` or `~/.cache/memdir`).
    #[arg(long, value_name = "DIR")]
    pub index_dir: Option<PathBuf>,
    /// Keep no search index: every search scans the files.
    #[arg(long, conflicts_with = "index_dir")]
    pub no_index: bool,
}

/// How much history the server keeps.
#[derive(Clone, Debug, Args)]
pub struct HistoryArgs {
    /// Keep no version history (mutations are not recorded; restore is unavailable).
    #[arg(long)]
    pub no_history: bool,
    /// Keep at most N versions per memory (the current version of a live memory is
    /// always kept). Applied at start-up.
    #[arg(long, value_name = "N")]
    pub keep_versions: Option<usize>,
    /// Drop versions older than D days (the current version of a live memory is always
    /// kept). Applied at start-up.
    #[arg(long, value_name = "D")]
    pub keep_days: Option<u64>,
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

/// Lines `A:B` of a memory (1-based, inclusive), `A:` to its end, or `A` alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lines {
    pub start: i64,
    /// `-1`: to the end.
    pub end: i64,
}

fn parse_lines(raw: &str) -> Result<Lines, String> {
    let number = |s: &str| {
        s.trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("`{s}` is not a line number (lines count from 1)"))
    };
    let (start, end) = match raw.split_once(':') {
        Some((a, "")) => (number(a)?, -1),
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let a = number(raw)?;
            (a, a)
        }
    };
    if end != -1 && end < start {
        return Err(format!("{start}:{end} ends before it starts"));
    }
    Ok(Lines { start, end })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server on stdio (what `memdir` with no subcommand does).
    Serve(ServeArgs),
    /// List memories under a path.
    List {
        #[command(flatten)]
        stores: StoreArgs,
        #[arg(default_value = "/")]
        path: String,
        /// Levels to show (default: every file, recursively).
        #[arg(long)]
        depth: Option<usize>,
    },
    /// Print one memory with numbered lines.
    Read {
        #[command(flatten)]
        stores: StoreArgs,
        path: String,
        /// Only lines A to B (1-based, inclusive); `A:` to the end.
        #[arg(long, value_name = "A:B", value_parser = parse_lines)]
        lines: Option<Lines>,
    },
    /// Show the versions of a memory (or of everything under a folder), newest first.
    History {
        #[command(flatten)]
        stores: StoreArgs,
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
        #[command(flatten)]
        stores: StoreArgs,
        path: String,
        #[arg(long)]
        version: u64,
        /// Restore it even though the version belongs to another path.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        limits: WriteArgs,
    },
    /// Erase a version's content and path from the history, keeping who and when. The
    /// content leaves the disk unless another kept version holds the same bytes.
    Redact {
        #[command(flatten)]
        stores: StoreArgs,
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
        #[command(flatten)]
        stores: StoreArgs,
        /// Print one JSON object per store instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        index: IndexArgs,
    },
    /// Write a store (default: the first) with its whole history to stdout, as a JSON
    /// Lines archive: `memdir --root DIR export > backup.jsonl`.
    Export {
        #[command(flatten)]
        stores: StoreArgs,
        /// The store's name (default: the first store).
        store: Option<String>,
    },
    /// Read an archive made by `export` from stdin into a store (default: the first) that
    /// has no memories and no history yet: `memdir --root NEW import < backup.jsonl`.
    Import {
        #[command(flatten)]
        stores: StoreArgs,
        /// The store's name (default: the first store).
        store: Option<String>,
        #[command(flatten)]
        limits: WriteArgs,
    },
    /// Search memory contents.
    Search {
        #[command(flatten)]
        stores: StoreArgs,
        query: String,
        /// Only under this path.
        #[arg(long)]
        path: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[command(flatten)]
        index: IndexArgs,
    },
    /// The search indexes kept outside the stores.
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
    },
}

impl Command {
    /// The store flags of a subcommand that takes them.
    fn stores_mut(&mut self) -> Option<&mut StoreArgs> {
        match self {
            Command::Serve(args) => Some(&mut args.stores),
            Command::List { stores, .. }
            | Command::Read { stores, .. }
            | Command::History { stores, .. }
            | Command::Restore { stores, .. }
            | Command::Redact { stores, .. }
            | Command::Check { stores, .. }
            | Command::Export { stores, .. }
            | Command::Import { stores, .. }
            | Command::Search { stores, .. } => Some(stores),
            Command::Cache { .. } => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Remove the search indexes of stores that no longer exist (and of indexes made by
    /// an older memdir, which do not say their store; any index is rebuilt when needed).
    Prune {
        /// Prune under DIR (the --index-dir of the servers) instead of the user's cache
        /// folder.
        #[arg(long, value_name = "DIR")]
        index_dir: Option<PathBuf>,
    },
}

/// How a command uses its stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Only reads: every store must exist; nothing is created.
    Read,
    /// Changes a store that must exist (its versions are in it).
    Change,
    /// Serves or fills stores: missing writable ones are created.
    Create,
}

impl WriteArgs {
    fn apply(&self, settings: &mut Settings) {
        settings.max_file_bytes = self.max_file_bytes;
        settings.allow_secrets = self.allow_secrets;
    }
}

impl IndexArgs {
    fn apply(&self, settings: &mut Settings, env: &Env) -> anyhow::Result<()> {
        settings.index = match (&self.index_dir, self.no_index) {
            (_, true) => IndexLocation::Off,
            (Some(dir), false) => IndexLocation::Dir(stores::expand_path(dir, env, "--index-dir")?),
            (None, false) => IndexLocation::UserCache,
        };
        Ok(())
    }
}

impl ServeArgs {
    fn settings(&self, env: &Env) -> anyhow::Result<Settings> {
        let mut settings = Settings {
            result_budget: self.result_budget,
            history: !self.history.no_history,
            retention: Retention {
                keep_versions: self.history.keep_versions,
                keep_days: self.history.keep_days,
            },
            ..Settings::default()
        };
        self.limits.apply(&mut settings);
        self.index.apply(&mut settings, env)?;
        Ok(settings)
    }
}

/// Opens the stores for the server, after checking its options, and logs the start-up
/// line (version, stores with folders and modes, tools, index) on stderr.
pub fn open_server(args: &ServeArgs) -> anyhow::Result<(Memdir, ToolSet)> {
    let env = Env::of_process();
    let stores = &args.stores;
    let mut chosen = stores::choose(stores.root.as_deref(), &stores.stores, &env)?;
    // The memory tool's `/memories` is the first store: a later store of that name
    // could not be reached through it.
    if args.tools != Tools::Default
        && let Some(c) = chosen.iter().skip(1).find(|c| c.config.name == "memories")
    {
        bail!(
            "store `{}`: with --tools {}, /memories is the first store; give the store named `memories` first",
            c.config.name,
            if args.tools == Tools::All {
                "all"
            } else {
                "anthropic"
            }
        );
    }
    for spec in &args.describe {
        let (name, text) = spec
            .split_once('=')
            .with_context(|| format!("--describe {spec:?}: expected NAME=TEXT"))?;
        let c = chosen
            .iter_mut()
            .find(|c| c.config.name == name)
            .with_context(|| format!("--describe names `{name}`, which is not a store"))?;
        c.config.description = Some(text.into());
    }
    let memdir = open(&chosen, Access::Create, args.settings(&env)?)?;
    let tools = ToolSet::from(args.tools);
    tracing::info!("{}", StartUp(&memdir, &chosen, tools));
    Ok((memdir, tools))
}

/// Opens the chosen stores as `access` needs them: a store only read must exist; a
/// writable store must be writable by this user (checked now, not at the first write).
fn open(chosen: &[Chosen], access: Access, settings: Settings) -> anyhow::Result<Memdir> {
    for c in chosen {
        let dir = &c.config.dir;
        let name = &c.config.name;
        let at = || format!("store `{name}` ({})", c.source);
        match folder::inspect(dir)
            .with_context(|| format!("{}: cannot look at folder {}", at(), dir.display()))?
        {
            Folder::Present => {}
            Folder::NotAFolder => bail!(
                "{}: {} is not a folder; give the folder that holds the store's memories",
                at(),
                dir.display()
            ),
            Folder::Missing if c.source == Source::Default && access == Access::Read => bail!(
                "no memories yet: the default store {} does not exist; it is made when the server (or `memdir import`) first uses it, or give --root DIR",
                dir.display()
            ),
            Folder::Missing if access != Access::Create => bail!(
                "{}: folder {} does not exist (check the path; only the server and `import` create a store)",
                at(),
                dir.display()
            ),
            Folder::Missing if c.config.read_only => bail!(
                "{}: folder {} does not exist, and a read-only store is not created",
                at(),
                dir.display()
            ),
            Folder::Missing => folder::create(dir).with_context(|| {
                format!(
                    "{}: cannot create folder {}; create it yourself, or give a folder you can write",
                    at(),
                    dir.display()
                )
            })?,
        }
    }
    let configs: Vec<_> = chosen.iter().map(|c| c.config.clone()).collect();
    let memdir = Memdir::open(&configs, settings)?;
    if access != Access::Read {
        for (store, c) in memdir.stores().iter().zip(chosen) {
            if store.read_only {
                continue;
            }
            if let Err(e) = store.probe_writable() {
                let dir = c.config.dir.display();
                bail!(
                    "store `{}` ({}): folder {dir} is not writable ({e}); make it writable (e.g. `chmod -R u+w {dir}`), or serve it read-only with --store {}={dir}:ro",
                    store.name,
                    c.source,
                    store.name,
                );
            }
        }
    }
    Ok(memdir)
}

/// The start-up line of the server.
struct StartUp<'a>(&'a Memdir, &'a [Chosen], ToolSet);

impl fmt::Display for StartUp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let StartUp(memdir, chosen, tools) = *self;
        write!(f, "memdir {} serving ", env!("CARGO_PKG_VERSION"))?;
        for (i, (store, c)) in memdir.stores().iter().zip(chosen).enumerate() {
            let mode = if store.read_only {
                "read-only"
            } else {
                "read-write"
            };
            let default = if c.source == Source::Default {
                ", the default store"
            } else {
                ""
            };
            let sep = if i == 0 { "" } else { ", " };
            write!(
                f,
                "{sep}/{} at {} ({mode}{default})",
                store.name,
                c.config.dir.display()
            )?;
        }
        write!(
            f,
            "; tools: {}",
            crate::mcp::offered_tools(memdir, tools).join(", ")
        )?;
        let mut bases: Vec<PathBuf> = Vec::new();
        for i in 0..memdir.stores().len() {
            if let Some(base) = memdir
                .index_path(i)
                .and_then(|db| db.parent()?.parent().map(Path::to_owned))
                && !bases.contains(&base)
            {
                bases.push(base);
            }
        }
        if bases.is_empty() {
            write!(f, "; search index: none (searches scan the files)")
        } else {
            let bases: Vec<_> = bases.iter().map(|b| b.display().to_string()).collect();
            write!(f, "; search index under {}", bases.join(", "))
        }
    }
}

/// Runs a subcommand for a person at a terminal.
pub fn run_command(mut command: Command) -> anyhow::Result<()> {
    let env = Env::of_process();
    if let Command::Cache {
        command: CacheCommand::Prune { index_dir },
    } = &command
    {
        return prune_caches(index_dir.as_deref(), &env);
    }
    let mut settings = Settings::default();
    let access = match &command {
        Command::Serve(_) | Command::Cache { .. } => {
            unreachable!("serve is handled by main, cache above")
        }
        Command::List { .. }
        | Command::Read { .. }
        | Command::History { .. }
        | Command::Export { .. } => Access::Read,
        Command::Search { index, .. } | Command::Check { index, .. } => {
            index.apply(&mut settings, &env)?;
            Access::Read
        }
        Command::Restore { limits, .. } => {
            limits.apply(&mut settings);
            Access::Change
        }
        Command::Redact { .. } => Access::Change,
        Command::Import { limits, .. } => {
            limits.apply(&mut settings);
            Access::Create
        }
    };
    let stores = command.stores_mut().cloned().unwrap_or_default();
    let chosen = stores::choose(stores.root.as_deref(), &stores.stores, &env)?;
    let memdir = open(&chosen, access, settings)?;
    match &command {
        Command::Serve(_) | Command::Cache { .. } => unreachable!("handled above"),
        Command::List { path, depth, .. } => list(&memdir, path, *depth)?,
        Command::History {
            path,
            limit,
            version,
            json,
            ..
        } => history(&memdir, path, *limit, *version, *json)?,
        Command::Restore {
            path,
            version,
            force,
            ..
        } => restore(&memdir, path, *version, *force)?,
        Command::Redact { version, store, .. } => {
            let r = memdir.redact(store.as_deref(), *version)?;
            println!("redacted version {} ({} by {})", r.version, r.at, r.actor);
        }
        Command::Read { path, lines, .. } => {
            let r = memdir.read(path, lines.map(|l| (l.start, l.end)))?;
            if r.size_bytes == 0 {
                print!("{}", r.rendered);
                println!("{} is empty", r.path);
            } else {
                println!("{}", r.rendered);
            }
        }
        Command::Search {
            query, path, limit, ..
        } => search(&memdir, query, path.as_deref(), *limit)?,
        Command::Export { store, .. } => {
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
        Command::Import { store, .. } => {
            let summary = memdir.import(store.as_deref(), &mut std::io::stdin().lock())?;
            println!(
                "imported {} memories and {} versions",
                summary.files, summary.versions
            );
        }
        Command::Check { json, .. } => check(&memdir, *json)?,
    }
    Ok(())
}

/// What a path names, for saying there is nothing there: `/memories/notes`, or every
/// store (`/memories, /docs`).
fn scope(memdir: &Memdir, raw: &str) -> String {
    let names: Vec<&str> = memdir.stores().iter().map(|s| s.name.as_str()).collect();
    match crate::path::parse(raw, &names) {
        Ok(Target::Path(p)) => p.canonical(),
        Ok(Target::AllStores) => names
            .iter()
            .map(|n| format!("/{n}"))
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => raw.to_owned(),
    }
}

fn list(memdir: &Memdir, path: &str, depth: Option<usize>) -> anyhow::Result<()> {
    let mut cursor: Option<String> = None;
    let mut shown = 0;
    loop {
        let page = memdir.list(&ListRequest {
            path: Some(path),
            depth,
            limit: 1000,
            cursor: cursor.as_deref(),
        })?;
        for e in &page.entries {
            println!("{:>10}  {}  {}", e.size_bytes, e.updated_at, e.path);
        }
        shown += page.entries.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if shown == 0 {
        println!("no memories in {}", scope(memdir, path));
    }
    Ok(())
}

fn history(
    memdir: &Memdir,
    path: &str,
    limit: usize,
    version: Option<u64>,
    json: bool,
) -> anyhow::Result<()> {
    let r = memdir.history(&HistoryRequest {
        path: Some(path),
        limit,
        cursor: None,
        version,
    })?;
    if version.is_some() {
        match r.content {
            Some(content) => print!("{content}"),
            None => println!("version {} has no content (redacted)", version.unwrap_or(0)),
        }
        return Ok(());
    }
    if r.versions.is_empty() {
        println!("no versions of {}", scope(memdir, path));
    }
    for v in r.versions {
        if json {
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
    Ok(())
}

/// Restores a version at `path`; a version of another path only with `force` (a typo in
/// the path or the version number would otherwise copy the wrong memory somewhere).
fn restore(memdir: &Memdir, path: &str, version: u64, force: bool) -> anyhow::Result<()> {
    let names: Vec<&str> = memdir.stores().iter().map(|s| s.name.as_str()).collect();
    let target = crate::path::parse_path(path, &names)?.canonical();
    let found = memdir.history(&HistoryRequest {
        path: Some(&target),
        limit: 1,
        cursor: None,
        version: Some(version),
    })?;
    if let Some(v) = found.versions.first()
        && !v.redacted
        && v.path != target
        && !force
    {
        bail!(
            "version {version} is of {}, not {target}; to put its content at {target}, add --force",
            v.path
        );
    }
    let r = memdir.restore(&RestoreRequest {
        path,
        version,
        if_absent: false,
        expected_sha256: None,
        actor: "cli",
    })?;
    println!(
        "restored version {version} at {} (now version {})",
        r.path,
        r.version.map_or("unchanged".into(), |v| v.to_string())
    );
    Ok(())
}

fn search(memdir: &Memdir, query: &str, path: Option<&str>, limit: usize) -> anyhow::Result<()> {
    let r = memdir.search(
        &SearchRequest {
            query,
            path,
            limit,
            ..Default::default()
        },
        &|_, _| {},
    )?;
    if r.hits.is_empty() {
        let query = crate::text::head_chars(query, 200);
        match path {
            Some(path) => println!("no memory matches {query:?} in {}", scope(memdir, path)),
            None => println!("no memory matches {query:?}"),
        }
        return Ok(());
    }
    if r.relaxed {
        println!("(no memory has every word; showing partial matches)");
    }
    for h in r.hits {
        println!("{}  (score {:.2})\n{}\n", h.path, h.score, h.snippet);
    }
    Ok(())
}

fn check(memdir: &Memdir, json: bool) -> anyhow::Result<()> {
    let checks = memdir.check();
    for c in &checks {
        if json {
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
    Ok(())
}

/// `memdir cache prune`.
fn prune_caches(index_dir: Option<&Path>, env: &Env) -> anyhow::Result<()> {
    let base = match index_dir {
        Some(dir) => stores::expand_path(dir, env, "--index-dir")?,
        None => cache::user_cache_dir()
            .context("no user cache folder is known (HOME is not set): give --index-dir DIR")?,
    };
    let pruned = cache::prune(&base)
        .with_context(|| format!("cannot prune the search indexes in {}", base.display()))?;
    if pruned.is_empty() {
        println!(
            "no search index to prune in {} (every one belongs to a store that exists)",
            base.display()
        );
    }
    for p in &pruned {
        match &p.store {
            Some(store) => println!(
                "removed {} (its store {store} no longer exists)",
                p.folder.display()
            ),
            None => println!(
                "removed {} (made by an older memdir, it does not say its store)",
                p.folder.display()
            ),
        }
    }
    Ok(())
}
