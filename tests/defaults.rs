//! The first minutes of a user: the default store, `MEMDIR_ROOT` and `MEMDIR_STORES`,
//! paths typed with `~` and `$HOME`, missing, misplaced and unwritable store folders, and
//! the line the server logs at start-up. Every run gets a fresh home and an environment
//! holding only what the test sets (never the user's home or variables).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::Server;
use serde_json::json;

/// A temp folder with `home/` (the user's home) and `cache/` (`XDG_CACHE_HOME`).
struct User {
    tmp: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        User { tmp }
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// The environment of every run: `HOME`, `XDG_CACHE_HOME`, then `extra`.
    fn env(&self, c: &mut Command, extra: &[(&str, &str)]) {
        c.env_clear()
            .env("HOME", self.home())
            .env("XDG_CACHE_HOME", self.path("cache"));
        for (k, v) in extra {
            c.env(k, v);
        }
    }

    /// Runs `memdir ARGS` with stdin closed (a server reads end of input and exits).
    fn run(&self, args: &[&str], extra: &[(&str, &str)]) -> Run {
        let mut c = Command::new(common::BIN);
        c.args(args).stdin(Stdio::null());
        self.env(&mut c, extra);
        let out = c.output().unwrap();
        Run {
            ok: out.status.success(),
            out: String::from_utf8_lossy(&out.stdout).into_owned(),
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Starts the server with `args` through the MCP client.
    async fn serve(&self, args: &[&str], extra: &[(&str, &str)]) -> Server {
        let env = |c: &mut tokio::process::Command| {
            c.env_clear()
                .env("HOME", self.home())
                .env("XDG_CACHE_HOME", self.path("cache"))
                .env("RUST_LOG", "memdir=warn");
            for (k, v) in extra {
                c.env(k, v);
            }
        };
        Server::start_with(args, &[], env).await
    }

    fn default_store(&self) -> PathBuf {
        self.home().join(".local/share/memdir/memories")
    }
}

#[derive(Debug)]
struct Run {
    ok: bool,
    out: String,
    err: String,
}

async fn write(server: &Server, path: &str, content: &str) {
    server
        .ok("memory_write", json!({"path": path, "content": content}))
        .await;
}

#[tokio::test]
async fn with_no_store_given_the_server_and_the_cli_share_the_default_store() {
    let user = User::new();
    let before = user.run(&["list"], &[]);
    assert!(
        before.ok && before.err.contains("default store") && before.err.contains("does not exist"),
        "{before:?}"
    );
    assert!(
        !user.default_store().exists(),
        "a listing created the store"
    );

    let s = user.serve(&[], &[]).await;
    write(&s, "/memories/notes/first.md", "the agent was here\n").await;
    s.stop().await;
    assert_eq!(
        std::fs::read_to_string(user.default_store().join("notes/first.md")).unwrap(),
        "the agent was here\n"
    );
    let listed = user.run(&["list"], &[]);
    assert!(
        listed.ok && listed.out.contains("/memories/notes/first.md"),
        "{listed:?}"
    );
    let found = user.run(&["search", "agent"], &[]);
    assert!(
        found.ok && found.out.contains("/memories/notes/first.md"),
        "{found:?}"
    );

    // XDG_DATA_HOME moves the default store (a relative one is ignored, as the spec says).
    let data = user.path("data");
    let s = user
        .serve(&[], &[("XDG_DATA_HOME", data.to_str().unwrap())])
        .await;
    write(&s, "moved.md", "x\n").await;
    s.stop().await;
    assert!(data.join("memdir/memories/moved.md").is_file());
    let s = user.serve(&[], &[("XDG_DATA_HOME", "relative/data")]).await;
    write(&s, "ignored.md", "x\n").await;
    s.stop().await;
    assert!(user.default_store().join("ignored.md").is_file());
}

#[tokio::test]
async fn the_environment_names_stores_and_flags_win_over_it() {
    let user = User::new();
    std::fs::create_dir_all(user.home().join("docs")).unwrap();
    std::fs::write(user.home().join("docs/guide.md"), "read me\n").unwrap();
    let stores = "work=~/work ; docs=$HOME/docs:ro;";
    let s = user
        .serve(&[], &[("MEMDIR_ROOT", "~/mem"), ("MEMDIR_STORES", stores)])
        .await;
    write(&s, "/memories/a.md", "a\n").await;
    write(&s, "/work/b.md", "b\n").await;
    let refused = s
        .err(
            "memory_write",
            json!({"path": "/docs/c.md", "content": "c\n"}),
        )
        .await;
    assert!(refused.contains("read-only"), "{refused}");
    s.stop().await;
    assert!(user.home().join("mem/a.md").is_file());
    assert!(user.home().join("work/b.md").is_file());
    assert!(!user.home().join("docs/c.md").exists());
    assert!(!user.default_store().exists());

    // The CLI reads the same variables.
    let listed = user.run(&["list", "/docs"], &[("MEMDIR_STORES", stores)]);
    assert!(
        listed.ok && listed.out.contains("/docs/guide.md"),
        "{listed:?}"
    );

    // A flag replaces the environment's stores entirely.
    let flag = user.path("flag");
    let s = user
        .serve(
            &["--root", flag.to_str().unwrap()],
            &[("MEMDIR_ROOT", "~/other"), ("MEMDIR_STORES", "x=~/x")],
        )
        .await;
    let names: Vec<String> = s.ok("memory_list", json!({"path": "/"})).await["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect();
    write(&s, "f.md", "f\n").await;
    s.stop().await;
    assert!(names.is_empty(), "{names:?}");
    assert!(flag.join("f.md").is_file());
    assert!(!user.home().join("other").exists());
    assert!(!user.home().join("x").exists());

    let bad = user.run(&["list"], &[("MEMDIR_STORES", "no-equals-sign")]);
    assert!(
        !bad.ok && bad.err.contains("MEMDIR_STORES \"no-equals-sign\""),
        "{bad:?}"
    );
}

/// Clients start the server without a shell: `~` and `$HOME` arrive as typed.
#[tokio::test]
async fn tilde_and_home_in_flags_are_the_home_folder() {
    let user = User::new();
    for (flag, value, dir) in [
        ("--root", "~/tilde", "tilde"),
        ("--root", "$HOME/dollar", "dollar"),
        ("--store", "braced=${HOME}/braced", "braced"),
    ] {
        let s = user.serve(&[flag, value], &[]).await;
        write(&s, "a.md", "a\n").await;
        s.stop().await;
        assert!(user.home().join(dir).join("a.md").is_file(), "{value}");
        let listed = user.run(&["list", flag, value], &[]);
        assert!(listed.ok && listed.out.contains("a.md"), "{listed:?}");
    }
    assert!(!user.home().join("~").exists());
    let other = user.run(&["list", "--root", "~bob/notes"], &[]);
    assert!(
        !other.ok && other.err.contains("another user's home"),
        "{other:?}"
    );
}

#[test]
fn a_store_named_for_reading_must_exist_and_is_never_created() {
    let user = User::new();
    let typo = user.path("typo");
    let root = typo.to_str().unwrap();
    for args in [
        vec!["list"],
        vec!["search", "x"],
        vec!["read", "a.md"],
        vec!["history"],
        vec!["check"],
        vec!["export"],
        vec!["restore", "a.md", "--version", "1"],
        vec!["redact", "--version", "1"],
    ] {
        let mut all = vec!["--root", root];
        all.extend(&args);
        let r = user.run(&all, &[]);
        assert!(!r.ok, "{args:?}: {r:?}");
        assert!(
            r.err.contains(root) && r.err.contains("does not exist") && r.err.contains("--root"),
            "{args:?}: {r:?}"
        );
        assert!(r.out.is_empty(), "{args:?}: {r:?}");
        assert!(!typo.exists(), "{args:?} created the store");
    }
    // A store in MEMDIR_STORES is named too.
    let r = user.run(&["check"], &[("MEMDIR_STORES", &format!("m={root}"))]);
    assert!(
        !r.ok && r.err.contains("MEMDIR_STORES") && r.err.contains(root),
        "{r:?}"
    );
    assert!(!typo.exists());

    // The server and import make a missing store; a read-only one is never made.
    let r = user.run(&["--root", root, "import"], &[]);
    assert!(!r.ok && r.err.contains("empty"), "{r:?}");
    assert!(typo.is_dir());
    let ro = user.path("ro");
    let spec = format!("docs={}:ro", ro.display());
    let r = user.run(&["--store", &spec], &[]);
    assert!(
        !r.ok && r.err.contains("read-only store is not created"),
        "{r:?}"
    );
    assert!(!ro.exists());
}

#[test]
fn a_file_given_as_a_store_is_not_a_folder() {
    let user = User::new();
    let file = user.path("notes.md");
    std::fs::write(&file, "not a folder\n").unwrap();
    for args in [vec![], vec!["list"], vec!["import"]] {
        let mut all = vec!["--root", file.to_str().unwrap()];
        all.extend(&args);
        let r = user.run(&all, &[]);
        assert!(
            !r.ok && r.err.contains("is not a folder") && r.err.contains(file.to_str().unwrap()),
            "{args:?}: {r:?}"
        );
        assert!(r.out.is_empty(), "{args:?}: {r:?}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder\n");
}

/// Runs `memdir ARGS` as a user who cannot write `store` (as root, as `nobody`; else
/// with the folder's write bits off).
#[cfg(unix)]
fn run_without_write_access(user: &User, store: &Path, args: &[&str]) -> Run {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let root = rustix::process::geteuid().is_root();
    let mode = if root { 0o755 } else { 0o555 };
    std::fs::set_permissions(store, std::fs::Permissions::from_mode(mode)).unwrap();
    // `nobody` must reach the store through the temp folder.
    std::fs::set_permissions(user.tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = Command::new(common::BIN);
    c.args(args).stdin(Stdio::null());
    user.env(&mut c, &[]);
    if root {
        c.uid(65534).gid(65534);
    }
    let out = c.output().unwrap();
    std::fs::set_permissions(store, std::fs::Permissions::from_mode(0o755)).unwrap();
    Run {
        ok: out.status.success(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[cfg(unix)]
#[test]
fn an_unwritable_store_says_so_at_start_up_with_the_fix() {
    let user = User::new();
    let store = user.path("store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("a.md"), "a\n").unwrap();
    let dir = store.to_str().unwrap();
    let r = run_without_write_access(&user, &store, &["--root", dir]);
    assert!(!r.ok, "{r:?}");
    for part in [
        "store `memories` (--root)",
        &format!("folder {dir} is not writable"),
        "chmod",
        &format!("--store memories={dir}:ro"),
    ] {
        assert!(r.err.contains(part), "{part:?} in {r:?}");
    }
    assert!(r.out.is_empty(), "{r:?}");
    // The same for a command that writes; reading needs no write access.
    let r = run_without_write_access(
        &user,
        &store,
        &["--root", dir, "restore", "a.md", "--version", "1"],
    );
    assert!(!r.ok && r.err.contains("is not writable"), "{r:?}");
    let r = run_without_write_access(&user, &store, &["--root", dir, "list"]);
    assert!(r.ok && r.out.contains("/memories/a.md"), "{r:?}");
    // The fix it gives works: served read-only, the server starts (and then finds its
    // input closed before any request).
    let spec = format!("memories={dir}:ro");
    let r = run_without_write_access(&user, &store, &["--store", &spec]);
    assert!(
        r.err.contains(&format!("/memories at {dir} (read-only)"))
            && !r.err.contains("not writable"),
        "{r:?}"
    );
}

#[test]
fn the_server_says_what_it_serves_on_one_line_at_the_default_level() {
    let user = User::new();
    let docs = user.path("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let spec = format!("docs={}:ro", docs.display());
    // Stdin is closed: the server starts, says what it serves, and ends.
    let r = user.run(&["--store", "notes=~/notes", "--store", &spec], &[]);
    assert!(r.out.is_empty(), "stdout is the protocol's: {r:?}");
    let lines: Vec<&str> = r.err.lines().filter(|l| l.contains(" serving ")).collect();
    assert_eq!(lines.len(), 1, "{r:?}");
    let line = lines[0];
    for part in [
        &format!("memdir {} serving", env!("CARGO_PKG_VERSION")),
        &format!(
            "/notes at {} (read-write)",
            user.home().join("notes").display()
        ),
        &format!("/docs at {} (read-only)", docs.display()),
        "tools: memory_delete, memory_edit, memory_history, memory_list, memory_read, memory_search, memory_write",
        &format!("search index under {}", user.path("cache/memdir").display()),
    ] {
        assert!(line.contains(part), "{part:?} in {line}");
    }
    assert!(line.contains(" INFO "), "{line}");

    // What is offered follows the options: every store read-only, another tool set, no index.
    let r = user.run(&["--store", &spec, "--tools", "all", "--no-index"], &[]);
    let line = r.err.lines().find(|l| l.contains(" serving ")).unwrap();
    assert!(
        line.contains("tools: memory, memory_history, memory_list, memory_read, memory_search;"),
        "{line}"
    );
    assert!(line.contains("search index: none"), "{line}");
    let r = user.run(&[], &[]);
    let line = r.err.lines().find(|l| l.contains(" serving ")).unwrap();
    assert!(
        line.contains(&format!(
            "/memories at {} (read-write, the default store)",
            user.default_store().display()
        )),
        "{line}"
    );
    // Quieter levels leave it out.
    let r = user.run(&["--log-level", "warn"], &[]);
    assert!(!r.err.contains(" serving "), "{r:?}");
}
