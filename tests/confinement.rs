//! Confinement end to end (docs/paths.md), through the real binary and the rmcp client:
//! a table of hostile paths sent to every tool, and on-disk fixtures (symlinks out of and
//! inside the store, a hard link to an outside file, FIFOs). Every test ends with the
//! outside folder byte-identical and the server still answering.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{CANARY, Sandbox, Server, sha256_hex};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// A marker that only the canary files contain.
const CANARY_MARK: &str = "CANARY-7f3a";
/// No call may take longer than this.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Calls that touch a FIFO must answer within this.
const FIFO_TIMEOUT: Duration = Duration::from_secs(5);

const SRC: &str = "/memories/src.md";
const SRC_CONTENT: &str = "rename source\n";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// What one tool call answered.
#[derive(Debug)]
struct Reply {
    is_error: bool,
    text: String,
    structured: Value,
}

impl Reply {
    /// Everything the agent sees: the text and the structured content.
    fn seen(&self) -> String {
        format!("{}\n{}", self.text, self.structured)
    }
}

/// Calls a tool; a protocol error or a timeout is an `Err` (a test failure to report).
async fn try_call(s: &Server, limit: Duration, tool: &str, args: &Value) -> Result<Reply, String> {
    let Value::Object(map) = args.clone() else {
        panic!("tool arguments must be an object")
    };
    let request = s
        .client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map));
    match tokio::time::timeout(limit, request).await {
        Err(_) => Err(format!("{tool} {args} did not answer within {limit:?}")),
        Ok(Err(e)) => Err(format!("{tool} {args}: protocol error {e}")),
        Ok(Ok(r)) => Ok(Reply {
            is_error: r.is_error.unwrap_or(false),
            text: r
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect::<Vec<_>>()
                .join("\n"),
            structured: r.structured_content.unwrap_or(Value::Null),
        }),
    }
}

/// One entry of a folder tree, for before/after comparisons.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    Dir(PathBuf),
    File(PathBuf, Vec<u8>),
    Link(PathBuf, PathBuf),
    Other(PathBuf),
}

/// Every entry under `dir` (not following symlinks; FIFOs are never opened).
fn tree(dir: &Path) -> Vec<Node> {
    let mut nodes: Vec<Node> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .min_depth(1)
        .into_iter()
        .map(|e| e.expect("walk"))
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_owned();
            let ft = e.file_type();
            if ft.is_dir() {
                Node::Dir(rel)
            } else if ft.is_symlink() {
                Node::Link(rel, std::fs::read_link(e.path()).unwrap())
            } else if ft.is_file() {
                Node::File(rel, std::fs::read(e.path()).unwrap())
            } else {
                Node::Other(rel)
            }
        })
        .collect();
    nodes.sort();
    nodes
}

/// A running server on a sandbox, with what must never change or leak.
struct Env {
    sb: Sandbox,
    s: Server,
    /// (what, needle): strings no answer may contain.
    forbidden: Vec<(&'static str, String)>,
    outside_files: Vec<(PathBuf, Vec<u8>)>,
    outside_tree: Vec<Node>,
}

impl Env {
    /// Starts a server on a fresh sandbox after `setup` has prepared it.
    async fn start<T>(setup: impl FnOnce(&Sandbox) -> T) -> (Env, T) {
        let sb = Sandbox::new();
        let extra = setup(&sb);
        let tmp = sb.tmp.path().to_string_lossy().into_owned();
        let mut forbidden = vec![
            ("the host temp dir", tmp.clone()),
            ("the canary text", CANARY_MARK.to_owned()),
            ("the canary's sha256", sha256_hex(CANARY.as_bytes())),
        ];
        let real = std::fs::canonicalize(sb.tmp.path())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if real != tmp {
            forbidden.push(("the host temp dir (canonical)", real));
        }
        let outside_files = sb.outside_snapshot();
        let outside_tree = tree(&sb.outside());
        let s = sb.serve().await;
        (
            Env {
                sb,
                s,
                forbidden,
                outside_files,
                outside_tree,
            },
            extra,
        )
    }

    fn store(&self) -> PathBuf {
        self.sb.store()
    }

    /// The first forbidden string in an answer, if any. Needles that the request itself
    /// contains (an agent that sends a host path gets it echoed) are narrowed to the store's
    /// host path, which the agent never gave.
    fn leak(&self, reply: &Reply, request: &str) -> Option<String> {
        let seen = reply.seen();
        let store = (
            "the store's host path",
            self.store().to_string_lossy().into_owned(),
        );
        for (what, needle) in self.forbidden.iter().chain([&store]) {
            if request.contains(needle.as_str()) {
                continue;
            }
            if seen.contains(needle.as_str()) {
                return Some(format!("the answer reveals {what}: {seen}"));
            }
        }
        None
    }

    /// Calls a tool within `limit`; panics on a protocol error, a timeout or a leak.
    async fn call_within(&self, limit: Duration, tool: &str, args: Value) -> Reply {
        let reply = try_call(&self.s, limit, tool, &args)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if let Some(leak) = self.leak(&reply, &args.to_string()) {
            panic!("{tool} {args}: {leak}");
        }
        reply
    }

    async fn call(&self, tool: &str, args: Value) -> Reply {
        self.call_within(CALL_TIMEOUT, tool, args).await
    }

    /// A call that must succeed; returns its structured content.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone()).await;
        assert!(!r.is_error, "{tool} {args} failed: {}", r.text);
        r.structured
    }

    /// A call that must fail; returns the error text.
    async fn err(&self, tool: &str, args: Value) -> String {
        self.err_within(CALL_TIMEOUT, tool, args).await
    }

    async fn err_within(&self, limit: Duration, tool: &str, args: Value) -> String {
        let r = self.call_within(limit, tool, args.clone()).await;
        assert!(r.is_error, "{tool} {args} should fail, got: {}", r.seen());
        assert!(!r.text.is_empty(), "{tool} {args}: an empty error");
        r.text
    }

