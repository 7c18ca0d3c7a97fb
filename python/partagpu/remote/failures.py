# SPDX-License-Identifier: GPL-3.0-or-later
"""How a member's failures read: PGR/1 and socket errors become
:class:`~partagpu.errors.PeerFailedError`, a member's misbehaviour a
:class:`~partagpu.errors.ServiceError`, each naming the member."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from partagpu.errors import PeerFailedError, ServiceError
from partagpu.pgr.errors import ConnectionClosedError, DeadlineError, PgrError
from partagpu.remote.choose import Member


def why_not(error: BaseException) -> str:
    """A member's failure as the end of a sentence."""
    if isinstance(error, ConnectionClosedError):
        if error.stage == "server flight":
            return ("it closed the connection before the handshake (it is no longer in this "
                    "room at this epoch, or it refuses this address for a while after failed "
                    "codes)")
        if error.reason:
            return f"it closed the connection: {error.reason}"
        return "it closed the connection"
    if isinstance(error, DeadlineError):
        return "it did not answer in time"
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)


@contextlib.contextmanager
def member_errors(member: Member) -> Iterator[None]:
    """PGR/1 and socket failures as :class:`PeerFailedError`, a member's misbehaviour as
    :class:`ServiceError`, both naming the member."""
    try:
        yield
    except (PgrError, OSError) as error:
        raise PeerFailedError(f"{member}: {why_not(error)}") from None
    except ServiceError as error:
        if str(member) in str(error):
            raise
        raise ServiceError(f"{member}: {error}") from None
