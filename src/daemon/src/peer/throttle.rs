// SPDX-License-Identifier: GPL-3.0-or-later
//! Failed-guess throttling (PGR/1 §9): per source IP, 5 failures in 10 minutes ban it for
//! 10 minutes, doubling up to 24 hours; 30 failures in an hour on this machine raise an alert
//! and then allow one attempt per 10 seconds, except from addresses that completed a session
//! in the last 30 days (the reserved lane: a flood must not lock the room's own machines out).
//!
//! Pure: the caller passes the clock, so the tests drive time.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The limits; [`Default`] is the spec's starting point.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Failures from one address within `window` that ban it.
    pub failures_per_ip: usize,
    /// See `failures_per_ip`.
    pub window: Duration,
    /// First ban; each further ban doubles it.
    pub first_ban: Duration,
    /// Longest ban.
    pub max_ban: Duration,
    /// Failures from everywhere within `global_window` that raise the alert.
    pub global_failures: usize,
    /// See `global_failures`.
    pub global_window: Duration,
    /// While the alert holds, one attempt per this from unknown addresses.
    pub slow_lane: Duration,
    /// How long a completed session keeps an address in the reserved lane.
    pub known_for: Duration,
    /// Addresses tracked at most (the oldest are forgotten first).
    pub max_tracked: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            failures_per_ip: 5,
            window: Duration::from_secs(600),
            first_ban: Duration::from_secs(600),
            max_ban: Duration::from_secs(24 * 3600),
            global_failures: 30,
            global_window: Duration::from_secs(3600),
            slow_lane: Duration::from_secs(10),
            known_for: Duration::from_secs(30 * 24 * 3600),
            max_tracked: 4096,
        }
    }
}

/// Whether a PAKE with this address may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Allowed,
    /// The address is banned for this long still.
    Banned(Duration),
    /// The machine is under a guessing flood and this address must wait its turn.
    Slowed,
}

/// What one more failure caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FailureOutcome {
    /// The address is now banned for this long.
    pub banned_for: Option<Duration>,
    /// This failure crossed the machine-wide alert threshold.
    pub alert: bool,
}

#[derive(Debug, Default)]
struct Source {
    failures: VecDeque<Instant>,
    banned_until: Option<Instant>,
    bans: u32,
    last_seen: Option<Instant>,
}

/// The throttle state of one machine.
#[derive(Debug)]
pub struct Throttle {
    limits: Limits,
    sources: HashMap<IpAddr, Source>,
    global: VecDeque<Instant>,
    alerting: bool,
    last_slow_attempt: Option<Instant>,
    known: HashMap<IpAddr, Instant>,
}

