//! The command line: which stores to serve, the server's options, and subcommands for
//! people who inspect memory from a terminal. The only module that prints to stdout, and
//! only for subcommands (in serve mode stdout belongs to JSON-RPC).
//!
//! Layout: `args` is the grammar (clap), `stores` chooses the stores (flags, environment,
//! default) and expands paths, `open` opens them as each command needs them and words the
//! start-up line; this file runs the subcommands and renders their results.

// The one module that prints results to stdout (clippy.toml).
#![allow(clippy::print_stdout)]

/// `println!` for the subcommands: [`print_line`].
macro_rules! println {
    () => {
        $crate::cli::print_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::print_line(format_args!($($arg)*))
    };
}

/// One line on stdout for a subcommand. When the reader has gone (`memdir list | head
/// -1`), stops quietly with the status a shell gives a process ended by SIGPIPE, rather
/// than panic as `println!` does (std ignores SIGPIPE, so the write fails instead).
#[allow(clippy::disallowed_methods, reason = "the subcommands' output")]
pub(crate) fn print_line(line: std::fmt::Arguments) {
    use std::io::Write as _;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        panic!("failed printing to stdout: {e}");
    }
}

mod args;
mod console;
mod meaning;
mod model;
mod open;
mod stores;

use std::path::Path;

use anyhow::{Context, bail};

use crate::memory::{
    self, HistoryRequest, ListOrder, ListRequest, Memdir, RestoreRequest, SearchRequest, Settings,
};
use crate::path::Target;
use crate::render;
use crate::store::cache;
use open::Access;
use stores::Env;

pub use args::{
    CacheCommand, Cli, Command, ConsoleArgs, HistoryArgs, IndexArgs, Lines, MeaningArgs, ModelArgs,
    ModelCommand, ServeArgs, StoreArgs, Tools, WriteArgs,
};
pub use open::open_server;
pub use stores::STORES_SEPARATOR;

/// Runs a subcommand for a person at a terminal.
pub fn run_command(mut command: Command) -> anyhow::Result<()> {
    if let Command::Console(args) = &command {
        return console::run(args);
    }
    let env = Env::of_process();
    if let Command::Model { command } = &command {
        return model::run(command, &env);
    }
    if let Command::Cache {
        command: CacheCommand::Prune { index_dir },
    } = &command
    {
        return prune_caches(index_dir.as_deref(), &env);
    }
    let (access, settings) = needs(&command, &env)?;
    let stores = command.stores_mut().cloned().unwrap_or_default();
    let chosen = stores::choose(stores.root.as_deref(), &stores.stores, &env)?;
    if let Command::List { path, .. } = &command
        && let Some(dir) = open::missing_default(&chosen)
    {
        // Having no memories is not an error: nothing is listed (`--json`: no lines), and
        // nothing is created.
        let names: Vec<&str> = chosen.iter().map(|c| c.config.name.as_str()).collect();
        crate::path::parse(path, &names)?;
        eprintln!(
            "no memories yet: the default store {} does not exist yet (the server, or `memdir import`, makes it when it first uses it; or give --root DIR)",
            dir.display()
        );
        return Ok(());
    }
    let index_on = settings.index != memory::IndexLocation::Off;
    let model = match &command {
        Command::Search { meaning, .. } | Command::Reindex { meaning, .. } => {
            meaning.load(&env, index_on)?
        }
        _ => None,
    };
    let mut memdir = open::open(&chosen, access, settings)?;
    if let Some(model) = model {
        memdir = memdir.with_meaning(model);
    }
    run_on(&memdir, &command)
}

/// How a command opens its stores, and the settings its flags give.
fn needs(command: &Command, env: &Env) -> anyhow::Result<(Access, Settings)> {
    let mut settings = Settings::default();
    let access = match command {
        Command::Serve(_) => bail!("`serve` is not a command for a terminal: see open_server"),
        Command::Console(_) => bail!("`console` runs on its own: see cli::console"),
        Command::Cache { .. } => bail!("`cache` opens no store"),
        Command::Model { .. } => bail!("`model` opens no store"),
        Command::List { .. }
        | Command::Read { .. }
        | Command::History { .. }
        | Command::Review { .. }
        | Command::Export { .. } => Access::Read,
        Command::Search { index, .. } | Command::Check { index, .. } => {
            index.apply(&mut settings, env)?;
            Access::Read
        }
        // It writes only the index, a cache outside the stores.
        Command::Reindex { index, .. } => {
            index.apply(&mut settings, env)?;
            Access::Read
        }
        Command::Restore { limits, .. } => {
            limits.apply(&mut settings);
            Access::Change
        }
        Command::Redact { .. } | Command::Prune { .. } | Command::Index { .. } => Access::Change,
        Command::Import { limits, .. } => {
            limits.apply(&mut settings);
            Access::Create
        }
    };
    Ok((access, settings))
}

