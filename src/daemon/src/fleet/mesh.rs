// SPDX-License-Identifier: GPL-3.0-or-later
//! The dialler (PGR/1 §9 "outbound"): opens a link to every announced member of our room
//! that has none, and to offline members at their last address.
//!
//! Every address is an untrusted hint, so dialling is bounded: only addresses discovery
//! allows (LAN prefixes), at most [`MAX_DIALS`] at once, and after a failure the address
//! waits 30 s, doubling up to 5 min. A link that ends may be redialled after 1 s.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use partagpu_core::room::RoomId;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::link::{self, PeerHello};
use super::{Refused, Surroundings};
use crate::discovery::{Discovery, VisibleRoom};
use crate::peer::client::dial;
use crate::peer::session::Side;
use crate::peer::PeerContext;
use crate::room::ActiveRoom;

/// Dials in flight at most.
pub const MAX_DIALS: usize = 8;
/// First wait after a failed dial.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);
/// Longest wait.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// Wait before redialling a member whose link ended.
pub const REDIAL_AFTER: Duration = Duration::from_secs(1);
/// How often interfaces are re-read.
const INTERFACES_EVERY: Duration = Duration::from_secs(5);

enum Outcome {
    Linked,
    Ended(Option<Refused>),
    Failed(String),
}

#[derive(Default)]
struct Attempt {
    next_at: Option<Instant>,
    failures: u32,
    in_flight: bool,
    problem: Option<String>,
}

impl Attempt {
    fn ready(&self, now: Instant) -> bool {
        !self.in_flight && self.next_at.is_none_or(|at| at <= now)
    }

    fn record(&mut self, outcome: Outcome, now: Instant) {
        self.in_flight = false;
        match outcome {
            Outcome::Linked => {
                self.failures = 0;
                self.problem = None;
            }
            Outcome::Ended(Some(Refused::Itself)) => {
                self.next_at = Some(now + Duration::from_secs(3600));
                self.problem = Some("this machine's own address".into());
            }
            // Until one of the two gets its own machine id and restarts; it then dials us.
            Outcome::Ended(Some(Refused::SameIdentity)) => {
                self.next_at = Some(now + MAX_BACKOFF);
                self.problem = Some("another machine has the same identity key (a copied disk)".into());
            }
            Outcome::Ended(_) => self.next_at = Some(now + REDIAL_AFTER),
            Outcome::Failed(problem) => {
                self.failures = self.failures.saturating_add(1);
                let doubling = 2u32.saturating_pow(self.failures - 1);
                self.next_at = Some(now + FIRST_BACKOFF.saturating_mul(doubling).min(MAX_BACKOFF));
                self.problem = Some(problem);
            }
        }
    }
}

/// Where to dial, and what to show for the addresses that are not linked.
struct Candidates {
    dial: Vec<SocketAddr>,
    /// Addresses of verified members, online or not (never listed as unverified).
    known: Vec<SocketAddr>,
    surroundings: Surroundings,
}

/// Rooms other than `own`, as (label, machines), all epochs together.
fn other_rooms(rooms: &[VisibleRoom], own: Option<RoomId>) -> Vec<(String, u32)> {
    let mut others: BTreeMap<String, (String, u32)> = BTreeMap::new();
    for visible in rooms.iter().filter(|r| Some(r.room_id) != own) {
        let entry = others
            .entry(visible.room_id.to_hex())
            .or_insert_with(|| (visible.label.clone(), 0));
        entry.1 += u32::try_from(visible.members.len()).unwrap_or(u32::MAX);
    }
    let mut others: Vec<(String, u32)> = others.into_values().collect();
    others.sort();
    others
}

