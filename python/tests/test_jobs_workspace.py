# SPDX-License-Identifier: GPL-3.0-or-later
"""partagpu.workspace: the packing rules of docs/jobs.md and the artifact checks."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile

import pytest

from partagpu.errors import ArtifactError, WorkspaceError, WorkspaceTooLargeError
from partagpu.workspace import MAX_ENTRIES, artifact_path, pack, receive_artifact


def members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        return {m.name: m for m in archive.getmembers()}


def test_packs_files_and_directories_as_ustar(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_bytes(b"1,2\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o750)
    data, count, sha = pack(tmp_path)
    assert count == 3 and sha == hashlib.sha256(data).hexdigest()
    found = members(data)
    assert set(found) == {"data", "empty", "data/a.csv", "run.sh", "train.py"}
    assert found["data"].isdir() and found["train.py"].isfile()
    assert found["run.sh"].mode == 0o755 and found["train.py"].mode == 0o644
    assert all(m.uid == 0 and m.gid == 0 and m.uname == "" and m.mtime == 0 for m in found.values())
    assert data[257:262] == b"ustar"  # a plain ustar header, no pax header for short names
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        assert archive.extractfile("data/a.csv").read() == b"1,2\n"


def test_same_files_give_the_same_archive(tmp_path):
    (tmp_path / "b.txt").write_text("b")
    (tmp_path / "a.txt").write_text("a")
    first = pack(tmp_path)
    os.utime(tmp_path / "a.txt", (1, 1))
    assert pack(tmp_path) == first


@pytest.mark.parametrize("skipped", [".git", "__pycache__", ".ipynb_checkpoints", ".venv", "venv"])
def test_skips_tool_directories(tmp_path, skipped):
    (tmp_path / skipped / "sub").mkdir(parents=True)
    (tmp_path / skipped / "sub" / "x").write_text("x")
    (tmp_path / "pkg" / skipped).mkdir(parents=True)  # at any depth
    (tmp_path / "keep.py").write_text("")
    data, count, _ = pack(tmp_path)
    assert set(members(data)) == {"keep.py", "pkg"} and count == 1


def test_a_file_named_like_a_skipped_directory_is_kept(tmp_path):
    (tmp_path / "venv").write_text("not a directory")
    assert set(members(pack(tmp_path)[0])) == {"venv"}


def test_symbolic_links_are_refused(tmp_path):
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.txt").symlink_to(tmp_path / "real.txt")
    with pytest.raises(WorkspaceError, match=r"^sub/link.txt in the workspace is a symbolic link"):
        pack(tmp_path)


def test_a_link_to_a_directory_is_refused_not_followed(tmp_path):
    (tmp_path / "dir").symlink_to("/etc")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        pack(tmp_path)


def test_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        pack(tmp_path)


def test_over_16_mib_is_refused_naming_the_largest_files(tmp_path):
    (tmp_path / "big.bin").write_bytes(b"\0" * (10 << 20))
    (tmp_path / "bigger.bin").write_bytes(b"\0" * (7 << 20))
    (tmp_path / "small.py").write_text("")
    with pytest.raises(WorkspaceTooLargeError) as raised:
        pack(tmp_path)
    message = str(raised.value)
    assert message.startswith("the workspace needs 17 MiB, more than 16 MiB; the largest files: ")
    assert "big.bin (10 MiB), bigger.bin (7 MiB)" in message


def test_just_under_the_cap_is_accepted(tmp_path):
    (tmp_path / "data.bin").write_bytes(b"\1" * ((16 << 20) - 20 * 512))
    data, _, _ = pack(tmp_path)
    assert len(data) <= 16 << 20


def test_over_4096_entries_is_refused(tmp_path):
    for index in range(MAX_ENTRIES + 1):
        (tmp_path / f"f{index}").touch()
    with pytest.raises(WorkspaceTooLargeError, match="4097 entries, more than 4096"):
        pack(tmp_path)


def test_control_characters_in_names_are_refused(tmp_path):
    (tmp_path / "bad\x1bname").write_text("")
    with pytest.raises(WorkspaceError, match="control character"):
        pack(tmp_path)


def test_not_a_directory(tmp_path):
    with pytest.raises(WorkspaceError, match="is not a directory"):
        pack(tmp_path / "missing")


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../b", "a//b", "./a", "", "a\\b",
                                  "a/.."])
def test_artifact_names_that_escape_are_refused(tmp_path, name):
    with pytest.raises(ArtifactError, match="outside the output directory"):
        artifact_path(tmp_path, name)


def test_artifact_in_a_subdirectory(tmp_path):
    content = b"weights"
    path = receive_artifact(io.BytesIO(content), tmp_path, "ckpt/model.pt", len(content),
                            hashlib.sha256(content).hexdigest())
    assert path == tmp_path / "ckpt" / "model.pt" and path.read_bytes() == content
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["model.pt"]


@pytest.mark.parametrize("size, digest, message", [
    (3, None, "has more than 3 bytes, the job announced 3"),
    (99, None, "has 7 bytes, the job announced 99"),
    (7, "00" * 32, "does not match its SHA-256"),
])
def test_artifact_checks_leave_nothing_behind(tmp_path, size, digest, message):
    (tmp_path / "model.pt").write_bytes(b"old")
    content = b"weights"
    with pytest.raises(ArtifactError, match=message):
        receive_artifact(io.BytesIO(content), tmp_path, "model.pt", size,
                         digest or hashlib.sha256(content).hexdigest())
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]
    assert (tmp_path / "model.pt").read_bytes() == b"old"  # the previous one is untouched
