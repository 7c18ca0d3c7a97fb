// SPDX-License-Identifier: GPL-3.0-or-later
//! The cgroup backends against the real kernel: a job started inside its cgroup the way the
//! launcher does it (`echo 0 > cgroup.procs` for each file, then exec), frozen, limited,
//! OOM-killed, fork-limited, killed and removed. Skipped, with the reason printed, when not
//! root or when no cgroup hierarchy is usable.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use partagpu_daemon::jobs::cgroup::{detect, CgroupBackend, CgroupLimits, JobCgroup};

/// A backend under a root of its own (`partagpu-test-<pid>-<tag>`), or why the test is skipped.
fn backend(tag: &str) -> Option<Box<dyn CgroupBackend>> {
    if !rustix::process::geteuid().is_root() {
        println!("SKIPPED: real cgroups need root");
        return None;
    }
    let root = format!("partagpu-test-{}-{tag}", std::process::id());
    match detect(std::path::Path::new("/sys/fs/cgroup"), &root) {
        Ok(b) => {
            println!("backend: {}", b.describe());
            Some(b)
        }
        Err(e) => {
            println!("SKIPPED: {e}");
            None
        }
    }
}

/// Kills and removes the job cgroup and its service root even when an assertion fails, so
/// that no cgroup outlives the test.
struct Guard {
    cg: Box<dyn JobCgroup>,
    child: Option<Child>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let killed = self.cg.kill_all();
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        let removed = self.cg.remove();
        for procs in self.cg.procs_files() {
            if let Some(root) = procs.parent().and_then(|job| job.parent()) {
                let _ = std::fs::remove_dir(root);
            }
        }
        if let Err(e) = killed.and(removed) {
            eprintln!("cleanup of {} failed: {e}", self.cg.name());
        }
    }
}

/// Starts `command` inside the cgroup exactly as the launcher will: the shell joins every
/// hierarchy first, then execs.
fn spawn_inside(cg: &dyn JobCgroup, command: &str) -> Child {
    let join: String = cg
        .procs_files()
        .iter()
        .map(|f| format!("echo 0 > '{}'; ", f.display()))
        .collect();
    Command::new("sh")
        .arg("-c")
        .arg(format!("{join}exec {command}"))
        .spawn()
        .expect("spawn sh")
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("{what}: after {} ms", start.elapsed().as_millis());
}

fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "the job did not end within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The directory of `cg` that has the control file `name`.
fn control_file(cg: &dyn JobCgroup, name: &str) -> Option<PathBuf> {
    cg.procs_files()
        .iter()
        .map(|p| p.with_file_name(name))
        .find(|p| p.exists())
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

#[test]
fn lifecycle_freeze_limits_kill_remove() {
    let Some(backend) = backend("a") else { return };
    let limits = CgroupLimits::from_share(50, cores(), 256 << 20, 64);
    let mut guard = Guard {
        cg: backend.create("0a", &limits).unwrap(),
        child: None,
    };
    println!(
        "procs files: {:?}; unified: {:?}",
        guard.cg.procs_files(),
        guard.cg.unified_path()
    );
    assert_eq!(backend.list(), vec!["0a".to_owned()]);

    let child = spawn_inside(guard.cg.as_ref(), "sleep 30");
    let pid = child.id() as i32;
    guard.child = Some(child);
    let cg = guard.cg.as_ref();
    wait_until("the job is in its cgroup", Duration::from_secs(1), || {
        cg.pids().unwrap().contains(&pid)
    });
    let status = format!("/proc/{pid}/status");
    println!(
        "/proc/{pid}/cgroup:\n{}",
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap()
    );

    cg.freeze().unwrap();
    wait_until("frozen", Duration::from_secs(1), || cg.is_frozen().unwrap());
    let state = read(std::path::Path::new(&status));
    let state = state
        .lines()
        .find(|l| l.starts_with("State:"))
        .unwrap_or("?")
        .to_owned();
    println!("frozen task: {state}");
    assert!(
        state.contains('D') || state.contains("frozen") || state.contains('T'),
        "{state}"
    );
    cg.thaw().unwrap();
    assert!(!cg.is_frozen().unwrap());

    let raised = CgroupLimits::from_share(25, cores(), 512 << 20, 32);
    cg.set_limits(&raised).unwrap();
    if let Some(f) = control_file(cg, "cpu.cfs_quota_us") {
        assert_eq!(read(&f), raised.cpu_quota_us.to_string());
        assert_eq!(read(&f.with_file_name("cpu.cfs_period_us")), "100000");
        let mem = control_file(cg, "memory.limit_in_bytes").unwrap();
        assert_eq!(read(&mem), raised.memory_bytes.to_string());
        if let Some(memsw) = control_file(cg, "memory.memsw.limit_in_bytes") {
            assert_eq!(read(&memsw), raised.memory_bytes.to_string());
        }
    } else {
        let f = control_file(cg, "cpu.max").unwrap();
        assert_eq!(read(&f), format!("{} 100000", raised.cpu_quota_us));
        assert_eq!(
            read(&f.with_file_name("memory.max")),
            raised.memory_bytes.to_string()
        );
    }
    assert_eq!(read(&control_file(cg, "pids.max").unwrap()), "32");
    println!(
        "cpu used: {} us, memory peak: {} bytes",
        cg.cpu_usage_us().unwrap(),
        cg.memory_peak_bytes().unwrap()
    );

    cg.kill_all().unwrap();
    assert!(cg.is_empty().unwrap());
    let exit = wait_exit(guard.child.as_mut().unwrap(), Duration::from_secs(2));
    assert_eq!(exit.signal(), Some(9), "{exit:?}");
    let dirs: Vec<PathBuf> = cg
        .procs_files()
        .iter()
        .map(|p| p.parent().unwrap().to_owned())
        .collect();
    cg.remove().unwrap();
    cg.remove().unwrap();
    for d in &dirs {
        assert!(!d.exists(), "{} is still there", d.display());
    }
    println!("removed {} directories", dirs.len());
}

#[test]
fn memory_hog_is_oom_killed() {
    let Some(backend) = backend("b") else { return };
    let limits = CgroupLimits::from_share(100, cores(), 64 << 20, 64);
    let mut guard = Guard {
        cg: backend.create("0b", &limits).unwrap(),
        child: None,
    };
    // Bytes multiplication writes every page, so all 512 MiB are really charged.
    let child = spawn_inside(guard.cg.as_ref(), "python3 -c 'b = b\"x\" * (512 << 20)'");
    let child = guard.child.insert(child);
    let exit = wait_exit(child, Duration::from_secs(30));
    let ooms = guard.cg.oom_kills().unwrap();
    println!(
        "hog: {exit:?}, oom_kills {ooms}, peak {} bytes",
        guard.cg.memory_peak_bytes().unwrap()
    );
    assert_eq!(exit.signal(), Some(9), "{exit:?}");
    assert!(ooms >= 1);
    assert!(guard.cg.memory_peak_bytes().unwrap() <= 64 << 20);
}

#[test]
fn fork_bomb_hits_the_pids_limit() {
    let Some(backend) = backend("c") else { return };
    let limits = CgroupLimits::from_share(100, cores(), 256 << 20, 16);
    let mut guard = Guard {
        cg: backend.create("0c", &limits).unwrap(),
        child: None,
    };
    let child = spawn_inside(
        guard.cg.as_ref(),
        "sh -c 'for i in $(seq 100); do sleep 5 & done; wait'",
    );
    guard.child = Some(child);
    let cg = guard.cg.as_ref();
    let start = Instant::now();
    let mut most = 0;
    while start.elapsed() < Duration::from_millis(1500) {
        most = most.max(cg.pids().unwrap().len());
        std::thread::sleep(Duration::from_millis(5));
    }
    let hits = cg.pids_limit_hits().unwrap();
    println!("fork bomb: at most {most} processes seen, {hits} forks refused");
    assert!(most <= 16, "{most}");
    assert!(hits >= 1);
    cg.kill_all().unwrap();
    assert!(cg.is_empty().unwrap());
}
