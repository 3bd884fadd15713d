//! What the portable create-only rename (a hard link to the new name, then the temp name
//! unlinked; macOS, Windows, `--features portable`, and Linux file systems without
//! `RENAME_NOREPLACE`) asks of readers: a memory caught between those two steps has two
//! links, and a read in another process must not take it for a hard link out of the store.
//! Every other hard link is still refused.

mod common;

use common::Sandbox;
use serde_json::json;

/// Where the second (and third) names of `note.md` are made, relative to the sandbox.
struct Case {
    links: &'static [&'static str],
    readable: bool,
}

const CASES: &[Case] = &[
    // A create-only write of another process, between the link and the unlink.
    Case {
        links: &["store/.memdir/tmp/.memdir-tmp-4242-0"],
        readable: true,
    },
    // Not a temp file's name.
    Case {
        links: &["store/.memdir/tmp/kept.md"],
        readable: false,
    },
    Case {
        links: &["store/copy.md"],
        readable: false,
    },
    Case {
        links: &["outside/alias.md"],
        readable: false,
    },
    // A temp name besides a link out of the store: still an alias of outside data.
    Case {
        links: &["store/.memdir/tmp/.memdir-tmp-4242-0", "outside/alias.md"],
        readable: false,
    },
];

async fn check(case: &Case) {
    let sb = Sandbox::new();
    std::fs::write(sb.store().join("note.md"), "the okapi\n").unwrap();
    // Start first: a server sweeps leftover temp files when it opens the store.
    let s = sb.serve().await;
    s.ok("memory_read", json!({"path": "note.md"})).await;
    std::fs::create_dir_all(sb.store().join(".memdir/tmp")).unwrap();
    for link in case.links {
        std::fs::hard_link(sb.store().join("note.md"), sb.tmp.path().join(link)).unwrap();
    }
    let read = s.call("memory_read", json!({"path": "note.md"})).await;
    let what = format!("links {:?}: {}", case.links, read.text);
    if case.readable {
        assert!(!read.is_error, "{what}");
        assert!(read.text.contains("the okapi"), "{what}");
    } else {
        assert!(read.is_error, "{what}");
        assert!(read.text.to_lowercase().contains("hard link"), "{what}");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_file_between_link_and_unlink_reads_and_other_links_are_refused() {
    for case in CASES {
        check(case).await;
    }
}