fn candidates(room: &ActiveRoom, discovery: Option<&Discovery>, context: &PeerContext) -> Candidates {
    let mut dial = Vec::new();
    let mut unverified = BTreeMap::new();
    let rooms = discovery.map(Discovery::rooms).unwrap_or_default();
    let other_rooms = other_rooms(&rooms, Some(room.room_id));
    for visible in rooms {
        if visible.room_id != room.room_id {
            continue;
        }
        if visible.epoch != room.epoch {
            // Dialling would spend a guess on a PAKE that cannot succeed.
            for address in visible.members {
                unverified.insert(
                    address,
                    format!(
                        "it announces the room with code version {} and this machine has {}: \
                         the machine with the older code must join again with the current one",
                        visible.epoch, room.epoch
                    ),
                );
            }
        } else {
            dial.extend(visible.members);
        }
    }
    let members = context.fleet.members();
    let linked: Vec<SocketAddr> = members
        .iter()
        .filter(|m| m.online)
        .filter_map(|m| m.address)
        .collect();
    let known: Vec<SocketAddr> = members.iter().filter_map(|m| m.address).collect();
    dial.extend(members.iter().filter(|m| !m.online).filter_map(|m| m.address));
    dial.sort();
    dial.dedup();
    dial.retain(|address| !linked.contains(address));
    Candidates {
        dial,
        known,
        surroundings: Surroundings {
            unverified,
            other_rooms,
            interfaces: Vec::new(),
        },
    }
}

fn spawn_dial(
    address: SocketAddr,
    room: ActiveRoom,
    context: Arc<PeerContext>,
    done: mpsc::UnboundedSender<(SocketAddr, Outcome)>,
) {
    tokio::spawn(async move {
        match dial(address, &room, &context).await {
            Ok(dialled) => {
                let _ = done.send((address, Outcome::Linked));
                let hello = PeerHello {
                    boot: dialled.hello.boot,
                    port: dialled.hello.port,
                };
                let refused = link::run(dialled.channel, &context, &dialled.node, Side::Client, hello).await;
                let _ = done.send((address, Outcome::Ended(refused)));
            }
            Err(error) => {
                tracing::debug!(%address, %error, "dial failed");
                let _ = done.send((address, Outcome::Failed(error.to_string())));
            }
        }
    });
}

/// Runs the dialler for as long as the service runs.
pub async fn run(context: Arc<PeerContext>, discovery: Option<Arc<Discovery>>) {
    let (done, mut finished) = mpsc::unbounded_channel();
    let mut announcements = discovery.as_ref().map(|d| d.subscribe());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut attempts: HashMap<SocketAddr, Attempt> = HashMap::new();
    let mut room_id: Option<RoomId> = None;
    let mut interfaces = (Instant::now(), Vec::new());
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            Some(Ok(())) = async { match announcements.as_mut() {
                Some(changes) => Some(changes.changed().await),
                None => None,
            } } => {}
            Some((address, outcome)) = finished.recv() => {
                attempts.entry(address).or_default().record(outcome, Instant::now());
            }
        }
        let now = Instant::now();
        if let Some(discovery) = &discovery {
            if interfaces.1.is_empty() || now >= interfaces.0 {
                let used = discovery.refresh_interfaces();
                interfaces = (
                    now + INTERFACES_EVERY,
                    used.into_iter()
                        .map(|i| (i.name, format!("{}/{}", i.address, i.prefix_len)))
                        .collect(),
                );
            }
        }
        let room = context.room.current();
        if room.as_ref().map(|r| r.room_id) != room_id {
            if room_id.is_some() {
                context.fleet.clear();
            }
            room_id = room.as_ref().map(|r| r.room_id);
            attempts.retain(|_, attempt| attempt.in_flight);
        }
        let Some(room) = room else {
            let rooms = discovery.as_deref().map(Discovery::rooms).unwrap_or_default();
            context.fleet.set_surroundings(Surroundings {
                interfaces: interfaces.1.clone(),
                other_rooms: other_rooms(&rooms, None),
                ..Surroundings::default()
            });
            continue;
        };
        let mut found = candidates(&room, discovery.as_deref(), &context);
        let mut in_flight = attempts.values().filter(|a| a.in_flight).count();
        for address in &found.dial {
            let attempt = attempts.entry(*address).or_default();
            if in_flight < MAX_DIALS && attempt.ready(now) {
                attempt.in_flight = true;
                in_flight += 1;
                spawn_dial(*address, room.clone(), Arc::clone(&context), done.clone());
            }
            if !found.known.contains(address) {
                let problem = attempt.problem.clone().unwrap_or_else(|| "connecting".into());
                found.surroundings.unverified.insert(*address, problem);
            }
        }
        attempts.retain(|address, attempt| attempt.in_flight || found.dial.contains(address));
        found.surroundings.interfaces = interfaces.1.clone();
        context.fleet.set_surroundings(found.surroundings);
    }
}
