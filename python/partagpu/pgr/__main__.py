# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m partagpu.pgr``: a PGR/1 peer for live interop tests, and a benchmark.

* ``connect HOST:PORT --room-id HEX32 [--epoch N] [--timeout S]``: handshake, NODE_AUTH,
  HELLO, PING→PONG, KEY_UPDATE, PING→PONG, CLOSE; prints one JSON line.
* ``serve HOST:PORT --room-id HEX32 [--epoch N] [--label L] [--max-connections K]``:
  answers connections, one JSON event line each (``listening`` first).
* ``bench [--seconds S]``: one JSON object of timings.

The room code is read from the environment variable ``PARTAGPU_CODE`` (never from the
command line, where other users can read it) and is never printed. Exit codes are the
``EXIT_*`` constants below.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading

from partagpu.pgr.codes import CodeError, RoomCode, parse_room_id
from partagpu.pgr.control_hello import control_server_hello
from partagpu.pgr.errors import (
    ConnectionClosedError, DeadlineError, MalformedError, NodeAuthError, PgrError, RecordError,
    WrongCodeError, WrongRoomError,
)
from partagpu.pgr.node_auth import NodeIdentity
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.session import Session, connect, serve_one

CODE_ENV = "PARTAGPU_CODE"

EXIT_OK = 0
EXIT_ERROR = 1  # anything else, including command-line mistakes
EXIT_INVALID_CODE = 2  # the typed code failed §2.4 locally: nothing was sent
EXIT_WRONG_CODE = 3  # SF did not verify: the server's room has another code or epoch
EXIT_NO_SERVER_HELLO = 4  # closed or silent before the ServerHello (unknown room, ban, …)

# Stages (see partagpu.pgr.wire) at which a failure means "the server never answered".
_BEFORE_SERVER_HELLO = {"client hello", "server flight"}


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        # Exit status 2 means "invalid room code" here, so usage errors use 1.
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError("expected HOST:PORT")
    return host.strip("[]"), int(port)


def _room_id(text: str) -> bytes:
    try:
        return parse_room_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _epoch(text: str) -> int:
    if not text.isdigit() or int(text) >= 2**32:
        raise argparse.ArgumentTypeError("an epoch is an integer from 0 to 4294967295")
    return int(text)


def _read_code() -> RoomCode:
    """The code from the environment, removed from it so child processes never inherit it.
    Raises :class:`CodeError` (an unset variable reads as an empty code)."""
    return RoomCode.parse(os.environ.pop(CODE_ENV, ""))


def _password_from_env(room_id: bytes) -> RoomPassword | None:
    """The room's pw (§2.6) from the code in the environment; None, after saying why on
    stderr, when the code is not valid."""
    try:
        code = _read_code()
    except CodeError as error:
        _fail(EXIT_INVALID_CODE, f"invalid room code: {error}")
        return None
    return RoomPassword.derive(code, room_id)


def _fail(status: int, message: str) -> int:
    print(message, file=sys.stderr, flush=True)
    return status


def run_connect(args: argparse.Namespace) -> int:
    host, port = args.address
    password = _password_from_env(args.room_id)
    if password is None:
        return EXIT_INVALID_CODE
    try:
        session = connect(host, port, password, args.room_id, args.epoch, timeout=args.timeout)
        hello = session.peer_hello
        session.ping()
        session.key_update()
        session.ping()
        result = {"result": "ok", "peer_node_id": session.peer_node_id,
                  "peer_fingerprint": session.peer_fingerprint, "hello": hello}
        session.close("done")
    except WrongCodeError:
        return _fail(EXIT_WRONG_CODE, f"wrong code: the machine at {host}:{port} does not accept this "
                     f"code for room {args.room_id.hex()} at epoch {args.epoch}")
    except (ConnectionClosedError, DeadlineError) as error:
        if error.stage in _BEFORE_SERVER_HELLO:
            return _fail(EXIT_NO_SERVER_HELLO, f"no answer from {host}:{port}: {error}; it is not in "
                         "this room, or it refuses connections from this address")
        return _fail(EXIT_ERROR, f"connection to {host}:{port} failed: {error}")
    except TimeoutError:
        return _fail(EXIT_NO_SERVER_HELLO, f"no answer from {host}:{port}: the TCP connection timed out")
    except (PgrError, OSError) as error:
        return _fail(EXIT_ERROR, f"connection to {host}:{port} failed: {error}")
    print(json.dumps(result), flush=True)
    return EXIT_OK


