//! Search by meaning with the real embedding model, through the real binary: hybrid on
//! and off, a paraphrase and another language found only by meaning, an off-topic
//! question finding nothing, vectors pending and then computed in the background while
//! writes are acknowledged at once, filters applied to meaning hits, `memdir reindex`,
//! and PostgreSQL stores sharing vectors.
//!
//! The model is a part from outside the Rust toolchain (71 MB of weights that `memdir
//! model install` fetches), so these run under the `external-tests` feature
//! (docs/decisions/outside-parts.md). They find it at `MEMDIR_TEST_MODEL`, else where
//! `memdir model install` puts it, and fail (never skip) when it is not there.

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;
use serde_json::{Value, json};

/// How long the backfill may take for the few memories of a test.
const BACKFILL_LIMIT: Duration = Duration::from_secs(300);

/// How often a test asks whether vectors are still pending.
const POLL: Duration = Duration::from_millis(100);

/// The model's weights: `MEMDIR_TEST_MODEL`, else the installed model.
fn model() -> String {
    let path = std::env::var_os("MEMDIR_TEST_MODEL")
        .map(PathBuf::from)
        .or_else(memdir::embed::default_model_path)
        .expect("no data folder to find the model in: set MEMDIR_TEST_MODEL");
    assert!(
        path.is_file(),
        "the embedding model is not at {}: run `memdir model install` (or set MEMDIR_TEST_MODEL to its file)",
        path.display()
    );
    path.to_str().unwrap().to_owned()
}

/// A store folder and an index folder of its own.
struct Place {
    tmp: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("store")).unwrap();
        Place { tmp }
    }

    fn store(&self) -> String {
        self.tmp.path().join("store").to_str().unwrap().to_owned()
    }

    fn index(&self) -> String {
        self.tmp.path().join("index").to_str().unwrap().to_owned()
    }

    fn put(&self, rel: &str, text: &str) {
        let path = self.tmp.path().join("store").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The server on this store, with meaning on or off.
    async fn serve(&self, semantic: bool) -> Server {
        let (store, index, model) = (self.store(), self.index(), model());
        let mut args = vec!["--root", &store, "--index-dir", &index];
        if semantic {
            args.extend(["--semantic", "--model", &model]);
        }
        Server::start(&args, &[]).await
    }
}

/// `memory_search`'s structured result.
async fn search(server: &Server, args: Value) -> Value {
    server.ok("memory_search", args).await
}

/// Searches until no vector is pending in the query's scope (the backfill has caught up),
/// at most [`BACKFILL_LIMIT`]; the last result.
async fn settled(server: &Server, args: Value) -> Value {
    let deadline = Instant::now() + BACKFILL_LIMIT;
    loop {
        let out = search(server, args.clone()).await;
        let pending = out["pending_vectors"]
            .as_u64()
            .unwrap_or_else(|| panic!("meaning is on: the result says what is pending: {out}"));
        if pending == 0 {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "{pending} vectors still pending after {BACKFILL_LIMIT:?}"
        );
        // A pause between polls: searching without one keeps a core busy at normal
        // priority, and the backfill it waits for runs below that (tests run in parallel
        // on two cores, so polling alone could starve every test's backfill).
        tokio::time::sleep(POLL).await;
    }
}

/// The paths of a result's hits, in order.
fn paths(out: &Value) -> Vec<&str> {
    out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect()
}

/// The hit at `path`, if any.
fn hit<'a>(out: &'a Value, path: &str) -> Option<&'a Value> {
    out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["path"] == path)
}

