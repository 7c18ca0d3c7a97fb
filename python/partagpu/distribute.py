# SPDX-License-Identifier: GPL-3.0-or-later
"""Sending work to the room: :func:`distribute` runs a PyTorch DDP training across machines
(``Jobs1.Distribute``: the service puts torchrun in front and chooses them), :func:`run`
runs one command on one machine (``Jobs1.Submit``). Both pack the workspace, and by default
stream the output, bring the artifacts back and raise :class:`JobFailedError` on failure.

Without a local partagpud, :func:`distribute` sends the training to a member of the room
over PGR/1 instead (``room=``, a :class:`partagpu.remote.Room`; made from
``$PARTAGPU_CODE`` when that is set and no partagpud answers on D-Bus). The :class:`Job` it
returns works the same either way.

Status lines go to stderr, the job's output to stdout (as ``partagpuctl run`` does).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partagpu import stragglers
from partagpu.dbus_client import JOBS_INTERFACE, ServiceClient, local_service_running
from partagpu.errors import JobFailedError, PartaGPUError, WorkspaceError
from partagpu.jobs import TERMINAL_STATES, Job
from partagpu.peers import format_bytes
from partagpu.progress import Progress
from partagpu.resume import ResumeFrom
from partagpu.resume import resume_from as resume_checkpoint
from partagpu.workspace import pack

if TYPE_CHECKING:
    from partagpu.remote import Room

SUBMIT_TIMEOUT_S = 300.0  # sending a 16 MiB workspace to every member takes a while
STOP_GRACE_S = 30.0  # how long to keep reading after a cancel before giving up
PROGRESS_EVERY_S = 1.0  # how often the job's state is asked for while its output streams
DEFAULT_TIME_LIMIT_S = 86400


def build_spec(argv: Sequence[str], workspace: tuple[bytes, int, str], *,
               runtime: str | None = None, env: Mapping[str, str] | None = None,
               gpus: int = 0, artifacts: Iterable[str] = (),
               time_limit_s: int = DEFAULT_TIME_LIMIT_S) -> dict[str, Any]:
    """The JobSpec (docs/jobs.md) for ``argv`` and a packed ``workspace``; a fresh random
    id, attempt 0, the submitter left for the service to fill in."""
    data, _, sha256 = workspace
    if not argv:
        raise ValueError("a job needs a command")
    return {"id": secrets.token_hex(16), "attempt": 0, "submitter": "0" * 32,
            "argv": [str(a) for a in argv], "env": dict(env or {}), "runtime": runtime,
            "workspace_bytes": len(data), "workspace_sha256": sha256,
            "resources": {"cpu_percent": 0, "ram_bytes": 0, "gpus": int(gpus)},
            "artifacts": list(artifacts), "network": {"mode": "none"},
            "time_limit_s": int(time_limit_s)}


def nodes_argument(nodes: None | int | str | Sequence[str]) -> str:
    """``nodes`` as ``Distribute`` takes it: "" (every eligible machine), "3", "a,b"."""
    if nodes is None:
        return ""
    if isinstance(nodes, bool) or (isinstance(nodes, int) and nodes < 1):
        raise ValueError("nodes is a number of machines (1 or more), a list of names, or None")
    if isinstance(nodes, int):
        return str(nodes)
    names = [nodes] if isinstance(nodes, str) else list(nodes)
    if not names or any(not n or "," in n for n in names):
        raise ValueError("nodes must be names or node ids, none empty or with a comma")
    return ",".join(names)


def script_argv(script: str | os.PathLike[str], workspace: Path, files: Iterable[str]) -> str:
    """The script's path inside ``workspace`` with ``/`` (what torchrun is given); a relative
    ``script`` is looked up from the current directory, then from the workspace."""
    candidate = Path(script)
    if not candidate.is_absolute() and not candidate.exists():
        candidate = workspace / candidate
    root = workspace.resolve()
    try:
        relative = candidate.resolve().relative_to(root).as_posix()
    except ValueError:
        raise WorkspaceError(f"the script {str(script)!r} is not inside the workspace {str(root)!r}: "
                             "only the workspace is sent; move it there or pass workspace=") from None
    if relative not in set(files):
        raise WorkspaceError(f"the script {relative!r} is not a file the workspace sends "
                             "(missing, a directory, or under a skipped folder)")
    return relative


def _packed_names(data: bytes) -> list[str]:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        return [member.name for member in archive.getmembers() if member.isfile()]


def _say(text: str) -> None:
    print(f"partagpu: {text}", file=sys.stderr, flush=True)


def _send(method: str, spec: dict[str, Any], data: bytes, target: str, timeout: float,
          resume: ResumeFrom | None = None) -> Job:
    if resume is None:
        with ServiceClient(min(timeout, 30.0)) as client:
            (handle,) = client.call(JOBS_INTERFACE, method, "says",
                                    (json.dumps(spec), data, target), timeout=timeout)
        return Job(handle)
    # The service reads the checkpoint through this open file, with the caller's rights.
    with ServiceClient(min(timeout, 30.0), enable_fds=True) as client, open(resume.path, "rb") as file:
        (handle,) = client.call(JOBS_INTERFACE, f"{method}Resuming", "saysh",
                                (json.dumps(spec), data, target, file), timeout=timeout)
    return Job(handle)


def _room_for(room: Room | None) -> Room | None:
    """Where to send without the local partagpud: ``room``, else a Room made from
    ``$PARTAGPU_CODE`` when it is set and no partagpud runs here; None: ask partagpud."""
    if room is not None:
        return room
    if not os.environ.get("PARTAGPU_CODE", "").strip() or local_service_running():
        return None
    from partagpu.remote import Room

    return Room.from_environment()


def _stream(job: Job, deadline: float | None, backlog: list[str], progress: Progress) -> bool:
    """Prints the output until the log is complete; False if ``deadline`` passed first.
    Lines read but not printed yet (a Ctrl+C while printing) wait in ``backlog``. The state
    is looked at about once a second for ``progress``."""
    looked = float("-inf")
    while True:
        if time.monotonic() - looked >= PROGRESS_EVERY_S:
            looked = time.monotonic()
            job.refresh()
            progress.update(job.summary())
        lines, complete = job.read_lines() if not backlog else ([], False)
        backlog.extend(lines)
        printed = bool(backlog)
        while backlog:
            sys.stdout.write(backlog.pop(0))
        if printed:
            sys.stdout.flush()
        if complete:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        if not printed:
            time.sleep(0.25)


def follow(job: Job, timeout: float | None = None,
           output: str | Path | None = ".") -> dict[str, Any]:
    """Streams the job's output to stdout until it ends, fetches its artifacts into
    ``output`` (None: not fetched) and returns its record.

    Raises :class:`JobFailedError` if it did not succeed. Ctrl+C cancels it, keeps reading
    until it ended (a second Ctrl+C leaves at once) and re-raises KeyboardInterrupt;
    after ``timeout`` seconds it is cancelled the same way and TimeoutError is raised.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    backlog: list[str] = []
    progress = Progress()
    try:
        finished = _stream(job, deadline, backlog, progress)
    except KeyboardInterrupt:
        _say(f"cancelling job {job.handle} (Ctrl+C again to leave at once)")
        job.cancel()
        _stream(job, time.monotonic() + STOP_GRACE_S, backlog, progress)
        raise
    if not finished:
        _say(f"job {job.handle} ran past the timeout of {timeout:g} s: cancelling it")
        job.cancel()
        _stream(job, time.monotonic() + STOP_GRACE_S, backlog, progress)
        raise TimeoutError(f"job {job.handle} did not end within {timeout:g} s and was cancelled")
    record = job.refresh()
    for _ in range(40):  # the log completes as the end is journalled; the state follows
        if record.get("state") in TERMINAL_STATES:
            break
        time.sleep(0.25)
        record = job.refresh()
    info = job.summary()
    progress.update(info, final=True)
    where = ", ".join(info["machines"])
    if info.get("lost"):
        where += f" ({', '.join(info['lost'])} lost on the way)"
    if info.get("rejoined"):
        where += f" ({', '.join(info['rejoined'])} left and came back)"
    took = "" if info["wall_s"] is None else f" in {info['wall_s']:.1f} s"
    if record.get("state") != "succeeded":
        raise JobFailedError(f"job {job.handle} {record.get('state')} on {where}{took}: "
                             f"{record.get('reason') or 'no reason given'}{_kept_checkpoint(job, output)}", record)
    saved = job.fetch(output) if output is not None else []
    shown = "; ".join(f"{a['name']} ({format_bytes(int(a['size']))}) saved to {a['path']}"
                      for a in job.artifacts if "path" in a)
    _say(f"job {job.handle} succeeded on {where}{took}" + (f"; {shown}" if saved else ""))
    steps = stragglers.steps_line(info.get("training"))
    if steps:
        _say(steps)
    return record


