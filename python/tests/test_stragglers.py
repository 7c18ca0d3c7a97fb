# SPDX-License-Identifier: GPL-3.0-or-later
"""The report lines partagpu.ddp's rank 0 prints for the coordinator, and their summary."""

import json

from partagpu import stragglers


def ranks(*local_steps):
    return [{"rank": i, "node": i, "machine": f"lab-{i + 1}", "forward_s": s / 3, "local_step_s": s}
            for i, s in enumerate(local_steps)]


def test_a_window_names_the_slow_machine_by_its_name_not_its_rank():
    update = stragglers.window(ranks(1.0, 1.02, 1.3), step=20, step_s=1.4, world_size=3,
                               strategy="fp16+accumulate8")
    assert update == {"kind": "window", "step": 20, "step_s": 1.4, "world_size": 3,
                      "strategy": "fp16+accumulate8",
                      "slowest": {"machine": "lab-3", "excess_percent": 27,
                                  "compared": "compute of a micro-step"}}
    even = stragglers.window(ranks(1.0, 1.05, 1.02), step=30, step_s=1.1, world_size=3, strategy="none")
    assert even["slowest"] is None
    nameless = [dict(r, machine="") for r in ranks(1.0, 1.0, 2.0)]
    assert stragglers.window(nameless, 1, 1.0, 3, "none")["slowest"]["machine"] == "node 2"


def test_report_lines_are_printed_only_inside_a_training(capsys, monkeypatch):
    monkeypatch.delenv(stragglers.MACHINE_ENV, raising=False)
    stragglers.report({"kind": "plan", "text": "predicted 2.7×"})
    assert capsys.readouterr().out == ""
    monkeypatch.setenv(stragglers.MACHINE_ENV, "lab-1")
    stragglers.report({"kind": "plan", "text": "predicted 2.7×"})
    out = capsys.readouterr().out
    assert out.startswith(stragglers.REPORT_PREFIX) and out.endswith("\n")
    assert json.loads(out[len(stragglers.REPORT_PREFIX):]) == {"kind": "plan", "text": "predicted 2.7×"}


def test_the_usual_straggler_is_the_most_often_slowest():
    assert stragglers.usual_straggler(None) is None
    assert stragglers.usual_straggler({"windows": 4, "slowest_counts": {}}) is None
    training = {"windows": 12, "slowest_counts": {"lab-2": 1, "lab-3": 11}}
    assert stragglers.usual_straggler(training) == "lab-3 (slowest in 11 of 12 step reports)"
    tie = {"windows": 1, "slowest_counts": {"lab-3": 1, "lab-2": 1}}
    assert stragglers.usual_straggler(tie) == "lab-2 (slowest in 1 of 1 step report)"


def test_a_summary_tells_machines_that_left_from_those_that_came_back():
    from partagpu.jobs import Job

    def part(name, rank, state):
        return {"job": f"{name}-{state}", "node_name": name, "node_rank": rank, "processes": 1, "state": state}

    record = {"state": "succeeded", "parts": [part("lab-1", 0, "succeeded"), part("lab-2", 1, "preempted"),
                                              part("lab-3", 2, "lost"), part("lab-2", 1, "succeeded")],
              "training": {"windows": 3, "slowest_counts": {"lab-3": 2}}}
    info = Job("h", record, transport=object()).summary()
    assert info["machines"] == ["lab-1", "lab-2", "lab-3"] and info["processes"] == 3
    assert info["lost"] == ["lab-3"] and info["rejoined"] == ["lab-2"]
    assert stragglers.usual_straggler(info["training"]) == "lab-3 (slowest in 2 of 3 step reports)"


def test_a_summary_of_a_training_that_started_again_gives_each_machine_its_newest_part():
    from partagpu.jobs import Job

    parts = [{"job": "a", "node_name": "lab-2", "node_rank": 0, "processes": 1, "state": "lost"},
             {"job": "b", "node_name": "lab-3", "node_rank": 1, "processes": 1, "state": "cancelled"},
             {"job": "c", "node_name": "lab-3", "node_rank": 0, "processes": 1, "state": "succeeded"}]
    info = Job("h", {"state": "succeeded", "parts": parts}, transport=object()).summary()
    assert info["machines"] == ["lab-2", "lab-3"] and info["ranks"] == {"lab-2": 0, "lab-3": 0}
    assert info["lost"] == ["lab-2"] and info["rejoined"] == []
