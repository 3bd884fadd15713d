//! One contract, two kinds of store: every case in the table at the bottom runs against a
//! folder store (`--store memories=DIR`) and a PostgreSQL store (`--store
//! memories=postgresql://...`, a real server from tests/common/pg.rs), through the real
//! binary and the rmcp client.
//!
//! `folder::CASE` runs a case on a folder store. `postgres::CASE` runs it on both kinds
//! and then requires the two transcripts (what each step answered, with times masked) to
//! be equal: a PostgreSQL store must answer exactly as a folder store does. The
//! `postgres` cases need PostgreSQL's server binaries, so they exist only with the
//! `external-tests` feature (`cargo test --features external-tests`).

// Without `external-tests` the PostgreSQL half of the fixture is built but not used.
#![cfg_attr(not(feature = "external-tests"), allow(dead_code))]

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use common::{Sandbox, Server, sha256_hex};
use pg::{PgServer, unique_db};
use serde_json::{Value, json};

/// The longest one case may take on one kind of store before it counts as a hang.
const CASE_LIMIT: Duration = Duration::from_secs(180);

// ---------------------------------------------------------------------------------------
// The store fixture
// ---------------------------------------------------------------------------------------

/// Which kind of store a case runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Folder,
    Postgres,
}

/// One PostgreSQL server for the tests of this binary that run at the same time; stopped
/// when the last of them ends.
fn shared_pg() -> Arc<PgServer> {
    static SHARED: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pg) = shared.upgrade() {
        return pg;
    }
    let pg = Arc::new(PgServer::start());
    *shared = Arc::downgrade(&pg);
    pg
}

/// A fresh, empty store named `memories` of one kind (and more stores of that kind on
/// request), plus a sandbox with files outside every store.
struct Backend {
    sb: Sandbox,
    pg: Option<(Arc<PgServer>, String)>,
}

impl Backend {
    fn new(kind: Kind, case: &str) -> Backend {
        let pg = (kind == Kind::Postgres).then(|| {
            let pg = shared_pg();
            let db = unique_db(case);
            pg.create_db(&db);
            (pg, db)
        });
        Backend {
            sb: Sandbox::new(),
            pg,
        }
    }

    /// The `--store` value of store `name` (`memories` is the sandbox's store folder).
    fn spec(&self, name: &str, read_only: bool) -> String {
        let place = match &self.pg {
            Some((pg, db)) => pg.url(db),
            None if name == "memories" => self.sb.store().display().to_string(),
            None => self.sb.tmp.path().join(name).display().to_string(),
        };
        format!("{name}={place}{}", if read_only { ":ro" } else { "" })
    }

    /// `memdir --store memories=...` with more arguments.
    async fn serve(&self, extra: &[&str]) -> Server {
        let spec = self.spec("memories", false);
        let mut args = vec!["--store", spec.as_str()];
        args.extend_from_slice(extra);
        self.start(&args).await
    }

    /// `memdir ARGS`, run in the sandbox (so a store spec taken for a relative folder
    /// would land there, not in the repository).
    async fn start(&self, args: &[&str]) -> Server {
        let cwd = self.sb.tmp.path().to_owned();
        Server::start_with(args, &[], |c| {
            c.current_dir(cwd);
        })
        .await
    }

    /// `memdir ARGS`, the first being a subcommand, with `--store memories=...` after it.
    fn cli(&self, args: &[&str]) -> (bool, String, String) {
        let spec = self.spec("memories", false);
        let out = std::process::Command::new(common::BIN)
            .arg(args[0])
            .args(["--store", &spec])
            .args(&args[1..])
            .env_clear()
            .current_dir(self.sb.tmp.path())
            .env("HOME", self.sb.tmp.path())
            .env(
                "XDG_CACHE_HOME",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
            )
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Host paths and names that differ between two runs, and what replaces them in a
    /// transcript.
    fn masks(&self) -> Vec<(String, &'static str)> {
        let mut masks = vec![(self.sb.tmp.path().display().to_string(), "<sandbox>")];
        if let Some((pg, db)) = &self.pg {
            masks.push((pg.url(db), "<store>"));
            masks.push((pg.socket_dir().display().to_string(), "<socket>"));
            masks.push((db.clone(), "<db>"));
        }
        masks
    }
}

// ---------------------------------------------------------------------------------------
// Transcripts
// ---------------------------------------------------------------------------------------

/// What each step of a case answered, with what may differ between runs masked.
struct Transcript {
    steps: Vec<(String, Value)>,
    masks: Vec<(String, &'static str)>,
}

impl Transcript {
    fn new(b: &Backend) -> Transcript {
        Transcript {
            steps: Vec::new(),
            masks: b.masks(),
        }
    }

    /// Records a step's answer.
    fn note(&mut self, label: &str, answer: Value) {
        let masked = mask(answer, &self.masks);
        self.steps.push((mask_text(label, &self.masks), masked));
    }

