# SPDX-License-Identifier: GPL-3.0-or-later
"""A training sent over PGR/1 to a member (§7.6), against the fake member of
``fake_job_server.py`` on 127.0.0.1: the upload, the streamed log and its offsets, a
reconnection, Ctrl+C, artifacts checked and damaged ones refused, refusals and a wrong code."""

from __future__ import annotations

import hashlib
import io
import tarfile
import time

import pytest

import partagpu
from fake_job_server import CODE, EPOCH, ROOM_ID, FakeMember
from partagpu.pgr.errors import WrongCodeError as PgrWrongCodeError
from partagpu.remote import Room
from partagpu.remote.choose import Member
from partagpu.remote.transport import MemberTransport

WEIGHTS = b"\x80\x02weights" * 20000  # 180 kB: several DATA records
RUN_AND_SUCCEED = [("state", "running"), ("log", b"[lab-1/0] epoch 1\n[lab-2/1] ep"),
                   ("log", "och 1 é\n".encode()), ("state", "succeeded")]


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "train.py").write_text("import torch\n")
    (root / "data.bin").write_bytes(bytes(range(256)) * 400)  # 100 kB: several DATA records
    return root


@pytest.fixture
def member():
    started: list[FakeMember] = []

    def start(steps, artifacts=None, **options):
        started.append(FakeMember(steps, artifacts, **options))
        return started[-1]
    yield start
    for fake in started:
        fake.stop()


def room_of(fake: FakeMember, tmp_path, code: str = CODE) -> Room:
    return Room(code, peer=fake.peer, room=ROOM_ID.hex(), epoch=EPOCH,
                key_file=tmp_path / "node-key")


def test_distribute_end_to_end(member, workspace, tmp_path, capsys):
    fake = member(RUN_AND_SUCCEED, {"model.pt": WEIGHTS, "metrics.json": b'{"loss": 0.4}'})
    room = room_of(fake, tmp_path)
    job = partagpu.distribute(workspace / "train.py", "--epochs", "2", nodes=2, workspace=workspace,
                              artifacts=["model.pt", "metrics.json"], room=room)
    out, err = capsys.readouterr()
    assert out == "[lab-1/0] epoch 1\n[lab-2/1] epoch 1 é\n"
    assert f"room 'Salle B12' via the member at {fake.peer} coordinates job {job.handle}" in err
    assert f"job {job.handle} succeeded on lab-1, lab-2 in 12.3 s; model.pt (" in err
    assert fake.errors == [] and fake.handshake_failures == []
    assert [r["op"] for r in fake.requests] == ["distribute", "follow", "artifact", "artifact"]
    spec = fake.requests[0]["spec"]
    assert fake.requests[0]["nodes"] == "2" and spec["submitter"] == room.node_id
    assert spec["argv"] == ["train.py", "--epochs", "2"]
    assert job.handle == f"{room.node_id[:12]}-{spec['id']}-0"
    (data,) = fake.workspaces
    assert spec["workspace_bytes"] == len(data)
    assert spec["workspace_sha256"] == hashlib.sha256(data).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        assert sorted(archive.getnames()) == ["data.bin", "train.py"]
    assert (workspace / "model.pt").read_bytes() == WEIGHTS
    fake.settle(lambda: len(fake.closes) == 2)
    assert fake.closes == ["done", "done"]  # the follow, then the artifacts connection
    assert job.done and job.status == "succeeded" and job.record["role"] == "group"
    assert [a["path"] for a in job.artifacts] == [workspace / "model.pt",
                                                  workspace / "metrics.json"]
    assert job.summary()["machines"] == ["lab-1", "lab-2"] and job.summary()["wall_s"] == 12.345


def test_a_checkpoint_to_go_on_from_follows_the_workspace(member, workspace, tmp_path):
    fake = member(RUN_AND_SUCCEED, {"model.pt": WEIGHTS})
    kept = tmp_path / "partagpu-checkpoint.pt"
    kept.write_bytes(WEIGHTS * 3)  # several DATA records, never in the workspace
    job = partagpu.distribute(workspace / "train.py", workspace=workspace, room=room_of(fake, tmp_path),
                              resume_from=kept)
    assert job.status == "succeeded" and fake.errors == []
    assert fake.checkpoints == [kept.read_bytes()]
    assert fake.requests[0]["spec"]["resume_checkpoint"] == {
        "name": "partagpu-checkpoint.pt", "size": len(WEIGHTS) * 3,
        "sha256": hashlib.sha256(kept.read_bytes()).hexdigest()}
    with tarfile.open(fileobj=io.BytesIO(fake.workspaces[0])) as archive:
        assert "partagpu-checkpoint.pt" not in archive.getnames()


def test_the_log_streams_with_offsets_across_a_broken_connection(member, workspace, tmp_path):
    first = b"x" * 70_000 + b"\n"  # more than one LOG record
    fake = member([("state", "running"), ("log", first), ("log", b"line 2\n"), ("drop",),
                   ("log", b"line 3\n"), ("state", "succeeded")])
    job = partagpu.distribute("train.py", workspace=workspace, room=room_of(fake, tmp_path),
                              wait=False)
    lines = list(job.logs(follow=True, poll=0.01))
    assert lines == [first.decode(), "line 2\n", "line 3\n"]
    follows = [r for r in fake.requests if r["op"] == "follow"]
    assert [r["offset"] for r in follows] == [0, len(first) + len(b"line 2\n")]
    assert job.wait(timeout=5)["state"] == "succeeded" and fake.errors == []


