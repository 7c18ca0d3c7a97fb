// SPDX-License-Identifier: GPL-3.0-or-later
//! This machine's side of the fleet: its state as the room sees it, published again after
//! every probe (live load, every 2 s) and at once after every change of the owner's policy
//! (pause, limits, name), so the room sees a pause within the time of one message.

use std::sync::Arc;

use partagpu_core::fleet::NodeState;

use super::Fleet;
use crate::service::MachineState;
use crate::sharing::SharingStore;

/// Builds and publishes this machine's state.
pub struct LocalPublisher {
    /// The fleet to publish into.
    pub fleet: Arc<Fleet>,
    /// The probe results.
    pub machine: Arc<MachineState>,
    /// The owner's policy.
    pub store: Arc<SharingStore>,
    /// This partagpud's version.
    pub version: String,
}

impl LocalPublisher {
    /// Publishes the state now.
    pub fn publish(&self) {
        let state = node_state(&self.version, &self.machine.resources(), &self.store.policy());
        self.fleet.publish_local(state);
    }

    /// Publishes after every policy change, for as long as the store lives.
    pub async fn follow_policy(self: Arc<Self>) {
        let mut changes = self.store.subscribe();
        while changes.changed().await.is_ok() {
            self.publish();
        }
    }
}

/// This machine's state as it tells the room.
#[must_use]
pub fn node_state(
    version: &str,
    resources: &partagpu_core::Resources,
    policy: &partagpu_core::SharingPolicy,
) -> NodeState {
    let short = |text: &str| -> String {
        text.chars()
            .filter(|c| !c.is_control())
            .take(partagpu_core::fleet::MAX_TEXT_CHARS)
            .collect()
    };
    let mut cpu = resources.cpu.clone();
    cpu.model = short(&cpu.model);
    cpu.usage_percent = cpu.usage_percent.clamp(0.0, 100.0);
    let gpus = resources
        .gpus
        .iter()
        .take(partagpu_core::fleet::MAX_GPUS)
        .map(|gpu| partagpu_core::GpuInfo {
            name: short(&gpu.name),
            uuid: short(&gpu.uuid),
            ..gpu.clone()
        })
        .collect();
    let gpu_probe = match &resources.gpu_probe {
        partagpu_core::GpuProbeStatus::Unavailable(reason) => {
            partagpu_core::GpuProbeStatus::Unavailable(short(reason))
        }
        available => available.clone(),
    };
    NodeState {
        name: policy.display_name.clone(),
        version: short(version),
        sharing: policy.state(),
        limits: policy.limits,
        cpu,
        memory: resources.memory,
        load: resources.load,
        gpus,
        gpu_probe,
    }
}
