# SPDX-License-Identifier: GPL-3.0-or-later
"""Inside a training: wrap the model in DDP with the strategy the planner chose, and time it.

In the training script::

    import partagpu.ddp
    partagpu.ddp.init_process_group()                # nccl or gloo, and its timeout
    trainer = partagpu.ddp.wrap(model, optimizer)
    for x, y in loader:
        loss = trainer.step(lambda: loss_fn(trainer.model(x), y))

:meth:`Trainer.step` runs one micro-step: forward (the closure), backward of loss/k, and on
every k-th call the gradient allreduce (through the compression hook), the optimizer step and
``zero_grad``. The k−1 others run under DDP's ``no_sync``, so the network is used once per
optimizer step. The strategy comes from the argument, else ``$PARTAGPU_DDP_STRATEGY`` (set by
the coordinator), else plain DDP. Every micro-step's forward, backward and optimizer times
are kept (:attr:`Trainer.timings`) for the probe and the report.

:func:`measure_link` and :func:`model_shape` give the planner the rest of what it needs, and
:func:`finish` ends a rank without gloo's teardown, which can abort a finished training.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import NoReturn

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel

from partagpu import autoplan, stragglers
from partagpu.planner import Link, ModelShape, Probe, StepTiming, bucket_sizes
from partagpu.strategy import ENV_VAR, Strategy

COLLECTIVE_TIMEOUT_ENV = "PARTAGPU_COLLECTIVE_TIMEOUT_S"
RANK_REPORT_EVERY_ENV = "PARTAGPU_RANK_REPORT_EVERY"


@dataclass(frozen=True)
class MicroStep:
    forward_s: float
    backward_s: float
    optimizer_s: float  # 0 on micro-steps that only accumulate
    synced: bool


def init_process_group(backend: str | None = None) -> None:
    """``torch.distributed.init_process_group`` for a training under partagpu: nccl with
    CUDA, else gloo, and the collective timeout the coordinator asks for
    (``$PARTAGPU_COLLECTIVE_TIMEOUT_S``, set for an elastic training: a machine that vanishes
    sends nothing, and only a timeout tells the others to restart without it)."""
    chosen = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    seconds = os.environ.get(COLLECTIVE_TIMEOUT_ENV, "").strip()
    if seconds:
        dist.init_process_group(chosen, timeout=datetime.timedelta(seconds=float(seconds)))
    else:
        dist.init_process_group(chosen)


def strategy_from_env() -> Strategy:
    text = os.environ.get(ENV_VAR, "").strip()
    return Strategy.from_text(text) if text else Strategy()


def _register_hook(model: DistributedDataParallel, strategy: Strategy) -> None:
    if strategy.compression == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif strategy.compression == "bf16":
        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif strategy.compression == "powersgd":
        # Two plain iterations first: PowerSGD's error feedback starts from real gradients.
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=strategy.rank, start_powerSGD_iter=2
        )
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)


def _clock(device: torch.device) -> float:
    # Host time is only right once the device has finished what was queued.
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


class Trainer:
    """A DDP model, its optimizer and the strategy, one micro-step at a time."""

    def __init__(self, model, optimizer, strategy: Strategy, *, local: bool = False, probe_steps: int = 0,
                 **ddp_args):
        self.strategy = strategy
        self.probe_steps = probe_steps
        self.optimizer = optimizer
        # local: this machine alone even inside a process group (the probe times every
        # machine at once, before the training's DDP exists).
        self.distributed = not local and dist.is_available() and dist.is_initialized()
        self.world_size = dist.get_world_size() if self.distributed else 1
        if self.distributed:
            self.model = DistributedDataParallel(model, **ddp_args)
            _register_hook(self.model, strategy)
        else:
            self.model = model
        self.device = next(model.parameters()).device
        self.timings: list[MicroStep] = []
        self._micro = 0
        self._syncs = 0
        self.report_every = max(1, int(os.environ.get(RANK_REPORT_EVERY_ENV, "10")))
        self.per_rank: list[dict] = []  # the last gather of every rank's own times

    def step(self, forward):
        """One micro-step; ``forward()`` returns the loss. Returns the loss (detached)."""
        k = self.strategy.accumulation
        self._micro += 1
        last = self._micro % k == 0
        context = self.model.no_sync() if self.distributed and not last else contextlib.nullcontext()
        start = _clock(self.device)
        with context:
            loss = forward()
            after_forward = _clock(self.device)
            (loss / k).backward()
            after_backward = _clock(self.device)
        optimizer_s = 0.0
        if last:
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            optimizer_s = _clock(self.device) - after_backward
        self.timings.append(MicroStep(after_forward - start, after_backward - after_forward, optimizer_s, last))
        if last and self.distributed:
            self._syncs += 1
            if self._syncs % self.report_every == 0:
                # Every rank reaches the same optimizer step: a safe point for a collective.
                self.per_rank = stragglers.gather(self.timings, self.report_every)
                if dist.get_rank() == 0:
                    recent = self.sync_step_times(skip=0)[-self.report_every:]
                    stragglers.report(stragglers.window(self.per_rank, self._syncs, statistics.median(recent),
                                                        self.world_size, self.strategy.to_text()))
        if self.probe_steps and len(self.timings) >= self.probe_steps:
            _finish_probe_run(self)
        return loss.detach()

    def sync_step_times(self, skip: int = 1) -> list[float]:
        """Seconds of each optimizer step (its k micro-steps), after ``skip`` warm-up ones."""
        out = stragglers.per_optimizer_step(self.timings, lambda m: m.forward_s + m.backward_s + m.optimizer_s)
        return out[skip:] if len(out) > skip else out

    def write_report(self, path: str | None = None) -> None:
        """Rank 0's measured optimizer-step times as JSON (written at exit when
        ``$PARTAGPU_METRICS_OUTPUT`` names the file), for the report after the job. With every
        rank in step they include the wait for the slowest machine and the exposed
        communication; ``per_rank`` has each rank's own times (:mod:`partagpu.stragglers`)."""
        times = self.sync_step_times()
        if not times:
            return
        report = {"strategy": self.strategy.to_text(), "world_size": self.world_size,
                  "sync_steps": len(times), "median_sync_step_s": statistics.median(times),
                  "per_rank": self.per_rank}
        path = path or autoplan.METRICS_FILE
        with open(path + ".part", "w", encoding="utf-8") as out:
            json.dump(report, out)
        os.replace(path + ".part", path)
        line = autoplan.in_job_report(report["median_sync_step_s"], self.world_size, self.strategy.accumulation,
                                      dict(os.environ))
        if line:
            print(line, flush=True)
            stragglers.report({"kind": "measured", "text": line.removeprefix("partagpu: ")})

    def step_timing(self, machine: str, skip: int = 3) -> StepTiming:
        """Medians of the micro-steps after the first ``skip`` (warm-up), for the planner."""
        kept = self.timings[skip:] or self.timings
        if not kept:
            raise ValueError("no step was timed yet")
        totals = [m.forward_s + m.backward_s + m.optimizer_s for m in kept]
        synced = [m.optimizer_s for m in kept if m.synced] or [0.0]
        return StepTiming(
            machine,
            statistics.median(m.forward_s for m in kept),
            statistics.median(m.backward_s for m in kept),
            statistics.median(synced),
            statistics.pstdev(totals) if len(totals) > 1 else 0.0,
        )


