// SPDX-License-Identifier: GPL-3.0-or-later
//! mDNS announce and browse (PGR/1 §10): `_partagpu._tcp.local.`, TXT `pv=1`, `rid`, `ep`
//! and an optional `label`. What others announce is an untrusted hint: sizes are bounded,
//! peers capped, and the PAKE decides.
//!
//! `ep` (the epoch) is an addition to the design's TXT: a joiner needs the epoch to build the
//! SPAKE2 identities (§3.3), and the epoch is public (it says nothing about the code).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::Duration;

use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent, ServiceInfo};
use partagpu_core::room::RoomId;
use rand_core::{OsRng, RngCore};

/// The service type.
pub const SERVICE_TYPE: &str = "_partagpu._tcp.local.";
/// Rooms and machines kept from one browse at most.
pub const MAX_PEERS: usize = 256;

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

/// Why discovery is not available.
#[derive(Debug, thiserror::Error)]
#[error("mDNS discovery is not available: {0}")]
pub struct DiscoveryError(String);

/// The mDNS responder and browser of this machine.
pub struct Discovery {
    daemon: ServiceDaemon,
    instance: String,
    port: u16,
    announced: Mutex<Option<String>>,
}

impl Discovery {
    /// Starts the responder thread; `interface` restricts it to one interface.
    ///
    /// # Errors
    /// [`DiscoveryError`] when the multicast sockets cannot be opened.
    pub fn start(port: u16, interface: Option<&str>) -> Result<Self, DiscoveryError> {
        let daemon = ServiceDaemon::new().map_err(|e| DiscoveryError(e.to_string()))?;
        let _ = daemon.disable_interface(vec![IfKind::LoopbackV4, IfKind::LoopbackV6, IfKind::IPv6]);
        if let Some(name) = interface {
            let _ = daemon.disable_interface(IfKind::All);
            daemon
                .enable_interface(IfKind::Name(name.to_owned()))
                .map_err(|e| DiscoveryError(e.to_string()))?;
        }
        // A random instance name per start: nothing about the machine or its user (§10).
        let instance = format!("{:016x}", OsRng.next_u64());
        Ok(Self {
            daemon,
            instance,
            port,
            announced: Mutex::new(None),
        })
    }

    /// Announces `room` (or stops announcing with `None`).
    pub fn announce(&self, room: Option<(&RoomId, u32, &str)>) {
        let mut announced = self
            .announced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(fullname) = announced.take() {
            let _ = self.daemon.unregister(&fullname);
        }
        let Some((room_id, epoch, label)) = room else {
            return;
        };
        let mut txt = vec![
            ("pv".to_owned(), "1".to_owned()),
            ("rid".to_owned(), room_id.to_hex()),
            ("ep".to_owned(), epoch.to_string()),
        ];
        if !label.is_empty() {
            txt.push(("label".to_owned(), label.to_owned()));
        }
        let host = format!("{}.local.", self.instance);
        let info = match ServiceInfo::new(SERVICE_TYPE, &self.instance, &host, "", self.port, &txt[..]) {
            Ok(info) => info.enable_addr_auto(),
            Err(error) => {
                tracing::warn!(%error, "cannot build the mDNS announcement");
                return;
            }
        };
        let fullname = info.get_fullname().to_owned();
        match self.daemon.register(info) {
            Ok(()) => *announced = Some(fullname),
            Err(error) => tracing::warn!(%error, "cannot announce the room on mDNS"),
        }
    }

    /// Listens for `duration` and returns the rooms seen, members grouped by room.
    ///
    /// # Errors
    /// [`DiscoveryError`] when browsing cannot start.
    pub async fn browse(&self, duration: Duration) -> Result<Vec<VisibleRoom>, DiscoveryError> {
        let events = self
            .daemon
            .browse(SERVICE_TYPE)
            .map_err(|e| DiscoveryError(e.to_string()))?;
        let own = format!("{}.{SERVICE_TYPE}", self.instance);
        let mut rooms: BTreeMap<String, VisibleRoom> = BTreeMap::new();
        let mut seen = 0usize;
        let deadline = tokio::time::Instant::now() + duration;
        while let Ok(Ok(event)) = tokio::time::timeout_at(deadline, events.recv_async()).await {
            let ServiceEvent::ServiceResolved(service) = event else {
                continue;
            };
            if service.get_fullname() == own || seen >= MAX_PEERS {
                continue;
            }
            let txt = &service.txt_properties;
            let Some(room) = parse_txt(
                txt.get_property_val_str("pv"),
                txt.get_property_val_str("rid"),
                txt.get_property_val_str("ep"),
                txt.get_property_val_str("label"),
            ) else {
                continue;
            };
            seen += 1;
            let entry = rooms
                .entry(format!("{}/{}", room.room_id.to_hex(), room.epoch))
                .or_insert(room);
            for ip in service.get_addresses_v4() {
                let addr = SocketAddr::new(IpAddr::V4(ip), service.get_port());
                if !entry.members.contains(&addr) {
                    entry.members.push(addr);
                }
            }
        }
        let _ = self.daemon.stop_browse(SERVICE_TYPE);
        Ok(rooms
            .into_values()
            .filter(|room| !room.members.is_empty())
            .collect())
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        let _ = self.daemon.shutdown();
    }
}

/// Reads one announcement's TXT, refusing anything that is not a PGR/1 room.
#[must_use]
pub fn parse_txt(
    pv: Option<&str>,
    rid: Option<&str>,
    ep: Option<&str>,
    label: Option<&str>,
) -> Option<VisibleRoom> {
    if pv != Some("1") {
        return None;
    }
    let room_id = RoomId::from_hex(rid?).ok()?;
    let epoch = ep.map_or(Some(0), |ep| ep.parse().ok())?;
    let label = label.unwrap_or_default();
    if crate::room::check_label(label).is_err() {
        return None;
    }
    Some(VisibleRoom {
        room_id,
        epoch,
        label: label.to_owned(),
        members: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_announcements_are_kept() {
        let rid = "0123456789abcdef0123456789abcdef";
        let room = parse_txt(Some("1"), Some(rid), Some("3"), Some("Salle B12")).unwrap();
        assert_eq!(
            (room.room_id.to_hex().as_str(), room.epoch, room.label.as_str()),
            (rid, 3, "Salle B12")
        );
        assert_eq!(parse_txt(Some("1"), Some(rid), None, None).unwrap().epoch, 0);
        assert!(
            parse_txt(Some("2"), Some(rid), None, None).is_none(),
            "another protocol version"
        );
        assert!(parse_txt(Some("1"), Some("xyz"), None, None).is_none());
        assert!(parse_txt(Some("1"), Some(rid), Some("-1"), None).is_none());
        assert!(parse_txt(Some("1"), Some(rid), None, Some(&"x".repeat(64))).is_none());
        assert!(parse_txt(Some("1"), Some(rid), None, Some("a\u{7}b")).is_none());
    }
}