def _kept_checkpoint(job: Job, output: str | Path | None) -> str:
    """A training that did not succeed may leave its last checkpoint (the service kept a copy
    of the newest one): it is fetched into ``output``, and the sentence says where."""
    if output is None or not job.artifacts:
        return ""
    try:
        job.fetch(output)
    except PartaGPUError as error:
        return f" (its last checkpoint could not be fetched: {error})"
    kept = [a for a in job.artifacts if "path" in a]
    if not kept:
        return ""
    path = kept[0]["path"]
    return f"; its last checkpoint was saved to {path}: go on from there with resume_from (--resume-from {path})"


def distribute(script: str | os.PathLike[str], *args: str,
               nodes: None | int | str | Sequence[str] = None,
               gpus_per_node: str | int = "auto", workspace: str | os.PathLike[str] = ".",
               artifacts: Iterable[str] = ("model.pt",), runtime: str | None = None,
               env: Mapping[str, str] | None = None, wait: bool = True,
               timeout: float | None = None, output: str | os.PathLike[str] | None = None,
               time_limit_s: int = DEFAULT_TIME_LIMIT_S, room: Room | None = None,
               artifacts_from: str = "rank0", min_nodes: int | None = None,
               resume_from: str | os.PathLike[str] | None = None) -> Job:
    """Runs ``script`` (inside ``workspace``) with ``args`` as one DDP training across the
    room's machines: ``nodes`` None for every eligible one, a number, or names.

    ``nodes="auto"``: a short probe run first times the script on every eligible machine
    and measures the network; the planner then chooses the machines and the communication
    strategy, prints its prediction before launch and, after the training, the speed-up it
    measured (:mod:`partagpu.autoplan`; the script trains through :func:`partagpu.ddp.wrap`).
    The returned Job then has ``plan`` (and ``outcome`` once measured).

    ``gpus_per_node`` "auto" uses the GPUs each machine lends (or one CPU process). With
    ``wait`` (default) it streams the merged log, saves the artifacts (rank 0's) into
    ``output`` (default: the workspace) and returns once the training ended, see
    :func:`follow`; else it returns the :class:`Job` at once. ``artifacts_from="all"``
    brings back every rank's files too, node rank N's under ``rank-N/``.

    ``min_nodes`` makes the training elastic: when a machine other than the first is lost,
    it goes on with the others (at least ``min_nodes``), whose workers restart from their
    last :mod:`partagpu.checkpoint`.

    ``resume_from`` names a checkpoint to go on from (the one a failed training left, say):
    it is sent beside the workspace, so it may be larger than a workspace (up to 2 GiB), and
    every machine finds it at the top of its workspace under its file name, where
    :func:`partagpu.checkpoint.load` reads it.

    ``room`` (a :class:`partagpu.remote.Room`) sends it over PGR/1 to a member of that room,
    which coordinates it, instead of asking the local partagpud; see :func:`_room_for` for
    when that happens without ``room``.
    """
    root = Path(workspace)
    packed = pack(root)
    argv = [script_argv(script, root, _packed_names(packed[0])), *map(str, args)]
    gpus = 0 if gpus_per_node == "auto" else int(gpus_per_node)
    if artifacts_from not in ("rank0", "all"):
        raise ValueError('artifacts_from is "rank0" (rank 0\'s files) or "all" (every rank\'s)')
    spec = build_spec(argv, packed, runtime=runtime, env=env, gpus=gpus, artifacts=artifacts,
                      time_limit_s=time_limit_s)
    if artifacts_from == "all":
        spec["artifacts_from_all_ranks"] = True
    if min_nodes is not None:
        if isinstance(min_nodes, bool) or not isinstance(min_nodes, int) or min_nodes < 1:
            raise ValueError("min_nodes is the number of machines (1 or more) an elastic training goes on with")
        spec["min_nodes"] = min_nodes
    resume = None if resume_from is None else resume_checkpoint(resume_from)
    _say(f"sending the workspace: {packed[1]} file{'' if packed[1] == 1 else 's'}, {format_bytes(len(packed[0]))}"
         + ("" if resume is None else f", and the checkpoint {resume.name} ({format_bytes(resume.size)})"))
    remote = _room_for(room)
    if nodes == "auto":
        return _distribute_planned(spec, packed, remote, (wait, timeout, root if output is None else Path(output)),
                                   resume)
    job = _launch(spec, packed[0], nodes_argument(nodes), remote, resume)
    if wait:
        follow(job, timeout, root if output is None else output)
    return job


