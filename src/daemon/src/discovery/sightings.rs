// SPDX-License-Identifier: GPL-3.0-or-later
//! What mDNS told us, as a bounded table of untrusted hints (PGR/1 §10): at most
//! [`MAX_SIGHTINGS`] announcements, a few addresses each; when full, the one heard from the
//! longest ago makes room. Members do not depend on it once their session is up, so a flood
//! of forged announcements can crowd the table but not cut the room apart.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::Instant;

use partagpu_core::room::RoomId;

/// Announcements kept at most.
pub const MAX_SIGHTINGS: usize = 256;
/// Addresses kept per announcement.
pub const MAX_ADDRESSES: usize = 4;

/// One announcement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The room announced.
    pub room_id: RoomId,
    /// Its epoch.
    pub epoch: u32,
    /// Its label, maybe empty.
    pub label: String,
    /// Where the announcer listens (already filtered by the scope).
    pub addresses: Vec<SocketAddr>,
}

/// A room seen on the network, with the machines announcing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleRoom {
    /// Its id.
    pub room_id: RoomId,
    /// Its epoch as announced.
    pub epoch: u32,
    /// Its label, maybe empty.
    pub label: String,
    /// The machines announcing it.
    pub members: Vec<SocketAddr>,
}

/// The table, keyed by the announcement's full name.
#[derive(Debug, Default)]
pub struct Sightings {
    entries: HashMap<String, (Sighting, Instant)>,
}

impl Sightings {
    /// Records (or refreshes) an announcement; returns false when it changed nothing.
    pub fn insert(&mut self, fullname: &str, mut sighting: Sighting, now: Instant) -> bool {
        sighting.addresses.truncate(MAX_ADDRESSES);
        if let Some((known, heard)) = self.entries.get_mut(fullname) {
            *heard = now;
            let changed = *known != sighting;
            *known = sighting;
            return changed;
        }
        if self.entries.len() >= MAX_SIGHTINGS {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, heard))| *heard)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(fullname.to_owned(), (sighting, now));
        true
    }

    /// Forgets an announcement (a goodbye, or its records expired).
    pub fn remove(&mut self, fullname: &str) -> bool {
        self.entries.remove(fullname).is_some()
    }

    /// How many announcements are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Announcements grouped by room and epoch, addresses deduplicated.
    #[must_use]
    pub fn rooms(&self) -> Vec<VisibleRoom> {
        let mut rooms: BTreeMap<(String, u32), VisibleRoom> = BTreeMap::new();
        for (sighting, _) in self.entries.values() {
            let room = rooms
                .entry((sighting.room_id.to_hex(), sighting.epoch))
                .or_insert_with(|| VisibleRoom {
                    room_id: sighting.room_id,
                    epoch: sighting.epoch,
                    label: sighting.label.clone(),
                    members: Vec::new(),
                });
            for address in &sighting.addresses {
                if !room.members.contains(address) {
                    room.members.push(*address);
                }
            }
        }
        rooms
            .into_values()
            .filter(|room| !room.members.is_empty())
            .map(|mut room| {
                room.members.sort();
                room
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sighting(room: u8, port: u16) -> Sighting {
        Sighting {
            room_id: RoomId::from_hex(&format!("{room:02x}").repeat(16)).unwrap(),
            epoch: 0,
            label: String::new(),
            addresses: vec![SocketAddr::from(([10, 98, 0, 1], port))],
        }
    }

    #[test]
    fn the_table_is_capped_and_the_stalest_entry_makes_room() {
        let start = Instant::now();
        let mut table = Sightings::default();
        assert!(table.insert("real", sighting(1, 7655), start));
        for i in 0..MAX_SIGHTINGS + 50 {
            let now = start + Duration::from_millis(u64::try_from(i).unwrap() + 1);
            table.insert(&format!("forged-{i}"), sighting(2, 1000), now);
            if i == 100 {
                // The real member answers queries, so it is heard again.
                table.insert("real", sighting(1, 7655), now);
            }
        }
        assert_eq!(table.len(), MAX_SIGHTINGS);
        assert!(!table.entries.contains_key("forged-0"));
        assert!(table.entries.contains_key("real"), "heard recently, so kept");
        assert!(table.remove("forged-300"));
        assert!(!table.remove("forged-300"));
    }

    #[test]
    fn rooms_group_members_and_bound_addresses() {
        let now = Instant::now();
        let mut table = Sightings::default();
        let mut many = sighting(1, 1);
        many.addresses = (1..=9).map(|p| SocketAddr::from(([10, 98, 0, 2], p))).collect();
        table.insert("a", many, now);
        table.insert("b", sighting(1, 7655), now);
        assert!(!table.insert("b", sighting(1, 7655), now), "unchanged");
        table.insert("c", sighting(3, 7655), now);
        let rooms = table.rooms();
        assert_eq!(rooms.len(), 2);
        assert_eq!(rooms[0].members.len(), MAX_ADDRESSES + 1);
        assert_eq!(rooms[1].members, [SocketAddr::from(([10, 98, 0, 1], 7655))]);
    }
}
