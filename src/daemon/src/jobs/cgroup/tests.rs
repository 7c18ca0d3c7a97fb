// SPDX-License-Identifier: GPL-3.0-or-later
//! Unit tests on fixture trees: limits, names, parsers, detection and the v2 backend. The v1
//! backend is in `tests_v1.rs`.

use std::path::Path;

use super::fs::keyed_value;
use super::*;

/// Stands in for the kernel in fixture trees: cgroupfs fills a new directory with its control
/// files and drops them on rmdir; a plain directory does neither.
pub(super) mod fake_kernel {
    use std::cell::RefCell;
    use std::path::Path;

    thread_local! {
        static FILES: RefCell<Vec<(&'static str, &'static str)>> = const { RefCell::new(Vec::new()) };
    }

    /// From now on (in this test's thread) every new cgroup directory gets `files`.
    pub fn install(files: &[(&'static str, &'static str)]) {
        FILES.with(|f| *f.borrow_mut() = files.to_vec());
    }

    pub fn mkdir(dir: &Path) {
        FILES.with(|f| {
            for (name, content) in f.borrow().iter() {
                std::fs::write(dir.join(name), content).unwrap();
            }
        });
    }

    pub fn rmdir(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }
}

/// The files a fresh cgroup2 directory has (a subset).
pub(super) const V2_FILES: &[(&str, &str)] = &[
    ("cgroup.controllers", "cpu memory pids\n"),
    ("cgroup.subtree_control", ""),
    ("cgroup.procs", ""),
    ("cgroup.events", "populated 0\nfrozen 0\n"),
    ("cgroup.freeze", "0\n"),
    ("cgroup.kill", ""),
    ("cpu.max", "max 100000\n"),
    ("cpu.stat", "usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n"),
    ("memory.max", "max\n"),
    ("memory.swap.max", "max\n"),
    ("memory.oom.group", "0\n"),
    (
        "memory.events",
        "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 1\n",
    ),
    ("memory.peak", "4096\n"),
    ("memory.current", "1024\n"),
    ("pids.max", "max\n"),
    ("pids.events", "max 3\n"),
];