/// Runs a command on the stores it opened.
fn run_on(memdir: &Memdir, command: &Command) -> anyhow::Result<()> {
    match command {
        // Run without stores, in `run_command`.
        Command::Serve(_) | Command::Console(_) | Command::Cache { .. } | Command::Model { .. } => {
            Ok(())
        }
        Command::List {
            path, depth, json, ..
        } => list(memdir, path, *depth, *json),
        Command::History {
            path,
            limit,
            version,
            json,
            ..
        } => history(memdir, path, *limit, *version, *json),
        Command::Restore {
            path,
            version,
            force,
            json,
            ..
        } => restore(memdir, path, *version, *force, *json),
        Command::Redact {
            version,
            store,
            json,
            ..
        } => redact(memdir, store.as_deref(), *version, *json),
        Command::Read {
            path, lines, json, ..
        } => read(memdir, path, lines.map(|l| (l.start, l.end)), *json),
        Command::Search {
            query,
            path,
            limit,
            min_importance,
            json,
            ..
        } => search(
            memdir,
            query,
            path.as_deref(),
            *limit,
            *min_importance,
            *json,
        ),
        Command::Export { store, .. } => export(memdir, store.as_deref()),
        Command::Import { store, json, .. } => import(memdir, store.as_deref(), *json),
        Command::Check { json, .. } => check(memdir, *json),
        Command::Prune {
            dry_run,
            store,
            json,
            ..
        } => prune(memdir, store.as_deref(), *dry_run, *json),
        Command::Review {
            older_than,
            path,
            json,
            ..
        } => review(memdir, path, *older_than, *json),
        Command::Index { store, json, .. } => index(memdir, store.as_deref(), *json),
        Command::Reindex { json, .. } => reindex(memdir, *json),
    }
}

/// `memdir read`.
fn read(memdir: &Memdir, path: &str, range: Option<(i64, i64)>, json: bool) -> anyhow::Result<()> {
    let r = memory::read::read(memdir, path, range, &render::read_notes_len)?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "path": r.path, "content": r.content, "content_sha256": r.content_sha256,
                "size_bytes": r.size_bytes, "total_lines": r.total_lines,
                "start_line": r.start_line, "end_line": r.end_line,
                "updated_at": r.updated_at, "age_days": r.age_days,
                "expires_at": r.expires_at, "expired": r.expired,
            })
        );
    } else if r.size_bytes == 0 {
        print!("{}", render::read(&r, range));
        println!("{} is empty", r.path);
    } else {
        println!("{}", render::read(&r, range));
    }
    Ok(())
}

/// `memdir redact`.
fn redact(memdir: &Memdir, store: Option<&str>, version: u64, json: bool) -> anyhow::Result<()> {
    let r = memory::record::redact(memdir, store, version)?;
    if json {
        println!(
            "{}",
            serde_json::json!({"redacted": r.version, "at": r.at, "actor": r.actor})
        );
    } else {
        println!("redacted version {} ({} by {})", r.version, r.at, r.actor);
    }
    Ok(())
}

/// `memdir export`: the archive to stdout, the summary to stderr.
#[allow(clippy::disallowed_methods, reason = "an export is written to stdout")]
fn export(memdir: &Memdir, store: Option<&str>) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let summary = memory::archive::export(memdir, store, &mut out)?;
    eprintln!(
        "exported {} memories and {} versions",
        summary.files, summary.versions
    );
    for skipped in &summary.skipped {
        eprintln!("left out {skipped}");
    }
    Ok(())
}

