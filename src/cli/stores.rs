//! Which stores to serve: from the flags (`--root`, `--store`), else the environment
//! (`MEMDIR_ROOT`, `MEMDIR_STORES`), else the default store in the user's data folder;
//! with `~` and `$HOME` expanded, since clients start servers without a shell. Pure: the
//! environment comes in as data, and nothing here looks at the disk.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::store::{Location, StoreConfig};

/// The separator of `MEMDIR_STORES` entries: not `:`, which Windows drive letters and
/// the `:ro` suffix use, and the same on every platform so one client config works
/// everywhere.
pub const STORES_SEPARATOR: char = ';';

/// What the stores are chosen from, besides the flags.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// `MEMDIR_ROOT`.
    pub root: Option<OsString>,
    /// `MEMDIR_STORES`.
    pub stores: Option<OsString>,
    /// `MEMDIR_SEMANTIC`.
    pub semantic: Option<OsString>,
    /// `MEMDIR_MODEL`.
    pub model: Option<OsString>,
    /// The user's home folder (for `~` and `$HOME`).
    pub home: Option<PathBuf>,
    /// The user's data folder (`$XDG_DATA_HOME`, `~/.local/share`, `~/Library/Application
    /// Support`, `%APPDATA%`), where the default store lives.
    pub data_dir: Option<PathBuf>,
}

impl Env {
    /// The environment of this process.
    #[allow(
        clippy::disallowed_methods,
        reason = "the environment is read here, once"
    )]
    pub fn of_process() -> Env {
        let set = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        Env {
            root: set("MEMDIR_ROOT"),
            stores: set("MEMDIR_STORES"),
            semantic: set("MEMDIR_SEMANTIC"),
            model: set("MEMDIR_MODEL"),
            home: dirs::home_dir(),
            data_dir: dirs::data_dir(),
        }
    }
}

/// Where a store's folder was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Root,
    Store,
    EnvRoot,
    EnvStores,
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Root => "--root",
            Source::Store => "--store",
            Source::EnvRoot => "MEMDIR_ROOT",
            Source::EnvStores => "MEMDIR_STORES",
            Source::Default => "the default store",
        })
    }
}

/// A store to serve and where it was given.
#[derive(Clone, Debug)]
pub struct Chosen {
    pub config: StoreConfig,
    pub source: Source,
}

/// The stores to serve, in order: the flags if any is given (the environment is then not
/// read at all), else `MEMDIR_ROOT` and `MEMDIR_STORES`, else the default store.
pub fn choose(root: Option<&Path>, stores: &[String], env: &Env) -> anyhow::Result<Vec<Chosen>> {
    let mut chosen = Vec::new();
    if root.is_some() || !stores.is_empty() {
        if let Some(root) = root {
            chosen.push(memories(
                expand_path(root, env, Source::Root)?,
                Source::Root,
            ));
        }
        for spec in stores {
            chosen.push(store_spec(spec, env, Source::Store)?);
        }
    } else if env.root.is_some() || env.stores.is_some() {
        if let Some(root) = &env.root {
            chosen.push(memories(
                expand_path(Path::new(root), env, Source::EnvRoot)?,
                Source::EnvRoot,
            ));
        }
        if let Some(stores) = &env.stores {
            let Some(stores) = stores.to_str() else {
                bail!("MEMDIR_STORES is not valid UTF-8");
            };
            for spec in stores.split(STORES_SEPARATOR).map(str::trim) {
                if !spec.is_empty() {
                    chosen.push(store_spec(spec, env, Source::EnvStores)?);
                }
            }
        }
    } else {
        let Some(data) = &env.data_dir else {
            bail!(
                "no store given and no user data folder is known (HOME is not set): give --root DIR or set MEMDIR_ROOT"
            );
        };
        chosen.push(memories(default_store(data), Source::Default));
    }
    if chosen.is_empty() {
        bail!("MEMDIR_STORES names no store: give NAME=DIR[:ro] entries separated by `;`");
    }
    for (i, c) in chosen.iter().enumerate() {
        if chosen[..i].iter().any(|o| o.config.name == c.config.name) {
            bail!("store name `{}` is given twice", c.config.name);
        }
    }
    Ok(chosen)
}

/// The default store's folder under the user's data folder.
pub fn default_store(data_dir: &Path) -> PathBuf {
    data_dir.join("memdir").join("memories")
}

fn memories(dir: PathBuf, source: Source) -> Chosen {
    Chosen {
        config: StoreConfig {
            name: "memories".into(),
            location: Location::Folder(dir),
            read_only: false,
            description: None,
        },
        source,
    }
}

