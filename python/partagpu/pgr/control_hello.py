# SPDX-License-Identifier: GPL-3.0-or-later
"""The HELLO bodies of a control connection (PGR/1 §6.4, §6.9, §7.3).

After NODE_AUTH the client names the connection's purpose and the versions it speaks; the
server answers with the version chosen and the room's public facts (label, epoch). The
bodies are JSON, UTF-8, in one record (§6.8), unknown keys ignored, as in the Rust daemon's
``peer::control``. A HELLO that does not parse, names no common version or an unknown
purpose is answered with CLOSE and a reason (§7.3); the check raises :class:`RecordError`
(``bad-body``) and the session layer sends that CLOSE.
"""

from __future__ import annotations

import json

from partagpu.pgr.errors import RecordError

PROTOCOL_VERSION = 1
CONTROL_HELLO = {"purpose": "control", "versions": [PROTOCOL_VERSION], "caps": []}
# §7.6: a job connection's HELLO carries no ``boot`` or ``port``: it is not a member link.
JOB_HELLO = {"purpose": "job", "versions": [PROTOCOL_VERSION], "caps": []}
# §7.3: this phase knows no REQUEST and answers every one with this RESPONSE.
UNKNOWN_REQUEST_RESPONSE = {"error": "unknown-request"}


def control_server_hello(label: str | None, epoch: int) -> dict:
    """The server's HELLO on a control connection: the room's public facts."""
    return {"purpose": "control", "versions": [PROTOCOL_VERSION], "caps": [],
            "room": {"label": label, "epoch": epoch}}


def encode_hello(value: dict) -> bytes:
    """Compact JSON, UTF-8 (HELLO, REQUEST and RESPONSE bodies alike)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _hello_object(body: bytes) -> dict:
    try:
        hello = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise RecordError("bad-body", "HELLO is not JSON") from None
    if not isinstance(hello, dict) or not isinstance(hello.get("versions"), list):
        raise RecordError("bad-body", "HELLO lacks its versions")
    return hello


def check_client_hello_body(body: bytes, purposes: tuple[str, ...] = ("control",)) -> dict:
    """The client's HELLO: a purpose this end serves (``purposes``, control by default) and
    version 1 among its versions (§6.4, §6.9); anything else closes the connection."""
    hello = _hello_object(body)
    if PROTOCOL_VERSION not in hello["versions"] or hello.get("purpose") not in purposes:
        raise RecordError("bad-body", "no common version or purpose in HELLO")
    return hello


def check_server_hello_body(body: bytes, purpose: str) -> dict:
    """The server's HELLO: the purpose asked for and exactly version 1 chosen."""
    hello = _hello_object(body)
    if hello["versions"] != [PROTOCOL_VERSION] or hello.get("purpose") != purpose:
        raise RecordError("bad-body", "the server chose another version or purpose")
    return hello
