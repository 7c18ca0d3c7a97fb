# SPDX-License-Identifier: GPL-3.0-or-later
"""What a user waiting on a job sees besides its output: where it runs, in what state, for
how long.

In a terminal each change of state is one line on stderr ("job … running on lab-1, lab-2"),
so it never tears the output lines the job prints on stdout. In a Jupyter kernel the same
facts are one status line, updated in place (an IPython display with a ``display_id``), so a
long training shows a live clock without filling the cell.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from partagpu.jobs import TERMINAL_STATES

# A notebook's status line is redrawn at most this often (each redraw is a kernel message).
REDRAW_EVERY_S = 1.0


class DisplayHandle(Protocol):
    def update(self, obj: Any, **kwargs: Any) -> None: ...


def in_notebook() -> bool:
    """True inside a Jupyter kernel (not in a terminal IPython, where lines work better)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _ipython_display(bundle: dict[str, str]) -> DisplayHandle:
    from IPython.display import display

    handle = display(bundle, raw=True, display_id=True)
    assert handle is not None  # display_id=True always returns a handle
    return handle


def _elapsed(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{seconds:.1f} s"


def short_handle(handle: str) -> str:
    """The part of a handle (``<submitter>-<job id>-<attempt>``) that tells a user's jobs
    apart: the job id's first 8 hex digits, as ``partagpuctl`` shows them."""
    parts = handle.split("-")
    return parts[1][:8] if len(parts) == 3 and parts[1] else handle[:12]


def status_text(summary: dict[str, Any]) -> str:
    """One line: ``job 1a2b3c4d running on lab-1, lab-2 (2 processes) · 12.3 s``."""
    processes = summary.get("processes") or 1
    where = ", ".join(summary.get("machines") or ["?"])
    text = f"job {short_handle(str(summary.get('job', '?')))} {summary.get('state', '?')} on {where}"
    if processes > 1:
        text += f" ({processes} processes)"
    took = _elapsed(summary.get("wall_s"))
    if took:
        text += f" · {took}"
    if summary.get("reason"):
        text += f": {summary['reason']}"
    return text


class Progress:
    """Shows a job's state while :func:`partagpu.distribute.follow` streams its output.

    ``notebook`` None detects a Jupyter kernel; ``display`` and ``clock`` are for tests.
    """

    def __init__(self, *, notebook: bool | None = None, stream: TextIO | None = None,
                 display: Callable[[dict[str, str]], DisplayHandle] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._notebook = in_notebook() if notebook is None else notebook
        self._stream = stream
        self._display = display or _ipython_display
        self._clock = clock
        self._handle: DisplayHandle | None = None
        self._last_state: str | None = None
        self._last_drawn = float("-inf")

    def update(self, summary: dict[str, Any], *, final: bool = False) -> None:
        """Shows ``summary`` (:meth:`partagpu.Job.summary`) if something changed that the
        user should see now; ``final`` always shows it."""
        state = summary.get("state")
        changed = state != self._last_state
        self._last_state = state
        if not self._notebook:
            # The end is follow()'s own line, with the artifacts (an end seen while output
            # still streams is not shown twice).
            if changed and not final and state not in TERMINAL_STATES:
                stream = self._stream or sys.stderr
                print(f"partagpu: {status_text(summary)}", file=stream, flush=True)
            return
        now = self._clock()
        if not (changed or final or now - self._last_drawn >= REDRAW_EVERY_S):
            return
        self._last_drawn = now
        text = status_text(summary)
        bundle = {"text/plain": text, "text/html": f"<code>{_html_escape(text)}</code>"}
        if self._handle is None:
            self._handle = self._display(bundle)
        else:
            self._handle.update(bundle, raw=True)


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
