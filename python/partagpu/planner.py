# SPDX-License-Identifier: GPL-3.0-or-later
"""Predict what N machines bring to a DDP training, and choose how they talk.

The model is the one of ``docs/performance.md`` (α–β ring allreduce, DDP's bucket overlap,
the straggler and jitter term). It needs only numbers a short probe measures: the gradient
bytes of the model, per machine the forward, backward and optimizer times of one step and
their spread, and the link's allreduce bandwidth and latency. Nothing here imports torch, so
the CLI, the notebook and the tests can plan without it.

Speed-ups are *throughput* speed-ups under weak scaling: every machine keeps its batch, so
N machines with k-step accumulation train on an N·k times larger global batch per optimizer
step. That is stated with every prediction; time to a given accuracy may differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from partagpu.strategy import Strategy, candidate_strategies

MIB = 1 << 20
# DDP's bucketing: the first bucket is kept small so communication starts early.
FIRST_BUCKET_BYTES = MIB
BUCKET_CAP_BYTES = 25 * MIB


@dataclass(frozen=True)
class StepTiming:
    """One machine's local step, measured before any process group exists."""

    machine: str
    forward_s: float
    backward_s: float
    optimizer_s: float = 0.0
    jitter_s: float = 0.0  # standard deviation of the step time

    @property
    def compute_s(self) -> float:
        return self.forward_s + self.backward_s

    @property
    def step_s(self) -> float:
        """One plain step alone: what a training on this machine only would take."""
        return self.compute_s + self.optimizer_s


@dataclass(frozen=True)
class Link:
    """The allreduce bandwidth (busbw, bytes/s) and per-message latency α of the network."""

    bandwidth: float
    latency_s: float = 0.0


@dataclass(frozen=True)
class ModelShape:
    """What the gradients weigh: fp32 bytes, and (rows, cols) of each matrix for PowerSGD."""

    gradient_bytes: int
    matrices: tuple[tuple[int, int], ...] = ()

    def wire_bytes(self, strategy: Strategy) -> float:
        if strategy.compression in ("fp16", "bf16"):
            return self.gradient_bytes / 2
        if strategy.compression == "powersgd":
            in_matrices = sum(rows * cols for rows, cols in self.matrices) * 4
            low_rank = sum(strategy.rank * (rows + cols) for rows, cols in self.matrices) * 4
            return self.gradient_bytes - in_matrices + low_rank
        return self.gradient_bytes

    def buckets(self) -> int:
        return len(bucket_sizes(self.gradient_bytes))


def bucket_sizes(gradient_bytes: int) -> list[int]:
    """The bytes of each bucket DDP fills, in the order it sends them."""
    sizes = [min(gradient_bytes, FIRST_BUCKET_BYTES)]
    rest = gradient_bytes - sizes[0]
    while rest > 0:
        sizes.append(min(rest, BUCKET_CAP_BYTES))
        rest -= sizes[-1]
    return sizes


@dataclass(frozen=True)
class Probe:
    """What the planner needs, the same on every rank: timings in rank order."""

    shape: ModelShape
    timings: tuple[StepTiming, ...]
    link: Link

    def to_json(self) -> dict:
        return {"gradient_bytes": self.shape.gradient_bytes, "matrices": list(self.shape.matrices),
                "timings": [t.__dict__ for t in self.timings], "link": self.link.__dict__}

    @classmethod
    def from_json(cls, data: dict) -> Probe:
        """The file a probe run wrote; ValueError naming what is wrong with it."""
        try:
            shape = ModelShape(int(data["gradient_bytes"]), tuple((int(r), int(c)) for r, c in data.get("matrices", ())))
            timings = tuple(
                StepTiming(str(t["machine"]), float(t["forward_s"]), float(t["backward_s"]),
                           float(t.get("optimizer_s", 0.0)), float(t.get("jitter_s", 0.0)))
                for t in data["timings"]
            )
            link = Link(float(data["link"]["bandwidth"]), float(data["link"].get("latency_s", 0.0)))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"the probe's measurements are unreadable ({type(error).__name__}: {error})") from None
        if not timings or link.bandwidth <= 0 or shape.gradient_bytes <= 0:
            raise ValueError("the probe measured no machine, no bandwidth or no gradients")
        return cls(shape, timings, link)


@dataclass(frozen=True)
class Prediction:
    """One configuration: which machines, which strategy, and what the model says of it."""

    machines: tuple[str, ...]
    strategy: Strategy
    sync_step_s: float  # one optimizer step: k micro-steps and the exposed communication
    comm_s: float
    exposed_comm_s: float
    speedup: float
    efficiency: float

    @property
    def nodes(self) -> int:
        return len(self.machines)

    @property
    def micro_step_s(self) -> float:
        return self.sync_step_s / self.strategy.accumulation


