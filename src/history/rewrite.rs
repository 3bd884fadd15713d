//! The only rewrites of the log: redaction (a version's content and path erased) and
//! retention (versions beyond what is kept dropped), each a whole-file atomic replace that
//! moves content to a surviving record of the same bytes before dropping it.

use std::collections::{HashMap, HashSet};

use super::log::{LOG, Op, Record, parse, records, to_line};
use crate::error::{Error, Result};
use crate::store::Store;

/// Retention: how many versions per path, and for how long.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retention {
    pub keep_versions: Option<usize>,
    pub keep_days: Option<u64>,
}

/// What a rewrite does with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    Record,
    Redact,
    Drop,
}

/// Rewrites the log (atomically) with `keep` applied to each record (redaction,
/// retention). Content carried by a record that is dropped or redacted moves to the first
/// surviving unredacted record of the same sha256, or leaves the log.
fn rewrite(store: &Store, mut keep: impl FnMut(&Record) -> Keep) -> Result<usize> {
    let all: Vec<Record> = parse(&store.state_read_from(LOG, 0)?)
        .0
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let before = all.len();
    let mut kept: Vec<Record> = Vec::with_capacity(all.len());
    let mut orphaned: HashMap<String, (Option<String>, Option<String>)> = HashMap::new();
    for mut r in all {
        let decision = keep(&r);
        if decision != Keep::Record && r.has_content() {
            orphaned.insert(r.sha256.clone(), r.take_content());
        }
        match decision {
            Keep::Drop => continue,
            Keep::Redact => {
                if !r.path.is_empty() {
                    r.path_sha256 = Some(crate::text::sha256_hex(r.path.as_bytes()));
                }
                r.reason = None;
                r.path.clear();
                r.from = None;
                r.sha256.clear();
                r.size = 0;
                r.redacted = true;
            }
            Keep::Record => {}
        }
        kept.push(r);
    }
    // Hand each orphaned content to the first surviving record that refers to it.
    for r in kept.iter_mut().filter(|r| !r.redacted && !r.has_content()) {
        if let Some((text, b64)) = orphaned.remove(&r.sha256) {
            r.content = text;
            r.content_base64 = b64;
        }
    }
    let mut bytes = Vec::new();
    for r in &kept {
        to_line(r, &mut bytes)?;
    }
    store.state_write(LOG, &bytes)?;
    Ok(before - kept.len())
}

/// Erases version `version`'s content and path, keeping who and when. The content leaves
/// the disk unless another unredacted version holds the same bytes.
pub fn redact(store: &Store, version: u64) -> Result<Record> {
    let mut found = None;
    rewrite(store, |r| {
        if r.version == version {
            let mut shown = r.clone();
            shown.take_content();
            found = Some(shown);
            Keep::Redact
        } else {
            Keep::Record
        }
    })?;
    found.ok_or_else(|| Error::InvalidArgument(format!("there is no version {version}")))
}

/// Drops versions beyond the retention, never the current version of a live memory
/// (`live`: relative path → sha256 of the file now). Returns how many were dropped.
pub fn prune(
    store: &Store,
    retention: Retention,
    live: &HashMap<String, String>,
    now_days: u64,
) -> Result<usize> {
    if retention.keep_versions.is_none() && retention.keep_days.is_none() {
        return Ok(0);
    }
    let all = records(store)?;
    // Newest first per path: the rank of each version within its path.
    let mut rank: HashMap<u64, usize> = HashMap::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for r in all.iter().rev() {
        let n = seen.entry(r.path.as_str()).or_default();
        rank.insert(r.version, *n);
        *n += 1;
    }
    let current: HashSet<u64> = all
        .iter()
        .rev()
        .filter(|r| live.get(&r.path) == Some(&r.sha256) && r.op != Op::Deleted)
        .fold(HashMap::<&str, u64>::new(), |mut m, r| {
            m.entry(r.path.as_str()).or_insert(r.version);
            m
        })
        .into_values()
        .collect();
    rewrite(store, |r| {
        let too_many = retention
            .keep_versions
            .is_some_and(|k| rank[&r.version] >= k);
        let too_old = retention
            .keep_days
            .is_some_and(|d| days_of(&r.at).is_some_and(|day| now_days.saturating_sub(day) > d));
        if current.contains(&r.version) || !(too_many || too_old) {
            Keep::Record
        } else {
            Keep::Drop
        }
    })
}

/// Days since the epoch of an RFC 3339 date (`YYYY-MM-DD...`).
fn days_of(at: &str) -> Option<u64> {
    let y: i64 = at.get(0..4)?.parse().ok()?;
    let m: i64 = at.get(5..7)?.parse().ok()?;
    let d: i64 = at.get(8..10)?.parse().ok()?;
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_to_days() {
        assert_eq!(days_of("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(days_of("2026-11-22T08:00:00Z"), Some(20_779));
        assert_eq!(days_of("garbage"), None);
    }
}