/// `memdir import`: the archive from stdin.
fn import(memdir: &Memdir, store: Option<&str>, json: bool) -> anyhow::Result<()> {
    let summary = memory::archive::import(memdir, store, &mut std::io::stdin().lock())?;
    if json {
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
    Ok(())
}

/// What a path names, for saying there is nothing there: `/memories/notes`, or every
/// store (`/memories, /docs`) but those that could not be read (`missing`).
fn scope(memdir: &Memdir, raw: &str, missing: &std::collections::HashSet<String>) -> String {
    let names: Vec<&str> = memdir.stores().iter().map(|s| s.name.as_str()).collect();
    match crate::path::parse(raw, &names) {
        Ok(Target::Path(p)) => p.canonical(),
        Ok(Target::AllStores) => names
            .iter()
            .map(|n| format!("/{n}"))
            .filter(|n| !missing.contains(n))
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => raw.to_owned(),
    }
}

/// What a count over every store leaves out: ` (not counting /team, which could not be
/// read)`, or nothing.
fn not_counting(missing: &std::collections::HashSet<String>) -> String {
    if missing.is_empty() {
        return String::new();
    }
    let mut stores: Vec<&str> = missing.iter().map(String::as_str).collect();
    stores.sort_unstable();
    format!(
        " (not counting {}, which could not be read)",
        stores.join(", ")
    )
}

/// Says on stderr which stores an answer over every store went on without, each once
/// (`warned` holds those already named by earlier pages).
fn warn_unavailable(
    stores: &[crate::error::Unavailable],
    warned: &mut std::collections::HashSet<String>,
) {
    for u in stores.iter().filter(|u| warned.insert(u.store.clone())) {
        eprintln!(
            "memdir: store `{}` could not be read, so its memories are missing here: {}",
            u.store, u.reason
        );
    }
}

fn list(memdir: &Memdir, path: &str, depth: Option<usize>, json: bool) -> anyhow::Result<()> {
    let mut cursor: Option<String> = None;
    let mut shown = 0;
    let mut warned = std::collections::HashSet::new();
    loop {
        let page = ListRequest {
            path: Some(path),
            depth,
            limit: 1000,
            cursor: cursor.as_deref(),
            ..Default::default()
        }
        .run(memdir)?;
        warn_unavailable(&page.unavailable, &mut warned);
        for e in &page.entries {
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "path": e.path, "kind": if e.is_dir { "dir" } else { "file" },
                        "size_bytes": e.size_bytes, "content_sha256": e.content_sha256,
                        "updated_at": e.updated_at, "name": e.name,
                        "description": e.description, "type": e.kind,
                        "file_count": e.file_count, "expires_at": e.expires_at,
                        "expired": e.expired, "importance": e.importance,
                    })
                );
                continue;
            }
            let name = e.name.as_deref().map(|n| format!("  {n}"));
            println!(
                "{:>10}  {}  {}{}{}{}",
                e.size_bytes,
                e.updated_at,
                e.path,
                e.importance
                    .map(|i| format!("  [importance {i}]"))
                    .unwrap_or_default(),
                if e.expired { "  [expired]" } else { "" },
                name.unwrap_or_default()
            );
        }
        shown += page.entries.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if shown == 0 && !json {
        println!("no memories in {}", scope(memdir, path, &warned));
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
    let r = HistoryRequest {
        path: Some(path),
        limit,
        cursor: None,
        version,
        ..Default::default()
    }
    .run(memdir)?;
    if version.is_some() {
        match r.content {
            Some(content) => print!("{content}"),
            None => println!("version {} has no content (redacted)", version.unwrap_or(0)),
        }
        return Ok(());
    }
    if r.versions.is_empty() && !json {
        println!(
            "no versions of {}",
            scope(memdir, path, &Default::default())
        );
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
                    "reason": v.reason,
                })
            );
        } else {
            let what = match (&v.from, v.redacted) {
                (_, true) => "[redacted]".to_owned(),
                (Some(from), false) => format!("{} from {from}", v.path),
                (None, false) => v.path,
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
    Ok(())
}

/// Restores a version at `path`; a version of another path only with `force` (a typo in
/// the path or the version number would otherwise copy the wrong memory somewhere).
fn restore(
    memdir: &Memdir,
    path: &str,
    version: u64,
    force: bool,
    json: bool,
) -> anyhow::Result<()> {
    let names: Vec<&str> = memdir.stores().iter().map(|s| s.name.as_str()).collect();
    let parsed = crate::path::parse_path(path, &names)?;
    let target = parsed.canonical();
    // A version is asked of its store: the target may be another path than its own.
    let store_root = format!("/{}/", names[parsed.store]);
    let found = HistoryRequest {
        path: Some(&store_root),
        limit: 1,
        cursor: None,
        version: Some(version),
        ..Default::default()
    }
    .run(memdir)?;
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
    let r = RestoreRequest {
        path,
        version,
        if_absent: false,
        expected_sha256: None,
        actor: "cli",
    }
    .run(memdir)?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "path": r.path, "restored": version, "version": r.version,
                "unchanged": r.unchanged, "content_sha256": r.content_sha256,
            })
        );
    } else {
        match r.version {
            Some(now) => println!(
                "restored version {version} at {} (now version {now})",
                r.path
            ),
            None => println!(
                "{} already holds version {version}'s content: nothing changed",
                r.path
            ),
        }
    }
    Ok(())
}