def wrap(model, optimizer, strategy: Strategy | str | None = None, *, local: bool = False, **ddp_args) -> Trainer:
    """A :class:`Trainer` for ``model``; ``strategy`` as a Strategy, its text, or from the env.
    ``local=True`` leaves DDP out (timing this machine alone); ``ddp_args`` go to DDP."""
    if isinstance(strategy, str):
        strategy = Strategy.from_text(strategy)
    probe_steps = os.environ.get(autoplan.PROBE_ENV, "")
    if probe_steps and dist.is_available() and dist.is_initialized():
        # Each machine alone, plain gradients: the planner predicts every strategy from that.
        return Trainer(model, optimizer, Strategy(), local=True, probe_steps=max(4, int(probe_steps)))
    trainer = Trainer(model, optimizer, strategy or strategy_from_env(), local=local, **ddp_args)
    if trainer.distributed and dist.get_rank() == 0:
        if os.environ.get(autoplan.PLAN_ENV):
            # In the job's log too, where partagpuctl job logs and the app show it.
            print(f"partagpu: {os.environ[autoplan.PLAN_ENV]}", flush=True)
            stragglers.report({"kind": "plan", "text": os.environ[autoplan.PLAN_ENV]})
        if os.environ.get(autoplan.METRICS_OUTPUT_ENV):
            # Asked for by distribute(nodes="auto"): the measured steps, for its report.
            atexit.register(trainer.write_report, os.environ[autoplan.METRICS_OUTPUT_ENV])
    return trainer


