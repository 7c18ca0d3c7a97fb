# SPDX-License-Identifier: GPL-3.0-or-later
"""Checkpoints that survive a lost machine, for an elastic training (``min_nodes``).

    state = partagpu.checkpoint.load()            # None the first time
    start = state["epoch"] + 1 if state else 0
    for epoch in range(start, epochs):
        ...
        partagpu.checkpoint.save({"epoch": epoch, "model": model.state_dict(), ...}, step=epoch)

DDP keeps every replica identical, so every machine (the first process on each) writes the
same checkpoint into its own workspace, atomically. When a machine is lost, each survivor
still has the last one; torchrun's agents restart the workers, and :func:`load` gives every
rank the newest checkpoint any rank holds (a machine that came back with an older one, or
none, gets it over the process group). Rank numbers may change between restarts; nothing
here depends on them.

After each checkpoint, :func:`save` writes a small index beside it (``partagpu-checkpoint.json``:
its step and file name). The service coordinating the training reads it to keep a copy of the
newest checkpoint on its own machine, so a training that fails still leaves its last
checkpoint to its submitter; pass it as ``distribute(..., resume_from=...)`` and :func:`load`
starts from it.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import torch
import torch.distributed as dist

DEFAULT_NAME = "partagpu-checkpoint.pt"
INDEX_NAME = "partagpu-checkpoint.json"  # read by the service (src/core/src/job/checkpoint.rs)


def _first_on_this_machine() -> bool:
    return int(os.environ.get("LOCAL_RANK", "0")) == 0


def save(state: dict[str, Any], step: int, name: str = DEFAULT_NAME) -> None:
    """Writes ``state`` (anything ``torch.save`` takes) as the checkpoint of ``step`` (a
    number that grows: the epoch, the optimizer step). Call it on every rank."""
    if _first_on_this_machine():
        temporary = f"{name}.part"
        torch.save({"partagpu_step": int(step), "state": state}, temporary)
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        os.replace(temporary, name)
        _write_index(int(step), name)
    if dist.is_available() and dist.is_initialized():
        dist.barrier()  # nobody goes on before every machine holds this step


def _write_index(step: int, name: str) -> None:
    """Names the newest checkpoint for the service, after it is in place (so the index never
    names a step whose file is not complete). Only a plain file name in the working directory
    is shipped."""
    if os.path.dirname(name) or name.startswith("."):
        return
    temporary = f"{INDEX_NAME}.part"
    with open(temporary, "w", encoding="utf-8") as index:
        json.dump({"step": step, "file": name}, index)
    os.replace(temporary, INDEX_NAME)


def _read_local(name: str) -> tuple[int, bytes | None]:
    try:
        with open(name, "rb") as saved:
            data = saved.read()
        step = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)["partagpu_step"]
        return int(step), data
    except FileNotFoundError:
        return -1, None
    except Exception as error:  # noqa: BLE001 (a torn or foreign file: start from another rank's)
        print(f"partagpu: ignoring the unreadable checkpoint {name}: {error}", flush=True)
        return -1, None


def load(name: str = DEFAULT_NAME, map_location: Any = "cpu") -> dict[str, Any] | None:
    """The newest checkpoint any rank holds, on every rank; None when none has one."""
    step, data = _read_local(name)
    if not (dist.is_available() and dist.is_initialized()):
        return _state(data, map_location)
    steps: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(steps, step)
    newest = max(steps)
    if newest < 0:
        return None
    source = steps.index(newest)
    payload = [data if dist.get_rank() == source else None]
    dist.broadcast_object_list(payload, src=source)
    return _state(payload[0], map_location)


def _state(data: bytes | None, map_location: Any) -> dict[str, Any] | None:
    if data is None:
        return None
    return torch.load(io.BytesIO(data), map_location=map_location, weights_only=False)["state"]