fn search(
    memdir: &Memdir,
    query: &str,
    path: Option<&str>,
    limit: usize,
    min_importance: Option<i64>,
    json: bool,
) -> anyhow::Result<()> {
    let r = SearchRequest {
        query,
        path,
        limit,
        min_importance,
        ..Default::default()
    }
    .run(memdir, &|_, _| {})?;
    let mut missing = std::collections::HashSet::new();
    warn_unavailable(&r.unavailable, &mut missing);
    // Said first, and also before "no memory matches": an empty answer from a store whose
    // vectors were never computed is not a search by meaning.
    if let Some(c) = r.coverage
        && c.pending() > 0
        && !json
    {
        println!(
            "(meaning covers {} of {} memories: run `memdir reindex --semantic` to embed the rest)",
            c.covered, c.total
        );
    }
    if r.hits.is_empty() && !json {
        let query = crate::text::head_chars(query, 200);
        match path {
            Some(path) => println!(
                "no memory matches {query:?} in {}",
                scope(memdir, path, &missing)
            ),
            None => println!("no memory matches {query:?}{}", not_counting(&missing)),
        }
        return Ok(());
    }
    if r.relaxed && !json {
        println!("(few memories have every word; partial matches follow them)");
    }
    for h in r.hits {
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "path": h.path, "score": h.score, "line": h.line,
                    "snippet": h.snippet, "name": h.name,
                    "description": h.description, "updated_at": h.updated_at,
                    "expired": h.expired, "relaxed": r.relaxed,
                    "importance": h.importance,
                    "matched": h.matched.iter().map(|m| m.name()).collect::<Vec<_>>(),
                })
            );
            continue;
        }
        let name = h.name.as_deref().map(|n| format!("  {n}"));
        let importance = h.importance.map(|i| format!(", importance {i}"));
        println!(
            "{}  (score {:.2}{}){}\n{}\n",
            h.path,
            h.score,
            importance.unwrap_or_default(),
            name.unwrap_or_default(),
            h.snippet
        );
    }
    Ok(())
}

/// `memdir reindex`: every index brought up to date, then (with meaning on) every
/// vector computed, with progress on stderr; a summary on stdout.
fn reindex(memdir: &Memdir, json: bool) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let indexing = Bar::new("indexing files");
    let counts = memory::sync::reindex(memdir, &|done, total| indexing.show(done, total))?;
    indexing.finish();
    let embedding = Bar::new("embedding memories");
    let vectors = memdir.backfill(&|done, total| embedding.show(done, total))?;
    embedding.finish();
    let pruned = memdir.prune_vectors();
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let stores: Vec<_> = memdir
            .stores()
            .iter()
            .zip(&counts)
            .map(|(s, n)| serde_json::json!({"store": s.name, "memories": n}))
            .collect();
        let mut out = serde_json::json!({"stores": stores, "seconds": seconds});
        if memdir.meaning_on() {
            out["vectors"] = serde_json::json!({
                "embedded": vectors.embedded, "from_database": vectors.shared,
                "skipped": vectors.skipped, "pruned": pruned,
            });
        }
        println!("{out}");
        return Ok(());
    }
    for (store, n) in memdir.stores().iter().zip(&counts) {
        match n {
            Some(n) => println!("/{}: {n} memories indexed", store.name),
            None => println!("/{}: no index (searches scan the files)", store.name),
        }
    }
    if memdir.meaning_on() {
        println!(
            "vectors: {} embedded, {} from the database, {} skipped (changed while read), {pruned} of gone contents forgotten",
            vectors.embedded, vectors.shared, vectors.skipped
        );
    }
    println!("done in {seconds:.1} s");
    Ok(())
}

