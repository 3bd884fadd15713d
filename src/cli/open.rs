//! Opening the stores as each command needs them (made, required, probed for writing),
//! and the server's start-up line.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::args::{ServeArgs, Tools};
use super::stores::{self, Chosen, Env, Source};
use crate::mcp::ToolSet;
use crate::memory::{Memdir, Settings};
use crate::store::folder::{self, Folder};

/// How a command uses its stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Only reads: every store must exist; nothing is created.
    Read,
    /// Changes a store that must exist (its versions are in it).
    Change,
    /// Serves or fills stores: missing writable ones are created.
    Create,
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
    let settings = args.settings(&env)?;
    let model = args
        .meaning
        .load(&env, settings.index != crate::memory::IndexLocation::Off)?;
    let mut memdir = open(&chosen, Access::Create, settings)?;
    if let Some(model) = model {
        memdir = memdir.with_meaning(model);
    }
    let tools = ToolSet::from(args.tools);
    tracing::info!("{}", StartUp(&memdir, &chosen, tools));
    Ok((memdir, tools))
}

/// The default store's folder when it is the one store chosen and does not exist yet (no
/// server has used it): a fresh machine, where a listing finds no memories rather than an
/// error.
pub(crate) fn missing_default(chosen: &[Chosen]) -> Option<&Path> {
    let [c] = chosen else { return None };
    let dir = c.config.location.folder()?;
    (c.source == Source::Default && matches!(folder::inspect(dir), Ok(Folder::Missing)))
        .then_some(dir)
}

/// Opens the chosen stores as `access` needs them: a store only read must exist; a
/// writable store must be writable by this user (checked now, not at the first write).
pub(crate) fn open(
    chosen: &[Chosen],
    access: Access,
    settings: Settings,
) -> anyhow::Result<Memdir> {
    for c in chosen {
        // A database store is checked by connecting to it (`Memdir::open`).
        let Some(dir) = c.config.location.folder() else {
            continue;
        };
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
            if let Some(e) = store.write_denied() {
                let dir = &c.config.location;
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
                store.name, c.config.location
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
            write!(f, "; search index: none (searches scan the files)")?;
        } else {
            let bases: Vec<_> = bases.iter().map(|b| b.display().to_string()).collect();
            write!(f, "; search index under {}", bases.join(", "))?;
        }
        if memdir.meaning_on() {
            write!(f, "; search by meaning on")?;
        }
        Ok(())
    }
}