fn matched(h: &Value) -> Vec<&str> {
    h["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect()
}

const MOCKS: &str = "---\nname: testing rule\ntype: feedback\n---\nDon't mock the database in integration tests: use a real PostgreSQL server.\n";
const PIPELINE: &str = "---\nname: ci\ntype: project\n---\nThe deployment pipeline runs on GitHub Actions; releases are tagged v* and published by the workflow.\n";
const SHORT: &str =
    "---\nname: answers\ntype: user\n---\nThe user prefers short answers without long preambles.\n";
const GARDEN: &str = "---\nname: garden\ntype: project\n---\nTomatoes in the greenhouse need watering every second morning.\n";

fn fill(place: &Place) {
    place.put("feedback/mocks.md", MOCKS);
    place.put("projects/pipeline.md", PIPELINE);
    place.put("user/short.md", SHORT);
    place.put("projects/garden.md", GARDEN);
}

#[tokio::test]
async fn a_paraphrase_is_found_by_meaning_only_with_meaning_on() {
    let place = Place::new();
    fill(&place);
    // No word of the query is in the memory about the pipeline.
    let query = json!({"query": "CI/CD"});

    let words = place.serve(false).await;
    let out = search(&words, query.clone()).await;
    assert_eq!(out["total_hits"], 0, "{out}");
    assert!(out.get("pending_vectors").is_none(), "{out}");
    words.stop().await;

    let meaning = place.serve(true).await;
    let out = settled(&meaning, query).await;
    assert_eq!(paths(&out)[0], "/memories/projects/pipeline.md", "{out}");
    let h = hit(&out, "/memories/projects/pipeline.md").unwrap();
    assert_eq!(matched(h), ["meaning"], "{out}");
    assert!(
        h["snippet"].as_str().unwrap().contains("GitHub Actions"),
        "{out}"
    );

    // Found both ways: both are said.
    let out = search(&meaning, json!({"query": "mocking the database"})).await;
    let h = hit(&out, "/memories/feedback/mocks.md").expect("found");
    assert_eq!(paths(&out)[0], "/memories/feedback/mocks.md", "{out}");
    let how = matched(h);
    assert!(how.contains(&"meaning") && how.len() >= 2, "{out}");
    meaning.stop().await;
}

#[tokio::test]
async fn an_off_topic_question_finds_no_memory_by_meaning() {
    let place = Place::new();
    fill(&place);
    let server = place.serve(true).await;
    // Nothing in the store is about either; without the similarity floor every memory
    // came back as a meaning hit.
    for query in ["what is the capital of Mongolia", "축구 경기 결과"] {
        let out = settled(&server, json!({"query": query})).await;
        assert_eq!(out["total_hits"], 0, "{query}: {out}");
        assert!(paths(&out).is_empty(), "{query}: {out}");
    }
    // The floor keeps what is close: the paraphrase is still found.
    let out = search(&server, json!({"query": "CI/CD"})).await;
    assert_eq!(paths(&out)[0], "/memories/projects/pipeline.md", "{out}");
    // A query of symbols and no word is searched by meaning alone; one of punctuation
    // finds nothing; both say what meaning covers, as every search does.
    let out = settled(&server, json!({"query": "🍅🌱"})).await;
    assert_eq!(paths(&out)[0], "/memories/projects/garden.md", "{out}");
    for h in out["hits"].as_array().unwrap() {
        assert_eq!(matched(h), ["meaning"], "{out}");
    }
    for query in ["?!", "«…»", "。、"] {
        let out = settled(&server, json!({"query": query})).await;
        assert_eq!(out["total_hits"], 0, "{query}: {out}");
        assert_eq!(out["memories_in_scope"], 4, "{query}: {out}");
    }
    server.stop().await;
    // With the index unavailable (its folder is a file: the server searches by scan, and
    // has no vectors), a query of symbols matches nothing by words: no memory is
    // counted as a hit that none is shown for.
    let (store, model) = (place.store(), model());
    let blocked = place.tmp.path().join("not-a-folder");
    std::fs::write(&blocked, "").unwrap();
    let blocked = blocked.to_str().unwrap().to_owned();
    let scan = Server::start(
        &[
            "--root",
            &store,
            "--index-dir",
            &blocked,
            "--semantic",
            "--model",
            &model,
        ],
        &[],
    )
    .await;
    let out = search(&scan, json!({"query": "🍅🌱"})).await;
    assert_eq!(out["total_hits"], 0, "{out}");
    assert_eq!(paths(&out).len(), 0, "{out}");
    scan.stop().await;
}

#[tokio::test]
async fn a_russian_question_finds_an_english_memory() {
    let place = Place::new();
    fill(&place);
    let server = place.serve(true).await;
    let out = settled(
        &server,
        json!({"query": "как часто поливать помидоры в теплице"}),
    )
    .await;
    assert_eq!(paths(&out)[0], "/memories/projects/garden.md", "{out}");
    assert_eq!(matched(&out["hits"][0]), ["meaning"], "{out}");
    server.stop().await;
}

#[tokio::test]
async fn filters_apply_to_meaning_hits() {
    let place = Place::new();
    fill(&place);
    let server = place.serve(true).await;
    let query = "CI/CD";
    settled(&server, json!({"query": query})).await;
    let cases = [
        (json!({"query": query, "type": "user"}), "type"),
        (json!({"query": query, "path": "/memories/user/"}), "path"),
        (
            json!({"query": query, "min_importance": 4}),
            "min_importance",
        ),
        (
            json!({"query": query, "updated_after": "2999-01-01"}),
            "updated_after",
        ),
    ];
    for (args, what) in cases {
        let out = search(&server, args.clone()).await;
        assert!(
            hit(&out, "/memories/projects/pipeline.md").is_none(),
            "{what}: {args} returned a memory its filter leaves out: {out}"
        );
        for p in paths(&out) {
            if what == "type" || what == "path" {
                assert!(p.starts_with("/memories/user/"), "{what}: {out}");
            }
        }
    }
    // An expired memory is found by meaning only with include_expired.
    std::fs::write(
        Path::new(&place.store()).join("projects/pipeline.md"),
        PIPELINE.replace("type: project", "type: project\nexpires: 2020-01-01"),
    )
    .unwrap();
    // The edit reaches the index a moment after it is made (its watcher), and its new
    // content's vector after that: poll until the expired memory is found by meaning.
    let deadline = Instant::now() + BACKFILL_LIMIT;
    let out = loop {
        let out = settled(&server, json!({"query": query, "include_expired": true})).await;
        if hit(&out, "/memories/projects/pipeline.md").is_some() {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "never found with include_expired: {out}"
        );
        tokio::time::sleep(POLL).await;
    };
    let h = hit(&out, "/memories/projects/pipeline.md").unwrap();
    let without = search(&server, json!({"query": query})).await;
    assert!(
        hit(&without, "/memories/projects/pipeline.md").is_none(),
        "{without}"
    );
    assert_eq!(h["expired"], true, "{out}");
    server.stop().await;
}

#[tokio::test]
async fn vectors_pending_are_said_then_computed_while_writes_are_acknowledged() {
    let place = Place::new();
    fill(&place);
    // Enough memories that embedding them takes a second (release build; far longer in a
    // debug build).
    for i in 0..16 {
        place.put(
            &format!("notes/n{i:02}.md"),
            &format!("Note {i}: the weekly sync moved to room {i} on the third floor, bring the slides about quarter {i}.\n"),
        );
    }
    let server = place.serve(true).await;
    let out = search(&server, json!({"query": "weekly sync"})).await;
    let pending = out["pending_vectors"].as_u64().unwrap();
    assert!(pending > 0, "20 memories cannot be embedded already: {out}");
    assert_eq!(out["memories_in_scope"], 20, "{out}");
    let text = server
        .call("memory_search", json!({"query": "weekly sync"}))
        .await
        .text;
    assert!(text.contains("Meaning covers"), "{text}");

    // While the backfill is busy, writes are acknowledged at once and found by words.
    let mut slowest = Duration::ZERO;
    for i in 0..10 {
        let started = Instant::now();
        server
            .ok(
                "memory_write",
                json!({"path": format!("/memories/fresh/f{i}.md"), "content": format!("zebracorn fact {i}\n")}),
            )
            .await;
        slowest = slowest.max(started.elapsed());
    }
    let out = search(&server, json!({"query": "zebracorn"})).await;
    assert_eq!(out["total_hits"], 10, "read-your-writes, by words: {out}");
    assert!(
        slowest < Duration::from_secs(1),
        "a write waited {slowest:?} while vectors were being computed"
    );
    let out = settled(&server, json!({"query": "weekly sync"})).await;
    assert_eq!(out["memories_in_scope"], 30, "{out}");
    let text = server
        .call("memory_search", json!({"query": "weekly sync"}))
        .await
        .text;
    assert!(!text.contains("Meaning covers"), "{text}");
    // The memories written meanwhile have their vectors too.
    let out = search(
        &server,
        json!({"query": "zebracorn", "path": "/memories/fresh/"}),
    )
    .await;
    assert_eq!(out["pending_vectors"], 0, "{out}");
    server.stop().await;
}

/// `memdir WORDS` on the place's store and index, meaning on: ok, stdout, stderr.
fn run_on(place: &Place, words: &[&str]) -> (bool, String, String) {
    let (store, index, model) = (place.store(), place.index(), model());
    let mut args = words.to_vec();
    args.extend([
        "--root",
        &store,
        "--index-dir",
        &index,
        "--semantic",
        "--model",
        &model,
    ]);
    run(&args)
}

/// Runs `memdir ARGS`; (success, stdout, stderr).
fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(common::BIN)
        .args(args)
        .stdin(Stdio::null())
        .env("RUST_LOG", "memdir=info")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn reindex_computes_every_vector_once() {
    let place = Place::new();
    fill(&place);
    // Same content twice: one vector.
    place.put("copy.md", SHORT);
    let (ok, out, err) = run_on(&place, &["reindex", "--json"]);
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["stores"][0]["memories"], 5, "{summary}");
    assert_eq!(summary["vectors"]["embedded"], 4, "{summary}");
    assert!(
        err.contains("embedding memories"),
        "progress on stderr: {err}"
    );
    let (ok, out, err) = run_on(&place, &["reindex", "--json"]);
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        summary["vectors"]["embedded"], 0,
        "nothing left to do: {summary}"
    );
    // A server on that index has nothing pending from its first search.
    let server = place.serve(true).await;
    let out = search(&server, json!({"query": "build automation"})).await;
    assert_eq!(out["pending_vectors"], 0, "{out}");
    assert_eq!(paths(&out)[0], "/memories/projects/pipeline.md", "{out}");
    server.stop().await;
}

