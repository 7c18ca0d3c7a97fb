// SPDX-License-Identifier: GPL-3.0-or-later
//! The room of the config file (`[room]`, a lab image): joined at the first boot without any
//! command, created when no member is visible, and merged when machines that booted at the
//! same moment each created one. The rule and why: docs/service.md "A room from the config".
//!
//! The room id is random (PGR/1 §2.5), so identical machines cannot agree on it in advance.
//! Instead: look for a room announced with the label; join it with the code; none after two
//! looks (the second after a random wait) → create one. Two such rooms with the same label
//! and code end as one: a member of the higher room id joins the lower one when it sees it.
//! Only the code proves that a room is the configured one (a member must accept it in the
//! SPAKE2 handshake), so a room that refuses it is someone else's and is never tried again;
//! a room whose members cannot be reached only rests a while (`rest_after`).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use partagpu_core::journal::Severity;
use partagpu_core::room::{RoomCode, RoomId};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

use crate::config::RoomConfig;
use crate::discovery::{Discovery, VisibleRoom};
use crate::membership::{choose, Membership, MembershipError, Resolved};
use crate::peer::client::DialError;
use crate::peer::events::Reporter;
use crate::store::{self, Loaded};

/// Journal kind: the machine joined, created or moved into the config file's room.
pub const CONFIG_ROOM: &str = "config-room";
/// Journal kind: the config file holds a code but may not (owner or mode).
pub const CONFIG_CODE_REFUSED: &str = "config-code-refused";
/// In the state directory: the config's room was applied once (the owner's later choices win).
pub const MARKER_FILE: &str = "config-room.json";
/// Longest random wait (ms) before the second look, so that machines booting together
/// rarely all create a room.
pub const SETTLE_JITTER_MS: u32 = 3000;
/// How often the merge rule looks again without an mDNS change.
const MERGE_EVERY: Duration = Duration::from_secs(5);
/// Wait after a join that could not reach a member.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// Failed joins in a row (unreachable, not a refusal) after which a room id rests a while.
const MAX_FAILURES: u32 = 3;
/// The first rest of an unreachable room; each further failure doubles it, up to `LONGEST_REST`.
/// Not forever: a link that comes back late (a cable, a switch, a member still starting) must
/// not leave the lab split into two rooms until someone restarts the service.
const FIRST_REST: Duration = Duration::from_secs(20);
/// The longest rest of an unreachable room.
const LONGEST_REST: Duration = Duration::from_secs(300);
/// Rooms with our label that refused the code, at most (each try is a guess there).
const MAX_FOREIGN: usize = 8;

#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    label: String,
    room_id: String,
    at_ms: u64,
}

/// How long a room whose members could not be reached `failures` times in a row is passed
/// over; `None` while it may still be tried at once.
#[must_use]
pub fn rest_after(failures: u32) -> Option<Duration> {
    let doublings = failures.checked_sub(MAX_FAILURES)?;
    let rest = FIRST_REST.saturating_mul(1 << doublings.min(16));
    Some(rest.min(LONGEST_REST))
}

/// The failed joins of one room id in a row, and until when it is passed over.
#[derive(Debug, Default)]
struct Unreachable {
    failures: u32,
    resting_until: Option<Instant>,
}

/// What to do at start, from what the state directory says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// In the configured room already (same code): only the merge rule runs.
    InConfigRoom,
    /// In a room the owner chose: nothing to do.
    InOwnersRoom,
    /// Applied before and left since: the owner's choice wins, nothing to do.
    LeftIt,
    /// Never applied: join or create.
    Apply,
}

/// The decision at start. `in_room`: whether the machine is in a room, and if so whether its
/// code is the configured one; `applied_label`: the label of the `[room]` applied before.
#[must_use]
pub fn decide(in_room: Option<bool>, applied_label: Option<&str>, label: &str) -> Start {
    match (in_room, applied_label) {
        (Some(true), _) => Start::InConfigRoom,
        (Some(false), _) => Start::InOwnersRoom,
        // A new label in the file is a new `[room]` (the admin moved the lab).
        (None, Some(applied)) if applied == label => Start::LeftIt,
        (None, _) => Start::Apply,
    }
}

