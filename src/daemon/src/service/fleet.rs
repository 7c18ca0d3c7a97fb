// SPDX-License-Identifier: GPL-3.0-or-later
//! `Fleet1`: the machines of the room, live. Read-only and open to every local user: it
//! shows what members chose to tell the room, never a secret.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use partagpu_core::fleet::NodeState;
use zbus::object_server::InterfaceRef;
use zbus::zvariant::{OwnedValue, Value};

use super::machine::{wire_gpus, wire_runtimes};
use crate::fleet::{Fleet, Member, Revisions};
use crate::peer::now_ms;

/// Shortest time between two signals of the same property (live load changes every 2 s on
/// every member; a client needs no more than this).
pub const SIGNAL_EVERY: Duration = Duration::from_millis(500);

/// One member as the bus carries it.
pub type WireMember = HashMap<String, OwnedValue>;

/// The `Fleet1` object.
pub struct FleetIface {
    fleet: Arc<Fleet>,
    fingerprint: String,
}

impl FleetIface {
    /// An object over `fleet`; `fingerprint` is this machine's.
    #[must_use]
    pub fn new(fleet: Arc<Fleet>, fingerprint: String) -> Self {
        Self { fleet, fingerprint }
    }
}

fn put(entry: &mut WireMember, key: &str, value: impl Into<Value<'static>>) {
    // Only file descriptors fail to convert, and none is put here.
    if let Ok(value) = OwnedValue::try_from(value.into()) {
        entry.insert(key.to_owned(), value);
    }
}

fn put_state(entry: &mut WireMember, state: &NodeState) {
    put(entry, "name", state.name.clone());
    put(entry, "version", state.version.clone());
    put(entry, "state", state.sharing.as_str().to_owned());
    put(entry, "cpu_limit", state.limits.cpu_percent);
    put(entry, "ram_limit", state.limits.ram_bytes);
    put(entry, "gpu_limit", state.limits.gpu_percent);
    put(entry, "cpu_model", state.cpu.model.clone());
    put(entry, "cpu_cores", state.cpu.cores);
    put(entry, "cpu_usage", state.cpu.usage_percent);
    put(entry, "memory_total", state.memory.total_bytes);
    put(entry, "memory_available", state.memory.available_bytes);
    put(
        entry,
        "load_average",
        (state.load.one, state.load.five, state.load.fifteen),
    );
    put(entry, "gpus", wire_gpus(&state.gpus));
    put(entry, "gpu_status", state.gpu_probe.to_wire());
    put(entry, "jobs_running", state.jobs_running);
    put(entry, "runtimes", wire_runtimes(&state.runtimes));
}

fn wire_member(member: &Member, now: u64) -> WireMember {
    let mut entry = WireMember::new();
    put(&mut entry, "node_id", member.node_id.clone());
    put(&mut entry, "fingerprint", member.fingerprint.clone());
    put(&mut entry, "local", false);
    put(&mut entry, "verified", true);
    put(&mut entry, "online", member.online);
    let address = member.address.map(|a| a.to_string()).unwrap_or_default();
    put(&mut entry, "address", address);
    put(
        &mut entry,
        "last_seen",
        if member.online { now } else { member.last_seen_ms },
    );
    put(&mut entry, "updated", member.updated_ms.unwrap_or(0));
    match &member.state {
        Some(state) => put_state(&mut entry, state),
        // Linked but no state yet: a name keeps lists readable.
        None => put(&mut entry, "name", String::new()),
    }
    entry
}

#[zbus::interface(name = "org.partagpu.PartaGPU.Daemon.Fleet1")]
impl FleetIface {
    #[zbus(property)]
    fn members(&self) -> Vec<WireMember> {
        let now = now_ms();
        let mut local = WireMember::new();
        put(&mut local, "node_id", self.fleet.own_node().to_owned());
        put(&mut local, "fingerprint", self.fingerprint.clone());
        put(&mut local, "local", true);
        put(&mut local, "verified", true);
        put(&mut local, "online", true);
        put(&mut local, "address", String::new());
        put(&mut local, "last_seen", now);
        put(&mut local, "updated", now);
        put_state(&mut local, &self.fleet.local());
        let members = self.fleet.members();
        std::iter::once(local)
            .chain(members.iter().map(|m| wire_member(m, now)))
            .collect()
    }

    #[zbus(property)]
    fn unverified(&self) -> Vec<(String, String)> {
        self.fleet
            .surroundings()
            .unverified
            .into_iter()
            .map(|(address, why)| (address.to_string(), why))
            .collect()
    }

    #[zbus(property)]
    fn other_rooms(&self) -> Vec<(String, u32)> {
        self.fleet.surroundings().other_rooms
    }

    #[zbus(property)]
    fn interfaces(&self) -> Vec<(String, String)> {
        self.fleet.surroundings().interfaces
    }
}

/// Signals `Fleet1` property changes, at most once per [`SIGNAL_EVERY`] each.
pub async fn signal_changes(object: InterfaceRef<FleetIface>, fleet: Arc<Fleet>) {
    let mut revisions = fleet.subscribe();
    let mut sent = Revisions::default();
    while revisions.changed().await.is_ok() {
        tokio::time::sleep(SIGNAL_EVERY).await;
        let now = *revisions.borrow_and_update();
        let iface = object.get().await;
        let emitter = object.signal_emitter();
        let mut result = Ok(());
        if now.members != sent.members {
            result = result.and(iface.members_changed(emitter).await);
        }
        if now.unverified != sent.unverified {
            result = result.and(iface.unverified_changed(emitter).await);
        }
        if now.other_rooms != sent.other_rooms {
            result = result.and(iface.other_rooms_changed(emitter).await);
        }
        if now.interfaces != sent.interfaces {
            result = result.and(iface.interfaces_changed(emitter).await);
        }
        if let Err(error) = result {
            tracing::debug!(%error, "cannot signal fleet changes");
        }
        sent = now;
    }
}