    /// Nothing outside the store changed (bytes, names, links), and nothing was created
    /// next to the store.
    fn assert_outside_unchanged(&self, when: &str) {
        assert_eq!(
            self.sb.outside_snapshot(),
            self.outside_files,
            "{when}: the outside files changed"
        );
        assert_eq!(
            tree(&self.sb.outside()),
            self.outside_tree,
            "{when}: the outside tree changed"
        );
        let mut top: Vec<String> = std::fs::read_dir(self.sb.tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(
            top,
            ["outside", "store"],
            "{when}: something appeared next to the store"
        );
        assert_eq!(
            std::fs::read_to_string(self.sb.outside().join("canary.txt")).unwrap(),
            CANARY,
            "{when}: the canary changed"
        );
    }

    /// Every test ends here: the canary is intact and the server still answers.
    async fn finish(self) {
        self.assert_outside_unchanged("at the end");
        let listed = self.ok("memory_list", json!({})).await;
        assert!(listed["entries"].is_array(), "{listed}");
        self.ok("memory_list", json!({"path": "/memories", "depth": 1}))
            .await;
        self.s.stop().await;
    }
}

/// The path of a memory relative to the store (`/memories/a` and `a` both give `a`).
fn rel_of(path: &str) -> &str {
    path.strip_prefix("/memories/").unwrap_or(path)
}

/// `path` is a regular file (not a symlink) physically inside the store.
fn assert_store_local_file(store: &Path, rel: &str) -> Vec<u8> {
    let p = store.join(rel);
    let meta = std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(
        meta.is_file(),
        "{rel} should be a regular file, is {meta:?}"
    );
    let real = std::fs::canonicalize(&p).unwrap();
    assert!(
        real.starts_with(std::fs::canonicalize(store).unwrap()),
        "{rel} resolves to {} outside the store",
        real.display()
    );
    std::fs::read(&p).unwrap()
}

// ---------------------------------------------------------------------------------------
// 1. Hostile paths
// ---------------------------------------------------------------------------------------

/// What the policy allows for a hostile path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Every tool refuses it.
    Refused,
    /// A percent-encoded form: refused, or a literal name inside the store, never decoded.
    LiteralOrRefused,
}

struct Hostile {
    label: &'static str,
    path: String,
    expect: Expect,
}

fn hostile_paths(sb: &Sandbox) -> Vec<Hostile> {
    use Expect::{LiteralOrRefused as Lit, Refused as No};
    let host_canary = sb.outside().join("canary.txt");
    let host_store_file = sb.store().join("x.md");
    let mut rows: Vec<(&'static str, String, Expect)> = vec![
        // `..` traversal in many positions
        ("dotdot relative", "../x".into(), No),
        ("dotdot only", "..".into(), No),
        (
            "dotdot into outside",
            "/memories/../outside/canary.txt".into(),
            No,
        ),
        (
            "dotdot twice below a folder",
            "/memories/a/../../x".into(),
            No,
        ),
        ("dotdot trailing", "/memories/a/..".into(), No),
        ("dotdot trailing slash", "/memories/a/../".into(), No),
        (
            "dotdot deep relative",
            "../../../../../../etc/passwd".into(),
            No,
        ),
        (
            "dotdot mid relative",
            "a/../../outside/canary.txt".into(),
            No,
        ),
        ("dotdot as a store", "/../outside/canary.txt".into(), No),
        ("dot segment", "/memories/a/./b.md".into(), No),
        // absolute host paths
        ("host /etc/passwd", "/etc/passwd".into(), No),
        ("host /tmp", "/tmp/x".into(), No),
        (
            "host path of the canary",
            host_canary.to_string_lossy().into(),
            No,
        ),
        (
            "host path inside the store",
            host_store_file.to_string_lossy().into(),
            No,
        ),
        ("proc self root", "/proc/self/root/etc/passwd".into(), No),
        // store prefix confusion
        ("prefix glued", "/memoriesX/a".into(), No),
        ("prefix dash", "/memories-evil/a".into(), No),
        ("prefix case", "/Memories/a".into(), No),
        ("prefix upper", "/MEMORIES/a".into(), No),
        ("prefix dots", "/memories../a".into(), No),
        // percent encodings: never decoded
        ("pct dotdot slash", "/memories/%2e%2e%2fetc".into(), Lit),
        (
            "pct relative",
            "%2e%2e%2f%2e%2e%2foutside%2fcanary.txt".into(),
            Lit,
        ),
        (
            "pct dotdot folder",
            "/memories/%2e%2e/outside/canary.txt".into(),
            Lit,
        ),
        ("pct upper backslash", "%2E%2E%5Cx".into(), Lit),
        (
            "pct double encoded",
            "/memories/%252e%252e%252fx".into(),
            Lit,
        ),
        ("pct dotdot then %2f", "..%2fx".into(), Lit),
        (
            "pct chain",
            "/memories/..%2f..%2foutside%2fcanary.txt".into(),
            Lit,
        ),
        ("pct overlong utf8", "%c0%ae%c0%ae%c0%afx".into(), Lit),
        (
            "pct in the store name",
            "/memories%2f..%2foutside".into(),
            No,
        ),
        // backslash forms
        ("backslash dotdot", "..\\x".into(), No),
        ("backslash unc", "\\\\server\\share".into(), No),
        (
            "backslash chain",
            "/memories/..\\..\\outside\\canary.txt".into(),
            No,
        ),
        ("backslash in a name", "/memories/a\\b.md".into(), No),
        ("backslash device path", "\\\\?\\C:\\x".into(), No),
        // Windows drive letters, streams, URLs
        ("drive backslash", "C:\\x".into(), No),
        ("drive slash", "c:/x".into(), No),
        ("drive relative in a segment", "/memories/C:x".into(), No),
        (
            "alternate data stream",
            "/memories/notes.md:stream".into(),
            No,
        ),
        ("file url", "file:///etc/passwd".into(), No),
        // UNC
        ("unc slashes", "//server/share".into(), No),
        ("unc leading triple slash", "///memories/a.md".into(), No),
        // Windows device names
        ("device CON", "CON".into(), No),
        ("device nul.txt", "/memories/nul.txt".into(), No),
        ("device COM1", "COM1".into(), No),
        ("device LPT9.md", "/memories/notes/LPT9.md".into(), No),
        ("device aux lower", "/memories/aux".into(), No),
        ("device CON space", "/memories/CON .md".into(), No),
        ("device COM superscript", "/memories/COM\u{b9}".into(), No),
        // tilde
        ("tilde", "~".into(), No),
        ("tilde user", "~root/x".into(), No),
        ("tilde home", "~/x".into(), No),
        ("tilde segment", "/memories/~root".into(), No),
        // empty, dots, spaces
        ("empty", "".into(), No),
        ("dot", ".".into(), No),
        ("store dot", "/memories/.".into(), No),
        ("empty segment", "a//b".into(), No),
        ("empty segment after store", "/memories//a.md".into(), No),
        ("three dots", "/memories/...".into(), No),
        ("dotdot space", "/memories/.. ".into(), No),
        (
            "dotdot space folder",
            "/memories/.. /outside/canary.txt".into(),
            No,
        ),
        ("space dot", "/memories/ .".into(), No),
        ("dot space dot", "/memories/. ./x".into(), No),
        ("trailing dot in folder", "/memories/a./b.md".into(), No),
        ("trailing dot", "/memories/notes.md.".into(), No),
        ("trailing space", "/memories/notes.md ".into(), No),
        // C0 controls, DEL, C1 controls
        ("NUL", "/memories/a\u{0}b.md".into(), No),
        (
            "NUL truncation",
            "/memories/a.md\u{0}../../outside/canary.txt".into(),
            No,
        ),
        ("LF", "/memories/a\nb.md".into(), No),
        ("CR", "/memories/a\rb.md".into(), No),
        ("TAB", "/memories/a\tb.md".into(), No),
        ("ESC sequence", "/memories/\u{1b}[31mred.md".into(), No),
        ("DEL", "/memories/a\u{7f}b.md".into(), No),
        ("C1 NEL U+0085", "/memories/a\u{85}b.md".into(), No),
        ("C1 CSI U+009B", "/memories/a\u{9b}b.md".into(), No),
        // format characters
        ("zero-width space", "/memories/a\u{200b}b.md".into(), No),
        ("zero-width dotdot", "/memories/.\u{200b}./x".into(), No),
        ("RTL override", "/memories/evil\u{202e}dm.txt".into(), No),
        ("BOM at start", "\u{feff}/memories/a.md".into(), No),
        ("BOM in a name", "/memories/\u{feff}a.md".into(), No),
        ("zero-width joiner", "/memories/a\u{200d}b.md".into(), No),
        ("word joiner", "/memories/a\u{2060}b.md".into(), No),
        ("soft hyphen", "/memories/a\u{ad}b.md".into(), No),
        ("line separator", "/memories/a\u{2028}b.md".into(), No),
        ("private use", "/memories/a\u{e000}b.md".into(), No),
        // look-alike separators
        (
            "division slash U+2215",
            "/memories/..\u{2215}outside\u{2215}canary.txt".into(),
            No,
        ),
        (
            "fraction slash U+2044",
            "/memories/a\u{2044}b.md".into(),
            No,
        ),
        (
            "fullwidth solidus U+FF0F",
            "/memories/..\u{ff0f}x".into(),
            No,
        ),
        ("big solidus U+29F5", "/memories/a\u{29f5}b.md".into(), No),
        (
            "fullwidth backslash U+FF3C",
            "/memories/..\u{ff3c}x".into(),
            No,
        ),
        // normalisation
        (
            "non-NFC e + combining acute",
            "/memories/e\u{301}.md".into(),
            No,
        ),
        (
            "non-NFC hangul jamo",
            "/memories/\u{1100}\u{1161}.md".into(),
            No,
        ),
        // replacement character (what a lone surrogate or bad UTF-8 becomes)
        (
            "replacement char U+FFFD",
            "/memories/a\u{fffd}b.md".into(),
            No,
        ),
        // length
        ("1025-byte path", over_long_path(), No),
        (
            "256-byte segment",
            format!("/memories/{}", "s".repeat(256)),
            No,
        ),
        (
            "5000-byte path",
            format!("/memories/{}", "a/".repeat(2495)),
            No,
        ),
        // the reserved state folder and temp names
        ("state lock", "/memories/.memdir/lock".into(), No),
        ("state tmp relative", ".memdir/tmp/x".into(), No),
        ("state folder", "/memories/.memdir".into(), No),
        ("temp name upper", "/memories/a/.MEMDIR-tmp-1".into(), No),
        ("temp name", "/memories/.memdir-tmp-1-0".into(), No),
    ];
    assert_eq!(
        rows.iter()
            .find(|r| r.0 == "1025-byte path")
            .unwrap()
            .1
            .len(),
        1025
    );
    assert_eq!(
        rows.iter()
            .find(|r| r.0 == "5000-byte path")
            .unwrap()
            .1
            .len(),
        5000
    );
    rows.drain(..)
        .map(|(label, path, expect)| Hostile {
            label,
            path,
            expect,
        })
        .collect()
}

