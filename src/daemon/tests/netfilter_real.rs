// SPDX-License-Identifier: GPL-3.0-or-later
//! The tier-1 allow-list loaded into a real kernel: two network namespaces joined by a veth
//! pair stand for this machine (a) and a peer (b); a cgroup of the unified hierarchy stands for
//! the job. Needs root, nft, ip and python3; skips with a reason otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use partagpu_core::job::spec::PeerAccess;
use partagpu_daemon::jobs::netfilter::{rules, table_name, Nft, TABLE_PREFIX};

const SERVER: &str = r#"
import select, socket, sys
socks = []
for port in sys.argv[2:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], int(port)))
    s.listen(16)
    socks.append(s)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [])[0]:
        s.accept()[0].close()
"#;

const CLIENT: &str = r#"
import socket, sys
src = (sys.argv[3], 0) if len(sys.argv) > 3 else None
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2, source_address=src).close()
    print("ok")
except Exception as e:
    print(type(e).__name__)
"#;

struct Lab {
    ns_a: String,
    ns_b: String,
    cgroup: PathBuf,
    servers: Vec<Child>,
    python: &'static str,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for s in &mut self.servers {
            let _ = s.kill();
            let _ = s.wait();
        }
        // The job's table lives in netns a and goes with it.
        for ns in [&self.ns_a, &self.ns_b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir(&self.cgroup);
        let _ = std::fs::remove_dir(self.cgroup.parent().unwrap());
    }
}

