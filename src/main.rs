//! The `memdir` binary: logging to stderr, command line, dispatch, exit code.

use std::process::ExitCode;

use memdir::cli::{Cli, Command};
use tracing::{Level, Metadata};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::prelude::*;

fn main() -> ExitCode {
    ignore_sigxfsz();
    let cli = Cli::parse_args();
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("memdir={}", cli.log_level)));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // A log line that cannot be written (stderr closed, or full and non-blocking) is
        // dropped; reporting that on stderr again would panic the thread that logged.
        .log_internal_errors(false)
        .with_ansi(false)
        .with_filter(filter)
        .with_filter(filter_fn(content_free));
    tracing_subscriber::registry().with(stderr).init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // An error may quote a store URL given on the command line: never its password.
            eprintln!(
                "memdir: {}",
                memdir::secrets::redact_urls(&format!("{e:#}"))
            );
            ExitCode::FAILURE
        }
    }
}

/// Whether a log event may be written whatever `RUST_LOG` asks: memdir's own at any
/// level (they never carry contents, tokens or passwords); the libraries' (rmcp, hyper,
/// the PostgreSQL client) at `info` and above only, since below it they log whole
/// requests: tool arguments with a memory's content, headers, queries.
fn content_free(meta: &Metadata<'_>) -> bool {
    meta.target().starts_with("memdir") || *meta.level() <= Level::INFO
}

/// A file size limit (`RLIMIT_FSIZE`) must fail the write with `EFBIG`, which memdir
/// reports as a clear error and survives, rather than kill the server with `SIGXFSZ`.
/// Windows has neither the limit nor the signal.
fn ignore_sigxfsz() {
    // SAFETY: sets one signal's disposition to SIG_IGN at start-up, before any thread
    // exists; no handler code runs.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let args = match cli.command {
        None => cli.serve,
        Some(Command::Serve(args)) => args,
        Some(command) => return memdir::cli::run_command(command),
    };
    let (memdir, tools) = memdir::cli::open_server(&args)?;
    match args.http_options() {
        None => {
            // One thread runs the protocol (parsing, routing, encoding: microseconds per
            // message) and tools run on the blocking pool, so a request never waits for
            // a worker thread to be woken (see docs/decisions/write-latency.md, "The stdio transport").
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let served = runtime.block_on(memdir::mcp::serve_stdio(memdir, tools));
            // Every request has been answered; background upkeep (index warm-up) is a
            // cache and may stop anywhere, so exit now instead of waiting for it.
            runtime.shutdown_background();
            Ok(served?)
        }
        Some(http) => {
            // Many clients at once: the protocol work of their requests spreads over the
            // cores; tools still run on the blocking pool.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let served = runtime.block_on(memdir::mcp::serve_http(memdir, tools, http));
            // A call whose client went away still runs to its end on its blocking thread:
            // give those a moment, so none is cut off by the exit (each write is atomic
            // either way).
            runtime.shutdown_timeout(std::time::Duration::from_secs(10));
            Ok(served?)
        }
    }
}
