# SPDX-License-Identifier: GPL-3.0-or-later
"""Jobs across a 2-machine virtual lab (issue 5): machine 1 submits, machine 2 runs them in
its real sandbox (bubblewrap as partagpu-job, cgroup v1 + unified, nftables), over real
PGR/1. Each assertion that matters is made from inside the job or from the executing
machine's own record. Run as root (scripts/test does).
"""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_lab_fleet import wait_until
from test_virtual_lab import LAB, LAB_DIR, REPO, lab, lab_ok, on, run  # noqa: F401

SCRIPTS = REPO / "tests" / "lab" / "jobs"
PYTHON = os.environ.get("PARTAGPU_PYTHON", "/usr/bin/python3")  # with the partagpu package
WORKSPACE_OF_TESTS = SCRIPTS  # the job scripts travel as the workspace
# Machine 2: short pause grace and a small process cap, so preemption and the fork cap are
# quick to observe.
M2_CONFIG = 'display_name = "lab-2"\n\n[jobs]\ncgroup_root = "partagpu-lab-m2-jobs"\npause_grace_s = 3\nmax_processes = 64\n'


def submit(*args, node="lab-2", timeout=90, output=None):
    """`partagpuctl run` on machine 1; returns the CompletedProcess."""
    cmd = ["partagpuctl", "run", "--workspace", str(SCRIPTS)]
    if node:
        cmd += ["--node", node]
    if output:
        cmd += ["--output", str(output)]
    return on(1, *cmd, *args, timeout=timeout)


def jobs(machine):
    result = on(machine, "partagpuctl", "jobs", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def job_on(machine, short):
    return next(j for j in jobs(machine) if j["id"].startswith(short))


def short_id(stderr):
    """The 8-hex id from `Job 3f2a9c1b …` or `job 3f2a9c1b failed…`."""
    for word in stderr.replace(":", " ").split():
        if len(word) == 8 and all(c in "0123456789abcdef" for c in word):
            return word
    raise AssertionError(f"no job id in {stderr!r}")


def job_processes():
    """Live processes of the job user. Zombies are left out: a sandbox's inner processes are
    orphaned when it is killed and reaped by PID 1 of the host in its own time."""
    result = run(["ps", "-u", "partagpu-job", "-o", "pid=,stat=,cmd="])
    return "\n".join(line for line in result.stdout.strip().splitlines() if line.split()[1][0] != "Z")


def job_cgroups(machine):
    found = []
    for root in Path("/sys/fs/cgroup").iterdir():
        subtree = root / f"partagpu-lab-m{machine}-jobs"
        if subtree.is_dir():
            found += [str(p) for p in subtree.iterdir() if p.is_dir()]
    return found


@pytest.fixture(scope="module")
def jobs_lab():
    try:
        lab_ok("up", "2")
        (LAB_DIR / "m2" / "partagpu.toml").write_text(M2_CONFIG)
        lab_ok("restart", "2")
        created = on(1, "partagpuctl", "room", "new", "--label", "Salle A")
        assert created.returncode == 0, created.stderr
        code = created.stdout.splitlines()[2].split()
        joined = on(2, "partagpuctl", "room", "join", "--room", "Salle A", *code)
        assert joined.returncode == 0, joined.stderr
        wait_until("machine 2 is a member of machine 1's room",
                   lambda: any(m["name"] == "lab-2" and m["online"] for m in
                               json.loads(on(1, "partagpuctl", "peers", "--json").stdout)["members"]),
                   timeout=10)
        yield code
    finally:
        down = lab("down", timeout=120)
        assert down.returncode == 0, down.stderr


def test_a_remote_job_streams_its_output_and_returns_its_artifact_checked(jobs_lab, tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "job.py").write_text(
        "import socket\nprint('hello from', socket.gethostname(), flush=True)\n"
        "open('out.txt', 'w').write('result 42\\n')\nprint('\\x1b[31mred\\x1b[0m done')\n")
    result = on(1, "partagpuctl", "run", "--node", "lab-2", "--workspace", str(tmp_path / "ws"),
                "--artifact", "out.txt", "--output", str(tmp_path / "got"), "--", "python3", "job.py", timeout=60)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"hello from pg-[0-9a-f]{12}\nred done\n", result.stdout), "escapes are neutralised"
    assert (tmp_path / "got" / "out.txt").read_text() == "result 42\n"
    assert "succeeded on lab-2" in result.stderr and "out.txt (10 B, sha256 " in result.stderr
    record = job_on(2, short_id(result.stderr))
    assert record["state"] == "succeeded" and record["submitter_name"] == "lab-1"
    assert record["artifacts"][0]["sha256"] == job_on(1, record["id"][:8])["artifacts"][0]["sha256"]


