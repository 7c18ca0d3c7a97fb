# SPDX-License-Identifier: GPL-3.0-or-later
"""partagpu.ddp in real PyTorch DDP (2 ranks, gloo, on this host): each strategy gives the
weights a single process computes from the same data, accumulation syncs only every k-th
micro-step, and the link and timings it measures are usable by the planner.

PARTAGPU_TORCH_PYTHON names a Python with torch (scripts/test builds it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TORCH = os.environ.get("PARTAGPU_TORCH_PYTHON", "")
REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not TORCH, reason="PARTAGPU_TORCH_PYTHON is not set (scripts/test sets it)")


def run_workers(tmp_path, strategy_arg, env_strategy=None, port=29650, **extra_env):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), OMP_NUM_THREADS="1", TORCH_CPP_LOG_LEVEL="ERROR",
               DDP_WORKER_OUT=str(tmp_path))
    env.pop("PARTAGPU_DDP_STRATEGY", None)
    env.pop("PARTAGPU_METRICS_OUTPUT", None)
    env.update(extra_env)
    if env_strategy:
        env["PARTAGPU_DDP_STRATEGY"] = env_strategy
    torchrun = str(Path(TORCH).parent / "torchrun")
    args = [strategy_arg] if strategy_arg else []
    result = subprocess.run(
        [torchrun, "--nnodes", "1", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
         "--master-port", str(port), str(REPO / "tests" / "ddp_worker.py"), *args],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (tmp_path / "torchrun.out").write_text(result.stdout)
    found = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert [w["rank"] for w in found] == [0, 1]
    return found


@pytest.mark.parametrize(
    ("strategy", "k", "tolerance", "port"),
    [("none", 1, 1e-6, 29651), ("fp16", 1, 2e-3, 29652), ("bf16+accumulate2", 2, 2e-2, 29653),
     ("none+accumulate4", 4, 1e-6, 29654), ("powersgd2", 1, None, 29655)],
)
def test_each_strategy_trains_like_one_process_and_syncs_every_kth_step(tmp_path, strategy, k, tolerance, port):
    workers = run_workers(tmp_path, strategy, port=port)
    for worker in workers:
        assert worker["strategy"] == strategy
        synced = [e["micro"] for e in worker["events"] if e["synced"]]
        assert synced == [k - 1, 2 * k - 1]
        # Between syncs each rank holds only its own gradients: they differ.
        assert all(e["equal"] is False for e in worker["events"] if not e["synced"])
    # Every rank ends with the same weights.
    assert workers[0]["weight"] == pytest.approx(workers[1]["weight"], abs=1e-6)
    got = workers[0]["weight"] + workers[0]["bias"]
    if tolerance is not None:
        assert got == pytest.approx(workers[0]["reference"], abs=tolerance)
    else:
        # PowerSGD's first two iterations are plain allreduce (start_powerSGD_iter=2).
        assert got == pytest.approx(workers[0]["reference"], abs=1e-5)


def test_the_strategy_comes_from_the_environment_the_coordinator_sets(tmp_path):
    workers = run_workers(tmp_path, None, env_strategy="fp16+accumulate2", port=29656,
                          PARTAGPU_METRICS_OUTPUT="report.json")
    assert {w["strategy"] for w in workers} == {"fp16+accumulate2"}
    # Rank 0 reports its optimizer steps at exit (the first is left out as warm-up).
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["strategy"] == "fp16+accumulate2" and report["world_size"] == 2
    assert report["sync_steps"] == 1 and report["median_sync_step_s"] > 0


def test_the_report_names_the_slower_rank(tmp_path):
    run_workers(tmp_path, "none+accumulate2", port=29661, PARTAGPU_METRICS_OUTPUT="report.json",
                PARTAGPU_RANK_REPORT_EVERY="1", DDP_SLOW_RANK="1")
    per_rank = json.loads((tmp_path / "report.json").read_text())["per_rank"]
    assert [r["rank"] for r in per_rank] == [0, 1] and [r["node"] for r in per_rank] == [0, 0]
    assert per_rank[1]["forward_s"] > per_rank[0]["forward_s"] + 0.04
    assert per_rank[1]["local_step_s"] > per_rank[0]["local_step_s"]
    sys.path.insert(0, str(REPO / "python"))
    from partagpu.stragglers import slowest

    entry, excess, what = slowest(per_rank)
    assert entry["rank"] == 1 and excess > 0.1 and what == "compute of a micro-step"


def test_each_step_is_charged_to_the_slower_rank(tmp_path):
    # Plain DDP: the fast rank waits for the slow one inside its backward pass, which a rank's
    # own work leaves out (else both would look as slow).
    run_workers(tmp_path, "none", port=29662, PARTAGPU_RANK_REPORT_EVERY="2", DDP_SLOW_RANK="1",
                DDP_NAME_RANKS="1")
    prefix = "partagpu-report "
    windows = [json.loads(line[len(prefix):]) for line in (tmp_path / "torchrun.out").read_text().splitlines()
               if line.startswith(prefix) and '"window"' in line]
    # One window line after the two optimizer steps, comparing both of them.
    assert [(w["step"], w["compared_steps"], w["slowed_steps"]) for w in windows] == [(2, 2, {"machine-1": 2})]
    assert windows[0]["slowest"]["machine"] == "machine-1"


def test_a_bad_strategy_fails_the_training_with_its_reason():
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    result = subprocess.run([TORCH, "-c", "import partagpu.ddp as d; d.wrap(None, None, 'fp8')"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode != 0
    assert "unknown compression 'fp8'" in result.stderr


def test_link_timings_and_shape_are_what_the_planner_needs(tmp_path):
    worker = run_workers(tmp_path, "none", port=29657)[0]
    assert not list(tmp_path.glob("*metrics*")), "no report unless the coordinator asks for one"
    bandwidth, latency = worker["link"]
    assert bandwidth > 1e6 and 0 < latency < 0.1
    timing = worker["timing"]
    assert timing["forward_s"] > 0 and timing["backward_s"] > 0
    assert worker["shape"] == [(16 * 4 + 4) * 4, [[4, 16]]]


@pytest.mark.parametrize(("case", "port"), [("older", 29658), ("none", 29659), ("torn", 29660)])
def test_every_rank_loads_the_newest_checkpoint_any_rank_holds(tmp_path, case, port):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), OMP_NUM_THREADS="1", CKPT_ROOT=str(tmp_path),
               CKPT_CASE=case)
    torchrun = str(Path(TORCH).parent / "torchrun")
    result = subprocess.run(
        [torchrun, "--nnodes", "1", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port",
         str(port), str(REPO / "tests" / "checkpoint_worker.py")],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = [json.loads((tmp_path / f"result-{rank}.json").read_text()) for rank in (0, 1)]
    assert [r["loaded"] for r in results] == [[4.0] * 3, [4.0] * 3]
    # The step-5 checkpoint replaced rank 0's own (its machine's first process); rank 1 wrote none.
    assert results[0]["written_step"] == 5
    assert results[1]["written_step"] == 4
    # The index the service reads (src/core/src/job/checkpoint.rs) names the step-5 file.
    index = json.loads((tmp_path / "rank-0" / "partagpu-checkpoint.json").read_text())
    assert index == {"step": 5, "file": "partagpu-checkpoint.pt"}
    assert not (tmp_path / "rank-1" / "partagpu-checkpoint.json").exists()
    if case == "torn":
        assert "ignoring the unreadable checkpoint" in result.stdout
