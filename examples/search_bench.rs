//! memdir's search benchmark: the FTS5 index against the scan engine and ripgrep, over a
//! generated multilingual corpus. A program, not a test.
//!
//! ```text
//! cargo run --release --example search_bench -- \
//!     [--files 1000,10000,100000] [--queries N] [--scan-queries N] [--keep DIR]
//! ```
//!
//! For each corpus size (default 1,000 and 10,000 files; 100,000 only when asked) it:
//!
//! 1. generates a deterministic corpus (seeded xorshift, no external crate): Markdown
//!    files in `area-XX/topic-YY/note-NNNNNN.md` (100 per folder), ~4 KB mean
//!    (200 B–20 KB), mostly English from a Zipf-distributed vocabulary, with Russian,
//!    Chinese, Japanese and Korean lines, YAML frontmatter on some files, and planted
//!    words whose presence is recorded per file (the "expected" counts);
//! 2. times the index build (`warm_indexes()` on an empty index), the start-up reconcile
//!    of the unchanged store (a new `Memdir`, p50 of 5), `WriteRequest::run` with the index on
//!    and off, the search after each write that must find it (the write leaves the index
//!    to the watcher, so this search re-indexes the file), the index upsert alone, and an
//!    external edit followed by the search that must see it;
//! 3. times every query kind through the index, through the scan engine
//!    (`IndexLocation::Off`) and, when `rg` is on PATH, through `rg -i -l -F`; checks that
//!    the index, the scan and the expected counts agree (a `MISMATCH` line otherwise), and
//!    splits the query time into `Index::query` (one FTS5 pass: match, BM25 score, count) and
//!    the rest (watcher drain plus reading the shown hits for their snippets);
//!
//! and ends with a PASS/MISS summary against the targets. Temp folders are removed unless
//! `--keep DIR` is given. Everything runs in this process, on a warm page cache (the
//! corpus was just written), so the numbers are CPU and SQLite, not disk reads.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use memdir::memory::{IndexLocation, Memdir, SearchRequest, SearchResult, Settings, WriteRequest};
use memdir::path::MemPath;
use memdir::search::filter::Filter;
use memdir::search::index::{Combine, Index, IndexedDoc, Stamp};
use memdir::search::{Query, shown_lines};
use memdir::store::StoreConfig;

#[allow(dead_code)]
#[path = "common/corpus.rs"]
mod corpus;
use corpus::{
    COMMON, LineCounts, Oracle, PER_FOLDER, QUERIES, QuerySpec, Rng, Vocab, body, generate,
};

/// Results per search, as an agent asks.
const LIMIT: usize = 10;
const WARMUP: usize = 10;
/// Start-up reconcile repetitions.
const RECONCILE_RUNS: usize = 5;
/// The scan engine is slow: after this long on one query kind, no further runs start.
const SCAN_BUDGET: Duration = Duration::from_secs(5);

/// Targets the summary checks.
const TARGET_10K_QUERY_P50_MS: f64 = 3.0;
const TARGET_100K_QUERY_P50_MS: f64 = 40.0;
const TARGET_100K_COMMON_P50_MS: f64 = 150.0;
const TARGET_UPDATE_INDEX_MS: f64 = 2.0;
const TARGET_RECONCILE_10K_MS: f64 = 150.0;
const TARGET_SCAN_RATIO_10K: f64 = 20.0;

