# SPDX-License-Identifier: GPL-3.0-or-later
"""The synthetic training of bench/ddp-scaling, run by torchrun on every lab machine.

A model with the gradients of the example UNet (8 linear layers, 31 M parameters, 124 MB of
fp32 gradients) whose compute is emulated: after each layer a sleep of T_f/8 in forward and
of T_b/8 in backward (T_c = T_f + T_b = 0.4 s, backward two thirds). Sleeping leaves the two
cores of the bench machine to gloo, and the layer-by-layer backward lets DDP's buckets
overlap it as a real backward would.

    train.py probe                       rank 0 prints PROBE {json}: link, shape, per-rank timings
    train.py run STRATEGY WARMUP TIMED   rank 0 prints RESULT {json}: median optimizer-step time
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import partagpu.ddp

LAYERS = 8
WIDTH = 1968  # 8 · (1968² + 1968) = 31.0 M parameters
BATCH = 4
COMPUTE_S = float(os.environ.get("EMULATED_STEP_S", "0.4"))


class EmulatedCompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        time.sleep(COMPUTE_S / 3 / LAYERS)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        time.sleep(2 * COMPUTE_S / 3 / LAYERS)
        return grad


class Synthetic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = EmulatedCompute.apply(torch.tanh(layer(x)))
        return x


def trainer(strategy, local=False):
    torch.manual_seed(0)  # the same initial weights everywhere: DDP's broadcast changes nothing
    model = Synthetic()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return partagpu.ddp.wrap(model, optimizer, strategy, local=local)


def steps(wrapped, count):
    data = torch.randn(BATCH, WIDTH)
    for _ in range(count):
        wrapped.step(lambda: wrapped.model(data).pow(2).mean())


def probe():
    # The lab's machines share this host's 2 cores: each is timed alone, as it would run on
    # its own CPU in a real lab (partagpu.ddp.probe times real machines all at once).
    local = trainer("none", local=True)
    data = torch.randn(BATCH, WIDTH)
    machine = os.environ.get("PARTAGPU_MACHINE", f"rank-{dist.get_rank()}")
    found = partagpu.ddp.probe(local, lambda: local.step(lambda: local.model(data).pow(2).mean()), machine,
                               one_at_a_time=True)
    if dist.get_rank() == 0:
        print("PROBE " + json.dumps(found.to_json()), flush=True)


def run(strategy, warmup, timed):
    wrapped = trainer(strategy)
    k = wrapped.strategy.accumulation
    steps(wrapped, (warmup + timed) * k)
    slowest = [0.0] * dist.get_world_size()
    dist.all_gather_object(slowest, statistics.median(wrapped.sync_step_times(skip=warmup)))
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"sync_step_s": max(slowest), "per_rank_s": slowest}), flush=True)


def main():
    dist.init_process_group("gloo")
    if sys.argv[1] == "probe":
        probe()
    else:
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    # Without gloo's teardown, which aborts now and then on this torch.
    partagpu.ddp.finish()


if __name__ == "__main__":
    main()
