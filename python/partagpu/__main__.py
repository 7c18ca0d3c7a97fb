# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m partagpu``: the command line of the Python package.

* ``peers [--json] [--timeout S]``: the machines of the room as the local partagpud sees
  them, as a table or as one JSON document (the shape of ``partagpuctl peers --json``).
* ``run [--nodes N|NAME,NAME|auto] [--min-nodes N] [--resume-from FILE] [--workspace DIR]
  [--artifact PAT]... [--output DIR] [--peer HOST[:PORT]] [--room LABEL|ID] [--epoch N] SCRIPT [ARGS...]``: one distributed
  training (``partagpu.distribute``), its output streamed. ``--peer``/``--room`` send it
  over PGR/1 to a member of the room instead of the local partagpud; the room code is read
  from ``$PARTAGPU_CODE`` only (an argument would show in ``ps`` and the shell history).
* ``jobs [--json]``: the jobs the local partagpud knows.

(``python -m partagpu.pgr`` is the separate PGR/1 test peer.) Exit status: 0 on success,
1 on any error, with one line on stderr saying what went wrong, 130 after Ctrl+C.
"""

from __future__ import annotations

import argparse
import os
import json
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from partagpu.errors import PartaGPUError
from partagpu.fleet import Fleet, read_fleet
from partagpu.peers import Peer, format_bytes, plural

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130

TABLE_COLUMNS = ("NAME", "STATE", "CPU", "RAM", "GPU", "JOBS", "LENDS", "ADDRESS", "ONLINE",
                 "RUNTIMES")


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        # One exit status for every failure, usage mistakes included (argparse uses 2).
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("a timeout is a number of seconds, above 0 and at most 3600")
    return value


def _ago(moment: datetime, now: datetime) -> str:
    seconds = max(int((now - moment).total_seconds()), 0)
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


def _online(peer: Peer, now: datetime) -> str:
    if peer.local or peer.online:
        return "yes"
    if peer.last_seen.timestamp() <= 0:
        return "no, never seen"
    return f"no, seen {_ago(peer.last_seen, now)}"


def _gpu_summary(peer: Peer) -> str:
    if not peer.gpus:
        return "none" if peer.gpu_status == "available" else "unavailable"
    busy = sum(gpu.utilization_percent for gpu in peer.gpus) / len(peer.gpus)
    return f"{plural(len(peer.gpus), 'GPU')} {busy:.0f}%"


def _memory_summary(peer: Peer) -> str:
    total = peer.memory_total_bytes
    if total == 0:
        return "-"
    used = max(total - peer.memory_available_bytes, 0)
    return f"{format_bytes(total)} {100 * used / total:.0f}%"


def _runtimes_summary(peer: Peer) -> str:
    # torch's version tells runtimes apart at a glance; --json has every version.
    cells = [f"{r.name} (torch {r.torch})" if r.torch is not None else f"{r.name} (Python {r.python})"
             for r in peer.runtimes]
    return " · ".join(cells) or "none"


def table_row(peer: Peer, now: datetime) -> tuple[str, ...]:
    """One line of the table: sizes with how busy they are, what the machine lends."""
    return (
        f"{peer.name or peer.node_id} (this machine)" if peer.local else peer.name or peer.node_id,
        peer.state,
        f"{plural(peer.cpu_cores, 'CPU')} {peer.cpu_usage_percent:.0f}%",
        _memory_summary(peer),
        _gpu_summary(peer),
        str(peer.jobs_running) if peer.updated is not None else "-",
        peer.limits.describe(),
        peer.address or "-",
        _online(peer, now),
        _runtimes_summary(peer),
    )


def format_fleet(fleet: Fleet, now: datetime) -> str:
    """The human output of ``peers``: a header, the table, then what is not a member."""
    if fleet.room is None:
        lines = ["Not in a room: only this machine is listed."]
    else:
        label = f"{fleet.room.label!r} " if fleet.room.label else ""
        lines = [f"Room {label}({fleet.room.room_id}), {plural(len(fleet.members), 'machine')}"]
    rows = [TABLE_COLUMNS, *(table_row(peer, now) for peer in fleet.members)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(TABLE_COLUMNS))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
              for row in rows]
    for announcement in fleet.unverified:
        lines.append(f"Not verified: {announcement.address} ({announcement.problem})")
    for room in fleet.other_rooms:
        lines.append(f"Other room on the network: {room.label or '(no label)'}, "
                     f"{plural(room.machines, 'machine')}")
    if fleet.interfaces:
        lines.append("Discovery on: " + ", ".join(f"{i.name} {i.address}" for i in fleet.interfaces))
    return "\n".join(lines)


def run_peers(args: argparse.Namespace) -> int:
    try:
        fleet = read_fleet(timeout=args.timeout)
    except PartaGPUError as error:
        print(f"partagpu peers: {error}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(fleet.to_json(), indent=2, ensure_ascii=False))
    else:
        print(format_fleet(fleet, datetime.now(timezone.utc)))
    return EXIT_OK


def _nodes(text: str) -> int | str | list[str] | None:
    if text == "all":
        return None
    if text == "auto":
        return "auto"
    if text.isdigit() and int(text) > 0:
        return int(text)
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError("--nodes is a number of machines or names separated by commas")
    return names


def _epoch(text: str) -> int:
    if text.isdigit() and int(text) <= 0xFFFFFFFF:
        return int(text)
    raise argparse.ArgumentTypeError("--epoch is a number from 0 to 4294967295")


def _gpus(text: str) -> str | int:
    if text == "auto" or (text.isdigit() and int(text) <= 16):
        return text if text == "auto" else int(text)
    raise argparse.ArgumentTypeError("--gpus-per-node is auto or a number from 0 to 16")


def run_training(args: argparse.Namespace) -> int:
    from partagpu.distribute import distribute

    try:
        room = None
        if args.peer or args.room or args.epoch is not None:
            from partagpu.remote import Room

            room = Room(peer=args.peer, room=args.room, epoch=args.epoch)
        # Without --workspace, the script's own folder travels (not the whole current one).
        workspace = args.workspace or os.path.dirname(os.path.abspath(args.script))
        distribute(args.script, *args.args, nodes=args.nodes, workspace=workspace,
                   artifacts=args.artifact if args.artifact else ("model.pt", "metrics.json"),
                   runtime=args.runtime, gpus_per_node=args.gpus_per_node,
                   timeout=args.timeout, output=args.output, room=room,
                   artifacts_from=args.artifacts_from, min_nodes=args.min_nodes,
                   resume_from=args.resume_from)
    except KeyboardInterrupt:
        print("partagpu: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (PartaGPUError, TimeoutError, OSError, ValueError) as error:
        print(f"partagpu: {error}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def run_jobs(args: argparse.Namespace) -> int:
    from partagpu.jobs import format_jobs, list_jobs

    try:
        records = list_jobs()
    except PartaGPUError as error:
        print(f"partagpu: {error}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return EXIT_OK
    print(format_jobs(records, time.time_ns() // 1_000_000))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="python -m partagpu",
                             description="PartaGPU from Python: ask the local partagpud "
                                         "(or, for run, a member of the room over PGR/1).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_ArgumentParser)
    peers = commands.add_parser("peers", help="list the machines of the room",
                                description="List the machines of the room: this one first, "
                                            "then every verified member.")
    peers.add_argument("--json", action="store_true",
                       help="print one JSON document (the shape of partagpuctl peers --json)")
    peers.add_argument("--timeout", type=_timeout, default=5.0, metavar="S",
                       help="give up after S seconds without an answer (default 5)")
    peers.set_defaults(handler=run_peers)
    run = commands.add_parser("run", help="run a distributed training across the room",
                              description="Run SCRIPT (inside the workspace) with torchrun on "
                                          "machines of the room; stream its output and save "
                                          "its artifacts.")
    run.add_argument("--nodes", type=_nodes, default=None, metavar="N|NAME,NAME|auto",
                     help="how many machines, or which (default: every eligible one); auto: probe, "
                          "then the machines and gradient strategy the planner predicts fastest")
    run.add_argument("--workspace", default=None, metavar="DIR",
                     help="folder sent (default: the script's folder)")
    run.add_argument("--artifact", action="append", default=[], metavar="PAT",
                     help="file to bring back from rank 0, may repeat (default model.pt and metrics.json)")
    run.add_argument("--min-nodes", type=int, default=None, metavar="N",
                     help="elastic: go on with at least N machines when one is lost, from the last checkpoint")
    run.add_argument("--resume-from", default=None, metavar="FILE",
                     help="a checkpoint to go on from (up to 2 GiB), sent beside the workspace")
    run.add_argument("--artifacts-from", choices=("rank0", "all"), default="rank0",
                     help="rank0 (default), or all: every machine's, rank N's under rank-N/")
    run.add_argument("--output", default=None, metavar="DIR",
                     help="where artifacts go (default: the workspace)")
    run.add_argument("--runtime", default=None, metavar="NAME", help="the Python runtime to use")
    run.add_argument("--gpus-per-node", type=_gpus, default="auto", metavar="N",
                     help="GPUs per machine (default: those lent)")
    run.add_argument("--timeout", type=float, default=None, metavar="S",
                     help="cancel after S seconds")
    run.add_argument("--peer", default=None, metavar="HOST[:PORT]",
                     help="send the training over PGR/1 to this member of the room (port "
                          "7655 by default) instead of the local partagpud; the room code "
                          "comes from PARTAGPU_CODE")
    run.add_argument("--room", default=None, metavar="LABEL|ID",
                     help="the room (its label or id) when several are announced; over PGR/1 "
                          "as --peer")
    run.add_argument("--epoch", type=_epoch, default=None, metavar="N",
                     help="the room's epoch, only with --peer and --room ID when mDNS does not "
                          "reach the member")
    run.add_argument("script", metavar="SCRIPT")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    run.set_defaults(handler=run_training)
    jobs = commands.add_parser("jobs", help="list the jobs of this machine",
                               description="List the jobs the local partagpud knows, newest first.")
    jobs.add_argument("--json", action="store_true", help="print the records as one JSON array")
    jobs.set_defaults(handler=run_jobs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
