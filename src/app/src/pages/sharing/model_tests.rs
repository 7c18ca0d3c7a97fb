// SPDX-License-Identifier: GPL-3.0-or-later

use partagpu_core::status::MachineStatus;
use partagpu_core::{
    CpuInfo, GpuProbeStatus, Limits, LimitsUpdate, LoadAverage, MemoryInfo, Resources, SharingState,
};

use super::*;

const GIB: u64 = 1 << 30;

pub(crate) fn status(enabled: bool, paused: bool, limits: Limits) -> MachineStatus {
    MachineStatus {
        version: "0.1.0".into(),
        display_name: "lab-1".into(),
        state: match (enabled, paused) {
            (false, _) => SharingState::Off,
            (true, true) => SharingState::Paused,
            (true, false) => SharingState::Sharing,
        },
        sharing_enabled: enabled,
        paused,
        limits,
        resources: Resources {
            cpu: CpuInfo {
                model: "Test CPU".into(),
                cores: 8,
                usage_percent: 25.0,
            },
            memory: MemoryInfo {
                total_bytes: 16 * GIB,
                available_bytes: 12 * GIB,
            },
            load: LoadAverage {
                one: 0.5,
                five: 0.4,
                fifteen: 0.3,
            },
            gpus: Vec::new(),
            gpu_probe: GpuProbeStatus::Unavailable("no NVIDIA driver found".into()),
            jobs: partagpu_core::JobsUsage {
                cpu_percent: 10.0,
                memory_bytes: GIB,
            },
        },
        peer_port: 7655,
    }
}

fn limits(cpu: u32, ram: u64, gpu: u32) -> Limits {
    Limits {
        cpu_percent: cpu,
        ram_bytes: ram,
        gpu_percent: gpu,
    }
}

#[test]
fn only_the_newest_move_is_sent_after_the_debounce() {
    let mut model = SharingModel::default();
    model.set_status(status(true, false, limits(50, 8 * GIB, 50)));
    let first = model.slider_moved(Slider::Cpu, 60.0).unwrap();
    let second = model.slider_moved(Slider::Cpu, 70.4).unwrap();
    assert_eq!(model.debounce_elapsed(first), None);
    let update = model.debounce_elapsed(second).unwrap();
    assert_eq!(
        update,
        LimitsUpdate {
            cpu_percent: Some(70),
            ..LimitsUpdate::default()
        }
    );
    assert_eq!(model.shown_limits().unwrap().cpu_percent, 70);
}

#[test]
fn showing_the_service_value_sends_nothing() {
    let mut model = SharingModel::default();
    model.set_status(status(true, false, limits(50, 8 * GIB, 50)));
    assert_eq!(model.slider_moved(Slider::Cpu, 50.0), None);
    assert_eq!(model.slider_moved(Slider::Ram, (8 * GIB) as f64), None);
}

#[test]
fn a_confirmed_value_stops_being_pending_and_a_refusal_restores() {
    let mut model = SharingModel::default();
    model.set_status(status(true, false, limits(50, 8 * GIB, 50)));
    model.slider_moved(Slider::Gpu, 20.0).unwrap();
    model.slider_moved(Slider::Ram, (4 * GIB + 1000) as f64).unwrap();
    assert_eq!(model.shown_limits().unwrap(), limits(50, 4 * GIB, 20));
    model.set_status(status(true, false, limits(50, 8 * GIB, 20)));
    // RAM still pending: shown as chosen until the service says so.
    assert_eq!(model.shown_limits().unwrap(), limits(50, 4 * GIB, 20));
    model.change_refused();
    assert_eq!(model.shown_limits().unwrap(), limits(50, 8 * GIB, 20));
}

#[test]
fn ram_snaps_to_steps_but_reaches_the_total() {
    assert_eq!(snap_ram((GIB + 1) as f64, 16 * GIB), GIB);
    assert_eq!(snap_ram((16 * GIB) as f64, 16 * GIB), 16 * GIB);
    assert_eq!(snap_ram(-5.0, 16 * GIB), 0);
    assert_eq!(
        snap_ram((15 * GIB + 200 * (1 << 20)) as f64, 15 * GIB + 300 * (1 << 20)),
        15 * GIB + 256 * (1 << 20)
    );
}

#[test]
fn modes_take_the_fewest_calls() {
    let mut model = SharingModel::default();
    model.set_status(status(false, true, limits(50, GIB, 50)));
    assert_eq!(
        model.steps_to(SharingState::Sharing),
        vec![ModeStep::SetEnabled(true), ModeStep::SetPaused(false)]
    );
    assert_eq!(
        model.steps_to(SharingState::Paused),
        vec![ModeStep::SetEnabled(true)]
    );
    assert_eq!(model.steps_to(SharingState::Off), vec![]);
    model.set_status(status(true, false, limits(50, GIB, 50)));
    assert_eq!(
        model.steps_to(SharingState::Paused),
        vec![ModeStep::SetPaused(true)]
    );
    assert_eq!(
        model.steps_to(SharingState::Off),
        vec![ModeStep::SetEnabled(false)]
    );
}

#[test]
fn gauges_and_the_missing_gpu_are_reported() {
    let mut model = SharingModel::default();
    assert!(model.gauges().is_none());
    model.set_status(status(true, false, limits(50, 8 * GIB, 50)));
    let gauges = model.gauges().unwrap();
    // 25 % busy of which jobs 10 %; 4 GiB of 16 used, of which jobs 1 GiB.
    assert!((gauges.cpu.jobs - 0.10).abs() < 1e-9 && (gauges.cpu.own - 0.15).abs() < 1e-9);
    assert!((gauges.cpu.lent - 0.5).abs() < 1e-9);
    assert!((gauges.ram.jobs - 1.0 / 16.0).abs() < 1e-9 && (gauges.ram.own - 3.0 / 16.0).abs() < 1e-9);
    assert!((gauges.ram.lent - 0.5).abs() < 1e-9);
    // Sampled a moment apart, jobs may read more than the total: never a negative own part.
    let mut busy = status(true, false, limits(50, 8 * GIB, 50));
    busy.resources.jobs.cpu_percent = 40.0;
    model.set_status(busy);
    let gauges = model.gauges().unwrap();
    assert!((gauges.cpu.jobs - 0.25).abs() < 1e-9 && gauges.cpu.own == 0.0);
    assert_eq!(model.no_gpu_reason().as_deref(), Some("no NVIDIA driver found"));
}