/// Exactly 1,025 bytes of short, otherwise valid segments.
fn over_long_path() -> String {
    // "/memories/" is 10 bytes; 338 × "ab/" is 1,014; one more byte makes 1,025.
    format!("/memories/{}c", "ab/".repeat(338))
}

/// A path that prints as itself in an error (no escaping or shortening expected).
fn plain(path: &str) -> bool {
    !path.is_empty() && path.len() <= 200 && path.chars().all(|c| c.is_ascii_graphic() || c == ' ')
}

#[tokio::test]
async fn hostile_paths_are_refused_by_every_tool() {
    let (env, table) = Env::start(|sb| {
        std::fs::write(sb.store().join("src.md"), SRC_CONTENT).unwrap();
        hostile_paths(sb)
    })
    .await;
    assert!(table.len() >= 50, "only {} hostile paths", table.len());
    let labels: BTreeSet<&str> = table.iter().map(|h| h.label).collect();
    assert_eq!(labels.len(), table.len(), "labels are unique");

    let store = env.store();
    let mut failures: Vec<String> = Vec::new();
    // Folders the literal percent names may leave behind (all inside the store).
    let mut accepted_literally = 0usize;
    let mut allowed: BTreeSet<PathBuf> = BTreeSet::from([PathBuf::from("src.md")]);

    for h in &table {
        let p = h.path.as_str();
        let calls: Vec<(&str, Value)> = vec![
            ("memory_read", json!({"path": p})),
            ("memory_write", json!({"path": p, "content": "x"})),
            ("memory_list", json!({"path": p})),
            ("memory_edit", json!({"path": p, "append_text": "x"})),
            ("memory_delete", json!({"path": p})),
            ("memory_edit", json!({"path": SRC, "new_path": p})),
            ("memory_search", json!({"query": "x", "path": p})),
        ];
        for (tool, args) in calls {
            let what = format!("[{}] {tool} {args}", h.label);
            let reply = match try_call(&env.s, CALL_TIMEOUT, tool, &args).await {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{what}: {e}"));
                    continue;
                }
            };
            if let Some(leak) = env.leak(&reply, p) {
                failures.push(format!("{what}: {leak}"));
            }
            let renaming = args.get("new_path").is_some();
            if reply.is_error {
                if plain(p) && !reply.text.contains(p) {
                    failures.push(format!(
                        "{what}: the error does not name the path as given: {}",
                        reply.text
                    ));
                }
                if renaming {
                    // A refused move leaves the source where it was.
                    match std::fs::read_to_string(store.join("src.md")) {
                        Ok(c) if c == SRC_CONTENT => {}
                        other => failures.push(format!("{what}: the source changed: {other:?}")),
                    }
                }
                continue;
            }
            if h.expect == Expect::Refused {
                failures.push(format!("{what}: accepted: {}", reply.seen()));
                continue;
            }
            // A literal percent name: it must be exactly that name, inside the store.
            accepted_literally += 1;
            let rel = rel_of(p);
            let on_disk = store.join(rel);
            let mut ancestor = Path::new(rel).parent();
            while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
                allowed.insert(a.to_owned());
                ancestor = a.parent();
            }
            let canonical = format!("/memories/{rel}");
            match tool {
                "memory_write" | "memory_edit" => {
                    if reply.structured["path"] != canonical.as_str() {
                        failures.push(format!(
                            "{what}: answered path {} instead of the literal {canonical}",
                            reply.structured["path"]
                        ));
                    }
                    let want = if renaming {
                        SRC_CONTENT
                    } else if tool == "memory_write" {
                        "x"
                    } else {
                        "x\nx"
                    };
                    match std::fs::symlink_metadata(&on_disk) {
                        Ok(m) if m.is_file() => {
                            let got = std::fs::read_to_string(&on_disk).unwrap();
                            if got.trim_end() != want.trim_end() {
                                failures.push(format!(
                                    "{what}: {rel:?} holds {got:?}, expected {want:?}"
                                ));
                            }
                        }
                        other => failures.push(format!(
                            "{what}: accepted, but no regular file at store/{rel}: {other:?}"
                        )),
                    }
                    if renaming {
                        // Move it back for the next path.
                        let back = try_call(
                            &env.s,
                            CALL_TIMEOUT,
                            "memory_edit",
                            &json!({"path": p, "new_path": SRC}),
                        )
                        .await;
                        match back {
                            Ok(r) if !r.is_error => {}
                            other => {
                                failures.push(format!("{what}: moving back failed: {other:?}"))
                            }
                        }
                        if std::fs::read_to_string(store.join("src.md"))
                            .ok()
                            .as_deref()
                            != Some(SRC_CONTENT)
                        {
                            failures.push(format!("{what}: src.md was not restored"));
                            std::fs::write(store.join("src.md"), SRC_CONTENT).unwrap();
                        }
                    }
                }
                "memory_delete" if std::fs::symlink_metadata(&on_disk).is_ok() => {
                    failures.push(format!("{what}: deleted, but store/{rel} still exists"));
                }
                _ => {}
            }
        }
        env.assert_outside_unchanged(h.label);
    }

    // Nothing exists in the store besides what was created on purpose.
    let state = store.join(".memdir");
    for entry in walkdir::WalkDir::new(&store)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| e.path() != state)
    {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&store).unwrap().to_owned();
        let ok = if entry.file_type().is_dir() {
            allowed.contains(&rel)
        } else {
            rel == Path::new("src.md")
        };
        if !ok {
            failures.push(format!("unexpected entry in the store: {}", rel.display()));
        }
    }
    assert_eq!(
        std::fs::read_to_string(store.join("src.md")).unwrap(),
        SRC_CONTENT
    );
    eprintln!(
        "checked {} hostile paths with 7 calls each; {accepted_literally} calls on percent-encoded \
         names succeeded as literal names inside the store",
        table.len()
    );
    env.finish().await;
    assert!(
        failures.is_empty(),
        "{} of {} hostile paths misbehaved:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn legitimate_names_are_accepted() {
    let (env, ()) = Env::start(|_| ()).await;
    // 255 bytes is the longest segment; 1,024 bytes the longest path.
    let longest_segment = format!("/memories/{}.md", "n".repeat(252));
    let longest_path = format!(
        "/memories/{}/{}/{}/{}",
        "a".repeat(255),
        "b".repeat(255),
        "c".repeat(255),
        "d".repeat(246)
    );
    assert_eq!(longest_path.len(), 1024);
    let names: Vec<(&str, String)> = vec![
        ("spaces", "/memories/my notes/meeting notes.md".into()),
        ("percent", "/memories/100% done.md".into()),
        ("parentheses", "/memories/draft (1).md".into()),
        ("dotdot inside a name", "/memories/v2..3.md".into()),
        ("leading dots in a name", "/memories/..notes.md".into()),
        ("CJK", "/memories/数据库/笔记.md".into()),
        ("Cyrillic", "/memories/заметки.md".into()),
        ("Greek", "/memories/σημειώσεις.md".into()),
        ("NFC accents", "/memories/café crème.md".into()),
        ("emoji", "/memories/🦀 crab.md".into()),
        ("relative", "notes/relative.md".into()),
        ("hidden file", "/memories/.hidden.md".into()),
        ("tilde inside", "/memories/a~b.md".into()),
        ("255-byte segment", longest_segment),
        ("1024-byte path", longest_path),
    ];
    for (i, (label, path)) in names.iter().enumerate() {
        let content = format!("legitimate name {i}\n");
        let canonical = format!("/memories/{}", rel_of(path));
        let w = env
            .ok("memory_write", json!({"path": path, "content": content}))
            .await;
        assert_eq!(w["path"], canonical.as_str(), "[{label}]");
        let r = env.ok("memory_read", json!({"path": path})).await;
        assert_eq!(r["content"], content.as_str(), "[{label}]");
        assert_eq!(r["path"], canonical.as_str(), "[{label}]");
        let on_disk = assert_store_local_file(&env.store(), rel_of(path));
        assert_eq!(on_disk, content.as_bytes(), "[{label}] on disk");
    }
    // Visible ones are listed under their canonical names.
    let listed = env.ok("memory_list", json!({"path": "/memories"})).await;
    let paths: BTreeSet<String> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect();
    for (label, path) in &names {
        if rel_of(path).split('/').any(|seg| seg.starts_with('.')) {
            continue; // hidden entries are not listed
        }
        let canonical = format!("/memories/{}", rel_of(path));
        assert!(
            paths.contains(&canonical),
            "[{label}] not listed: {paths:?}"
        );
    }
    env.finish().await;
}

