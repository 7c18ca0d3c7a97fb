# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m partagpu run`` and ``jobs`` as subprocesses against the fake partagpud:
output, artifacts, exit statuses, and Ctrl+C (a real SIGINT) cancelling the training."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import PYTHON_DIR
from fake_partagpud import FakeJob, FakeJobs, fake_partagpud


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "partagpu", *args]


def environment() -> dict[str, str]:
    # DBUS_SYSTEM_BUS_ADDRESS comes from the system_bus fixture through os.environ.
    return dict(os.environ, PYTHONPATH=str(PYTHON_DIR))


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), env=environment(), cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_run_streams_and_saves_artifacts(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    out = tmp_path / "out"
    jobs = FakeJobs(make=lambda *_: FakeJob(chunks=[b"[lab-1/0] loss 0.1\n"],
                                            artifacts={"model.pt": b"w", "log.txt": b"l"}))
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "--nodes", "lab-1,lab-2", "--artifact", "model.pt",
                         "--artifact", "*.txt", "--output", str(out), "train.py", "--lr", "0.1",
                         cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[lab-1/0] loss 0.1\n"
    _, spec, _, nodes = jobs.received[0]
    assert nodes == "lab-1,lab-2" and spec["argv"] == ["train.py", "--lr", "0.1"]
    assert spec["artifacts"] == ["model.pt", "*.txt"]
    assert (out / "model.pt").read_bytes() == b"w" and (out / "log.txt").read_bytes() == b"l"


def test_a_failure_is_one_line_and_status_1(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    jobs = FakeJobs(make=lambda *_: FakeJob(final="failed", exit_code=2,
                                            reason="the command exited with status 2"))
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "--nodes", "3", "--workspace", str(tmp_path),
                         str(tmp_path / "train.py"))
    assert result.returncode == 1
    assert jobs.received[0][3] == "3"
    last = result.stderr.splitlines()[-1]
    assert last.startswith("partagpu: job ") and last.endswith(": the command exited with status 2")


def test_a_failed_training_brings_back_its_last_checkpoint(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    out = tmp_path / "out"
    jobs = FakeJobs(make=lambda *_: FakeJob(final="failed", exit_code=None,
                                            reason="lab-2 (node 0) vanished: the machine went offline",
                                            artifacts={"partagpu-checkpoint.pt": b"epoch 3"}))
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "--output", str(out), "--workspace", str(tmp_path), str(tmp_path / "train.py"))
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    kept = out / "partagpu-checkpoint.pt"
    assert last.endswith(f"lab-2 (node 0) vanished: the machine went offline; its last checkpoint was saved to "
                         f"{kept}: go on from there with resume_from (--resume-from {kept})"), last
    assert (out / "partagpu-checkpoint.pt").read_bytes() == b"epoch 3"


def test_a_training_goes_on_from_a_checkpoint_passed_beside_the_workspace(system_bus, tmp_path):
    """--resume-from: the file is not packed into the workspace (it may be far larger); the
    spec describes it and the service gets it as an open file descriptor."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "train.py").write_text("")
    kept = tmp_path / "out" / "partagpu-checkpoint.pt"
    kept.parent.mkdir()
    kept.write_bytes(b"state of epoch 3" * 1000)
    jobs = FakeJobs()
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "--resume-from", str(kept), "--workspace", str(tmp_path / "work"),
                         str(tmp_path / "work" / "train.py"))
    assert result.returncode == 0, result.stderr
    assert "and the checkpoint partagpu-checkpoint.pt (16000 B)" in result.stderr, result.stderr
    member, spec, workspace, _ = jobs.received[0]
    assert member == "Distribute" and jobs.checkpoints == [kept.read_bytes()]
    assert spec["resume_checkpoint"] == {"name": "partagpu-checkpoint.pt", "size": 16000,
                                         "sha256": hashlib.sha256(kept.read_bytes()).hexdigest()}
    assert b"state of epoch 3" not in workspace


@pytest.mark.parametrize("name, why", [(".hidden.pt", "plain file name"),
                                       ("partagpu-checkpoint.json", "plain file name"),
                                       ("missing.pt", "is not a file")])
def test_a_checkpoint_to_go_on_from_is_checked_before_anything_is_sent(system_bus, tmp_path, name, why):
    (tmp_path / "train.py").write_text("")
    if name != "missing.pt":
        (tmp_path / name).write_bytes(b"x")
    jobs = FakeJobs()
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "--resume-from", str(tmp_path / name), "--workspace", str(tmp_path),
                         str(tmp_path / "train.py"))
    assert result.returncode == 1 and why in result.stderr, result.stderr
    assert jobs.received == []


def test_a_refusal_is_one_line_and_status_1(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    jobs = FakeJobs(errors={"Distribute": ("NotInRoom", "this machine is in no room")})
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "train.py", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == "partagpu: this machine is in no room"


def test_a_symlink_in_the_workspace_is_refused_before_sending(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    (tmp_path / "data").symlink_to("/usr/share")
    jobs = FakeJobs()
    with fake_partagpud(system_bus, {}, jobs):
        result = run_cli("run", "train.py", cwd=tmp_path)
    assert result.returncode == 1 and jobs.received == []
    assert result.stderr == ("partagpu: data in the workspace is a symbolic link: links are not "
                             "sent; copy the file there or move the link out of the workspace\n")


def test_ctrl_c_cancels_the_training_and_exits_130(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    jobs = FakeJobs(make=lambda *_: FakeJob(chunks=[b"epoch 1\n"], hold=True,
                                            on_cancel=[b"KeyboardInterrupt\n"]))
    with fake_partagpud(system_bus, {}, jobs):
        process = subprocess.Popen(command("run", "train.py"), env=environment(), cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stdout.readline() == "epoch 1\n"
            time.sleep(0.3)  # well inside the polling loop
            process.send_signal(signal.SIGINT)
            rest, err = process.communicate(timeout=30)
        finally:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert rest == "KeyboardInterrupt\n"
    job = next(iter(jobs.jobs.values()))
    assert job.cancelled == 1 and job.record["state"] == "cancelled"
    assert "cancelling job" in err and err.endswith("partagpu: interrupted\n")


def test_jobs_lists_records(system_bus, tmp_path):
    (tmp_path / "train.py").write_text("")
    jobs = FakeJobs(make=lambda method, *_: FakeJob(parts=[
        {"job": "p0", "node": "cd" * 16, "node_name": "lab-1", "node_rank": 0, "processes": 1,
         "state": "running"}]))
    with fake_partagpud(system_bus, {}, jobs):
        assert run_cli("run", "train.py", cwd=tmp_path).returncode == 0
        as_json = run_cli("jobs", "--json")
        table = run_cli("jobs")
    assert as_json.returncode == 0 and table.returncode == 0, as_json.stderr
    (record,) = json.loads(as_json.stdout)
    assert record["state"] == "succeeded" and record["role"] == "group"
    header, row = table.stdout.splitlines()
    assert header.split() == ["JOB", "STATE", "WHERE", "COMMAND", "AGE", "RAN"]
    assert row.split()[:5] == [record["id"][:8], "succeeded", "→", "lab-1", "train.py"]
    assert row.endswith("12.3 s")


def test_jobs_without_a_service_is_status_1(system_bus):
    result = run_cli("jobs")
    assert result.returncode == 1 and result.stderr.startswith("partagpu: partagpud is not running")
