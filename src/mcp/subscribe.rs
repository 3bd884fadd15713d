//! Resource notifications, in both subscription models: the legacy `resources/subscribe`
//! (with `notifications/resources/list_changed` to a client that listed resources) and the
//! 2026-07-28 `subscriptions/listen`. One feed of changes (one watch per store) serves
//! every subscriber of the server, over stdio and HTTP alike: a task polls it every `POLL`
//! while someone wants notifications (a client that listed resources or subscribed, an
//! open listen stream, one being acknowledged), and stops, closing the watches, when the
//! last one leaves. Sessions that only use tools never watch. Each listen stream forwards
//! its own notifications, so a client that does not read holds back no one else. Changes
//! made outside the server (an editor, another memdir process) are reported like its own.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSendError, SubscriptionSink};

use super::flow::FlowHandle;
use crate::memory::{Feed, FeedEvents, Memdir};

/// How often the feed is polled while notifications are wanted.
const POLL: Duration = Duration::from_millis(200);
/// Resource URIs one connection may subscribe to (per listen stream, and with
/// `resources/subscribe`).
pub(super) const MAX_URIS: usize = 1024;
/// Changed paths gathered while the client does not read, before they are summed up as
/// "everything changed".
const MAX_PENDING_PATHS: usize = 10_000;

/// Who wants which notifications, and the feed that serves them all.
#[derive(Default)]
pub(super) struct Subscriptions {
    state: Mutex<State>,
    /// The one feed, while anyone wants notifications. Locked after `state` when both are.
    feed: Mutex<Option<Feed>>,
}

#[derive(Default)]
struct State {
    /// The legacy model's peer: set once it subscribes or lists resources.
    peer: Option<Peer<RoleServer>>,
    /// URIs subscribed with `resources/subscribe`, with their canonical paths.
    uris: HashSet<(String, String)>,
    /// Open `subscriptions/listen` streams.
    listeners: Vec<Listener>,
    next_listener: u64,
    /// Listen streams being acknowledged (see [`Hold`]).
    holds: usize,
    /// Whether the polling task runs.
    polling: bool,
}

impl State {
    fn wanted(&self) -> bool {
        self.peer.is_some() || !self.uris.is_empty() || !self.listeners.is_empty() || self.holds > 0
    }
}

struct Listener {
    key: u64,
    inbox: Arc<Inbox>,
    /// Accepted resource URIs, with their canonical paths.
    uris: Vec<(String, String)>,
    list_changed: bool,
}

/// What one listen stream has yet to send, filled by the polling task.
#[derive(Default)]
struct Inbox {
    news: Mutex<News>,
    ready: tokio::sync::Notify,
}

#[derive(Default)]
struct News {
    updated: Vec<String>,
    list_changed: bool,
}

/// Keeps the feed from stopping between a listen stream's acknowledgement (its filter is
/// accepted before `listen` runs) and its registration; dropped with the request if the
/// stream never opens.
pub(super) struct Hold(Arc<Subscriptions>);

impl Drop for Hold {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.holds -= 1;
        if !state.polling && !state.wanted() {
            self.0.feed_slot().take();
        }
    }
}

/// A registered listen stream, forgotten when dropped (its handler ended or was dropped).
struct Registered<'a> {
    subs: &'a Subscriptions,
    key: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.subs.lock().listeners.retain(|l| l.key != self.key);
    }
}

impl Subscriptions {
    /// A client of the legacy model listed resources: it gets `list_changed`.
    pub async fn listed(
        self: &Arc<Self>,
        memdir: &Arc<Memdir>,
        flow: &FlowHandle,
        peer: &Peer<RoleServer>,
    ) {
        self.lock().peer.get_or_insert_with(|| peer.clone());
        self.start(memdir, flow).await;
    }

    pub async fn subscribe(
        self: &Arc<Self>,
        memdir: &Arc<Memdir>,
        flow: &FlowHandle,
        peer: &Peer<RoleServer>,
        uri: String,
        path: String,
    ) -> Result<(), String> {
        {
            let mut state = self.lock();
            let entry = (uri, path);
            if state.uris.len() >= MAX_URIS && !state.uris.contains(&entry) {
                return Err(format!(
                    "{MAX_URIS} resources are subscribed already; unsubscribe from one first"
                ));
            }
            state.peer.get_or_insert_with(|| peer.clone());
            state.uris.insert(entry);
        }
        self.start(memdir, flow).await;
        Ok(())
    }

    pub fn unsubscribe(&self, uri: &str) {
        self.lock().uris.retain(|(u, _)| u != uri);
    }

    /// Makes sure the feed exists now, on this thread, and keeps it until the returned
    /// hold is dropped: for a listen stream about to be acknowledged (a change after the
    /// acknowledgement must be reported), from a caller that cannot await.
    pub fn hold(self: &Arc<Self>, memdir: &Memdir) -> Hold {
        self.lock().holds += 1;
        let hold = Hold(Arc::clone(self));
        self.ensure_feed(memdir);
        hold
    }