#[derive(Debug, Parser)]
#[command(about = "memdir search benchmark: index vs scan vs ripgrep")]
struct Args {
    /// Corpus sizes to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10000])]
    files: Vec<usize>,
    /// Timed iterations per query kind through the index (after 10 warm-up runs).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Timed iterations per query kind through the scan engine (at most 2 above 20,000
    /// files, where one scan takes seconds).
    #[arg(long, default_value_t = 5)]
    scan_queries: usize,
    /// Timed `WriteRequest::run` calls, with the index on and again with it off.
    #[arg(long, default_value_t = 200)]
    writes: usize,
    /// Timed external edits (edit with std::fs, then the search that must see it).
    #[arg(long, default_value_t = 50)]
    edits: usize,
    /// Generate into DIR/search-bench-N and keep it (default: a temp folder, removed).
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Corpus seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.files.is_empty() || args.files.contains(&0) {
        bail!("--files needs sizes above zero");
    }
    let temp;
    let base = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("memdir-search-bench-")
                .tempdir()?;
            temp.path().to_owned()
        }
    };
    let rg = rg_available();
    println!("memdir search benchmark");
    println!(
        "sizes: {:?}; {} timed queries per kind (+{WARMUP} warm-up), {} scan runs per kind, limit {LIMIT}",
        args.files, args.queries, args.scan_queries
    );
    println!("work folder: {}", base.display());
    match &rg {
        Some(v) => println!("ripgrep: {v}"),
        None => println!("ripgrep: not on PATH; the rg column is skipped"),
    }
    let started = Instant::now();
    let mut reports = Vec::new();
    for &n in &args.files {
        reports.push(run_size(&args, n, &base, rg.is_some())?);
    }
    summary(&reports);
    println!(
        "\ntotal time: {:.1} s{}",
        started.elapsed().as_secs_f64(),
        match &args.keep {
            Some(d) => format!(" (corpus and indexes kept in {})", d.display()),
            None => " (temp folders removed)".to_owned(),
        }
    );
    Ok(())
}

/// A ~4 KB memory for the update test, carrying `marker`.
fn update_text(seed: u64, k: usize, marker: &str, v: &Vocab) -> String {
    let mut rng = Rng::new(seed ^ 0xDEAD_BEEF ^ ((k as u64) << 20));
    let mut counts = LineCounts::default();
    let mut text =
        format!("# Update {k}\n\nWritten by the benchmark: {marker} {k} ({marker}_{k}).\n");
    for l in body(&mut rng, v, 4096 - text.len(), &mut counts) {
        text.push_str(&l);
        text.push('\n');
    }
    text
}

