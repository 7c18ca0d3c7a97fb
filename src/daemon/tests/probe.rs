// SPDX-License-Identifier: GPL-3.0-or-later
//! The probe reads checked-in `/proc` fixture trees and GPU fixture files.

use std::path::{Path, PathBuf};

use partagpu_core::{GpuInfo, GpuProbeStatus, LoadAverage, MemoryInfo};
use partagpu_daemon::probe::{FakeGpus, GpuBackend, Prober, ProcError, ProcFs};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn an_x86_desktop_is_read_completely() {
    let proc_fs = ProcFs::new(fixture("x86-4core"));
    let cpu = proc_fs.cpu_info().unwrap();
    assert_eq!(cpu.model, "Intel(R) Core(TM) i5-10500 CPU @ 3.10GHz");
    assert_eq!(cpu.cores, 4);
    assert_eq!(
        proc_fs.memory().unwrap(),
        MemoryInfo {
            total_bytes: 16_318_540 * 1024,
            available_bytes: 12_000_000 * 1024
        }
    );
    assert_eq!(
        proc_fs.load_average().unwrap(),
        LoadAverage {
            one: 0.52,
            five: 0.58,
            fifteen: 0.59
        }
    );
}

#[test]
fn cpu_usage_is_the_busy_share_between_two_readings() {
    let earlier = ProcFs::new(fixture("arm-no-model")).cpu_times().unwrap();
    let later = ProcFs::new(fixture("x86-4core")).cpu_times().unwrap();
    // x86: busy 1500 of 10000 ticks; arm: busy 20 of 100. Delta: 1480 of 9900.
    let usage = later.busy_percent_since(&earlier);
    assert!((usage - 1480.0 * 100.0 / 9900.0).abs() < 1e-9, "{usage}");
    assert_eq!(later.busy_percent_since(&later), 0.0);
}

#[test]
fn missing_fields_are_reported_with_the_file_name() {
    let proc_fs = ProcFs::new(fixture("arm-no-model"));
    assert_eq!(proc_fs.cpu_info().unwrap().model, "");
    assert_eq!(proc_fs.cpu_info().unwrap().cores, 2);
    let ProcError::Parse { path, what } = proc_fs.memory().unwrap_err() else {
        panic!()
    };
    assert!(path.ends_with("proc/meminfo"));
    assert_eq!(what, "MemAvailable");
    assert!(proc_fs
        .load_average()
        .unwrap_err()
        .to_string()
        .contains("loadavg"));
    let missing = ProcFs::new(fixture("does-not-exist")).cpu_info().unwrap_err();
    assert!(matches!(missing, ProcError::Read { .. }));
}

#[test]
fn fake_gpus_come_from_a_file_and_a_bad_file_makes_them_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpus.json");
    let gpu = GpuInfo {
        index: 0,
        name: "NVIDIA RTX A4000".into(),
        uuid: "GPU-0000".into(),
        memory_total_bytes: 16 << 30,
        memory_used_bytes: 1 << 30,
        utilization_percent: 42,
    };
    std::fs::write(&path, serde_json::to_string(&[&gpu]).unwrap()).unwrap();
    let mut prober = Prober::new(ProcFs::new(fixture("x86-4core")), Box::new(FakeGpus::new(&path)));
    let resources = prober.probe().unwrap();
    assert_eq!(resources.gpus, vec![gpu]);
    assert_eq!(resources.gpu_probe, GpuProbeStatus::Available);
    assert_eq!(resources.cpu.usage_percent, 0.0);

    std::fs::write(&path, "not json").unwrap();
    let resources = prober.probe().unwrap();
    assert!(resources.gpus.is_empty());
    assert!(
        matches!(resources.gpu_probe, GpuProbeStatus::Unavailable(reason) if reason.contains("not a GPU list"))
    );
    let mut backend = FakeGpus::new(&dir.path().join("absent.json"));
    assert!(backend.probe().unwrap_err().contains("cannot read"));
}
