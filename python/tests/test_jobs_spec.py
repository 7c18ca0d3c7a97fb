# SPDX-License-Identifier: GPL-3.0-or-later
"""Building what is sent (spec, nodes, the script's path) and mapping the service's errors."""

from __future__ import annotations

import re

import pytest

import partagpu
from partagpu import errors
from partagpu.distribute import build_spec, nodes_argument, script_argv
from partagpu.workspace import pack

PREFIX = "org.partagpu.PartaGPU.Daemon.Error."


def test_spec_has_every_field_of_the_schema(tmp_path):
    (tmp_path / "train.py").write_text("")
    packed = pack(tmp_path)
    spec = build_spec(["train.py", "--epochs", 3], packed, runtime="torch",
                      env={"OMP_NUM_THREADS": "2"}, gpus=1, artifacts=["model.pt"])
    assert re.fullmatch(r"[0-9a-f]{32}", spec.pop("id"))
    assert spec == {"attempt": 0, "submitter": "0" * 32, "argv": ["train.py", "--epochs", "3"],
                    "env": {"OMP_NUM_THREADS": "2"}, "runtime": "torch",
                    "workspace_bytes": len(packed[0]), "workspace_sha256": packed[2],
                    "resources": {"cpu_percent": 0, "ram_bytes": 0, "gpus": 1},
                    "artifacts": ["model.pt"], "network": {"mode": "none"}, "time_limit_s": 86400}


def test_every_spec_gets_a_new_id(tmp_path):
    packed = pack(tmp_path)
    assert build_spec(["x"], packed)["id"] != build_spec(["x"], packed)["id"]
    assert build_spec(["x"], packed)["runtime"] is None


@pytest.mark.parametrize("nodes, sent", [(None, ""), (3, "3"), (["lab-1", "lab-2"], "lab-1,lab-2"),
                                         ("lab-2", "lab-2"), (("a",), "a")])
def test_nodes_argument(nodes, sent):
    assert nodes_argument(nodes) == sent


@pytest.mark.parametrize("nodes", [0, -1, True, [], ["a,b"], [""]])
def test_bad_nodes_are_refused(nodes):
    with pytest.raises(ValueError):
        nodes_argument(nodes)


def test_script_path_is_relative_to_the_workspace(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("")
    files = ["src/train.py"]
    assert script_argv(tmp_path / "src" / "train.py", tmp_path, files) == "src/train.py"
    assert script_argv("src/train.py", tmp_path, files) == "src/train.py"  # from the workspace
    monkeypatch.chdir(tmp_path / "src")
    assert script_argv("train.py", tmp_path, files) == "src/train.py"  # from the current folder
    assert script_argv("train.py", tmp_path / "src" / "..", files) == "src/train.py"


def test_a_script_outside_the_workspace_is_refused(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "train.py").write_text("")
    with pytest.raises(partagpu.WorkspaceError, match="is not inside the workspace"):
        script_argv(tmp_path / "train.py", tmp_path / "ws", [])


def test_a_script_the_workspace_does_not_send_is_refused(tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "train.py").write_text("")
    with pytest.raises(partagpu.WorkspaceError, match="not a file the workspace sends"):
        script_argv(tmp_path / "venv" / "train.py", tmp_path, [])
    with pytest.raises(partagpu.WorkspaceError, match="not a file the workspace sends"):
        script_argv("missing.py", tmp_path, [])


@pytest.mark.parametrize("name, message, kind", [
    ("NotInRoom", "this machine is in no room: join one first (partagpuctl room join)",
     errors.NotInRoomError),
    ("NotAuthorized", "polkit said no", errors.NotAuthorizedError),
    ("InvalidArgument", "the spec is bad", errors.InvalidArgumentError),
    ("JobNotFound", "no job abc", errors.JobNotFoundError),
    ("StorageFailed", "disk full", errors.StorageFailedError),
    ("JobRefused", "lab-2 is paused by its owner: it takes no new jobs now", errors.JobRefusedError),
    ("JobRefused", "no machine of the room can run this training: lab-2 does not share",
     errors.NoPeersError),
    ("JobRefused", "3 machine(s) asked for, 1 can take part (lab-2 is paused by its owner)",
     errors.NoPeersError),
    ("JobRefused", 'no machine of the room can run this training: lab-2 has no runtime "torch"',
     errors.RuntimeMismatchError),
    ("PeerFailed", "lab-2 has torch 2.4.0, the training needs 2.5.1 (runtime \"torch\")",
     errors.RuntimeMismatchError),
    ("PeerFailed", "lab-2 could not be reached", errors.PeerFailedError),
])
def test_error_names_map_to_exceptions(name, message, kind):
    error = errors.from_bus_error(PREFIX + name, message)
    assert type(error) is kind and str(error) == message and error.dbus_name == PREFIX + name
    assert isinstance(error, partagpu.ServiceError) and isinstance(error, partagpu.PartaGPUError)


def test_hierarchy():
    assert issubclass(errors.RuntimeMismatchError, errors.NoPeersError)
    assert errors.WrongRoomError is errors.NotInRoomError
    assert issubclass(errors.WorkspaceTooLargeError, errors.WorkspaceError)
    assert issubclass(errors.JobFailedError, errors.PartaGPUError)


def test_an_unknown_daemon_error_keeps_its_name():
    error = errors.from_bus_error(PREFIX + "Newer", "something new")
    assert type(error) is errors.RequestRefusedError
    assert str(error) == f"something new ({PREFIX}Newer)"


def test_job_failed_error_carries_the_record():
    record = {"state": "failed", "reason": "the command exited with status 3"}
    error = errors.JobFailedError("job x failed", record)
    assert (error.record, error.state, error.reason) == (record, "failed",
                                                         "the command exited with status 3")


def test_distribute_is_callable_even_after_importing_its_module():
    import partagpu.distribute as module

    assert callable(partagpu.distribute) and callable(module)
    assert partagpu.run is module.run
