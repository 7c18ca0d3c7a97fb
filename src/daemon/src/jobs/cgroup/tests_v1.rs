// SPDX-License-Identifier: GPL-3.0-or-later
//! Unit tests of the v1 (hybrid) backend on fixture trees shaped like Debian 12's
//! /sys/fs/cgroup.

use std::path::Path;

use super::tests::{fake_kernel, get, put};
use super::v1::{memory_order, MemoryOrder};
use super::*;

const MAX: &str = "9223372036854771712\n";

/// The files a fresh v1 directory has, all controllers together (a subset).
const V1_FILES: &[(&str, &str)] = &[
    ("cgroup.procs", ""),
    ("memory.limit_in_bytes", MAX),
    ("memory.memsw.limit_in_bytes", MAX),
    ("memory.swappiness", "60\n"),
    (
        "memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
    ),
    ("memory.max_usage_in_bytes", "8192\n"),
    ("memory.usage_in_bytes", "6144\n"),
    ("cpu.cfs_period_us", "100000\n"),
    ("cpu.cfs_quota_us", "-1\n"),
    ("cpuacct.usage", "5000000\n"),
    ("pids.max", "max\n"),
    ("pids.events", "max 7\n"),
    ("freezer.state", "THAWED\n"),
];

const JOB: &str = "cafe-01";

/// `/sys/fs/cgroup` of Debian 12: `cpu,cpuacct` with `cpu` and `cpuacct` symlinks when
/// `comounted`, else two hierarchies (as on this machine's kernel), and the unified mount.
fn v1_fixture(comounted: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fake_kernel::install(V1_FILES);
    let mut hierarchies = vec!["memory", "pids", "freezer", "cpuset"];
    if comounted {
        hierarchies.push("cpu,cpuacct");
        std::os::unix::fs::symlink("cpu,cpuacct", root.join("cpu")).unwrap();
        std::os::unix::fs::symlink("cpu,cpuacct", root.join("cpuacct")).unwrap();
    } else {
        hierarchies.extend(["cpu", "cpuacct"]);
    }
    for h in hierarchies {
        put(&root.join(h).join("cgroup.procs"), "");
    }
    put(&root.join("unified/cgroup.controllers"), "");
    put(&root.join("unified/cgroup.procs"), "");
    dir
}

fn real(root: &Path, rel: &str) -> std::path::PathBuf {
    root.canonicalize().unwrap().join(rel)
}

#[test]
fn detection_and_layout() {
    let fx = v1_fixture(true);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let text = backend.describe();
    assert!(
        text.starts_with("cgroup v1 (cpu, cpuacct, memory, pids, freezer) + unified "),
        "{text}"
    );
    assert!(text.ends_with("unified/partagpu"), "{text}");
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(50, 4, 256 << 20, 16))
        .unwrap();
    let r = |rel: &str| real(fx.path(), rel);
    let expected: Vec<_> = ["memory", "cpu,cpuacct", "pids", "freezer"]
        .iter()
        .map(|h| r(&format!("{h}/partagpu/{JOB}/cgroup.procs")))
        .chain([fx.path().join(format!("unified/partagpu/{JOB}/cgroup.procs"))])
        .collect();
    assert_eq!(
        cg.procs_files(),
        expected,
        "co-mounted cpu,cpuacct is joined once"
    );
    assert_eq!(cg.unified_path().unwrap(), format!("partagpu/{JOB}"));
    assert!(!fx.path().join("cpuset/partagpu").exists());
    assert_eq!(backend.list(), vec![JOB.to_owned()]);
}

#[test]
fn all_jobs_usage_is_read_from_the_service_root() {
    let fx = v1_fixture(false);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    put(&fx.path().join("cpuacct/partagpu/cpuacct.usage"), "7000000\n");
    put(
        &fx.path().join("memory/partagpu/memory.usage_in_bytes"),
        "65536\n",
    );
    let usage = backend.usage().unwrap();
    assert_eq!((usage.cpu_usage_us, usage.memory_bytes), (7000, 65536));
}

