# SPDX-License-Identifier: GPL-3.0-or-later
"""The jobs client against the fake partagpud's Jobs1 on a real private dbus-daemon:
Distribute and Submit, streamed logs, artifacts through real descriptors, failures, errors,
Ctrl+C and timeouts."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

import partagpu
from fake_partagpud import FakeJob, FakeJobs, fake_partagpud
from partagpu.jobs import Job, list_jobs

WEIGHTS = b"\x80\x02weights" * 5000
PARTS = [{"job": "p0", "node": "cd" * 16, "node_name": "lab-1", "node_rank": 0, "processes": 2,
          "state": "running"},
         {"job": "p1", "node": "ef" * 16, "node_name": "lab-2", "node_rank": 1, "processes": 1,
          "state": "running"}]


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("1\n")
    return tmp_path


def served(system_bus, **job: object) -> tuple[FakeJobs, object]:
    jobs = FakeJobs(make=lambda *_: FakeJob(**job))
    return jobs, fake_partagpud(system_bus, {}, jobs)


def test_distribute_streams_the_log_and_fetches_verified_artifacts(system_bus, workspace, capsys):
    chunks = [b"[lab-1/0] epoch 1\n[lab-2/1] ep", "och 1 é\n".encode(), b"[lab-1/0] done\n"]
    jobs, service = served(system_bus, chunks=chunks, artifacts={"model.pt": WEIGHTS},
                           parts=PARTS)
    with service:
        job = partagpu.distribute(workspace / "train.py", "--epochs", "2", nodes=2,
                                  workspace=workspace, runtime="torch")
    out, err = capsys.readouterr()
    assert out == "[lab-1/0] epoch 1\n[lab-2/1] epoch 1 é\n[lab-1/0] done\n"
    assert "sending the workspace: 2 files" in err
    assert f"job {job.handle} succeeded on lab-1, lab-2 in 12.3 s; model.pt (" in err
    method, spec, data, nodes = jobs.received[0]
    assert (method, nodes) == ("Distribute", "2")
    assert spec["argv"] == ["train.py", "--epochs", "2"] and spec["runtime"] == "torch"
    assert spec["artifacts"] == ["model.pt"] and spec["resources"]["gpus"] == 0
    assert spec["workspace_bytes"] == len(data)
    assert spec["workspace_sha256"] == hashlib.sha256(data).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        assert sorted(archive.getnames()) == ["data", "data/x.csv", "train.py"]
    assert (workspace / "model.pt").read_bytes() == WEIGHTS
    assert job.artifacts == [{"name": "model.pt", "size": len(WEIGHTS),
                              "sha256": hashlib.sha256(WEIGHTS).hexdigest(),
                              "path": workspace / "model.pt"}]
    assert job.summary() == {"job": job.handle, "machines": ["lab-1", "lab-2"],
                             "ranks": {"lab-1": 0, "lab-2": 1}, "lost": [], "rejoined": [],
                             "processes": 3, "wall_s": 12.345, "state": "succeeded", "reason": None,
                             "exit_code": 0, "training": None}
    assert repr(job) == f"Job({job.handle!r}, succeeded on lab-1, lab-2, 12.3 s)"


def test_artifacts_go_to_output_and_nodes_as_names(system_bus, workspace, tmp_path_factory):
    output = tmp_path_factory.mktemp("out")
    jobs, service = served(system_bus, artifacts={"ckpt/model.pt": b"w"})
    with service:
        partagpu.distribute("train.py", workspace=workspace, nodes=["lab-1", "lab-2"],
                            gpus_per_node=1, artifacts=["ckpt/*.pt"], output=output)
    assert jobs.received[0][3] == "lab-1,lab-2" and jobs.received[0][1]["resources"]["gpus"] == 1
    assert (output / "ckpt" / "model.pt").read_bytes() == b"w"
    assert not (workspace / "ckpt").exists()


def test_every_ranks_artifacts_on_request_and_rank_0s_by_default(system_bus, workspace, tmp_path_factory):
    output = tmp_path_factory.mktemp("out")
    jobs, service = served(system_bus, artifacts={"model.pt": b"w0", "rank-1/model.pt": b"w1"})
    with service:
        partagpu.distribute("train.py", workspace=workspace, artifacts_from="all", output=output)
        partagpu.distribute("train.py", workspace=workspace, output=output)
        with pytest.raises(ValueError, match="artifacts_from"):
            partagpu.distribute("train.py", workspace=workspace, artifacts_from="rank1")
    assert jobs.received[0][1]["artifacts_from_all_ranks"] is True
    assert "artifacts_from_all_ranks" not in jobs.received[1][1]
    assert (output / "rank-1" / "model.pt").read_bytes() == b"w1"
    assert len(jobs.received) == 2, "a bad artifacts_from sends nothing"


def test_the_state_is_shown_as_it_changes(system_bus, workspace, capsys):
    jobs, service = served(system_bus, parts=PARTS)
    with service:
        job = partagpu.distribute("train.py", workspace=workspace)
    err = capsys.readouterr().err
    short = job.handle.split("-")[1][:8]
    assert f"partagpu: job {short} accepted on lab-1, lab-2 (3 processes)\n" in err


def test_a_failed_job_raises_with_its_reason(system_bus, workspace, capsys):
    _, service = served(system_bus, chunks=[b"Traceback ...\n"], final="failed",
                        reason="the command exited with status 1", exit_code=1)
    with service, pytest.raises(partagpu.JobFailedError) as raised:
        partagpu.distribute("train.py", workspace=workspace)
    assert raised.value.reason == "the command exited with status 1"
    assert raised.value.state == "failed" and raised.value.record["exit_code"] == 1
    assert str(raised.value).endswith("failed on pc-01 in 12.3 s: the command exited with status 1")
    assert capsys.readouterr().out == "Traceback ...\n"
    assert not (workspace / "model.pt").exists()


def test_a_corrupted_artifact_is_refused(system_bus, workspace):
    _, service = served(system_bus, artifacts={"model.pt": b"weights"},
                        announced={"model.pt": (7, "00" * 32)})
    with service, pytest.raises(partagpu.ArtifactError, match="does not match its SHA-256"):
        partagpu.distribute("train.py", workspace=workspace)
    assert sorted(p.name for p in workspace.iterdir()) == ["data", "train.py"]


@pytest.mark.parametrize("name, message, kind", [
    ("JobRefused", "no machine of the room can run this training: lab-2 does not share",
     partagpu.NoPeersError),
    ("JobRefused", 'no machine of the room can run this training: lab-2 has no runtime "torch"',
     partagpu.RuntimeMismatchError),
    ("NotInRoom", "this machine is in no room: join one first (partagpuctl room join)",
     partagpu.NotInRoomError),
    ("NotAuthorized", "submitting jobs needs authorisation", partagpu.NotAuthorizedError),
])
def test_service_errors_arrive_as_exceptions(system_bus, workspace, name, message, kind):
    jobs = FakeJobs(errors={"Distribute": (name, message)})
    with fake_partagpud(system_bus, {}, jobs), pytest.raises(kind) as raised:
        partagpu.distribute("train.py", workspace=workspace)
    assert str(raised.value) == message
    assert raised.value.dbus_name == f"org.partagpu.PartaGPU.Daemon.Error.{name}"


def test_ctrl_c_cancels_keeps_reading_then_reraises(system_bus, workspace, ctrl_c_while_printing, capsys):
    jobs, service = served(system_bus, chunks=[b"step 1\nstep 2\n", b"step 3\n"], hold=True,
                           on_cancel=[b"KeyboardInterrupt\n", b"saved a checkpoint\n"])
    written = ctrl_c_while_printing("step 1\n")
    with service, pytest.raises(KeyboardInterrupt):
        partagpu.distribute("train.py", workspace=workspace)
    job = next(iter(jobs.jobs.values()))
    assert job.cancelled == 1 and job.record["state"] == "cancelled"
    # step 2 came with step 1: it is printed after the interruption, not lost
    assert written == ["step 1\n", "step 2\n", "step 3\n", "KeyboardInterrupt\n",
                       "saved a checkpoint\n"]
    assert "cancelling job" in capsys.readouterr().err


def test_timeout_cancels_and_raises(system_bus, workspace):
    jobs, service = served(system_bus, chunks=[b"step 1\n"], hold=True)
    with service, pytest.raises(TimeoutError, match="did not end within 0.5 s and was cancelled"):
        partagpu.distribute("train.py", workspace=workspace, timeout=0.5)
    assert next(iter(jobs.jobs.values())).cancelled == 1


def test_run_submits_one_command_and_job_api(system_bus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jobs, service = served(system_bus, chunks=[b"hello\n", b"partial"], hold=True,
                           artifacts={"out.txt": b"hi\n"})
    with service:
        job = partagpu.run(["python3", "-c", "print(1)"], node="lab-2", wait=False)
        method, spec, data, node = jobs.received[0]
        assert (method, node, spec["argv"]) == ("Submit", "lab-2", ["python3", "-c", "print(1)"])
        assert spec["workspace_bytes"] == len(data) == 10240  # an empty archive
        assert job.status == "accepted" and repr(job).startswith(f"Job({job.handle!r}, accepted")
        assert list(job.logs()) == ["hello\n"]
        assert list(job.logs()) == ["partial"]  # unfinished line given back when not following
        assert list(job.logs()) == []  # resumes from the offset: nothing new
        job.cancel()
        assert list(job.logs(follow=True, poll=0.01)) == ["KeyboardInterrupt\n"]
        record = job.wait(timeout=5)
        assert record["state"] == "cancelled" and record["reason"] == "cancelled by its submitter"
        assert job.fetch(tmp_path) == []  # a cancelled job brings nothing back
        records = list_jobs()
        assert [r["job"] for r in records] == [job.handle]
        prefix = Job(record["id"][:8])
        assert prefix.status == "cancelled"
    with pytest.raises(TypeError):
        partagpu.run("python3 job.py")  # type: ignore[arg-type]


def test_unknown_job_is_job_not_found(system_bus):
    with fake_partagpud(system_bus, {}, FakeJobs()):
        with pytest.raises(partagpu.JobNotFoundError, match="no job 'nope' here"):
            Job("nope").status


def test_a_service_without_jobs1_is_named(system_bus, workspace):
    with fake_partagpud(system_bus, {}), pytest.raises(partagpu.ServiceError) as raised:
        partagpu.distribute("train.py", workspace=workspace)
    assert "does not offer Jobs1.Distribute, it may be older than this package" in str(raised.value)


def test_wait_times_out_without_cancelling(system_bus):
    jobs = FakeJobs(make=lambda *_: FakeJob(hold=True))
    with fake_partagpud(system_bus, {}, jobs):
        job = partagpu.run(["sleep", "1"], wait=False)
        with pytest.raises(TimeoutError):
            job.wait(timeout=0.2, poll=0.05)
    assert next(iter(jobs.jobs.values())).cancelled == 0
    assert json.loads(json.dumps(job.record))["state"] == "accepted"


def test_a_second_ctrl_c_leaves_at_once(system_bus, workspace, ctrl_c_while_printing):
    jobs, service = served(system_bus, chunks=[b"step 1\n"], hold=True,
                           on_cancel=[b"stopping\n", b"never shown\n"])
    written = ctrl_c_while_printing("step 1\n", "stopping\n")
    with service, pytest.raises(KeyboardInterrupt):
        partagpu.distribute("train.py", workspace=workspace)
    assert written == ["step 1\n", "stopping\n"]
    assert next(iter(jobs.jobs.values())).cancelled == 1