def test_inside_the_sandbox_nothing_of_the_host_is_reachable(jobs_lab):
    result = submit("--", "python3", "inside.py")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    uid = int(run(["id", "-u", "partagpu-job"]).stdout)
    assert seen["uid"] == uid and seen["cap_eff"] == "0000000000000000"
    assert seen["interfaces"] == ["lo"], "no network by default"
    assert not any(seen["visible"].values()), seen["visible"]
    assert seen["processes"] <= 4, "host processes are invisible"
    assert (seen["write_usr"], seen["write_root"], seen["write_etc"]) == ("EROFS",) * 3
    assert seen["write_workspace"] == "ok" and seen["cwd"] == "/workspace"
    assert seen["userns"] not in (0, "no unshare binary"), "user namespaces are disabled"
    assert seen["connect_host"] == "ENETUNREACH"
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONUNBUFFERED", "PWD"}


def test_misbehaving_jobs_fail_with_the_expected_reason(jobs_lab):
    assert on(2, "partagpuctl", "limits", "set", "--ram", "256M").returncode == 0
    try:
        oom = submit("--", "python3", "hog.py", "ram")
        assert oom.returncode != 0
        assert "failed: out of memory: the job needed more than its RAM limit of 256.0 MiB" in oom.stderr
        forks = submit("--", "python3", "hog.py", "forks")
        assert forks.returncode == 3 and "fork refused after" in forks.stdout
        assert "reached its limit of processes" in forks.stderr
        outside = submit("--", "sh", "-c", "echo x > /usr/evil")
        assert outside.returncode != 0 and "Read-only file system" in outside.stdout + outside.stderr
    finally:
        on(2, "partagpuctl", "limits", "set", "--ram", "2G")
    assert job_processes() == "" and job_cgroups(2) == []


def test_cpu_use_stays_near_the_lent_share(jobs_lab):
    assert on(2, "partagpuctl", "limits", "set", "--cpu", "25").returncode == 0
    try:
        result = submit("--", "python3", "hog.py", "cpu")
        assert result.returncode == 0, result.stderr
        record = job_on(2, short_id(result.stderr))
    finally:
        on(2, "partagpuctl", "limits", "set", "--cpu", "50")
    cores = os.cpu_count()
    wall_us = (record["ended_ms"] - record["started_ms"]) * 1000
    used_cores = record["cpu_usage_us"] / wall_us
    print(f"4 busy processes on a {cores}-core machine lent 25 %: {used_cores:.2f} cores used")
    assert used_cores <= cores * 0.25 * 1.2 + 0.05
    assert used_cores >= cores * 0.25 * 0.5


def test_peers_mode_reaches_only_the_listed_peer_and_ports(jobs_lab):
    server = subprocess.Popen(
        [str(LAB), "exec", "1", "--", "python3", "-c",
         "import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind(('10.98.0.1', 29500)); s.listen()\n"
         "while True:\n  c,_=s.accept(); c.send(b'hi'); c.close()"])
    try:
        time.sleep(0.5)
        result = submit("--allow-peer", "10.98.0.1:29500-29510", "--", "python3", "peers.py", "10.98.0.1", "29500")
        assert result.returncode == 0, result.stderr
        seen = json.loads(result.stdout.strip().splitlines()[-1])
        assert seen == {"allowed": "hi", "service_port": "ECONNREFUSED", "other": "ECONNREFUSED"}, seen
    finally:
        server.kill()
        server.wait()
    tables = on(2, "nft", "list", "tables").stdout
    assert "partagpu_" not in tables, "the job's rules are removed with it"


