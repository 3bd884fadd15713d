//! Making the history consistent after a crash, done by the next holder of the store
//! lock: a torn last line is cut, and the intended records of an interrupted mutation are
//! appended if the files are in the state they describe.

use super::append::append;
use super::heads::Heads;
use super::log::{LOG, Record, parse};
use crate::error::Result;
use crate::store::{Store, StoreLock};

/// What [`repair`] put right.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// Bytes of a torn last line cut off the log.
    pub torn_bytes: u64,
    /// Records of an interrupted mutation appended from its intent.
    pub completed: usize,
}

/// Makes the history consistent after a crash: cuts a torn last line, and appends the
/// intended records whose mutation happened (`happened` checks one against the files)
/// and that the log does not hold yet (a crash between the append and clearing the
/// intent leaves records that are already there). Leaves `heads` up to date.
pub fn repair(
    store: &Store,
    lock: &StoreLock,
    heads: &mut Heads,
    happened: impl Fn(&Record) -> bool,
) -> Result<Repaired> {
    let mut repaired = Repaired::default();
    let mut len = store.state_len(LOG)?;
    // Whole records end with a newline: one byte tells whether the last append was torn.
    // Up to `heads.offset` the log is known to end with one.
    if len > 0 && len != heads.offset && store.state_read_from(LOG, len - 1)? != b"\n" {
        let tail = store.state_read_from(LOG, len.saturating_sub(1024 * 1024))?;
        {
            let cut = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let keep = len - tail.len() as u64 + cut as u64;
            store.state_truncate(LOG, keep)?;
            repaired.torn_bytes = len - keep;
            len = keep;
        }
    }
    heads.refresh_to(store, len)?;
    let intent = lock.intent()?;
    if intent.is_empty() {
        return Ok(repaired);
    }
    let (records, _) = parse(&intent);
    let done: Vec<&Record> = records
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.version > heads.last_version && happened(r))
        .collect();
    if !done.is_empty() {
        repaired.completed = done.len();
        append(store, heads, done.into_iter())?;
    }
    lock.clear_intent()?;
    Ok(repaired)
}