    /// Records a text answer.
    fn text(&mut self, label: &str, text: &str) {
        self.note(label, Value::String(text.to_owned()));
    }
}

/// Keys whose values are times or ages (they differ between two runs).
const TIME_KEYS: &[&str] = &["updated_at", "at", "age_days", "redacted_at"];

fn mask(value: Value, masks: &[(String, &'static str)]) -> Value {
    match value {
        Value::String(s) => Value::String(mask_text(&s, masks)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| mask(v, masks)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| {
                    let v = if TIME_KEYS.contains(&k.as_str()) && !v.is_null() {
                        json!("<time>")
                    } else if k == "score" {
                        // Ranking scores may differ in the last digits of a float.
                        json!(v.as_f64().map(|f| format!("{f:.2}")))
                    } else {
                        mask(v, masks)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

fn mask_text(text: &str, masks: &[(String, &'static str)]) -> String {
    let mut text = text.to_owned();
    for (from, to) in masks {
        text = text.replace(from.as_str(), to);
    }
    let times = regex::Regex::new(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",
    )
    .unwrap();
    times.replace_all(&text, "<time>").into_owned()
}

/// Runs `case` on a store of `kind`, bounded in time, and returns its transcript.
async fn run<F>(kind: Kind, name: &str, case: F) -> Vec<(String, Value)>
where
    F: for<'a> AsyncFn(&'a Backend, &'a mut Transcript),
{
    let b = Backend::new(kind, name);
    let mut t = Transcript::new(&b);
    tokio::time::timeout(CASE_LIMIT, case(&b, &mut t))
        .await
        .unwrap_or_else(|_| panic!("{name} on a {kind:?} store took longer than {CASE_LIMIT:?}"));
    if let Some((pg, db)) = &b.pg {
        // The case ran on PostgreSQL, not on a folder its URL was mistaken for.
        let stray: Vec<_> = std::fs::read_dir(b.sb.tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("postgres"))
            .collect();
        assert!(
            stray.is_empty(),
            "{name}: the PostgreSQL store was served from a local folder {stray:?}"
        );
        let tables = pg.psql(
            db,
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memdir\\_%'",
        );
        assert_ne!(
            tables, "0",
            "{name}: memdir made no memdir_* tables in the database"
        );
    }
    t.steps
}

/// Requires the two transcripts of a case to be the same, step by step.
fn assert_same(name: &str, folder: &[(String, Value)], postgres: &[(String, Value)]) {
    let labels = |t: &[(String, Value)]| t.iter().map(|s| s.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        labels(folder),
        labels(postgres),
        "{name}: the two kinds took different steps"
    );
    for ((label, f), (_, p)) in folder.iter().zip(postgres) {
        assert!(
            f == p,
            "{name}, step `{label}`: a PostgreSQL store answers differently from a folder store\n\
             folder:     {}\npostgresql: {}",
            serde_json::to_string_pretty(f).unwrap(),
            serde_json::to_string_pretty(p).unwrap()
        );
    }
}

/// `(path, kind)` of each entry of a memory_list result.
fn listed(r: &Value) -> Vec<(String, String)> {
    r["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {r}"))
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn hit_paths(r: &Value) -> Vec<String> {
    r["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits: {r}"))
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

fn versions(r: &Value) -> Vec<Value> {
    r["versions"].as_array().expect("versions").clone()
}

// ---------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------

async fn write_and_read(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let content = "# Rust\nuse cargo\nfmt before commit\nclippy too\n";
    let w = s
        .ok(
            "memory_write",
            json!({"path": "/memories/notes/rust.md", "content": content}),
        )
        .await;
    assert_eq!(w["created"], true);
    assert_eq!(w["content_sha256"], sha256_hex(content.as_bytes()));
    t.note("write", w);

    let r = s
        .call("memory_read", json!({"path": "notes/rust.md"}))
        .await;
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(
        r.text,
        "     1\t# Rust\n     2\tuse cargo\n     3\tfmt before commit\n     4\tclippy too"
    );
    assert_eq!(r.structured["content"], content);
    assert_eq!(r.structured["total_lines"], 4);
    assert_eq!(r.structured["size_bytes"], content.len());
    t.text("read text", &r.text);
    t.note("read", r.structured);

    let range = s
        .call(
            "memory_read",
            json!({"path": "/memories/notes/rust.md", "view_range": [2, 3]}),
        )
        .await;
    assert_eq!(range.text, "     2\tuse cargo\n     3\tfmt before commit");
    assert_eq!(
        range.structured["content"],
        "use cargo\nfmt before commit\n"
    );
    t.text("range text", &range.text);
    t.note("range", range.structured);
    let to_end = s
        .ok(
            "memory_read",
            json!({"path": "/memories/notes/rust.md", "view_range": [3, -1]}),
        )
        .await;
    assert_eq!(
        (to_end["start_line"].clone(), to_end["end_line"].clone()),
        (json!(3), json!(4))
    );
    t.note("range to end", to_end);
    let e = s
        .err(
            "memory_read",
            json!({"path": "/memories/notes/rust.md", "view_range": [9, 12]}),
        )
        .await;
    t.text("range past the end", &e);
    let e = s
        .err("memory_read", json!({"path": "/memories/notes/none.md"}))
        .await;
    assert!(e.contains("does not exist"), "{e}");
    t.text("read missing", &e);
    // Unicode and CRLF come back byte for byte.
    let odd = "línea — ünïcode\r\n数据库 no final newline";
    s.ok("memory_write", json!({"path": "odd.md", "content": odd}))
        .await;
    let r = s.ok("memory_read", json!({"path": "odd.md"})).await;
    assert_eq!(r["content"], odd);
    t.note("odd read", r);
    s.stop().await;
}

async fn size_cap(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let e = s
        .err(
            "memory_write",
            json!({"path": "big.md", "content": "x".repeat(102_401)}),
        )
        .await;
    assert!(e.contains("102401") && e.contains("102400"), "{e}");
    t.text("too big", &e);
    let w = s
        .ok(
            "memory_write",
            json!({"path": "exact.md", "content": "x".repeat(102_400)}),
        )
        .await;
    t.note("exactly the cap", w);
    let e = s
        .err(
            "memory_edit",
            json!({"path": "exact.md", "append_text": "y"}),
        )
        .await;
    assert!(e.contains("102400"), "{e}");
    t.text("edit past the cap", &e);
    let e = s.err("memory_read", json!({"path": "big.md"})).await;
    assert!(e.contains("does not exist"), "nothing stored: {e}");
    s.stop().await;

    let s = b.serve(&["--max-file-bytes", "10"]).await;
    let e = s
        .err(
            "memory_write",
            json!({"path": "small.md", "content": "eleven byte"}),
        )
        .await;
    t.text("a lower --max-file-bytes", &e);
    s.stop().await;
}

async fn secrets_are_refused(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let secret = format!("notes\ndeploy key: {}{}\n", "AKIA", "ABCDEFGHIJKLMNOP");
    let e = s
        .err(
            "memory_write",
            json!({"path": "creds.md", "content": secret}),
        )
        .await;
    assert!(
        e.contains("AWS access key id") && e.contains("line 2"),
        "{e}"
    );
    assert!(
        !e.contains("ABCDEFGHIJKLMNOP"),
        "never echoes the secret: {e}"
    );
    t.text("secret write", &e);
    let e = s.err("memory_read", json!({"path": "creds.md"})).await;
    assert!(e.contains("does not exist"), "{e}");
    s.ok(
        "memory_write",
        json!({"path": "clean.md", "content": "nothing here\n"}),
    )
    .await;
    let e = s
        .err(
            "memory_edit",
            json!({"path": "clean.md", "append_text": format!("{}{}", "ghp_", "a".repeat(36))}),
        )
        .await;
    assert!(!e.contains(&"a".repeat(36)), "{e}");
    t.text("secret edit", &e);
    let h = s.ok("memory_history", json!({})).await;
    assert_eq!(versions(&h).len(), 1, "refusals make no version: {h}");
    s.stop().await;
}

async fn frontmatter_and_folders_in_list(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    s.ok("memory_write", json!({"path": "notes/a.md", "content": "---\nname: Alpha\ndescription: Alpha notes\ntype: project\ntags: [db, ops]\n---\nbody\n"})).await;
    s.ok(
        "memory_write",
        json!({"path": "notes/bad.md", "content": "---\nname: [unclosed\n---\nstill content\n"}),
    )
    .await;
    for p in ["notes/sub/b.md", "notes_old/c.md", "top.md"] {
        s.ok("memory_write", json!({"path": p, "content": p})).await;
    }
    let all = s.call("memory_list", json!({})).await;
    assert!(!all.is_error, "{}", all.text);
    let paths: Vec<String> = listed(&all.structured).into_iter().map(|e| e.0).collect();
    assert_eq!(
        paths,
        [
            "/memories/notes/a.md",
            "/memories/notes/bad.md",
            "/memories/notes/sub/b.md",
            "/memories/notes_old/c.md",
            "/memories/top.md"
        ]
    );
    let a = &all.structured["entries"][0];
    assert_eq!(a["description"], "Alpha notes");
    assert_eq!(a["type"], "project");
    t.note("list", all.structured);
    t.text("list text", &all.text);

    let notes = s
        .ok("memory_list", json!({"path": "/memories/notes/"}))
        .await;
    assert_eq!(listed(&notes).len(), 3, "segment-aware: {notes}");
    t.note("list notes/", notes);
    let shallow = s
        .call("memory_list", json!({"path": "/memories", "depth": 1}))
        .await;
    let shallow_entries: Vec<(String, String)> = listed(&shallow.structured)
        .into_iter()
        .map(|(p, k)| (p.trim_end_matches('/').to_owned(), k))
        .collect();
    assert_eq!(
        shallow_entries,
        [
            ("/memories/notes".to_owned(), "dir".to_owned()),
            ("/memories/notes_old".to_owned(), "dir".to_owned()),
            ("/memories/top.md".to_owned(), "file".to_owned()),
        ],
        "{}",
        shallow.structured
    );
    t.note("list depth 1", shallow.structured);
    t.text("list depth 1 text", &shallow.text);
    let page = s.ok("memory_list", json!({"limit": 2})).await;
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    t.note("list page 1", page);
    let rest = s
        .ok("memory_list", json!({"limit": 10, "cursor": cursor}))
        .await;
    assert_eq!(listed(&rest).len(), 3);
    t.note("list page 2", rest);
    s.stop().await;
}

async fn search_in_five_languages(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let docs = [
        (
            "en.md",
            "The deployment pipeline ships blue green releases.\n",
        ),
        ("en2.md", "A pipe fitting is not a deployment.\n"),
        (
            "ru.md",
            "Развёртывание сервиса: Память агента хранится на диске.\n",
        ),
        ("ru2.md", "памятка не то\n"),
        ("zh.md", "我们的数据库很快\n"),
        ("zh2.md", "数据很重要\n"),
        ("ko.md", "데이터베이스를 사용합니다\n"),
        ("ko2.md", "메모리에 저장\n"),
        ("ja.md", "キャッシュメモリを使う\n"),
        ("ja2.md", "東京都に住む\n"),
        (
            "fm.md",
            "---\ndescription: Deploy runbook\ntype: reference\n---\npipeline steps\n",
        ),
    ];
    for (p, c) in docs {
        s.ok(
            "memory_write",
            json!({"path": format!("lang/{p}"), "content": c}),
        )
        .await;
    }
    for (query, first) in [
        ("deployment pipeline", "/memories/lang/en.md"),
        ("ПАМЯТЬ", "/memories/lang/ru.md"),
        ("развёртывание", "/memories/lang/ru.md"),
        // Word forms, from the index each process derives from the store.
        ("deployments released", "/memories/lang/en.md"),
        ("развёртывания агентов", "/memories/lang/ru.md"),
        ("数据库", "/memories/lang/zh.md"),
        ("데이터베이스", "/memories/lang/ko.md"),
        ("キャッシュ", "/memories/lang/ja.md"),
        ("京都", "/memories/lang/ja2.md"),
    ] {
        let r = s.call("memory_search", json!({"query": query})).await;
        assert!(!r.is_error, "{query}: {}", r.text);
        let paths = hit_paths(&r.structured);
        assert_eq!(
            paths.first().map(String::as_str),
            Some(first),
            "{query}: {paths:?}"
        );
        t.note(&format!("search {query}"), r.structured);
        t.text(&format!("search {query} text"), &r.text);
    }
    let r = s
        .ok(
            "memory_search",
            json!({"query": "pipeline", "type": "reference"}),
        )
        .await;
    assert_eq!(hit_paths(&r), ["/memories/lang/fm.md"]);
    assert_eq!(r["hits"][0]["description"], "Deploy runbook");
    t.note("search by type", r);
    // Words are ANDed, relaxed to OR when nothing has them all; any string is a query.
    let r = s
        .call("memory_search", json!({"query": "pipeline 数据库"}))
        .await;
    assert!(!r.is_error && r.structured["total_hits"].as_u64().unwrap() >= 2);
    t.note("search relaxed", r.structured);
    t.text("search relaxed text", &r.text);
    for query in ["\"", "AND OR NOT", "*", "deploy*", "\"blue green\""] {
        let r = s.call("memory_search", json!({"query": query})).await;
        assert!(!r.is_error, "{query}: {}", r.text);
        t.note(&format!("search {query}"), r.structured);
    }
    let r = s
        .ok("memory_search", json!({"query": "pipeline", "limit": 1}))
        .await;
    t.note("search page", r);
    s.stop().await;
}

async fn edits_replace_and_insert(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let p = "/memories/todo.md";
    s.ok(
        "memory_write",
        json!({"path": p, "content": "a\nb\na\nc\n"}),
    )
    .await;
    let e = s
        .err(
            "memory_edit",
            json!({"path": p, "old_str": "a", "new_str": "x"}),
        )
        .await;
    assert!(e.contains("Multiple occurrences"), "{e}");
    t.text("ambiguous", &e);
    let e = s
        .err(
            "memory_edit",
            json!({"path": p, "old_str": "zzz", "new_str": "x"}),
        )
        .await;
    assert!(e.contains("did not appear verbatim"), "{e}");
    t.text("absent", &e);
    let r = s
        .ok(
            "memory_edit",
            json!({"path": p, "old_str": "b", "new_str": "B"}),
        )
        .await;
    assert_eq!(r["content_sha256"], sha256_hex(b"a\nB\na\nc\n"));
    t.note("replace", r);
    let r = s
        .ok(
            "memory_edit",
            json!({"path": p, "old_str": "a", "new_str": "x", "replace_all": true}),
        )
        .await;
    t.note("replace all", r);
    let r = s
        .ok(
            "memory_edit",
            json!({"path": p, "insert_line": 0, "insert_text": "top"}),
        )
        .await;
    t.note("insert at 0", r);
    let r = s
        .ok(
            "memory_edit",
            json!({"path": p, "insert_line": 3, "insert_text": "mid1\nmid2"}),
        )
        .await;
    t.note("insert at 3", r);
    let e = s
        .err(
            "memory_edit",
            json!({"path": p, "insert_line": 99, "insert_text": "x"}),
        )
        .await;
    t.text("insert past the end", &e);
    let r = s
        .ok("memory_edit", json!({"path": p, "append_text": "end"}))
        .await;
    t.note("append", r);
    let r = s.ok("memory_read", json!({"path": p})).await;
    assert_eq!(r["content"], "top\nx\nB\nmid1\nmid2\nx\nc\nend");
    t.note("read", r);
    s.stop().await;
}

async fn rename_files_and_folders(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    for p in ["proj/a.md", "proj/sub/b.md", "taken.md"] {
        s.ok(
            "memory_write",
            json!({"path": p, "content": format!("{p}\n")}),
        )
        .await;
    }
    let r = s
        .ok(
            "memory_edit",
            json!({"path": "proj/a.md", "new_path": "/memories/archive/2026/a.md"}),
        )
        .await;
    assert_eq!(r["renamed_from"], "/memories/proj/a.md");
    t.note("rename file", r);
    let e = s
        .err(
            "memory_edit",
            json!({"path": "archive/2026/a.md", "new_path": "taken.md"}),
        )
        .await;
    assert!(e.contains("already exists"), "{e}");
    t.text("rename onto a file", &e);
    let r = s
        .ok(
            "memory_edit",
            json!({"path": "/memories/proj/", "new_path": "/memories/old/proj/"}),
        )
        .await;
    t.note("rename folder", r);
    let e = s
        .err(
            "memory_edit",
            json!({"path": "/memories/old", "new_path": "/memories/old/inner"}),
        )
        .await;
    assert!(e.contains("into itself"), "{e}");
    t.text("folder into itself", &e);
    let e = s
        .err(
            "memory_edit",
            json!({"path": "/memories/nope.md", "new_path": "x.md"}),
        )
        .await;
    assert!(e.contains("does not exist"), "{e}");
    t.text("rename missing", &e);
    let all = s.ok("memory_list", json!({})).await;
    assert_eq!(
        listed(&all).into_iter().map(|e| e.0).collect::<Vec<_>>(),
        [
            "/memories/archive/2026/a.md",
            "/memories/old/proj/sub/b.md",
            "/memories/taken.md"
        ]
    );
    t.note("list", all);
    let r = s
        .ok("memory_read", json!({"path": "old/proj/sub/b.md"}))
        .await;
    assert_eq!(r["content"], "proj/sub/b.md\n");
    let h = s.ok("memory_history", json!({})).await;
    t.note("history", h);
    s.stop().await;
}

async fn delete_files_and_folders(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    for p in [
        "proj/a.md",
        "proj/sub/b.md",
        "proj/sub/deeper/c.md",
        "keep.md",
    ] {
        s.ok("memory_write", json!({"path": p, "content": p})).await;
    }
    let e = s.err("memory_delete", json!({"path": "/memories"})).await;
    assert!(e.contains("store folder itself"), "{e}");
    t.text("delete the store", &e);
    let r = s
        .ok("memory_delete", json!({"path": "proj/sub/b.md"}))
        .await;
    assert_eq!(r["deleted_files"], json!(["/memories/proj/sub/b.md"]));
    t.note("delete file", r);
    let r = s
        .ok(
            "memory_delete",
            json!({"path": "/memories/proj/", "reason": "superseded"}),
        )
        .await;
    assert_eq!(r["deleted_files"].as_array().unwrap().len(), 2, "{r}");
    t.note("delete folder", r);
    let e = s.err("memory_delete", json!({"path": "proj"})).await;
    assert!(e.contains("does not exist"), "{e}");
    t.text("delete again", &e);
    let all = s.ok("memory_list", json!({})).await;
    assert_eq!(listed(&all).len(), 1, "{all}");
    t.note("list", all);
    let h = s
        .ok("memory_history", json!({"path": "/memories/proj/"}))
        .await;
    assert_eq!(versions(&h).len(), 6, "three created, three deleted: {h}");
    t.note("history", h);
    s.stop().await;
}

async fn stale_sha_changes_nothing(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let p = "/memories/state.md";
    let w = s
        .ok("memory_write", json!({"path": p, "content": "v1\n"}))
        .await;
    let v1 = sha256_hex(b"v1\n");
    let stale = sha256_hex(b"something else");
    for (tool, args) in [
        (
            "memory_write",
            json!({"path": p, "content": "v2\n", "expected_sha256": stale}),
        ),
        (
            "memory_edit",
            json!({"path": p, "append_text": "x", "expected_sha256": stale}),
        ),
        (
            "memory_edit",
            json!({"path": p, "new_path": "moved.md", "expected_sha256": stale}),
        ),
        (
            "memory_delete",
            json!({"path": p, "expected_sha256": stale}),
        ),
    ] {
        let e = s.err(tool, args.clone()).await;
        assert!(
            e.contains("precondition failed") && e.contains(&v1),
            "{tool} {args}: the error states the current sha256: {e}"
        );
        t.text(&format!("stale {tool} {args}"), &e);
    }
    let r = s.ok("memory_read", json!({"path": p})).await;
    assert_eq!(r["content"], "v1\n", "nothing changed");
    let h = s.ok("memory_history", json!({"path": p})).await;
    assert_eq!(versions(&h).len(), 1, "{h}");
    assert_eq!(versions(&h)[0]["version"], w["version"]);
    // The content already there with a stale sha256 (a retry whose first reply was lost,
    // or a racer that computed the same change): still an error, which says so.
    let e = s
        .err(
            "memory_write",
            json!({"path": p, "content": "v1\n", "expected_sha256": stale}),
        )
        .await;
    assert!(
        e.contains("precondition failed")
            && e.contains(&v1)
            && e.contains("exactly the content sent"),
        "{e}"
    );
    t.text("stale sha, same content", &e);
    let h = s.ok("memory_history", json!({"path": p})).await;
    assert_eq!(versions(&h).len(), 1, "no version for a refused write: {h}");
    let e = s
        .err(
            "memory_write",
            json!({"path": "/memories/none.md", "content": "x", "expected_sha256": stale}),
        )
        .await;
    assert!(e.contains("does not exist"), "{e}");
    t.text("sha for a missing memory", &e);
    let r = s
        .ok(
            "memory_write",
            json!({"path": p, "content": "v2\n", "expected_sha256": v1}),
        )
        .await;
    assert_eq!(r["created"], false);
    t.note("fresh sha", r);
    s.stop().await;
}

async fn create_only_on_an_existing_path(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let p = "/memories/once.md";
    let r = s
        .ok(
            "memory_write",
            json!({"path": p, "content": "first", "if_absent": true}),
        )
        .await;
    assert_eq!(r["created"], true);
    t.note("create", r);
    let e = s
        .err(
            "memory_write",
            json!({"path": p, "content": "second", "if_absent": true}),
        )
        .await;
    assert!(
        e.contains("already exists") && e.contains(&sha256_hex(b"first")),
        "{e}"
    );
    t.text("create again", &e);
    let e = s
        .err(
            "memory_write",
            json!({"path": p, "content": "first", "if_absent": true}),
        )
        .await;
    assert!(
        e.contains("already exists")
            && e.contains(&sha256_hex(b"first"))
            && e.contains("exactly the content sent"),
        "{e}"
    );
    t.text("create the same", &e);
    let r = s.ok("memory_read", json!({"path": p})).await;
    assert_eq!(r["content"], "first");
    let h = s.ok("memory_history", json!({"path": p})).await;
    assert_eq!(versions(&h).len(), 1, "{h}");
    t.note("history", h);
    s.stop().await;
}

async fn history_and_restore(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let w = s
        .ok("memory_write", json!({"path": "a.md", "content": "one\n"}))
        .await;
    assert_eq!(w["version"], 1);
    s.ok(
        "memory_edit",
        json!({"path": "a.md", "append_text": "two\n"}),
    )
    .await;
    s.ok(
        "memory_edit",
        json!({"path": "a.md", "new_path": "notes/a.md"}),
    )
    .await;
    s.ok(
        "memory_delete",
        json!({"path": "notes/a.md", "reason": "done with it"}),
    )
    .await;
    let h = s
        .call("memory_history", json!({"path": "/memories/"}))
        .await;
    let v = versions(&h.structured);
    let ops: Vec<(&str, &str)> = v
        .iter()
        .map(|v| {
            (
                v["operation"].as_str().unwrap(),
                v["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("deleted", "/memories/notes/a.md"),
            ("renamed", "/memories/notes/a.md"),
            ("modified", "/memories/a.md"),
            ("created", "/memories/a.md"),
        ]
    );
    for version in &v {
        let actor = version["actor"].as_str().unwrap();
        assert!(
            actor.starts_with("rmcp/"),
            "the client is the actor: {actor}"
        );
    }
    t.note("history", h.structured);
    t.text("history text", &h.text);
    let one = s
        .ok("memory_history", json!({"path": "/memories", "version": 1}))
        .await;
    assert_eq!(one["content"], "one\n");
    t.note("version 1", one);
    let r = s
        .ok(
            "memory_write",
            json!({"path": "notes/a.md", "restore_version": 2}),
        )
        .await;
    assert_eq!(r["created"], true);
    t.note("restore deleted", r);
    let r = s
        .ok(
            "memory_write",
            json!({"path": "notes/a.md", "restore_version": 1}),
        )
        .await;
    t.note("restore older", r);
    let r = s.ok("memory_read", json!({"path": "notes/a.md"})).await;
    assert_eq!(r["content"], "one\n");
    let e = s
        .err(
            "memory_write",
            json!({"path": "x.md", "restore_version": 99}),
        )
        .await;
    t.text("restore missing version", &e);
    let page = s.ok("memory_history", json!({"limit": 2})).await;
    let cursor = page["next_cursor"].as_str().expect("more").to_owned();
    t.note("page 1", page);
    let rest = s
        .ok("memory_history", json!({"limit": 10, "cursor": cursor}))
        .await;
    assert_eq!(versions(&rest).len(), 4);
    t.note("page 2", rest);
    let filtered = s
        .ok("memory_history", json!({"operation": "deleted"}))
        .await;
    t.note("only deletions", filtered);
    s.stop().await;

    // The CLI is an actor too.
    let (ok, out, err) = b.cli(&["restore", "notes/a.md", "--version", "2", "--force"]);
    assert!(ok, "{err}");
    t.text("cli restore", &out);
    let s = b.serve(&[]).await;
    let h = s.ok("memory_history", json!({"limit": 1})).await;
    assert_eq!(versions(&h)[0]["actor"], "cli", "{h}");
    t.note("cli version", h);
    s.stop().await;
}

async fn redaction(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let marker = "zanzibar-7c1f-marker";
    let leaked = s
        .ok(
            "memory_write",
            json!({"path": "ops.md", "content": format!("the code is {marker}\n")}),
        )
        .await;
    s.ok(
        "memory_write",
        json!({"path": "ops.md", "content": "rotated\n"}),
    )
    .await;
    s.stop().await;
    let (ok, out, err) = b.cli(&["redact", "--version", &leaked["version"].to_string()]);
    assert!(ok, "{err}");
    t.text("cli redact", &out);
    let s = b.serve(&[]).await;
    let h = s.ok("memory_history", json!({})).await;
    let v = versions(&h);
    assert_eq!(v.len(), 2);
    assert_eq!(
        (v[1]["redacted"].clone(), v[1]["path"].clone()),
        (json!(true), json!(""))
    );
    assert!(v[1]["actor"].as_str().unwrap().starts_with("rmcp/"));
    t.note("history", h);
    let e = s
        .call(
            "memory_history",
            json!({"path": "/memories", "version": leaked["version"]}),
        )
        .await;
    assert!(!e.text.contains(marker), "{}", e.text);
    t.note(
        "redacted version",
        json!([e.is_error, e.text, e.structured]),
    );
    let e = s
        .err(
            "memory_write",
            json!({"path": "ops.md", "restore_version": leaked["version"]}),
        )
        .await;
    assert!(e.contains("redacted"), "{e}");
    t.text("restore redacted", &e);
    let r = s.ok("memory_search", json!({"query": marker})).await;
    assert_eq!(r["total_hits"], 0, "{r}");
    s.stop().await;
}

async fn read_only_stores(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    s.ok(
        "memory_write",
        json!({"path": "fixed.md", "content": "fixed\n"}),
    )
    .await;
    s.stop().await;
    let ro = b.spec("memories", true);
    let rw = b.spec("scratch", false);
    let s = b.start(&["--store", &rw, "--store", &ro]).await;
    let info = s.client.peer_info().unwrap().instructions.clone().unwrap();
    assert!(info.contains("/memories (read-only)"), "{info}");
    assert_eq!(
        s.ok("memory_read", json!({"path": "/memories/fixed.md"}))
            .await["content"],
        "fixed\n"
    );
    for (tool, args) in [
        (
            "memory_write",
            json!({"path": "/memories/x.md", "content": "x"}),
        ),
        (
            "memory_edit",
            json!({"path": "/memories/fixed.md", "append_text": "x"}),
        ),
        (
            "memory_edit",
            json!({"path": "/memories/fixed.md", "new_path": "/memories/moved.md"}),
        ),
        ("memory_delete", json!({"path": "/memories/fixed.md"})),
        (
            "memory_write",
            json!({"path": "/memories/fixed.md", "restore_version": 1}),
        ),
    ] {
        let e = s.err(tool, args.clone()).await;
        assert!(e.contains("read-only"), "{tool} {args}: {e}");
        t.text(&format!("refused {tool} {args}"), &e);
    }
    // Moving out of or into a read-only store is refused too.
    let e = s
        .err(
            "memory_edit",
            json!({"path": "/memories/fixed.md", "new_path": "/scratch/fixed.md"}),
        )
        .await;
    t.text("move out of it", &e);
    s.ok(
        "memory_write",
        json!({"path": "note.md", "content": "to scratch"}),
    )
    .await;
    let e = s
        .err(
            "memory_edit",
            json!({"path": "/scratch/note.md", "new_path": "/memories/note.md"}),
        )
        .await;
    t.text("move into it", &e);
    let r = s
        .ok("memory_read", json!({"path": "/memories/fixed.md"}))
        .await;
    assert_eq!(r["content"], "fixed\n", "unchanged");
    s.stop().await;

    let only_ro = b.start(&["--store", &ro]).await;
    let names = only_ro.tool_names().await;
    assert_eq!(names.len(), 4, "mutating tools are not offered: {names:?}");
    t.note("tools of a read-only server", json!(names));
    only_ro.stop().await;
}

async fn path_policy(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&[]).await;
    let before = b.sb.outside_snapshot();
    let host_canary = b.sb.outside().join("canary.txt").display().to_string();
    let refused = [
        "../x".to_owned(),
        "/memories/../outside/canary.txt".to_owned(),
        "/memories/a/../../x".to_owned(),
        "../../../../../../etc/passwd".to_owned(),
        "/etc/passwd".to_owned(),
        host_canary,
        "/memories/a\\b.md".to_owned(),
        "/memories/c:d.md".to_owned(),
        "/memories/.memdir/x".to_owned(),
    ];
    for path in &refused {
        for (tool, args) in [
            ("memory_write", json!({"path": path, "content": "pwned"})),
            ("memory_read", json!({"path": path})),
            ("memory_delete", json!({"path": path})),
        ] {
            let e = s.err(tool, args).await;
            t.text(&format!("{tool} {path}"), &e);
        }
    }
    // Percent-encodings are never decoded: refused, or a literal name in the store.
    for path in [
        "/memories/%2e%2e/outside/canary.txt",
        "%2e%2e%2f%2e%2e%2foutside%2fcanary.txt",
        "/memories/%2E%2E%5Cx",
    ] {
        let out = s
            .call("memory_write", json!({"path": path, "content": "literal"}))
            .await;
        if !out.is_error {
            assert!(
                out.structured["path"].as_str().unwrap().contains("%2"),
                "{path} was decoded: {}",
                out.structured
            );
        }
        t.note(
            &format!("write {path}"),
            json!([out.is_error, out.text, out.structured]),
        );
    }
    let all = s.ok("memory_list", json!({})).await;
    for (p, _) in listed(&all) {
        assert!(p.starts_with("/memories/"), "{p}");
    }
    t.note("list", all);
    assert_eq!(b.sb.outside_snapshot(), before, "nothing outside changed");
    s.stop().await;
}

async fn anthropic_memory_tool(b: &Backend, t: &mut Transcript) {
    let s = b.serve(&["--tools", "anthropic"]).await;
    let mut step = async |label: &str, args: Value| {
        let out = s.call("memory", args).await;
        t.note(label, json!([out.is_error, out.text]));
        out
    };
    let out = step(
        "view empty",
        json!({"command": "view", "path": "/memories"}),
    )
    .await;
    assert!(!out.is_error);
    assert!(
        out.text
            .starts_with("Here're the files and directories up to 2 levels deep in /memories"),
        "{}",
        out.text
    );
    let out = step(
        "create",
        json!({"command": "create", "path": "/memories/notes.md", "file_text": "alpha\nbeta\ngamma\ndelta\n"}),
    )
    .await;
    assert_eq!(out.text, "File created successfully at: /memories/notes.md");
    step(
        "create deep",
        json!({"command": "create", "path": "/memories/projects/bot/plan.md", "file_text": "x".repeat(1536)}),
    )
    .await;
    let out = step(
        "create again",
        json!({"command": "create", "path": "/memories/notes.md", "file_text": "other"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(out.text, "File /memories/notes.md already exists");
    let out = step("view dir", json!({"command": "view", "path": "/memories"})).await;
    assert!(out.text.contains("/memories/projects/bot"), "{}", out.text);
    let out = step(
        "view file",
        json!({"command": "view", "path": "/memories/notes.md"}),
    )
    .await;
    assert_eq!(
        out.text,
        "Here's the content of /memories/notes.md with line numbers:\n     1\talpha\n     2\tbeta\n     3\tgamma\n     4\tdelta"
    );
    step(
        "view range",
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]}),
    )
    .await;
    let out = step(
        "str_replace",
        json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "gamma", "new_str": "GAMMA"}),
    )
    .await;
    assert!(
        out.text.starts_with("The memory file has been edited."),
        "{}",
        out.text
    );
    let out = step(
        "str_replace absent",
        json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "zzz", "new_str": "y"}),
    )
    .await;
    assert!(out.is_error);
    step(
        "insert",
        json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 1, "insert_text": "inserted"}),
    )
    .await;
    step(
        "rename",
        json!({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/done/notes.md"}),
    )
    .await;
    step(
        "view missing",
        json!({"command": "view", "path": "/memories/notes.md"}),
    )
    .await;
    step(
        "delete",
        json!({"command": "delete", "path": "/memories/projects"}),
    )
    .await;
    let out = step(
        "view after",
        json!({"command": "view", "path": "/memories"}),
    )
    .await;
    assert!(!out.text.contains("projects"), "{}", out.text);
    step(
        "view outside",
        json!({"command": "view", "path": "/memories/../outside"}),
    )
    .await;
    s.stop().await;
}

// ---------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------

/// Makes `folder::CASE` (the case on a folder store) and `postgres::CASE` (on both kinds,
/// with equal transcripts) for every case listed.
macro_rules! contract {
    ($($case:ident: $what:literal,)*) => {
        mod folder {
            $(
                #[doc = $what]
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    crate::run(crate::Kind::Folder, stringify!($case), crate::$case).await;
                }
            )*
        }
        #[cfg(feature = "external-tests")]
        mod postgres {
            $(
                #[doc = $what]
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let name = stringify!($case);
                    let folder = crate::run(crate::Kind::Folder, name, crate::$case).await;
                    let postgres = crate::run(crate::Kind::Postgres, name, crate::$case).await;
                    crate::assert_same(name, &folder, &postgres);
                }
            )*
        }
    };
}

contract! {
    write_and_read: "Write, then read with numbered lines and view_range; bytes come back whole.",
    size_cap: "A memory over the size cap is refused, by write and by edit.",
    secrets_are_refused: "Content with a credential is refused, naming the rule, never echoing it.",
    frontmatter_and_folders_in_list: "Frontmatter description and type appear in the list; folders roll up; pages.",
    search_in_five_languages: "English, Russian, Chinese, Korean and Japanese queries rank the right memory first.",
    edits_replace_and_insert: "str_replace (once, all), insert and append, and their errors.",
    rename_files_and_folders: "Rename a file and a folder; a taken target or a move into itself is refused.",
    delete_files_and_folders: "Delete a file and a folder; each removed file is a version.",
    stale_sha_changes_nothing: "A stale expected_sha256 is an error naming the current hash, even with the same content; nothing changes.",
    create_only_on_an_existing_path: "if_absent on an existing path is an error, even with the same content.",
    history_and_restore: "Versions with operation and actor; restore of deleted and older versions; the CLI actor.",
    redaction: "A redacted version keeps who and when, loses content and path, cannot be restored.",
    read_only_stores: "A `:ro` store refuses every mutation; with only read-only stores, no mutating tool.",
    path_policy: "`..`, host paths, backslashes and the state folder are refused; %2e%2e is never decoded.",
    anthropic_memory_tool: "Anthropic's memory tool answers the same strings on both kinds.",
}
