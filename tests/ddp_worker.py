# SPDX-License-Identifier: GPL-3.0-or-later
"""Run by tests/test_ddp.py under torchrun (2 ranks, gloo): partagpu.ddp with one strategy.

Each rank trains a small linear model on its own data for two optimizer steps and prints, as
a JSON file (in $DDP_WORKER_OUT), whether its gradients match the other rank's after every micro-step
(they must only after the synced one), the final weights, the link it measured and the
timings it kept. The test compares the weights with a single-process reference.
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

import partagpu.ddp


def data(rank, micro):
    generator = torch.Generator().manual_seed(100 * rank + micro)
    return torch.randn(8, 16, generator=generator)


def slow_forward(rank, out):
    # $DDP_SLOW_RANK plays a slower machine: its forward pass takes 50 ms more.
    if str(rank) == os.environ.get("DDP_SLOW_RANK"):
        time.sleep(0.05)
    return out


def grads_equal_across_ranks(model):
    flat = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    return bool(torch.allclose(gathered[0], gathered[1], atol=1e-3))


def reference(k, world):
    """The same two optimizer steps in one process: the gradient of the mean loss over every
    rank's micro-batches of that step, as DDP's average of k-scaled losses must give."""
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        losses = [model(data(r, m)).pow(2).mean() for r in range(world) for m in range(step * k, (step + 1) * k)]
        (sum(losses) / len(losses)).backward()
        optimizer.step()
    return model.weight.detach().flatten().tolist() + model.bias.detach().tolist()


def main():
    strategy = sys.argv[1] if len(sys.argv) > 1 else None  # None: from $PARTAGPU_DDP_STRATEGY
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if os.environ.get("DDP_NAME_RANKS"):
        # Each rank plays its own machine, as the service names a part's (PARTAGPU_MACHINE):
        # rank 0 then prints its report lines.
        os.environ["PARTAGPU_MACHINE"] = f"machine-{rank}"
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    trainer = partagpu.ddp.wrap(model, torch.optim.SGD(model.parameters(), lr=0.1), strategy)
    events = []
    k = trainer.strategy.accumulation
    for micro in range(2 * k):
        x = data(rank, micro)
        trainer.step(lambda: slow_forward(rank, trainer.model(x)).pow(2).mean())
        synced = trainer.timings[-1].synced
        # After a synced step the optimizer has run and zero_grad(set_to_none) cleared grads.
        events.append({"micro": micro, "synced": synced,
                       "equal": None if synced else grads_equal_across_ranks(trainer.model.module)})
    link = partagpu.ddp.measure_link(gradient_bytes=1 << 20, repeats=2, small_repeats=5)
    out = {
        "rank": rank,
        "strategy": trainer.strategy.to_text(),
        "events": events,
        "weight": model.weight.detach().flatten().tolist(),
        "bias": model.bias.detach().tolist(),
        "link": [link.bandwidth, link.latency_s],
        "timing": trainer.step_timing("here", skip=0).__dict__,
        "reference": reference(k, dist.get_world_size()),
        "shape": [partagpu.ddp.model_shape(model).gradient_bytes, partagpu.ddp.model_shape(model).matrices],
    }
    # A file per rank: two ranks' long lines on torchrun's shared stdout can interleave.
    with open(os.path.join(os.environ["DDP_WORKER_OUT"], f"rank-{rank}.json"), "w") as f:
        json.dump(out, f)
    # Not destroy_process_group(): gloo's teardown aborts now and then on this torch, and two
    # CI runs failed so. finish() waits for the other rank, runs the exit hooks (the report)
    # and leaves.
    partagpu.ddp.finish()


if __name__ == "__main__":
    main()