// ---------------------------------------------------------------------------------------
// 2. On-disk fixtures
// ---------------------------------------------------------------------------------------

const REAL: &str = "real content inside\n";
const INNER: &str = "inner folder content\n";
const KEEP: &str = "kept in the box\n";

/// Outward symlinks planted in the store (relative to the store).
const OUTWARD: &[&str] = &[
    "out_file",
    "out_abs",
    "chain1",
    "chain2",
    "dangling",
    "out_fifo",
    "box/esc_file.md",
];
/// Paths that lead through an outward symlinked folder to an outside file.
const THROUGH: &[&str] = &["out_dir/canary.txt", "box/esc/canary.txt"];

/// Builds the fixtures; returns whether the hard link could be made.
fn fixtures(sb: &Sandbox) -> bool {
    use std::os::unix::fs::symlink;
    let st = sb.store();
    let out = sb.outside();
    std::fs::write(st.join("real.md"), REAL).unwrap();
    std::fs::create_dir(st.join("realdir")).unwrap();
    std::fs::write(st.join("realdir/inner.md"), INNER).unwrap();
    symlink("../outside/canary.txt", st.join("out_file")).unwrap();
    symlink(out.join("canary.txt"), st.join("out_abs")).unwrap();
    symlink("../outside/dir", st.join("out_dir")).unwrap();
    symlink("chain2", st.join("chain1")).unwrap();
    symlink("../outside/canary.txt", st.join("chain2")).unwrap();
    symlink("../outside/missing.txt", st.join("dangling")).unwrap();
    symlink("real.md", st.join("in_link")).unwrap();
    symlink("realdir", st.join("in_dir_link")).unwrap();
    // Outward links one level down.
    std::fs::create_dir(st.join("box")).unwrap();
    std::fs::write(st.join("box/keep.md"), KEEP).unwrap();
    symlink("../../outside/dir", st.join("box/esc")).unwrap();
    symlink("../../outside/canary.txt", st.join("box/esc_file.md")).unwrap();
    // FIFOs: one in the store, one outside behind a symlink.
    let fifo_mode = rustix::fs::Mode::from_raw_mode(0o600);
    rustix::fs::mkfifoat(rustix::fs::CWD, st.join("pipe.md").as_path(), fifo_mode).unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, out.join("fifo").as_path(), fifo_mode).unwrap();
    symlink("../outside/fifo", st.join("out_fifo")).unwrap();
    match std::fs::hard_link(out.join("canary.txt"), st.join("hard.md")) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) => {
            eprintln!(
                "skipping the hard-link fixture: store and outside are on different file systems ({e})"
            );
            false
        }
        Err(e) => panic!("hard link: {e}"),
    }
}

