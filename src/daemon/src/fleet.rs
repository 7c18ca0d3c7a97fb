// SPDX-License-Identifier: GPL-3.0-or-later
//! The live fleet: every verified member of the room, its state and load (docs/fleet.md).
//!
//! Each member keeps one PGR/1 control session ("link", [`link`]) with every other; the
//! dialler ([`mesh`]) opens them towards what mDNS announces. This table is what both sides of
//! every link report into, and what `Fleet1` shows. It holds no socket: links run in their
//! own tasks and are told to close through the handle they got at registration.

pub mod link;
pub mod local;
pub mod mesh;
mod table;
mod watched;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use partagpu_core::fleet::NodeState;
use partagpu_core::protocol::VerifiedNode;
use rand_core::{OsRng, RngCore};
use tokio::sync::{oneshot, watch};

pub use self::table::{Member, MAX_MEMBERS};
use self::table::{Registration, Table};
pub use self::watched::{is_watched, WatchedNodes, Watcher};
use crate::peer::session::Side;

/// What changed, so `Fleet1` signals only that.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Revisions {
    /// Members or their states.
    pub members: u64,
    /// Unverified announcements.
    pub unverified: u64,
    /// Other rooms.
    pub other_rooms: u64,
    /// Interfaces in use.
    pub interfaces: u64,
}

/// What the dialler learnt besides members: shown as they are, for "why is that machine
/// not here?".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surroundings {
    /// Announcements of this room not verified, with why.
    pub unverified: BTreeMap<SocketAddr, String>,
    /// Other rooms: (label, machines).
    pub other_rooms: Vec<(String, u32)>,
    /// Interfaces in use: (name, address/prefix).
    pub interfaces: Vec<(String, String)>,
}

/// A link's ticket in the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkHandle {
    /// Unique per link.
    pub id: u64,
    /// The member's node id (hex).
    pub node_id: String,
}

/// Fires with the CLOSE reason when the table drops a link (or is dropped).
pub type CloseRequest = oneshot::Receiver<&'static str>;

/// Why a link was not registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A link to that member already exists and wins (§7.5 tie-break).
    #[error("duplicate session")]
    Duplicate,
    /// It is this machine (an announcement of our own address).
    #[error("this is the same machine")]
    Itself,
    /// A second live machine with one identity key: this machine's own from another boot
    /// id, or a member's whose boot id was already replaced (`table.rs`). A disk copied with
    /// its machine id (docs/security.md, `same-identity`).
    #[error("another machine has this machine's identity")]
    SameIdentity,
    /// The table is full of online members.
    #[error("too many members")]
    Full,
}

/// The fleet of this machine.
pub struct Fleet {
    own_node: String,
    boot: String,
    port: u16,
    local: watch::Sender<Arc<NodeState>>,
    table: Mutex<Table>,
    surroundings: Mutex<Surroundings>,
    revisions: watch::Sender<Revisions>,
    watched: watched::Watched,
}

