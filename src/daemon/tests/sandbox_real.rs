// SPDX-License-Identifier: GPL-3.0-or-later
//! The real sandbox, asserted from inside a job (sandbox.md T4): real bubblewrap, started
//! through the real launcher as `nobody`, on a real size-capped tmpfs workspace. Needs root
//! and bubblewrap; without them each test says why it is skipped and passes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use partagpu_core::job::workspace::{EntryKind, WorkspaceEntry};
use partagpu_daemon::jobs::launch::launcher_command;
use partagpu_daemon::jobs::sandbox::{bwrap_args, bwrap_path, write_etc, SandboxPlan};
use partagpu_daemon::jobs::user::JobUser;
use partagpu_daemon::jobs::workspace::{is_mounted, mount_scratch, release_scratch, write_workspace};

const TMP_BYTES: u64 = 1 << 20;

/// Runs inside the sandbox and prints one JSON object of observations.
const CHECK_PY: &str = r#"import errno, json, os, subprocess
r = {}
with open("/proc/net/dev") as f:
    r["interfaces"] = sorted(l.split(":")[0].strip() for l in f.readlines()[2:])
r["present"] = [p for p in ["/home", "/root", "/etc/shadow", "/run/dbus/system_bus_socket",
                            "/tmp/.X11-unix", "/sys", "/var"] if os.path.lexists(p)]
with open("/proc/1/comm") as f:
    r["pid1"] = f.read().strip()
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
r["process_count"] = len(pids)
r["host_pid_visible"] = int(os.environ["HOST_PID"]) in pids
with open("/proc/self/status") as f:
    r["cap_eff"] = [l.split()[1] for l in f if l.startswith("CapEff:")][0]
r["uid"] = os.getuid()
r["gid"] = os.getgid()
r["unshare_rc"] = subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode
def write(path, size=1):
    try:
        with open(path, "wb") as f:
            f.write(b"x" * size)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
r["write_usr"] = write("/usr/partagpu-test")
r["write_root"] = write("/partagpu-test")
r["write_etc"] = write("/etc/passwd")
r["write_workspace"] = write("/workspace/out.txt")
r["write_tmp_small"] = write("/tmp/small", 4096)
r["write_tmp_big"] = write("/tmp/big", 2 << 20)
r["env"] = dict(os.environ)
r["cwd"] = os.getcwd()
r["user"] = __import__("pwd").getpwuid(os.getuid()).pw_name
print(json.dumps(r))
"#;

/// Detaches and removes the scratch tmpfs however the test ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(error) = release_scratch(&self.0) {
            eprintln!("cleanup: {error}");
        }
    }
}

/// Kills what is left in a throwaway cgroup and removes it however the test ends.
struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
            for pid in procs
                .lines()
                .filter_map(|p| p.parse().ok())
                .filter_map(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("cleanup: could not remove {}", self.0.display());
    }
}

fn nobody() -> JobUser {
    JobUser {
        name: "nobody".into(),
        uid: 65534,
        gid: 65534,
    }
}

fn partagpud() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_partagpud"))
}

/// Why this machine cannot run the real tests, if it cannot.
fn skip_reason() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root".into());
    }
    if !bwrap_path().exists() {
        return Some(format!("no {}", bwrap_path().display()));
    }
    None
}

/// Waits for `command` at most `limit`; the child is left to `--die-with-parent` on timeout.
fn output_within(mut command: Command, limit: Duration) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(child.wait_with_output()));
    receive
        .recv_timeout(limit)
        .expect("the job did not finish in time")
        .unwrap()
}