/// A memory of many passages (an onboarding page, twelve sections).
fn onboarding() -> String {
    let sections = [
        (
            "Office",
            "The team moved to the fourth floor in March. Desks by the windows are first come, first served, and the quiet room must be booked through the shared calendar.",
        ),
        (
            "Budget",
            "The quarterly budget review happens in the second week of each quarter. Travel spending above 500 euros needs the director's approval, and every invoice must carry the project code.",
        ),
        (
            "Hiring",
            "Two backend positions are open. Interviews have four rounds: a phone screen, a take-home exercise, a system design session and a meeting with the team.",
        ),
        (
            "Release",
            "Releases go out on Tuesdays after the staging checks pass. The changelog is written by whoever merged the last feature.",
        ),
        (
            "Conferences",
            "The user will speak at two conferences this autumn, one in Lisbon and one in Berlin. Slides are reviewed two weeks before each talk.",
        ),
        (
            "Home",
            "The user's cat Miso is allergic to chicken, so she only gets salmon or turkey kibble, and no scraps from the table.",
        ),
        (
            "Laptop",
            "The work laptop is replaced every three years. Full disk encryption is mandatory, and the VPN client must be updated before connecting from abroad.",
        ),
        (
            "On-call",
            "On-call shifts last one week and rotate between six engineers. Pages outside working hours are compensated with a day off.",
        ),
        (
            "Database",
            "The primary database runs PostgreSQL 16 with a streaming replica in another zone. Schema migrations are reviewed by two people.",
        ),
        (
            "Style",
            "Code review comments should be kind and specific. Pull requests stay under four hundred lines where possible.",
        ),
        (
            "Holidays",
            "The office is closed between Christmas and New Year. Holiday requests go through the HR portal a month ahead.",
        ),
        (
            "Parking",
            "There are twelve parking spaces behind the building, assigned by lottery every January.",
        ),
    ];
    let mut text = String::from("# Notes from onboarding\n");
    for (title, body) in sections {
        text.push_str(&format!("\n## {title}\n{body}\n"));
    }
    text
}

