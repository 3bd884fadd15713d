//! The console over HTTP through the real binary: `memdir console` (its one-time link)
//! and the console of `memdir serve --http --tokens` (its sign-in form), with raw HTTP
//! requests: the sign-in flow, the security headers, and every attack refused with
//! nothing changed on disk.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{BIN, Sandbox, StderrLog};
use reqwest::{Client, Response, StatusCode};
use tokio::io::{AsyncBufReadExt, BufReader};

const ALICE: &str = "alice-token-0123456789abcdef";
/// The local user `memdir console` records as the actor.
const LOCAL_USER: &str = "console-tester";

/// A console server: `memdir console` or `memdir serve --http`.
struct Served {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`
    base: String,
    /// `memdir console`'s printed link.
    link: Option<String>,
    log: StderrLog,
}

impl Served {
    /// `memdir console --root STORE --listen 127.0.0.1:0 --no-index ARGS`; reads its link.
    async fn console(store: &Path, args: &[&str]) -> Served {
        Served::console_indexed(store, &[&["--no-index"], args].concat()).await
    }

    /// [`Served::console`] with the search index where ARGS say (`--index-dir DIR`).
    async fn console_indexed(store: &Path, args: &[&str]) -> Served {
        let mut child = command()
            .arg("console")
            .arg("--root")
            .arg(store)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .spawn()
            .expect("spawn memdir console");
        let log = StderrLog::read_async(child.stderr.take().unwrap(), "memdir console");
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let link = tokio::time::timeout(std::time::Duration::from_secs(20), stdout.next_line())
            .await
            .expect("the link within 20 s")
            .unwrap()
            .expect("a line on stdout");
        assert!(link.starts_with("http://127.0.0.1:"), "{link}");
        let base = link.split("/?token=").next().unwrap().to_string();
        Served {
            child,
            base,
            link: Some(link),
            log,
        }
    }

    /// `memdir serve --http 127.0.0.1:0 --tokens FILE --root STORE`.
    async fn http(store: &Path, tokens: &Path) -> Served {
        let mut child = command()
            .arg("--root")
            .arg(store)
            .args(["serve", "--http", "127.0.0.1:0", "--no-index", "--tokens"])
            .arg(tokens)
            .spawn()
            .expect("spawn memdir serve --http");
        let mut log = StderrLog::read_async(child.stderr.take().unwrap(), "memdir serve");
        let line = log.wait_for("listening on http://").await;
        let url = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap();
        Served {
            child,
            base: url.trim_end_matches("/mcp").to_string(),
            link: None,
            log,
        }
    }

    fn host(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        client().get(format!("{}{path}", self.base))
    }

    /// A form POST from the console's own origin.
    fn post(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::RequestBuilder {
        client()
            .post(format!("{}{path}", self.base))
            .header("Origin", &self.base)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form(fields))
    }

    /// Signs in by the printed link; gives the `Cookie` header value.
    async fn sign_in_by_link(&self) -> String {
        let r = client()
            .get(self.link.as_deref().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        session_cookie(&r)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn command() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.env("RUST_LOG", "memdir=info")
        .env("USER", LOCAL_USER)
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn form(fields: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        s.append_pair(k, v);
    }
    s.finish()
}

/// `memdir_console=ID` from a response's `Set-Cookie`.
fn session_cookie(r: &Response) -> String {
    let set = r
        .headers()
        .get("set-cookie")
        .expect("a Set-Cookie header")
        .to_str()
        .unwrap();
    set.split(';').next().unwrap().to_string()
}

/// The value of the first `name="csrf" value="…"` of a page.
fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    page[at..at + 64].to_string()
}

/// Every file of the store and its history log, with its bytes.
fn snapshot(store: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = walkdir::WalkDir::new(store)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let rel = e.path().strip_prefix(store).unwrap();
            !rel.starts_with(".memdir") || rel.ends_with("log.jsonl")
        })
        .map(|e| (e.path().to_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

/// The security headers every console response carries.
fn assert_hardened(r: &Response, what: &str) {
    let h = r.headers();
    assert_eq!(
        h.get("content-security-policy")
            .and_then(|v| v.to_str().ok()),
        Some(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        "{what}"
    );
    assert_eq!(
        h.get("x-content-type-options").map(|v| v.as_bytes()),
        Some(&b"nosniff"[..]),
        "{what}"
    );
    assert_eq!(
        h.get("referrer-policy").map(|v| v.as_bytes()),
        Some(&b"no-referrer"[..]),
        "{what}"
    );
}

fn store_with_a_memory(sandbox: &Sandbox) -> PathBuf {
    let store = sandbox.store();
    std::fs::write(store.join("note.md"), "# Note\n\nfirst version\n").unwrap();
    store
}

#[tokio::test]
async fn the_link_signs_in_once_and_leaves_no_token_behind() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(&store, &[]).await;
    let link = served.link.clone().unwrap();
    let token = link.split("token=").nth(1).unwrap().to_string();
    assert_eq!(token.len(), 64);

    // Without a session: the sign-in page, which names no token.
    let r = served.get("/").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_hardened(&r, "sign-in page");

    let r = client().get(&link).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/");
    assert_hardened(&r, "sign-in redirect");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    for part in ["HttpOnly", "SameSite=Strict", "Max-Age=", "Path=/"] {
        assert!(set.contains(part), "{set} lacks {part}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert!(!set.contains(&token), "the cookie is not the token");
    let cookie = session_cookie(&r);

    for path in [
        "/",
        "/folder?path=%2Fmemories%2F",
        "/memory?path=%2Fmemories%2Fnote.md",
        "/search?q=version",
        "/edit?path=%2Fmemories%2Fnote.md",
    ] {
        let r = served
            .get(path)
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_hardened(&r, path);
        let page = r.text().await.unwrap();
        assert!(!page.contains(&token), "{path} shows the token");
        assert!(page.contains("note.md") || path == "/", "{path}: {page}");
    }
    let css = served.get("/console.css").send().await.unwrap();
    assert_eq!(css.status(), StatusCode::OK);
    assert_hardened(&css, "style sheet");
    assert!(
        css.text()
            .await
            .unwrap()
            .contains("prefers-color-scheme: dark")
    );

    // Spent: the same link signs nobody in again.
    let r = client().get(&link).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get("set-cookie").is_none());
    // A signed-in browser opening it again is only sent to a URL without it.
    let r = client()
        .get(&link)
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(r.headers().get("set-cookie").is_none());

    // Signing out ends the session.
    let page = served
        .get("/")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = csrf_of(&page);
    let r = served
        .post("/signout", &[("csrf", &csrf)])
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let r = served
        .get("/")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(
        !served.log.text().contains(&token),
        "the log holds the token"
    );
}

#[tokio::test]
async fn attacks_are_refused_and_change_nothing() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(&store, &["--max-file-bytes", "1000"]).await;
    let cookie = served.sign_in_by_link().await;
    let page = served
        .get("/edit?path=%2Fmemories%2Fnote.md")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = csrf_of(&page);
    let sha = common::sha256_hex(b"# Note\n\nfirst version\n");
    let before = snapshot(&store);
    let edit = |csrf: &str| {
        vec![
            ("csrf".to_string(), csrf.to_string()),
            ("path".into(), "/memories/note.md".into()),
            ("sha256".into(), sha.clone()),
            ("content".into(), "changed by an attacker\n".into()),
        ]
    };
    let fields = |v: &[(String, String)]| {
        form(
            &v.iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect::<Vec<_>>(),
        )
    };
    let good = fields(&edit(&csrf));
    let other_port = format!(
        "http://127.0.0.1:{}",
        1 + served
            .base
            .rsplit(':')
            .next()
            .unwrap()
            .parse::<u16>()
            .unwrap()
            % 60000
    );
    let link = served.link.clone().unwrap();
    let huge = format!("{good}&pad={}", "x".repeat(9 * 1024 * 1024));

    // (what, method, url, headers, body, expected status)
    type Case<'a> = (
        &'a str,
        &'a str,
        String,
        Vec<(&'a str, String)>,
        String,
        u16,
    );
    let post_url = format!("{}/edit", served.base);
    let form_type = (
        "Content-Type",
        "application/x-www-form-urlencoded".to_string(),
    );
    let origin = ("Origin", served.base.clone());
    let with_cookie = ("Cookie", cookie.clone());
    let cases: Vec<Case> = vec![
        (
            "no session",
            "POST",
            post_url.clone(),
            vec![form_type.clone(), origin.clone()],
            good.clone(),
            401,
        ),
        (
            "invalid session",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                origin.clone(),
                ("Cookie", format!("memdir_console={}", "0".repeat(64))),
            ],
            good.clone(),
            401,
        ),
        (
            "cross-origin POST",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                with_cookie.clone(),
                ("Origin", "http://evil.example".into()),
            ],
            good.clone(),
            403,
        ),
        (
            "another local origin",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                with_cookie.clone(),
                ("Origin", other_port),
            ],
            good.clone(),
            403,
        ),
        (
            "Origin null without fetch metadata",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                with_cookie.clone(),
                ("Origin", "null".into()),
            ],
            good.clone(),
            403,
        ),
        (
            "Origin null from another site",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                with_cookie.clone(),
                ("Origin", "null".into()),
                ("Sec-Fetch-Site", "cross-site".into()),
            ],
            good.clone(),
            403,
        ),
        (
            "own Origin, but a same-site fetch",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                with_cookie.clone(),
                origin.clone(),
                ("Sec-Fetch-Site", "same-site".into()),
            ],
            good.clone(),
            403,
        ),
        (
            "no Origin",
            "POST",
            post_url.clone(),
            vec![form_type.clone(), with_cookie.clone()],
            good.clone(),
            403,
        ),
        (
            "missing CSRF",
            "POST",
            post_url.clone(),
            vec![form_type.clone(), with_cookie.clone(), origin.clone()],
            fields(&edit(""))[5..].to_string(),
            403,
        ),
        (
            "wrong CSRF",
            "POST",
            post_url.clone(),
            vec![form_type.clone(), with_cookie.clone(), origin.clone()],
            fields(&edit(&"0".repeat(64))),
            403,
        ),
        (
            "foreign Host",
            "POST",
            post_url.clone(),
            vec![
                form_type.clone(),
                with_cookie.clone(),
                ("Origin", "http://evil.example".into()),
                ("Host", "evil.example".into()),
            ],
            good.clone(),
            403,
        ),
        (
            "foreign Host, GET",
            "GET",
            format!("{}/", served.base),
            vec![with_cookie.clone(), ("Host", "evil.example".into())],
            String::new(),
            403,
        ),
        (
            "oversized body",
            "POST",
            post_url.clone(),
            vec![form_type.clone(), with_cookie.clone(), origin.clone()],
            huge,
            413,
        ),
        (
            "spent link, no cookie",
            "GET",
            link.clone(),
            vec![],
            String::new(),
            401,
        ),
        (
            "token as a query elsewhere",
            "GET",
            format!(
                "{}/folder?path=%2Fmemories%2F&token={}",
                served.base,
                link.split("token=").nth(1).unwrap()
            ),
            vec![],
            String::new(),
            401,
        ),
        (
            "sign-in form on a link console",
            "POST",
            format!("{}/signin", served.base),
            vec![form_type.clone(), origin.clone()],
            form(&[("token", link.split("token=").nth(1).unwrap())]),
            401,
        ),
    ];
    for (what, method, url, headers, body, status) in cases {
        let mut req = match method {
            "GET" => client().get(&url),
            _ => client().post(&url).body(body),
        };
        for (k, v) in &headers {
            req = req.header(*k, v);
        }
        let r = match req.send().await {
            Ok(r) => r,
            // Refused while it was still being sent: the server answered and closed.
            Err(e) if status == 413 => {
                assert!(e.is_request() || e.is_body(), "{what}: {e:?}");
                assert_eq!(snapshot(&store), before, "{what} changed the store");
                continue;
            }
            Err(e) => panic!("{what}: {e:?}"),
        };
        assert_eq!(r.status().as_u16(), status, "{what}");
        assert_hardened(&r, what);
        assert!(r.headers().get("set-cookie").is_none(), "{what}");
        assert_eq!(snapshot(&store), before, "{what} changed the store");
    }
    assert!(
        !served.log.text().contains(&csrf),
        "the log holds the CSRF token"
    );

    // The same edit, done right, goes through as the local user.
    let r = client()
        .post(&post_url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Origin", &served.base)
        .header("Cookie", &cookie)
        .body(good)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(store.join("note.md")).unwrap(),
        "changed by an attacker\n"
    );
    let log = std::fs::read_to_string(store.join(".memdir/history/log.jsonl")).unwrap();
    assert!(
        log.contains(&format!("\"actor\":\"{LOCAL_USER}\"")),
        "{log}"
    );
}

#[tokio::test]
async fn editing_with_a_stale_sha256_shows_the_conflict_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let page = served
        .get("/edit?path=%2Fmemories%2Fnote.md")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = csrf_of(&page);
    let old_sha = common::sha256_hex(b"# Note\n\nfirst version\n");
    // Someone else changes it meanwhile.
    std::fs::write(store.join("note.md"), "# Note\n\ntheir version\n").unwrap();
    let before = snapshot(&store);
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &old_sha),
                ("content", "# Note\r\n\r\nmy version\r\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(page.contains("− their version"), "{page}");
    assert!(page.contains("+ my version"), "{page}");
    assert_eq!(snapshot(&store), before);
    // The conflict page's form carries their sha256: saving it replaces theirs.
    let their_sha = common::sha256_hex(b"# Note\n\ntheir version\n");
    assert!(page.contains(&their_sha));
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &their_sha),
                ("content", "# Note\r\n\r\nmy version\r\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(store.join("note.md")).unwrap(),
        "# Note\n\nmy version\n"
    );
}

#[tokio::test]
async fn editing_a_link_out_of_the_store_is_refused_as_reading_it_is() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let outside = sandbox.outside();
    std::fs::write(outside.join("secret.md"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), store.join("out.md")).unwrap();
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let r = served
        .get("/edit?path=%2Fmemories%2Fout.md")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let page = served
        .get("/edit?path=%2Fmemories%2Fnote.md")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = csrf_of(&page);
    let before = sandbox.outside_snapshot();
    // A forged save naming the outside file's own sha256: the same refusal, not
    // "deleted meanwhile", and nothing written on either side of the link.
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/out.md"),
                ("sha256", &common::sha256_hex(b"outside\n")),
                ("content", "mine\r\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let page = r.text().await.unwrap();
    assert!(page.contains("resolves outside the store"), "{page}");
    assert!(!page.contains("deleted meanwhile"), "{page}");
    assert!(
        std::fs::symlink_metadata(store.join("out.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(sandbox.outside_snapshot(), before);
}

#[tokio::test]
async fn create_and_delete_with_a_reason_and_read_only_refuses() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let ro = sandbox.outside();
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::write(ro.join("fixed.md"), "fixed\n").unwrap();
    let ro_spec = format!("ro={}:ro", ro.display());
    let served = Served::console(&store, &["--store", &ro_spec]).await;
    let cookie = served.sign_in_by_link().await;
    let page = served
        .get("/")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("read-only"), "{page}");
    let csrf = csrf_of(&page);

    let r = served
        .post(
            "/new",
            &[
                ("csrf", &csrf),
                ("folder", "/memories/"),
                ("name", "ideas/new.md"),
                ("content", "a new idea\r\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(store.join("ideas/new.md")).unwrap(),
        "a new idea\n"
    );
    // Create-only: an existing memory is not replaced.
    let r = served
        .post(
            "/new",
            &[
                ("csrf", &csrf),
                ("folder", "/memories/"),
                ("name", "note.md"),
                ("content", "clobbered"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(
        std::fs::read_to_string(store.join("note.md"))
            .unwrap()
            .contains("first version")
    );

    // Delete needs a reason, and keeps it.
    let sha = common::sha256_hex(b"a new idea\n");
    let r = served
        .post(
            "/delete",
            &[
                ("csrf", &csrf),
                ("path", "/memories/ideas/new.md"),
                ("sha256", &sha),
                ("reason", " "),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(store.join("ideas/new.md").exists());
    let r = served
        .post(
            "/delete",
            &[
                ("csrf", &csrf),
                ("path", "/memories/ideas/new.md"),
                ("sha256", &sha),
                ("reason", "superseded by note.md"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(!store.join("ideas/new.md").exists());
    let log = std::fs::read_to_string(store.join(".memdir/history/log.jsonl")).unwrap();
    assert!(log.contains("superseded by note.md"), "{log}");

    // A read-only store refuses every change.
    let before = snapshot(&ro);
    let fixed_sha = common::sha256_hex(b"fixed\n");
    for (path, fields) in [
        (
            "/edit",
            vec![
                ("path", "/ro/fixed.md"),
                ("sha256", fixed_sha.as_str()),
                ("content", "x"),
            ],
        ),
        (
            "/new",
            vec![("folder", "/ro/"), ("name", "n.md"), ("content", "x")],
        ),
        (
            "/delete",
            vec![
                ("path", "/ro/fixed.md"),
                ("sha256", fixed_sha.as_str()),
                ("reason", "x"),
            ],
        ),
        (
            "/rename",
            vec![
                ("path", "/ro/fixed.md"),
                ("sha256", fixed_sha.as_str()),
                ("new_path", "/ro/moved.md"),
            ],
        ),
        (
            "/restore",
            vec![
                ("path", "/ro/fixed.md"),
                ("version", "1"),
                ("sha256", fixed_sha.as_str()),
            ],
        ),
        ("/redact", vec![("store", "ro"), ("version", "1")]),
    ] {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields);
        let r = served
            .post(path, &all)
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}");
        assert_eq!(snapshot(&ro), before, "{path}");
    }
    // A store no one has is not found, rather than read-only.
    for (path, fields) in [
        ("/redact", vec![("store", "nosuch"), ("version", "1")]),
        ("/import", vec![("store", "nosuch"), ("archive", "")]),
    ] {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields);
        let r = served
            .post(path, &all)
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(r.text().await.unwrap().contains("no store is named nosuch"));
    }
    for path in ["/redact?store=nosuch&version=1", "/import?store=nosuch"] {
        let r = served
            .get(path)
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let page = served
        .get("/memory?path=%2Fro%2Ffixed.md")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("/edit?"), "{page}");
    assert!(!page.contains("/rename?"), "{page}");
}

#[tokio::test]
async fn serve_http_signs_in_by_form_beside_mcp() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let tokens = sandbox.outside().with_extension("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let served = Served::http(&store, &tokens).await;
    let before = snapshot(&store);

    // A token in a URL is never a sign-in.
    let r = served
        .get(&format!("/?token={ALICE}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get("set-cookie").is_none());
    assert!(r.text().await.unwrap().contains("never taken from a URL"));
    // A wrong token, or a form from another site, signs nobody in.
    let r = served
        .post("/signin", &[("token", "not-a-token-0123456789")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get("set-cookie").is_none());
    let r = client()
        .post(format!("{}/signin", served.base))
        .header("Origin", "http://evil.example")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form(&[("token", ALICE)]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.headers().get("set-cookie").is_none());
    let r = client()
        .post(format!("{}/signin", served.base))
        .header(
            "Host",
            format!("evil.example:{}", served.host().rsplit(':').next().unwrap()),
        )
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form(&[("token", ALICE)]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // Before any token is checked, a sign-in form is read only up to a few KiB: a larger
    // one, declared or sent, is refused unread.
    let padding = "x".repeat(64 * 1024);
    let r = served
        .post("/signin", &[("token", ALICE), ("padding", &padding)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(r.headers().get("set-cookie").is_none());

    // The form, behind a TLS proxy: a Secure cookie, and a redirect without the token.
    let r = served
        .post("/signin", &[("token", ALICE)])
        .header("X-Forwarded-Proto", "https")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.contains("; Secure") && set.contains("HttpOnly"),
        "{set}"
    );
    let cookie = session_cookie(&r);
    let page = served
        .get("/")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("signed in as alice"), "{page}");
    assert!(!page.contains(ALICE));
    assert_eq!(snapshot(&store), before);
    // Signed in, the sign-in page (a bookmark, the back button) only leads on to `/`;
    // without a session it is the form.
    let r = served
        .get("/signin")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/");
    let r = served.get("/signin").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("name=\"token\""));

    // A change is a version by the token's name.
    let csrf = csrf_of(&page);
    let sha = common::sha256_hex(b"# Note\n\nfirst version\n");
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &sha),
                ("content", "by alice\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let log = std::fs::read_to_string(store.join(".memdir/history/log.jsonl")).unwrap();
    assert!(log.contains("\"actor\":\"alice\""), "{log}");

    // /mcp and /healthz are as they were; an unknown path is 404 with the headers.
    let r = served.get("/healthz").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = served.get("/etc/passwd").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_hardened(&r, "404");
    assert!(
        !served.log.text().contains(ALICE),
        "the log holds the token"
    );

    // Revoking the token (the file re-read on SIGHUP) ends its sessions.
    #[cfg(unix)]
    {
        let mut served = served;
        std::fs::write(&tokens, "bob bob-token-0123456789abcdef01\n").unwrap();
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(served.child.id().unwrap() as i32).unwrap(),
            rustix::process::Signal::HUP,
        )
        .unwrap();
        served.log.wait_for("tokens re-read").await;
        let r = served
            .get("/")
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(
            r.headers()["set-cookie"]
                .to_str()
                .unwrap()
                .contains("Max-Age=0")
        );
        assert!(
            r.text()
                .await
                .unwrap()
                .contains("no longer in the server's tokens file")
        );
    }
}

#[tokio::test]
async fn console_on_a_fresh_machine_lists_the_default_store() {
    let sandbox = Sandbox::new();
    let home = sandbox.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut child = command()
        .arg("console")
        .env_remove("MEMDIR_ROOT")
        .env_remove("MEMDIR_STORES")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .spawn()
        .expect("spawn memdir console");
    let _log = StderrLog::read_async(child.stderr.take().unwrap(), "memdir console");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let link = tokio::time::timeout(std::time::Duration::from_secs(20), stdout.next_line())
        .await
        .expect("the link within 20 s")
        .unwrap()
        .expect("a line on stdout");
    assert!(link.starts_with("http://127.0.0.1:"), "{link}");
    let base = link.split("/?token=").next().unwrap().to_string();
    let r = client().get(&link).send().await.unwrap();
    let cookie = session_cookie(&r);
    let page = client()
        .get(format!("{base}/"))
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(">/memories/<"), "{page}");
    assert!(home.join(".local/share/memdir/memories").is_dir());
    let _ = child.start_kill();
}

#[tokio::test]
async fn serve_http_without_tokens_keeps_the_console_closed() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let mut child = command()
        .arg("--root")
        .arg(&store)
        .args(["serve", "--http", "127.0.0.1:0", "--no-index"])
        .spawn()
        .expect("spawn memdir serve --http");
    let mut log = StderrLog::read_async(child.stderr.take().unwrap(), "memdir serve");
    let line = log.wait_for("listening on http://").await;
    let base = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .trim_end_matches("/mcp")
        .to_string();
    for path in ["/", "/memory?path=%2Fmemories%2Fnote.md", "/signin"] {
        let r = client().get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}");
        assert_hardened(&r, path);
        assert!(r.text().await.unwrap().contains("--tokens"), "{path}");
    }
    let _ = child.start_kill();
}

/// The records of a store's history log, oldest first.
fn history_log(store: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(store.join(".memdir/history/log.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The number of the newest version of the store whose content has `sha`.
fn version_with(store: &Path, sha: &str) -> u64 {
    history_log(store)
        .iter()
        .rev()
        .find(|r| r["sha256"] == sha)
        .unwrap_or_else(|| panic!("a version with {sha}"))["version"]
        .as_u64()
        .unwrap()
}

/// A signed-in page's body, with its status checked.
async fn page_of(served: &Served, cookie: &str, path: &str, status: StatusCode) -> String {
    let r = served
        .get(path)
        .header("Cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), status, "{path}");
    assert_hardened(&r, path);
    r.text().await.unwrap()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn history_diff_restore_and_redact_are_versions_by_the_person() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let first = "# Note\n\nfirst version\n";
    let second = "# Note\n\nsecond version\n";
    let page = page_of(
        &served,
        &cookie,
        "/edit?path=%2Fmemories%2Fnote.md",
        StatusCode::OK,
    )
    .await;
    let csrf = csrf_of(&page);
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &common::sha256_hex(first.as_bytes())),
                ("content", second),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let v1 = version_with(&store, &common::sha256_hex(first.as_bytes()));
    let v2 = version_with(&store, &common::sha256_hex(second.as_bytes()));

    // The timeline of the memory and of its folder: operation, actor, time, size.
    let at2 = history_log(&store)
        .iter()
        .find(|r| r["version"] == v2)
        .unwrap()["at"]
        .as_str()
        .unwrap()
        .to_string();
    for path in ["/memories/note.md", "/memories/"] {
        let page = page_of(
            &served,
            &cookie,
            &format!("/history?path={}", enc(path)),
            StatusCode::OK,
        )
        .await;
        for shown in ["modified", LOCAL_USER, &at2, "/memories/note.md", "23 B"] {
            assert!(page.contains(shown), "{path} shows {shown}: {page}");
        }
        assert!(page.contains(&format!("value=\"{v1}\"")), "{path}: {page}");
    }

    // The diff between the two versions.
    let diff = page_of(
        &served,
        &cookie,
        &format!("/diff?store=memories&from={v1}&to={v2}"),
        StatusCode::OK,
    )
    .await;
    assert!(diff.contains("− first version"), "{diff}");
    assert!(diff.contains("+ second version"), "{diff}");
    assert!(diff.contains("  # Note"), "{diff}");
    let missing = page_of(
        &served,
        &cookie,
        "/diff?store=memories&from=1&to=999",
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(missing.contains("has no version 999"), "{missing}");

    // Restore needs the CSRF token; then it is a new version by the person.
    let before = snapshot(&store);
    let v1s = v1.to_string();
    let r = served
        .post(
            "/restore",
            &[("path", "/memories/note.md"), ("version", &v1s)],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(snapshot(&store), before);
    let version_page = page_of(
        &served,
        &cookie,
        &format!("/version?store=memories&version={v1}"),
        StatusCode::OK,
    )
    .await;
    assert!(version_page.contains("first version"), "{version_page}");
    assert!(
        version_page.contains("action=\"/restore\""),
        "{version_page}"
    );
    let second_sha = common::sha256_hex(second.as_bytes());
    assert!(
        version_page.contains(&format!("name=\"sha256\" value=\"{second_sha}\"")),
        "the restore form carries the sha256 of the memory now: {version_page}"
    );
    // A sha256 other than the memory's: the conflict, nothing written.
    let restore = |sha: String| {
        served
            .post(
                "/restore",
                &[
                    ("csrf", csrf.as_str()),
                    ("path", "/memories/note.md"),
                    ("version", v1s.as_str()),
                    ("sha256", sha.as_str()),
                ],
            )
            .header("Cookie", &cookie)
    };
    let before = snapshot(&store);
    for stale in [common::sha256_hex(first.as_bytes()), "absent".into()] {
        let r = restore(stale.clone()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT, "{stale}");
        let page = r.text().await.unwrap();
        assert!(page.contains("changed meanwhile"), "{page}");
        assert!(page.contains("− second version"), "{page}");
        assert!(page.contains("+ first version"), "{page}");
        assert!(
            page.contains(&second_sha),
            "restore anyway carries theirs: {page}"
        );
        assert_eq!(snapshot(&store), before, "{stale}");
    }
    let r = restore(second_sha.clone()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(store.join("note.md")).unwrap(),
        first
    );
    let log = history_log(&store);
    let last = log.last().unwrap();
    assert_eq!(last["actor"], LOCAL_USER);
    assert_eq!(last["op"], "modified");
    assert_eq!(
        last["sha256"],
        common::sha256_hex(first.as_bytes()).as_str()
    );

    // Redaction: the confirmation names path, version and time, and changes nothing.
    let before = snapshot(&store);
    let confirm = page_of(
        &served,
        &cookie,
        &format!("/redact?store=memories&version={v2}"),
        StatusCode::OK,
    )
    .await;
    for shown in ["/memories/note.md", &format!(">{v2}<"), &at2] {
        assert!(
            confirm.contains(shown),
            "the confirmation names {shown}: {confirm}"
        );
    }
    assert_eq!(snapshot(&store), before, "a GET erases nothing");
    let v2s = v2.to_string();
    let r = served
        .post(
            "/redact",
            &[
                ("csrf", "0".repeat(64).as_str()),
                ("store", "memories"),
                ("version", &v2s),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(snapshot(&store), before);
    let r = served
        .post(
            "/redact",
            &[("csrf", &csrf), ("store", "memories"), ("version", &v2s)],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let redacted = history_log(&store)
        .into_iter()
        .find(|r| r["version"] == v2)
        .unwrap();
    assert_eq!(redacted["redacted"], true, "{redacted}");
    assert_eq!(redacted["path"], "", "{redacted}");
    page_of(
        &served,
        &cookie,
        &format!("/diff?store=memories&from={v1}&to={v2}"),
        StatusCode::GONE,
    )
    .await;
    let timeline = page_of(
        &served,
        &cookie,
        "/history?path=%2Fmemories%2F",
        StatusCode::OK,
    )
    .await;
    assert!(timeline.contains("redacted"), "{timeline}");
    assert!(!timeline.contains("second version"));
}

#[tokio::test]
async fn history_pages_show_hostile_actors_paths_and_contents_as_text() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
    let payload = "<script>window.__pwned=1</script>";
    let name_payload = "<img src=x onerror=\"window.__pwned=1\">";
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    std::fs::create_dir_all(&store).unwrap();
    // An agent whose client name is a payload writes a hostile path twice.
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("--root")
        .arg(&store)
        .args(["serve", "--no-index"])
        .env("RUST_LOG", "memdir=warn")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        );
    let (transport, _log) = common::spawn_mcp(cmd);
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(payload, "1"),
    )
    .serve(transport)
    .await
    .expect("MCP handshake");
    let path = format!("/memories/{name_payload}.md");
    for content in [format!("one {payload}\n"), format!("two {payload}\n")] {
        let args = serde_json::json!({"path": path, "content": content});
        let r = client
            .call_tool(
                CallToolRequestParams::new("memory_write")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    client.cancel().await.unwrap();
    let log = history_log(&store);
    assert_eq!(log.len(), 2, "{log:?}");
    let (v1, v2) = (
        log[0]["version"].as_u64().unwrap(),
        log[1]["version"].as_u64().unwrap(),
    );

    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    for page in [
        format!("/history?path={}", enc(&path)),
        "/history?path=%2Fmemories%2F".to_string(),
        format!("/diff?store=memories&from={v1}&to={v2}"),
        format!("/version?store=memories&version={v1}"),
        format!("/redact?store=memories&version={v2}"),
    ] {
        let html = page_of(&served, &cookie, &page, StatusCode::OK).await;
        for raw in [payload, name_payload] {
            assert!(!html.contains(raw), "{page} holds {raw} unescaped: {html}");
        }
        assert!(
            html.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"),
            "{page} shows the payload as text: {html}"
        );
        if !page.starts_with("/diff") && !page.starts_with("/version") {
            assert!(
                html.contains("&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;.md"),
                "{page} shows the path as text: {html}"
            );
        }
    }
}

#[tokio::test]
async fn rename_needs_the_sha256_it_showed_and_is_a_version_by_the_person() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let page = page_of(
        &served,
        &cookie,
        "/rename?path=%2Fmemories%2Fnote.md",
        StatusCode::OK,
    )
    .await;
    let csrf = csrf_of(&page);
    let sha = common::sha256_hex(b"# Note\n\nfirst version\n");
    assert!(page.contains(&sha), "the form carries the sha256 shown");

    // Changed meanwhile: not moved.
    std::fs::write(store.join("note.md"), "# Note\n\ntheir version\n").unwrap();
    let before = snapshot(&store);
    let r = served
        .post(
            "/rename",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &sha),
                ("new_path", "/memories/moved/note.md"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(snapshot(&store), before);

    // With the current sha256 and no CSRF token: refused, nothing moved.
    let theirs = common::sha256_hex(b"# Note\n\ntheir version\n");
    let r = served
        .post(
            "/rename",
            &[
                ("path", "/memories/note.md"),
                ("sha256", &theirs),
                ("new_path", "/memories/moved/note.md"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(snapshot(&store), before);

    let r = served
        .post(
            "/rename",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &theirs),
                ("new_path", "/memories/moved/note.md"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        "/memory?path=%2Fmemories%2Fmoved%2Fnote.md"
    );
    assert!(!store.join("note.md").exists());
    assert_eq!(
        std::fs::read_to_string(store.join("moved/note.md")).unwrap(),
        "# Note\n\ntheir version\n"
    );
    let log = history_log(&store);
    let last = log.last().unwrap();
    assert_eq!(last["op"], "renamed");
    assert_eq!(last["actor"], LOCAL_USER);
    assert_eq!(last["from"], "note.md");
}

#[tokio::test]
async fn a_folder_moves_with_its_memories_as_versions_by_the_person() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    std::fs::create_dir_all(store.join("projects/old")).unwrap();
    std::fs::write(store.join("projects/alpha.md"), "alpha\n").unwrap();
    std::fs::write(store.join("projects/old/beta.md"), "beta\n").unwrap();
    std::fs::create_dir_all(store.join("taken")).unwrap();
    std::fs::write(store.join("taken/x.md"), "x\n").unwrap();
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;

    // The folder page links to the folder's form; the store's page has no such link.
    let folder = page_of(
        &served,
        &cookie,
        "/folder?path=%2Fmemories%2Fprojects%2F",
        StatusCode::OK,
    )
    .await;
    assert!(
        folder.contains("href=\"/rename?path=%2Fmemories%2Fprojects%2F\""),
        "{folder}"
    );
    let top = page_of(
        &served,
        &cookie,
        "/folder?path=%2Fmemories%2F",
        StatusCode::OK,
    )
    .await;
    assert!(!top.contains("/rename?"), "{top}");
    let page = page_of(
        &served,
        &cookie,
        "/rename?path=%2Fmemories%2Fprojects%2F",
        StatusCode::OK,
    )
    .await;
    assert!(page.contains("Moves 2 memories"), "{page}");
    let csrf = csrf_of(&page);
    // A memory's path with a `/` is no folder; a store cannot be renamed.
    for (path, status) in [
        (
            "/rename?path=%2Fmemories%2Fnote.md%2F",
            StatusCode::BAD_REQUEST,
        ),
        ("/rename?path=%2Fmemories%2F", StatusCode::BAD_REQUEST),
    ] {
        let r = served
            .get(path)
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{path}");
    }

    // Without the CSRF token, or onto a folder that exists: refused, nothing moved.
    let before = snapshot(&store);
    for (fields, status) in [
        (
            vec![
                ("path", "/memories/projects/"),
                ("new_path", "/memories/archive/projects/"),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![
                ("csrf", csrf.as_str()),
                ("path", "/memories/projects/"),
                ("new_path", "/memories/taken/"),
            ],
            StatusCode::CONFLICT,
        ),
    ] {
        let r = served
            .post("/rename", &fields)
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{fields:?}");
        assert_eq!(snapshot(&store), before, "{fields:?}");
    }

    let r = served
        .post(
            "/rename",
            &[
                ("csrf", &csrf),
                ("path", "/memories/projects/"),
                ("new_path", "/memories/archive/projects/"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        "/folder?path=%2Fmemories%2Farchive%2Fprojects%2F"
    );
    assert!(!store.join("projects").exists());
    assert_eq!(
        std::fs::read_to_string(store.join("archive/projects/old/beta.md")).unwrap(),
        "beta\n"
    );
    let log = history_log(&store);
    let moved: Vec<_> = log.iter().filter(|r| r["op"] == "renamed").collect();
    assert_eq!(moved.len(), 2, "{log:?}");
    for r in moved {
        assert_eq!(r["actor"], LOCAL_USER);
        assert!(r["from"].as_str().unwrap().starts_with("projects/"), "{r}");
    }
}

/// A multipart form body (as a browser sends an upload) and its Content-Type.
fn multipart(fields: &[(&str, &str)], file: (&str, &[u8])) -> (String, Vec<u8>) {
    let boundary = "----memdirTestBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (k, v) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"a.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\n",
            file.0
        )
        .as_bytes(),
    );
    body.extend_from_slice(file.1);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[tokio::test]
async fn export_downloads_the_archive_and_import_fills_only_an_empty_store() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let dest = sandbox.outside().join("dest");
    std::fs::create_dir_all(&dest).unwrap();
    let dest_spec = format!("dest={}", dest.display());
    let served =
        Served::console(&store, &["--store", &dest_spec, "--max-file-bytes", "1000"]).await;
    let cookie = served.sign_in_by_link().await;
    // One version by the person, so the archive holds a history.
    let page = page_of(
        &served,
        &cookie,
        "/edit?path=%2Fmemories%2Fnote.md",
        StatusCode::OK,
    )
    .await;
    let csrf = csrf_of(&page);
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &common::sha256_hex(b"# Note\n\nfirst version\n")),
                ("content", "# Note\n\nsecond version\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    // The download is what `memdir export` writes.
    let r = served
        .get("/export?store=memories")
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_hardened(&r, "export");
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"memdir-memories.jsonl\""
    );
    let archive = r.bytes().await.unwrap().to_vec();
    let cli = std::process::Command::new(BIN)
        .arg("--root")
        .arg(&store)
        .arg("export")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cache"),
        )
        .output()
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&archive),
        String::from_utf8_lossy(&cli.stdout)
    );

    let upload = |csrf: &str, store_name: &str, bytes: &[u8]| {
        let (content_type, body) =
            multipart(&[("csrf", csrf), ("store", store_name)], ("archive", bytes));
        client()
            .post(format!("{}/import", served.base))
            .header("Origin", &served.base)
            .header("Content-Type", content_type)
            .header("Cookie", &cookie)
            .body(body)
            .send()
    };
    // A store with memories refuses, and so does an upload over the body limit of `/mcp`
    // (1 MiB here), and one without the CSRF token: nothing changes.
    let (before, dest_before) = (snapshot(&store), snapshot(&dest));
    let r = upload(&csrf, "memories", &archive).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains("already has memories"));
    let mut big = archive.clone();
    big.extend(std::iter::repeat_n(b'\n', 1 << 20));
    let r = upload(&csrf, "dest", &big).await.unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let r = upload(&"0".repeat(64), "dest", &archive).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(snapshot(&store), before);
    assert_eq!(snapshot(&dest), dest_before);
    assert!(dest_before.is_empty(), "{dest_before:?}");

    // Into the empty store: its memories and its whole history.
    let form = page_of(&served, &cookie, "/import?store=dest", StatusCode::OK).await;
    assert!(form.contains("enctype=\"multipart/form-data\""), "{form}");
    let r = upload(&csrf, "dest", &archive).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(dest.join("note.md")).unwrap(),
        "# Note\n\nsecond version\n"
    );
    assert_eq!(history_log(&dest).len(), history_log(&store).len());
    assert!(history_log(&dest).iter().any(|r| r["actor"] == LOCAL_USER));
}

/// Sets a file's modification time `days` days back.
fn age_file(path: &Path, days: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400))
        .unwrap();
}

#[tokio::test]
async fn review_lists_stale_oldest_first_prune_deletes_expired_and_memory_md_shows_caps() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    std::fs::write(store.join("old.md"), "---\nname: Old one\n---\nold\n").unwrap();
    std::fs::write(store.join("older.md"), "---\nname: Older one\n---\nolder\n").unwrap();
    let gone = "---\nname: Freeze\nexpires: 2020-01-01\n---\ncode freeze\n";
    std::fs::write(store.join("freeze.md"), gone).unwrap();
    age_file(&store.join("old.md"), 100);
    age_file(&store.join("older.md"), 200);
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;

    let page = page_of(&served, &cookie, "/review?store=memories", StatusCode::OK).await;
    let (older, old) = (
        page.find("/memories/older.md").expect("older listed"),
        page.find("/memories/old.md").expect("old listed"),
    );
    assert!(older < old, "oldest first: {page}");
    assert!(
        !page.contains(">/memories/note.md<"),
        "fresh is not stale: {page}"
    );
    assert!(page.contains("Expired (1)"), "{page}");
    let page_150 = page_of(
        &served,
        &cookie,
        "/review?store=memories&days=150",
        StatusCode::OK,
    )
    .await;
    assert!(!page_150.contains("/memories/old.md"), "{page_150}");
    page_of(
        &served,
        &cookie,
        "/review?store=memories&days=soon",
        StatusCode::BAD_REQUEST,
    )
    .await;

    // Prune: CSRF first, then the expired memory is a deletion by the person.
    let csrf = csrf_of(&page);
    let before = snapshot(&store);
    let r = served
        .post("/prune", &[("store", "memories")])
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(snapshot(&store), before);
    let r = served
        .post("/prune", &[("csrf", &csrf), ("store", "memories")])
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(!store.join("freeze.md").exists());
    assert!(store.join("old.md").exists());
    let log = history_log(&store);
    let last = log.last().unwrap();
    assert_eq!(last["op"], "deleted");
    assert_eq!(last["actor"], LOCAL_USER);

    // MEMORY.md: generated from the frontmatter, with its caps.
    let index = page_of(&served, &cookie, "/index?store=memories", StatusCode::OK).await;
    for shown in ["Generated", "Old one", "Older one", "200 lines", "3 listed"] {
        assert!(
            index.contains(shown),
            "MEMORY.md page shows {shown}: {index}"
        );
    }
    std::fs::write(store.join("MEMORY.md"), "# Our own index\n").unwrap();
    let index = page_of(&served, &cookie, "/index?store=memories", StatusCode::OK).await;
    assert!(
        index.contains("The store&#39;s own MEMORY.md")
            || index.contains("The store's own MEMORY.md"),
        "{index}"
    );
    assert!(index.contains("# Our own index"), "{index}");
}

/// The paths of the review page's expired list, in its order.
fn expired_listed(page: &str) -> Vec<String> {
    let list = page
        .split("<h2>Expired (")
        .nth(1)
        .expect("the expired section");
    list.split("</a> expired at ")
        .filter_map(|before| before.rsplit_once('>').map(|(_, path)| path.to_string()))
        .filter(|p| p.starts_with('/'))
        .collect()
}

/// The review page takes the expired memories from the search index (kept fresh as a
/// search keeps it, each named memory read to confirm): it must list what reading every
/// file finds, in the same order, with expired, stale and fresh memories side by side,
/// and still after an editor changes expiries behind the index's back.
#[tokio::test]
async fn review_lists_the_expired_memories_a_scan_of_every_file_finds() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    let write = |rel: &str, text: &[u8]| {
        let path = store.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let expiring = |when: &str| format!("---\nname: N\nexpires: {when}\n---\nbody\n");
    // Names whose order differs by byte and by segment: `a-b.md`, `a.md`, `a/b.md`.
    write("a.md", expiring("2020-01-01").as_bytes());
    write("a/b.md", expiring("2021-06-01T12:00:00+02:00").as_bytes());
    write("a-b.md", expiring("2022-03-04").as_bytes());
    write(
        "z/deep/c.md",
        b"---\nexpires_at: 2019-05-05T05:05:05Z\n---\nold\n",
    );
    write("future.md", expiring("2999-01-01").as_bytes());
    write("malformed.md", expiring("soon").as_bytes());
    write("stale.md", b"---\nname: Stale\n---\nold news\n");
    write("stale-expired.md", expiring("2020-02-02").as_bytes());
    write("fresh.md", b"# Fresh\n");
    write(
        "bin.md",
        b"---\nexpires: 2020-01-01\n---\n\xff\xfe not UTF-8\n",
    );
    write(".hidden/x.md", expiring("2020-01-01").as_bytes());
    age_file(&store.join("stale.md"), 200);
    age_file(&store.join("stale-expired.md"), 300);
    let index_dir = sandbox.tmp.path().join("index");
    let served =
        Served::console_indexed(&store, &["--index-dir", index_dir.to_str().unwrap()]).await;
    let cookie = served.sign_in_by_link().await;
    // The same page without an index: one walk, every file read.
    let scanning = Served::console(&store, &[]).await;
    let scanning_cookie = scanning.sign_in_by_link().await;

    let check = async |want: &[&str]| {
        let page = page_of(&served, &cookie, "/review?store=memories", StatusCode::OK).await;
        let listed = expired_listed(&page);
        assert_eq!(listed, want, "{page}");
        assert!(
            page.contains(&format!("Expired ({})", want.len())),
            "{page}"
        );
        let scanned = page_of(
            &scanning,
            &scanning_cookie,
            "/review?store=memories",
            StatusCode::OK,
        )
        .await;
        assert_eq!(
            listed,
            expired_listed(&scanned),
            "against a scan: {scanned}"
        );
        page
    };
    let page = check(&[
        "/memories/a-b.md",
        "/memories/a.md",
        "/memories/a/b.md",
        "/memories/stale-expired.md",
        "/memories/z/deep/c.md",
    ])
    .await;
    // The stale list is unchanged: oldest first, expired or not.
    let (oldest, old) = (
        page.find(">/memories/stale-expired.md<").unwrap(),
        page.find(">/memories/stale.md<").unwrap(),
    );
    assert!(oldest < old, "{page}");

    // An editor changes expiries behind the index's back: one now expired, one not any
    // more, one new, one deleted.
    write("future.md", expiring("2020-12-12").as_bytes());
    write("a.md", b"---\nname: N\n---\nno expiry now\n");
    write("new/e.md", expiring("2018-01-01").as_bytes());
    std::fs::remove_file(store.join("a-b.md")).unwrap();
    check(&[
        "/memories/a/b.md",
        "/memories/future.md",
        "/memories/new/e.md",
        "/memories/stale-expired.md",
        "/memories/z/deep/c.md",
    ])
    .await;
}

#[tokio::test]
async fn editing_a_memory_deleted_meanwhile_shows_yours_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let page = page_of(
        &served,
        &cookie,
        "/edit?path=%2Fmemories%2Fnote.md",
        StatusCode::OK,
    )
    .await;
    let csrf = csrf_of(&page);
    let old_sha = common::sha256_hex(b"# Note\n\nfirst version\n");
    // Someone deletes it meanwhile.
    std::fs::remove_file(store.join("note.md")).unwrap();
    let before = snapshot(&store);
    let r = served
        .post(
            "/edit",
            &[
                ("csrf", &csrf),
                ("path", "/memories/note.md"),
                ("sha256", &old_sha),
                ("content", "# Note\r\n\r\nmy <b>version</b>\r\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(page.contains("deleted meanwhile"), "{page}");
    assert!(
        page.contains("my &lt;b&gt;version&lt;/b&gt;"),
        "yours, escaped: {page}"
    );
    assert!(page.contains("action=\"/new\""), "{page}");
    assert_eq!(snapshot(&store), before);
    // Its form creates it again, create-only.
    let r = served
        .post(
            "/new",
            &[
                ("csrf", &csrf),
                ("folder", "/memories/"),
                ("name", "note.md"),
                ("content", "# Note\r\n\r\nmy version\r\n"),
            ],
        )
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(store.join("note.md")).unwrap(),
        "# Note\n\nmy version\n"
    );
}

#[tokio::test]
async fn search_hits_say_how_they_matched() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(
        store.join("ops.md"),
        "# Ops\n\nWe were deploying on Friday.\n",
    )
    .unwrap();
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let exact = page_of(&served, &cookie, "/search?q=deploying", StatusCode::OK).await;
    assert!(exact.contains("/memories/ops.md"), "{exact}");
    assert!(exact.contains("matched by words<"), "{exact}");
    let forms = page_of(&served, &cookie, "/search?q=deployment", StatusCode::OK).await;
    assert!(forms.contains("/memories/ops.md"), "{forms}");
    assert!(forms.contains("matched by word forms<"), "{forms}");
}

/// A hit matched in its description line, which holds a colon (not YAML, as people and
/// Claude Code write it), shows the memory's name and description under it.
#[tokio::test]
async fn a_hit_in_a_description_with_a_colon_shows_the_name() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    std::fs::write(
        store.join("alpha.md"),
        "---\nname: Alpha plan\ndescription: The alpha project: owner, deadline, risks\n---\n# Alpha\n",
    )
    .unwrap();
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let page = page_of(&served, &cookie, "/search?q=deadline", StatusCode::OK).await;
    assert!(page.contains("line 3"), "{page}");
    assert!(page.contains("<strong>Alpha plan</strong>"), "{page}");
    assert!(
        page.contains("<div class=\"muted\">The alpha project: owner, deadline, risks</div>"),
        "{page}"
    );
}

/// An empty folder has no newest memory: sorted by age it goes by its own time, not as
/// the oldest entry (1970, the time of nothing).
#[tokio::test]
async fn an_empty_folder_sorts_by_its_own_age() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    std::fs::write(store.join("a.md"), "# A\n").unwrap();
    age_file(&store.join("a.md"), 10);
    std::fs::create_dir_all(store.join("old")).unwrap();
    std::fs::write(store.join("old/b.md"), "# B\n").unwrap();
    age_file(&store.join("old/b.md"), 20);
    std::fs::create_dir_all(store.join("empty")).unwrap();
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let names = ["a.md", "old/", "empty/"];
    for (query, expected) in [
        ("&sort=age", ["empty/", "a.md", "old/"]),
        ("&sort=age&dir=asc", ["old/", "a.md", "empty/"]),
    ] {
        let path = format!("/folder?path={}{query}", enc("/memories/"));
        let page = page_of(&served, &cookie, &path, StatusCode::OK).await;
        assert_eq!(order_of(&page, &names), expected, "{query}: {page}");
    }
}

/// The order in which `names` (link texts) appear on `page`; panics on one missing.
fn order_of<'a>(page: &str, names: &[&'a str]) -> Vec<&'a str> {
    let mut found: Vec<(usize, &str)> = names
        .iter()
        .map(|n| {
            let at = page
                .find(&format!(">{n}</a>"))
                .unwrap_or_else(|| panic!("{n} is on the page: {page}"));
            (at, *n)
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, n)| n).collect()
}

#[tokio::test]
async fn folder_pages_sort_filter_and_paginate_by_links() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    let memory = |file: &str, kind: &str, title: &str, body_len: usize, days: u64| {
        let text = format!(
            "---\nname: {title}\ntype: {kind}\n---\n{}\n",
            "x".repeat(body_len)
        );
        std::fs::write(store.join(file), text).unwrap();
        age_file(&store.join(file), days);
    };
    memory("a.md", "project", "Alpha", 10, 10);
    memory("b.md", "user", "Beta", 3000, 1);
    memory("c-notes.md", "project", "Gamma notes", 500, 5);
    std::fs::create_dir_all(store.join("many")).unwrap();
    for i in 0..150 {
        std::fs::write(store.join(format!("many/f{i:03}.md")), "y".repeat(i + 1)).unwrap();
    }
    let served = Served::console(&store, &[]).await;
    let cookie = served.sign_in_by_link().await;
    let folder = |query: &str| format!("/folder?path={}{query}", enc("/memories/"));
    let files = ["a.md", "b.md", "c-notes.md"];

    // By name (the default), then by a column heading's link, then reversed.
    let page = page_of(&served, &cookie, &folder(""), StatusCode::OK).await;
    assert_eq!(order_of(&page, &files), ["a.md", "b.md", "c-notes.md"]);
    let size_link = format!(
        "href=\"{}\"",
        folder("&sort=size&dir=desc").replace('&', "&amp;")
    );
    assert!(page.contains(&size_link), "a Size heading link: {page}");
    assert!(
        page.contains("<form class=\"filter\" method=\"get\" action=\"/folder\">"),
        "a GET filter form: {page}"
    );
    for (query, expected) in [
        ("&sort=size", ["b.md", "c-notes.md", "a.md"]),
        ("&sort=size&dir=asc", ["a.md", "c-notes.md", "b.md"]),
        ("&sort=age", ["b.md", "c-notes.md", "a.md"]),
        ("&sort=age&dir=asc", ["a.md", "c-notes.md", "b.md"]),
        ("&sort=name&dir=desc", ["c-notes.md", "b.md", "a.md"]),
    ] {
        let page = page_of(&served, &cookie, &folder(query), StatusCode::OK).await;
        assert_eq!(order_of(&page, &files), expected, "{query}");
    }
    // The heading of the current sort reverses it.
    let page = page_of(&served, &cookie, &folder("&sort=size"), StatusCode::OK).await;
    let reverse = format!(
        "href=\"{}\"",
        folder("&sort=size&dir=asc").replace('&', "&amp;")
    );
    assert!(page.contains(&reverse), "{page}");

    // Filters: by type (files only), by text in the file name or the title, together.
    let page = page_of(&served, &cookie, &folder("&type=project"), StatusCode::OK).await;
    assert_eq!(
        order_of(&page, &["a.md", "c-notes.md"]),
        ["a.md", "c-notes.md"]
    );
    assert!(
        !page.contains(">b.md</a>") && !page.contains(">many/</a>"),
        "{page}"
    );
    assert!(page.contains("2 of 4 entries"), "{page}");
    let page = page_of(&served, &cookie, &folder("&name=GAMMA"), StatusCode::OK).await;
    assert!(page.contains(">c-notes.md</a>"), "by title: {page}");
    assert!(
        !page.contains(">a.md</a>") && !page.contains(">b.md</a>"),
        "{page}"
    );
    let page = page_of(&served, &cookie, &folder("&name=B.MD"), StatusCode::OK).await;
    assert!(page.contains(">b.md</a>"), "by file name: {page}");
    assert!(!page.contains(">c-notes.md</a>"), "{page}");
    let page = page_of(
        &served,
        &cookie,
        &folder("&type=project&name=notes&sort=size"),
        StatusCode::OK,
    )
    .await;
    assert!(
        page.contains(">c-notes.md</a>") && !page.contains(">a.md</a>"),
        "{page}"
    );
    assert!(
        page.contains("value=\"notes\""),
        "the form keeps the text: {page}"
    );

    // Sorted pages paginate by number, the sort and filters kept in the links.
    let many = |query: &str| format!("/folder?path={}{query}", enc("/memories/many/"));
    let page = page_of(
        &served,
        &cookie,
        &many("&sort=size&dir=asc"),
        StatusCode::OK,
    )
    .await;
    assert!(
        page.contains(">f000.md</a>") && page.contains(">f099.md</a>"),
        "{page}"
    );
    assert!(!page.contains(">f100.md</a>"), "100 a page: {page}");
    let next = format!(
        "href=\"{}\"",
        many("&sort=size&dir=asc&page=2").replace('&', "&amp;")
    );
    assert!(page.contains(&next), "{page}");
    let page = page_of(
        &served,
        &cookie,
        &many("&sort=size&dir=asc&page=2"),
        StatusCode::OK,
    )
    .await;
    assert!(
        page.contains(">f100.md</a>") && page.contains(">f149.md</a>"),
        "{page}"
    );
    assert!(!page.contains(">f099.md</a>"), "{page}");
    assert!(
        page.contains("Previous page") && !page.contains("Next page"),
        "{page}"
    );

    // Nonsense is a 400 that names the parameter.
    for query in ["&sort=colour", "&dir=up", "&page=0", "&page=two"] {
        let page = page_of(&served, &cookie, &folder(query), StatusCode::BAD_REQUEST).await;
        let name = query[1..].split('=').next().unwrap();
        assert!(page.contains(&format!("`{name}`")), "{query}: {page}");
    }
}

#[tokio::test]
async fn console_takes_the_body_limit_and_host_names_of_serve_http() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let served = Served::console(
        &store,
        &["--max-body-bytes", "4096", "--allow-host", "memdir.test"],
    )
    .await;
    let cookie = served.sign_in_by_link().await;
    let port = served.host().rsplit(':').next().unwrap().to_string();

    // Host names: the one allowed answers, another is still refused.
    for (host, status) in [
        (format!("memdir.test:{port}"), StatusCode::OK),
        (format!("evil.example:{port}"), StatusCode::FORBIDDEN),
    ] {
        let r = served
            .get("/")
            .header("Cookie", &cookie)
            .header("Host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "Host: {host}");
    }

    // The body limit: an edit past 4 KiB (far below the default 1 MiB) is refused with
    // nothing written; one below it is saved.
    let page = page_of(
        &served,
        &cookie,
        "/edit?path=%2Fmemories%2Fnote.md",
        StatusCode::OK,
    )
    .await;
    let csrf = csrf_of(&page);
    let sha = common::sha256_hex(b"# Note\n\nfirst version\n");
    let edit = |content: String| {
        served
            .post(
                "/edit",
                &[
                    ("csrf", &csrf),
                    ("path", "/memories/note.md"),
                    ("sha256", &sha),
                    ("content", &content),
                ],
            )
            .header("Cookie", &cookie)
    };
    let before = snapshot(&store);
    match edit("x".repeat(5000)).send().await {
        Ok(r) => assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE),
        // Refused while it was still being sent: the server answered and closed.
        Err(e) => assert!(e.is_request() || e.is_body(), "{e:?}"),
    }
    assert_eq!(
        snapshot(&store),
        before,
        "an oversized edit changed the store"
    );
    let small = format!("# Note\n\n{}\n", "y".repeat(3000));
    let r = edit(small.clone()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        std::fs::read_to_string(store.join("note.md")).unwrap(),
        small
    );
}

#[tokio::test]
async fn the_console_brings_its_index_up_to_date_before_any_request() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let index_dir = sandbox.tmp.path().join("index");
    let mut served =
        Served::console_indexed(&store, &["--index-dir", index_dir.to_str().unwrap()]).await;
    // No request is made: the index is built at start-up, as `memdir serve` does, so
    // the first search or review page does not pay for it.
    served
        .log
        .wait_for("store /memories: building the search index from the files")
        .await;
}

/// Bound beyond loopback (`--listen 0.0.0.0:PORT`, as in a container), the console says
/// where it really listens and warns that the link is the only sign-in, in the clear; on
/// loopback it says nothing of the kind.
#[tokio::test]
async fn a_console_bound_beyond_loopback_says_so() {
    let sandbox = Sandbox::new();
    let store = store_with_a_memory(&sandbox);
    let mut child = command()
        .arg("console")
        .arg("--root")
        .arg(&store)
        .args(["--listen", "0.0.0.0:0", "--no-index"])
        .spawn()
        .expect("spawn memdir console");
    let mut log = StderrLog::read_async(child.stderr.take().unwrap(), "memdir console");
    let line = log.wait_for("reachable from other machines").await;
    assert!(
        line.contains("bound to 0.0.0.0:") && line.contains("in the clear"),
        "{line}"
    );
    let _ = child.start_kill();
    let served = Served::console(&store, &[]).await;
    assert!(
        !served.log.text().contains("reachable from other machines"),
        "{}",
        served.log.text()
    );
}
