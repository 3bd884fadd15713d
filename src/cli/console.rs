//! `memdir console`: opens the stores as the server does, serves the console on its own
//! listener, and prints its one-time sign-in link on stdout (the one line it prints).

// The sign-in link is the command's output (clippy.toml: stdout only in the CLI).
#![allow(clippy::print_stdout)]

use std::time::Duration;

use super::args::ConsoleArgs;
use super::open::open_server;
use crate::console::{ConsoleOptions, serve};

/// Runs `memdir console` until SIGINT or SIGTERM.
pub(crate) fn run(args: &ConsoleArgs) -> anyhow::Result<()> {
    let serve_args = args.serve_args();
    let (memdir, _) = open_server(&serve_args)?;
    let options = ConsoleOptions {
        addr: args.listen,
        actor: local_user(),
        allow_hosts: serve_args.allow_hosts.clone(),
        max_body: serve_args.max_body(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = runtime.block_on(serve(memdir, options, |url| println!("{url}")));
    runtime.shutdown_timeout(Duration::from_secs(10));
    served.map_err(|e| anyhow::anyhow!("cannot serve the console on {}: {e}", args.listen))
}

/// The local user's name, the actor of the console's changes (`console` when the
/// environment does not say). Kept to the characters a token's name may have.
#[allow(
    clippy::disallowed_methods,
    reason = "the console's actor is the user who started it, read once at start-up"
)]
fn local_user() -> String {
    let name = ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.is_empty()))
        .unwrap_or_default();
    let name: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._@-+".contains(*c))
        .take(64)
        .collect();
    if name.is_empty() {
        "console".into()
    } else {
        name
    }
}