/// The lowest room id announced with `label`, below `below` if given, among those `skip`
/// does not exclude; with its newest epoch and its members.
#[must_use]
pub fn lowest_room(
    rooms: &[VisibleRoom],
    label: &str,
    below: Option<RoomId>,
    skip: impl Fn(&RoomId) -> bool,
) -> Option<Resolved> {
    let lowest = rooms
        .iter()
        .filter(|r| r.label == label && below.is_none_or(|b| r.room_id < b) && !skip(&r.room_id))
        .map(|r| r.room_id)
        .min()?;
    let same: Vec<VisibleRoom> = rooms.iter().filter(|r| r.room_id == lowest).cloned().collect();
    choose(same, None).ok()
}

/// Journals that the config file's code was not used.
pub fn report_refusal(reporter: &Reporter, reason: &str) {
    reporter.report_own(
        Severity::Warning,
        CONFIG_CODE_REFUSED,
        "",
        format!(
            "The room code of the configuration file was not used: {reason}. This machine joins \
             no room by itself until the file is fixed and the service restarted."
        ),
    );
}

/// The task that applies `[room]`.
pub struct ConfigRoom {
    /// Room operations.
    pub membership: Arc<Membership>,
    /// The journal.
    pub reporter: Arc<Reporter>,
    /// Where the marker lives.
    pub state_dir: PathBuf,
    label: String,
    code: RoomCode,
    /// Rooms that refused the code: someone else's.
    foreign: BTreeSet<RoomId>,
    unreachable: HashMap<RoomId, Unreachable>,
}

fn describe(label: &str, room_id: &RoomId) -> String {
    format!("\"{label}\" ({room_id})")
}

impl ConfigRoom {
    /// The task for `room`.
    #[must_use]
    pub fn new(
        membership: Arc<Membership>,
        reporter: Arc<Reporter>,
        state_dir: PathBuf,
        room: &RoomConfig,
    ) -> Self {
        Self {
            membership,
            reporter,
            state_dir,
            label: room.label.clone(),
            code: room.code.code().clone(),
            foreign: BTreeSet::new(),
            unreachable: HashMap::new(),
        }
    }

    fn journal(&self, severity: Severity, source: &str, message: String) {
        self.reporter.report_own(severity, CONFIG_ROOM, source, message);
    }

    fn applied_label(&self) -> Option<String> {
        match store::load_json::<Marker>(&self.state_dir.join(MARKER_FILE)) {
            Loaded::Ok(marker) => Some(marker.label),
            Loaded::Missing => None,
            Loaded::Corrupt { kept_at, reason } => {
                tracing::warn!(kept_at = %kept_at.display(), %reason, "damaged config room marker");
                None
            }
        }
    }

    fn mark_applied(&self, room_id: &RoomId) {
        let marker = Marker {
            label: self.label.clone(),
            room_id: room_id.to_hex(),
            at_ms: crate::peer::now_ms(),
        };
        let bytes = serde_json::to_vec(&marker).unwrap_or_default();
        if let Err(error) = store::write_atomic(&self.state_dir.join(MARKER_FILE), &bytes, 0o600) {
            tracing::warn!(%error, "cannot remember that the config room was applied");
        }
    }

    /// Whether the machine is in the configured room (its code is the config's).
    fn in_config_room(&self) -> Option<RoomId> {
        let current = self.membership.room.current()?;
        let code = self.membership.room.reveal().ok()?;
        (code == self.code).then_some(current.room_id)
    }

    fn skipped(&self, room_id: &RoomId) -> bool {
        self.foreign.contains(room_id)
            || self.foreign.len() >= MAX_FOREIGN
            || self
                .unreachable
                .get(room_id)
                .and_then(|u| u.resting_until)
                .is_some_and(|until| Instant::now() < until)
    }

    /// Runs for as long as the service runs.
    pub async fn run(mut self) {
        let in_room = self
            .membership
            .room
            .current()
            .map(|_| self.in_config_room().is_some());
        let start = decide(in_room, self.applied_label().as_deref(), &self.label);
        tracing::info!(?start, label = %self.label, "room of the configuration file");
        let Some(discovery) = self.membership.discovery.clone() else {
            if start == Start::Apply {
                self.journal(
                    Severity::Warning,
                    "",
                    "The configuration file names a room, but mDNS discovery is off on this machine: \
                     it cannot find the room, so it joins none."
                        .into(),
                );
            }
            return;
        };
        // Only the configured room is remembered: leaving a room the owner chose by hand
        // makes the next start apply [room].
        if let (Start::InConfigRoom, Some(current)) = (start, self.membership.room.current()) {
            // If the owner leaves it later, a reboot does not join again.
            self.mark_applied(&current.room_id);
        }
        match start {
            Start::InOwnersRoom | Start::LeftIt => return,
            Start::InConfigRoom => {}
            Start::Apply => {
                if !self.first_join(&discovery).await {
                    return;
                }
            }
        }
        self.merge(&discovery).await;
    }

