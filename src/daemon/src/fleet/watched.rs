// SPDX-License-Identifier: GPL-3.0-or-later
//! Members whose silence matters now: node 0 of an elastic training coordinated here
//! (`elastic::Losses::watched` says why only that one).
//!
//! PGR/1 takes a link for dead after 45 s of silence (§6.7). For a node 0 that lost power in
//! the middle of a training, that is 45 s before the training can start again without it,
//! while the others wait on a rendezvous that will never answer. So while a coordinator
//! watches a member, the member's link pings it after a shorter silence and gives up after a
//! shorter one (`Timing::watched_*`). The peer only answers PINGs, as it always does: nothing
//! changes on the wire.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use super::Fleet;

/// Each watcher's set of node ids (hex).
pub type WatchedNodes = BTreeMap<u64, BTreeSet<String>>;

/// The table of watchers, inside [`Fleet`].
#[derive(Debug)]
pub(super) struct Watched {
    sets: watch::Sender<WatchedNodes>,
    next_id: AtomicU64,
}

impl Default for Watched {
    fn default() -> Self {
        Self {
            sets: watch::channel(WatchedNodes::new()).0,
            next_id: AtomicU64::new(0),
        }
    }
}

/// Whether any watcher watches `node_id`.
#[must_use]
pub fn is_watched(sets: &WatchedNodes, node_id: &str) -> bool {
    sets.values().any(|nodes| nodes.contains(node_id))
}

/// One coordinator's watch (over its training's node 0); dropping it ends the watch.
pub struct Watcher {
    fleet: Arc<Fleet>,
    id: u64,
}

impl Watcher {
    /// Watches exactly `nodes` from now on (the others of this watcher are let go).
    pub fn set(&self, nodes: impl IntoIterator<Item = String>) {
        let nodes: BTreeSet<String> = nodes.into_iter().collect();
        self.fleet.watched.sets.send_if_modified(|sets| {
            if sets.get(&self.id).is_some_and(|current| *current == nodes) {
                return false;
            }
            if nodes.is_empty() {
                return sets.remove(&self.id).is_some();
            }
            sets.insert(self.id, nodes);
            true
        });
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.fleet
            .watched
            .sets
            .send_if_modified(|sets| sets.remove(&self.id).is_some());
    }
}

impl Fleet {
    /// A new watcher, watching nothing yet.
    #[must_use]
    pub fn watcher(self: &Arc<Self>) -> Watcher {
        Watcher {
            fleet: Arc::clone(self),
            id: self.watched.next_id.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Follows the watched members (links).
    #[must_use]
    pub fn subscribe_watched(&self) -> watch::Receiver<WatchedNodes> {
        self.watched.sets.subscribe()
    }
}
