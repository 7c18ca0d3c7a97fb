// SPDX-License-Identifier: GPL-3.0-or-later
//! How a machine of the room is described on the Room page.

use partagpu_client::Peer;
use partagpu_core::SharingState;

use crate::format;
use crate::i18n::{i18n, i18n_f, ni18n_f};

/// Title and two lines of details for one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberText {
    /// Its name, marked when it is this machine.
    pub title: String,
    /// State, liveness and load.
    pub state: String,
    /// What it lends and has.
    pub lends: String,
    /// Version and fingerprint.
    pub identity: String,
}

/// "online", "offline (5 min ago)".
#[must_use]
pub fn liveness(peer: &Peer, now_ms: u64) -> String {
    if peer.local || peer.online {
        i18n("online")
    } else if peer.last_seen_ms == 0 {
        i18n("offline")
    } else {
        i18n_f(
            "offline ({} ago)",
            &[&format::span(now_ms.saturating_sub(peer.last_seen_ms))],
        )
    }
}

/// "none", "1 × NVIDIA RTX A4000", "2 × …".
#[must_use]
pub fn gpus(peer: &Peer) -> String {
    match peer.gpus.first() {
        None => i18n("no GPU"),
        Some(first) => ni18n_f(
            "{} GPU ({})",
            "{} GPUs ({})",
            u32::try_from(peer.gpus.len()).unwrap_or(u32::MAX),
            &[&peer.gpus.len().to_string(), &first.name],
        ),
    }
}

/// Everything the page says about `peer`.
#[must_use]
pub fn describe(peer: &Peer, now_ms: u64) -> MemberText {
    let name = format::machine(&peer.name, &peer.node_id);
    let title = if peer.local {
        i18n_f("{} (this machine)", &[&name])
    } else {
        name
    };
    let state =
        SharingState::from_wire(&peer.state).map_or_else(|| i18n("unknown state"), format::sharing_state);
    let free = i18n_f(
        "{} free of {}",
        &[
            &format::size(peer.memory.available_bytes),
            &format::size(peer.memory.total_bytes),
        ],
    );
    let jobs = ni18n_f(
        "{} job",
        "{} jobs",
        peer.jobs_running,
        &[&peer.jobs_running.to_string()],
    );
    MemberText {
        title,
        state: i18n_f(
            "{} · {} · CPU {} × {} % · memory {} · {}",
            &[
                &state,
                &liveness(peer, now_ms),
                &peer.cpu.cores.to_string(),
                &format!("{:.0}", peer.cpu.usage_percent),
                &free,
                &jobs,
            ],
        ),
        lends: i18n_f("Lends {} · {}", &[&format::lends(&peer.limits), &gpus(peer)]),
        identity: i18n_f(
            "partagpud {} · fingerprint {}",
            &[&peer.version, &peer.fingerprint],
        ),
    }
}

/// How busy a member's processor is, 0 to 1.
#[must_use]
pub fn cpu_load(peer: &Peer) -> f64 {
    (peer.cpu.usage_percent / 100.0).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use partagpu_core::{CpuInfo, GpuInfo, Limits, MemoryInfo};

    use super::*;

    fn peer() -> Peer {
        Peer {
            node_id: "00112233445566778899aabbccddeeff".into(),
            fingerprint: "alpha beta gamma delta epsilon zeta".into(),
            name: "lab-2".into(),
            local: false,
            verified: true,
            online: false,
            address: Some("10.0.0.2:7655".into()),
            last_seen_ms: 1_000,
            updated_ms: Some(1_000),
            version: "0.1.0".into(),
            state: "paused".into(),
            limits: Limits {
                cpu_percent: 20,
                ram_bytes: 1 << 30,
                gpu_percent: 10,
            },
            cpu: CpuInfo {
                model: String::new(),
                cores: 4,
                usage_percent: 12.4,
            },
            memory: MemoryInfo {
                total_bytes: 4 << 30,
                available_bytes: 2 << 30,
            },
            load_average: [0.0; 3],
            gpus: vec![GpuInfo {
                index: 0,
                name: "RTX".into(),
                uuid: "GPU-1".into(),
                memory_total_bytes: 1,
                memory_used_bytes: 0,
                utilization_percent: 0,
            }],
            gpu_status: "available".into(),
            jobs_running: 1,
            runtimes: Vec::new(),
        }
    }

    #[test]
    fn a_member_is_described_in_full() {
        let text = describe(&peer(), 301_000);
        assert_eq!(text.title, "lab-2");
        assert_eq!(
            text.state,
            "paused · offline (5 min ago) · CPU 4 × 12 % · memory 2.0 GiB free of 4.0 GiB · 1 job"
        );
        assert_eq!(
            text.lends,
            "Lends CPU 20 % · RAM 1.0 GiB · GPU 10 % · 1 GPU (RTX)"
        );
        assert!(text.identity.contains("0.1.0") && text.identity.contains("alpha beta"));
        assert!((cpu_load(&peer()) - 0.124).abs() < 1e-9);
    }

    #[test]
    fn this_machine_is_marked_and_online() {
        let mut local = peer();
        local.local = true;
        local.gpus.clear();
        let text = describe(&local, 0);
        assert_eq!(text.title, "lab-2 (this machine)");
        assert!(text.state.contains("online") && text.lends.ends_with("no GPU"));
    }
}