/// `rel` in the store is still the symlink it was made as.
fn assert_still_link(store: &Path, rel: &str) {
    let m = std::fs::symlink_metadata(store.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(
        m.file_type().is_symlink(),
        "{rel} should still be a symlink"
    );
}

/// After an accepted mutation at `rel`: it is a store-local regular file that holds none
/// of the canary; after a refused one the link is untouched.
fn check_mutation(env: &Env, rel: &str, reply: &Reply, was_link: bool) {
    if reply.is_error {
        if was_link {
            assert_still_link(&env.store(), rel);
        }
    } else {
        let bytes = assert_store_local_file(&env.store(), rel);
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY_MARK),
            "{rel}: the canary was copied into the store"
        );
    }
    env.assert_outside_unchanged(rel);
}

#[tokio::test]
async fn outward_symlinks_refuse_reads() {
    let (env, _) = Env::start(fixtures).await;
    for rel in OUTWARD.iter().chain(THROUGH) {
        for path in [format!("/memories/{rel}"), rel.to_string()] {
            let e = env.err("memory_read", json!({"path": path})).await;
            assert!(
                e.contains(rel),
                "the error names the path given ({path}): {e}"
            );
            let e = env
                .err("memory_read", json!({"path": path, "view_range": [1, 1]}))
                .await;
            assert!(e.contains(rel), "{e}");
        }
    }
    // Refused for the right reason where the link leaves the store.
    for rel in ["out_file", "out_abs", "chain1", "out_dir/canary.txt"] {
        let e = env
            .err("memory_read", json!({"path": format!("/memories/{rel}")}))
            .await;
        assert!(e.contains("outside the store"), "{rel}: {e}");
    }
    env.finish().await;
}

#[tokio::test]
async fn outward_symlinks_refuse_writes_edits_and_moves_through_them() {
    let (env, _) = Env::start(fixtures).await;
    let store = env.store();
    // Writes through a symlinked folder: refused, nothing created outside.
    for path in [
        "/memories/out_dir/x.md",
        "/memories/out_dir/canary.txt",
        "/memories/out_dir/new/deep.md",
        "out_dir/y.md",
        "/memories/box/esc/x.md",
        "/memories/box/esc/canary.txt",
        "/memories/chain1/x.md",
        "/memories/dangling/x.md",
    ] {
        let e = env
            .err("memory_write", json!({"path": path, "content": "x"}))
            .await;
        assert!(e.contains(rel_of(path)), "{path}: {e}");
        env.err(
            "memory_write",
            json!({"path": path, "content": "x", "if_absent": true}),
        )
        .await;
        env.assert_outside_unchanged(path);
    }
    // Edits via outward links: refused, or done on a store-local file that never saw the
    // canary.
    for rel in OUTWARD.iter().chain(THROUGH) {
        let path = format!("/memories/{rel}");
        let edits = [
            json!({"path": path, "append_text": "appended"}),
            json!({"path": path, "old_str": CANARY_MARK, "new_str": "pwned"}),
            json!({"path": path, "insert_line": 0, "insert_text": "inserted"}),
        ];
        for args in edits {
            let was_link = std::fs::symlink_metadata(store.join(rel))
                .is_ok_and(|m| m.file_type().is_symlink());
            let r = env.call("memory_edit", args.clone()).await;
            check_mutation(&env, rel, &r, was_link);
        }
        // Edits and writes guarded by the canary's hash must not act as an oracle for it.
        let canary_sha = sha256_hex(CANARY.as_bytes());
        let e = env
            .err(
                "memory_edit",
                json!({"path": path, "append_text": "x", "expected_sha256": canary_sha}),
            )
            .await;
        assert!(e.contains(rel), "{e}");
        let e = env
            .err(
                "memory_write",
                json!({"path": path, "content": "x", "expected_sha256": canary_sha}),
            )
            .await;
        assert!(e.contains(rel), "{e}");
        env.assert_outside_unchanged(rel);
    }
    // Moves into, out of, and of outward links.
    let moves = [
        ("/memories/real.md", "/memories/out_dir/moved.md"),
        ("/memories/real.md", "/memories/box/esc/moved.md"),
        ("/memories/realdir", "/memories/out_dir/realdir"),
        ("/memories/out_dir/canary.txt", "/memories/stolen.md"),
        ("/memories/box/esc/canary.txt", "/memories/stolen2.md"),
        ("/memories/out_file", "/memories/out_dir/link_moved"),
    ];
    for (from, to) in moves {
        env.err("memory_edit", json!({"path": from, "new_path": to}))
            .await;
        env.assert_outside_unchanged(&format!("{from} -> {to}"));
    }
    assert_eq!(
        std::fs::read_to_string(store.join("real.md")).unwrap(),
        REAL
    );
    assert!(store.join("realdir/inner.md").is_file());
    assert!(std::fs::symlink_metadata(store.join("stolen.md")).is_err());
    assert!(std::fs::symlink_metadata(store.join("stolen2.md")).is_err());
    // Moving an outward link itself inside the store: refused, or the link moves and
    // stays unreadable.
    let r = env
        .call(
            "memory_edit",
            json!({"path": "/memories/out_file", "new_path": "/memories/renamed_link"}),
        )
        .await;
    if r.is_error {
        assert_still_link(&store, "out_file");
    } else {
        assert_still_link(&store, "renamed_link");
        env.err("memory_read", json!({"path": "/memories/renamed_link"}))
            .await;
    }
    env.finish().await;
}

