# SPDX-License-Identifier: GPL-3.0-or-later
"""Which machine slows the training: every rank's own compute time, gathered now and then.

A synchronous step waits for the slowest rank, so the step time alone cannot say who it is.
Each rank times its own work: the forward pass (no communication in it) and, with k-step
accumulation, the forward and backward of the micro-steps that do not synchronise. Every
``$PARTAGPU_RANK_REPORT_EVERY`` optimizer steps (default 10) the trainer gathers them (one
small collective), and rank 0's report names the slowest machine. :func:`slowest` needs no
torch, so the client reads the report with it.
"""

from __future__ import annotations

import os
import statistics
from typing import Any

RECENT_MICRO_STEPS = 20
SLOW_MARGIN = 0.10  # under 10 % above the median, nobody is called slow


def local_times(timings: list[Any]) -> dict[str, Any]:
    """This rank's medians over its recent micro-steps (``MicroStep`` of partagpu.ddp)."""
    recent = timings[-RECENT_MICRO_STEPS:]
    unsynced = [m.forward_s + m.backward_s for m in recent if not m.synced]
    return {
        "forward_s": statistics.median(m.forward_s for m in recent) if recent else 0.0,
        "local_step_s": statistics.median(unsynced) if unsynced else None,
    }


def gather(timings: list[Any]) -> list[dict[str, Any]]:
    """Every rank's :func:`local_times`, with its rank and node rank; a collective."""
    import torch.distributed as dist

    mine = {"rank": dist.get_rank(), "node": int(os.environ.get("GROUP_RANK", dist.get_rank())),
            **local_times(timings)}
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
    return per_rank[worst], excess, "compute of a micro-step" if key == "local_step_s" else "forward pass"