/// One `NAME=DIR[:ro]` (or `:rw`); only a last `:ro`/`:rw` is a mode, so `C:\notes` and
/// `C:\notes:ro` keep their drive letter. `NAME=postgresql://…[:ro]` is a store held by
/// a PostgreSQL database; any other `scheme://` is refused rather than taken for a folder.
fn store_spec(spec: &str, env: &Env, source: Source) -> anyhow::Result<Chosen> {
    // What errors show: a URL's password never.
    let shown = crate::secrets::redact_urls(spec);
    let (name, rest) = spec
        .split_once('=')
        .with_context(|| format!("{source} {shown:?}: expected NAME=DIR or NAME=DIR:ro"))?;
    let (dir, read_only) = match rest.rsplit_once(':') {
        Some((dir, "ro")) => (dir, true),
        Some((dir, "rw")) => (dir, false),
        _ => (rest, false),
    };
    check_store_name(name)?;
    if dir.is_empty() {
        bail!("{source} {shown:?}: the folder is empty");
    }
    let location = match url_scheme(dir) {
        Some(scheme) if scheme == "postgresql" || scheme == "postgres" => {
            Location::Postgres(dir.to_owned())
        }
        Some(scheme) => bail!(
            "{source} {shown:?}: `{scheme}://` is not a kind of store memdir knows; give a folder, or a PostgreSQL URL (postgresql://USER@HOST:PORT/DATABASE)"
        ),
        // `postgresql:/…` or `postgres:…`: a URL with its `//` missing, which would
        // become a local folder (and its password part of a folder's name, in the log).
        // Shown without the rest, which may hold the password.
        None if ["postgresql:", "postgres:"]
            .iter()
            .any(|p| dir.to_ascii_lowercase().starts_with(p)) =>
        {
            bail!(
                "{source}: store `{name}` is given as `{}…`, a PostgreSQL URL without its `//`; write postgresql://USER@HOST:PORT/DATABASE",
                &dir[..dir.find(':').unwrap_or(0) + 1]
            )
        }
        None => Location::Folder(expand(dir, env.home.as_deref(), source)?),
    };
    Ok(Chosen {
        config: StoreConfig {
            name: name.into(),
            location,
            read_only,
            description: None,
        },
        source,
    })
}

