# SPDX-License-Identifier: GPL-3.0-or-later
"""The report lines partagpu.ddp's rank 0 prints for the coordinator, and their summary."""

import json

import pytest

from partagpu import stragglers


def ranks(*local_steps, steps=None):
    """One entry per rank as gather() gives it; ``steps`` holds each rank's own work per step."""
    return [{"rank": i, "node": i, "machine": f"lab-{i + 1}", "forward_s": s / 3, "local_step_s": s,
             "steps": steps[i] if steps else []}
            for i, s in enumerate(local_steps)]


def micro(forward, backward, optimizer, synced):
    from types import SimpleNamespace

    return SimpleNamespace(forward_s=forward, backward_s=backward, optimizer_s=optimizer, synced=synced)


def test_a_window_names_the_slow_machine_by_its_name_not_its_rank():
    update = stragglers.window(ranks(1.0, 1.02, 1.3), step=20, step_s=1.4, world_size=3,
                               strategy="fp16+accumulate8")
    assert update == {"kind": "window", "step": 20, "step_s": 1.4, "world_size": 3,
                      "strategy": "fp16+accumulate8",
                      "slowest": {"machine": "lab-3", "excess_percent": 27,
                                  "compared": "compute of a micro-step"},
                      "compared_steps": 0, "slowed_steps": {}}
    even = stragglers.window(ranks(1.0, 1.05, 1.02), step=30, step_s=1.1, world_size=3, strategy="none")
    assert even["slowest"] is None
    nameless = [dict(r, machine="") for r in ranks(1.0, 1.0, 2.0)]
    assert stragglers.window(nameless, 1, 1.0, 3, "none")["slowest"]["machine"] == "node 2"


def test_a_rank_own_work_leaves_out_the_backward_that_waits_for_the_others():
    timings = [micro(0.1, 0.2, 0.0, False), micro(0.1, 0.9, 0.05, True),  # step 1 (k = 2)
               micro(0.2, 0.3, 0.0, False), micro(0.1, 0.5, 0.05, True)]  # step 2
    assert stragglers.step_work(timings) == [pytest.approx(0.45), pytest.approx(0.65)]
    assert stragglers.step_work(timings + [micro(0.1, 0.2, 0.0, False)]) == stragglers.step_work(timings)


def test_each_step_is_charged_to_the_machine_that_held_it_back():
    steps = [[1.0, 1.0, 1.0, 1.0, 9.0],   # lab-1 slows the last step only
             [1.0, 1.3, 1.0, 1.0, 1.0],   # lab-2 the second
             [2.0, 1.0, 1.5, 1.05, 1.0]]  # lab-3 the first and the third; 5 % is within the margin
    compared, counts = stragglers.slowed_steps(ranks(1.0, 1.0, 1.0, steps=steps))
    assert (compared, counts) == (5, {"lab-3": 2, "lab-2": 1, "lab-1": 1})
    # The lists line up from the end: a rank that kept fewer steps limits the comparison.
    steps[0] = steps[0][-2:]
    assert stragglers.slowed_steps(ranks(1.0, 1.0, 1.0, steps=steps)) == (2, {"lab-1": 1})
    update = stragglers.window(ranks(1.0, 1.0, 1.0, steps=steps), step=5, step_s=1.0, world_size=3,
                               strategy="none")
    assert (update["compared_steps"], update["slowed_steps"]) == (2, {"lab-1": 1})
    assert stragglers.slowed_steps(ranks(1.0, steps=[[1.0, 2.0]])) == (0, {}), "one rank: nobody to compare"
    assert stragglers.slowed_steps(ranks(1.0, 1.0)) == (0, {}), "an older helper sends no steps"


def test_ranks_of_one_machine_count_for_their_machine():
    entries = ranks(1.0, 1.0, 1.0, 1.0, steps=[[1.0, 1.0], [1.0, 1.0], [2.0, 1.0], [1.0, 2.0]])
    for entry in entries[2:]:
        entry["machine"] = "gpu-1"
    assert stragglers.slowed_steps(entries) == (2, {"gpu-1": 2})


