// SPDX-License-Identifier: GPL-3.0-or-later
//! `peers`: the machines of the room, live, and why an announced machine is not one.

use anyhow::Result;
use partagpu_client::{Client, FleetView, Peer};
use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::size::format_size;
use serde::Serialize;

/// The `--json` document (the same shape as `python -m partagpu peers --json`).
#[derive(Serialize)]
struct Document<'a> {
    room: Option<RoomRef>,
    #[serde(flatten)]
    fleet: &'a FleetView,
}

#[derive(Serialize)]
struct RoomRef {
    room_id: String,
    label: String,
}

pub async fn run(client: &Client, json: bool) -> Result<()> {
    let room = client.room().await?;
    let fleet = client.fleet().await?;
    let room = room.joined.then_some(RoomRef {
        room_id: room.room_id,
        label: room.label,
    });
    if json {
        let document = Document { room, fleet: &fleet };
        println!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        print!("{}", render(room.as_ref(), &fleet, now_ms()));
    }
    Ok(())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn seen(peer: &Peer, now: u64) -> String {
    if peer.online {
        return "online".into();
    }
    let minutes = now.saturating_sub(peer.last_seen_ms) / 60_000;
    match minutes {
        0 => "offline (just now)".into(),
        1..=119 => format!("offline ({minutes} min ago)"),
        _ => format!("offline ({} h ago)", minutes / 60),
    }
}

/// `torch (torch 2.5.1)`, or `system (Python 3.12.3)` without torch: what tells runtimes
/// apart at a glance (`--json` has every version).
fn runtime_cell(runtime: &RuntimeInfo) -> String {
    match &runtime.torch {
        Some(torch) => format!("{} (torch {torch})", runtime.name),
        None => format!("{} (Python {})", runtime.name, runtime.python),
    }
}

const COLUMNS: usize = 9;

fn row(peer: &Peer, now: u64) -> [String; COLUMNS] {
    let name = match (peer.local, peer.name.is_empty()) {
        (true, _) => format!("{} (this machine)", peer.name),
        (false, true) => format!("({}…)", &peer.node_id[..peer.node_id.len().min(8)]),
        (false, false) => peer.name.clone(),
    };
    let gpus = if peer.gpus.is_empty() {
        "none".to_owned()
    } else {
        let busy: Vec<String> = peer
            .gpus
            .iter()
            .map(|g| format!("{} %", g.utilization_percent))
            .collect();
        format!("{} ({})", peer.gpus.len(), busy.join(", "))
    };
    let lends = format!(
        "CPU {} % · RAM {} · GPU {} %",
        peer.limits.cpu_percent,
        format_size(peer.limits.ram_bytes),
        peer.limits.gpu_percent
    );
    let no_state = peer.state.is_empty();
    let runtimes = if peer.runtimes.is_empty() {
        "none".to_owned()
    } else {
        let cells: Vec<String> = peer.runtimes.iter().map(runtime_cell).collect();
        cells.join(" · ")
    };
    [
        name,
        if no_state { "?".into() } else { peer.state.clone() },
        seen(peer, now),
        format!("{} × {:.0} %", peer.cpu.cores, peer.cpu.usage_percent),
        format!(
            "{} / {} free",
            format_size(peer.memory.available_bytes),
            format_size(peer.memory.total_bytes)
        ),
        gpus,
        if no_state {
            "?".into()
        } else {
            peer.jobs_running.to_string()
        },
        lends,
        runtimes,
    ]
}

fn render(room: Option<&RoomRef>, fleet: &FleetView, now: u64) -> String {
    let mut out = String::new();
    match room {
        None => out.push_str("This machine is in no room (partagpuctl room new, or room join CODE).\n"),
        Some(room) => {
            let online = fleet.members.iter().filter(|p| p.online).count();
            let name = if room.label.is_empty() {
                room.room_id.clone()
            } else {
                format!("\"{}\"", room.label)
            };
            out.push_str(&format!(
                "Room {name}: {} machine(s), {online} online\n",
                fleet.members.len()
            ));
        }
    }
    let header = [
        "NAME", "STATE", "SEEN", "CPU", "MEMORY", "GPUS", "JOBS", "LENDS", "RUNTIMES",
    ]
    .map(str::to_owned);
    let rows: Vec<[String; COLUMNS]> = std::iter::once(header)
        .chain(fleet.members.iter().map(|p| row(p, now)))
        .collect();
    let mut widths = [0usize; COLUMNS];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for unverified in &fleet.unverified {
        out.push_str(&format!(
            "Not a member yet: {} — {}\n",
            unverified.address, unverified.problem
        ));
    }
    for other in &fleet.other_rooms {
        let label = if other.label.is_empty() {
            "(no label)"
        } else {
            &other.label
        };
        out.push_str(&format!(
            "Other room on this network: {label}, {} machine(s)\n",
            other.machines
        ));
    }
    let interfaces: Vec<String> = fleet
        .interfaces
        .iter()
        .map(|i| format!("{} {}", i.name, i.address))
        .collect();
    if interfaces.is_empty() {
        out.push_str("Discovery: no LAN interface in use\n");
    } else {
        out.push_str(&format!("Discovery on: {}\n", interfaces.join(", ")));
    }
    out
}
