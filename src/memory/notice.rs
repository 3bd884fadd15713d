//! Notices for the operator: what the library found and did on its own that someone
//! running the server should hear of (a search index rebuilt, a damaged history log
//! repaired, a crashed write's temp files removed). Sync code sends; the edge (the MCP
//! layer) forwards them to whoever listens. Never memory contents, never tokens: only
//! store names, counts and error texts.
//!
//! The last [`KEPT`] notices are kept, so a listener that starts late (a client that
//! connects or sets its level after start-up) still gets the start-up ones.

use std::collections::VecDeque;
use std::sync::Mutex;

/// How many notices are kept for late listeners.
pub const KEPT: usize = 32;

/// How much a notice matters, least first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Routine upkeep worth knowing (an index built, old versions dropped).
    Info,
    /// Something went wrong before and was put right, or a feature fell back (a torn log
    /// line cut, temp files of a crashed write removed, search by scan).
    Warning,
    /// Something could not be put right.
    Error,
}

/// One notice: its sequence number (from 1, in the order sent), level and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub seq: u64,
    pub level: Level,
    pub message: String,
}

/// The notices of one [`Memdir`](super::Memdir).
#[derive(Debug)]
pub struct Notices {
    kept: Mutex<VecDeque<Notice>>,
    /// The sequence number of the last notice sent: listeners wait for it to change.
    last: tokio::sync::watch::Sender<u64>,
}

impl Default for Notices {
    fn default() -> Self {
        Notices {
            kept: Mutex::new(VecDeque::with_capacity(KEPT)),
            last: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl Notices {
    /// Sends a notice (also to the log on stderr); callable from any thread.
    pub fn send(&self, level: Level, message: impl Into<String>) {
        let message = message.into();
        match level {
            Level::Info => tracing::info!("{message}"),
            Level::Warning => tracing::warn!("{message}"),
            Level::Error => tracing::error!("{message}"),
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let seq = *self.last.borrow() + 1;
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back(Notice {
            seq,
            level,
            message,
        });
        // Under the lock, so sequence numbers reach listeners in order.
        self.last.send_replace(seq);
    }

    /// The kept notices, oldest first.
    pub fn kept(&self) -> Vec<Notice> {
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// A receiver that sees each change of the last sequence number.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.last.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_ones_in_order() {
        let notices = Notices::default();
        for i in 0..KEPT + 3 {
            notices.send(Level::Info, format!("n{i}"));
        }
        let kept = notices.kept();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0].seq, 4);
        assert_eq!(kept[0].message, "n3");
        assert_eq!(kept.last().map(|n| n.seq), Some(KEPT as u64 + 3));
        assert_eq!(*notices.watch().borrow(), KEPT as u64 + 3);
    }
}
