# SPDX-License-Identifier: GPL-3.0-or-later
"""``distribute(..., nodes="auto")``: probe, plan, say the prediction, train, say the result.

1. A probe run of the same script on every eligible machine with ``$PARTAGPU_PROBE`` set:
   :func:`partagpu.ddp.wrap` then times 8 micro-steps on each machine alone, measures the
   allreduce bandwidth with the model's gradient bytes, writes ``partagpu-probe.json`` on
   rank 0 and ends the run (seconds, not the training).
2. :func:`partagpu.planner.plan` chooses the machines and the strategy; the line the user
   reads before launch, e.g. "predicted 3.4× on 4 machines with fp16 gradients and 8-step
   accumulation; plain DDP: 0.9×", goes to stderr with any warning.
3. The training on those machines with ``$PARTAGPU_DDP_STRATEGY``; rank 0's trainer writes
   ``partagpu-metrics.json`` and the measured speed-up against the probe's one-machine step
   is reported beside the prediction.

A probe is kept in ``$XDG_CACHE_HOME/partagpu/probes`` per workspace content and set of
machines it ran on, so running the same script again on the same machines plans at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from partagpu.planner import Plan, Prediction, Probe, StepTiming, plan, speedup
from partagpu.strategy import ENV_VAR
from partagpu.stragglers import slowest

PROBE_MICRO_STEPS = 8
PROBE_TIME_LIMIT_S = 300
PROBE_FILE = "partagpu-probe.json"
METRICS_FILE = "partagpu-metrics.json"
# What the client and the training (partagpu.ddp) tell each other through the environment.
PROBE_ENV = "PARTAGPU_PROBE"  # "8": a probe run of 8 micro-steps
PROBE_OUTPUT_ENV = "PARTAGPU_PROBE_OUTPUT"
METRICS_OUTPUT_ENV = "PARTAGPU_METRICS_OUTPUT"
PLAN_ENV = "PARTAGPU_PLAN"
PLAN_SPEEDUP_ENV = "PARTAGPU_PLAN_SPEEDUP"
BASELINE_STEP_ENV = "PARTAGPU_BASELINE_STEP_S"


def probe_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, PROBE_ENV: str(PROBE_MICRO_STEPS)}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "partagpu" / "probes"


def cache_key(workspace_sha256: str, machines: list[str]) -> str:
    return hashlib.sha256(json.dumps([workspace_sha256, sorted(machines)]).encode()).hexdigest()[:32]


def load_cached(workspace_sha256: str, machines: list[str]) -> Probe | None:
    path = cache_dir() / f"{cache_key(workspace_sha256, machines)}.json"
    try:
        return Probe.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None  # none yet, or unreadable: probe again


def store_cached(workspace_sha256: str, probe: Probe) -> None:
    machines = sorted({t.machine for t in probe.timings})
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, encoding="utf-8") as out:
        json.dump(probe.to_json(), out)
    os.replace(out.name, directory / f"{cache_key(workspace_sha256, machines)}.json")


def read_probe(folder: Path, machines_by_node: list[str]) -> Probe:
    """The probe run's file, its "node R" names replaced by the machines' names."""
    try:
        data = json.loads((folder / PROBE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(
            f"the probe run gave no {PROBE_FILE} ({error}): does the script train through "
            "partagpu.ddp.wrap() and trainer.step()? (docs/performance.md)"
        ) from None
    found = Probe.from_json(data)
    named = []
    for timing in found.timings:
        node = timing.machine.removeprefix("node ")
        name = machines_by_node[int(node)] if node.isdigit() and int(node) < len(machines_by_node) else timing.machine
        named.append(StepTiming(name, timing.forward_s, timing.backward_s, timing.optimizer_s, timing.jitter_s))
    return Probe(found.shape, tuple(named), found.link)


def plan_env(chosen_plan: Plan, found: Probe) -> dict[str, str]:
    """What the planned training needs: its strategy, where rank 0 writes its step times,
    and what it prints in the job's own log (the prediction, then the measured speed-up),
    where `partagpuctl job logs` and the app show them."""
    return {
        ENV_VAR: chosen_plan.chosen.strategy.to_text(),
        METRICS_OUTPUT_ENV: METRICS_FILE,
        PLAN_ENV: chosen_plan.summary(),
        PLAN_SPEEDUP_ENV: f"{chosen_plan.chosen.speedup:.4f}",
        BASELINE_STEP_ENV: f"{found.timings[0].step_s:.6f}",
    }


def in_job_report(median_sync_step_s: float, processes: int, accumulation: int, env: dict[str, str]) -> str | None:
    """The line rank 0 prints at the end of a planned training, or None without a plan."""
    try:
        baseline = float(env[BASELINE_STEP_ENV])
        predicted = float(env[PLAN_SPEEDUP_ENV])
    except (KeyError, ValueError):
        return None
    if median_sync_step_s <= 0 or processes < 1:
        return None
    gain = speedup(processes, accumulation, baseline, median_sync_step_s)
    return (f"partagpu: measured {gain:.1f}× with {processes} process{'es' if processes > 1 else ''} "
            f"(efficiency {gain / processes:.0%}; predicted {predicted:.1f}×), throughput against one machine")


def choose(found: Probe, max_nodes: int | None = None) -> Plan:
    return plan(found.shape, list(found.timings), found.link, max_nodes=max_nodes)


def chosen_machines(prediction: Prediction) -> list[str]:
    return list(dict.fromkeys(prediction.machines))


@dataclass(frozen=True)
class Outcome:
    """What the training measured, beside what was predicted."""

    sync_step_s: float
    speedup: float
    efficiency: float
    planner_error: float
    slowest: str | None = None  # "lab-3 (forward pass 35 % over the median)"

    def describe(self, chosen_plan: Plan, found: Probe) -> str:
        chosen = chosen_plan.chosen
        slow = f"; slowest machine: {self.slowest}" if self.slowest else ""
        return (
            f"measured {self.speedup:.1f}× on {chosen.nodes} machine{'s' if chosen.nodes > 1 else ''} "
            f"(efficiency {self.efficiency:.0%}; predicted {chosen.speedup:.1f}×, planner error "
            f"{self.planner_error:.0%}) with {chosen.strategy.describe()}; allreduce bandwidth "
            f"{found.link.bandwidth / 1e6:.0f} MB/s; throughput against one machine, weak scaling{slow}"
        )


def _slowest(per_rank: object, machines_by_node: list[str]) -> str | None:
    if not isinstance(per_rank, list) or not all(isinstance(r, dict) for r in per_rank):
        return None
    try:
        found = slowest(per_rank)
        if found is None:
            return None
        entry, excess, what = found
        node = int(entry.get("node", -1))
    except (TypeError, ValueError):
        return None
    if entry.get("machine"):
        name = str(entry["machine"])
    else:
        name = machines_by_node[node] if 0 <= node < len(machines_by_node) else f"rank {entry.get('rank')}"
    return f"{name} ({what} {excess:.0%} over the median)"


def measured(folder: Path, chosen_plan: Plan, found: Probe, machines_by_node: list[str] = ()) -> Outcome | None:
    """The training's ``partagpu-metrics.json`` against the probe's one-machine step, or None
    when the script wrote none (it left through os._exit, or trained without the helper)."""
    try:
        metrics = json.loads((folder / METRICS_FILE).read_text(encoding="utf-8"))
        step = float(metrics["median_sync_step_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    chosen = chosen_plan.chosen
    if step <= 0:
        return Outcome(step, 0.0, 0.0, 0.0, _slowest(metrics.get("per_rank"), list(machines_by_node)))
    gain = speedup(chosen.nodes, chosen.strategy.accumulation, found.timings[0].step_s, step)
    return Outcome(step, gain, gain / chosen.nodes, abs(chosen.sync_step_s - step) / step,
                   _slowest(metrics.get("per_rank"), list(machines_by_node)))