class _EventLog:
    """One JSON object per line on stdout, flushed, whole lines even from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def emit(self, **event: object) -> None:
        line = json.dumps(event)
        with self._lock:
            print(line, flush=True)


def _serve_connection(conn: socket.socket, source: str, password: RoomPassword,
                      args: argparse.Namespace, identity: NodeIdentity, log: _EventLog) -> None:
    """Serves one connection and logs its outcome with the §7.4 kind as the event name."""
    peer: list[str] = []

    def on_session(session: Session) -> None:
        peer.append(session.peer_node_id)
        log.emit(event="session", peer_node_id=session.peer_node_id, source=source)

    try:
        served = serve_one(conn, password, args.room_id, args.epoch, identity,
                           control_server_hello(args.label, args.epoch), on_session=on_session)
        log.emit(event="closed", peer_node_id=served.peer.node_id_hex)
    except WrongCodeError:
        log.emit(event="wrong-code", source=source)
    except WrongRoomError:
        log.emit(event="wrong-room", source=source)
    except MalformedError:
        log.emit(event="malformed", source=source)
    except (ConnectionClosedError, DeadlineError) as error:
        # Less than a whole ClientHello is a wrong size (§7.4 "malformed"); later, the client
        # gave up after confirming the code (a slow or broken peer, not a guess).
        name = "malformed" if error.stage == "ClientHello" else "aborted"
        log.emit(event=name, source=source)
    except NodeAuthError:
        log.emit(event="identity", source=source)
    except RecordError as error:
        log.emit(event="record", source=source, kind=error.kind, peer_node_id=peer[0] if peer else None)
    except Exception as error:  # noqa: BLE001 — one bad connection must not stop the server
        log.emit(event="error", source=source, message=str(error))


def run_serve(args: argparse.Namespace) -> int:
    host, port = args.address
    password = _password_from_env(args.room_id)
    if password is None:
        return EXIT_INVALID_CODE
    identity = NodeIdentity.generate()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listener = socket.create_server((host, port), family=family, backlog=64)
    except OSError as error:
        return _fail(EXIT_ERROR, f"cannot listen on {host}:{port}: {error}")
    log = _EventLog()
    log.emit(event="listening", port=listener.getsockname()[1])
    handlers: list[threading.Thread] = []
    with listener:
        while args.max_connections is None or len(handlers) < args.max_connections:
            conn, address = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            handler = threading.Thread(target=_serve_connection, daemon=True,
                                       args=(conn, address[0], password, args, identity, log))
            handler.start()
            handlers.append(handler)
    for handler in handlers:
        handler.join()
    return EXIT_OK


def run_bench(args: argparse.Namespace) -> int:
    from partagpu.pgr.benchmark import run_benchmark  # only this command needs it

    print(json.dumps(run_benchmark(args.seconds)), flush=True)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="python -m partagpu.pgr",
                             description=f"PGR/1 peer for interop tests; the room code is read from ${CODE_ENV}.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    for name, text in (("connect", "connect to a PGR/1 server and exercise a control session"),
                       ("serve", "answer PGR/1 connections in one room")):
        command = commands.add_parser(name, help=text)
        command.add_argument("address", type=_address, metavar="HOST:PORT")
        command.add_argument("--room-id", type=_room_id, required=True, metavar="HEX32")
        command.add_argument("--epoch", type=_epoch, default=0, metavar="N")
    commands.choices["connect"].add_argument("--timeout", type=float, default=5.0, metavar="S",
                                             help="handshake deadline and per-record wait (default 5)")
    commands.choices["serve"].add_argument("--label", default=None, help="room label in the HELLO")
    commands.choices["serve"].add_argument("--max-connections", type=int, default=None, metavar="K",
                                           help="exit after K connections")
    bench = commands.add_parser("bench", help="time handshakes, Argon2id and records")
    bench.add_argument("--seconds", type=float, default=2.0, metavar="S",
                       help="time spent on each measurement (default 2)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    runners = {"connect": run_connect, "serve": run_serve, "bench": run_bench}
    try:
        return runners[args.command](args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
