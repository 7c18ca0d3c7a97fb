# SPDX-License-Identifier: GPL-3.0-or-later
"""Training from a machine without the service: PGR/1 from Python straight to a member of
the room (docs/distribute.md, "From a machine without the service"; PGR/1 §7.6).

:class:`Room` holds the room code (``code=`` or ``$PARTAGPU_CODE``, never shown) and finds
a member (``peer=``, or mDNS with :mod:`partagpu.pgr.mdns`, ``room=`` when several rooms are
announced). ``partagpu.distribute(..., room=Room())`` then uploads the training to that
member, which coordinates it, and returns a :class:`partagpu.Job` with the usual API, backed
by :class:`~partagpu.remote.transport.MemberTransport`. Without ``room=``, ``distribute``
makes a Room itself when no local partagpud answers on D-Bus and ``$PARTAGPU_CODE`` is set.

The notebook proves a node key of its own, kept in ``~/.config/partagpu/node-key``
(:mod:`partagpu.remote.node_key`): jobs are named after its node id, and only it may follow,
cancel or fetch them.

Modules: :mod:`~partagpu.remote.room` (the Room, dialling), :mod:`~partagpu.remote.choose`
(which room and member), :mod:`~partagpu.remote.wire` (the job connection's records),
:mod:`~partagpu.remote.follower` and :mod:`~partagpu.remote.log_buffer` (following in the
background), :mod:`~partagpu.remote.transport`, :mod:`~partagpu.remote.node_key`,
:mod:`~partagpu.remote.failures`.
"""

from partagpu.remote.node_key import default_key_path, load_identity
from partagpu.remote.room import CODE_ENV, Room

__all__ = ["CODE_ENV", "Room", "default_key_path", "load_identity"]
