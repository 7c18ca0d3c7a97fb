// SPDX-License-Identifier: GPL-3.0-or-later
//! mDNS announce and browse (PGR/1 §10): `_partagpu._tcp.local.`, TXT `pv=1`, `rid`, `ep`
//! and an optional `label`. What others announce is an untrusted hint: sizes are bounded,
//! peers capped, and the PAKE decides.
//!
//! `ep` (the epoch) is an addition to the design's TXT: a joiner needs the epoch to build the
//! SPAKE2 identities (§3.3), and the epoch is public (it says nothing about the code).

mod scope;
mod sightings;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mdns_sd::{IfKind, IfPredicate, ServiceDaemon, ServiceEvent, ServiceInfo};
use partagpu_core::room::RoomId;
use rand_core::{OsRng, RngCore};
use tokio::sync::watch;

pub use self::scope::{interface_addresses, InterfaceAddress, Ipv4Prefix, PrefixError, Scope};
pub use self::sightings::{Sighting, Sightings, VisibleRoom, MAX_SIGHTINGS};

/// The service type.
pub const SERVICE_TYPE: &str = "_partagpu._tcp.local.";
/// How long a fresh query listens before its answers are taken as complete (members answer
/// within ~1 s).
pub const BROWSE_FOR: Duration = Duration::from_secs(3);

/// Why discovery is not available.
#[derive(Debug, thiserror::Error)]
#[error("mDNS discovery is not available: {0}")]
pub struct DiscoveryError(String);

/// What the browsing task and the owner share.
struct Shared {
    table: Mutex<Sightings>,
    changes: watch::Sender<u64>,
    scope: Scope,
    lan: Mutex<Vec<Ipv4Prefix>>,
    own_fullname: String,
    /// Asks the browsing task to query the network again.
    requery: tokio::sync::Notify,
}

