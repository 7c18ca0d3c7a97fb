// SPDX-License-Identifier: GPL-3.0-or-later
//! The encrypted peer port (PGR/1, docs/protocol.md): the listener ([`server`]), outgoing
//! connections ([`client`]), and what protects them before authentication: connection caps
//! ([`slots`]), failed-guess throttling ([`throttle`]) and security events ([`events`]).

pub mod client;
pub mod control;
pub mod events;
pub mod jobs;
pub mod server;
pub mod session;
pub mod slots;
pub mod throttle;
pub mod upload;
pub mod wire;

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use self::events::Reporter;
use self::slots::{PreAuthSlots, SlotLimits};
use self::throttle::{Limits, Throttle};
use crate::fleet::Fleet;
use crate::room::RoomState;

/// Deadlines and periods (§6.7, §9); tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// From accept to a complete ClientHello.
    pub client_hello: Duration,
    /// From accept (or connect) to the peer's NODE_AUTH.
    pub handshake: Duration,
    /// Silence after which a PING is sent.
    pub ping_after: Duration,
    /// Silence after which the peer is dead.
    pub dead_after: Duration,
    /// Silence after which a watched member (node 0 of an elastic training coordinated
    /// here, `fleet::Watcher`) is pinged.
    pub watched_ping_after: Duration,
    /// Silence after which such a member is dead.
    pub watched_dead_after: Duration,
    /// Time under one sending key before a KEY_UPDATE.
    pub key_update_after: Duration,
    /// Longest session.
    pub max_lifetime: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            client_hello: Duration::from_secs(2),
            handshake: Duration::from_secs(5),
            ping_after: Duration::from_secs(15),
            dead_after: Duration::from_secs(45),
            // Five pings unanswered: a loaded machine still answers within a second, and
            // the training's collectives give up after 30 s anyway.
            watched_ping_after: Duration::from_secs(3),
            watched_dead_after: Duration::from_secs(15),
            key_update_after: Duration::from_secs(600),
            max_lifetime: Duration::from_secs(12 * 3600),
        }
    }
}

/// What the peer port's tasks share.
pub struct PeerContext {
    /// The room, identity and pins.
    pub room: Arc<RoomState>,
    /// Security events.
    pub reporter: Arc<Reporter>,
    /// Deadlines.
    pub timing: Timing,
    /// The members and this machine's state.
    pub fleet: Arc<Fleet>,
    /// The jobs of this machine, set once at start (job connections are refused before).
    pub jobs: std::sync::OnceLock<crate::jobs::manager::JobManager>,
    throttle: Mutex<Throttle>,
    slots: PreAuthSlots,
}

impl PeerContext {
    /// A context with the spec's limits.
    #[must_use]
    pub fn new(room: Arc<RoomState>, reporter: Arc<Reporter>, fleet: Arc<Fleet>, timing: Timing) -> Self {
        Self::with_limits(
            room,
            reporter,
            fleet,
            timing,
            Limits::default(),
            SlotLimits::default(),
        )
    }

    /// A context with other limits (tests).
    #[must_use]
    pub fn with_limits(
        room: Arc<RoomState>,
        reporter: Arc<Reporter>,
        fleet: Arc<Fleet>,
        timing: Timing,
        limits: Limits,
        slot_limits: SlotLimits,
    ) -> Self {
        Self {
            room,
            reporter,
            timing,
            fleet,
            jobs: std::sync::OnceLock::new(),
            throttle: Mutex::new(Throttle::new(limits)),
            slots: PreAuthSlots::new(slot_limits),
        }
    }

    fn throttle(&self) -> MutexGuard<'_, Throttle> {
        self.throttle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a failed confirmation against `ip` and journals it, and the ban or alert it
    /// caused (§9). `message` says which side found out; `dialled` is true on the client.
    fn failed_guess(&self, ip: IpAddr, message: String, dialled: bool) {
        use partagpu_core::journal::Severity;
        let outcome = self.throttle().record_failure(ip, std::time::Instant::now());
        let source = ip.to_string();
        self.reporter
            .report(Severity::Warning, events::kinds::WRONG_CODE, &source, "", message);
        if let Some(ban) = outcome.banned_for {
            self.reporter.report(
                Severity::Critical,
                events::kinds::BAN,
                &source,
                "",
                if dialled {
                    format!(
                        "This machine stops trying room codes with {source} for {} minutes: too many were wrong.",
                        ban.as_secs() / 60
                    )
                } else {
                    format!(
                        "The address {source} is banned for {} minutes after repeated wrong room codes.",
                        ban.as_secs() / 60
                    )
                },
            );
        }
        if outcome.alert {
            self.reporter.report(
                Severity::Critical,
                events::kinds::GUESS_FLOOD,
                "",
                "",
                "Many wrong room codes in the last hour: someone may be guessing the code. \
                 Unknown machines are now slowed down; consider rotating the code."
                    .to_owned(),
            );
        }
    }
}

/// Milliseconds since the Unix epoch (for pins and events).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
