# SPDX-License-Identifier: GPL-3.0-or-later
"""Which machine slows the training: every rank's own compute time, gathered now and then.

A synchronous step waits for the slowest rank, so the step time alone cannot say who it is.
Each rank times its own work: the forward pass (no communication in it) and, with k-step
accumulation, the forward and backward of the micro-steps that do not synchronise. Every
``$PARTAGPU_RANK_REPORT_EVERY`` optimizer steps (default 10) the trainer gathers them (one
small collective): each rank's medians, and its own work in each of those steps. Rank 0 names
the machine slowest lately and, step by step, the machine that held each step back, in a
report line (``partagpu-report {json}``, only inside a PartaGPU training:
``$PARTAGPU_MACHINE`` is set there) that the coordinator folds into the job's record, where
``partagpuctl job show``, the app and the Python summary read it. Nothing here but
:func:`gather` needs torch, so the client uses it.
"""

from __future__ import annotations

import json
import os
import statistics
from typing import Any, Callable

RECENT_MICRO_STEPS = 20
SLOW_MARGIN = 0.10  # under 10 % above the median, nobody is called slow
MOST_NAMED = 32  # machines named in one window's slowed steps: a report line stays under 4 KiB
REPORT_PREFIX = "partagpu-report "  # as src/core/src/job/training.rs reads it
MACHINE_ENV = "PARTAGPU_MACHINE"  # the display name of a part's machine, set by the service


def local_times(timings: list[Any]) -> dict[str, Any]:
    """This rank's medians over its recent micro-steps (``MicroStep`` of partagpu.ddp)."""
    recent = timings[-RECENT_MICRO_STEPS:]
    unsynced = [m.forward_s + m.backward_s for m in recent if not m.synced]
    return {
        "forward_s": statistics.median(m.forward_s for m in recent) if recent else 0.0,
        "local_step_s": statistics.median(unsynced) if unsynced else None,
    }


def per_optimizer_step(timings: list[Any], cost: Callable[[Any], float]) -> list[float]:
    """The sum of ``cost`` over the micro-steps of each optimizer step (each ends with the
    synced one); micro-steps after the last synced one are left out."""
    steps, total = [], 0.0
    for micro in timings:
        total += cost(micro)
        if micro.synced:
            steps.append(total)
            total = 0.0
    return steps


def step_work(timings: list[Any]) -> list[float]:
    """This rank's own work in each optimizer step: every forward pass, the backward passes
    that do not synchronise, and the optimizer (the synchronising backward waits for the
    others, so it would make every rank look as slow as the slowest)."""
    return per_optimizer_step(
        timings, lambda m: m.forward_s + m.optimizer_s + (0.0 if m.synced else m.backward_s))


def _ranking(counts: dict[str, int]) -> list[tuple[str, int]]:
    """Machines by the steps they slowed, most first, then by name."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def gather(timings: list[Any], steps: int = 0) -> list[dict[str, Any]]:
    """Every rank's :func:`local_times` and the :func:`step_work` of its last ``steps``
    optimizer steps, with its rank and node rank; a collective."""
    import torch.distributed as dist

    mine = {"rank": dist.get_rank(), "node": int(os.environ.get("GROUP_RANK", dist.get_rank())),
            "machine": os.environ.get(MACHINE_ENV, ""), **local_times(timings),
            "steps": [round(s, 6) for s in step_work(timings)[-steps:]] if steps else []}
    everyone: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    return sorted(everyone, key=lambda r: r["rank"])


def slowest(per_rank: list[dict[str, Any]]) -> tuple[dict[str, Any], float, str] | None:
    """(the slowest rank's entry, how much slower than the median, what was compared), or
    None when no rank is more than 10 % slower than the median or there is nothing to say."""
    if len(per_rank) < 2:
        return None
    key = "local_step_s" if all(r.get("local_step_s") for r in per_rank) else "forward_s"
    values = [float(r.get(key) or 0.0) for r in per_rank]
    middle = statistics.median(values)
    if middle <= 0:
        return None
    worst = max(range(len(values)), key=values.__getitem__)
    excess = values[worst] / middle - 1
    if excess <= SLOW_MARGIN:
        return None
    # The app translates these two phrases (src/app/src/pages/jobs/model.rs).
    return per_rank[worst], excess, "compute of a micro-step" if key == "local_step_s" else "forward pass"


def slowed_steps(per_rank: list[dict[str, Any]]) -> tuple[int, dict[str, int]]:
    """(steps compared, how many of them each machine slowed): step by step, the rank whose own
    work was more than 10 % over that step's median held the step back. Every rank did the
    same optimizer steps, so their lists line up from the end."""
    lists = [r.get("steps") or [] for r in per_rank]
    compared = min((len(steps) for steps in lists), default=0) if len(per_rank) >= 2 else 0
    counts: dict[str, int] = {}
    for i in range(-compared, 0):
        values = [float(steps[i]) for steps in lists]
        middle = statistics.median(values)
        worst = max(range(len(values)), key=values.__getitem__)
        if middle > 0 and values[worst] / middle - 1 > SLOW_MARGIN:
            name = machine_of(per_rank[worst])
            counts[name] = counts.get(name, 0) + 1
    return compared, dict(_ranking(counts)[:MOST_NAMED])


def machine_of(entry: dict[str, Any]) -> str:
    """A rank's machine by name when the service said it, else by node rank."""
    return str(entry.get("machine") or f"node {entry.get('node', entry.get('rank', '?'))}")


def report(update: dict[str, Any]) -> None:
    """Prints one report line for the coordinator, inside a PartaGPU training only."""
    if os.environ.get(MACHINE_ENV):
        print(REPORT_PREFIX + json.dumps(update, ensure_ascii=False), flush=True)


def window(per_rank: list[dict[str, Any]], step: int, step_s: float, world_size: int,
           strategy: str) -> dict[str, Any]:
    """The report of the last few optimizer steps: where the training is, who slowed it."""
    found = slowest(per_rank)
    slow = None
    if found is not None:
        entry, excess, what = found
        slow = {"machine": machine_of(entry), "excess_percent": round(excess * 100), "compared": what}
    compared, counts = slowed_steps(per_rank)
    return {"kind": "window", "step": step, "step_s": step_s, "world_size": world_size,
            "strategy": strategy, "slowest": slow, "compared_steps": compared, "slowed_steps": counts}


def steps_line(training: dict[str, Any] | None) -> str | None:
    """From a job record's ``training``, what the summary says of the steps compared:
    "slowest machine: lab-3 (slowed 110 of 120 steps)" when one machine held back most of
    them; else how many each held back, since short steps on busy machines are each a little
    late somewhere ("no machine slowed most of the 20 steps compared (lab-2 6, lab-1 5)");
    None before any step was compared."""
    counts = {name: int(n) for name, n in ((training or {}).get("slowed_steps") or {}).items() if n}
    compared = int((training or {}).get("compared_steps") or 0)
    if not compared:
        return None
    ranking = _ranking(counts)
    if ranking and 2 * ranking[0][1] > compared:
        name, count = ranking[0]
        return f"slowest machine: {name} (slowed {count} of {compared} step{'s' if compared > 1 else ''})"
    if not ranking:
        return "no machine slowed the one step compared" if compared == 1 else \
            f"no machine slowed any of the {compared} steps compared"
    held = ", ".join(f"{name} {count}" for name, count in ranking)
    return f"no machine slowed most of the {compared} steps compared ({held})"
