// SPDX-License-Identifier: GPL-3.0-or-later
//! The members table and its one rule: one link per pair of machines (§7.5).
//!
//! Two machines that find each other at once dial each other at once. Both sides then keep
//! the same link without talking about it: the newer one if the peer restarted (its boot id
//! changed) or reconnected the same way, otherwise the one the smaller node id dialled.
//!
//! A boot id that was followed by another never comes back from a real machine (each run of
//! the service draws a new one). When it does, two live machines hold one identity key (a
//! disk copied with its machine id): keeping "the newer one" would swap their links back
//! and forth many times a second, so the one whose boot id was already replaced is refused
//! for as long as the other is linked.

use std::collections::HashMap;
use std::net::SocketAddr;

use partagpu_core::fleet::NodeState;
use partagpu_core::protocol::VerifiedNode;
use partagpu_core::room::fingerprint;
use tokio::sync::oneshot;

use super::Refused;
use crate::peer::now_ms;

/// Members kept at most; offline ones make room first.
pub const MAX_MEMBERS: usize = 256;
/// Boot ids remembered per member once another followed them.
const RETIRED_BOOTS: usize = 4;

/// One verified member as this machine knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Node id, hex.
    pub node_id: String,
    /// Its key's fingerprint (six words).
    pub fingerprint: String,
    /// Where it listens, when known.
    pub address: Option<SocketAddr>,
    /// Its last state, once it sent one.
    pub state: Option<NodeState>,
    /// A link is up now.
    pub online: bool,
    /// Last time it was heard (ms since the epoch).
    pub last_seen_ms: u64,
    /// When its state last arrived.
    pub updated_ms: Option<u64>,
}

struct Link {
    id: u64,
    boot: String,
    dialler: String,
    close: Option<oneshot::Sender<&'static str>>,
}

impl Link {
    fn close(&mut self, reason: &'static str) {
        if let Some(close) = self.close.take() {
            let _ = close.send(reason);
        }
    }
}

struct Entry {
    member: Member,
    link: Option<Link>,
    /// The boot id of the last link, and the ones before it, newest last.
    last_boot: Option<String>,
    retired_boots: Vec<String>,
}

impl Entry {
    /// Notes the boot of a new link; refuses one that another boot followed while that other
    /// one is linked. Once the kept link ends, the refused machine is the only one there and
    /// is taken back (the copy was switched off, or given its own identity).
    fn check_boot(&mut self, boot: &str) -> Result<(), Refused> {
        let linked_elsewhere = self.link.as_ref().is_some_and(|link| link.boot != boot);
        if linked_elsewhere && self.retired_boots.iter().any(|b| b == boot) {
            return Err(Refused::SameIdentity);
        }
        self.retired_boots.retain(|b| b != boot);
        if let Some(last) = self
            .last_boot
            .replace(boot.to_owned())
            .filter(|last| last != boot)
        {
            if self.retired_boots.len() == RETIRED_BOOTS {
                self.retired_boots.remove(0);
            }
            self.retired_boots.push(last);
        }
        Ok(())
    }
}

/// A link asking to be registered.
pub(super) struct Registration<'a> {
    pub node: &'a VerifiedNode,
    /// Node id of the side that dialled.
    pub dialler: String,
    /// The smaller of the two node ids.
    pub canonical: String,
    pub boot: String,
    pub address: Option<SocketAddr>,
    pub close: oneshot::Sender<&'static str>,
}

#[derive(Default)]
pub(super) struct Table {
    entries: HashMap<String, Entry>,
    next_id: u64,
}

impl Table {
    pub fn register(&mut self, new: Registration<'_>) -> Result<u64, Refused> {
        let node_id = new.node.node_id.to_hex();
        if !self.entries.contains_key(&node_id) && self.entries.len() >= MAX_MEMBERS {
            let stalest = self
                .entries
                .iter()
                .filter(|(_, e)| e.link.is_none())
                .min_by_key(|(_, e)| e.member.last_seen_ms)
                .map(|(id, _)| id.clone())
                .ok_or(Refused::Full)?;
            self.entries.remove(&stalest);
        }
        let entry = self.entries.entry(node_id.clone()).or_insert_with(|| Entry {
            member: Member {
                node_id,
                fingerprint: fingerprint(&new.node.public_key),
                address: None,
                state: None,
                online: false,
                last_seen_ms: 0,
                updated_ms: None,
            },
            link: None,
            last_boot: None,
            retired_boots: Vec::new(),
        });
        entry.check_boot(&new.boot)?;
        if let Some(old) = &mut entry.link {
            let newer_wins = old.boot != new.boot || old.dialler == new.dialler;
            if !newer_wins && new.dialler != new.canonical {
                return Err(Refused::Duplicate);
            }
            old.close(if newer_wins {
                "replaced by a newer session"
            } else {
                "duplicate session"
            });
        }
        self.next_id += 1;
        entry.link = Some(Link {
            id: self.next_id,
            boot: new.boot,
            dialler: new.dialler,
            close: Some(new.close),
        });
        if new.address.is_some() {
            entry.member.address = new.address;
        }
        entry.member.online = true;
        entry.member.last_seen_ms = now_ms();
        Ok(self.next_id)
    }

    fn current(&mut self, node_id: &str, link_id: u64) -> Option<&mut Entry> {
        self.entries
            .get_mut(node_id)
            .filter(|e| e.link.as_ref().is_some_and(|l| l.id == link_id))
    }

    pub fn unregister(&mut self, node_id: &str, link_id: u64) -> bool {
        let Some(entry) = self.current(node_id, link_id) else {
            return false;
        };
        entry.link = None;
        entry.member.online = false;
        entry.member.last_seen_ms = now_ms();
        true
    }

    pub fn update(&mut self, node_id: &str, link_id: u64, state: NodeState) -> bool {
        let Some(entry) = self.current(node_id, link_id) else {
            return false;
        };
        let now = now_ms();
        entry.member.last_seen_ms = now;
        entry.member.updated_ms = Some(now);
        entry.member.state = Some(state);
        true
    }

    pub fn clear(&mut self) {
        for entry in self.entries.values_mut() {
            if let Some(link) = &mut entry.link {
                link.close("this machine left the room");
            }
        }
        self.entries.clear();
    }

    pub fn online_at(&self, address: SocketAddr) -> bool {
        self.entries
            .values()
            .any(|e| e.link.is_some() && e.member.address == Some(address))
    }

    pub fn members(&self) -> Vec<Member> {
        let mut members: Vec<Member> = self.entries.values().map(|e| e.member.clone()).collect();
        let name = |m: &Member| m.state.as_ref().map(|s| s.name.to_lowercase());
        members.sort_by(|a, b| (name(a), &a.node_id).cmp(&(name(b), &b.node_id)));
        members
    }
}
