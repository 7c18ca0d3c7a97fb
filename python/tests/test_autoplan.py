# SPDX-License-Identifier: GPL-3.0-or-later
"""distribute(nodes="auto")'s pieces without a lab: reading the probe run's file, the cache,
the chosen machines and the measured report."""

import json

import pytest

from partagpu import autoplan
from partagpu.planner import Link, ModelShape, Probe, StepTiming


def probe_file(folder, **overrides):
    data = {
        "gradient_bytes": 124_000_000,
        "matrices": [[64, 3]],
        "timings": [{"machine": f"node {i}", "forward_s": 0.4 / 3, "backward_s": 0.8 / 3} for i in range(4)],
        "link": {"bandwidth": 117.7e6, "latency_s": 1e-4},
    }
    data.update(overrides)
    (folder / autoplan.PROBE_FILE).write_text(json.dumps(data))


def test_node_ranks_become_machine_names(tmp_path):
    probe_file(tmp_path)
    found = autoplan.read_probe(tmp_path, ["lab-1", "lab-2", "lab-3", "lab-4"])
    assert [t.machine for t in found.timings] == ["lab-1", "lab-2", "lab-3", "lab-4"]
    assert found.shape == ModelShape(124_000_000, ((64, 3),))
    chosen = autoplan.choose(found)
    assert autoplan.chosen_machines(chosen.chosen) == ["lab-1", "lab-2", "lab-3", "lab-4"]
    assert chosen.chosen.strategy.compression == "fp16"


def test_a_script_that_does_not_use_the_helper_is_told_so(tmp_path):
    with pytest.raises(ValueError, match=r"partagpu\.ddp\.wrap\(\)"):
        autoplan.read_probe(tmp_path, ["lab-1"])


@pytest.mark.parametrize(
    "overrides",
    [{"timings": []}, {"link": {"bandwidth": 0}}, {"timings": [{"machine": "node 0"}]}, {"gradient_bytes": "x"}],
)
def test_a_damaged_probe_file_is_refused_with_a_reason(tmp_path, overrides):
    probe_file(tmp_path, **overrides)
    with pytest.raises(ValueError, match="probe"):
        autoplan.read_probe(tmp_path, ["lab-1"])


def test_the_cache_is_per_workspace_and_set_of_machines(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    found = Probe(ModelShape(1000), (StepTiming("b", 0.1, 0.2), StepTiming("a", 0.1, 0.2)), Link(1e8, 1e-4))
    autoplan.store_cached("sha-1", found)
    assert autoplan.load_cached("sha-1", ["a", "b"]) == found
    assert autoplan.load_cached("sha-1", ["a", "b", "c"]) is None
    assert autoplan.load_cached("sha-2", ["a", "b"]) is None
    (next((tmp_path / "partagpu" / "probes").iterdir())).write_text("{not json")
    assert autoplan.load_cached("sha-1", ["a", "b"]) is None


def test_the_report_compares_with_the_probes_single_machine_step(tmp_path):
    probe_file(tmp_path)
    found = autoplan.read_probe(tmp_path, ["lab-1", "lab-2", "lab-3", "lab-4"])
    chosen_plan = autoplan.choose(found)
    k = chosen_plan.chosen.strategy.accumulation
    (tmp_path / autoplan.METRICS_FILE).write_text(json.dumps({"median_sync_step_s": k * 0.5, "sync_steps": 3}))
    outcome = autoplan.measured(tmp_path, chosen_plan, found)
    assert outcome.speedup == pytest.approx(4 * 0.4 / 0.5)
    assert outcome.efficiency == pytest.approx(0.8)
    line = outcome.describe(chosen_plan, found)
    assert line.startswith("measured 3.2× on 4 machines (efficiency 80%; predicted ")
    assert "weak scaling" in line and "118 MB/s" in line


def test_no_metrics_file_means_no_claim(tmp_path):
    probe_file(tmp_path)
    found = autoplan.read_probe(tmp_path, ["lab-1"] * 4)
    assert autoplan.measured(tmp_path, autoplan.choose(found), found) is None


def test_the_report_names_the_machine_that_slows_the_steps(tmp_path):
    probe_file(tmp_path)
    names = ["lab-1", "lab-2", "lab-3", "lab-4"]
    found = autoplan.read_probe(tmp_path, names)
    chosen_plan = autoplan.choose(found)
    per_rank = [{"rank": r, "node": r, "forward_s": 0.1, "local_step_s": 0.3} for r in range(4)]
    per_rank[2]["local_step_s"] = 0.45
    (tmp_path / autoplan.METRICS_FILE).write_text(json.dumps({"median_sync_step_s": 4.0, "per_rank": per_rank}))
    outcome = autoplan.measured(tmp_path, chosen_plan, found, names)
    assert outcome.slowest == "lab-3 (compute of a micro-step 50% over the median)"
    assert outcome.describe(chosen_plan, found).endswith("; slowest machine: lab-3 (compute of a micro-step 50% over the median)")
    # Within 10 % of the median nobody is named; a damaged list is ignored.
    per_rank[2]["local_step_s"] = 0.32
    (tmp_path / autoplan.METRICS_FILE).write_text(json.dumps({"median_sync_step_s": 4.0, "per_rank": per_rank}))
    assert autoplan.measured(tmp_path, chosen_plan, found, names).slowest is None
    (tmp_path / autoplan.METRICS_FILE).write_text(json.dumps({"median_sync_step_s": 4.0, "per_rank": [{"node": "x"}, 3]}))
    assert autoplan.measured(tmp_path, chosen_plan, found, names).slowest is None


def test_the_training_prints_the_plan_and_its_measure_in_its_own_log(tmp_path):
    probe_file(tmp_path)
    found = autoplan.read_probe(tmp_path, ["lab-1", "lab-2", "lab-3", "lab-4"])
    chosen_plan = autoplan.choose(found)
    env = autoplan.plan_env(chosen_plan, found)
    assert env["PARTAGPU_PLAN"].startswith("predicted ")
    k = chosen_plan.chosen.strategy.accumulation
    line = autoplan.in_job_report(k * 0.5, 4, k, env)
    assert line.startswith("partagpu: measured 3.2× with 4 processes (efficiency 80%; predicted ")
    assert autoplan.in_job_report(1.0, 4, k, {}) is None
    assert autoplan.in_job_report(0.0, 4, k, env) is None
