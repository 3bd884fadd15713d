//! Resource notifications, in both subscription models: the legacy `resources/subscribe`
//! (with `notifications/resources/list_changed` to a client that listed resources) and the
//! 2026-07-28 `subscriptions/listen`. One task per connection polls the library's change
//! feed every `POLL` once something asked for notifications (listing resources, a
//! subscription, a listen stream): sessions that only use tools never watch. Changes made
//! outside the server (an editor, another memdir process) are reported like its own.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};

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

/// Who wants which notifications on this connection.
#[derive(Default)]
pub(super) struct Subscriptions {
    state: Mutex<State>,
    /// Set once the polling task runs (its feed was made before).
    polling: tokio::sync::OnceCell<()>,
    /// A feed made ahead of the polling task (see [`Subscriptions::prepare`]).
    prepared: Mutex<Option<Feed>>,
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
}

struct Listener {
    key: u64,
    sink: SubscriptionSink,
    /// Accepted resource URIs, with their canonical paths.
    uris: Vec<(String, String)>,
    list_changed: bool,
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

    /// Registers a `subscriptions/listen` stream; returns its key for [`Self::forget`].
    pub async fn listen(
        self: &Arc<Self>,
        memdir: &Arc<Memdir>,
        flow: &FlowHandle,
        sink: SubscriptionSink,
        uris: Vec<(String, String)>,
        list_changed: bool,
    ) -> u64 {
        let key = {
            let mut state = self.lock();
            let key = state.next_listener;
            state.next_listener += 1;
            state.listeners.push(Listener {
                key,
                sink,
                uris,
                list_changed,
            });
            key
        };
        self.start(memdir, flow).await;
        key
    }

    pub fn forget(&self, key: u64) {
        self.lock().listeners.retain(|l| l.key != key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the feed now, on this thread, if the polling task does not run yet: for a
    /// caller that cannot await but must have the watches in place before it returns.
    pub fn prepare(&self, memdir: &Memdir) {
        if self.polling.initialized() {
            return;
        }
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if prepared.is_none() {
            *prepared = Some(Feed::start(memdir));
        }
    }

    /// Starts the polling task once, on the first request that asks for notifications;
    /// every such request awaits it, so the feed (the watches) exists before it is
    /// answered and a change after the answer is reported.
    async fn start(self: &Arc<Self>, memdir: &Arc<Memdir>, flow: &FlowHandle) {
        self.polling
            .get_or_init(|| async {
                let prepared = self
                    .prepared
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let feed = match prepared {
                    Some(feed) => feed,
                    None => {
                        let m = Arc::clone(memdir);
                        match tokio::task::spawn_blocking(move || Feed::start(&m)).await {
                            Ok(feed) => feed,
                            Err(e) => {
                                tracing::error!(error = %e, "could not start watching for changes");
                                return;
                            }
                        }
                    }
                };
                tokio::spawn(poll_loop(
                    Arc::clone(memdir),
                    Arc::clone(self),
                    flow.clone(),
                    feed,
                ));
            })
            .await;
    }
}

async fn poll_loop(
    memdir: Arc<Memdir>,
    subs: Arc<Subscriptions>,
    flow: FlowHandle,
    mut feed: Feed,
) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Changes not yet told: while the client is not reading its output, they gather here,
    // each path once, instead of in the output queue.
    let mut pending = FeedEvents::default();
    loop {
        tick.tick().await;
        let m = Arc::clone(&memdir);
        let Ok((back, events)) = tokio::task::spawn_blocking(move || {
            let events = feed.poll(&m);
            (feed, events)
        })
        .await
        else {
            return;
        };
        feed = back;
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

/// Sends what `events` means to everyone who asked.
async fn notify(subs: &Subscriptions, events: &FeedEvents) {
    let (peer, updated, listeners) = {
        let state = subs.lock();
        let updated: Vec<String> = state
            .uris
            .iter()
            .filter(|(_, path)| events.touches(path))
            .map(|(uri, _)| uri.clone())
            .collect();
        let listeners: Vec<(SubscriptionSink, Vec<String>, bool)> = state
            .listeners
            .iter()
            .map(|l| {
                (
                    l.sink.clone(),
                    l.uris
                        .iter()
                        .filter(|(_, path)| events.touches(path))
                        .map(|(uri, _)| uri.clone())
                        .collect(),
                    l.list_changed && events.list_changed,
                )
            })
            .collect();
        (state.peer.clone(), updated, listeners)
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
    for (sink, uris, list_changed) in listeners {
        for uri in uris {
            let _ = sink.notify_resource_updated(uri).await;
        }
        if list_changed {
            let _ = sink.notify_resource_list_changed().await;
        }
    }
}