def _launch(spec: dict[str, Any], data: bytes, target: str, remote: Room | None,
            resume: ResumeFrom | None = None) -> Job:
    if resume is not None:
        spec = dict(spec, resume_checkpoint=resume.spec_field)
    if remote is None:
        return _send("Distribute", spec, data, target, SUBMIT_TIMEOUT_S, resume)
    job = remote.distribute(spec, data, target, resume)
    _say(f"{remote.describe()} coordinates job {job.handle}")
    return job


def _online_machines() -> list[str] | None:
    """Names of the room's online machines as the local service sees them (the cache key)."""
    from partagpu.fleet import discover

    try:
        return sorted(p.name for p in discover() if p.online or p.local)
    except Exception:  # noqa: BLE001 (no cache then; the probe tells the rest)
        return None


def _distribute_planned(spec: dict[str, Any], packed: tuple[bytes, int, str], remote: Room | None,
                        following: tuple[bool, float | None, Path], resume: ResumeFrom | None) -> Job:
    """nodes="auto": probe (or the cached probe), plan, say the prediction, then train (the
    probe times the script without the checkpoint ``resume``, which only the training gets)."""
    wait, timeout, output = following
    from partagpu import autoplan

    online = _online_machines() if remote is None else None
    found = autoplan.load_cached(packed[2], online) if online else None
    if found is None:
        _say("probing: timing the script on every machine and measuring the network")
        probe_spec = dict(spec, id=secrets.token_hex(16), env=autoplan.probe_env(spec["env"]),
                          artifacts=[autoplan.PROBE_FILE], time_limit_s=autoplan.PROBE_TIME_LIMIT_S)
        probe_spec.pop("artifacts_from_all_ranks", None)
        probe_job = _launch(probe_spec, packed[0], "", remote)
        with tempfile.TemporaryDirectory(prefix="partagpu-probe-") as folder:
            follow(probe_job, autoplan.PROBE_TIME_LIMIT_S, folder)
            found = autoplan.read_probe(Path(folder), probe_job.summary()["machines"])
        autoplan.store_cached(packed[2], found)
    else:
        _say("using the probe of this workspace on these machines from the cache")
    chosen_plan = autoplan.choose(found)
    _say(chosen_plan.summary())
    for warning in chosen_plan.warnings:
        _say(f"warning: {warning}")
    chosen = chosen_plan.chosen
    env = dict(spec["env"], **autoplan.plan_env(chosen_plan, found))
    artifacts = list(dict.fromkeys([*spec["artifacts"], autoplan.METRICS_FILE]))
    job = _launch(dict(spec, env=env, artifacts=artifacts), packed[0], ",".join(autoplan.chosen_machines(chosen)),
                  remote, resume)
    job.plan = chosen_plan
    if wait:
        follow(job, timeout, output)
        outcome = autoplan.measured(output, chosen_plan, found, job.summary()["machines"])
        if outcome is None:
            _say(f"no {autoplan.METRICS_FILE} came back: the speed-up was not measured")
        else:
            _say(outcome.describe(chosen_plan, found))
            job.outcome = outcome
    return job