impl Fleet {
    /// A fleet for the machine `own_node` (hex), listening on `port`, whose state is `local`.
    #[must_use]
    pub fn new(own_node: String, port: u16, local: NodeState) -> Self {
        Self {
            own_node,
            // Random per start: tells a restarted peer from a second session of the same run.
            boot: format!("{:016x}", OsRng.next_u64()),
            port,
            local: watch::channel(Arc::new(local)).0,
            table: Mutex::new(Table::default()),
            surroundings: Mutex::new(Surroundings::default()),
            revisions: watch::channel(Revisions::default()).0,
            watched: watched::Watched::default(),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self, part: impl FnOnce(&mut Revisions)) {
        self.revisions.send_modify(part);
    }

    /// This run's boot id, sent in HELLO.
    #[must_use]
    pub fn boot(&self) -> &str {
        &self.boot
    }

    /// The peer port, sent in HELLO so an accepting side learns where to dial back.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// This machine's node id (hex).
    #[must_use]
    pub fn own_node(&self) -> &str {
        &self.own_node
    }

    /// Replaces this machine's state; links send it when it differs.
    pub fn publish_local(&self, state: NodeState) {
        let changed = self.local.send_if_modified(|current| {
            let differs = **current != state;
            if differs {
                *current = Arc::new(state);
            }
            differs
        });
        if changed {
            self.bump(|r| r.members += 1);
        }
    }

    /// This machine's state now.
    #[must_use]
    pub fn local(&self) -> Arc<NodeState> {
        Arc::clone(&self.local.borrow())
    }

    /// Follows this machine's state (links).
    #[must_use]
    pub fn subscribe_local(&self) -> watch::Receiver<Arc<NodeState>> {
        self.local.subscribe()
    }

    /// Follows the revisions (`Fleet1` signals).
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Revisions> {
        self.revisions.subscribe()
    }

    /// Registers a link that just finished its HELLO exchange; the link closes when the
    /// returned [`CloseRequest`] fires.
    ///
    /// # Errors
    /// [`Refused`]: the caller closes the new link with its message.
    pub fn register(
        &self,
        node: &VerifiedNode,
        side: Side,
        peer: SocketAddr,
        peer_boot: &str,
        peer_port: Option<u16>,
    ) -> Result<(LinkHandle, CloseRequest), Refused> {
        let node_id = node.node_id.to_hex();
        if node_id == self.own_node {
            // Our own announcement dialled comes back with our boot id; anything else with
            // our key is a copy of this machine.
            return Err(if peer_boot == self.boot {
                Refused::Itself
            } else {
                Refused::SameIdentity
            });
        }
        // The canonical link of a pair is the one the smaller node id dialled.
        let dialler = match side {
            Side::Client => self.own_node.clone(),
            Side::Server => node_id.clone(),
        };
        let address = match (side, peer_port) {
            (Side::Client, _) => Some(peer),
            (Side::Server, Some(port)) => Some(SocketAddr::new(peer.ip(), port)),
            (Side::Server, None) => None,
        };
        let (close_sender, close) = oneshot::channel();
        let registration = Registration {
            node,
            dialler,
            canonical: std::cmp::min(&self.own_node, &node_id).clone(),
            boot: peer_boot.to_owned(),
            address,
            close: close_sender,
        };
        let id = self.table().register(registration)?;
        self.bump(|r| r.members += 1);
        Ok((LinkHandle { id, node_id }, close))
    }

    /// A link ended; its member turns offline if it was the member's current link.
    pub fn unregister(&self, handle: &LinkHandle) {
        if self.table().unregister(&handle.node_id, handle.id) {
            self.bump(|r| r.members += 1);
        }
    }

    /// A member sent its state over `handle`'s link.
    pub fn update(&self, handle: &LinkHandle, state: NodeState) {
        if self.table().update(&handle.node_id, handle.id, state) {
            self.bump(|r| r.members += 1);
        }
    }

    /// Forgets every member and closes their links (the machine left or changed room).
    pub fn clear(&self) {
        self.table().clear();
        self.bump(|r| r.members += 1);
    }

    /// Whether a live link reaches `address` (the dialler skips it).
    #[must_use]
    pub fn links_to(&self, address: SocketAddr) -> bool {
        self.table().online_at(address)
    }

    /// The members, most recently seen first (not this machine).
    #[must_use]
    pub fn members(&self) -> Vec<Member> {
        self.table().members()
    }

    /// Replaces what the dialler learnt, signalling only what differs.
    pub fn set_surroundings(&self, next: Surroundings) {
        let mut current = self.surroundings.lock().unwrap_or_else(PoisonError::into_inner);
        let (unverified, others, interfaces) = (
            current.unverified != next.unverified,
            current.other_rooms != next.other_rooms,
            current.interfaces != next.interfaces,
        );
        *current = next;
        drop(current);
        if unverified || others || interfaces {
            self.bump(|r| {
                r.unverified += u64::from(unverified);
                r.other_rooms += u64::from(others);
                r.interfaces += u64::from(interfaces);
            });
        }
    }

    /// What the dialler learnt.
    #[must_use]
    pub fn surroundings(&self) -> Surroundings {
        self.surroundings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests;