/// Progress on stderr: a bar redrawn in place on a terminal; otherwise a plain line
/// every few seconds and at the end, for logs.
struct Bar {
    what: &'static str,
    tty: bool,
    /// When it was last shown, and what it showed; the newest report.
    state: std::sync::Mutex<BarState>,
}

#[derive(Default, Clone, Copy)]
struct BarState {
    shown_at: Option<std::time::Instant>,
    shown: (u64, u64),
    latest: Option<(u64, u64)>,
}

impl Bar {
    fn new(what: &'static str) -> Bar {
        use std::io::IsTerminal;
        Bar {
            what,
            tty: std::io::stderr().is_terminal(),
            state: std::sync::Mutex::default(),
        }
    }

    fn show(&self, done: u64, total: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.latest = Some((done, total));
        let every = std::time::Duration::from_millis(if self.tty { 100 } else { 5000 });
        if state.shown_at.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        state.shown_at = Some(std::time::Instant::now());
        state.shown = (done, total);
        self.draw(done, total);
    }

    fn draw(&self, done: u64, total: u64) {
        if self.tty {
            const WIDTH: u64 = 30;
            let filled = (done * WIDTH)
                .checked_div(total)
                .unwrap_or(WIDTH)
                .min(WIDTH) as usize;
            eprint!(
                "\r{}: [{}{}] {done}/{total}",
                self.what,
                "#".repeat(filled),
                ".".repeat(WIDTH as usize - filled)
            );
        } else {
            eprintln!("{}: {done}/{total}", self.what);
        }
    }

    /// Shows the last report if it was not shown, and ends the bar's line.
    fn finish(&self) {
        let state = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(latest) = state.latest else { return };
        let drawn = state.shown_at.is_some() && state.shown == latest;
        if !drawn {
            self.draw(latest.0, latest.1);
        }
        if self.tty {
            eprintln!();
        }
    }
}

fn check(memdir: &Memdir, json: bool) -> anyhow::Result<()> {
    let checks = memory::check::check(memdir);
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

/// `memdir prune --expired`.
fn prune(memdir: &Memdir, store: Option<&str>, dry_run: bool, json: bool) -> anyhow::Result<()> {
    let pruned = memory::upkeep::prune_expired(memdir, store, dry_run, "cli")?;
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

/// `memdir review`: the stale memories, the least important first (those most likely
/// to be let go), each importance oldest first.
fn review(memdir: &Memdir, path: &str, days: u64, json: bool) -> anyhow::Result<()> {
    let mut cursor: Option<String> = None;
    let mut stale = Vec::new();
    let mut warned = std::collections::HashSet::new();
    loop {
        let page = ListRequest {
            path: Some(path),
            limit: 1000,
            cursor: cursor.as_deref(),
            older_than_days: Some(days),
            order: ListOrder::Oldest,
            ..Default::default()
        }
        .run(memdir)?;
        warn_unavailable(&page.unavailable, &mut warned);
        stale.extend(page.entries);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    // A stable sort: within one importance, the oldest first as listed.
    stale.sort_by_key(|e| {
        e.importance
            .unwrap_or(crate::frontmatter::NEUTRAL_IMPORTANCE)
    });
    let count = stale.len();
    for e in &stale {
        let age = crate::text::parse_instant(&e.updated_at)
            .map_or(0, |t| (crate::text::now_secs() - t).max(0) / 86_400);
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "path": e.path, "name": e.name, "description": e.description,
                    "updated_at": e.updated_at, "age_days": age,
                    "expired": e.expired, "expires_at": e.expires_at,
                    "importance": e.importance,
                })
            );
        } else {
            let about = [e.name.as_deref(), e.description.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": ");
            println!(
                "{age:>5} days  {}{}{}{}",
                e.path,
                e.importance
                    .map(|i| format!("  [importance {i}]"))
                    .unwrap_or_default(),
                if e.expired { "  [expired]" } else { "" },
                if about.is_empty() {
                    String::new()
                } else {
                    format!("  {about}")
                }
            );
        }
    }
    if !json {
        println!(
            "{count} memor{} not updated for {days} days or more{}: keep, update or delete each",
            plural_y(count),
            not_counting(&warned)
        );
    }
    Ok(())
}

/// `memdir index`.
fn index(memdir: &Memdir, store: Option<&str>, json: bool) -> anyhow::Result<()> {
    let (written, index) = memory::upkeep::write_index(memdir, store, "cli")?;
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
