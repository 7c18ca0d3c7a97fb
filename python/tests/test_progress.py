# SPDX-License-Identifier: GPL-3.0-or-later
"""The progress shown while a job runs: lines on state changes in a terminal, one status line
redrawn in place in a notebook."""

import io

from partagpu.progress import REDRAW_EVERY_S, Progress, in_notebook, status_text


def summary(state, wall_s=None, **extra):
    return {"job": "0123456789ab-fedcba9876543210-0", "machines": ["lab-1", "lab-2", "lab-3"], "processes": 3,
            "state": state, "wall_s": wall_s, "reason": None, **extra}


class FakeHandle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, obj, **kwargs):
        assert kwargs == {"raw": True}
        self.shown.append(("update", obj["text/plain"]))


def test_the_status_line_says_where_what_and_how_long():
    assert status_text(summary("running", 12.34)) == \
        "job fedcba98 running on lab-1, lab-2, lab-3 (3 processes) · 12.3 s"
    assert status_text(summary("failed", 125, reason="lab-3 (node 2) vanished")).endswith(
        "· 2 min 05 s: lab-3 (node 2) vanished")
    assert "processes" not in status_text({"job": "x", "machines": ["lab-2"], "processes": 1,
                                           "state": "queued"})


def test_a_terminal_gets_one_line_per_change_of_state_and_never_the_final_one():
    stream = io.StringIO()
    progress = Progress(notebook=False, stream=stream)
    for state in ("queued", "running", "running", "running", "paused", "running", "succeeded"):
        progress.update(summary(state, 1.0))
    progress.update(summary("succeeded", 2.0), final=True)
    lines = stream.getvalue().splitlines()
    assert [line.split()[3] for line in lines] == ["queued", "running", "paused", "running"]
    assert all(line.startswith("partagpu: job fedcba98 ") for line in lines)


def test_a_notebook_gets_one_display_redrawn_at_most_once_a_second_and_on_changes():
    shown, now = [], [0.0]

    def display(bundle):
        assert "<code>" in bundle["text/html"] and "&lt;" not in bundle["text/plain"]
        shown.append(("display", bundle["text/plain"]))
        return FakeHandle(shown)

    progress = Progress(notebook=True, display=display, clock=lambda: now[0])
    progress.update(summary("running", 0.0))
    for step in range(1, 10):  # 0.9 s of updates every 0.1 s: no redraw
        now[0] = step * 0.1
        progress.update(summary("running", now[0]))
    now[0] = REDRAW_EVERY_S + 0.01
    progress.update(summary("running", now[0]))
    now[0] += 0.1
    progress.update(summary("succeeded", now[0]), final=True)
    assert [kind for kind, _ in shown] == ["display", "update", "update"]
    assert shown[-1][1].startswith("job fedcba98 succeeded on lab-1") and "1.1 s" in shown[-1][1]


def test_outside_a_kernel_there_is_no_notebook():
    assert in_notebook() is False
