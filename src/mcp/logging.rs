//! MCP logging: `logging/setLevel`, and the library's notices (`memory::Notices`: an index
//! rebuilt, a history log repaired, temp files of a crashed write removed) sent to a stdio
//! client as `notifications/message` from logger `memdir`.
//!
//! Before the client sets a level it gets `warning` and above (the specification lets a
//! server send before `setLevel`, and a warning is what an operator must not miss); after,
//! what is at or above the level it set. Setting a level also sends the kept notices at or
//! above it that this connection has not had yet, so the start-up ones reach a client that
//! asks after they happened. Each notice reaches a connection at most once.
//!
//! Only over stdio: stateless HTTP has no connection to push on outside a
//! `subscriptions/listen` stream, so HTTP clients get no notices (`setLevel` is accepted
//! and changes nothing). One task per connection sends, starting once the client is ready
//! (`notifications/initialized`, or its first `setLevel`); it waits while the client is
//! not reading its output and stops once the input has ended (a notification sent then
//! could wait forever on a client that is gone).

#![allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); the protocol has it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use tokio::sync::Notify;

use super::flow::FlowHandle;
use crate::memory::{Level, Memdir, Notice};

/// The logger name on every message.
const LOGGER: &str = "memdir";
/// The level a connection gets before it sets one.
const DEFAULT_LEVEL: LoggingLevel = LoggingLevel::Warning;
/// How often a notice waiting for the client to read its output looks again.
const BACKLOG_POLL: Duration = Duration::from_millis(50);

/// One connection's logging: the level set, and which notices it has had.
#[derive(Default)]
pub(super) struct Logging {
    state: Mutex<State>,
    /// Woken when the level changes.
    level_set: Notify,
    started: AtomicBool,
}

#[derive(Default)]
struct State {
    level: Option<LoggingLevel>,
    /// Sequence numbers of the kept notices already sent.
    sent: BTreeSet<u64>,
}

impl Logging {
    /// `logging/setLevel`: from now on, notices at or above `level` (and those kept that
    /// were held back).
    pub fn set_level(&self, level: LoggingLevel) {
        self.lock().level = Some(level);
        // A permit is stored if the task is not waiting right now.
        self.level_set.notify_one();
    }

    /// Starts the sending task once (the client is ready for notifications).
    pub fn start(
        self: &Arc<Self>,
        memdir: &Arc<Memdir>,
        flow: &FlowHandle,
        peer: &Peer<RoleServer>,
    ) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(send_loop(
            Arc::clone(self),
            Arc::clone(memdir),
            flow.clone(),
            peer.clone(),
        ));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kept notices due to this connection, marked as sent.
    fn due(&self, kept: &[Notice]) -> Vec<Notice> {
        let mut state = self.lock();
        let threshold = rank(state.level.unwrap_or(DEFAULT_LEVEL));
        // Forget what is no longer kept.
        if let Some(oldest) = kept.first() {
            state.sent = state.sent.split_off(&oldest.seq);
        }
        let due: Vec<Notice> = kept
            .iter()
            .filter(|n| rank(level(n.level)) >= threshold && !state.sent.contains(&n.seq))
            .cloned()
            .collect();
        state.sent.extend(due.iter().map(|n| n.seq));
        due
    }
}

async fn send_loop(
    logging: Arc<Logging>,
    memdir: Arc<Memdir>,
    flow: FlowHandle,
    peer: Peer<RoleServer>,
) {
    let mut sent_up_to = memdir.notices().watch();
    loop {
        sent_up_to.borrow_and_update();
        for notice in logging.due(&memdir.notices().kept()) {
            while flow.backlogged() {
                tokio::select! {
                    biased;
                    () = flow.input_ended() => return,
                    () = tokio::time::sleep(BACKLOG_POLL) => {}
                }
            }
            let message = LoggingMessageNotificationParam::new(
                level(notice.level),
                serde_json::Value::String(notice.message),
            )
            .with_logger(LOGGER);
            tokio::select! {
                biased;
                () = flow.input_ended() => return,
                sent = peer.notify_logging_message(message) => if sent.is_err() { return },
            }
        }
        tokio::select! {
            biased;
            () = flow.input_ended() => return,
            changed = sent_up_to.changed() => if changed.is_err() { return },
            () = logging.level_set.notified() => {}
        }
    }
}

/// The MCP level of a notice.
fn level(level: Level) -> LoggingLevel {
    match level {
        Level::Info => LoggingLevel::Info,
        Level::Warning => LoggingLevel::Warning,
        Level::Error => LoggingLevel::Error,
    }
}

/// Severity order of the MCP levels (RFC 5424's, least severe first).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(seq: u64, level: Level) -> Notice {
        Notice {
            seq,
            level,
            message: format!("n{seq}"),
        }
    }

    /// Which of `kept` are due after each step: a level set (or none), then `due`.
    fn check(steps: &[(Option<LoggingLevel>, &[Notice], &[u64])]) {
        let logging = Logging::default();
        for (i, (set, kept, expect)) in steps.iter().enumerate() {
            if let Some(l) = set {
                logging.set_level(*l);
            }
            let got: Vec<u64> = logging.due(kept).iter().map(|n| n.seq).collect();
            assert_eq!(&got, expect, "step {i}");
        }
    }

    #[test]
    fn levels_filter_and_replay_once() {
        let a = [notice(1, Level::Info), notice(2, Level::Warning)];
        let b = [
            notice(1, Level::Info),
            notice(2, Level::Warning),
            notice(3, Level::Info),
            notice(4, Level::Error),
        ];
        check(&[
            // Before setLevel: warning and above.
            (None, &a, &[2]),
            // Setting info replays what was held back, not what was sent.
            (Some(LoggingLevel::Info), &a, &[1]),
            (Some(LoggingLevel::Error), &b, &[4]),
            (Some(LoggingLevel::Debug), &b, &[3]),
            (None, &b, &[]),
        ]);
        // Notices no longer kept are forgotten; a later one still goes out.
        check(&[
            (Some(LoggingLevel::Info), &a, &[1, 2]),
            (
                None,
                &[notice(2, Level::Warning), notice(5, Level::Info)],
                &[5],
            ),
        ]);
    }
}