#[test]
fn job_sees_only_its_sandbox() {
    if let Some(reason) = skip_reason() {
        eprintln!("skipped: {reason}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // bubblewrap resolves the bind sources as the job user: it must traverse the parents.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let user = nobody();
    let scratch = Scratch(tmp.path().join("job/workspace"));
    mount_scratch(&scratch.0, 64 << 20, &user).unwrap();
    assert!(is_mounted(&scratch.0));
    let plan = [WorkspaceEntry {
        path: "probe/check.py".into(),
        kind: EntryKind::File {
            data: 0..CHECK_PY.len(),
            executable: false,
        },
    }];
    assert_eq!(
        write_workspace(&scratch.0, CHECK_PY.as_bytes(), &plan, &user).unwrap(),
        CHECK_PY.len() as u64
    );
    let etc = tmp.path().join("job/etc");
    write_etc(&etc, &user, "pg-job", None).unwrap();

    let argv = ["python3".to_owned(), "/workspace/probe/check.py".to_owned()];
    let env = BTreeMap::from([("HOST_PID".to_owned(), std::process::id().to_string())]);
    let sandbox = SandboxPlan {
        argv: &argv,
        env: &env,
        workspace: &scratch.0,
        etc_dir: &etc,
        runtime: None,
        user: &user,
        share_net: false,
        tmp_bytes: TMP_BYTES,
        devices: &[],
        ro_binds: &[],
        hostname: "pg-job",
    };
    let command = launcher_command(
        partagpud(),
        user.uid,
        user.gid,
        &[],
        &bwrap_path(),
        &bwrap_args(&sandbox),
    );
    let output = output_within(command, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("stderr: {}", String::from_utf8_lossy(&output.stderr));
    eprintln!("stdout: {stdout}");
    assert!(output.status.success(), "{:?}", output.status);
    let r: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();

    assert_eq!(r["interfaces"], serde_json::json!(["lo"]), "network");
    assert_eq!(r["present"], serde_json::json!([]), "host paths");
    assert_eq!(r["pid1"], "bwrap");
    assert!(r["process_count"].as_u64().unwrap() < 5, "{}", r["process_count"]);
    assert_eq!(r["host_pid_visible"], false);
    assert_eq!(r["cap_eff"], "0000000000000000");
    assert_eq!((r["uid"].as_u64(), r["gid"].as_u64()), (Some(65534), Some(65534)));
    assert_eq!(r["user"], "nobody");
    assert_ne!(r["unshare_rc"], 0, "a nested user namespace was created");
    for path in ["write_usr", "write_root", "write_etc"] {
        assert_ne!(r[path], "ok", "{path}");
    }
    assert_eq!(r["write_workspace"], "ok");
    assert_eq!(r["write_tmp_small"], "ok");
    assert_eq!(r["write_tmp_big"], "ENOSPC");
    assert_eq!(r["cwd"], "/workspace");
    let keys: Vec<&str> = r["env"].as_object().unwrap().keys().map(String::as_str).collect();
    // PWD is set by bubblewrap's --chdir.
    assert_eq!(
        keys,
        [
            "HOME",
            "HOST_PID",
            "LANG",
            "PATH",
            "PWD",
            "PYTHONUNBUFFERED",
            "TMPDIR"
        ]
    );
    assert_eq!(r["env"]["PATH"], "/usr/local/bin:/usr/bin:/bin");

    // The workspace outlives the sandbox, so artifacts can be collected.
    assert_eq!(std::fs::read(scratch.0.join("out.txt")).unwrap(), b"x");
    let path = scratch.0.clone();
    drop(scratch);
    assert!(!is_mounted(&path) && !path.exists());
    release_scratch(&path).unwrap();
}

#[test]
fn launcher_refuses_root() {
    let command = launcher_command(partagpud(), 0, 0, &[], Path::new("/bin/true"), &[]);
    let output = output_within(command, Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("partagpud launcher: ") && stderr.contains("root"),
        "{stderr}"
    );
    let missing = [PathBuf::from("/nonexistent/cgroup.procs")];
    let command = launcher_command(partagpud(), 65534, 65534, &missing, Path::new("/bin/true"), &[]);
    assert_eq!(
        output_within(command, Duration::from_secs(10)).status.code(),
        Some(127)
    );
}

#[test]
fn launcher_starts_the_program_inside_the_cgroup() {
    if let Some(reason) = skip_reason() {
        eprintln!("skipped: {reason}");
        return;
    }
    let pids = Path::new("/sys/fs/cgroup/pids");
    if !pids.is_dir() {
        eprintln!("skipped: no v1 pids hierarchy at {}", pids.display());
        return;
    }
    let name = format!("partagpu-sbtest-{}", std::process::id());
    std::fs::create_dir(pids.join(&name)).unwrap();
    let cgroup = Cgroup(pids.join(&name));
    let procs = [cgroup.0.join("cgroup.procs")];
    let args = [OsString::from("5")];
    let mut child = launcher_command(
        partagpud(),
        65534,
        65534,
        &procs,
        Path::new("/usr/bin/sleep"),
        &args,
    )
    .stdin(Stdio::null())
    .spawn()
    .unwrap();
    let pid = child.id();
    // The launcher joins before exec; by the time it is `sleep`, it must be inside.
    let mut status = String::new();
    for _ in 0..100 {
        status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if status.starts_with("Name:\tsleep") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let listed = std::fs::read_to_string(&procs[0]).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(status.starts_with("Name:\tsleep"), "{status}");
    assert!(
        status.contains("\nUid:\t65534\t65534\t65534\t65534\n"),
        "{status}"
    );
    let groups = status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .unwrap_or("?");
    assert!(groups.trim().is_empty(), "supplementary groups kept: {groups}");
    assert!(
        cgroups
            .lines()
            .any(|l| l.contains(":pids:") && l.ends_with(&format!("/{name}"))),
        "{cgroups}"
    );
    assert!(listed.lines().any(|l| l == pid.to_string()), "{listed}");
}