fn sh(cmd: &str) {
    let status = Command::new("sh").args(["-ec", cmd]).status().unwrap();
    assert!(status.success(), "{cmd}");
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Lab {
    fn netns(&self, ns: &str) -> String {
        format!("--net=/run/netns/{ns}")
    }

    /// Listens in netns `ns` on `ports`, inside the job's cgroup or not.
    fn serve(&mut self, ns: &str, in_job: bool, host: &str, ports: &[&str]) {
        let enter = if in_job {
            format!("echo $$ > {} && ", self.cgroup.join("cgroup.procs").display())
        } else {
            String::new()
        };
        let script = format!(
            "{enter}exec nsenter {} {} -c \"$0\" \"$@\"",
            self.netns(ns),
            self.python
        );
        let mut child = Command::new("sh")
            .args(["-c", &script, SERVER, host])
            .args(ports)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        self.servers.push(child);
    }

    /// Connects from netns `ns`, inside the job's cgroup or not; returns "ok" or the error.
    fn connect(&self, ns: &str, in_job: bool, host: &str, port: u16, source: Option<&str>) -> String {
        let procs = self.cgroup.join("cgroup.procs");
        // The shell enters the cgroup itself, then becomes the client: no move after start.
        let enter = if in_job {
            format!("echo $$ > {} && ", procs.display())
        } else {
            String::new()
        };
        let script = format!(
            "{enter}exec nsenter {} {} -c \"$0\" \"$@\"",
            self.netns(ns),
            self.python
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script, CLIENT, host, &port.to_string()]);
        cmd.args(source);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

#[test]
fn only_the_job_cgroup_is_confined_to_its_peers() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP netfilter_real: needs root");
        return;
    }
    for program in ["nft", "ip", "nsenter", "unshare"] {
        if !have(program) {
            eprintln!("SKIP netfilter_real: {program} is not installed");
            return;
        }
    }
    let unified = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        PathBuf::from("/sys/fs/cgroup")
    } else if Path::new("/sys/fs/cgroup/unified/cgroup.procs").exists() {
        PathBuf::from("/sys/fs/cgroup/unified")
    } else {
        eprintln!("SKIP netfilter_real: no cgroup2 hierarchy is mounted");
        return;
    };
    let pid = std::process::id();
    let x = pid % 200 + 20;
    let (a, b) = (format!("10.77.{x}.1"), format!("10.77.{x}.2"));
    let rel = format!("partagpu-nfttest-{pid}/job");
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let mut lab = Lab {
        ns_a: format!("pgnft-a-{pid}"),
        ns_b: format!("pgnft-b-{pid}"),
        cgroup: unified.join(&rel),
        servers: Vec::new(),
        python,
    };
    std::fs::create_dir_all(&lab.cgroup).unwrap();
    let (na, nb) = (lab.ns_a.clone(), lab.ns_b.clone());
    sh(&format!(
        "ip netns add {na}; ip netns add {nb}
         ip -n {na} link add pgv0 type veth peer name pgv1 netns {nb}
         ip -n {na} addr add {a}/24 dev pgv0; ip -n {nb} addr add {b}/24 dev pgv1
         ip -n {nb} addr add 10.77.{x}.3/24 dev pgv1
         for n in {na} {nb}; do ip -n $n link set lo up; done
         ip -n {na} link set pgv0 up; ip -n {nb} link set pgv1 up"
    ));
    lab.serve(&nb, false, "0.0.0.0", &["29500", "7655"]);
    // The job listens on its port and on an ephemeral one (gloo does); the host on 8000.
    lab.serve(&na, true, "0.0.0.0", &["29501", "40123"]);
    lab.serve(&na, false, "0.0.0.0", &["8000"]);

    let nft = Nft {
        netns: Some(PathBuf::from(format!("/run/netns/{na}"))),
    };
    let table = table_name(&format!("{pid:x}-0")).unwrap();
    let peers = [PeerAccess {
        address: b.parse().unwrap(),
        first_port: 29500,
        last_port: 29510,
    }];
    println!("{}", rules(&table, &rel, &peers).unwrap());
    nft.install(&table, &rel, &peers, &unified).unwrap();
    // Installing again replaces the table in one transaction instead of failing.
    nft.install(&table, &rel, &peers, &unified).unwrap();
    assert_eq!(nft.list_tables(TABLE_PREFIX), std::slice::from_ref(&table));

    let checks = [
        (
            "job -> peer DDP port",
            lab.connect(&na, true, &b, 29500, None),
            "ok",
        ),
        (
            "job -> peer 7655",
            lab.connect(&na, true, &b, 7655, None),
            "ConnectionRefusedError",
        ),
        (
            "other process -> peer 7655",
            lab.connect(&na, false, &b, 7655, None),
            "ok",
        ),
        (
            "job -> loopback own port",
            lab.connect(&na, true, "127.0.0.1", 29501, None),
            "ok",
        ),
        (
            "job -> loopback other port",
            lab.connect(&na, true, "127.0.0.1", 8000, None),
            "ConnectionRefusedError",
        ),
        (
            "other process -> loopback 8000",
            lab.connect(&na, false, "127.0.0.1", 8000, None),
            "ok",
        ),
        (
            "peer -> job port",
            lab.connect(&nb, false, &a, 29501, Some(&b)),
            "ok",
        ),
        (
            "non-peer -> job port",
            lab.connect(&nb, false, &a, 29501, Some(&format!("10.77.{x}.3"))),
            "TimeoutError",
        ),
        (
            "peer -> job's ephemeral port",
            lab.connect(&nb, false, &a, 40123, Some(&b)),
            "ok",
        ),
        (
            "non-peer -> job's ephemeral port",
            lab.connect(&nb, false, &a, 40123, Some(&format!("10.77.{x}.3"))),
            "TimeoutError",
        ),
        (
            "non-peer -> the host's own port",
            lab.connect(&nb, false, &a, 8000, Some(&format!("10.77.{x}.3"))),
            "ok",
        ),
    ];
    for (what, got, want) in &checks {
        println!("{what}: {got} (want {want})");
    }
    for (what, got, want) in checks {
        assert_eq!(got, want, "{what}");
    }

    nft.remove(&table).unwrap();
    nft.remove(&table).unwrap();
    assert!(nft.list_tables(TABLE_PREFIX).is_empty());
    assert_eq!(
        lab.connect(&na, true, &b, 7655, None),
        "ok",
        "job -> peer 7655 after remove"
    );
}
