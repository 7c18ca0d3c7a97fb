# SPDX-License-Identifier: GPL-3.0-or-later
"""The two ends of a connection and the two directions of its records (PGR/1 §1.2, §6.2)."""

from __future__ import annotations

import enum


class Direction(enum.IntEnum):
    """The direction byte of a record's AAD (§6.2)."""

    CLIENT_TO_SERVER = 0x01
    SERVER_TO_CLIENT = 0x02


class Role(enum.IntEnum):
    """Which end of the TCP connection; the value is the role byte NODE_AUTH signs (§5.2).

    The TCP initiator is the client and SPAKE2 side A, the responder the server and side B
    (§1.2).
    """

    CLIENT = 0x01
    SERVER = 0x02

    @property
    def peer(self) -> Role:
        """The other end."""
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT

    @property
    def sending(self) -> Direction:
        """The direction this end seals records in."""
        return Direction.CLIENT_TO_SERVER if self is Role.CLIENT else Direction.SERVER_TO_CLIENT

    @property
    def receiving(self) -> Direction:
        """The direction this end opens records in."""
        return self.peer.sending
