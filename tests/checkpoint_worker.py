# SPDX-License-Identifier: GPL-3.0-or-later
"""Run by tests/test_ddp.py under torchrun (2 ranks, gloo): partagpu.checkpoint across ranks
that hold different checkpoints, as after a restart without a lost machine's copy.

Each rank works in its own folder ($CKPT_ROOT/rank-N). Rank 1's folder holds the checkpoint
of step 4 and rank 0's that of step 2 (or none, or a torn file, as $CKPT_CASE says); load()
must give both ranks step 4's state. Then save() of step 5 writes into each folder."""

import json
import os

import torch
import torch.distributed as dist

import partagpu.checkpoint
import partagpu.ddp


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    folder = os.path.join(os.environ["CKPT_ROOT"], f"rank-{rank}")
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    if rank == 1:
        torch.save({"partagpu_step": 4, "state": {"weights": torch.full((3,), 4.0)}}, partagpu.checkpoint.DEFAULT_NAME)
    elif os.environ["CKPT_CASE"] == "older":
        torch.save({"partagpu_step": 2, "state": {"weights": torch.full((3,), 2.0)}}, partagpu.checkpoint.DEFAULT_NAME)
    elif os.environ["CKPT_CASE"] == "torn":
        with open(partagpu.checkpoint.DEFAULT_NAME, "wb") as f:
            f.write(b"PK\x03\x04 not a whole file")
    dist.barrier()
    state = partagpu.checkpoint.load()
    got = state["weights"].tolist()
    # Each machine's first process writes: LOCAL_RANK is 0 and 1 here, so only rank 0 does.
    partagpu.checkpoint.save({"weights": torch.full((3,), 5.0)}, step=5)
    written = os.path.exists(partagpu.checkpoint.DEFAULT_NAME) and torch.load(
        partagpu.checkpoint.DEFAULT_NAME, weights_only=False)["partagpu_step"]
    with open(os.path.join(os.environ["CKPT_ROOT"], f"result-{rank}.json"), "w") as f:
        json.dump({"loaded": got, "written_step": written}, f)
    # Not destroy_process_group(): gloo's teardown aborts now and then on this torch, and two
    # CI runs failed so. finish() waits for the other rank, runs the exit hooks (the report)
    # and leaves.
    partagpu.ddp.finish()


if __name__ == "__main__":
    main()
