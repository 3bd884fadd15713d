//! Architecture invariants that clippy cannot hold, checked on the source text: only
//! `src/mcp` knows rmcp, rustix's file functions stay in their two doors, the index only
//! creates its own folder and deletes its own damaged database, every file says what it
//! is, and no file cites a document the repository does not have. The doors clippy
//! holds (the file system, the environment, database connections, stdout) are in
//! `clippy.toml`, denied in `src/lib.rs`.

use std::path::Path;

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect()
}

fn check(forbidden: &[&str], allowed_in: &[&str]) {
    for (path, text) in sources() {
        if allowed_in.iter().any(|a| path.starts_with(a)) {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in forbidden {
                // Whole tokens only: `eprintln!` is not `println!`.
                let hit = code
                    .match_indices(f)
                    .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
                assert!(
                    !hit,
                    "src/{path}:{}: `{f}` is only allowed in {allowed_in:?}",
                    n + 1
                );
            }
        }
    }
}

#[test]
fn only_the_store_touches_the_file_system_through_rustix() {
    // The stdio transport reads the type and flags of the process's own stdin and
    // stdout (`fstat`, `F_GETFL`/`F_SETFL`); it names no path.
    check(
        &["rustix::fs"],
        &["store/", "mcp/transport/stdio/handles.rs"],
    );
}

/// The index creates the folder of its database and deletes a damaged database (its own
/// files: the path it was given, with SQLite's `-wal` and `-shm`); nothing else.
#[test]
fn the_index_only_creates_its_folder_and_removes_its_own_database() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/search/index/mod.rs");
    let text = std::fs::read_to_string(path).unwrap();
    let uses: Vec<&str> = text.lines().filter(|l| l.contains("std::fs")).collect();
    assert_eq!(uses.len(), 2, "{uses:?}");
    assert!(
        uses.iter()
            .any(|u| u.contains("std::fs::create_dir_all(dir)")),
        "{uses:?}"
    );
    assert!(
        uses.iter()
            .any(|u| u.contains("std::fs::remove_file(file)")),
        "{uses:?}"
    );
    // `file` is the database path plus a suffix, built right above the removal.
    assert!(
        text.contains("for suffix in [\"\", \"-wal\", \"-shm\"]"),
        "{text}"
    );
}

#[test]
fn only_the_mcp_module_knows_rmcp() {
    check(&["rmcp::", "use rmcp"], &["mcp/"]);
}

#[test]
fn every_source_file_says_what_it_is() {
    for (path, text) in sources() {
        assert!(
            text.starts_with("//!"),
            "src/{path} must start with a `//!` line"
        );
    }
}

/// The project states its own contract (`docs/tools.md`, `docs/paths.md`,
/// `docs/anthropic-memory-tool.md`): nothing in the repository cites a document that a
/// clone does not have.
#[test]
fn the_repository_cites_no_document_outside_itself() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Spelt in pieces so this file does not cite them itself.
    let outside = [
        ["TOOLS", ".md"].concat(),
        ["PATHS", ".md"].concat(),
        ["ANTHROPIC_MEMORY_TOOL", ".md"].concat(),
        ["../", "shared/"].concat(),
    ];
    let mut files: Vec<_> = ["README.md", "ARCHITECTURE.md", "Cargo.toml"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    for dir in [
        "src",
        "tests",
        "examples",
        "docs",
        "fuzz/fuzz_targets",
        ".ci",
    ] {
        files.extend(
            walkdir::WalkDir::new(root.join(dir))
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
                .map(|e| e.into_path()),
        );
    }
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text (a screenshot)
        };
        for (n, line) in text.lines().enumerate() {
            for name in &outside {
                assert!(
                    !line.contains(name.as_str()),
                    "{}:{}: cites `{name}`, which is not in the repository",
                    file.strip_prefix(root).unwrap().display(),
                    n + 1
                );
            }
        }
    }
}