#[test]
fn limits_are_written() {
    let fx = v1_fixture(true);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(50, 4, 256 << 20, 16))
        .unwrap();
    let f = |rel: &str| get(&real(fx.path(), rel));
    let cpu = format!("cpu,cpuacct/partagpu/{JOB}");
    let mem = format!("memory/partagpu/{JOB}");
    assert_eq!(f(&format!("{cpu}/cpu.cfs_period_us")), "100000");
    assert_eq!(f(&format!("{cpu}/cpu.cfs_quota_us")), "200000");
    assert_eq!(
        f(&format!("{mem}/memory.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    assert_eq!(
        f(&format!("{mem}/memory.memsw.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    assert_eq!(f(&format!("{mem}/memory.swappiness")), "0");
    assert_eq!(f(&format!("pids/partagpu/{JOB}/pids.max")), "16");

    // Raising live: both values move up.
    cg.set_limits(&CgroupLimits::from_share(50, 4, 1 << 30, 16))
        .unwrap();
    assert_eq!(
        f(&format!("{mem}/memory.limit_in_bytes")),
        (1u64 << 30).to_string()
    );
    assert_eq!(
        f(&format!("{mem}/memory.memsw.limit_in_bytes")),
        (1u64 << 30).to_string()
    );
}

#[test]
fn memsw_stays_above_the_limit() {
    assert_eq!(
        memory_order(9_223_372_036_854_771_712, 64 << 20),
        MemoryOrder::LimitFirst
    );
    assert_eq!(memory_order(64 << 20, 1 << 30), MemoryOrder::MemswFirst);
    assert_eq!(memory_order(64 << 20, 64 << 20), MemoryOrder::MemswFirst);
}

#[test]
fn without_swap_accounting() {
    let fx = v1_fixture(true);
    let files: Vec<_> = V1_FILES
        .iter()
        .copied()
        .filter(|(n, _)| !n.contains("memsw"))
        .collect();
    fake_kernel::install(&files);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    let mem = real(fx.path(), &format!("memory/partagpu/{JOB}"));
    assert_eq!(get(&mem.join("memory.limit_in_bytes")), (1u64 << 20).to_string());
    assert!(!mem.join("memory.memsw.limit_in_bytes").exists());
}

#[test]
fn separate_cpu_and_cpuacct() {
    let fx = v1_fixture(false);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    assert_eq!(cg.procs_files().len(), 6);
    put(
        &real(fx.path(), &format!("cpuacct/partagpu/{JOB}/cpuacct.usage")),
        "7000000\n",
    );
    assert_eq!(cg.cpu_usage_us().unwrap(), 7000);
}

#[test]
fn freezer_and_counters() {
    let fx = v1_fixture(true);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    let state = real(fx.path(), &format!("freezer/partagpu/{JOB}/freezer.state"));
    cg.freeze().unwrap();
    assert_eq!(get(&state), "FROZEN");
    put(&state, "FREEZING\n");
    assert!(!cg.is_frozen().unwrap(), "FREEZING is not frozen yet");
    put(&state, "FROZEN\n");
    assert!(cg.is_frozen().unwrap());
    cg.thaw().unwrap();
    assert_eq!(get(&state), "THAWED");

    assert_eq!(cg.oom_kills().unwrap(), 3);
    let oom = real(fx.path(), &format!("memory/partagpu/{JOB}/memory.oom_control"));
    put(&oom, "oom_kill_disable 0\nunder_oom 0\n");
    assert_eq!(cg.oom_kills().unwrap(), 0, "older kernels have no oom_kill line");
    assert_eq!(cg.pids_limit_hits().unwrap(), 7);
    assert_eq!(cg.cpu_usage_us().unwrap(), 5000);
    assert_eq!(cg.memory_peak_bytes().unwrap(), 8192);
}

#[test]
fn tasks_are_the_union() {
    let fx = v1_fixture(true);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    put(
        &real(fx.path(), &format!("freezer/partagpu/{JOB}/cgroup.procs")),
        "999999991\n999999992\n",
    );
    put(
        &real(fx.path(), &format!("pids/partagpu/{JOB}/cgroup.procs")),
        "999999992\n999999993\n",
    );
    assert_eq!(cg.pids().unwrap(), vec![999_999_991, 999_999_992, 999_999_993]);
    assert!(!cg.is_empty().unwrap());
    cg.signal_all(rustix::process::Signal::TERM).unwrap();
}

#[test]
fn exists_removal_and_reopen() {
    let fx = v1_fixture(true);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let limits = CgroupLimits::from_share(10, 1, 1 << 20, 8);
    backend.create(JOB, &limits).unwrap();
    let err = backend.create(JOB, &limits).unwrap_err();
    assert!(matches!(&err, CgroupError::Exists { path } if path.ends_with(format!("memory/partagpu/{JOB}"))));
    assert!(err.to_string().contains(JOB), "{err}");
    let cg = backend.open(JOB).expect("still there after the refused create");
    cg.remove().unwrap();
    for p in cg.procs_files() {
        assert!(!p.parent().unwrap().exists(), "{}", p.display());
    }
    cg.remove().unwrap();
    assert!(backend.open(JOB).is_none());
    assert!(backend.list().is_empty());
}