#[tokio::test]
async fn writing_at_a_symlink_replaces_the_link_not_the_target() {
    // docs/paths.md: "a symlink planted at the destination is replaced, never followed".
    let (env, _) = Env::start(fixtures).await;
    let store = env.store();
    let mut failures = Vec::new();
    for rel in [
        "out_file",
        "out_abs",
        "chain1",
        "dangling",
        "box/esc_file.md",
    ] {
        let path = format!("/memories/{rel}");
        let content = format!("mine, written at {rel}\n");
        let w = env
            .call("memory_write", json!({"path": path, "content": content}))
            .await;
        env.assert_outside_unchanged(rel);
        if w.is_error {
            // Safe, but not what the policy says: the link is still there, untouched.
            assert_still_link(&store, rel);
            failures.push(format!(
                "memory_write {{path: {path:?}}} was refused instead of replacing the symlink: {}",
                w.text
            ));
            continue;
        }
        assert_eq!(w.structured["path"], path.as_str());
        let on_disk = assert_store_local_file(&store, rel);
        assert_eq!(on_disk, content.as_bytes(), "{rel}");
        let r = env.ok("memory_read", json!({"path": path})).await;
        assert_eq!(r["content"], content.as_str());
    }
    // The rest of the chain is untouched, and the dangling target was never created.
    assert_still_link(&store, "chain2");
    // Under a precondition a link out is refused as a read of it is: its sha256 can only
    // name content no read showed there, and "does not exist" would be untrue.
    let e = env
        .err(
            "memory_write",
            json!({"path": "/memories/out_dir", "content": "mine\n",
                   "expected_sha256": sha256_hex(CANARY.as_bytes())}),
        )
        .await;
    assert!(e.contains("resolves outside the store"), "{e}");
    assert_still_link(&store, "out_dir");
    assert!(std::fs::symlink_metadata(env.sb.outside().join("missing.txt")).is_err());
    env.finish().await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn deleting_symlinks_removes_links_never_targets() {
    let (env, _) = Env::start(fixtures).await;
    let store = env.store();
    let outside = env.sb.outside();
    for path in THROUGH {
        let e = env
            .err(
                "memory_delete",
                json!({"path": format!("/memories/{path}")}),
            )
            .await;
        assert!(e.contains(path), "{e}");
        env.assert_outside_unchanged(path);
    }
    // A hash-guarded delete must not confirm the canary's hash.
    env.err(
        "memory_delete",
        json!({"path": "/memories/out_file", "expected_sha256": sha256_hex(CANARY.as_bytes())}),
    )
    .await;
    assert_still_link(&store, "out_file");
    // Written as a folder, a link or a FIFO is named for what it is, with the way to
    // remove only that name; nothing is removed.
    for (rel, kind) in [("out_dir", "symbolic link"), ("pipe.md", "FIFO")] {
        let e = env
            .err(
                "memory_delete",
                json!({"path": format!("/memories/{rel}/")}),
            )
            .await;
        assert!(
            e.contains(&format!("is a {kind}, not a folder")) && e.contains("without the trailing"),
            "{rel}/: {e}"
        );
        assert!(std::fs::symlink_metadata(store.join(rel)).is_ok(), "{rel}");
        env.assert_outside_unchanged(rel);
    }
    assert_still_link(&store, "out_dir");
    // Every tool that takes a folder path says the same of a FIFO written as one.
    for (tool, args) in [
        ("memory_list", json!({"path": "/memories/pipe.md/"})),
        (
            "memory_search",
            json!({"query": "x", "path": "/memories/pipe.md/"}),
        ),
        ("memory_history", json!({"path": "/memories/pipe.md/"})),
    ] {
        let e = env.err(tool, args).await;
        assert!(e.contains("is a FIFO, not a folder"), "{tool}: {e}");
    }
    // Deleting a link removes the link only.
    for rel in [
        "out_file", "out_abs", "chain1", "dangling", "out_fifo", "out_dir",
    ] {
        env.ok("memory_delete", json!({"path": format!("/memories/{rel}")}))
            .await;
        assert!(
            std::fs::symlink_metadata(store.join(rel)).is_err(),
            "{rel} is gone"
        );
        env.assert_outside_unchanged(rel);
    }
    assert_still_link(&store, "chain2");
    assert!(outside.join("dir/canary.txt").is_file());
    // Deleting a folder holding outward links removes the links, not what they point at.
    env.ok("memory_delete", json!({"path": "/memories/box"}))
        .await;
    assert!(std::fs::symlink_metadata(store.join("box")).is_err());
    env.finish().await;
}

#[tokio::test]
async fn list_and_search_never_show_outside_content() {
    let (env, _) = Env::start(fixtures).await;
    let entries = |v: &Value| -> Vec<String> {
        v["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("no entries: {v}"))
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let outward_prefixes = ["/memories/out_dir/", "/memories/box/esc/"];
    for args in [
        json!({}),
        json!({"path": "/"}),
        json!({"path": "/memories"}),
        json!({"path": "/memories", "depth": 1}),
        json!({"path": "/memories", "depth": 3}),
        json!({"path": "/memories/box"}),
        json!({"path": "/memories/box", "depth": 1}),
    ] {
        let listed = env.ok("memory_list", args.clone()).await;
        for p in entries(&listed) {
            assert!(
                !outward_prefixes.iter().any(|o| p.starts_with(o)),
                "{args}: lists {p} from outside"
            );
            let name = p.rsplit('/').next().unwrap();
            assert!(
                !OUTWARD.iter().any(|o| o.rsplit('/').next() == Some(name)) && name != "pipe.md",
                "{args}: lists {p}, which is not a memory in the store"
            );
        }
    }
    let all = entries(&env.ok("memory_list", json!({})).await);
    for inside in [
        "/memories/real.md",
        "/memories/realdir/inner.md",
        "/memories/box/keep.md",
    ] {
        assert!(all.iter().any(|p| p == inside), "{inside} missing: {all:?}");
    }
    // Listing an outward link or a path through one is refused.
    for rel in [
        "out_dir",
        "out_dir/",
        "box/esc",
        "out_file",
        "chain1",
        "out_dir/canary.txt",
    ] {
        env.err("memory_list", json!({"path": format!("/memories/{rel}")}))
            .await;
    }
    for rel in ["hard.md", "pipe.md", "out_fifo", "dangling"] {
        // Either refused or harmless; never hangs, never leaks (checked by `call`).
        env.call_within(
            FIFO_TIMEOUT,
            "memory_list",
            json!({"path": format!("/memories/{rel}")}),
        )
        .await;
    }
    // Words only the canary holds are found nowhere.
    for query in [
        "CANARY",
        "7f3a",
        "canary-7f3a",
        "\"must never change\"",
        "CANARY*",
        "lives outside",
    ] {
        let r = env.ok("memory_search", json!({"query": query})).await;
        assert_eq!(r["total_hits"], 0, "{query}: {r}");
        assert_eq!(r["hits"], json!([]), "{query}: {r}");
    }
    for scope in [
        "/memories/out_dir",
        "/memories/box/esc",
        "/memories/out_file",
        "/memories/hard.md",
    ] {
        let r = env
            .call("memory_search", json!({"query": "CANARY", "path": scope}))
            .await;
        if !r.is_error {
            assert_eq!(r.structured["total_hits"], 0, "{scope}: {}", r.seen());
        }
    }
    env.finish().await;
}

#[tokio::test]
async fn hard_link_to_outside_is_refused() {
    let (env, hard) = Env::start(fixtures).await;
    if !hard {
        eprintln!("hard link fixture unavailable: only the common checks ran");
        env.finish().await;
        return;
    }
    let store = env.store();
    let e = env
        .err("memory_read", json!({"path": "/memories/hard.md"}))
        .await;
    assert!(e.contains("hard.md"), "{e}");
    assert!(e.to_lowercase().contains("hard link"), "{e}");
    env.err(
        "memory_read",
        json!({"path": "hard.md", "view_range": [1, -1]}),
    )
    .await;
    for args in [
        json!({"path": "/memories/hard.md", "append_text": "appended"}),
        json!({"path": "/memories/hard.md", "old_str": CANARY_MARK, "new_str": "pwned"}),
        json!({"path": "/memories/hard.md", "insert_line": 1, "insert_text": "x"}),
        json!({"path": "/memories/hard.md", "new_path": "/memories/moved.md"}),
    ] {
        let e = env.err("memory_edit", args).await;
        assert!(e.contains("hard.md"), "{e}");
        env.assert_outside_unchanged("edit hard.md");
    }
    assert!(std::fs::symlink_metadata(store.join("moved.md")).is_err());
    let canary_sha = sha256_hex(CANARY.as_bytes());
    env.err(
        "memory_write",
        json!({"path": "/memories/hard.md", "content": "x", "expected_sha256": canary_sha}),
    )
    .await;
    env.err(
        "memory_delete",
        json!({"path": "/memories/hard.md", "expected_sha256": canary_sha}),
    )
    .await;
    let r = env.ok("memory_search", json!({"query": "CANARY"})).await;
    assert_eq!(r["total_hits"], 0, "{r}");
    // A plain write is refused, or replaces the store's link with a file of its own.
    let r = env
        .call(
            "memory_write",
            json!({"path": "/memories/hard.md", "content": "replaced"}),
        )
        .await;
    if !r.is_error {
        assert_eq!(assert_store_local_file(&store, "hard.md"), b"replaced");
    }
    env.assert_outside_unchanged("write hard.md");
    // A plain delete is refused, or unlinks the store's name only.
    env.call("memory_delete", json!({"path": "/memories/hard.md"}))
        .await;
    env.finish().await;
}

#[tokio::test]
async fn fifos_never_hang_the_server() {
    let (env, _) = Env::start(fixtures).await;
    for path in ["/memories/pipe.md", "pipe.md", "/memories/out_fifo"] {
        let e = env
            .err_within(FIFO_TIMEOUT, "memory_read", json!({"path": path}))
            .await;
        assert!(e.contains(rel_of(path)), "{e}");
    }
    let e = env
        .err_within(
            FIFO_TIMEOUT,
            "memory_read",
            json!({"path": "/memories/pipe.md"}),
        )
        .await;
    assert!(e.to_lowercase().contains("fifo"), "names the kind: {e}");
    for args in [
        json!({"path": "/memories/pipe.md", "append_text": "x"}),
        json!({"path": "/memories/pipe.md", "old_str": "a", "new_str": "b"}),
        json!({"path": "/memories/pipe.md", "insert_line": 0, "insert_text": "x"}),
        json!({"path": "/memories/out_fifo", "append_text": "x"}),
    ] {
        env.err_within(FIFO_TIMEOUT, "memory_edit", args).await;
    }
    env.err_within(
        FIFO_TIMEOUT,
        "memory_write",
        json!({"path": "/memories/pipe.md", "content": "x", "if_absent": true}),
    )
    .await;
    // Whatever these answer, they answer promptly.
    for (tool, args) in [
        ("memory_list", json!({})),
        ("memory_list", json!({"path": "/memories", "depth": 1})),
        ("memory_search", json!({"query": "anything at all"})),
        (
            "memory_search",
            json!({"query": "x", "path": "/memories/pipe.md"}),
        ),
        (
            "memory_edit",
            json!({"path": "/memories/pipe.md", "new_path": "/memories/moved_pipe.md"}),
        ),
        (
            "memory_write",
            json!({"path": "/memories/out_fifo", "content": "x"}),
        ),
        (
            "memory_write",
            json!({"path": "/memories/pipe.md", "content": "x"}),
        ),
    ] {
        env.call_within(FIFO_TIMEOUT, tool, args).await;
        env.assert_outside_unchanged(tool);
    }
    // A FIFO where a folder is expected (a write, move or delete beneath it) is named
    // as not a folder at once: opening it as one would wait for a writer forever while
    // holding the store's lock, and every later write would wait behind it.
    for (tool, args) in [
        (
            "memory_write",
            json!({"path": "/memories/pipe.md/new.md", "content": "x"}),
        ),
        (
            "memory_edit",
            json!({"path": "/memories/real.md", "new_path": "/memories/pipe.md/real.md"}),
        ),
        ("memory_delete", json!({"path": "/memories/pipe.md/x.md"})),
    ] {
        let e = env.err_within(FIFO_TIMEOUT, tool, args).await;
        assert!(e.contains("pipe.md"), "{tool}: {e}");
    }
    let r = env
        .call_within(
            FIFO_TIMEOUT,
            "memory_write",
            json!({"path": "/memories/after_fifo.md", "content": "the lock is free\n"}),
        )
        .await;
    assert!(!r.is_error, "a write after the FIFO calls: {}", r.text);
    // The outside FIFO is still a FIFO (nothing replaced or wrote it).
    use std::os::unix::fs::FileTypeExt;
    let ft = std::fs::symlink_metadata(env.sb.outside().join("fifo"))
        .unwrap()
        .file_type();
    assert!(ft.is_fifo());
    env.finish().await;
}

#[tokio::test]
async fn inside_symlinks_are_followed() {
    let (env, _) = Env::start(fixtures).await;
    let store = env.store();
    for path in ["/memories/in_link", "in_link"] {
        let r = env.ok("memory_read", json!({"path": path})).await;
        assert_eq!(r["content"], REAL, "{path}");
    }
    let r = env
        .ok(
            "memory_read",
            json!({"path": "/memories/in_dir_link/inner.md"}),
        )
        .await;
    assert_eq!(r["content"], INNER);
    let listed = env.ok("memory_list", json!({})).await;
    let paths: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/memories/in_link"), "{paths:?}");
    let r = env
        .ok("memory_search", json!({"query": "inner folder content"}))
        .await;
    assert!(r["total_hits"].as_u64().unwrap() >= 1, "{r}");
    // A write through an inside folder link lands inside the store.
    let w = env
        .call(
            "memory_write",
            json!({"path": "/memories/in_dir_link/new.md", "content": "via link\n"}),
        )
        .await;
    if !w.is_error {
        assert_eq!(
            assert_store_local_file(&store, "realdir/new.md"),
            b"via link\n"
        );
    }
    // An edit through an inside link changes what the link reads as.
    let e = env
        .call(
            "memory_edit",
            json!({"path": "/memories/in_link", "append_text": "appended"}),
        )
        .await;
    if !e.is_error {
        let r = env
            .ok("memory_read", json!({"path": "/memories/in_link"}))
            .await;
        assert!(r["content"].as_str().unwrap().contains("appended"), "{r}");
    }
    env.finish().await;
}

/// Regression: a symbolic link inside the store that leads into the store's own state
/// folder (`state -> .memdir`) stayed inside the store, so it passed the escape check,
/// and the history log could be read, forged or deleted through it, and the lock file
/// deleted. Every path that leads into `.memdir` through a link is now refused, by every
/// tool, and nothing under `.memdir` changes; a link at a write's target is replaced.
#[tokio::test]
async fn links_into_the_state_folder_are_refused() {
    let sb = Sandbox::new();
    let store = sb.store();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "a.md", "content": "first\n"}),
    )
    .await;
    s.ok(
        "memory_write",
        json!({"path": "a.md", "content": "second\n"}),
    )
    .await;
    let state = store.join(".memdir");
    let log = state.join("history/log.jsonl");
    let before = std::fs::read(&log).unwrap();
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(target, store.join(name)).unwrap();
    };
    link(".memdir", "state");
    link(".memdir/history", "hist");
    link(".memdir/lock", "lock.md");
    std::fs::create_dir(store.join("box")).unwrap();
    link("..", "box/root");
    let into = [
        "state/history/log.jsonl",
        "state/lock",
        "hist/log.jsonl",
        "box/root/state/lock",
    ];
    let refused = |e: &str, path: &str| {
        assert!(
            e.contains("own state folder") && e.contains(path),
            "{path}: {e}"
        );
    };
    // Through a linked folder, or at a link that is the memory's own name.
    for rel in into.iter().chain(&["lock.md"]) {
        let path = format!("/memories/{rel}");
        refused(&s.err("memory_read", json!({"path": path})).await, rel);
        refused(
            &s.err(
                "memory_edit",
                json!({"path": path, "old_str": "a", "new_str": "b"}),
            )
            .await,
            rel,
        );
    }
    for rel in into {
        let path = format!("/memories/{rel}");
        refused(&s.err("memory_delete", json!({"path": path})).await, rel);
        refused(
            &s.err(
                "memory_edit",
                json!({"path": path, "old_str": "a", "new_str": "b"}),
            )
            .await,
            rel,
        );
        refused(
            &s.err(
                "memory_edit",
                json!({"path": path, "new_path": "/memories/taken.md"}),
            )
            .await,
            rel,
        );
    }
    for rel in ["state/history/log.jsonl", "hist/forged.md", "state/new.md"] {
        let e = s
            .err(
                "memory_write",
                json!({"path": format!("/memories/{rel}"), "content": "forged\n"}),
            )
            .await;
        refused(&e, rel);
    }
    for folder in ["state/", "hist/", "box/root/state/"] {
        let e = s
            .err(
                "memory_list",
                json!({"path": format!("/memories/{folder}")}),
            )
            .await;
        refused(&e, folder.trim_end_matches('/'));
    }
    // A move whose destination's folders would be made through the link makes none.
    let e = s
        .err(
            "memory_edit",
            json!({"path": "/memories/a.md", "new_path": "/memories/state/x/y.md"}),
        )
        .await;
    refused(&e, "state/x/y.md");
    assert!(!state.join("x").exists());
    assert!(store.join("a.md").is_file());
    // The state folder is as it was; history still says who wrote what.
    assert_eq!(std::fs::read(&log).unwrap(), before);
    assert!(state.join("lock").is_file());
    let history = s.ok("memory_history", json!({"path": "a.md"})).await;
    assert_eq!(
        history["versions"].as_array().unwrap().len(),
        2,
        "{history}"
    );
    // Listing and search never show the state folder's files.
    let listed = s.ok("memory_list", json!({})).await.to_string();
    assert!(!listed.contains("log.jsonl"), "{listed}");
    let found = s
        .ok("memory_search", json!({"query": "second"}))
        .await
        .to_string();
    assert!(
        !found.contains("log.jsonl") && !found.contains("lock"),
        "{found}"
    );
    // A write at a link's own name replaces the link, never the state file behind it.
    s.ok(
        "memory_write",
        json!({"path": "lock.md", "content": "mine\n"}),
    )
    .await;
    assert!(!store.join("lock.md").is_symlink());
    assert_eq!(
        std::fs::read_to_string(store.join("lock.md")).unwrap(),
        "mine\n"
    );
    assert!(state.join("lock").is_file());
    assert!(std::fs::read(&log).unwrap().starts_with(&before));
    s.stop().await;
}