/// The scheme of a URL (`postgresql` of `postgresql://…`), lowercased; `None` for a path.
fn url_scheme(s: &str) -> Option<String> {
    let (scheme, _) = s.split_once("://")?;
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

pub fn expand_path(path: &Path, env: &Env, source: impl fmt::Display) -> anyhow::Result<PathBuf> {
    match path.to_str() {
        Some("") => bail!("{source}: the folder is empty"),
        Some(s) => expand(s, env.home.as_deref(), source),
        // Not UTF-8: nothing a user typed as `~` or `$HOME`.
        None => Ok(path.to_owned()),
    }
}

/// Expands a leading `~` (alone, or before a path separator) and every `$HOME` or
/// `${HOME}` to the home folder, as a shell would have done.
pub fn expand(
    raw: &str,
    home: Option<&Path>,
    source: impl fmt::Display,
) -> anyhow::Result<PathBuf> {
    let home_str = || -> anyhow::Result<&str> {
        home.and_then(Path::to_str).with_context(|| {
            format!("{source} {raw:?}: no home folder is known to expand it; give the full path")
        })
    };
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    if let Some(after) = raw.strip_prefix('~') {
        if after.is_empty() || after.starts_with(is_separator) {
            out.push_str(home_str()?);
            rest = after;
        } else {
            bail!(
                "{source} {raw:?}: `~name` (another user's home) is not expanded; give the full path"
            );
        }
    }
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let taken = if tail.starts_with("${HOME}") {
            Some("${HOME}".len())
        } else if tail.starts_with("$HOME")
            && !tail["$HOME".len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            Some("$HOME".len())
        } else {
            None
        };
        match taken {
            Some(n) => {
                out.push_str(home_str()?);
                rest = &tail[n..];
            }
            None => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(PathBuf::from(out))
}

fn is_separator(c: char) -> bool {
    c == '/' || (cfg!(windows) && c == '\\')
}

fn check_store_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!(
            "store name `{name}`: use 1-64 ASCII letters, digits, `-`, `_` or `.` (not starting with `.`)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(root: Option<&str>, stores: Option<&str>) -> Env {
        Env {
            root: root.map(Into::into),
            stores: stores.map(Into::into),
            semantic: None,
            model: None,
            home: Some("/home/u".into()),
            data_dir: Some("/home/u/.local/share".into()),
        }
    }

    /// `(raw, expected)`: `Ok(path)` or `Err(part of the message)`.
    #[test]
    fn expand_table() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("~", Ok("/home/u")),
            ("~/", Ok("/home/u/")),
            ("~/notes", Ok("/home/u/notes")),
            ("$HOME/notes", Ok("/home/u/notes")),
            ("${HOME}/notes", Ok("/home/u/notes")),
            ("/data/$HOME", Ok("/data//home/u")),
            ("$HOMEWORK/x", Ok("$HOMEWORK/x")),
            ("$HOME_X", Ok("$HOME_X")),
            ("$USER/x", Ok("$USER/x")),
            ("a$", Ok("a$")),
            ("/srv/~/x", Ok("/srv/~/x")),
            ("notes~", Ok("notes~")),
            ("~bob/notes", Err("another user's home")),
        ];
        for (raw, want) in cases {
            let got = expand(raw, Some(Path::new("/home/u")), Source::Root);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(g, PathBuf::from(w), "{raw}"),
                (Err(w), Err(e)) => assert!(e.to_string().contains(w), "{raw}: {e}"),
                (w, g) => panic!("{raw}: expected {w:?}, got {g:?}"),
            }
        }
        let e = expand("~/x", None, Source::EnvRoot).unwrap_err();
        assert!(e.to_string().contains("MEMDIR_ROOT"), "{e}");
        assert_eq!(expand("/x", None, Source::Root).unwrap(), Path::new("/x"));
    }

    fn names_dirs(chosen: &[Chosen]) -> Vec<(String, String, bool, Source)> {
        chosen
            .iter()
            .map(|c| {
                (
                    c.config.name.clone(),
                    c.config.location.to_string(),
                    c.config.read_only,
                    c.source,
                )
            })
            .collect()
    }

    #[test]
    fn flags_win_over_the_environment_and_the_environment_over_the_default() {
        let e = env(Some("~/env-root"), Some("docs=/d:ro"));
        let flags = choose(Some(Path::new("~/flag")), &[], &e).unwrap();
        assert_eq!(
            names_dirs(&flags),
            [(
                "memories".into(),
                "/home/u/flag".into(),
                false,
                Source::Root
            )]
        );
        let from_env = choose(None, &[], &e).unwrap();
        assert_eq!(
            names_dirs(&from_env),
            [
                (
                    "memories".into(),
                    "/home/u/env-root".into(),
                    false,
                    Source::EnvRoot
                ),
                ("docs".into(), "/d".into(), true, Source::EnvStores),
            ]
        );
        let default = choose(None, &[], &env(None, None)).unwrap();
        assert_eq!(
            names_dirs(&default),
            [(
                "memories".into(),
                "/home/u/.local/share/memdir/memories".into(),
                false,
                Source::Default
            )]
        );
        let no_home = Env::default();
        let e = choose(None, &[], &no_home).unwrap_err();
        assert!(e.to_string().contains("--root"), "{e}");
    }

    #[test]
    fn memdir_stores_entries() {
        /// `(name, folder, read-only)` of each store, or part of the error.
        type Expected<'a> = Result<&'a [(&'a str, &'a str, bool)], &'a str>;
        let cases: &[(&str, Expected)] = &[
            ("a=/x;b=/y:ro", Ok(&[("a", "/x", false), ("b", "/y", true)])),
            (
                " a=C:\\notes:ro ; b=C:\\work ;",
                Ok(&[("a", "C:\\notes", true), ("b", "C:\\work", false)]),
            ),
            ("a=$HOME/m:rw", Ok(&[("a", "/home/u/m", false)])),
            (";;", Err("names no store")),
            ("a=/x;a=/y", Err("given twice")),
            ("nameless", Err("MEMDIR_STORES \"nameless\"")),
            ("bad name=/x", Err("store name")),
            ("a=:ro", Err("the folder is empty")),
        ];
        for (raw, want) in cases {
            let got = choose(None, &[], &env(None, Some(raw)));
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    let g: Vec<_> = names_dirs(&g)
                        .into_iter()
                        .map(|(n, d, ro, _)| (n, d, ro))
                        .collect();
                    let w: Vec<_> = w
                        .iter()
                        .map(|(n, d, ro)| (n.to_string(), d.to_string(), *ro))
                        .collect();
                    assert_eq!(g, w, "{raw}");
                }
                (Err(w), Err(e)) => assert!(e.to_string().contains(w), "{raw}: {e}"),
                (w, g) => panic!("{raw}: expected {w:?}, got {g:?}"),
            }
        }
    }
}
