//! Several `memdir` processes on one store, as when several agent sessions share a
//! memory: sha-guarded read-modify-write never loses an increment, create-only writes
//! have exactly one winner, and readers only ever see whole versions.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{Sandbox, Server};
use serde_json::json;

const PROCESSES: usize = 4;
const INCREMENTS: u64 = 100;

/// Each increment reads `n` and writes `n + 1` with the sha256 it read, and retries on
/// `isError` alone, as a client does without parsing messages: two racers that read the
/// same `n` write the same `n + 1`, so the second must fail, not succeed as a no-op.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_increment_one_counter_to_exactly_400() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    let mut servers = Vec::new();
    for _ in 0..PROCESSES {
        servers.push(Arc::new(Server::start(&["--root", &root], &[]).await));
    }
    servers[0]
        .ok(
            "memory_write",
            json!({"path": "counter.md", "content": "0"}),
        )
        .await;
    let conflicts = Arc::new(AtomicU64::new(0));
    let stop_reader = Arc::new(AtomicBool::new(false));

    // A reader in its own process that must only ever see whole numbers.
    let reader = {
        let server = Arc::new(Server::start(&["--root", &root], &[]).await);
        let stop = Arc::clone(&stop_reader);
        tokio::spawn(async move {
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let r = server
                    .ok("memory_read", json!({"path": "counter.md"}))
                    .await;
                let text = r["content"].as_str().unwrap();
                assert!(text.parse::<u64>().is_ok(), "torn read: {text:?}");
                reads += 1;
            }
            reads
        })
    };

    let mut tasks = Vec::new();
    for server in &servers {
        let server = Arc::clone(server);
        let conflicts = Arc::clone(&conflicts);
        tasks.push(tokio::spawn(async move {
            for _ in 0..INCREMENTS {
                loop {
                    let r = server.ok("memory_read", json!({"path": "counter.md"})).await;
                    let n: u64 = r["content"].as_str().unwrap().parse().unwrap();
                    let out = server
                        .call(
                            "memory_write",
                            json!({"path": "counter.md", "content": (n + 1).to_string(), "expected_sha256": r["content_sha256"]}),
                        )
                        .await;
                    if !out.is_error {
                        break;
                    }
                    assert!(out.text.contains("precondition failed"), "{}", out.text);
                    conflicts.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    stop_reader.store(true, Ordering::Relaxed);
    let reads = reader.await.unwrap();
    let final_value = std::fs::read_to_string(sb.store().join("counter.md")).unwrap();
    let conflicts = conflicts.load(Ordering::Relaxed);
    eprintln!("final {final_value}, conflicts retried {conflicts}, concurrent reads {reads}");
    assert_eq!(final_value, (PROCESSES as u64 * INCREMENTS).to_string());
    assert!(
        conflicts > 0,
        "the processes never raced, so the test proved nothing"
    );
    assert!(reads > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_only_writers_have_exactly_one_winner() {
    let sb = Sandbox::new();
    let root = sb.store().to_str().unwrap().to_owned();
    for round in 0..5 {
        let mut servers = Vec::new();
        for _ in 0..6 {
            servers.push(Arc::new(Server::start(&["--root", &root], &[]).await));
        }
        let path = format!("race/{round}.md");
        let barrier = Arc::new(tokio::sync::Barrier::new(servers.len()));
        let mut tasks = Vec::new();
        for (i, server) in servers.iter().enumerate() {
            let (server, barrier, path) = (Arc::clone(server), Arc::clone(&barrier), path.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let out = server
                    .call(
                        "memory_write",
                        json!({"path": path, "content": format!("writer {i}"), "if_absent": true}),
                    )
                    .await;
                (i, out)
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            let (i, out) = t.await.unwrap();
            if out.is_error {
                assert!(out.text.contains("already exists"), "{}", out.text);
            } else {
                winners.push(i);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let stored = std::fs::read_to_string(sb.store().join(&path)).unwrap();
        assert_eq!(stored, format!("writer {}", winners[0]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_in_one_process_are_serialised() {
    let sb = Sandbox::new();
    let s = Arc::new(sb.serve().await);
    s.ok("memory_write", json!({"path": "log.md", "content": ""}))
        .await;
    let mut tasks = Vec::new();
    for i in 0..50 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            s.ok(
                "memory_edit",
                json!({"path": "log.md", "append_text": format!("entry {i}\n")}),
            )
            .await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = std::fs::read_to_string(sb.store().join("log.md")).unwrap();
    assert_eq!(log.lines().count(), 50, "no append was lost:\n{log}");
}
