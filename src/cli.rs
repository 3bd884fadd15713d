//! The command line: which stores to serve, the server's options, and subcommands for
//! people who inspect memory from a terminal. The only module that prints to stdout, and
//! only for subcommands (in serve mode stdout belongs to JSON-RPC).
//!
//! Layout: `args` is the grammar (clap), `stores` chooses the stores (flags, environment,
//! default) and expands paths, `open` opens them as each command needs them and words the
//! start-up line; this file runs the subcommands and renders their results.

mod args;
mod open;
mod stores;

use std::path::Path;

use anyhow::{Context, bail};

use crate::index::cache;
use crate::memory::{HistoryRequest, ListRequest, Memdir, RestoreRequest, SearchRequest, Settings};
use crate::path::Target;
use open::Access;
use stores::Env;

pub use args::{
    CacheCommand, Cli, Command, HistoryArgs, IndexArgs, Lines, ServeArgs, StoreArgs, Tools,
    WriteArgs,
};
pub use open::open_server;
pub use stores::STORES_SEPARATOR;

/// Runs a subcommand for a person at a terminal.
pub fn run_command(mut command: Command) -> anyhow::Result<()> {
    let env = Env::of_process();
    let mut settings = Settings::default();
    let access = match &command {
        Command::Serve(_) => bail!("`serve` is not a command for a terminal: see open_server"),
        Command::Cache {
            command: CacheCommand::Prune { index_dir },
        } => return prune_caches(index_dir.as_deref(), &env),
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
    let memdir = open::open(&chosen, access, settings)?;
    match &command {
        // Returned above.
        Command::Serve(_) | Command::Cache { .. } => {}
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