    /// Joins or creates the room; false when the owner chose a room meanwhile.
    async fn first_join(&mut self, discovery: &Discovery) -> bool {
        let mut looks = 0;
        loop {
            if self.membership.room.current().is_some() {
                return self.in_config_room().is_some();
            }
            let rooms = discovery.fresh_rooms().await;
            looks += 1;
            let Some(resolved) = lowest_room(&rooms, &self.label, None, |id| self.skipped(id)) else {
                if looks < 2 {
                    let jitter = OsRng.next_u32() % SETTLE_JITTER_MS;
                    tokio::time::sleep(Duration::from_millis(u64::from(jitter))).await;
                    continue;
                }
                return self.create().await;
            };
            if self.try_join(resolved, None).await {
                return true;
            }
        }
    }

    async fn create(&mut self) -> bool {
        match self.membership.create_with(&self.label, self.code.clone()).await {
            Ok(room_id) => {
                self.mark_applied(&room_id);
                self.journal(
                    Severity::Info,
                    "",
                    format!(
                        "Created the room {} of the configuration file: no member of it was visible.",
                        describe(&self.label, &room_id)
                    ),
                );
                true
            }
            Err(error) => {
                tracing::warn!(%error, "cannot create the room of the configuration file");
                false
            }
        }
    }

    /// One join attempt; true when the machine is now in the room.
    async fn try_join(&mut self, resolved: Resolved, moving_from: Option<RoomId>) -> bool {
        let room_id = resolved.0;
        match self
            .membership
            .join_with(self.code.clone(), resolved, moving_from)
            .await
        {
            Ok((room, via)) => {
                self.unreachable.remove(&room_id);
                self.mark_applied(&room.room_id);
                let message = match moving_from {
                    None => format!(
                        "Joined the room {} of the configuration file through the machine at {via}.",
                        describe(&room.label, &room.room_id)
                    ),
                    Some(from) => format!(
                        "Moved from the room {from} to the room {}: both were made from the \
                         configuration file at the same time, and the lower room id wins.",
                        describe(&room.label, &room.room_id)
                    ),
                };
                self.journal(Severity::Info, &via.ip().to_string(), message);
                true
            }
            Err(MembershipError::WrongCode(DialError::WrongCode(address))) => {
                self.foreign.insert(room_id);
                self.journal(
                    Severity::Warning,
                    &address.ip().to_string(),
                    format!(
                        "The room {} refused the code of the configuration file: it is another \
                         room with the same label; this machine does not try it again.",
                        describe(&self.label, &room_id)
                    ),
                );
                false
            }
            Err(error) => {
                tracing::info!(%error, room = %room_id, "cannot join the room of the configuration file yet");
                let unreachable = self.unreachable.entry(room_id).or_default();
                unreachable.failures += 1;
                if let Some(rest) = rest_after(unreachable.failures) {
                    unreachable.resting_until = Some(Instant::now() + rest);
                    tracing::warn!(
                        room = %room_id,
                        failures = unreachable.failures,
                        rest_s = rest.as_secs(),
                        "no member of the room answered: passing it over for a while"
                    );
                }
                tokio::time::sleep(RETRY_AFTER).await;
                false
            }
        }
    }

    /// The merge rule: while in the configured room, move to a lower room id announced with
    /// the same label once one of its members accepts the code.
    async fn merge(&mut self, discovery: &Discovery) {
        let mut changes = discovery.subscribe();
        loop {
            if let Some(own) = self.in_config_room() {
                let rooms = discovery.rooms();
                if let Some(lower) = lowest_room(&rooms, &self.label, Some(own), |id| self.skipped(id)) {
                    tracing::info!(from = %own, to = %lower.0, "a lower room with the label of the configuration file is visible: moving into it");
                    self.try_join(lower, Some(own)).await;
                    continue;
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(MERGE_EVERY) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