/// The vectors the index holds, as (model id, bytes), by content.
fn stored_vectors(index: &str) -> Vec<(String, usize)> {
    let db = walkdir::WalkDir::new(index)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".sqlite3"))
        .expect("the index database")
        .into_path();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT model, length(vector) FROM vectors ORDER BY length(vector)")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A long memory keeps its passages' vectors beside their mean, and a question about one
/// passage finds it by meaning alone.
#[tokio::test]
async fn a_long_memory_keeps_a_vector_for_each_passage() {
    let place = Place::new();
    place.put("notes/onboarding.md", &onboarding());
    place.put("user/short.md", SHORT);
    let index = place.index();
    let (ok, out, err) = run_on(&place, &["reindex", "--json"]);
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["vectors"]["embedded"], 2, "{summary}");
    let vectors = stored_vectors(&index);
    let one = 384 * 4;
    assert_eq!(vectors.len(), 2, "{vectors:?}");
    assert!(vectors[0].0.ends_with("-c128p"), "{vectors:?}");
    // The short memory: one vector. The long one: its mean, then one per chunk of at
    // most 128 tokens (at least three for about 400 tokens).
    assert_eq!(vectors[0].1, one, "{vectors:?}");
    assert!(
        vectors[1].1.is_multiple_of(one) && vectors[1].1 >= 4 * one,
        "{vectors:?}"
    );
    let server = place.serve(true).await;
    let out = settled(&server, json!({"query": "what may the kitty not eat?"})).await;
    let found = hit(&out, "/memories/notes/onboarding.md").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(matched(found), ["meaning"], "{out}");
    server.stop().await;
}