pub(super) fn put(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

pub(super) fn get(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// A cgroup2 root in a temporary directory.
fn v2_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fake_kernel::install(V2_FILES);
    fake_kernel::mkdir(dir.path());
    dir
}

const JOB: &str = "0a1b-2c3d";

#[test]
fn share_of_the_whole_machine() {
    let l = CgroupLimits::from_share(50, 4, 1 << 30, 64);
    assert_eq!(
        (l.cpu_quota_us, l.cpu_period_us, l.memory_bytes, l.pids),
        (200_000, 100_000, 1 << 30, 64)
    );
    assert_eq!(CgroupLimits::from_share(100, 1, 0, 0).cpu_quota_us, 100_000);
    assert_eq!(
        CgroupLimits::from_share(0, 8, 0, 0).cpu_quota_us,
        MIN_CPU_QUOTA_US
    );
    assert_eq!(
        CgroupLimits::from_share(1, 1, 0, 0).cpu_quota_us,
        MIN_CPU_QUOTA_US
    );
    assert_eq!(
        CgroupLimits::from_share(25, 0, 0, 0).cpu_quota_us,
        25_000,
        "0 cores counts as 1"
    );
}

#[test]
fn job_names() {
    for ok in ["0", "abc-123", "deadbeef-0000", &"f".repeat(64)] {
        assert!(validate_name(ok).is_ok(), "{ok}");
    }
    for bad in ["", "ABC", "a/b", "..", "g", "a b", "abc\n", &"a".repeat(65)] {
        assert!(
            matches!(validate_name(bad), Err(CgroupError::InvalidName(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn flat_keyed_files() {
    let p = Path::new("/x/memory.events");
    let events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 4\n";
    assert_eq!(keyed_value(events, "oom_kill", p).unwrap(), Some(4));
    assert_eq!(
        keyed_value(events, "oom", p).unwrap(),
        Some(1),
        "a key is a whole word"
    );
    assert_eq!(
        keyed_value("populated 1\nfrozen 1\n", "frozen", p).unwrap(),
        Some(1)
    );
    assert_eq!(keyed_value("max 0\n", "max", p).unwrap(), Some(0));
    assert_eq!(
        keyed_value("oom_kill_disable 0\nunder_oom 0\n", "oom_kill", p).unwrap(),
        None
    );
    let err = keyed_value("max lots\n", "max", p).unwrap_err();
    assert!(err.to_string().contains("/x/memory.events"), "{err}");
}

#[test]
fn v2_detection_prepares_the_root() {
    let fx = v2_fixture();
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    assert!(
        backend.describe().starts_with("cgroup v2"),
        "{}",
        backend.describe()
    );
    assert_eq!(
        get(&fx.path().join("cgroup.subtree_control")),
        "+cpu +memory +pids"
    );
    assert_eq!(
        get(&fx.path().join("partagpu/cgroup.subtree_control")),
        "+cpu +memory +pids"
    );
    assert!(backend.list().is_empty());
}

#[test]
fn v2_create_writes_the_limits() {
    let fx = v2_fixture();
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(50, 4, 512 << 20, 32))
        .unwrap();
    let dir = fx.path().join("partagpu").join(JOB);
    assert_eq!(get(&dir.join("cpu.max")), "200000 100000");
    assert_eq!(get(&dir.join("memory.max")), (512u64 << 20).to_string());
    assert_eq!(get(&dir.join("memory.swap.max")), "0");
    assert_eq!(get(&dir.join("memory.oom.group")), "1");
    assert_eq!(get(&dir.join("pids.max")), "32");
    assert_eq!(cg.procs_files(), vec![dir.join("cgroup.procs")]);
    assert_eq!(
        cg.unified_path().as_deref(),
        Some(format!("partagpu/{JOB}").as_str())
    );
    assert!(matches!(
        backend.create(JOB, &CgroupLimits::from_share(1, 1, 1, 1)),
        Err(CgroupError::Exists { .. })
    ));
    assert!(matches!(
        backend.create("../x", &CgroupLimits::from_share(1, 1, 1, 1)),
        Err(CgroupError::InvalidName(_))
    ));
    assert_eq!(backend.list(), vec![JOB.to_owned()]);
    assert_eq!(backend.open(JOB).unwrap().name(), JOB);
    assert!(backend.open("beef").is_none());

    cg.set_limits(&CgroupLimits::from_share(100, 2, 1 << 20, 8))
        .unwrap();
    assert_eq!(get(&dir.join("cpu.max")), "200000 100000");
    assert_eq!(get(&dir.join("pids.max")), "8");
}

#[test]
fn v2_without_swap_accounting() {
    let fx = v2_fixture();
    let files: Vec<_> = V2_FILES
        .iter()
        .copied()
        .filter(|(n, _)| *n != "memory.swap.max")
        .collect();
    fake_kernel::install(&files);
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    assert!(!fx
        .path()
        .join("partagpu")
        .join(JOB)
        .join("memory.swap.max")
        .exists());
}

#[test]
fn v2_usage_of_all_jobs_is_the_roots() {
    let fx = v2_fixture();
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    put(
        &fx.path().join("partagpu/cpu.stat"),
        "usage_usec 42000\nuser_usec 40000\n",
    );
    put(&fx.path().join("partagpu/memory.current"), "8192\n");
    let usage = backend.usage().unwrap();
    assert_eq!((usage.cpu_usage_us, usage.memory_bytes), (42000, 8192));
}

#[test]
fn v2_freezer_counters_and_removal() {
    let fx = v2_fixture();
    let backend = detect_in(fx.path(), "partagpu", &HostView::default()).unwrap();
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    let dir = fx.path().join("partagpu").join(JOB);
    cg.freeze().unwrap();
    assert_eq!(get(&dir.join("cgroup.freeze")), "1");
    assert!(!cg.is_frozen().unwrap(), "frozen only once cgroup.events says so");
    put(&dir.join("cgroup.events"), "populated 1\nfrozen 1\n");
    assert!(cg.is_frozen().unwrap());
    assert!(!cg.is_empty().unwrap());
    cg.thaw().unwrap();
    assert_eq!(get(&dir.join("cgroup.freeze")), "0");

    assert_eq!(cg.oom_kills().unwrap(), 2);
    assert_eq!(cg.pids_limit_hits().unwrap(), 3);
    assert_eq!(cg.cpu_usage_us().unwrap(), 1234);
    assert_eq!(cg.memory_peak_bytes().unwrap(), 4096);
    std::fs::remove_file(dir.join("memory.peak")).unwrap();
    assert_eq!(
        cg.memory_peak_bytes().unwrap(),
        1024,
        "memory.current when memory.peak is absent"
    );

    // Processes that do not exist (above any pid_max) are "already gone", not errors.
    put(&dir.join("cgroup.procs"), "999999991\n999999992\n");
    assert_eq!(cg.pids().unwrap(), vec![999_999_991, 999_999_992]);
    cg.signal_all(rustix::process::Signal::TERM).unwrap();

    put(&dir.join("cgroup.procs"), "");
    put(&dir.join("cgroup.events"), "populated 0\nfrozen 0\n");
    cg.kill_all().unwrap();
    assert_eq!(get(&dir.join("cgroup.kill")), "1");
    cg.remove().unwrap();
    assert!(!dir.exists());
    cg.remove().unwrap();
    assert!(backend.list().is_empty());
}

#[test]
fn v2_under_systemd_delegation() {
    let fx = v2_fixture();
    let unit = fx.path().join("system.slice/partagpud.service");
    std::fs::create_dir_all(&unit).unwrap();
    fake_kernel::mkdir(&unit);
    let host = HostView {
        self_cgroup: Some("0::/system.slice/partagpud.service\n".into()),
        delegated: Some(true),
        ..HostView::default()
    };
    let backend = detect_in(fx.path(), "partagpu", &host).unwrap();
    assert_eq!(
        get(&unit.join("supervisor/cgroup.procs")),
        "0",
        "the service moved itself out"
    );
    assert_eq!(get(&unit.join("cgroup.subtree_control")), "+cpu +memory +pids");
    assert_eq!(
        get(&unit.join("jobs/cgroup.subtree_control")),
        "+cpu +memory +pids"
    );
    let cg = backend
        .create(JOB, &CgroupLimits::from_share(10, 1, 1 << 20, 8))
        .unwrap();
    assert_eq!(
        cg.unified_path().unwrap(),
        format!("system.slice/partagpud.service/jobs/{JOB}")
    );
    assert!(!fx.path().join("partagpu").exists());

    // Detecting again from inside supervisor keeps the same layout and moves nobody.
    put(&unit.join("supervisor/cgroup.procs"), "");
    let again = HostView {
        self_cgroup: Some("0::/system.slice/partagpud.service/supervisor\n".into()),
        ..host
    };
    assert_eq!(
        detect_in(fx.path(), "partagpu", &again).unwrap().list(),
        vec![JOB.to_owned()]
    );
    assert_eq!(get(&unit.join("supervisor/cgroup.procs")), "");
}

#[test]
fn not_delegated_uses_the_named_root() {
    let fx = v2_fixture();
    let host = HostView {
        self_cgroup: Some("0::/user.slice/session-1.scope\n".into()),
        delegated: Some(false),
        ..HostView::default()
    };
    let backend = detect_in(fx.path(), "partagpu-lab-m2", &host).unwrap();
    assert!(
        backend.describe().ends_with("partagpu-lab-m2"),
        "{}",
        backend.describe()
    );
}

#[test]
fn neither_hierarchy() {
    let dir = tempfile::tempdir().unwrap();
    let err = detect_in(dir.path(), "partagpu", &HostView::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("no usable cgroup hierarchy: "), "{msg}");
    assert!(
        msg.contains("is not a cgroup2 mount") && msg.contains("no v1 cpu hierarchy"),
        "{msg}"
    );
}

#[test]
fn cgroup2_without_the_controllers() {
    let fx = v2_fixture();
    put(&fx.path().join("cgroup.controllers"), "cpu io\n");
    let msg = detect_in(fx.path(), "partagpu", &HostView::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("does not offer memory, pids"), "{msg}");
}

#[test]
fn mountinfo_decides_what_is_cgroup2() {
    let fx = v2_fixture();
    let p = fx.path().display();
    let tmpfs = format!("31 23 0:28 / {p} rw,relatime - tmpfs tmpfs rw,mode=755\n");
    let host = HostView {
        mountinfo: Some(tmpfs),
        ..HostView::default()
    };
    assert!(matches!(
        detect_in(fx.path(), "partagpu", &host),
        Err(CgroupError::NoHierarchy(_))
    ));
    let cgroup2 = format!("41 31 0:38 / {p} rw,relatime - cgroup2 cgroup2 rw\n");
    let host = HostView {
        mountinfo: Some(cgroup2),
        ..HostView::default()
    };
    assert!(detect_in(fx.path(), "partagpu", &host)
        .unwrap()
        .describe()
        .starts_with("cgroup v2"));
}

#[test]
fn service_root_names() {
    let fx = v2_fixture();
    for bad in ["", "a/b", "..", ".hidden", "x y"] {
        let r = detect_in(fx.path(), bad, &HostView::default());
        assert!(matches!(r, Err(CgroupError::InvalidRoot(_))), "{bad:?}");
    }
}
