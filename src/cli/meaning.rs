//! Whether a command searches by meaning, and with which model: `--semantic` or
//! `MEMDIR_SEMANTIC`, `--model FILE` or `MEMDIR_MODEL`, else where `memdir model install`
//! puts it. With meaning asked for, a missing or unusable model stops the command before
//! it serves or searches anything, saying what is wrong and the fix: never a silent
//! search by words alone.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;

use super::args::MeaningArgs;
use super::stores::{self, Env};
use crate::embed::Model;

/// What turns meaning on in `MEMDIR_SEMANTIC`, and what leaves it off.
const ON: &[&str] = &["1", "true", "yes", "on"];
const OFF: &[&str] = &["0", "false", "no", "off"];

impl MeaningArgs {
    /// Whether meaning is on: `--semantic`, or `MEMDIR_SEMANTIC` set to 1 (true, yes, on).
    fn on(&self, env: &Env) -> anyhow::Result<bool> {
        if self.semantic {
            return Ok(true);
        }
        let Some(raw) = &env.semantic else {
            return Ok(false);
        };
        let value = raw.to_string_lossy().trim().to_ascii_lowercase();
        if ON.contains(&value.as_str()) {
            Ok(true)
        } else if OFF.contains(&value.as_str()) {
            Ok(false)
        } else {
            bail!(
                "MEMDIR_SEMANTIC={:?}: give 1 to search by meaning, or 0 (or leave it unset) for words alone",
                crate::text::head_chars(&value, 40)
            )
        }
    }

    /// The model's file: `--model`, `MEMDIR_MODEL`, else the installed one's place.
    fn path(&self, env: &Env) -> anyhow::Result<PathBuf> {
        if let Some(p) = &self.model {
            return stores::expand_path(p, env, "--model");
        }
        if let Some(p) = &env.model {
            return stores::expand_path(&PathBuf::from(p), env, "MEMDIR_MODEL");
        }
        match crate::embed::default_model_path() {
            Some(p) => Ok(p),
            None => bail!(
                "search by meaning (--semantic) needs the embedding model, and this system has no data folder to look for it in: give --model FILE"
            ),
        }
    }

    /// The model, loaded and checked, when meaning is on; `None` when it is off. A
    /// missing or unusable file is an error saying what and the fix. Meaning needs the
    /// search index (`index_on`): vectors live in it.
    pub(crate) fn load(&self, env: &Env, index_on: bool) -> anyhow::Result<Option<Arc<Model>>> {
        if !self.on(env)? {
            if self.model.is_some() {
                bail!(
                    "--model names the weights of search by meaning, which is off: add --semantic (or set MEMDIR_SEMANTIC=1)"
                );
            }
            return Ok(None);
        }
        if !index_on {
            bail!(
                "search by meaning (--semantic) keeps its vectors in the search index: drop --no-index"
            );
        }
        let path = self.path(env)?;
        let started = std::time::Instant::now();
        let model = Model::load(&path).map_err(|e| {
            let e = e.to_string();
            // The engine's message names the file and what is wrong with it; the fix is
            // said once.
            let fix = if e.contains("memdir model install") {
                ""
            } else {
                "; run `memdir model install`, or give --model FILE (MEMDIR_MODEL)"
            };
            let file = path.display().to_string();
            let at = if e.contains(&file) {
                String::new()
            } else {
                format!(" {file}")
            };
            anyhow::anyhow!(
                "search by meaning (--semantic) cannot use the embedding model{at}: {e}{fix}"
            )
        })?;
        tracing::info!(
            model = model.id(),
            ms = started.elapsed().as_millis() as u64,
            "search by meaning on"
        );
        Ok(Some(Arc::new(model)))
    }
}