def test_pause_freezes_within_a_second_resume_thaws_and_a_long_pause_preempts(jobs_lab):
    runner = subprocess.Popen([str(LAB), "exec", "1", "--", "partagpuctl", "run", "--node", "lab-2",
                               "--workspace", str(SCRIPTS), "--", "python3", "hog.py", "ticks"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until("the job runs", lambda: any(j["state"] == "running" for j in jobs(2)), timeout=15)
        handle = next(j["job"] for j in jobs(2) if j["state"] == "running")
        started = time.monotonic()
        assert on(2, "partagpuctl", "pause").returncode == 0
        _, took = wait_until("frozen", lambda: job_on(2, handle.split("-")[1][:8])["state"] == "paused",
                             timeout=2, interval=0.02)
        print(f"paused after {time.monotonic() - started:.2f} s (state seen after {took:.2f} s)")
        log = (LAB_DIR / "m2" / "partagpud.log").read_text()
        frozen_ms = int(log.rsplit("job frozen", 1)[1].split("ms=")[1].split()[0])
        assert frozen_ms < 1000
        assert on(2, "partagpuctl", "resume").returncode == 0
        wait_until("thawed", lambda: job_on(2, handle.split("-")[1][:8])["state"] == "running", timeout=2)
        assert on(2, "partagpuctl", "pause").returncode == 0
        out, err = runner.communicate(timeout=30)
    finally:
        on(2, "partagpuctl", "resume")
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 1 and "preempted" in err and "grace period" in err, err
    assert job_on(2, handle.split("-")[1][:8])["state"] == "preempted"
    assert job_processes() == "" and job_cgroups(2) == []


def test_ctrl_c_on_the_submitting_cli_cancels_everywhere(jobs_lab):
    runner = subprocess.Popen([str(LAB), "exec", "1", "--", "partagpuctl", "run", "--node", "lab-2",
                               "--workspace", str(SCRIPTS), "--", "python3", "hog.py", "ticks"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_until("the job runs", lambda: any(j["state"] == "running" for j in jobs(2)), timeout=15)
    time.sleep(0.5)
    os.killpg(runner.pid, signal.SIGINT)
    out, err = runner.communicate(timeout=20)
    assert runner.returncode == 130, err
    assert "KeyboardInterrupt" in out + err, "the job got SIGINT first"
    latest = jobs(2)[0]
    assert latest["state"] == "cancelled" and latest["reason"].startswith("cancelled by its submitter")
    assert job_processes() == "" and job_cgroups(2) == []


def test_hostile_workspaces_are_refused_and_nothing_is_written(jobs_lab):
    before = sorted(p.name for p in (LAB_DIR / "m1" / "state" / "jobs").iterdir())
    cases = ["traversal", "absolute", "symlink", "hardlink", "fifo", "device", "too_many_files", "oversize",
             "lying_size", "checkpoint_not_sent"]
    result = on(1, "/usr/bin/python3", str(SCRIPTS / "submit_raw.py"), *cases, timeout=60)
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    for case in cases:
        assert answers[case].get("error", "").endswith("InvalidArgument"), (case, answers[case])
        print(f"{case}: {answers[case]['message']}")
    assert "link" in answers["symlink"]["message"] and "link" in answers["hardlink"]["message"]
    assert "FIFO" in answers["fifo"]["message"] or "fifo" in answers["fifo"]["message"].lower()
    assert "checkpoint to start from that did not come with it" in answers["checkpoint_not_sent"]["message"]
    assert sorted(p.name for p in (LAB_DIR / "m1" / "state" / "jobs").iterdir()) == before


def test_a_checkpoint_to_start_from_follows_the_workspace_and_is_checked(jobs_lab, tmp_path):
    """What a coordinator sends a new launch of a training (PGR/1 §7.6): a workspace, then a
    checkpoint larger than a workspace may be. A damaged one is refused and the connection
    goes on; one longer than announced closes it; a good one replaces the workspace's stale
    file of that name. Nothing is left in the executor's inbox."""
    script = SCRIPTS / "submit_checkpoint.py"
    result = on(1, "env", f"XDG_CONFIG_HOME={tmp_path}", PYTHON, str(script), "10.98.0.2", *jobs_lab, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout)
    assert answers["damaged"]["ok"] is False, answers["damaged"]
    assert "checkpoint to start from arrived damaged" in answers["damaged"]["error"], answers["damaged"]
    assert "a checkpoint larger than it announced" in answers["longer"].get("closed", ""), answers["longer"]
    assert answers["accepted"]["ok"], answers["accepted"]
    ran = answers["ran"]
    assert ran["state"] == "succeeded", ran
    assert ran["log"].strip() == answers["expected"], ran
    assert list((LAB_DIR / "m2" / "state" / "incoming").iterdir()) == []
    handle = answers["accepted"]["record"]["job"]
    assert not (LAB_DIR / "m2" / "state" / "jobs" / handle / "resume-checkpoint").exists()


def test_a_duplicate_submission_runs_once(jobs_lab):
    result = on(1, "/usr/bin/python3", str(SCRIPTS / "submit_raw.py"), "duplicate", timeout=60)
    first, second = json.loads(result.stdout)["duplicate"]
    assert "job" in first and second == first, (first, second)
    wait_until("the job ends", lambda: job_on(1, first["job"].split("-")[1][:8])["state"] == "succeeded", timeout=15)
    assert sum(1 for j in jobs(1) if j["job"] == first["job"]) == 1


def test_kill_9_of_the_executing_service_reports_lost_and_leaves_nothing(jobs_lab):
    detached = submit("--detach", "--", "python3", "hog.py", "ticks")
    assert detached.returncode == 0, detached.stderr
    handle = detached.stdout.strip()
    short = handle.split("-")[1][:8]
    wait_until("the job runs", lambda: job_on(2, short)["state"] == "running", timeout=15)
    time.sleep(1)
    pid = int((LAB_DIR / "m2" / "partagpud.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    wait_until("the sandbox died with the service", lambda: job_processes() == "", timeout=5)
    lab_ok("start", "2")
    record, took = wait_until("machine 2 reports the job lost",
                              lambda: (lambda r: r if r["state"] == "lost" else None)(job_on(2, short)), timeout=15)
    assert "restarted while the job ran" in record["reason"]
    assert job_cgroups(2) == [] and job_processes() == ""
    mirrored, _ = wait_until("the submitter sees it lost too",
                             lambda: (lambda r: r if r["state"] == "lost" else None)(job_on(1, short)), timeout=30)
    assert mirrored["reason"] == record["reason"]
    logs = on(1, "partagpuctl", "job", "logs", short)
    assert logs.returncode == 0 and "tick 0\ntick 1\n" in logs.stdout, "the output written before the crash is kept"
    there = on(2, "partagpuctl", "job", "logs", short)
    assert there.stdout == logs.stdout, "the submitter has all of it, once"


def test_a_local_job_and_a_machine_that_does_not_lend(jobs_lab, tmp_path):
    local = on(1, "partagpuctl", "run", "--", "python3", "-c", "print('here')")
    assert local.returncode == 0 and local.stdout == "here\n", local.stderr
    record = job_on(1, short_id(local.stderr))
    assert record["role"] == "both" and record["node_name"] == "lab-1"
    assert on(2, "partagpuctl", "sharing", "off").returncode == 0
    try:
        refused = submit("--", "true")
        assert refused.returncode == 1
        assert "sharing is off on lab-2: it takes no new jobs" in refused.stderr
    finally:
        assert on(2, "partagpuctl", "sharing", "on").returncode == 0
    gpu = submit("--gpus", "1", "--", "true")
    assert gpu.returncode == 1 and "lab-2 lends 0 GPU(s), the job asked for 1" in gpu.stderr


def test_the_owner_s_sliders_reach_a_running_job_at_once(jobs_lab):
    detached = submit("--detach", "--", "python3", "hog.py", "ticks")
    assert detached.returncode == 0, detached.stderr
    handle = detached.stdout.strip()
    quota = next(Path("/sys/fs/cgroup").glob(f"cpu*/partagpu-lab-m2-jobs/{handle}/cpu.cfs_quota_us"), None)
    memory = Path(f"/sys/fs/cgroup/memory/partagpu-lab-m2-jobs/{handle}/memory.limit_in_bytes")
    try:
        wait_until("the job runs", lambda: job_on(2, handle.split("-")[1][:8])["state"] == "running", timeout=15)
        cores = os.cpu_count()
        assert quota is not None and int(quota.read_text()) == 100_000 * cores * 50 // 100
        assert on(2, "partagpuctl", "limits", "set", "--cpu", "10", "--ram", "1G").returncode == 0
        wait_until("the new limits apply", lambda: int(quota.read_text()) == 100_000 * cores * 10 // 100
                   and int(memory.read_text()) == 1 << 30, timeout=2, interval=0.05)
    finally:
        on(2, "partagpuctl", "limits", "set", "--cpu", "50", "--ram", "2G")
        on(1, "partagpuctl", "job", "cancel", handle)
    wait_until("cancelled", lambda: job_on(2, handle.split("-")[1][:8])["state"] == "cancelled", timeout=10)