impl Throttle {
    /// A throttle with these limits.
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            sources: HashMap::new(),
            global: VecDeque::new(),
            alerting: false,
            last_slow_attempt: None,
            known: HashMap::new(),
        }
    }

    /// Decides before any SPAKE2 work whether `ip` may try.
    pub fn admit(&mut self, ip: IpAddr, now: Instant) -> Admission {
        if let Some(until) = self.sources.get(&ip).and_then(|s| s.banned_until) {
            if until > now {
                return Admission::Banned(until - now);
            }
        }
        self.expire_global(now);
        if self.global.len() < self.limits.global_failures || self.is_known(ip, now) {
            return Admission::Allowed;
        }
        match self.last_slow_attempt {
            Some(last) if now.duration_since(last) < self.limits.slow_lane => Admission::Slowed,
            _ => {
                self.last_slow_attempt = Some(now);
                Admission::Allowed
            }
        }
    }

    /// Counts a failed confirmation (§7.4) from `ip`.
    pub fn record_failure(&mut self, ip: IpAddr, now: Instant) -> FailureOutcome {
        let limits = self.limits.clone();
        self.forget_oldest_if_full(ip);
        let source = self.sources.entry(ip).or_default();
        source.last_seen = Some(now);
        source.failures.push_back(now);
        while source
            .failures
            .front()
            .is_some_and(|t| now.duration_since(*t) >= limits.window)
        {
            source.failures.pop_front();
        }
        let mut outcome = FailureOutcome::default();
        if source.failures.len() >= limits.failures_per_ip {
            let ban = limits
                .first_ban
                .saturating_mul(2u32.saturating_pow(source.bans))
                .min(limits.max_ban);
            source.bans = source.bans.saturating_add(1);
            source.banned_until = Some(now + ban);
            source.failures.clear();
            outcome.banned_for = Some(ban);
        }
        self.expire_global(now);
        self.global.push_back(now);
        if self.global.len() >= limits.global_failures && !self.alerting {
            self.alerting = true;
            outcome.alert = true;
        }
        outcome
    }

    /// A session completed with `ip`: its failures are forgiven and it joins the reserved
    /// lane. Its ban history stays, so a flood cannot wash itself with one good session.
    pub fn record_success(&mut self, ip: IpAddr, now: Instant) {
        if let Some(source) = self.sources.get_mut(&ip) {
            source.failures.clear();
        }
        if self.known.len() >= self.limits.max_tracked && !self.known.contains_key(&ip) {
            if let Some(oldest) = self.known.iter().min_by_key(|(_, t)| **t).map(|(ip, _)| *ip) {
                self.known.remove(&oldest);
            }
        }
        self.known.insert(ip, now);
    }

    fn is_known(&self, ip: IpAddr, now: Instant) -> bool {
        self.known
            .get(&ip)
            .is_some_and(|t| now.duration_since(*t) < self.limits.known_for)
    }

    fn expire_global(&mut self, now: Instant) {
        while self
            .global
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.limits.global_window)
        {
            self.global.pop_front();
        }
        if self.global.len() < self.limits.global_failures {
            self.alerting = false;
        }
    }

    fn forget_oldest_if_full(&mut self, incoming: IpAddr) {
        if self.sources.len() < self.limits.max_tracked || self.sources.contains_key(&incoming) {
            return;
        }
        // Never forget a banned address to make room: that would lift its ban.
        let now_banned = |s: &Source| s.banned_until.is_some();
        let oldest = self
            .sources
            .iter()
            .filter(|(_, s)| !now_banned(s))
            .min_by_key(|(_, s)| s.last_seen)
            .map(|(ip, _)| *ip);
        if let Some(ip) = oldest {
            self.sources.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 98, 0, last])
    }

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn five_failures_in_ten_minutes_ban_for_ten_minutes_then_twenty() {
        let mut throttle = Throttle::new(Limits::default());
        let start = Instant::now();
        for i in 0..4 {
            let now = start + MIN * i;
            assert_eq!(throttle.admit(ip(2), now), Admission::Allowed);
            assert_eq!(throttle.record_failure(ip(2), now).banned_for, None);
        }
        let fifth = start + MIN * 4;
        assert_eq!(throttle.record_failure(ip(2), fifth).banned_for, Some(MIN * 10));
        assert_eq!(throttle.admit(ip(2), fifth + MIN), Admission::Banned(MIN * 9));
        assert_eq!(
            throttle.admit(ip(3), fifth + MIN),
            Admission::Allowed,
            "others unaffected"
        );
        let after = fifth + MIN * 10;
        assert_eq!(throttle.admit(ip(2), after), Admission::Allowed);
        for i in 0..5 {
            let outcome = throttle.record_failure(ip(2), after + Duration::from_secs(i));
            if i == 4 {
                assert_eq!(outcome.banned_for, Some(MIN * 20), "the second ban doubles");
            }
        }
    }

    #[test]
    fn failures_spread_over_more_than_the_window_do_not_ban() {
        let mut throttle = Throttle::new(Limits::default());
        let start = Instant::now();
        for i in 0..20 {
            let outcome = throttle.record_failure(ip(2), start + MIN * 3 * i);
            assert_eq!(outcome.banned_for, None, "failure {i}");
        }
    }

    #[test]
    fn bans_stop_doubling_at_a_day() {
        let mut throttle = Throttle::new(Limits::default());
        let mut now = Instant::now();
        let mut last = Duration::ZERO;
        for _ in 0..12 {
            for _ in 0..5 {
                if let Some(ban) = throttle.record_failure(ip(9), now).banned_for {
                    last = ban;
                }
            }
            now += last;
        }
        assert_eq!(last, Duration::from_secs(24 * 3600));
    }

    #[test]
    fn a_flood_alerts_once_and_slows_unknown_addresses_but_not_known_ones() {
        let mut throttle = Throttle::new(Limits::default());
        let now = Instant::now();
        throttle.record_success(ip(1), now);
        let mut alerts = 0;
        for i in 0..30u8 {
            // 30 attackers, one failure each: no per-address ban, only the global alert.
            let outcome = throttle.record_failure(ip(100 + i), now);
            alerts += usize::from(outcome.alert);
            assert_eq!(outcome.banned_for, None);
        }
        assert_eq!(alerts, 1);
        assert_eq!(
            throttle.admit(ip(200), now),
            Admission::Allowed,
            "one attempt per 10 s"
        );
        assert_eq!(
            throttle.admit(ip(201), now + Duration::from_secs(1)),
            Admission::Slowed
        );
        assert_eq!(
            throttle.admit(ip(1), now + Duration::from_secs(1)),
            Admission::Allowed,
            "known peer"
        );
        assert_eq!(
            throttle.admit(ip(201), now + Duration::from_secs(11)),
            Admission::Allowed
        );
        let later = now + Duration::from_secs(3601);
        assert_eq!(
            throttle.admit(ip(202), later),
            Admission::Allowed,
            "the flood aged out"
        );
        assert!(!throttle.record_failure(ip(202), later).alert);
    }

    #[test]
    fn a_full_table_never_forgets_a_banned_address() {
        let limits = Limits {
            max_tracked: 2,
            ..Limits::default()
        };
        let mut throttle = Throttle::new(limits);
        let now = Instant::now();
        for _ in 0..5 {
            throttle.record_failure(ip(1), now);
        }
        throttle.record_failure(ip(2), now);
        throttle.record_failure(ip(3), now);
        throttle.record_failure(ip(4), now);
        assert!(matches!(throttle.admit(ip(1), now), Admission::Banned(_)));
    }
}