    /// Serves a `subscriptions/listen` stream until `ended` resolves or the stream is
    /// gone: registers it (then drops `hold`), and sends it the changes it asked for.
    pub async fn listen(
        self: &Arc<Self>,
        memdir: &Arc<Memdir>,
        flow: &FlowHandle,
        sink: SubscriptionSink,
        listener: (Vec<(String, String)>, bool),
        hold: Option<Hold>,
        ended: impl Future<Output = ()>,
    ) {
        let (uris, list_changed) = listener;
        let inbox = Arc::new(Inbox::default());
        let registered = {
            let mut state = self.lock();
            let key = state.next_listener;
            state.next_listener += 1;
            state.listeners.push(Listener {
                key,
                inbox: Arc::clone(&inbox),
                uris,
                list_changed,
            });
            Registered { subs: self, key }
        };
        drop(hold);
        self.start(memdir, flow).await;
        let mut ended = std::pin::pin!(ended);
        loop {
            tokio::select! {
                () = &mut ended => break,
                () = inbox.ready.notified() => {}
            }
            let news = std::mem::take(&mut *inbox.news.lock().unwrap_or_else(|e| e.into_inner()));
            let send = async {
                for uri in news.updated {
                    gone(sink.notify_resource_updated(uri).await)?;
                }
                if news.list_changed {
                    gone(sink.notify_resource_list_changed().await)?;
                }
                Ok::<(), ()>(())
            };
            // A client that does not read blocks its own stream only, until it ends.
            let sent = tokio::select! {
                () = &mut ended => break,
                sent = send => sent,
            };
            if sent.is_err() {
                break;
            }
        }
        drop(registered);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn feed_slot(&self) -> MutexGuard<'_, Option<Feed>> {
        self.feed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the feed (the watches) unless it runs. Blocks: it walks the stores.
    fn ensure_feed(&self, memdir: &Memdir) {
        let mut feed = self.feed_slot();
        if feed.is_none() {
            *feed = Some(Feed::start(memdir));
        }
    }

    /// Makes sure the feed exists before the request that asked is answered (so a change
    /// after the answer is reported), and that the polling task runs.
    async fn start(self: &Arc<Self>, memdir: &Arc<Memdir>, flow: &FlowHandle) {
        let (subs, m) = (Arc::clone(self), Arc::clone(memdir));
        if let Err(e) = tokio::task::spawn_blocking(move || subs.ensure_feed(&m)).await {
            tracing::error!(error = %e, "could not start watching for changes");
            return;
        }
        let mut state = self.lock();
        if !state.polling {
            state.polling = true;
            tokio::spawn(poll_loop(
                Arc::clone(memdir),
                Arc::clone(self),
                flow.clone(),
            ));
        }
    }

    /// Whether the polling task goes on; when no one wants notifications any more, it
    /// stops and the feed's watches close.
    fn keep_polling(&self) -> bool {
        let mut state = self.lock();
        if state.wanted() {
            return true;
        }
        state.polling = false;
        self.feed_slot().take();
        false
    }
}

/// `Err` when a listen stream's notification failed because the stream is gone.
fn gone(sent: Result<(), SubscriptionSendError>) -> Result<(), ()> {
    match sent {
        Err(SubscriptionSendError::SubscriptionClosed | SubscriptionSendError::Service(_)) => {
            Err(())
        }
        // Not in the accepted filter: left out, the stream goes on.
        _ => Ok(()),
    }
}

async fn poll_loop(memdir: Arc<Memdir>, subs: Arc<Subscriptions>, flow: FlowHandle) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Changes not yet told: while the client is not reading its output, they gather here,
    // each path once, instead of in the output queue.
    let mut pending = FeedEvents::default();
    loop {
        tick.tick().await;
        if !subs.keep_polling() {
            return;
        }
        let (s, m) = (Arc::clone(&subs), Arc::clone(&memdir));
        let polled = tokio::task::spawn_blocking(move || {
            s.feed_slot()
                .as_mut()
                .map(|feed| feed.poll(&m))
                .unwrap_or_default()
        })
        .await;
        let events = match polled {
            Ok(events) => events,
            Err(e) => {
                tracing::error!(error = %e, "watching for changes failed");
                let mut state = subs.lock();
                state.polling = false;
                subs.feed_slot().take();
                return;
            }
        };
        for path in events.changed {
            if !pending.changed.contains(&path) {
                pending.changed.push(path);
            }
        }
        pending.everything |= events.everything;
        pending.list_changed |= events.list_changed;
        if pending.changed.len() > MAX_PENDING_PATHS {
            // So many that "everything" says it as well, in less room.
            pending.everything = true;
            pending.changed.clear();
        }
        if pending != FeedEvents::default() && !flow.backlogged() {
            notify(&subs, &std::mem::take(&mut pending)).await;
        }
    }
}

/// Sends what `events` means to the legacy subscriber, and hands each listen stream its
/// part.
async fn notify(subs: &Subscriptions, events: &FeedEvents) {
    let (peer, updated) = {
        let state = subs.lock();
        for listener in &state.listeners {
            let mut news = listener
                .inbox
                .news
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let before = (news.updated.len(), news.list_changed);
            for (uri, path) in &listener.uris {
                if events.touches(path) && !news.updated.contains(uri) {
                    news.updated.push(uri.clone());
                }
            }
            news.list_changed |= listener.list_changed && events.list_changed;
            if (news.updated.len(), news.list_changed) != before {
                listener.inbox.ready.notify_one();
            }
        }
        let updated: Vec<String> = state
            .uris
            .iter()
            .filter(|(_, path)| events.touches(path))
            .map(|(uri, _)| uri.clone())
            .collect();
        (state.peer.clone(), updated)
    };
    if let Some(peer) = peer {
        for uri in updated {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
        if events.list_changed {
            let _ = peer.notify_resource_list_changed().await;
        }
    }
}
