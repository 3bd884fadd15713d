//! Times the embedding engine: load time, a ~15-word query's latency (p50, p95), passages
//! of about 40 tokens per second, and the resident memory after load and after the runs.
//! CPU time per text is given beside wall time: on a shared machine it is the steadier
//! figure. Each figure is measured for the kernel the CPU gets and, as the baseline in the same
//! run, for the portable scalar kernel.
//!
//! ```text
//! cargo run --release --example embed_bench -- --model FILE [--queries 200] [--passages 256] [--threads N]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memdir::embed::{Kernel, Model};

const QUERIES: &[&str] = &[
    "how should the deploy script get the staging database URL before running migrations",
    "какие настройки резервного копирования базы данных мы выбрали в прошлом месяце",
    "用户上次提到的关于预算审批流程和截止日期的具体要求是什么",
    "the user prefers short answers with code examples in Rust and tabs over spaces",
    "東京オフィスの会議室予約ルールと来客の受付手順について教えてください",
];

const PASSAGE: &str = "The incident began when the cache layer returned stale entries after a partial deploy; the on-call engineer rolled back while the team looked into dropped invalidation messages.";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let Some(path) = value("--model").map(PathBuf::from) else {
        eprintln!("usage: embed_bench --model FILE [--queries N] [--passages N] [--threads N]");
        std::process::exit(2);
    };
    let queries: usize = value("--queries").map_or(200, |v| v.parse().unwrap());
    let passages: usize = value("--passages").map_or(256, |v| v.parse().unwrap());
    let threads: Option<usize> = value("--threads").map(|v| v.parse().unwrap());

    let rss_before = rss_kib();
    let started = Instant::now();
    let mut model = Model::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let load = started.elapsed();
    if let Some(n) = threads {
        model.set_threads(n);
    }
    println!(
        "load {:.1} ms, RSS {} MiB before, {} MiB after load; id {}",
        ms(load),
        rss_before / 1024,
        rss_kib() / 1024,
        model.id()
    );
    println!(
        "query: {} tokens; passage: {} tokens; {} threads",
        model.tokens("query: ", QUERIES[0]).len(),
        model.tokens("passage: ", PASSAGE).len(),
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    );
    let best = model.kernel();
    let mut kernels = vec![best];
    if best != Kernel::Scalar {
        kernels.push(Kernel::Scalar);
    }
    for kernel in kernels {
        model.set_kernel(kernel);
        // Warm-up: the first run touches the mapped weights.
        model.embed_query(QUERIES[0]);
        let cpu_before = cpu_ms();
        let mut times: Vec<Duration> = (0..queries)
            .map(|i| {
                let t = Instant::now();
                std::hint::black_box(model.embed_query(QUERIES[i % QUERIES.len()]));
                t.elapsed()
            })
            .collect();
        let cpu_per_query = (cpu_ms() - cpu_before) / queries as f64;
        times.sort();
        let p = |q: f64| ms(times[((times.len() - 1) as f64 * q) as usize]);
        let batch: Vec<&str> = (0..passages).map(|_| PASSAGE).collect();
        let t = Instant::now();
        let cpu_before = cpu_ms();
        std::hint::black_box(model.embed_passages(&batch));
        let per_second = passages as f64 / t.elapsed().as_secs_f64();
        let cpu_per_passage = (cpu_ms() - cpu_before) / passages as f64;
        println!(
            "{kernel:?}: query p50 {:.1} ms, p95 {:.1} ms, {cpu_per_query:.1} ms CPU each ({queries} queries); passages {per_second:.1}/s, {cpu_per_passage:.1} ms CPU each ({passages} in one call); RSS {} MiB",
            p(0.5),
            p(0.95),
            rss_kib() / 1024
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// CPU time used by this process so far, all threads, in ms: steadier than wall time
/// on a machine other work shares.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage writes the struct it is given; nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// The resident set size of this process in KiB (Linux; 0 elsewhere).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