/// The mDNS responder and browser of this machine.
pub struct Discovery {
    daemon: ServiceDaemon,
    instance: String,
    port: u16,
    announced: Mutex<Option<String>>,
    shared: Arc<Shared>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Discovery {
    /// Starts the responder thread on the interfaces `scope` allows, and a task that keeps
    /// browsing. Must be called inside the tokio runtime.
    ///
    /// # Errors
    /// [`DiscoveryError`] when the multicast sockets cannot be opened.
    pub fn start(port: u16, scope: Scope) -> Result<Self, DiscoveryError> {
        let daemon = ServiceDaemon::new().map_err(|e| DiscoveryError(e.to_string()))?;
        // The predicate is asked again for interfaces that appear later (a docker0 created
        // after boot stays out).
        let filter = scope.clone();
        let uses = IfPredicate::new(move |interface| match &interface.addr {
            if_addrs::IfAddr::V4(v4) => filter.uses(&InterfaceAddress {
                name: interface.name.clone(),
                address: v4.ip,
                prefix_len: v4.prefixlen,
                point_to_point: interface.is_p2p,
            }),
            if_addrs::IfAddr::V6(_) => false,
        });
        let _ = daemon.disable_interface(IfKind::All);
        daemon
            .enable_interface(IfKind::Predicate(uses))
            .map_err(|e| DiscoveryError(e.to_string()))?;
        // A random instance name per start: nothing about the machine or its user (§10).
        let instance = format!("{:016x}", OsRng.next_u64());
        let lan = scope.lan(&interface_addresses());
        let shared = Arc::new(Shared {
            table: Mutex::new(Sightings::default()),
            changes: watch::channel(0).0,
            scope,
            lan: Mutex::new(lan),
            own_fullname: format!("{instance}.{SERVICE_TYPE}"),
            requery: tokio::sync::Notify::new(),
        });
        tokio::spawn(keep_browsing(daemon.clone(), Arc::clone(&shared)));
        Ok(Self {
            daemon,
            instance,
            port,
            announced: Mutex::new(None),
            shared,
        })
    }

    /// Announces `room` (or stops announcing with `None`).
    pub fn announce(&self, room: Option<(&RoomId, u32, &str)>) {
        let mut announced = lock(&self.announced);
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

    /// Stops announcing and waits (up to 1 s) until the goodbye is sent, so the other machines
    /// forget this one at once rather than when their cache expires (minutes). Called when
    /// the service stops.
    pub fn withdraw(&self) {
        let Some(fullname) = lock(&self.announced).take() else {
            return;
        };
        if let Ok(status) = self.daemon.unregister(&fullname) {
            let _ = status.recv_timeout(Duration::from_secs(1));
        }
    }

    /// The rooms announced now, members grouped by room and epoch.
    #[must_use]
    pub fn rooms(&self) -> Vec<VisibleRoom> {
        lock(&self.shared.table).rooms()
    }

    /// Announcements kept now (at most [`MAX_SIGHTINGS`]).
    #[must_use]
    pub fn sightings(&self) -> usize {
        lock(&self.shared.table).len()
    }

    /// Queries the network again and returns the rooms after [`BROWSE_FOR`]: a room created
    /// a moment ago, or a label just changed, is then seen as it is now (a join needs that).
    pub async fn fresh_rooms(&self) -> Vec<VisibleRoom> {
        self.shared.requery.notify_one();
        tokio::time::sleep(BROWSE_FOR).await;
        self.rooms()
    }

    /// Bumped on every change of the table.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// Re-reads the interfaces; returns those in use and updates the LAN prefixes.
    pub fn refresh_interfaces(&self) -> Vec<InterfaceAddress> {
        let all = interface_addresses();
        *lock(&self.shared.lan) = self.shared.scope.lan(&all);
        all.into_iter().filter(|i| self.shared.scope.uses(i)).collect()
    }

    /// Whether an announced address may be dialled (§9: only inside LAN prefixes).
    #[must_use]
    pub fn may_dial(&self, address: IpAddr) -> bool {
        self.shared.scope.may_dial(address, &lock(&self.shared.lan))
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        let _ = self.daemon.shutdown();
    }
}

/// Browses until the responder shuts down. mdns-sd ends a subscription whose receiver falls
/// behind (a flood can do that), so browsing starts again after a pause; a new browse (which
/// replaces the old one in mdns-sd) also sends a fresh query when asked.
async fn keep_browsing(daemon: ServiceDaemon, shared: Arc<Shared>) {
    loop {
        let Ok(events) = daemon.browse(SERVICE_TYPE) else {
            return;
        };
        loop {
            let event = tokio::select! {
                event = events.recv_async() => match event {
                    Ok(event) => event,
                    Err(_) => break,
                },
                () = shared.requery.notified() => break,
            };
            let changed = match event {
                ServiceEvent::ServiceResolved(service) => {
                    let fullname = service.get_fullname().to_owned();
                    if fullname == shared.own_fullname {
                        continue;
                    }
                    let txt = &service.txt_properties;
                    let room = parse_txt(
                        txt.get_property_val_str("pv"),
                        txt.get_property_val_str("rid"),
                        txt.get_property_val_str("ep"),
                        txt.get_property_val_str("label"),
                    );
                    let addresses: Vec<SocketAddr> = {
                        let lan = lock(&shared.lan);
                        service
                            .get_addresses_v4()
                            .into_iter()
                            .map(IpAddr::V4)
                            .filter(|ip| shared.scope.may_dial(*ip, &lan))
                            .map(|ip| SocketAddr::new(ip, service.get_port()))
                            .collect()
                    };
                    if room.is_some() && addresses.is_empty() {
                        tracing::info!(
                            announcement = %fullname,
                            addresses = ?service.get_addresses_v4(),
                            lan = ?lock(&shared.lan),
                            "an announcement has no address inside the LAN prefixes: ignored"
                        );
                    }
                    let mut table = lock(&shared.table);
                    match room {
                        Some(room) if !addresses.is_empty() => table.insert(
                            &fullname,
                            Sighting {
                                room_id: room.room_id,
                                epoch: room.epoch,
                                label: room.label,
                                addresses,
                            },
                            Instant::now(),
                        ),
                        _ => table.remove(&fullname),
                    }
                }
                ServiceEvent::ServiceRemoved(_, fullname) => lock(&shared.table).remove(&fullname),
                _ => false,
            };
            if changed {
                shared.changes.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
        if events.is_disconnected() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
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