// ---------------------------------------------------------------------------------------
// Measuring

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile, in milliseconds.
fn pct(samples: &[Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut s = samples.to_vec();
    s.sort();
    let rank = ((p / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    ms(s[rank.min(s.len()) - 1])
}

#[derive(Clone, Copy, Debug)]
struct Lat {
    p50: f64,
    p95: f64,
    n: usize,
}

impl Lat {
    fn of(samples: &[Duration]) -> Lat {
        Lat {
            p50: pct(samples, 50.0),
            p95: pct(samples, 95.0),
            n: samples.len(),
        }
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t = Instant::now();
    let v = f();
    (t.elapsed(), v)
}

/// `SearchRequest::run` for `query` over the whole store, with the benchmark's limit.
fn search_all(md: &Memdir, query: &str) -> memdir::error::Result<SearchResult> {
    SearchRequest {
        query,
        limit: LIMIT,
        ..SearchRequest::default()
    }
    .run(md, &|_, _| {})
}

fn request<'a>(spec: &'a QuerySpec, query: &'a str) -> SearchRequest<'a> {
    SearchRequest {
        query,
        path: spec.path.map(|(p, _)| p),
        limit: LIMIT,
        ..SearchRequest::default()
    }
}

/// Times `runs` searches (after `warmup`); the last result.
fn time_search(
    md: &Memdir,
    spec: &QuerySpec,
    warmup: usize,
    runs: usize,
) -> anyhow::Result<(Lat, SearchResult)> {
    let req = request(spec, spec.query);
    for _ in 0..warmup {
        req.run(md, &|_, _| {})?;
    }
    let mut samples = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        let (d, r) = timed(|| req.run(md, &|_, _| {}));
        samples.push(d);
        last = Some(r?);
    }
    Ok((Lat::of(&samples), last.expect("at least one run")))
}

fn rg_available() -> Option<String> {
    let which = Command::new("which").arg("rg").output().ok()?;
    if !which.status.success() {
        return None;
    }
    let out = Command::new("rg").arg("--version").output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout);
    Some(v.lines().next().unwrap_or("rg").to_owned())
}

/// `rg -i -l -F needle dir`: files listed, and the latency.
fn time_rg(needle: &str, dir: &Path, runs: usize) -> anyhow::Result<(Lat, usize)> {
    let run = || -> anyhow::Result<usize> {
        let out = Command::new("rg")
            .args(["-i", "-l", "-F", "--no-messages", needle])
            .arg(dir)
            .output()?;
        Ok(out.stdout.iter().filter(|&&b| b == b'\n').count())
    };
    run()?;
    let mut samples = Vec::new();
    let mut files = 0;
    for _ in 0..runs {
        let (d, r) = timed(run);
        samples.push(d);
        files = r?;
    }
    Ok((Lat::of(&samples), files))
}

struct QueryRow {
    spec: QuerySpec,
    memdir: Lat,
    memdir_hits: usize,
    shown: usize,
    relaxed: bool,
    scan: Option<Lat>,
    scan_hits: Option<usize>,
    rg: Option<(Lat, usize)>,
    expected: usize,
    fts_page: Lat,
    /// Paths of the shown hits (for timing their snippets).
    shown_paths: Vec<String>,
    /// p50 ms over the shown hits, summed: store read + sha256, shown_lines (the match
    /// check and the snippet lines, one pass), frontmatter parse.
    show_parts: [f64; 3],
}

struct SizeReport {
    n: usize,
    build: Duration,
    reconcile: Lat,
    /// A write with the index on, then the search that finds it: the time of that search
    /// (watcher drain, re-index of the file, query).
    write_seen: Lat,
    /// The index upsert alone (one transaction per file, as a write does it).
    upsert: Lat,
    ext_edit: Lat,
    rows: Vec<QueryRow>,
    mismatches: Vec<String>,
}

impl SizeReport {
    fn row(&self, kind_common: bool) -> impl Iterator<Item = &QueryRow> {
        self.rows
            .iter()
            .filter(move |r| r.spec.common == kind_common)
    }
}

fn settings(index: IndexLocation) -> Settings {
    Settings {
        allow_secrets: true,
        index,
        // Version history adds its own fsyncs to every write; off, the on/off difference
        // of a write is the index alone, with less noise.
        history: false,
        ..Settings::default()
    }
}

fn run_size(args: &Args, n: usize, base: &Path, rg: bool) -> anyhow::Result<SizeReport> {
    let root = base.join(format!("search-bench-{n}"));
    let marker = root.join(".search-bench");
    if root.exists() {
        if !marker.exists() {
            bail!(
                "{} exists and was not made by this benchmark; not touching it",
                root.display()
            );
        }
        std::fs::remove_dir_all(&root)?;
    }
    std::fs::create_dir_all(&root)?;
    std::fs::write(&marker, "made by examples/search_bench.rs\n")?;
    let store_dir = root.join("store");
    let index_dir = root.join("index");
    let vocab = Vocab::new();
    let mut mismatches = Vec::new();

    println!("\n==================== {n} files ====================");
    println!("load average: {}", loadavg());
    let (gen_time, corpus) = timed(|| generate(&store_dir, n, args.seed, &vocab));
    let corpus = corpus?;
    let lines_total: u64 = corpus.lines.0.iter().sum();
    let share = |i: usize| 100.0 * corpus.lines.0[i] as f64 / lines_total.max(1) as f64;
    println!(
        "corpus: {} files, {:.1} MB, mean {:.0} B (min {} B, max {} B), {} folders, {:.0}% with frontmatter; generated in {:.1} s",
        corpus.files,
        corpus.bytes as f64 / 1e6,
        corpus.bytes as f64 / corpus.files as f64,
        corpus.min,
        corpus.max,
        n.div_ceil(PER_FOLDER),
        100.0 * corpus.frontmatter as f64 / n as f64,
        ms(gen_time) / 1000.0,
    );
    println!(
        "lines: {lines_total} — English {:.1}%, Russian {:.1}%, Chinese {:.1}%, Japanese {:.1}%, Korean {:.1}%",
        share(0),
        share(1),
        share(2),
        share(3),
        share(4)
    );
    let common = QUERIES.iter().position(|q| q.common).unwrap_or(0);
    println!(
        "`{COMMON}` is in {:.1}% of files",
        100.0 * corpus.expected[common].all as f64 / n as f64
    );

    let config = StoreConfig {
        name: "memories".into(),
        location: memdir::store::Location::Folder(store_dir.clone()),
        read_only: false,
        description: None,
    };
    let on_settings = settings(IndexLocation::Dir(index_dir.clone()));

    // Index build: a fresh index folder, then warm_indexes() on the empty index.
    let md = Memdir::open(std::slice::from_ref(&config), on_settings.clone())?;
    let (build, ()) = timed(|| memdir::memory::sync::warm_indexes(&md));
    let db = md
        .index_path(0)
        .context("no index path with an index folder set")?;
    if !db.exists() {
        bail!(
            "the index was not created at {}: searches would scan",
            db.display()
        );
    }
    drop(md);
    let db_bytes: u64 = std::fs::read_dir(db.parent().unwrap_or(&index_dir))?
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "index build: {:.2} s ({:.0} files/s, {:.1} MB/s of text); index files {:.1} MB",
        build.as_secs_f64(),
        n as f64 / build.as_secs_f64(),
        corpus.bytes as f64 / 1e6 / build.as_secs_f64(),
        db_bytes as f64 / 1e6
    );

    // Start-up reconcile of the unchanged store: a new Memdir each time.
    let mut samples = Vec::new();
    let mut on = None;
    for _ in 0..RECONCILE_RUNS {
        let md = Memdir::open(std::slice::from_ref(&config), on_settings.clone())?;
        let (d, ()) = timed(|| memdir::memory::sync::warm_indexes(&md));
        samples.push(d);
        on = Some(md);
    }
    let on = on.expect("reconciled at least once");
    let reconcile = Lat::of(&samples);
    let pieces = reconcile_pieces(&on, &db)?;
    println!(
        "start-up reconcile (unchanged store, new Memdir + warm_indexes): p50 {:.1} ms, max {:.1} ms over {}",
        reconcile.p50,
        pct(&samples, 100.0),
        reconcile.n
    );
    println!("  its parts, timed separately: {pieces}");

    // Queries through the index.
    println!(
        "\nquerying through the index ({} runs per kind after {WARMUP} warm-up) ...",
        args.queries
    );
    let mut rows = Vec::new();
    for spec in QUERIES {
        let (lat, res) = time_search(&on, spec, WARMUP, args.queries)?;
        let e = corpus.expected[rows.len()];
        rows.push(QueryRow {
            spec: *spec,
            memdir: lat,
            memdir_hits: res.total_hits,
            shown: res.hits.len(),
            relaxed: res.relaxed,
            scan: None,
            scan_hits: None,
            rg: None,
            expected: if res.relaxed { e.any } else { e.all },
            fts_page: lat,
            shown_paths: res.hits.iter().map(|h| h.path.clone()).collect(),
            show_parts: [f64::NAN; 3],
        });
    }

    // The FTS5 part alone, through a second connection to the same database.
    let index = Index::open(&db)?;
    let fts_runs = args.queries.clamp(1, 100);
    for row in &mut rows {
        let clauses = Query::parse(row.spec.query).clauses;
        let scope = Filter {
            prefix: row.spec.path.map(|(_, p)| p),
            ..Filter::default()
        };
        let combine = if row.relaxed {
            Combine::Any
        } else {
            Combine::All
        };
        let page = || index.query(&clauses, combine, &scope, 0, LIMIT);
        for _ in 0..5 {
            page()?;
        }
        let mut pages = Vec::new();
        for _ in 0..fts_runs {
            let (d, r) = timed(page);
            pages.push(d);
            let (total, _) = r?;
            if total != row.memdir_hits {
                mismatches.push(format!(
                    "{n} files, {}: Index::query count {total} != memdir total_hits {}",
                    row.spec.kind, row.memdir_hits
                ));
            }
        }
        row.fts_page = Lat::of(&pages);
        row.show_parts = show_parts(&on, row, fts_runs.min(50))?;
    }
    drop(index);

    // The scan engine on the same files.
    println!(
        "querying through the scan engine (up to {} runs per kind, none started after {} s) ...",
        args.scan_queries,
        SCAN_BUDGET.as_secs()
    );
    let off = Memdir::open(std::slice::from_ref(&config), settings(IndexLocation::Off))?;
    for row in &mut rows {
        let req = request(&row.spec, row.spec.query);
        let started = Instant::now();
        let mut samples = Vec::new();
        while samples.len() < args.scan_queries.max(1)
            && (samples.is_empty() || started.elapsed() < SCAN_BUDGET)
        {
            let (d, r) = timed(|| req.run(&off, &|_, _| {}));
            samples.push(d);
            row.scan_hits = Some(r?.total_hits);
        }
        row.scan = Some(Lat::of(&samples));
    }

    if rg {
        let rg_runs = if n > 20_000 { 3 } else { 10 };
        println!("querying through ripgrep ({rg_runs} runs per literal) ...");
        for row in &mut rows {
            if let (Some(needle), None) = (row.spec.rg, row.spec.path) {
                row.rg = Some(time_rg(needle, &store_dir, rg_runs)?);
            }
        }
    }

    // Correctness: index vs scan vs the plain reading of the files.
    for row in &rows {
        if Some(row.memdir_hits) != row.scan_hits {
            mismatches.push(format!(
                "{n} files, {} (`{}`): memdir total_hits {} != scan total_hits {}",
                row.spec.kind,
                row.spec.query,
                row.memdir_hits,
                row.scan_hits.unwrap_or(0)
            ));
        }
        if row.memdir_hits != row.expected {
            mismatches.push(format!(
                "{n} files, {} (`{}`): memdir total_hits {} != {} files by a plain {} of the text",
                row.spec.kind,
                row.spec.query,
                row.memdir_hits,
                row.expected,
                match row.spec.oracle {
                    Oracle::Substring(_) => "substring count",
                    _ => "whole-word reading",
                }
            ));
        }
    }

    print_tables(n, &rows);

    // Single-file updates: `WriteRequest::run` with the index on, and with it off.
    let picks = spread(n, 2 * args.writes + args.edits);
    let (on_files, rest) = picks.split_at(args.writes.min(picks.len()));
    let (off_files, edit_files) = rest.split_at(args.writes.min(rest.len()));
    let mut on_samples = Vec::new();
    let mut off_samples = Vec::new();
    let mut seen_samples = Vec::new();
    for k in 0..args.writes {
        for (md, files, samples, mark) in [
            (&on, on_files, &mut on_samples, "zzwriteon"),
            (&off, off_files, &mut off_samples, "zzwriteoff"),
        ] {
            let rel = &corpus.rels[files[k % files.len()]];
            let path = format!("/memories/{rel}");
            let content = update_text(args.seed, k, mark, &vocab);
            let (d, r) = timed(|| {
                WriteRequest {
                    path: &path,
                    content: &content,
                    if_absent: false,
                    expected_sha256: None,
                    actor: "search-bench",
                }
                .run(md)
            });
            r?;
            samples.push(d);
            if mark == "zzwriteon" {
                let token = format!("{mark}_{k}");
                let (d, r) = timed(|| search_all(md, &token));
                seen_samples.push(d);
                let hits = r?.total_hits;
                if hits != 1 {
                    mismatches.push(format!(
                        "{n} files: the search after write {k} found `{token}` in {hits} files (want 1)"
                    ));
                }
            }
        }
    }
    let write_seen = Lat::of(&seen_samples);
    let write_on = Lat::of(&on_samples);
    let write_off = Lat::of(&off_samples);
    println!(
        "\nsingle-file update, memdir.write of ~4 KB (fsync'd), {} each, interleaved:",
        args.writes
    );
    println!(
        "  index on  p50 {:.3} ms  p95 {:.3} ms",
        write_on.p50, write_on.p95
    );
    println!(
        "  index off p50 {:.3} ms  p95 {:.3} ms",
        write_off.p50, write_off.p95
    );
    println!("  (a write leaves the index to the watcher: the update happens in the next search)");
    println!(
        "  write → the next search, which finds it (watcher drain + re-index + query): p50 {:.3} ms  p95 {:.3} ms",
        write_seen.p50, write_seen.p95
    );
    // Read-your-writes, and the other engine's writes through the watcher.
    for (mark, files) in [("zzwriteon", on_files), ("zzwriteoff", off_files)] {
        let want = files.iter().take(args.writes).collect::<HashSet<_>>().len();
        let r = search_all(&on, mark)?;
        let ok = r.total_hits == want;
        println!(
            "  `{mark}` found in {} files after the writes (want {want}) {}",
            r.total_hits,
            if ok { "ok" } else { "MISMATCH" }
        );
        if !ok {
            mismatches.push(format!(
                "{n} files: `{mark}` after {} writes: total_hits {} != {want}",
                args.writes, r.total_hits
            ));
        }
    }

    // External edit → the next search sees it.
    let mut edit_samples = Vec::new();
    for k in 0..args.edits {
        let Some(&i) = edit_files.get(k % edit_files.len().max(1)) else {
            break;
        };
        let host = store_dir.join(&corpus.rels[i]);
        let mut text = std::fs::read_to_string(&host)?;
        let token = format!("zzext{k}");
        let _ = writeln!(text, "Edited outside memdir: {token} here.");
        std::fs::write(&host, &text)?;
        let (d, r) = timed(|| search_all(&on, &token));
        let r = r?;
        edit_samples.push(d);
        if r.total_hits != 1 || r.hits.len() != 1 {
            mismatches.push(format!(
                "{n} files: external edit {k} (`{token}`): total_hits {} (want 1)",
                r.total_hits
            ));
        }
    }
    let ext_edit = Lat::of(&edit_samples);
    println!(
        "external edit (std::fs::write in place) → next search (drain + reindex + query): p50 {:.3} ms  p95 {:.3} ms over {}",
        ext_edit.p50, ext_edit.p95, ext_edit.n
    );

    // After all the changes, the index and the scan must still agree.
    print!("after the updates, index vs scan:");
    for spec in QUERIES.iter().filter(|q| q.rg.is_some()).take(3) {
        let req = request(spec, spec.query);
        let a = req.run(&on, &|_, _| {})?.total_hits;
        let b = req.run(&off, &|_, _| {})?.total_hits;
        print!(" {} {a}/{b}", spec.query);
        if a != b {
            print!(" MISMATCH");
            mismatches.push(format!(
                "{n} files, after updates, `{}`: memdir {a} != scan {b}",
                spec.query
            ));
        }
    }
    println!();
    drop(on);
    drop(off);
    let upsert = time_upserts(&db, args.seed, args.writes, &vocab)?;
    println!(
        "index upsert alone (Index::write + Writer::upsert of a ~4 KB file, one transaction each, on the {n}-file index): p50 {:.3} ms  p95 {:.3} ms over {}",
        upsert.p50, upsert.p95, upsert.n
    );

    println!("load average: {}", loadavg());
    for m in &mismatches {
        println!("!!! MISMATCH: {m}");
    }
    if mismatches.is_empty() {
        println!("hit counts: index = scan = plain reading for every query kind");
    }
    if args.keep.is_none() {
        std::fs::remove_dir_all(&root)?;
    }
    Ok(SizeReport {
        n,
        build,
        reconcile,
        write_seen,
        upsert,
        ext_edit,
        rows,
        mismatches,
    })
}

/// The shown hits' snippet work, replayed outside `SearchRequest::run` the way it does it:
/// per run, the sum over the shown hits of each step; p50 over `runs`.
fn show_parts(md: &Memdir, row: &QueryRow, runs: usize) -> anyhow::Result<[f64; 3]> {
    let store = &md.stores()[0];
    let root = MemPath::root(0, &store.name);
    let query = Query::parse(row.spec.query);
    let prefix = format!("/{}/", store.name);
    let paths: Vec<MemPath> = row
        .shown_paths
        .iter()
        .filter_map(|p| p.strip_prefix(&prefix))
        .map(|rel| root.with_rel(rel))
        .collect();
    let mut parts: [Vec<Duration>; 3] = Default::default();
    for _ in 0..runs.max(1) {
        let mut sum = [Duration::ZERO; 3];
        for p in &paths {
            let (d, text) = timed(|| -> anyhow::Result<String> {
                let data = store.read(p)?;
                let _ = memdir::text::sha256_hex(&data.bytes);
                Ok(String::from_utf8(data.bytes)?)
            });
            sum[0] += d;
            let text = text?;
            let (d, shown) = timed(|| shown_lines(&query, &text, 3));
            sum[1] += d;
            if shown.is_none() {
                bail!(
                    "{}: a shown hit does not match `{}`",
                    p.canonical(),
                    row.spec.query
                );
            }
            let (d, _) = timed(|| memdir::frontmatter::parse(&text));
            sum[2] += d;
        }
        for (v, d) in parts.iter_mut().zip(sum) {
            v.push(d);
        }
    }
    Ok(parts.map(|v| pct(&v, 50.0)))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Times the index part of a write on its own: upserts of ~4 KB documents under a path
/// that is not in the store, one transaction each; then removes them again.
fn time_upserts(db: &Path, seed: u64, count: usize, v: &Vocab) -> anyhow::Result<Lat> {
    let index = Index::open(db)?;
    let mut samples = Vec::new();
    let mut rels = Vec::new();
    for k in 0..count.max(1) {
        let text = update_text(seed ^ 0x5EED, k, "zzupsert", v);
        let rel = format!("zz-search-bench/u-{k}.md");
        let fm = memdir::frontmatter::parse(&text);
        let doc = IndexedDoc {
            rel: &rel,
            stamp: Stamp {
                size: text.len() as u64,
                mtime_ns: k as i64,
                ino: k as u64,
            },
            text: &text,
            frontmatter: fm.as_ref(),
        };
        let (d, r) = timed(|| index.write(|w| w.upsert(&doc)));
        r?;
        samples.push(d);
        rels.push(rel);
    }
    index.write(|w| rels.iter().try_for_each(|rel| w.remove(rel)))?;
    Ok(Lat::of(&samples))
}

/// `count` distinct file numbers spread over 0..n (a prime stride).
fn spread(n: usize, count: usize) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut j = 0usize;
    while out.len() < count && j < count * 4 {
        let i = (j * 7919 + 13) % n;
        if seen.insert(i) || n < count {
            out.push(i);
        }
        j += 1;
    }
    out
}

/// The pieces of a start-up reconcile, each timed on its own (p50 of 5).
fn reconcile_pieces(md: &Memdir, db: &Path) -> anyhow::Result<String> {
    let store = &md.stores()[0];
    let root = MemPath::root(0, &store.name);
    let mut open = Vec::new();
    let mut stamps = Vec::new();
    let mut walk = Vec::new();
    let mut watch = Vec::new();
    let mut learn = Vec::new();
    let mut files = 0;
    for _ in 0..RECONCILE_RUNS {
        let (d, index) = timed(|| Index::open(db));
        open.push(d);
        let index = index?;
        let (d, s) = timed(|| index.stamps());
        stamps.push(d);
        files = s?.len();
        let (d, n) = timed(|| index.learn_lengths());
        learn.push(d);
        n?;
        let (d, w) = timed(|| store.walk(&root, None));
        walk.push(d);
        w?;
        let (d, ()) = timed(|| {
            drop(store.watcher(&root));
        });
        watch.push(d);
    }
    Ok(format!(
        "index open {:.1} ms + stat walk {:.1} ms + SELECT stamps ({files} rows) {:.1} ms + inotify watches {:.1} ms + document lengths for ranking {:.1} ms",
        pct(&open, 50.0),
        pct(&walk, 50.0),
        pct(&stamps, 50.0),
        pct(&watch, 50.0),
        pct(&learn, 50.0)
    ))
}

fn print_tables(n: usize, rows: &[QueryRow]) {
    println!(
        "\nquery latency at {n} files (ms; limit {LIMIT}; memdir over {} runs, scan over {}):",
        rows.first().map_or(0, |r| r.memdir.n),
        rows.iter()
            .map(|r| r.scan.map_or(0, |s| s.n).to_string())
            .collect::<Vec<_>>()
            .join("/")
    );
    println!(
        "{:<20} {:>8} {:>8} {:>9} {:>8} {:>9} {:>6} {:>7} {:>7} {:>8} {:>8}",
        "query kind",
        "memdir50",
        "memdir95",
        "scan50",
        "rg50",
        "scan/mem",
        "df%",
        "hits",
        "scan",
        "expected",
        "rg files"
    );
    for r in rows {
        let scan = r.scan.map_or(f64::NAN, |s| s.p50);
        println!(
            "{:<20} {:>8.3} {:>8.3} {:>9.1} {:>8} {:>8.0}x {:>6.1} {:>7} {:>7} {:>8} {:>8}{}{}",
            r.spec.kind,
            r.memdir.p50,
            r.memdir.p95,
            scan,
            r.rg.map_or("-".to_owned(), |(l, _)| format!("{:.1}", l.p50)),
            scan / r.memdir.p50,
            100.0 * r.memdir_hits as f64 / n as f64,
            r.memdir_hits,
            r.scan_hits.map_or("-".to_owned(), |h| h.to_string()),
            r.expected,
            r.rg.map_or("-".to_owned(), |(_, f)| f.to_string()),
            if r.relaxed { "  (relaxed)" } else { "" },
            if Some(r.memdir_hits) != r.scan_hits || r.memdir_hits != r.expected {
                "  MISMATCH"
            } else {
                ""
            },
        );
    }
    println!(
        "\nwhere the index time goes (p50 ms). search = SearchRequest::run; index = Index::query on \
         a second connection (offset 0, limit {LIMIT}): one FTS5 pass that matches, scores \
         (BM25, memdir_rank) and counts, then the page's paths; rest = search - index (watcher drain, \
         scope check, showing the hits). The last three columns replay the showing of the shown hits \
         outside memdir, summed over them: store read + sha256, shown_lines (the match \
         check and the snippet lines, one pass over the file), frontmatter parse."
    );
    println!(
        "{:<20} {:>8} {:>8} {:>8} {:>6} {:>8} {:>8} {:>8}",
        "query kind", "search", "index", "rest", "shown", "read", "lines", "yaml"
    );
    for r in rows {
        println!(
            "{:<20} {:>8.3} {:>8.3} {:>8.3} {:>6} {:>8.3} {:>8.3} {:>8.3}",
            r.spec.kind,
            r.memdir.p50,
            r.fts_page.p50,
            r.memdir.p50 - r.fts_page.p50,
            r.shown,
            r.show_parts[0],
            r.show_parts[1],
            r.show_parts[2],
        );
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

fn summary(reports: &[SizeReport]) {
    println!("\n==================== targets ====================");
    let at = |n: usize| reports.iter().find(|r| r.n == n);
    match at(10_000) {
        Some(r) => {
            for row in &r.rows {
                println!(
                    "{}  10k {:<20} p50 {:>7.3} ms ≤ {TARGET_10K_QUERY_P50_MS} ms",
                    verdict(row.memdir.p50 <= TARGET_10K_QUERY_P50_MS),
                    row.spec.kind,
                    row.memdir.p50
                );
            }
            println!(
                "{}  10k start-up reconcile of the unchanged store p50 {:.1} ms ≤ {TARGET_RECONCILE_10K_MS} ms",
                verdict(r.reconcile.p50 <= TARGET_RECONCILE_10K_MS),
                r.reconcile.p50
            );
            let worst = r
                .rows
                .iter()
                .filter_map(|row| row.scan.map(|s| (s.p50 / row.memdir.p50, row.spec.kind)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((ratio, kind)) = worst {
                println!(
                    "{}  10k scan/memdir p50 ratio ≥ {TARGET_SCAN_RATIO_10K}x for every kind (lowest {ratio:.0}x: {kind})",
                    verdict(ratio >= TARGET_SCAN_RATIO_10K)
                );
            }
        }
        None => println!("----  10k targets: 10,000 files not measured"),
    }
    match at(100_000) {
        Some(r) => {
            for row in &r.rows {
                let target = if row.spec.common {
                    TARGET_100K_COMMON_P50_MS
                } else {
                    TARGET_100K_QUERY_P50_MS
                };
                println!(
                    "{}  100k {:<20} p50 {:>7.3} ms ≤ {target} ms",
                    verdict(row.memdir.p50 <= target),
                    row.spec.kind,
                    row.memdir.p50
                );
            }
        }
        None => println!("----  100k targets: 100,000 files not measured (pass --files 100000)"),
    }
    for r in reports {
        let cost = r.write_seen.p50;
        println!(
            "{}  {} files: single-file update, write → the search that finds it p50 {cost:.3} ms ≤ {TARGET_UPDATE_INDEX_MS} ms (drain + re-index + query; upsert alone p50 {:.3} ms)",
            verdict(cost <= TARGET_UPDATE_INDEX_MS),
            r.n,
            r.upsert.p50
        );
    }
    println!("\ninformational:");
    for r in reports {
        let common: Vec<String> = r
            .row(true)
            .map(|row| format!("{:.3}", row.memdir.p50))
            .collect();
        let worst_other = r
            .row(false)
            .map(|row| row.memdir.p50)
            .fold(0.0f64, f64::max);
        println!(
            "  {} files: build {:.2} s, reconcile p50 {:.1} ms, external edit → search p50 {:.3} ms, common-word p50 {} ms, slowest other kind p50 {worst_other:.3} ms",
            r.n,
            r.build.as_secs_f64(),
            r.reconcile.p50,
            r.ext_edit.p50,
            common.join(",")
        );
    }
    let all: Vec<&String> = reports.iter().flat_map(|r| &r.mismatches).collect();
    if all.is_empty() {
        println!("\ncorrectness: no hit-count mismatch");
    } else {
        println!("\n!!! correctness: {} MISMATCH(es):", all.len());
        for m in all {
            println!("!!!   {m}");
        }
    }
}