def test_a_silent_member_is_pinged_and_a_dead_one_redialled(member, workspace, tmp_path,
                                                            monkeypatch):
    monkeypatch.setattr("partagpu.remote.follower.PING_AFTER_S", 0.2)
    monkeypatch.setattr("partagpu.remote.follower.DEAD_AFTER_S", 0.3)
    fake = member([("state", "running"), ("log", b"one\n"), ("sleep", 0.6), ("mute", 30),
                   ("log", b"two\n"), ("state", "succeeded")])
    job = partagpu.distribute("train.py", workspace=workspace, room=room_of(fake, tmp_path),
                              wait=False)
    started = time.monotonic()
    assert list(job.logs(follow=True, poll=0.01)) == ["one\n", "two\n"]
    assert time.monotonic() - started < 10  # the dead connection was given up, not waited out
    assert fake.pings >= 2  # answered while sleeping, unanswered while mute
    assert [r["offset"] for r in fake.requests if r["op"] == "follow"] == [0, 4]
    assert job.status == "succeeded" and fake.errors == []


def test_ctrl_c_cancels_the_training_and_keeps_reading(member, workspace, tmp_path, ctrl_c_while_printing,
                                                       capsys):
    fake = member([("state", "running"), ("log", b"step 1\nstep 2\n"), ("hold",),
                   ("log", b"KeyboardInterrupt\n")])
    written = ctrl_c_while_printing("step 1\n")
    with pytest.raises(KeyboardInterrupt):
        partagpu.distribute("train.py", workspace=workspace, room=room_of(fake, tmp_path))
    assert written == ["step 1\n", "step 2\n", "KeyboardInterrupt\n"]
    (job,) = fake.jobs.values()
    assert job["cancels"] == 1 and job["record"]["state"] == "cancelled"
    assert [r["op"] for r in fake.requests] == ["distribute", "follow", "cancel"]
    assert fake.errors == [] and "cancelling job" in capsys.readouterr().err


def test_cancel_and_wait_through_the_job_api(member, workspace, tmp_path):
    fake = member([("state", "running"), ("hold",)])
    job = partagpu.distribute("train.py", workspace=workspace, room=room_of(fake, tmp_path),
                              wait=False)
    job.cancel()
    record = job.wait(timeout=5, poll=0.05)
    assert record["state"] == "cancelled" and record["reason"] == "cancelled by its submitter"
    assert job.fetch(workspace) == [] and fake.errors == []


@pytest.mark.parametrize("damage, message", [
    ("flip", "does not match its SHA-256"),
    ("bad-end", "arrived damaged"),
    ("longer", "longer than announced"),
])
def test_a_damaged_artifact_is_refused_and_nothing_is_left(member, workspace, tmp_path, damage, message):
    fake = member(RUN_AND_SUCCEED, {"model.pt": WEIGHTS}, damage={"model.pt": damage})
    before = sorted(p.name for p in workspace.iterdir())
    with pytest.raises(partagpu.ArtifactError, match=message):
        partagpu.distribute("train.py", workspace=workspace, room=room_of(fake, tmp_path))
    assert sorted(p.name for p in workspace.iterdir()) == before
    fake.settle(lambda: len(fake.closes) == 2)
    assert fake.closes == ["done", ""]  # the artifacts connection was given up, not done


def test_a_wrong_code_says_so_and_sends_nothing(member, workspace, tmp_path):
    fake = member(RUN_AND_SUCCEED)
    room = room_of(fake, tmp_path, code="abandon ability able about")
    with pytest.raises(partagpu.WrongCodeError) as raised:
        partagpu.distribute("train.py", workspace=workspace, room=room)
    assert "does not accept this room code: check its four words" in str(raised.value)
    assert "abandon" not in str(raised.value) and "abandon" not in repr(room)
    fake.settle(lambda: fake.handshake_failures)
    assert isinstance(fake.handshake_failures[0], PgrWrongCodeError)  # counted as a guess
    assert fake.requests == []


def test_a_refusal_arrives_as_its_exception(member, workspace, tmp_path):
    sentence = "3 machine(s) asked for, 2 can take part (lab-3 is paused by its owner)"
    fake = member(RUN_AND_SUCCEED, refuse=sentence)
    with pytest.raises(partagpu.NoPeersError) as raised:
        partagpu.distribute("train.py", workspace=workspace, nodes=3, room=room_of(fake, tmp_path))
    assert str(raised.value) == sentence and fake.errors == []


def test_a_member_that_forgot_the_job_makes_it_lost(member, tmp_path):
    fake = member(RUN_AND_SUCCEED)
    room = room_of(fake, tmp_path)
    session, reached = room.dial()
    handle = f"{room.node_id[:12]}-{'ab' * 16}-0"
    transport = MemberTransport(room, reached, handle, {"job": handle, "state": "running"}, session)
    job = partagpu.Job(handle, transport=transport)
    record = job.wait(timeout=5, poll=0.05)
    assert record["state"] == "lost" and "no longer follows this job: no job" in record["reason"]
    assert "[partagpu: the member at" in "".join(job.logs())


def test_an_unreachable_member_is_named(tmp_path):
    room = Room(CODE, peer="127.0.0.1:9", room=ROOM_ID.hex(), epoch=EPOCH, key_file=tmp_path / "k")
    with pytest.raises(partagpu.PeerFailedError,
                       match="no member of room .* could be reached: 127.0.0.1:9"):
        room.dial(Member("127.0.0.1", 9))