def run(command: Sequence[str], node: str | None = None,
        workspace: str | os.PathLike[str] | None = None, artifacts: Iterable[str] = (), *,
        runtime: str | None = None, env: Mapping[str, str] | None = None, gpus: int = 0,
        wait: bool = True, timeout: float | None = None,
        output: str | os.PathLike[str] | None = None,
        time_limit_s: int = DEFAULT_TIME_LIMIT_S) -> Job:
    """Runs ``command`` as one job on ``node`` (None: this machine) with ``workspace`` (None:
    an empty one); ``wait``, ``timeout`` and ``output`` (default: the workspace, else the
    current directory) as :func:`distribute`."""
    if isinstance(command, str):
        raise TypeError("command is a list of arguments, e.g. ['python3', 'job.py']")
    root = None if workspace is None else Path(workspace)
    packed = pack(root) if root is not None else _empty_workspace()
    spec = build_spec(command, packed, runtime=runtime, env=env, gpus=gpus,
                      artifacts=artifacts, time_limit_s=time_limit_s)
    job = _send("Submit", spec, packed[0], node or "", SUBMIT_TIMEOUT_S)
    if wait:
        follow(job, timeout, output if output is not None else root or ".")
    return job


def _empty_workspace() -> tuple[bytes, int, str]:
    import hashlib
    import io
    import tarfile

    buffer = io.BytesIO()
    tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT).close()
    data = buffer.getvalue()
    return data, 0, hashlib.sha256(data).hexdigest()


class _CallableModule(type(sys)):
    """``partagpu.distribute`` is both this module and the function: importing the module
    (``from partagpu.distribute import follow``) makes the package attribute the module, so
    the module calls the function."""

    def __call__(self, script: str | os.PathLike[str], *args: str, **options: Any) -> Job:
        return distribute(script, *args, **options)


sys.modules[__name__].__class__ = _CallableModule
