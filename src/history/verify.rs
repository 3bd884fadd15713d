//! `memdir check`'s look at a history log: every line a record, versions increasing,
//! every version's content present and matching its hash.

use std::collections::{HashMap, HashSet};

use super::log::{LOG, Op, Record};
use crate::error::Result;
use crate::store::Store;

/// What `memdir check` found in a store's history log.
#[derive(Debug, Default)]
pub struct LogCheck {
    pub records: usize,
    /// 1-based line numbers of lines that are not a record.
    pub malformed: Vec<usize>,
    /// Bytes after the last newline (a torn append, cut by the next mutation).
    pub torn_bytes: usize,
    /// Versions whose number is not above the one before.
    pub out_of_order: Vec<u64>,
    /// Versions whose content is in no record of the log.
    pub missing_content: Vec<u64>,
    /// Versions whose stored content does not hash to their sha256.
    pub corrupt_content: Vec<u64>,
    /// The last version of each path that exists in history (path → sha256), for
    /// comparing with the files.
    pub heads: HashMap<String, String>,
}

/// Reads the whole log and checks it: every line a record, versions increasing, every
/// version's content present and matching its hash.
pub fn verify(store: &Store) -> Result<LogCheck> {
    let bytes = store.state_read_from(LOG, 0)?;
    let mut check = LogCheck::default();
    let mut contents: HashSet<String> = HashSet::new();
    let mut needed: Vec<(u64, String)> = Vec::new();
    let mut last = 0u64;
    let mut consumed = 0usize;
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        if !line.ends_with(b"\n") {
            check.torn_bytes = line.len();
            break;
        }
        consumed += line.len();
        let Ok(r) = serde_json::from_slice::<Record>(line) else {
            check.malformed.push(i + 1);
            continue;
        };
        check.records += 1;
        if r.version <= last {
            check.out_of_order.push(r.version);
        }
        last = last.max(r.version);
        if let Some(content) = r.content_bytes() {
            if crate::text::sha256_hex(&content) == r.sha256 {
                contents.insert(r.sha256.clone());
            } else {
                check.corrupt_content.push(r.version);
            }
        } else if !r.redacted {
            needed.push((r.version, r.sha256.clone()));
        }
        match r.op {
            Op::Deleted => {
                check.heads.remove(&r.path);
            }
            _ if r.redacted => {}
            _ => {
                if let Some(from) = &r.from {
                    check.heads.remove(from);
                }
                check.heads.insert(r.path.clone(), r.sha256.clone());
            }
        }
    }
    debug_assert!(consumed <= bytes.len());
    check.missing_content = needed
        .into_iter()
        .filter(|(_, sha)| !contents.contains(sha))
        .map(|(v, _)| v)
        .collect();
    Ok(check)
}