/// `memdir search --semantic` embeds nothing itself: on memories without vectors it says
/// how few meaning covers, also when nothing matches, and finds them once reindexed.
#[test]
fn the_cli_says_what_meaning_covers_even_when_nothing_matches() {
    let place = Place::new();
    fill(&place);
    // No word of the query is in any memory.
    let search = ["search", "CI/CD"];

    let (ok, out, err) = run_on(&place, &search);
    assert!(ok, "{err}");
    assert!(out.contains("no memory matches"), "{out}");
    assert!(
        out.contains("meaning covers 0 of 4 memories") && out.contains("memdir reindex --semantic"),
        "an empty answer says that meaning has not looked: {out}"
    );

    let (ok, _, err) = run_on(&place, &["reindex"]);
    assert!(ok, "{err}");
    let (ok, out, err) = run_on(&place, &search);
    assert!(ok, "{err}");
    assert!(!out.contains("meaning covers"), "{out}");
    let first = out.lines().find(|l| l.starts_with('/'));
    assert!(
        first.is_some_and(|l| l.starts_with("/memories/projects/pipeline.md")),
        "found by meaning once embedded: {out}"
    );
}

#[tokio::test]
async fn the_backfill_runs_ten_nice_steps_below_the_server() {
    let place = Place::new();
    fill(&place);
    let (store, index, model) = (place.store(), place.index(), model());
    let args = [
        "--root",
        &store,
        "--index-dir",
        &index,
        "--semantic",
        "--model",
        &model,
    ];
    // The server started at nice 5, as a service manager may start it.
    let server = Server::start_with(&args, &[], |c| {
        // SAFETY: setpriority is a plain system call; nothing else runs between fork and
        // exec.
        unsafe {
            c.pre_exec(|| {
                rustix::process::setpriority_process(None, 5).map_err(std::io::Error::from)
            });
        }
    })
    .await;
    server
        .ok("memory_search", json!({"query": "pipeline"}))
        .await;
    let nice_of = |task: &Path| -> Option<i32> {
        // Field 19 of `stat`, counted after the command name's closing parenthesis.
        let stat = std::fs::read_to_string(task.join("stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 2..];
        after.split(' ').nth(16)?.parse().ok()
    };
    let tasks = || -> Vec<(String, Option<i32>)> {
        std::fs::read_dir(format!("/proc/{}/task", server.pid))
            .unwrap()
            .filter_map(Result::ok)
            .map(|t| {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                (comm.trim().to_string(), nice_of(&t.path()))
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let embed = loop {
        let all = tasks();
        if let Some((_, nice)) = all.iter().find(|(name, _)| name == "memdir-embed") {
            break (*nice, all);
        }
        assert!(Instant::now() < deadline, "no backfill thread: {all:?}");
        tokio::time::sleep(POLL).await;
    };
    let (nice, all) = embed;
    assert_eq!(nice, Some(15), "{all:?}");
    let main = all.iter().find(|(name, _)| name == "memdir").map(|t| t.1);
    assert_eq!(
        main,
        Some(Some(5)),
        "the server itself keeps its priority: {all:?}"
    );
    server.stop().await;
}

#[test]
fn a_scope_of_many_memories_counts_those_without_a_vector_exactly() {
    // More memories than a search looks up one by one: it reads the index's list of
    // contents with a vector instead, and must count and score exactly as before.
    let place = Place::new();
    fill(&place);
    let note = |i: usize| format!("Reminder {i}: water the plants on floor {i} before noon.\n");
    for i in 0..64 {
        place.put(&format!("notes/n{i:02}.md"), &note(i));
    }
    let (ok, _, err) = run_on(&place, &["reindex"]);
    assert!(ok, "{err}");
    // Eight more, with no vector yet (the CLI's search embeds none).
    for i in 64..72 {
        place.put(&format!("notes/n{i:02}.md"), &note(i));
    }
    let (ok, out, err) = run_on(&place, &["search", "CI/CD"]);
    assert!(ok, "{err}");
    assert!(out.contains("meaning covers 68 of 76 memories"), "{out}");
    let first = out.lines().find(|l| l.starts_with('/'));
    assert!(
        first.is_some_and(|l| l.starts_with("/memories/projects/pipeline.md")),
        "found by meaning among many: {out}"
    );
}

#[tokio::test]
async fn postgresql_stores_share_vectors_between_machines() {
    let pg = pg::PgServer::start();
    let db = pg::unique_db("vectors");
    pg.create_db(&db);
    let url = pg.url(&db);
    let store = format!("memories={url}");
    let model = model();
    let first = tempfile::tempdir().unwrap();
    let first_index = first.path().to_str().unwrap();
    // One machine fills the store and computes its vectors.
    let server = Server::start(
        &[
            "--store",
            &store,
            "--index-dir",
            first_index,
            "--semantic",
            "--model",
            &model,
        ],
        &[],
    )
    .await;
    // A long memory too: its passages' vectors are shared with its mean.
    let long = onboarding();
    for (path, text) in [
        ("/memories/feedback/mocks.md", MOCKS),
        ("/memories/projects/pipeline.md", PIPELINE),
        ("/memories/user/short.md", SHORT),
        ("/memories/notes/onboarding.md", long.as_str()),
    ] {
        server
            .ok("memory_write", json!({"path": path, "content": text}))
            .await;
    }
    settled(&server, json!({"query": "build automation"})).await;
    server.stop().await;
    // Another machine, with an empty local index, embeds nothing: the database has them.
    let second = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(&[
        "reindex",
        "--store",
        &store,
        "--index-dir",
        second.path().to_str().unwrap(),
        "--semantic",
        "--model",
        &model,
        "--json",
    ]);
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["vectors"]["from_database"], 4, "{summary}");
    assert_eq!(summary["vectors"]["embedded"], 0, "{summary}");
}

#[tokio::test]
async fn unusable_shared_vectors_are_embedded_again_and_replaced() {
    let pg = pg::PgServer::start();
    let db = pg::unique_db("badvectors");
    pg.create_db(&db);
    let store = format!("memories={}", pg.url(&db));
    let model = model();
    let reindex = |index: &Path| {
        let (ok, out, err) = run(&[
            "reindex",
            "--store",
            &store,
            "--index-dir",
            index.to_str().unwrap(),
            "--semantic",
            "--model",
            &model,
            "--json",
        ]);
        assert!(ok, "{err}");
        let summary: Value = serde_json::from_str(&out).unwrap();
        summary["vectors"].clone()
    };
    let first = tempfile::tempdir().unwrap();
    let server = Server::start(
        &[
            "--store",
            &store,
            "--index-dir",
            first.path().to_str().unwrap(),
        ],
        &[],
    )
    .await;
    for (path, text) in [
        ("/memories/feedback/mocks.md", MOCKS),
        ("/memories/projects/pipeline.md", PIPELINE),
        ("/memories/user/short.md", SHORT),
    ] {
        server
            .ok("memory_write", json!({"path": path, "content": text}))
            .await;
    }
    server.stop().await;
    let vectors = reindex(first.path());
    assert_eq!(vectors["embedded"], 3, "{vectors}");
    let width: usize = pg
        .psql(
            &db,
            "SELECT DISTINCT octet_length(vector) FROM memdir_vectors",
        )
        .parse()
        .unwrap();
    // Another writer of the database spoils every shared vector: NaNs, a cut blob, and
    // numbers far from a unit vector.
    pg.psql(
        &db,
        &format!(
            "WITH r AS (SELECT sha256, row_number() OVER (ORDER BY sha256) AS n FROM memdir_vectors)
             UPDATE memdir_vectors v SET vector = CASE r.n
                 WHEN 1 THEN decode(repeat('0000c07f', {n}), 'hex')
                 WHEN 2 THEN substring(v.vector FROM 1 FOR 100)
                 ELSE decode(repeat('00002042', {n}), 'hex') END
             FROM r WHERE r.sha256 = v.sha256",
            n = width / 4
        ),
    );
    // A machine with an empty index takes none of them: it embeds the three itself ...
    let second = tempfile::tempdir().unwrap();
    let vectors = reindex(second.path());
    assert_eq!(vectors["from_database"], 0, "{vectors}");
    assert_eq!(vectors["embedded"], 3, "{vectors}");
    let server = Server::start(
        &[
            "--store",
            &store,
            "--index-dir",
            second.path().to_str().unwrap(),
            "--semantic",
            "--model",
            &model,
        ],
        &[],
    )
    .await;
    for (query, want) in [
        ("build automation", "/memories/projects/pipeline.md"),
        ("should tests use fakes?", "/memories/feedback/mocks.md"),
    ] {
        let out = search(&server, json!({"query": query})).await;
        assert_eq!(out["pending_vectors"], 0, "{out}");
        assert_eq!(paths(&out)[0], want, "{query}: {out}");
    }
    server.stop().await;
    // ... and shares them in their place, so the next machine takes them all.
    let third = tempfile::tempdir().unwrap();
    let vectors = reindex(third.path());
    assert_eq!(vectors["from_database"], 3, "{vectors}");
    assert_eq!(vectors["embedded"], 0, "{vectors}");
}