def test_the_machines_named_in_one_window_are_bounded():
    many = 3 * stragglers.MOST_NAMED
    steps = [[2.0 if step == rank else 1.0 for step in range(many)] for rank in range(many)]
    steps[0][0], steps[-1][0] = 1.0, 2.0  # the last machine by name slows two steps
    compared, counts = stragglers.slowed_steps(ranks(*[1.0] * many, steps=steps))
    assert compared == many and len(counts) == stragglers.MOST_NAMED
    assert counts[f"lab-{many}"] == 2, "the most slowed are kept, whatever their name"


def test_report_lines_are_printed_only_inside_a_training(capsys, monkeypatch):
    monkeypatch.delenv(stragglers.MACHINE_ENV, raising=False)
    stragglers.report({"kind": "plan", "text": "predicted 2.7×"})
    assert capsys.readouterr().out == ""
    monkeypatch.setenv(stragglers.MACHINE_ENV, "lab-1")
    stragglers.report({"kind": "plan", "text": "predicted 2.7×"})
    out = capsys.readouterr().out
    assert out.startswith(stragglers.REPORT_PREFIX) and out.endswith("\n")
    assert json.loads(out[len(stragglers.REPORT_PREFIX):]) == {"kind": "plan", "text": "predicted 2.7×"}


def test_the_summary_names_a_machine_only_when_it_slowed_most_steps():
    assert stragglers.steps_line(None) is None
    assert stragglers.steps_line({"windows": 3, "slowest_counts": {"lab-3": 2}}) is None, "a record from before"
    training = {"windows": 12, "compared_steps": 120, "slowed_steps": {"lab-2": 4, "lab-3": 110}}
    assert stragglers.steps_line(training) == "slowest machine: lab-3 (slowed 110 of 120 steps)"
    one = {"windows": 1, "compared_steps": 1, "slowed_steps": {"lab-2": 1}}
    assert stragglers.steps_line(one) == "slowest machine: lab-2 (slowed 1 of 1 step)"
    # Even machines: every step is a little late somewhere, and nobody is called the slowest.
    even = {"windows": 2, "compared_steps": 20, "slowed_steps": {"lab-1": 5, "lab-2": 6, "lab-3": 5}}
    assert stragglers.steps_line(even) == "no machine slowed most of the 20 steps compared (lab-2 6, lab-1 5, lab-3 5)"
    half = {"windows": 1, "compared_steps": 10, "slowed_steps": {"lab-3": 5}}
    assert stragglers.steps_line(half) == "no machine slowed most of the 10 steps compared (lab-3 5)"
    kept_up = {"windows": 1, "compared_steps": 10, "slowed_steps": {}}
    assert stragglers.steps_line(kept_up) == "no machine slowed any of the 10 steps compared"
    assert stragglers.steps_line(dict(kept_up, compared_steps=1)) == "no machine slowed the one step compared"


def test_a_summary_tells_machines_that_left_from_those_that_came_back():
    from partagpu.jobs import Job

    def part(name, rank, state):
        return {"job": f"{name}-{state}", "node_name": name, "node_rank": rank, "processes": 1, "state": state}

    record = {"state": "succeeded", "parts": [part("lab-1", 0, "succeeded"), part("lab-2", 1, "preempted"),
                                              part("lab-3", 2, "lost"), part("lab-2", 1, "succeeded")],
              "training": {"windows": 3, "compared_steps": 30, "slowed_steps": {"lab-3": 24}}}
    info = Job("h", record, transport=object()).summary()
    assert info["machines"] == ["lab-1", "lab-2", "lab-3"] and info["processes"] == 3
    assert info["lost"] == ["lab-3"] and info["rejoined"] == ["lab-2"]
    assert stragglers.steps_line(info["training"]) == "slowest machine: lab-3 (slowed 24 of 30 steps)"


def test_a_summary_of_a_training_that_started_again_gives_each_machine_its_newest_part():
    from partagpu.jobs import Job

    parts = [{"job": "a", "node_name": "lab-2", "node_rank": 0, "processes": 1, "state": "lost"},
             {"job": "b", "node_name": "lab-3", "node_rank": 1, "processes": 1, "state": "cancelled"},
             {"job": "c", "node_name": "lab-3", "node_rank": 0, "processes": 1, "state": "succeeded"}]
    info = Job("h", {"state": "succeeded", "parts": parts}, transport=object()).summary()
    assert info["machines"] == ["lab-2", "lab-3"] and info["ranks"] == {"lab-2": 0, "lab-3": 0}
    assert info["lost"] == ["lab-2"] and info["rejoined"] == []