@dataclass(frozen=True)
class Plan:
    """The chosen configuration, plain DDP on the same machines, and every one considered."""

    chosen: Prediction
    plain: Prediction
    considered: tuple[Prediction, ...]
    left_out: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One line such as the user reads before launch."""
        chosen, plain = self.chosen, self.plain
        if chosen.nodes == 1:
            text = (
                f"predicted {plain.speedup:.1f}× for plain DDP on {plain.nodes} machines: "
                "running on one machine is faster"
            )
        else:
            text = (
                f"predicted {chosen.speedup:.1f}× on {chosen.nodes} machines with "
                f"{chosen.strategy.describe()}; plain DDP: {plain.speedup:.1f}×"
            )
        return text + " (throughput, weak scaling: each machine keeps its batch)"


def predict(shape: ModelShape, timings: list[StepTiming], link: Link, strategy: Strategy) -> Prediction:
    """The α–β model of docs/performance.md for these machines (the first is the submitter's)."""
    n = len(timings)
    k = strategy.accumulation
    slowest = max(t.compute_s for t in timings)
    slowest_backward = max(t.backward_s for t in timings)
    jitter = max(t.jitter_s for t in timings) * math.sqrt(2 * math.log(n)) if n > 1 else 0.0
    optimizer = max(t.optimizer_s for t in timings)
    if n == 1:
        comm = exposed = 0.0
    else:
        buckets = shape.buckets()
        messages = buckets * strategy.allreduces_per_bucket
        comm = 2 * (n - 1) / n * shape.wire_bytes(strategy) / link.bandwidth
        comm += 2 * (n - 1) * messages * link.latency_s
        # Only the last micro-step's backward overlaps the allreduce (no_sync before it).
        exposed = max(comm / buckets, comm - slowest_backward * (1 - 1 / buckets))
    sync = k * slowest + jitter + exposed + optimizer
    gain = speedup(n, k, timings[0].step_s, sync)
    return Prediction(tuple(t.machine for t in timings), strategy, sync, comm, exposed, gain, gain / n)


def speedup(processes: int, accumulation: int, one_machine_step_s: float, sync_step_s: float) -> float:
    """Throughput against one machine: `processes` each doing `accumulation` micro-steps per
    optimizer step of `sync_step_s`, against one plain step of `one_machine_step_s`."""
    return processes * accumulation * one_machine_step_s / sync_step_s


def usable_machines(timings: list[StepTiming]) -> tuple[list[StepTiming], list[str]]:
    """The submitter's machine, then the others fastest first while each one does not slow the
    set: machine j joins N others only if its step is under T_max·(N+1)/N (performance.md)."""
    own, others = timings[0], sorted(timings[1:], key=lambda t: t.compute_s)
    chosen, left_out = [own], []
    for timing in others:
        slowest = max(t.compute_s for t in chosen)
        if not left_out and timing.compute_s < slowest * (len(chosen) + 1) / len(chosen):
            chosen.append(timing)
        else:
            left_out.append(timing.machine)
    return chosen, left_out


def plan(
    shape: ModelShape,
    timings: list[StepTiming],
    link: Link,
    *,
    max_nodes: int | None = None,
    strategies: list[Strategy] | None = None,
    tolerance: float = 0.05,
) -> Plan:
    """Choose N and the strategy: the highest predicted throughput, but among those within
    ``tolerance`` of it the least invasive (plain before compressed, small k before large).
    Never a configuration the model predicts slower than one machine."""
    if not timings:
        raise ValueError("planning needs the step timing of at least one machine")
    machines, left_out = usable_machines(timings)
    machines = machines[: max_nodes or len(machines)]
    strategies = strategies or candidate_strategies()
    considered = [predict(shape, machines[:1], link, Strategy())]
    for n in range(2, len(machines) + 1):
        considered += [predict(shape, machines[:n], link, s) for s in strategies]
    best = max(p.speedup for p in considered)
    good = [p for p in considered if p.speedup >= best * (1 - tolerance) and p.speedup >= 1.0]
    chosen = min(good, key=lambda p: (p.strategy.invasiveness(), -p.speedup))
    plain_n = chosen.nodes if chosen.nodes > 1 else len(machines)
    plain = predict(shape, machines[:plain_n], link, Strategy())
    warnings = []
    if chosen.nodes > 1 and chosen.efficiency < 0.5:
        warnings.append(f"predicted efficiency {chosen.efficiency:.0%} is under 50 %")
    if chosen.nodes > 1 and chosen.speedup < 1.2:
        warnings.append(f"predicted speed-up {chosen.speedup:.2f}× is barely worth the machines")
    if left_out:
        warnings.append("left out as too slow for the others: " + ", ".join(left_out))
    return Plan(chosen, plain, tuple(considered), tuple(left_out), tuple(warnings))
