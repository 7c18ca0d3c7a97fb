// SPDX-License-Identifier: GPL-3.0-or-later
//! The fleet part of [`crate::Client`]: `Fleet1`'s members, typed, and what the dialler saw.
//!
//! Members arrive as dictionaries so the service can add keys; a missing key reads as its
//! empty value and an unknown key is ignored, as the contract says.

use std::collections::HashMap;

use serde::Serialize;
use zbus::zvariant::{OwnedValue, Value};

use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::{CpuInfo, GpuInfo, Limits, MemoryInfo};

use crate::proxies::{WireGpu, WireRuntime};
use crate::{gpu_from_wire, runtime_from_wire, Client, ClientError};

/// A machine of the room (this one included).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peer {
    /// Node id, 32 hex digits.
    pub node_id: String,
    /// Fingerprint words.
    pub fingerprint: String,
    /// Display name.
    pub name: String,
    /// This machine.
    pub local: bool,
    /// Identity proven.
    pub verified: bool,
    /// A live session now.
    pub online: bool,
    /// Where it listens.
    pub address: Option<String>,
    /// Last heard, ms since the epoch.
    pub last_seen_ms: u64,
    /// Last state, ms since the epoch.
    pub updated_ms: Option<u64>,
    /// Its partagpud version.
    pub version: String,
    /// "sharing", "paused" or "off" ("" before its first state).
    pub state: String,
    /// What it lends.
    pub limits: Limits,
    /// Processor.
    pub cpu: CpuInfo,
    /// Memory.
    pub memory: MemoryInfo,
    /// Load averages (1, 5, 15 min).
    pub load_average: [f64; 3],
    /// GPUs.
    pub gpus: Vec<GpuInfo>,
    /// "available" or "unavailable: reason".
    pub gpu_status: String,
    /// Jobs running or paused on it now (0 from a service older than job execution).
    pub jobs_running: u32,
    /// The Python runtimes it offers to jobs, the default first.
    pub runtimes: Vec<RuntimeInfo>,
}

/// An announcement of this room that is not a verified member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unverified {
    /// Its address.
    pub address: String,
    /// Why it is not verified.
    pub problem: String,
}

/// Another room on the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherRoom {
    /// Its label.
    pub label: String,
    /// How many machines announce it.
    pub machines: u32,
}

/// An interface discovery uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscoveryInterface {
    /// Its name.
    pub name: String,
    /// Address and prefix.
    pub address: String,
}

/// Everything `partagpuctl peers` shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FleetView {
    /// This machine first, then every verified member.
    pub members: Vec<Peer>,
    /// Announcements of this room not verified.
    pub unverified: Vec<Unverified>,
    /// Other rooms.
    pub other_rooms: Vec<OtherRoom>,
    /// Interfaces in use.
    pub interfaces: Vec<DiscoveryInterface>,
}

fn get<T>(entry: &HashMap<String, OwnedValue>, key: &str) -> Option<T>
where
    T: TryFrom<Value<'static>>,
{
    let value: Value<'static> = entry.get(key)?.try_clone().ok()?.into();
    T::try_from(value).ok()
}

/// Reads one `Members` entry.
#[must_use]
pub fn parse_member(entry: &HashMap<String, OwnedValue>) -> Peer {
    let text = |key| get::<String>(entry, key).unwrap_or_default();
    let flag = |key| get::<bool>(entry, key).unwrap_or(false);
    let count = |key| get::<u32>(entry, key).unwrap_or(0);
    let bytes = |key| get::<u64>(entry, key).unwrap_or(0);
    let (one, five, fifteen) = get::<(f64, f64, f64)>(entry, "load_average").unwrap_or_default();
    let gpus: Vec<WireGpu> = get(entry, "gpus").unwrap_or_default();
    let runtimes: Vec<WireRuntime> = get(entry, "runtimes").unwrap_or_default();
    Peer {
        node_id: text("node_id"),
        fingerprint: text("fingerprint"),
        name: text("name"),
        local: flag("local"),
        verified: flag("verified"),
        online: flag("online"),
        address: Some(text("address")).filter(|a| !a.is_empty()),
        last_seen_ms: bytes("last_seen"),
        updated_ms: Some(bytes("updated")).filter(|t| *t != 0),
        version: text("version"),
        state: text("state"),
        limits: Limits {
            cpu_percent: count("cpu_limit"),
            ram_bytes: bytes("ram_limit"),
            gpu_percent: count("gpu_limit"),
        },
        cpu: CpuInfo {
            model: text("cpu_model"),
            cores: count("cpu_cores"),
            usage_percent: get::<f64>(entry, "cpu_usage").unwrap_or(0.0),
        },
        memory: MemoryInfo {
            total_bytes: bytes("memory_total"),
            available_bytes: bytes("memory_available"),
        },
        load_average: [one, five, fifteen],
        gpus: gpus.into_iter().map(gpu_from_wire).collect(),
        gpu_status: text("gpu_status"),
        jobs_running: count("jobs_running"),
        runtimes: runtimes.into_iter().map(runtime_from_wire).collect(),
    }
}

impl Client {
    /// The machines of the room and what discovery saw around them.
    ///
    /// # Errors
    /// A bus error.
    pub async fn fleet(&self) -> Result<FleetView, ClientError> {
        let fleet = &self.fleet;
        let members = fleet.members().await?;
        Ok(FleetView {
            members: members.iter().map(parse_member).collect(),
            unverified: fleet
                .unverified()
                .await?
                .into_iter()
                .map(|(address, problem)| Unverified { address, problem })
                .collect(),
            other_rooms: fleet
                .other_rooms()
                .await?
                .into_iter()
                .map(|(label, machines)| OtherRoom { label, machines })
                .collect(),
            interfaces: fleet
                .interfaces()
                .await?
                .into_iter()
                .map(|(name, address)| DiscoveryInterface { name, address })
                .collect(),
        })
    }
}
