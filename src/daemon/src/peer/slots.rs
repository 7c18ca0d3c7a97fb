// SPDX-License-Identifier: GPL-3.0-or-later
//! Pre-authentication connection caps (PGR/1 §9): at most 64 unauthenticated connections in
//! all and 4 per source address, with random early drop above 16 so that a flood from many
//! addresses leaves room for honest handshakes to get through.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// The caps; [`Default`] is the spec's.
#[derive(Debug, Clone, Copy)]
pub struct SlotLimits {
    /// Unauthenticated connections in all.
    pub total: usize,
    /// Per source address.
    pub per_ip: usize,
    /// Above this many, new connections are dropped with a probability rising to 1 at `total`.
    pub early_drop_from: usize,
}

impl Default for SlotLimits {
    fn default() -> Self {
        Self {
            total: 64,
            per_ip: 4,
            early_drop_from: 16,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Shared counters of unauthenticated connections.
#[derive(Debug, Clone)]
pub struct PreAuthSlots {
    limits: SlotLimits,
    counts: Arc<Mutex<Counts>>,
}

/// Why a connection got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSlot {
    /// This address has `per_ip` handshakes open already.
    PerAddress,
    /// The machine is full (or the random early drop fell on it).
    Full,
}

/// Held while a connection is unauthenticated; frees its slot when dropped.
#[derive(Debug)]
pub struct Slot {
    ip: IpAddr,
    counts: Arc<Mutex<Counts>>,
}

impl PreAuthSlots {
    /// Empty counters.
    #[must_use]
    pub fn new(limits: SlotLimits) -> Self {
        Self {
            limits,
            counts: Arc::default(),
        }
    }

    /// Takes a slot for `ip`. `roll` is a uniform random number in `0..u32::MAX`, injected so
    /// tests are deterministic.
    ///
    /// # Errors
    /// [`NoSlot`] when a cap is reached.
    pub fn acquire(&self, ip: IpAddr, roll: u32) -> Result<Slot, NoSlot> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let limits = self.limits;
        if counts.per_ip.get(&ip).copied().unwrap_or(0) >= limits.per_ip {
            return Err(NoSlot::PerAddress);
        }
        if counts.total >= limits.total {
            return Err(NoSlot::Full);
        }
        if counts.total >= limits.early_drop_from {
            let span = (limits.total - limits.early_drop_from) as u64;
            let over = (counts.total - limits.early_drop_from) as u64;
            // Drop with probability over/span.
            if u64::from(roll) * span < over * u64::from(u32::MAX) {
                return Err(NoSlot::Full);
            }
        }
        counts.total += 1;
        *counts.per_ip.entry(ip).or_default() += 1;
        Ok(Slot {
            ip,
            counts: Arc::clone(&self.counts),
        })
    }

    /// Unauthenticated connections open now.
    #[must_use]
    pub fn in_use(&self) -> usize {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner).total
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 98, 0, last])
    }

    #[test]
    fn four_per_address_and_freed_on_drop() {
        let slots = PreAuthSlots::new(SlotLimits::default());
        let held: Vec<_> = (0..4).map(|_| slots.acquire(ip(2), 0).unwrap()).collect();
        assert_eq!(slots.acquire(ip(2), 0).unwrap_err(), NoSlot::PerAddress);
        assert!(slots.acquire(ip(3), 0).is_ok(), "another address still gets one");
        drop(held);
        assert_eq!(slots.in_use(), 0);
        assert!(slots.acquire(ip(2), 0).is_ok());
    }

    #[test]
    fn the_total_cap_holds_and_early_drop_depends_on_the_roll() {
        let limits = SlotLimits {
            total: 8,
            per_ip: 8,
            early_drop_from: 4,
        };
        let slots = PreAuthSlots::new(limits);
        let mut held: Vec<_> = (0..4).map(|i| slots.acquire(ip(i), 0).unwrap()).collect();
        // 4 of 8 used, 4 over the early-drop mark out of a span of 4: nothing over yet.
        held.push(slots.acquire(ip(10), 0).unwrap());
        // Now 1 over out of 4: a low roll is dropped, a high one is admitted.
        assert_eq!(slots.acquire(ip(11), 0).unwrap_err(), NoSlot::Full);
        held.push(slots.acquire(ip(11), u32::MAX).unwrap());
        held.push(slots.acquire(ip(12), u32::MAX).unwrap());
        held.push(slots.acquire(ip(13), u32::MAX).unwrap());
        assert_eq!(slots.in_use(), 8);
        assert_eq!(slots.acquire(ip(14), u32::MAX).unwrap_err(), NoSlot::Full);
    }
}
