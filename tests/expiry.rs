//! Expiry and time filters through the real binary: frontmatter `expires` in read, list
//! and search (with the index and without), `updated_after` / `updated_before`, and
//! `sort: recent`.

mod common;

use std::time::{Duration, SystemTime};

use common::Sandbox;
use serde_json::{Value, json};

/// A memory about deploys with this frontmatter line (none when empty).
fn memory(front: &str) -> String {
    if front.is_empty() {
        "Deploy with cargo release.\n".into()
    } else {
        format!("---\ndescription: deploy notes\n{front}\n---\nDeploy with cargo release.\n")
    }
}

/// (file, frontmatter line, expired?)
const CASES: &[(&str, &str, bool)] = &[
    ("past-date.md", "expires: 2020-01-01", true),
    (
        "past-time.md",
        "expires_at: 2021-06-30T12:00:00+02:00",
        true,
    ),
    ("future.md", "expires: 2999-01-01", false),
    ("malformed.md", "expires: soon", false),
    ("plain.md", "", false),
];

fn paths(result: &Value, key: &str) -> Vec<String> {
    let mut v: Vec<String> = result[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            h["path"]
                .as_str()
                .unwrap()
                .trim_start_matches("/memories/")
                .to_owned()
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn an_expired_memory_says_so_and_is_left_out_of_search_unless_asked() {
    for extra in [&[][..], &["--no-index"][..]] {
        let sb = Sandbox::new();
        for (file, front, _) in CASES {
            std::fs::write(sb.store().join(file), memory(front)).unwrap();
        }
        let s = sb.serve_with(extra).await;
        for (file, _, expired) in CASES {
            let r = s.call("memory_read", json!({"path": file})).await;
            assert!(!r.is_error, "{}", r.text);
            assert_eq!(
                r.structured.get("expired").is_some(),
                *expired,
                "{file}: {}",
                r.structured
            );
            assert_eq!(
                r.text.starts_with("Note: this memory expired"),
                *expired,
                "{}",
                r.text
            );
        }
        let read = s.ok("memory_read", json!({"path": "past-time.md"})).await;
        assert_eq!(read["expires_at"], "2021-06-30T10:00:00Z");
        assert!(
            s.ok("memory_read", json!({"path": "malformed.md"}))
                .await
                .get("expires_at")
                .is_none(),
            "a malformed expiry is no expiry"
        );

        let list = s.call("memory_list", json!({})).await;
        for e in list.structured["entries"].as_array().unwrap() {
            let file = e["path"].as_str().unwrap().trim_start_matches("/memories/");
            let expired = CASES.iter().any(|(f, _, x)| *f == file && *x);
            assert_eq!(e.get("expired").is_some(), expired, "{e}");
        }
        assert_eq!(list.text.matches("[EXPIRED]").count(), 2, "{}", list.text);

        let live = s.ok("memory_search", json!({"query": "deploy"})).await;
        assert_eq!(
            paths(&live, "hits"),
            ["future.md", "malformed.md", "plain.md"],
            "{extra:?}"
        );
        assert_eq!(live["total_hits"], 3);
        let all = s
            .call(
                "memory_search",
                json!({"query": "deploy", "include_expired": true}),
            )
            .await;
        assert_eq!(all.structured["total_hits"], 5, "{extra:?}");
        for h in all.structured["hits"].as_array().unwrap() {
            let expired = h["path"].as_str().unwrap().contains("past");
            assert_eq!(h.get("expired").is_some(), expired, "{h}");
        }
        assert_eq!(all.text.matches("EXPIRED").count(), 2, "{}", all.text);
        s.stop().await;
    }
}

#[tokio::test]
async fn search_filters_by_update_time_and_sorts_by_recency() {
    for extra in [&[][..], &["--no-index"][..]] {
        let sb = Sandbox::new();
        let day = |d: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600 + d * 86_400);
        // 2026-01-01 + 0, 10, 20 days; the most relevant is the oldest.
        for (file, text, age) in [
            ("old.md", "release release release\n", 0),
            ("mid.md", "release notes for the middle of the month\n", 10),
            (
                "new.md",
                "a release, among many other words written later on\n",
                20,
            ),
        ] {
            let path = sb.store().join(file);
            std::fs::write(&path, text).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(day(age))
                .unwrap();
        }
        let s = sb.serve_with(extra).await;
        let order = |r: &Value| -> Vec<String> {
            r["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    h["path"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("/memories/")
                        .to_owned()
                })
                .collect()
        };
        let by_score = s.ok("memory_search", json!({"query": "release"})).await;
        assert_eq!(order(&by_score)[0], "old.md", "{by_score}");
        let recent = s
            .ok(
                "memory_search",
                json!({"query": "release", "sort": "recent"}),
            )
            .await;
        assert_eq!(
            order(&recent),
            ["new.md", "mid.md", "old.md"],
            "{extra:?} {recent}"
        );
        assert_eq!(
            recent["hits"][2]["score"], 1.0,
            "scores stay relative to the best: {recent}"
        );
        assert_eq!(recent["hits"][0]["updated_at"], "2026-01-21T00:00:00Z");
        // A page of one at a time walks the same order.
        let first = s
            .ok(
                "memory_search",
                json!({"query": "release", "sort": "recent", "limit": 1}),
            )
            .await;
        assert_eq!(order(&first), ["new.md"]);
        let second = s
            .ok(
                "memory_search",
                json!({"query": "release", "sort": "recent", "limit": 1,
                       "cursor": first["next_cursor"]}),
            )
            .await;
        assert_eq!(order(&second), ["mid.md"]);

        for (filter, want) in [
            (
                json!({"updated_after": "2026-01-05"}),
                vec!["mid.md", "new.md"],
            ),
            (
                json!({"updated_before": "2026-01-11T00:00:00Z"}),
                vec!["old.md"],
            ),
            (
                json!({"updated_after": "2026-01-11", "updated_before": "2026-01-11T00:00:01Z"}),
                vec!["mid.md"],
            ),
            (
                json!({"updated_after": "2026-01-10T23:00:00-02:00"}),
                vec!["new.md"],
            ),
        ] {
            let mut args = filter.clone();
            args["query"] = json!("release");
            let r = s.ok("memory_search", args).await;
            assert_eq!(paths(&r, "hits"), want, "{extra:?} {filter}");
            assert_eq!(r["total_hits"], want.len(), "{filter}");
        }
        for bad in [
            json!({"updated_after": "last week"}),
            json!({"updated_before": "2026-02-30"}),
        ] {
            let mut args = bad.clone();
            args["query"] = json!("release");
            let e = s.err("memory_search", args).await;
            assert!(e.contains("RFC 3339") && e.contains("2026-03-01"), "{e}");
        }
        let e = s
            .err(
                "memory_search",
                json!({"query": "release", "sort": "oldest"}),
            )
            .await;
        assert!(e.contains("sort"), "{e}");
        s.stop().await;
    }
}