def model_shape(model: torch.nn.Module) -> ModelShape:
    """Gradient bytes in fp32, and each weight as the matrix PowerSGD would compress."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    matrices = tuple((p.shape[0], p.numel() // p.shape[0]) for p in trainable if p.dim() >= 2)
    return ModelShape(sum(p.numel() for p in trainable) * 4, matrices)


def _collective_device() -> torch.device:
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def measure_link(gradient_bytes: int = 32 << 20, repeats: int = 2, small_repeats: int = 20) -> Link:
    """busbw of allreducing ``gradient_bytes`` over the job's process group in DDP's buckets
    (all in flight at once, as DDP sends them), by nccl-tests' definition so that it compares
    with one link's goodput at any N; α from 4-byte allreduces. Every rank gets rank 0's."""
    world = dist.get_world_size()
    if world < 2:
        raise ValueError("measuring the link needs at least two ranks")
    device = _collective_device()
    buckets = [torch.ones(size // 4, device=device) for size in bucket_sizes(gradient_bytes)]
    small = torch.ones(1, device=device)

    def allreduce_all():
        for work in [dist.all_reduce(b, async_op=True) for b in buckets]:
            work.wait()

    allreduce_all()  # the first collectives also set up connections: not timed
    durations = []
    for _ in range(repeats):
        dist.barrier()
        start = _clock(device)
        allreduce_all()
        durations.append(_clock(device) - start)
    dist.barrier()
    start = _clock(device)
    for _ in range(small_repeats):
        dist.all_reduce(small)
    alpha = (_clock(device) - start) / small_repeats / (2 * (world - 1))
    busbw = gradient_bytes / statistics.median(durations) * 2 * (world - 1) / world
    agreed = torch.tensor([busbw, alpha], dtype=torch.float64, device=device)
    dist.broadcast(agreed, 0)
    return Link(float(agreed[0]), float(agreed[1]))


def probe(trainer: Trainer, micro_step, machine: str = "", *, steps: int = 8, one_at_a_time: bool = False) -> Probe:
    """Times ``steps`` micro-steps of ``trainer`` (made with ``local=True``) on every rank,
    then measures the link with the model's gradient bytes. ``micro_step()`` runs one
    ``trainer.step``. All machines are timed at once, each on its own hardware;
    ``one_at_a_time`` times them in turn, for machines that share a CPU (the virtual lab)."""
    if trainer.distributed:
        raise ValueError("the probe times each machine alone: make its trainer with local=True")
    rank, world = dist.get_rank(), dist.get_world_size()
    for turn in range(world if one_at_a_time else 1):
        if not one_at_a_time or turn == rank:
            for _ in range(steps):
                micro_step()
        if one_at_a_time:
            dist.barrier()
    return _gather_probe(trainer, machine or f"rank {rank}")


def _gather_probe(trainer: Trainer, machine: str) -> Probe:
    gathered: list = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, trainer.step_timing(machine).__dict__)
    shape = model_shape(trainer.model)
    return Probe(shape, tuple(StepTiming(**t) for t in gathered), measure_link(shape.gradient_bytes))


def _finish_probe_run(trainer: Trainer) -> None:
    """In a probe run (``$PARTAGPU_PROBE``, started by ``distribute(nodes="auto")``): once
    enough micro-steps were timed, rank 0 writes what was measured and every rank leaves."""
    # torchrun names the node: the client maps it to the machine of that node rank.
    found = _gather_probe(trainer, f"node {os.environ.get('GROUP_RANK', dist.get_rank())}")
    if dist.get_rank() == 0:
        path = os.environ.get(autoplan.PROBE_OUTPUT_ENV, autoplan.PROBE_FILE)
        with open(path + ".part", "w", encoding="utf-8") as out:
            json.dump(found.to_json(), out)
        os.replace(path + ".part", path)
    dist.barrier()
    # The rest of the script is the training itself; a probe run ends here on every rank,
    # without the exit hooks (the report of a training that did not run).
    _leave(0)


def finish() -> NoReturn:
    """Ends this rank's part of the training: waits for the other ranks, runs the exit hooks
    (``atexit``: this module's report, ``logging``'s flush) and leaves with status 0, without
    tearing the process group down.

    Call it last, once the artifacts are written and closed. Torch's gloo teardown, by
    ``destroy_process_group()`` or at the interpreter's exit, aborts now and then
    ("terminate called without an active exception", SIGABRT) even after a barrier; the
    agent would then take a finished training for a failed one. Objects left to the garbage
    collector are not finalized, so close the files you wrote (``with open(...)``)."""
    dist.barrier()
    atexit._run_exitfuncs()
    _leave(0)


def _leave(status: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