/// Regression: a link to a folder inside the store made while the server ran (`loop ->
/// .`, `notes/up -> ..`) was taken by the index for a new folder and walked, so search
/// returned every memory again under each alias path and history recorded each as
/// created outside memdir. A link to a folder is now left out of the index as every walk
/// leaves it out; listing through it by name still works.
#[tokio::test]
async fn links_to_folders_inside_the_store_add_no_second_copies() {
    let sb = Sandbox::new();
    let store = sb.store();
    let s = sb.serve().await;
    s.ok(
        "memory_write",
        json!({"path": "notes/a.md", "content": "normal content here\n"}),
    )
    .await;
    let hits = s
        .ok("memory_search", json!({"query": "normal content"}))
        .await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 1, "{hits}");
    std::os::unix::fs::symlink(".", store.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", store.join("notes/up")).unwrap();
    std::os::unix::fs::symlink("notes", store.join("alias")).unwrap();
    // A search sees outside changes at once: still one hit.
    let hits = s
        .ok("memory_search", json!({"query": "normal content"}))
        .await;
    let paths: Vec<&str> = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/memories/notes/a.md"], "{hits}");
    let history = s.ok("memory_history", json!({})).await;
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{history}");
    // A folder replaced by a link to its new name: found once, under the new name.
    std::fs::rename(store.join("notes"), store.join("notes_old")).unwrap();
    std::os::unix::fs::symlink("notes_old", store.join("notes")).unwrap();
    let hits = s
        .ok("memory_search", json!({"query": "normal content"}))
        .await;
    let paths: Vec<&str> = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/memories/notes_old/a.md"], "{hits}");
    // A restart (a full sync of the index) agrees.
    s.stop().await;
    let s = sb.serve().await;
    let hits = s
        .ok("memory_search", json!({"query": "normal content"}))
        .await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 1, "{hits}");
    // The linked folder still lists by its own name.
    let listed = s.ok("memory_list", json!({"path": "alias/"})).await;
    assert_eq!(
        listed["entries"][0]["path"], "/memories/alias/a.md",
        "{listed}"
    );
    s.stop().await;
}
